//! The highest generation a data dir has shown, kept outside `memory.db`.
//!
//! The daemon also records its last generation inside the database
//! (`memory_meta`), but an older copy of the file carries its own, matching
//! record: put in place while no daemon runs, it would start at its old
//! generation and hand out numbers that sessions already saw. This file,
//! `<data_dir>/memd.generation`, survives such a swap, so a start-up finds
//! the generation went back and moves it forward (ARCHITECTURE.md "Drift").
//!
//! It is a fixed-width decimal number, rewritten in place by the writer
//! thread before each commit that moves the generation (one `pwrite`, no
//! `fsync`: a daemon killed at any point leaves it current; a power cut can
//! leave it behind, and then the database's own record still holds).

use std::fs::File;
use std::io::Read;
use std::os::unix::fs::FileExt;
use std::path::Path;

/// The file's name in the data dir.
pub const FILE_NAME: &str = "memd.generation";

/// Digits written: any `u64`.
const WIDTH: usize = 20;

/// The open file and the value last written.
#[derive(Debug)]
pub struct HighWater {
    file: Option<File>,
    written: u64,
}

impl HighWater {
    /// Opens (creating, mode 0600, never through a symlink) the file in
    /// `data_dir` and reads the generation it holds (0 when new or
    /// unreadable). A file that cannot be opened is logged and the daemon
    /// goes on with the database's own record.
    pub fn open(data_dir: &Path) -> HighWater {
        let path = data_dir.join(FILE_NAME);
        let mut file = match crate::sys::open_private(&path) {
            Ok(f) => f,
            Err(e) => {
                tracing::warn!(path = %path.display(), error = %e, "cannot keep the generation high-water mark");
                return HighWater {
                    file: None,
                    written: 0,
                };
            }
        };
        let mut text = String::new();
        let written = match file.read_to_string(&mut text) {
            Ok(_) => parse(&text).unwrap_or_else(|| {
                if !text.is_empty() {
                    tracing::warn!(path = %path.display(), "unreadable generation high-water mark; ignoring it");
                }
                0
            }),
            Err(_) => 0,
        };
        HighWater {
            file: Some(file),
            written,
        }
    }

    /// The highest generation recorded.
    pub fn get(&self) -> u64 {
        self.written
    }

    /// Records `generation` if it is higher than the last one written.
    pub fn record(&mut self, generation: u64) {
        if generation <= self.written {
            return;
        }
        let Some(file) = &self.file else {
            return;
        };
        match file.write_all_at(format(generation).as_bytes(), 0) {
            Ok(()) => self.written = generation,
            Err(e) => tracing::warn!(error = %e, "cannot write the generation high-water mark"),
        }
    }
}

fn format(generation: u64) -> String {
    format!("{generation:0WIDTH$}\n")
}

fn parse(text: &str) -> Option<u64> {
    text.trim().parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn it_only_grows_and_survives_a_reopen() {
        let dir = tempfile::tempdir().unwrap();
        let mut h = HighWater::open(dir.path());
        assert_eq!(h.get(), 0);
        h.record(7);
        h.record(3);
        assert_eq!(h.get(), 7);
        h.record(12_345);
        drop(h);
        let h = HighWater::open(dir.path());
        assert_eq!(h.get(), 12_345);
        let text = std::fs::read_to_string(dir.path().join(FILE_NAME)).unwrap();
        assert_eq!(text.len(), WIDTH + 1);
        assert_eq!(format(u64::MAX).len(), WIDTH + 1);
    }

    #[test]
    fn garbage_reads_as_nothing_and_a_symlink_is_not_followed() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join(FILE_NAME), "not a number").unwrap();
        assert_eq!(HighWater::open(dir.path()).get(), 0);

        let other = tempfile::tempdir().unwrap();
        let target = other.path().join("target");
        std::fs::write(&target, "untouched").unwrap();
        let linked = tempfile::tempdir().unwrap();
        std::os::unix::fs::symlink(&target, linked.path().join(FILE_NAME)).unwrap();
        let mut h = HighWater::open(linked.path());
        h.record(5);
        assert_eq!(std::fs::read_to_string(&target).unwrap(), "untouched");
    }
}
