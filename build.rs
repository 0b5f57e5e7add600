//! Build facts for `memd --version` and `memd status`: the commit and the
//! build date, as `MEMD_BUILD_COMMIT` and `MEMD_BUILD_DATE`.
//!
//! The commit comes from, in order: `MEMD_BUILD_COMMIT` in the environment
//! (a packager's override); `git` when this package is the top of a git
//! work tree (a clone: the commit of HEAD); `.cargo_vcs_info.json`, which
//! `cargo package` writes into a crate package (`cargo install
//! memd-daemon`); else `unknown`. The date is `SOURCE_DATE_EPOCH` when set
//! (reproducible builds), else the day of the build (UTC). The script runs
//! again when HEAD moves, so a commit is never stale. Nothing here fails
//! the build.

use std::path::{Path, PathBuf};
use std::process::Command;

fn main() {
    let dir = PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").unwrap_or_default());
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-env-changed=MEMD_BUILD_COMMIT");
    println!("cargo:rerun-if-env-changed=SOURCE_DATE_EPOCH");
    let commit = std::env::var("MEMD_BUILD_COMMIT")
        .ok()
        .filter(|c| !c.trim().is_empty())
        .or_else(|| git_commit(&dir))
        .or_else(|| packaged_commit(&dir))
        .unwrap_or_else(|| "unknown".to_string());
    let epoch = std::env::var("SOURCE_DATE_EPOCH")
        .ok()
        .and_then(|s| s.trim().parse::<i64>().ok())
        .unwrap_or_else(|| {
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| i64::try_from(d.as_secs()).unwrap_or(0))
        });
    println!("cargo:rustc-env=MEMD_BUILD_COMMIT={commit}");
    println!("cargo:rustc-env=MEMD_BUILD_DATE={}", date(epoch));
}

fn git(dir: &Path, args: &[&str]) -> Option<String> {
    let out = Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(args)
        .output()
        .ok()?;
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).trim().to_string())
        .filter(|s| !s.is_empty())
}

/// The commit of the clone this package is the top of; `None` anywhere else
/// (a crate package unpacked inside some other repository is not that
/// repository's commit).
fn git_commit(dir: &Path) -> Option<String> {
    let top = git(dir, &["rev-parse", "--show-toplevel"])?;
    let same = |a: &Path, b: &Path| match (a.canonicalize(), b.canonicalize()) {
        (Ok(a), Ok(b)) => a == b,
        _ => false,
    };
    if !same(Path::new(&top), dir) {
        return None;
    }
    let commit = git(dir, &["rev-parse", "--short=12", "HEAD"])?;
    // Run again when HEAD moves (a commit, a checkout): the files git keeps
    // it in. Only files that exist: cargo reruns on a missing one every time.
    let mut watched = vec!["HEAD".to_string(), "packed-refs".to_string()];
    watched.extend(git(dir, &["symbolic-ref", "-q", "HEAD"]));
    for name in watched {
        if let Some(path) = git(dir, &["rev-parse", "--git-path", &name]) {
            let path = dir.join(path);
            if path.exists() {
                println!("cargo:rerun-if-changed={}", path.display());
            }
        }
    }
    Some(commit)
}

/// The commit `cargo package` recorded in `.cargo_vcs_info.json`
/// (`{"git": {"sha1": "…"}, …}`), shortened like git's.
fn packaged_commit(dir: &Path) -> Option<String> {
    let path = dir.join(".cargo_vcs_info.json");
    let text = std::fs::read_to_string(&path).ok()?;
    println!("cargo:rerun-if-changed={}", path.display());
    let at = text.find("\"sha1\"")?;
    let rest = &text[at + "\"sha1\"".len()..];
    let start = rest.find('"')? + 1;
    let end = start + rest[start..].find('"')?;
    let sha = &rest[start..end];
    (sha.len() >= 12 && sha.chars().all(|c| c.is_ascii_hexdigit())).then(|| sha[..12].to_string())
}

/// `YYYY-MM-DD` of a Unix time, in UTC (the civil-from-days algorithm).
fn date(epoch: i64) -> String {
    let days = epoch.div_euclid(86_400);
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1_460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!("{year:04}-{month:02}-{day:02}")
}
