//! Replays the fuzz corpora in `fuzz/corpus/<target>/` through the same
//! target bodies the fuzzers run (`memd::fuzzing`), on stable Rust: every
//! input a fuzzer kept, and every crash it found and that was fixed, stays a
//! regression test. See `fuzz/README.md` to fuzz further.

use std::path::Path;

fn replay(target: &str, run: fn(&[u8])) {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fuzz/corpus")
        .join(target);
    let mut inputs: Vec<_> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.unwrap().path())
        .collect();
    inputs.sort();
    assert!(inputs.len() >= 10, "{target}: only {} inputs", inputs.len());
    for path in &inputs {
        let data = std::fs::read(path).unwrap();
        let outcome = std::panic::catch_unwind(|| run(&data));
        assert!(outcome.is_ok(), "{target}: {} fails", path.display());
    }
    eprintln!("{target}: {} inputs replayed", inputs.len());
}

#[test]
fn frame_corpus() {
    replay("frame", memd::fuzzing::frame);
}

#[test]
fn request_corpus() {
    replay("request", memd::fuzzing::request);
}

#[test]
fn query_corpus() {
    replay("query", memd::fuzzing::query);
}

#[test]
fn gate_corpus() {
    replay("gate", memd::fuzzing::gate);
}

#[test]
fn http_corpus() {
    replay("http", memd::fuzzing::http);
}

/// The HTTP corpus sent to a real daemon, each input on its own
/// connection: every one gets an answer below 500 or a clean close, and the
/// daemon goes on serving.
#[test]
fn http_corpus_against_a_daemon() {
    use std::io::{Read, Write};
    let d = crate::common::Daemon::start();
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz/corpus/http");
    let mut inputs: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    inputs.sort();
    for path in &inputs {
        let data = std::fs::read(path).unwrap();
        let mut s = std::os::unix::net::UnixStream::connect(d.socket()).unwrap();
        s.set_read_timeout(Some(std::time::Duration::from_secs(15)))
            .unwrap();
        let _ = s.write_all(&data);
        let _ = s.shutdown(std::net::Shutdown::Write);
        let mut answer = Vec::new();
        let _ = s.read_to_end(&mut answer);
        let text = String::from_utf8_lossy(&answer);
        if let Some(status) = text
            .strip_prefix("HTTP/1.")
            .and_then(|t| t.get(2..5))
            .and_then(|code| code.parse::<u16>().ok())
        {
            assert!(status < 500, "{}: {text}", path.display());
        } else {
            assert!(answer.is_empty(), "{}: not HTTP: {text}", path.display());
        }
        let r = crate::common::http::get(&d.socket(), "/v1/status", &[]);
        assert_eq!(r.status, 200, "after {}", path.display());
    }
    eprintln!("http: {} inputs sent to a daemon", inputs.len());
}
