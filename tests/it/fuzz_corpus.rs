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
