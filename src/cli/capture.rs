//! Capture from a hook: the new stretch of a host's transcript, read in
//! bounded chunks of complete lines (`capture.chunk_bytes`, 256 lines) from where the session's last capture
//! stopped, sent to the daemon as turns (see `transcript`). The daemon
//! stores a chunk's turns and moves the offset in one transaction, so a
//! capture that fails (the daemon away, the time up) leaves the offset
//! where it was and the next hook reads the same lines again; a turn
//! stored twice is not possible (each has its identity).
//!
//! The file is named by its device and inode: another file (a resume
//! into a new one, a rewrite) is read from its start, and so is one
//! shorter than the offset. An unfinished last line is normal (`Stop` can
//! fire before the reply is written) and waits for the next hook; a line
//! longer than a chunk is skipped with an error in `capture status`.

use std::fs::File;
use std::io::{BufRead, BufReader, Read, Seek, SeekFrom};
use std::os::unix::fs::MetadataExt;
use std::path::Path;
use std::time::{Duration, Instant};

use memd_client::Client;
use memd_proto::{CaptureRequest, CaptureState};

use super::transcript::{self, Format};

/// What one hook captured.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Outcome {
    /// Turns stored.
    pub stored: u64,
    /// Bytes of the transcript read.
    pub read: u64,
    /// Whether something is left to read (the time was up).
    pub more: bool,
    /// Lines that were not JSON.
    pub invalid: u64,
    /// The file ends in a line not yet complete.
    pub unfinished: bool,
    /// The transcript's length.
    pub len: u64,
    /// Where the next capture starts.
    pub offset: u64,
}

impl Outcome {
    /// What the hook says on stderr about this capture (nothing when all
    /// went as usual).
    pub fn notes(&self, path: &Path) -> Vec<String> {
        let mut out = Vec::new();
        if self.invalid > 0 {
            out.push(format!(
                "{} line(s) of {} are not JSON: skipped",
                self.invalid,
                path.display()
            ));
        }
        if self.more {
            out.push(format!(
                "{} of {} bytes of {} captured; the rest at the next hook",
                self.offset,
                self.len,
                path.display()
            ));
        }
        if self.unfinished {
            out.push(format!(
                "the last line of {} is not complete: it is captured once it is",
                path.display()
            ));
        }
        out
    }
}

/// A host session's transcript.
pub struct Source<'a> {
    /// The host (`claude-code`).
    pub host: &'a str,
    /// Its format.
    pub format: Format,
    /// The host's session id.
    pub session: &'a str,
    /// The transcript.
    pub path: &'a Path,
}

/// Captures what is new in `src` over `client` (a session in the project's
/// namespace), a chunk of at most `chunk` bytes at a time, until nothing
/// is left or `budget` is spent.
///
/// # Errors
/// A message for stderr: the file cannot be read (recorded as the
/// session's last error when the daemon answers), or the daemon failed.
pub async fn capture(
    client: &mut Client,
    src: &Source<'_>,
    chunk: u64,
    budget: Duration,
) -> Result<Outcome, String> {
    let started = Instant::now();
    let state = client
        .capture_status(Some(src.host.into()), Some(src.session.into()))
        .await
        .map_err(|e| e.to_string())?
        .into_iter()
        .next()
        .unwrap_or_default();
    let (mut file, identity, len) = match open(src.path) {
        Ok(f) => f,
        Err(why) => {
            report_error(client, src, &state, &why).await;
            return Err(why);
        }
    };
    let mut from = if state.file == identity && state.offset <= len {
        state.offset
    } else {
        0
    };
    let mut out = Outcome {
        len,
        offset: from,
        ..Outcome::default()
    };
    while from < len {
        if started.elapsed() >= budget {
            out.more = true;
            break;
        }
        let read = read_chunk(&mut file, from, chunk)
            .map_err(|e| format!("cannot read the transcript {}: {e}", src.path.display()))?;
        let (to, turns, invalid, error) = match read {
            Chunk::Partial => {
                out.unfinished = true;
                break;
            }
            Chunk::Lines(buf, more) => {
                let lines: Vec<&[u8]> = buf.split(|b| *b == b'\n').collect();
                let mut read = transcript::turns(src.format, &lines);
                let mut end = buf.len();
                // The chunk ends inside an assistant message that may go
                // on: the next chunk reads it again from its first line,
                // so it is one turn and its private spans go whole.
                if more && let Some(i) = read.last_message_from.filter(|i| *i > 0) {
                    end = lines[..i].iter().map(|l| l.len() + 1).sum();
                    read = transcript::turns(src.format, &lines[..i]);
                }
                (from + end as u64, read.turns, read.invalid, None)
            }
            Chunk::TooLong(end) => (
                end,
                Vec::new(),
                0,
                Some(format!(
                    "the line at byte {from} of {} is longer than capture.chunk_bytes ({chunk}): \
                     not captured",
                    src.path.display()
                )),
            ),
        };
        let error_note = error.clone();
        let report = client
            .capture(CaptureRequest {
                host: src.host.into(),
                session: src.session.into(),
                file: identity.clone(),
                path: src.path.display().to_string(),
                from,
                to,
                turns,
                invalid_lines: invalid,
                error,
            })
            .await
            .map_err(|e| e.to_string())?;
        if report.stale {
            // Another hook of this session moved the offset first.
            break;
        }
        if let Some(e) = error_note {
            eprintln!("memd hook: capture: {e}");
        }
        out.stored += report.stored;
        out.read += to - from;
        out.invalid += invalid;
        from = to;
        out.offset = to;
    }
    Ok(out)
}

