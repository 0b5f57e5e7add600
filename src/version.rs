//! What this build is: the package version, the commit and the date it was
//! built from (`build.rs` finds them), for `memd --version`, `memd status`
//! and the install script, which compares a running daemon's build with
//! the one it installs.

/// The package version (`0.1.0`).
pub const VERSION: &str = env!("CARGO_PKG_VERSION");

/// The commit the build came from (12 hex digits), or `unknown`.
pub const COMMIT: &str = env!("MEMD_BUILD_COMMIT");

/// The build date, `YYYY-MM-DD` (UTC; `SOURCE_DATE_EPOCH` when set).
pub const DATE: &str = env!("MEMD_BUILD_DATE");

/// `0.1.0 (commit 0123456789ab, built 2026-11-28)`: what `memd --version`
/// prints after `memd `, and `memd status` reports as `build`.
pub const LINE: &str = concat!(
    env!("CARGO_PKG_VERSION"),
    " (commit ",
    env!("MEMD_BUILD_COMMIT"),
    ", built ",
    env!("MEMD_BUILD_DATE"),
    ")"
);

/// The build a daemon reports in `memd status`: [`LINE`], or in a debug
/// build with `MEMD_FAULT=other-build` one that differs from every real
/// build, so a test can run "an older daemon" of the binary under test.
pub fn reported() -> String {
    #[cfg(debug_assertions)]
    if std::env::var("MEMD_FAULT").is_ok_and(|f| f == "other-build") {
        return "0.0.0 (commit 000000000000, built 1970-01-01)".to_string();
    }
    LINE.to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_line_names_version_commit_and_date() {
        assert!(LINE.starts_with(VERSION), "{LINE}");
        assert!(LINE.contains(&format!("commit {COMMIT}")), "{LINE}");
        assert!(LINE.ends_with(&format!("built {DATE})")), "{LINE}");
        assert!(
            COMMIT == "unknown" || COMMIT.chars().all(|c| c.is_ascii_hexdigit()),
            "{COMMIT}"
        );
        let parts: Vec<&str> = DATE.split('-').collect();
        assert_eq!(parts.len(), 3, "{DATE}");
        assert!(parts.iter().all(|p| p.parse::<u32>().is_ok()), "{DATE}");
    }
}
