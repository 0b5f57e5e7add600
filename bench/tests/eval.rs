//! The evaluation harness on a tiny fixture of its own, whose recall is
//! known by construction: two questions answered by their only matching turn
//! (rank 1), one whose two evidence turns are half findable (the dog is
//! called a retriever), one in the second conversation, and one about a
//! person who never speaks (nothing found).

use std::process::Command;

use serde_json::{Value, json};

#[test]
fn tiny_fixture_has_the_known_recall() {
    let data = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/tiny");
    let out = Command::new(env!("CARGO_BIN_EXE_memd-bench"))
        .args(["eval", "--data", data, "--json", "--no-embedder"])
        .env_remove("MEMD_DATA_DIR")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        v["all"],
        json!({"n": 5, "recall@1": 0.7, "recall@5": 0.7, "recall@10": 0.7, "any@10": 0.8, "mrr@10": 0.8})
    );
    assert_eq!(v["by_category"]["1"]["recall@10"], 0.5);
    assert_eq!(v["by_category"]["4"]["recall@1"], 1.0);
    assert_eq!(v["by_category"]["5"]["any@10"], 0.0);
    assert_eq!(v["mode"], "auto");
    assert_eq!(v["memories"], 6);
    assert!(v["latency_ms"]["p50"].as_f64().unwrap() > 0.0);

    // The table form carries the same figures.
    let out = Command::new(env!("CARGO_BIN_EXE_memd-bench"))
        .args(["eval", "--data", data, "--mode", "lexical", "--no-embedder"])
        .output()
        .unwrap();
    let table = String::from_utf8_lossy(&out.stdout);
    assert!(
        table.contains("| all categories | 5 | 0.700 | 0.700 | 0.700 | 0.800 | 0.800 |"),
        "{table}"
    );
}

#[test]
fn semantic_mode_is_a_clear_error_without_an_embedder() {
    let data = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/tiny");
    let out = Command::new(env!("CARGO_BIN_EXE_memd-bench"))
        .args([
            "eval",
            "--data",
            data,
            "--mode",
            "semantic",
            "--no-embedder",
        ])
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("no embedder is configured"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}
