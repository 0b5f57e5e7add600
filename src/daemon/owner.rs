//! Whose the data dir is: the daemon keeps memories only in a directory of
//! its own user, holding only its user's files. A directory or a file of
//! another user — who could read memories, or plant a `ui.token` or a
//! database the daemon would trust — is refused at start, with the command
//! that fixes it (docs/security.md "Files and modes"). The client checks the
//! same before it starts a daemon, so the refusal is said at once.

use std::os::unix::fs::MetadataExt;
use std::path::Path;

/// `user NAME (uid N)`, or `uid N` when the user database has no name.
fn who(uid: u32) -> String {
    match crate::sys::user_name(uid) {
        Some(name) => format!("user {name} (uid {uid})"),
        None => format!("uid {uid}"),
    }
}

/// The command that gives `dir` and everything in it to this process's
/// user: `sudo chown -R NAME: DIR` (no `sudo` for root).
fn fix(dir: &Path) -> String {
    let me = crate::sys::euid();
    let name = crate::sys::user_name(me).unwrap_or_else(|| me.to_string());
    let path = dir.display().to_string();
    let path = shlex::try_quote(&path).map_or_else(|_| path.clone(), std::borrow::Cow::into_owned);
    let sudo = if me == 0 { "" } else { "sudo " };
    format!("{sudo}chown -R {name}: {path}")
}

/// Refuses `dir` when another user owns it (the directory itself: a
/// symlink to it is followed).
///
/// # Errors
/// The refusal, naming the owner and the fix; an I/O error when `dir`
/// cannot be inspected.
pub fn check_dir(dir: &Path) -> Result<(), String> {
    let meta = std::fs::metadata(dir)
        .map_err(|e| format!("cannot inspect the data directory {}: {e}", dir.display()))?;
    let me = crate::sys::euid();
    if meta.uid() == me {
        return Ok(());
    }
    Err(format!(
        "the data directory {} belongs to {}, not to {} who runs memd: memd keeps memories \
         only in a directory of its own user (another user could read them, or put files in \
         it that memd would trust). Use a data directory of your own (--data-dir or \
         MEMD_DATA_DIR), or make this one yours: {}",
        dir.display(),
        who(meta.uid()),
        who(me),
        fix(dir)
    ))
}

/// Refuses `dir` when something directly in it (a file, a directory, a
/// symlink itself) belongs to another user.
///
/// # Errors
/// The refusal, naming the entry, its owner and the fix; an I/O error when
/// `dir` cannot be listed.
pub fn check_entries(dir: &Path) -> Result<(), String> {
    let me = crate::sys::euid();
    let entries = std::fs::read_dir(dir)
        .map_err(|e| format!("cannot list the data directory {}: {e}", dir.display()))?;
    for entry in entries {
        let entry =
            entry.map_err(|e| format!("cannot list the data directory {}: {e}", dir.display()))?;
        // Not followed: a symlink is judged by who made it.
        let Ok(meta) = entry.metadata() else {
            continue;
        };
        if meta.uid() != me {
            return Err(format!(
                "{} in the data directory belongs to {}, not to {} who runs memd: memd does \
                 not use a data directory holding another user's files (a ui.token or a \
                 database put there by someone else would be trusted). See what it is, then \
                 remove it or make it yours: {}",
                entry.path().display(),
                who(meta.uid()),
                who(me),
                fix(dir)
            ));
        }
    }
    Ok(())
}

/// [`check_dir`], then [`check_entries`], for a data dir that exists (one
/// that does not is made by the daemon, as its user's).
///
/// # Errors
/// As those.
pub fn check_existing(dir: &Path) -> Result<(), String> {
    if !dir.exists() {
        return Ok(());
    }
    check_dir(dir)?;
    check_entries(dir)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_directory_of_ones_own_passes_and_the_fix_names_this_user() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("memory.db"), b"").unwrap();
        std::os::unix::fs::symlink("/nowhere", dir.path().join("link")).unwrap();
        check_existing(dir.path()).unwrap();
        check_existing(&dir.path().join("missing")).unwrap();
        let me = crate::sys::user_name(crate::sys::euid()).unwrap();
        let odd = Path::new("/tmp/a dir");
        assert!(
            fix(odd).ends_with(&format!("chown -R {me}: '/tmp/a dir'")),
            "{}",
            fix(odd)
        );
    }
}