/// The transcript, its identity (`device:inode`) and length.
fn open(path: &Path) -> Result<(File, String, u64), String> {
    let file = File::open(path)
        .map_err(|e| format!("cannot open the transcript {}: {e}", path.display()))?;
    let meta = file
        .metadata()
        .map_err(|e| format!("cannot read the transcript {}: {e}", path.display()))?;
    if !meta.is_file() {
        return Err(format!("the transcript {} is not a file", path.display()));
    }
    Ok((file, format!("{}:{}", meta.dev(), meta.ino()), meta.len()))
}

/// Records a hook's error as the session's last one (the offset stays).
async fn report_error(client: &mut Client, src: &Source<'_>, state: &CaptureState, why: &str) {
    let _ = client
        .capture(CaptureRequest {
            host: src.host.into(),
            session: src.session.into(),
            file: state.file.clone(),
            path: src.path.display().to_string(),
            from: state.offset,
            to: state.offset,
            turns: Vec::new(),
            invalid_lines: 0,
            error: Some(why.into()),
        })
        .await;
}

/// A chunk of a transcript.
enum Chunk {
    /// Complete lines (the last newline included), and whether the file
    /// has more after them.
    Lines(Vec<u8>, bool),
    /// Only an unfinished line: nothing to capture yet.
    Partial,
    /// A line longer than a chunk, ending (after its newline) here.
    TooLong(u64),
}

/// Lines sent in one request at most: each request is one transaction of
/// the daemon's writer, which must end well within a `Stop` hook's budget
/// (a few hundred turns take a fraction of a second; thousands would not).
const MAX_LINES: usize = 256;

fn read_chunk(file: &mut File, from: u64, chunk: u64) -> std::io::Result<Chunk> {
    file.seek(SeekFrom::Start(from))?;
    let mut buf = Vec::new();
    file.by_ref().take(chunk).read_to_end(&mut buf)?;
    if let Some((end, _)) = buf
        .iter()
        .enumerate()
        .filter(|(_, b)| **b == b'\n')
        .take(MAX_LINES)
        .last()
    {
        let more = buf.len() > end + 1 || buf.len() as u64 == chunk;
        buf.truncate(end + 1);
        return Ok(Chunk::Lines(buf, more));
    }
    if (buf.len() as u64) < chunk {
        return Ok(Chunk::Partial);
    }
    // Past the chunk, to the end of that line (without holding it).
    let mut reader = BufReader::new(file);
    let mut at = from + buf.len() as u64;
    loop {
        let available = reader.fill_buf()?;
        if available.is_empty() {
            return Ok(Chunk::Partial);
        }
        if let Some(i) = available.iter().position(|b| *b == b'\n') {
            return Ok(Chunk::TooLong(at + i as u64 + 1));
        }
        let n = available.len();
        at += n as u64;
        reader.consume(n);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    #[test]
    fn chunks_end_at_a_complete_line() {
        let mut f = tempfile::tempfile().unwrap();
        f.write_all(b"{\"a\":1}\n{\"b\":2}\n{\"unfinished").unwrap();
        match read_chunk(&mut f, 0, 1 << 20).unwrap() {
            Chunk::Lines(b, more) => {
                assert_eq!(b, b"{\"a\":1}\n{\"b\":2}\n");
                assert!(more, "an unfinished line follows");
            }
            _ => panic!("lines expected"),
        }
        assert!(matches!(
            read_chunk(&mut f, 16, 1 << 20).unwrap(),
            Chunk::Partial
        ));
        // Complete lines to the end of the file: nothing more.
        let mut g = tempfile::tempfile().unwrap();
        g.write_all(b"{\"a\":1}\n").unwrap();
        assert!(matches!(
            read_chunk(&mut g, 0, 1 << 20).unwrap(),
            Chunk::Lines(_, false)
        ));
        match read_chunk(&mut f, 0, 10).unwrap() {
            Chunk::Lines(b, more) => {
                assert_eq!(b, b"{\"a\":1}\n");
                assert!(more);
            }
            _ => panic!("lines expected"),
        }
    }

    #[test]
    fn a_chunk_holds_at_most_max_lines() {
        let mut f = tempfile::tempfile().unwrap();
        for i in 0..(MAX_LINES + 10) {
            writeln!(f, "{{\"n\":{i}}}").unwrap();
        }
        match read_chunk(&mut f, 0, 1 << 20).unwrap() {
            Chunk::Lines(b, more) => {
                assert!(more);
                assert_eq!(b.iter().filter(|c| **c == b'\n').count(), MAX_LINES);
                assert!(b.ends_with(format!("{{\"n\":{}}}\n", MAX_LINES - 1).as_bytes()));
            }
            _ => panic!("lines expected"),
        }
    }

    #[test]
    fn a_line_longer_than_a_chunk_is_skipped_whole() {
        let mut f = tempfile::tempfile().unwrap();
        let long = "x".repeat(50_000);
        write!(f, "{long}\n{{\"next\":1}}\n").unwrap();
        match read_chunk(&mut f, 0, 4096).unwrap() {
            Chunk::TooLong(end) => assert_eq!(end, 50_001),
            _ => panic!("too long expected"),
        }
        // Still being written: wait.
        let mut g = tempfile::tempfile().unwrap();
        g.write_all(long.as_bytes()).unwrap();
        assert!(matches!(
            read_chunk(&mut g, 0, 4096).unwrap(),
            Chunk::Partial
        ));
    }
}
