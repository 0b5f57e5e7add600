//! `memd purge` against the real daemon: after it, the text — searched as
//! bytes, in either case — is in no file of the data directory (database,
//! WAL, sessions file, drift backups, log); a frozen block that held it is
//! rebuilt; a neighbour in the same thread is still found by its own words.

use std::time::{Duration, Instant};

use crate::common::{Daemon, files_holding, sqlite3};

const SECRET: &str = "AKIAQX7PURGEME42ZZ";

fn wait_for(what: &str, mut f: impl FnMut() -> bool) {
    let start = Instant::now();
    while !f() {
        assert!(
            start.elapsed() < Duration::from_secs(10),
            "timed out: {what}"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn a_purged_secret_is_in_no_file_of_the_data_directory() {
    let d = Daemon::start();
    let data = d.data_dir();
    // The secret in a thread between two neighbours, and in an earlier
    // version of another memory.
    for text in [
        "we rotated the staging credentials this morning",
        &format!("the new staging key is {SECRET}, do not share it"),
        "the rotation script lives in ops/rotate.sh",
    ] {
        let (v, code) = d.json(&["add", "--thread", "ops-chat", text]);
        assert_eq!(code, 0, "{v}");
    }
    let (v, _) = d.json(&[
        "add",
        &format!("ci uses the key {} for uploads", SECRET.to_lowercase()),
    ]);
    let edited = v["id"].as_i64().unwrap().to_string();
    let (v, code) = d.json(&[
        "update",
        &edited,
        "--content",
        "ci uses the vault for uploads",
    ]);
    assert_eq!(code, 0, "{v}");
    let (kept, _) = d.json(&["add", "deploys go out on tuesdays"]);
    // A named session's frozen block shows it.
    let block = d.cli(&["--session", "s1", "inject"]).stdout;
    assert!(block.contains(SECRET), "{block}");
    // A drift backup holds it: another tool's edit, then a stale write.
    let seen = kept["generation"].as_u64().unwrap().to_string();
    let before = d.status()["drift"]["external_epoch"].as_u64().unwrap_or(0);
    sqlite3(
        &d.db(),
        "UPDATE memories SET content = 'deploys go out on wednesdays' WHERE content LIKE 'deploys%'",
    );
    wait_for("the external change", || {
        d.status()["drift"]["external_epoch"].as_u64().unwrap_or(0) > before
    });
    let kept_id = kept["id"].as_i64().unwrap().to_string();
    let (err, code) = d.json(&["--seen-generation", &seen, "forget", &kept_id]);
    assert_eq!(code, 3, "{err}");
    let backup = err["drift_backup"].as_str().unwrap().to_string();
    assert!(std::fs::read_to_string(&backup).unwrap().contains(SECRET));
    assert!(!files_holding(&data, SECRET, false).is_empty());

    // Without --yes and without a terminal: listed, refused, nothing erased.
    let out = d.cli(&["purge", "--matching", "akiaqx7purge"]);
    assert_eq!(out.code, 2, "{out:?}");
    let (v, code) = d.json(&["purge", "--matching", "akiaqx7purge", "--dry-run"]);
    assert_eq!(code, 0, "{v}");
    assert_eq!(v["purged"], false);
    assert_eq!(v["targets"].as_array().unwrap().len(), 2, "{v}");
    assert!(!files_holding(&data, SECRET, false).is_empty());

    let (v, code) = d.json(&["purge", "--matching", "akiaqx7purge", "--yes"]);
    assert_eq!(code, 0, "{v}");
    assert_eq!(v["purged"], true, "{v}");
    assert_eq!(v["blocks_rebuilt"], 1, "{v}");
    assert_eq!(v["backups_rewritten"], 1, "{v}");
    assert_eq!(v["scrubbed"], true, "{v}");
    let left = files_holding(&data, SECRET, false);
    assert!(left.is_empty(), "the secret is still in {left:?}");
    // The backup is still there, without that row.
    let text = std::fs::read_to_string(&backup).unwrap();
    assert!(text.contains("rotation script"), "{text}");

    // The block is rebuilt without it; the neighbours are found by their
    // own words; the erased memories are gone from history.
    let block = d.cli(&["--session", "s1", "inject"]).stdout;
    assert!(!block.contains(SECRET), "{block}");
    assert!(block.contains("rotation script"), "{block}");
    let (v, code) = d.json(&["search", "rotation script"]);
    assert_eq!(code, 0, "{v}");
    assert!(v.to_string().contains("ops/rotate.sh"), "{v}");
    let (v, _) = d.json(&["search", "staging credentials"]);
    assert!(v.to_string().contains("rotated the staging"), "{v}");
    let (v, _) = d.json(&["search", "staging key"]);
    assert!(!v.to_string().to_lowercase().contains("akiaqx7"), "{v}");
    let (v, code) = d.json(&["history", &edited]);
    assert_eq!((code, v["code"].as_str()), (1, Some("not_found")), "{v}");
    assert!(
        v["error"]
            .as_str()
            .unwrap()
            .contains("erased by memd purge"),
        "{v}"
    );
    // Once more: nothing holds it any more.
    let (v, code) = d.json(&["purge", "--matching", "akiaqx7purge", "--yes"]);
    assert_eq!((code, v["purged"].as_bool()), (0, Some(false)), "{v}");
    assert!(v["targets"].as_array().unwrap().is_empty());
    // The daemon goes on: no drift for its own compaction.
    let (v, code) = d.json(&["add", "after the purge"]);
    assert_eq!(code, 0, "{v}");
}

#[test]
fn purge_refuses_what_it_cannot_take_and_erases_nothing() {
    let d = Daemon::start();
    let (v, _) = d.json(&["add", "a memory that stays"]);
    let id = v["id"].as_i64().unwrap().to_string();
    let (v, code) = d.json(&["purge", "--matching", "ab", "--yes"]);
    assert_eq!(
        (code, v["code"].as_str()),
        (2, Some("invalid_input")),
        "{v}"
    );
    let (v, code) = d.json(&["purge", "999999", "--yes"]);
    assert_eq!((code, v["code"].as_str()), (1, Some("not_found")), "{v}");
    let out = d.cli(&["purge"]);
    assert_eq!(out.code, 2, "{out:?}");
    let out = d.cli(&["purge", &id]);
    assert_eq!(out.code, 2, "{out:?}");
    let (v, code) = d.json(&["get", &id]);
    assert_eq!(code, 0, "{v}");
    // Over HTTP: listed without confirm, erased with it.
    let socket = d.socket();
    let ask = |body: serde_json::Value| {
        crate::common::http::request(&socket, "POST", "/v1/purge", &[], Some(&body))
    };
    let r = ask(serde_json::json!({"matching": "stays"}));
    assert_eq!(r.status, 200);
    assert_eq!(r.json()["purged"], false, "{:?}", r.json());
    assert_eq!(r.json()["targets"].as_array().unwrap().len(), 1);
    assert_eq!(ask(serde_json::json!({"matching": "x"})).status, 400);
    assert_eq!(
        ask(serde_json::json!({"id": 999_999, "confirm": true})).status,
        404
    );
    let (v, code) = d.json(&["get", &id]);
    assert_eq!(code, 0, "{v}");
    let r = ask(serde_json::json!({"id": id.parse::<i64>().unwrap(), "confirm": true}));
    assert_eq!((r.status, r.json()["purged"].as_bool()), (200, Some(true)));
    let (v, code) = d.json(&["get", &id]);
    assert_eq!(code, 1, "{v}");
    // By id from the CLI, with --yes.
    let (v, _) = d.json(&["add", "another one"]);
    let other = v["id"].as_i64().unwrap().to_string();
    let (v, code) = d.json(&["purge", &other, "--yes"]);
    assert_eq!((code, v["purged"].as_bool()), (0, Some(true)), "{v}");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_connected_session_whose_block_held_it_is_told_and_gets_a_new_block() {
    let d = Daemon::start();
    let (v, _) = d.json(&["add", &format!("the key is {SECRET}")]);
    let id = v["id"].as_i64().unwrap();
    d.json(&["add", "deploys go out on tuesdays"]);
    let mut s = d.client().await;
    s.subscribe().await.unwrap();
    let before = s.inject().await.unwrap();
    assert!(before.block.contains(SECRET));
    // Frozen: the same bytes again.
    assert_eq!(s.inject().await.unwrap().hash, before.hash);
    let (v, code) = d.json(&["purge", &id.to_string(), "--yes"]);
    assert_eq!(code, 0, "{v}");
    let event = loop {
        let e = tokio::time::timeout(Duration::from_secs(10), s.next_event())
            .await
            .expect("a push within 10 s")
            .unwrap();
        if let memd_client::proto::Event::Purged(p) = e {
            break p;
        }
    };
    assert!(event.block_dropped, "{event:?}");
    assert_eq!(event.ids, [id]);
    let after = s.inject().await.unwrap();
    assert_ne!(after.hash, before.hash);
    assert!(!after.block.contains(SECRET), "{}", after.block);
    assert!(after.block.contains("tuesdays"), "{}", after.block);
}

/// A purge reaches the namespace the request names, over the socket (the
/// CLI) and HTTP alike; `--all-namespaces`, `"all_namespaces": true` or an
/// HTTP request naming no namespace reach every one.
#[test]
fn purge_stays_in_the_namespace_the_request_names() {
    let d = Daemon::start();
    let add = |ns: &str, text: &str| {
        let (v, code) = d.json(&["--namespace", ns, "add", text]);
        assert_eq!(code, 0, "{v}");
        v["id"].as_i64().unwrap()
    };
    let count = |ns: &str| {
        sqlite3(
            &d.db(),
            &format!("SELECT count(*) FROM memories WHERE namespace = '{ns}'"),
        )
        .trim()
        .parse::<i64>()
        .unwrap()
    };
    let targets = |v: &serde_json::Value| -> Vec<String> {
        let mut ns: Vec<String> = v["targets"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["namespace"].as_str().unwrap().to_string())
            .collect();
        ns.sort();
        ns
    };
    add("shop", "the leaked token sat in shop notes");
    let elsewhere = add("blog", "the leaked token sat in blog notes");
    add("wiki", "the leaked token sat in wiki notes");

    // The CLI, over the socket.
    let (v, code) = d.json(&[
        "--namespace",
        "shop",
        "purge",
        "--matching",
        "leaked token",
        "--dry-run",
    ]);
    assert_eq!(code, 0, "{v}");
    assert_eq!(targets(&v), ["shop"]);
    let (v, code) = d.json(&[
        "--namespace",
        "shop",
        "purge",
        &elsewhere.to_string(),
        "--yes",
    ]);
    assert_eq!((code, v["code"].as_str()), (1, Some("not_found")), "{v}");
    let (v, code) = d.json(&[
        "--namespace",
        "shop",
        "purge",
        "--matching",
        "leaked token",
        "--yes",
    ]);
    assert_eq!(code, 0, "{v}");
    assert_eq!(targets(&v), ["shop"]);
    assert_eq!((count("shop"), count("blog"), count("wiki")), (0, 1, 1));

    // HTTP naming a namespace (parameter or header) stays in it.
    let socket = d.socket();
    let ask = |path: &str, headers: &[(&str, &str)], body: serde_json::Value| {
        let r = crate::common::http::request(&socket, "POST", path, headers, Some(&body));
        (r.status, r.json())
    };
    let (status, v) = ask(
        "/v1/purge?namespace=blog",
        &[],
        serde_json::json!({"matching": "leaked token"}),
    );
    assert_eq!(status, 200, "{v}");
    assert_eq!(targets(&v), ["blog"]);
    let (status, v) = ask(
        "/v1/purge",
        &[("Memd-Namespace", "blog")],
        serde_json::json!({"matching": "leaked token", "confirm": true}),
    );
    assert_eq!(status, 200, "{v}");
    assert_eq!(targets(&v), ["blog"]);
    assert_eq!((count("blog"), count("wiki")), (0, 1));

    // Every namespace: asked for, or an HTTP request naming none.
    add("blog", "the leaked token came back to blog");
    let (status, v) = ask(
        "/v1/purge",
        &[],
        serde_json::json!({"matching": "leaked token"}),
    );
    assert_eq!(status, 200, "{v}");
    assert_eq!(targets(&v), ["blog", "wiki"]);
    let (status, v) = ask(
        "/v1/purge?namespace=shop",
        &[],
        serde_json::json!({"matching": "leaked token", "all_namespaces": true}),
    );
    assert_eq!(status, 200, "{v}");
    assert_eq!(targets(&v), ["blog", "wiki"]);
    let (v, code) = d.json(&[
        "--namespace",
        "shop",
        "purge",
        "--matching",
        "leaked token",
        "--all-namespaces",
        "--yes",
    ]);
    assert_eq!(code, 0, "{v}");
    assert_eq!(targets(&v), ["blog", "wiki"]);
    assert_eq!((count("blog"), count("wiki")), (0, 0));
}
