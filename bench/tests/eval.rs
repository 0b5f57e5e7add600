//! The evaluation harness on a tiny fixture of its own, whose recall is
//! known by construction: two questions answered by their only matching turn
//! (rank 1), one whose two evidence turns are half findable (the dog is
//! called a retriever), one in the second conversation, one about a person
//! who never speaks (nothing found), and one answered by a turn that says
//! none of the question's words — found through its thread neighbour (rank
//! 2, after the neighbour that says them). Each turn but the last two is
//! alone in its session, so no other turn has a neighbour to be found by.

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
        json!({"n": 6, "recall@1": 0.583, "recall@5": 0.75, "recall@10": 0.75, "any@10": 0.833, "mrr@10": 0.75})
    );
    assert_eq!(v["by_category"]["1"]["recall@10"], 0.5);
    assert_eq!(v["by_category"]["4"]["recall@1"], 0.667);
    assert_eq!(v["by_category"]["4"]["recall@5"], 1.0);
    assert_eq!(v["by_category"]["5"]["any@10"], 0.0);
    assert_eq!(v["mode"], "auto");
    assert_eq!(v["memories"], 8);
    assert!(v["latency_ms"]["p50"].as_f64().unwrap() > 0.0);

    // The table form carries the same figures.
    let out = Command::new(env!("CARGO_BIN_EXE_memd-bench"))
        .args(["eval", "--data", data, "--mode", "lexical", "--no-embedder"])
        .output()
        .unwrap();
    let table = String::from_utf8_lossy(&out.stdout);
    assert!(
        table.contains("| all categories | 6 | 0.583 | 0.750 | 0.750 | 0.833 | 0.750 |"),
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

#[test]
fn leave_one_conversation_out_scores_each_conversation_with_settings_chosen_on_the_other() {
    let data = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/tiny");
    let out = Command::new(env!("CARGO_BIN_EXE_memd-bench"))
        .args(["eval", "--data", data, "--json", "--no-embedder", "--loco"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["grid"], "lexical");
    let folds = v["folds"].as_array().unwrap();
    assert_eq!(folds.len(), 2);
    assert_eq!(
        v["fixed"].as_array().unwrap().len(),
        v["settings"].as_u64().unwrap() as usize
    );
    assert_eq!(
        v["fixed"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|f| f["default"] == true)
            .count(),
        1,
        "the default settings are in the grid"
    );
    // Plain BM25 cannot find the turn that says none of the question's
    // words; memd's thread context can, with any setting that uses it.
    let c2 = folds.iter().find(|f| f["conv"] == "c2").unwrap();
    assert_eq!(c2["baseline"]["recall@10"], 0.333, "{c2}");
    assert_eq!(c2["held_out"]["recall@10"], 0.667, "{c2}");
    let g = &v["gain"]["recall@10"];
    assert!(g["mean"].as_f64().unwrap() > 0.0, "{g}");
    assert_eq!(g["folds"], 2);
}
