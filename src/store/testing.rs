//! Unit tests' external writer: the `sqlite3` shell, a separate process
//! with none of memd's code, on a database file.

use std::path::Path;

/// Runs SQL in the `sqlite3` shell on `db`; its output, or `None` when the
/// shell is missing (the test is skipped, or fails under
/// `MEMD_REQUIRE_TOOLS=1`).
pub(crate) fn sqlite3(db: &Path, sql: &str) -> Option<String> {
    match std::process::Command::new("sqlite3")
        .arg(db)
        .arg(sql)
        .output()
    {
        Ok(out) => {
            assert!(
                out.status.success(),
                "sqlite3 failed: {}",
                String::from_utf8_lossy(&out.stderr)
            );
            Some(String::from_utf8_lossy(&out.stdout).into_owned())
        }
        Err(e) => {
            assert!(
                std::env::var_os("MEMD_REQUIRE_TOOLS").is_none_or(|v| v != "1"),
                "the sqlite3 shell is missing ({e}); MEMD_REQUIRE_TOOLS=1 says CI has it"
            );
            eprintln!("SKIPPED: the sqlite3 shell is missing ({e})");
            None
        }
    }
}

/// Inserts a memory the way a person at the shell would (SQL defaults fill
/// the rest); `false` when the shell is missing.
pub(crate) fn insert_by_hand(db: &Path, content: &str) -> bool {
    let sql = format!(
        "INSERT INTO memories(content) VALUES ('{}')",
        content.replace('\'', "''")
    );
    sqlite3(db, &sql).is_some()
}

/// Every memory's content, in id order, as the shell reads them (`None`
/// when the shell is missing).
pub(crate) fn contents(db: &Path) -> Option<Vec<String>> {
    sqlite3(db, "SELECT content FROM memories ORDER BY id")
        .map(|out| out.lines().map(str::to_string).collect())
}
