//! `perf` at a tiny scale: every figure the report promises is there, with
//! nulls only where a figure does not apply, and the warm inject read
//! nothing.

use std::process::Command;

use serde_json::Value;

#[test]
fn perf_reports_every_figure() {
    let out = Command::new(env!("CARGO_BIN_EXE_memd-bench"))
        .args([
            "perf",
            "--memories",
            "300",
            "--queries",
            "20",
            "--adds",
            "32",
            "--semantic",
            "0",
            "--json",
        ])
        .env_remove("MEMD_DATA_DIR")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["memories"], 300);
    assert!(v["rss_mb"].as_f64().unwrap() > 0.0, "{v}");
    assert!(v["db_mb"].as_f64().unwrap() > 0.0, "{v}");
    assert!(v["machine"].as_str().unwrap().contains("cores"), "{v}");
    let results = v["results"].as_array().unwrap();
    let row = |op: &str| -> &Value {
        results
            .iter()
            .find(|r| r["op"] == op)
            .unwrap_or_else(|| panic!("no {op} in {v}"))
    };
    // Latency rows measured against the in-process floor.
    for op in [
        "search_lexical",
        "search_fuzzy",
        "add_1_sessions",
        "add_4_sessions",
        "add_16_sessions",
        "get",
        "list_filtered",
        "inject_cold",
    ] {
        let r = row(op);
        for k in [
            "p50_us",
            "p95_us",
            "p99_us",
            "floor_p50_us",
            "ratio_to_floor",
        ] {
            assert!(r[k].as_f64().unwrap() > 0.0, "{op} {k}: {r}");
        }
    }
    // Search is measured at 300 (the whole corpus, below the 1K stage).
    assert_eq!(row("search_lexical")["memories"], 300);
    // Adds have a rate; a load has a rate and no latency.
    assert!(row("add_16_sessions")["per_sec"].as_f64().unwrap() > 0.0);
    let load = row("bulk_load_import");
    assert!(load["per_sec"].as_f64().unwrap() > 0.0, "{load}");
    assert!(load["p50_us"].is_null(), "{load}");
    // The warm inject's floor is a bare socket round trip.
    assert!(row("inject_warm")["floor_p50_us"].as_f64().unwrap() > 0.0);
    // Figures without a floor say so with null, not zero.
    for op in ["drift_detect", "cold_start", "add_during_sweep"] {
        let r = row(op);
        assert!(r["p50_us"].as_f64().unwrap() > 0.0, "{op}: {r}");
        assert!(r["ratio_to_floor"].is_null(), "{op}: {r}");
    }
    assert!(row("drift_detect")["per_sec"].is_null());
    let note = row("inject_warm")["note"].as_str().unwrap();
    assert!(note.contains(" 0 SQLite reads"), "{note}");
    assert!(v["semantic"].is_null());
}
