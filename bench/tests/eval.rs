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
    let set = &v["sets"][0];
    assert_eq!(set["data"], "tiny");
    let folds = set["folds"].as_array().unwrap();
    assert_eq!(folds.len(), 2);
    assert_eq!(
        set["fixed"].as_array().unwrap().len(),
        v["settings"].as_u64().unwrap() as usize
    );
    assert_eq!(
        set["fixed"]
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
    let g = &set["gain"]["recall@10"];
    assert!(g["mean"].as_f64().unwrap() > 0.0, "{g}");
    assert_eq!(g["folds"], 2);
    // The interval resamples the two conversations: it spans their means.
    let (lo, hi) = (
        g["ci95"][0].as_f64().unwrap(),
        g["ci95"][1].as_f64().unwrap(),
    );
    assert!(
        lo <= g["mean"].as_f64().unwrap() && g["mean"].as_f64().unwrap() <= hi,
        "{g}"
    );
    assert!(
        g["worst_fold"].as_f64().unwrap() <= g["mean"].as_f64().unwrap(),
        "{g}"
    );
}

/// `--rankings FILE`: one line per question, `qid` and `ids` (the data
/// set's own turn ids, best first) — and the same from a queries file
/// without evidence, which is then ranked and not scored.
#[test]
fn rankings_are_written_with_or_without_evidence() {
    let data = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/tiny");
    let dir = tempfile::tempdir().unwrap();
    let scored = dir.path().join("scored.jsonl");
    let out = Command::new(env!("CARGO_BIN_EXE_memd-bench"))
        .args([
            "eval",
            "--data",
            data,
            "--json",
            "--no-embedder",
            "--rankings",
        ])
        .arg(&scored)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["all"]["n"], 6);
    let lines = |path: &std::path::Path| -> Vec<Value> {
        std::fs::read_to_string(path)
            .unwrap()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect()
    };
    let ranked = lines(&scored);
    let qids: Vec<&str> = ranked.iter().map(|r| r["qid"].as_str().unwrap()).collect();
    assert_eq!(qids, ["c1/q0", "c1/q1", "c1/q2", "c2/q0", "c2/q1", "c2/q2"]);
    for r in &ranked {
        assert_eq!(r.as_object().unwrap().len(), 2, "{r}");
        let ids = r["ids"].as_array().unwrap();
        assert!(
            ids.iter().all(|i| i.as_str().unwrap().starts_with('D')),
            "{r}"
        );
    }
    // Best first: the only turn that names Bob's sister's city.
    assert_eq!(ranked[0]["ids"][0], "D2:1");
    // The person who never speaks is found nowhere.
    assert_eq!(ranked[4]["ids"], json!([]));

    // The same questions without evidence (nor category).
    let bare = dir.path().join("bare");
    std::fs::create_dir(&bare).unwrap();
    std::fs::copy(
        format!("{data}/memories.jsonl"),
        bare.join("memories.jsonl"),
    )
    .unwrap();
    let questions: Vec<String> = std::fs::read_to_string(format!("{data}/queries.jsonl"))
        .unwrap()
        .lines()
        .map(|l| {
            let mut q: Value = serde_json::from_str(l).unwrap();
            let o = q.as_object_mut().unwrap();
            o.remove("evidence");
            o.remove("category");
            q.to_string()
        })
        .collect();
    std::fs::write(bare.join("queries.jsonl"), questions.join("\n")).unwrap();
    let unscored = dir.path().join("unscored.jsonl");
    let out = Command::new(env!("CARGO_BIN_EXE_memd-bench"))
        .args(["eval", "--json", "--no-embedder", "--data"])
        .arg(&bare)
        .arg("--rankings")
        .arg(&unscored)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(v.get("all").is_none(), "no scores without evidence: {v}");
    assert_eq!(v["questions"], 6);
    assert_eq!(lines(&unscored), ranked);
    // Without evidence there is nothing to choose settings by.
    let out = Command::new(env!("CARGO_BIN_EXE_memd-bench"))
        .args(["eval", "--no-embedder", "--loco", "--data"])
        .arg(&bare)
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("without"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}
