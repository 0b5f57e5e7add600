//! The memory model and the write gate through the real binary: each gate
//! step with positive and negative cases, supersession, confirm, expiry,
//! tasks.

use crate::common::{Daemon, ids};
use serde_json::Value;

fn add(d: &Daemon, args: &[&str]) -> (Value, i32) {
    let mut all = vec!["add"];
    all.extend_from_slice(args);
    d.json(&all)
}

fn memory(d: &Daemon, id: i64) -> Value {
    let (v, code) = d.json(&["get", &id.to_string(), "--include-inactive"]);
    assert_eq!(code, 0, "{v}");
    v["memory"].clone()
}

const LONG: &str = "the staging database runs on the big host in the second rack of the old \
    data center and listens on port 5432 for the app and the nightly reports";

#[test]
fn scope_is_normalized_and_owned_by_the_session() {
    let d = Daemon::start();
    let (v, _) = d.json(&["--agent", "planner", "add", "agent note", "--scope", "user"]);
    // Agent-scope rows of `planner` are not visible to agent `default`.
    let (_, code) = d.json(&["get", &v["id"].to_string()]);
    assert_eq!(code, 1);
    let (got, _) = d.json(&["--agent", "planner", "get", &v["id"].to_string()]);
    assert_eq!(got["memory"]["scope"], "agent");
    assert_eq!(got["memory"]["scope_owner"], "planner");
    let (v, _) = d.json(&["add", "lane note", "--scope", "lane"]);
    assert_eq!(v["success"], true);
    let (v, code) = add(&d, &["x", "--scope", "everywhere"]);
    assert_eq!(code, 6);
    assert_eq!(v["reason"], "scope");
}

#[test]
fn size_limit_is_exact() {
    let d = Daemon::start();
    let word = "word ";
    let at = word.repeat(10 * 1024 / word.len());
    assert_eq!(at.len(), 10 * 1024);
    let (v, code) = add(&d, &[&at]);
    assert_eq!(code, 0, "{v}");
    let over = format!("{at}x");
    let (v, code) = add(&d, &[&over]);
    assert_eq!(code, 6);
    assert_eq!(v["reason"], "too_large");
}

#[test]
fn code_derivable_content_is_refused_and_prose_passes() {
    let d = Daemon::start();
    for text in [
        "diff --git a/app.py b/app.py\n--- a/app.py\n+++ b/app.py\n@@ -1,2 +1,2 @@\n-x = 1\n+x = 2\n",
        "Traceback (most recent call last):\n  File \"/srv/app.py\", line 3, in <module>\n    main()\nValueError: bad\n",
        "Exception in thread \"main\" java.lang.IllegalStateException\n\tat a.B.c(B.java:1)\n\tat a.B.main(B.java:9)\n",
        "Error: boom\n    at run (/app/index.js:10:5)\n    at main (/app/index.js:20:3)\n",
        "goroutine 7 [running]:\nmain.work()\n\t/src/app/main.go:31 +0x45\n",
        "thread 'main' panicked at src/main.rs:2:5:\nboom\nstack backtrace:\n   0: std::panicking::begin_panic\n",
        "commit 0123456789abcdef0123456789abcdef01234567\nAuthor: A B <a@b.c>\nDate:   Mon Jan 5 10:00:00 2026\n\n    msg\n",
        "Error: connect ECONNREFUSED 127.0.0.1:5432\n    at TCPConnectWrap.afterConnect [as oncomplete] (node:net:1555:16)\n",
        "ReferenceError: foo is not defined\n    at Object.<anonymous> (/app/index.js:3:1)\n    at Module._compile (node:internal/modules/cjs/loader:1256:14)\n    at node:internal/main/run_main_module:23:47\n",
        "Exception in thread \"main\" java.lang.StringIndexOutOfBoundsException: index 4\n\tat java.base/java.lang.String.charAt(String.java:4465)\n\tat app//com.acme.Main.main(Main.java:5)\n",
        "java.lang.IllegalStateException: pool closed\n\tat com.acme.db.Pool.take(Pool.java:88)\nCaused by: java.io.IOException: broken pipe\n\t... 3 more\n",
        "a1b2c3d (HEAD -> main, origin/main) Retry the deploy on 503\n9f8e7d6 Pin bincode to 2.0.1\n0c1d2e3 Move the config to /etc/memd\n4f5a6b7 Add the sweep\n",
        "src/a.rs\nsrc/b.rs\nsrc/c/d.rs\ntests/e.rs\nCargo.toml/x\n",
        "payload: TWFueSBoYW5kcyBtYWtlIGxpZ2h0IHdvcmsuIFRoaXMgaXMgYSBsb25nIGJhc2U2NCBibG9iIHRoYXQgc2hvdWxkIG5vdCBiZSBzdG9yZWQgaW4gbWVtb3J5IDEyMzQ1Njc4OTA=",
        "digest 9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a089f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08",
    ] {
        let (v, code) = add(&d, &[text]);
        assert_eq!(code, 6, "accepted: {text}\n{v}");
        assert_eq!(v["reason"], "code_derivable", "{text}");
        assert_eq!(v["accepted"], false);
        for key in ["id", "merged_into", "similar_to", "drift"] {
            assert!(v[key].is_null() && v.get(key).is_some(), "{key}: {v}");
        }
        assert_eq!(v["deduped"], false);
    }
    for text in [
        "The deploy script is ops/deploy.sh; it fails with 'permission denied' unless run as deploy.",
        "A ValueError in app.py line 3 means the config file is missing.",
        "Use git log to find when the port changed from 5432.",
        "The retry landed in a1b2c3d (HEAD -> main); revert it if deploys hang.",
        "Node says 'Error: connect ECONNREFUSED' from node:net:1555 when Postgres is down.",
        "String.charAt in java.base/java.lang.String throws when the name is empty.",
    ] {
        let (v, code) = add(&d, &[text]);
        assert_eq!(code, 0, "refused: {text}\n{v}");
    }
}

#[test]
fn secrets_are_refused_by_default() {
    let d = Daemon::start();
    for text in [
        "the CI token is ghp_abcdefghijklmnopqrstuvwxyz0123456789",
        "aws key AKIAIOSFODNN7EXAMPLE for uploads",
        "login with password: Sup3rSecret!",
        "the bot uses sk-proj-abcdefghijklmnopqrstuvwxyz012345 for summaries",
        "post alerts with xoxb-123456789012-abcdefghijkl",
        "service config api_key: 9f2c81d07aa4",
        "session eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U",
        "-----BEGIN PRIVATE KEY-----\nMIIEvQIBADANBgkqhkiG9w0BAQEFAASC\n-----END PRIVATE KEY-----",
        // Prefixed names, as `.env` files and CI settings write them.
        "AWS_SECRET_ACCESS_KEY=wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
        "prod db: DB_PASSWORD=Sup3rSecretDb",
        "POSTGRES_PASSWORD=Sup3rSecretPg",
        "STRIPE_API_KEY=rk_live_51HqLyjWDarjtT1zdp7dc",
        "github_token: gho_16C7e42F292c6912E7710c",
        "call it with Authorization: Bearer 8f3d2c1b9a7e6f5d4c3b2a19",
    ] {
        let (v, code) = add(&d, &[text]);
        assert_eq!(code, 6, "accepted: {text}");
        assert_eq!(v["reason"], "secret");
        assert!(
            !v["error"].as_str().unwrap().contains("Sup3rSecret"),
            "the secret is not echoed"
        );
    }
    for text in [
        "Rotate the DB password every 90 days.",
        "The session token expires after an hour.",
        "POSTGRES_PASSWORD is set by the compose file from the vault.",
        "The API takes a Bearer token in the Authorization header.",
    ] {
        let (v, code) = add(&d, &[text]);
        assert_eq!(code, 0, "refused: {text}\n{v}");
    }
    // Tags and metadata reach exports and prompts as surely as content.
    for args in [
        &["db notes", "--meta", "password=hunter2x"][..],
        &[
            "db notes",
            "--meta",
            r#"conn={"url":"postgres://app:hunter2x@db1/app"}"#,
        ],
        &[
            "ci notes",
            "--tag",
            "ghp_abcdefghijklmnopqrstuvwxyz0123456789",
        ],
    ] {
        let (v, code) = add(&d, args);
        assert_eq!(code, 6, "accepted: {args:?}\n{v}");
        assert_eq!(v["reason"], "secret");
        assert!(!v["error"].as_str().unwrap().contains("hunter2x"));
    }
    let (v, code) = add(&d, &["db notes", "--meta", "password_hint=ask the DBA"]);
    assert_eq!(code, 0, "{v}");
    let (v, code) = add(&d, &["The deploy password is kept in the team vault."]);
    assert_eq!(code, 0, "{v}");
    let id = v["id"].to_string();
    let (v, code) = d.json(&["update", &id, "--meta", "password=hunter2x"]);
    assert_eq!(code, 6, "{v}");
    assert!(!d.log().contains("Sup3rSecret"), "no secret in the log");
}

#[test]
fn secrets_can_be_redacted_or_allowed() {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("c.toml");
    std::fs::write(&config, "[gate]\nsecrets = \"redact\"\n").unwrap();
    let d = Daemon::start_with(&["--config", config.to_str().unwrap()]);
    let (v, code) = add(&d, &["db user app, password=hunter2x, host db1"]);
    assert_eq!(code, 0, "{v}");
    assert_eq!(v["reason"], "redacted");
    let m = memory(&d, v["id"].as_i64().unwrap());
    assert_eq!(m["content"], "db user app, password=[REDACTED], host db1");
    let (v, code) = add(&d, &["app env: DB_PASSWORD=hunter2x DB_HOST=db1"]);
    assert_eq!(code, 0, "{v}");
    assert_eq!(v["reason"], "redacted");
    let m = memory(&d, v["id"].as_i64().unwrap());
    assert_eq!(m["content"], "app env: DB_PASSWORD=[REDACTED] DB_HOST=db1");
    let (v, code) = add(
        &d,
        &[
            "db notes",
            "--meta",
            "password=hunter2x",
            "--meta",
            "host=db1",
        ],
    );
    assert_eq!(code, 0, "{v}");
    assert_eq!(v["reason"], "redacted");
    let m = memory(&d, v["id"].as_i64().unwrap());
    assert_eq!(m["metadata"]["password"], "[REDACTED]");
    assert_eq!(m["metadata"]["host"], "db1");

    std::fs::write(&config, "[gate]\nsecrets = \"allow\"\n").unwrap();
    let d = Daemon::start_with(&["--config", config.to_str().unwrap()]);
    let (v, code) = add(&d, &["password=hunter2x"]);
    assert_eq!(code, 0, "{v}");
    assert_eq!(
        memory(&d, v["id"].as_i64().unwrap())["content"],
        "password=hunter2x"
    );
}

#[test]
fn exact_duplicates_merge_within_namespace_scope_and_owner() {
    let d = Daemon::start();
    let (a, _) = add(&d, &["Prefer tabs over spaces", "--tag", "style"]);
    let (b, code) = add(&d, &["  prefer TABS over spaces!! ", "--tag", "editor"]);
    assert_eq!(code, 0);
    assert_eq!(b["deduped"], true);
    assert_eq!(b["reason"], "duplicate");
    assert_eq!(b["id"], a["id"]);
    let m = memory(&d, a["id"].as_i64().unwrap());
    assert_eq!(m["observation_count"], 2);
    assert_eq!(m["tags"], serde_json::json!(["editor", "style"]));
    assert_eq!(
        m["content"], "Prefer tabs over spaces",
        "content never changes"
    );
    // Another scope, another agent's scope, another namespace: no merge.
    let (c, _) = add(&d, &["Prefer tabs over spaces", "--scope", "agent"]);
    assert_eq!(c["deduped"], false);
    let (e, _) = d.json(&[
        "--agent",
        "other",
        "add",
        "Prefer tabs over spaces",
        "--scope",
        "agent",
    ]);
    assert_eq!(e["deduped"], false);
    let (f, _) = d.json(&["--namespace", "other", "add", "Prefer tabs over spaces"]);
    assert_eq!(f["deduped"], false);
    assert_eq!(d.status()["counts"]["memories"], 4);
}

#[test]
fn near_duplicates_merge_unless_numbers_differ() {
    let d = Daemon::start();
    let (a, _) = add(&d, &[LONG, "--tag", "db"]);
    let id = a["id"].as_i64().unwrap();
    let near = format!("{LONG} today");
    let (b, _) = add(&d, &[&near, "--tag", "infra"]);
    assert_eq!(b["merged_into"], id, "{b}");
    assert_eq!(b["reason"], "near_duplicate");
    let m = memory(&d, id);
    assert_eq!(m["observation_count"], 2);
    assert_eq!(m["tags"], serde_json::json!(["db", "infra"]));
    assert_eq!(m["content"], LONG);
    // A number changed: an update to review, not a duplicate.
    let changed = LONG.replace("5432", "5433");
    let (c, _) = add(&d, &[&changed]);
    assert_eq!(c["merged_into"], Value::Null);
    assert_eq!(c["deduped"], false);
    assert_ne!(c["id"], id);
    // (the numbers differ, so it is at most similar; here the shingles
    // around the number differ too much for that)
    // Unrelated text: nothing.
    let (u, _) = add(
        &d,
        &["the frontend is built with vite and deployed to the edge network daily"],
    );
    assert_eq!(u["similar_to"], Value::Null);
    assert_eq!(u["reason"], Value::Null);
}

/// Under 8 words a near duplicate is stored and named in `similar_to`,
/// never merged. Two short texts that differ at all stay under the default
/// threshold (one word added to six: 4 of 5 shingles shared, Jaccard 0.8),
/// so the threshold is 0.75 here: the same change to a text of nine words
/// (7 of 8, 0.875) merges.
#[test]
fn short_near_duplicates_are_similar_never_merged() {
    let d = Daemon::with_config("[gate]\nnear_duplicate_threshold = 0.75\n");
    let (long, _) = add(
        &d,
        &["ship releases with make release from the main branch"],
    );
    let (v, _) = add(
        &d,
        &["ship releases with make release from the main branch today"],
    );
    assert_eq!(v["merged_into"], long["id"], "{v}");
    assert_eq!(v["reason"], "near_duplicate");
    let (short, _) = add(&d, &["ship with make release from main"]);
    assert_eq!(short["similar_to"], Value::Null, "{short}");
    let (v, code) = add(&d, &["ship with make release from main today"]);
    assert_eq!(code, 0, "{v}");
    assert_eq!(v["accepted"], true);
    assert_eq!(v["merged_into"], Value::Null, "{v}");
    assert_eq!(v["deduped"], false);
    assert_eq!(v["similar_to"], short["id"], "{v}");
    assert_eq!(v["reason"], "similar");
    assert_ne!(v["id"], short["id"]);
    let m = memory(&d, short["id"].as_i64().unwrap());
    assert_eq!(m["observation_count"], 1);
    assert_eq!(m["content"], "ship with make release from main");
    assert_eq!(d.status()["counts"]["memories"], 3);
}

#[test]
fn a_near_duplicate_with_other_numbers_is_reported_as_similar() {
    let d = Daemon::start();
    let text = "backups run every night at 2 on the storage host and keep thirty daily copies \
                plus twelve monthly copies in the cold bucket of the second region for audits \
                and the compliance team reviews them every quarter with the security lead";
    let (a, _) = add(&d, &[text]);
    let changed = text.replace("night at 2", "night at 3");
    let (b, _) = add(&d, &[&changed]);
    assert_eq!(b["accepted"], true);
    assert_eq!(b["merged_into"], Value::Null);
    assert_eq!(b["similar_to"], a["id"], "{b}");
    assert_eq!(b["reason"], "similar");
    assert_ne!(b["id"], a["id"]);
}

#[test]
fn status_is_promoted_or_candidate_by_category_and_flag() {
    let d = Daemon::start();
    let (a, _) = add(
        &d,
        &["we shipped the release today", "--category", "episode"],
    );
    assert_eq!(memory(&d, a["id"].as_i64().unwrap())["status"], "candidate");
    let (b, _) = add(&d, &["tabs", "--category", "preference"]);
    assert_eq!(memory(&d, b["id"].as_i64().unwrap())["status"], "promoted");
    let (c, _) = add(
        &d,
        &[
            "explicit wins",
            "--category",
            "episode",
            "--status",
            "promoted",
        ],
    );
    assert_eq!(memory(&d, c["id"].as_i64().unwrap())["status"], "promoted");
    let (l, _) = d.json(&["list", "--status", "candidate"]);
    assert_eq!(ids(&l, "memories"), vec![a["id"].as_i64().unwrap()]);
}

#[test]
fn supersession_chains_walk_from_every_member() {
    let d = Daemon::start();
    let (first, _) = add(&d, &["the api runs on port 8001"]);
    let mut chain = vec![first["id"].as_i64().unwrap()];
    for port in 8002..=8005 {
        let prev = chain.last().unwrap().to_string();
        let (v, code) = add(
            &d,
            &[
                &format!("the api runs on port {port}"),
                "--supersedes",
                &prev,
            ],
        );
        assert_eq!(code, 0, "{v}");
        chain.push(v["id"].as_i64().unwrap());
    }
    for member in &chain {
        let (h, code) = d.json(&["history", &member.to_string()]);
        assert_eq!(code, 0, "{h}");
        assert_eq!(ids(&h, "chain"), chain, "walked from #{member}");
    }
    // Reads show the active end only, unless asked.
    let (l, _) = d.json(&["search", "api port"]);
    assert_eq!(ids(&l, "hits"), vec![*chain.last().unwrap()]);
    let (l, _) = d.json(&["list", "--include-superseded"]);
    assert_eq!(l["count"], 5);
    let (g, code) = d.json(&["get", &chain[0].to_string()]);
    assert_eq!(code, 1, "{g}");
    // Double supersession and a self-supersession are refused.
    let (v, code) = d.json(&["supersede", &chain[0].to_string(), &chain[4].to_string()]);
    assert_eq!(code, 4, "{v}");
    assert_eq!(v["code"], "conflict");
    let (v, code) = add(&d, &["another", "--supersedes", &chain[1].to_string()]);
    assert_eq!(code, 4, "{v}");
    let (v, code) = d.json(&["supersede", "5", "5"]);
    assert_eq!(code, 2, "{v}");
    // Superseding with a superseded memory is refused (it would fork).
    let (x, _) = add(&d, &["standalone fact about queues"]);
    let (v, code) = d.json(&["supersede", &x["id"].to_string(), &chain[2].to_string()]);
    assert_eq!(code, 4, "{v}");
    // `supersede OLD NEW` on two active memories.
    let (y, _) = add(&d, &["queues are drained nightly"]);
    let (v, code) = d.json(&["supersede", &x["id"].to_string(), &y["id"].to_string()]);
    assert_eq!(code, 0, "{v}");
    let m = memory(&d, x["id"].as_i64().unwrap());
    assert_eq!(m["superseded_by"], y["id"]);
    assert!(m["superseded_at"].is_string());
    // A cycle: the end of the chain cannot supersede its start (already
    // superseded), nor the start its end; nothing changes either way.
    let last = chain.last().unwrap().to_string();
    let (v, code) = d.json(&["supersede", &last, &chain[0].to_string()]);
    assert_eq!(code, 4, "{v}");
    let (v, code) = d.json(&["supersede", &chain[0].to_string(), &last]);
    assert_eq!(code, 4, "{v}");
    let (h, _) = d.json(&["history", &last]);
    assert_eq!(ids(&h, "chain"), chain);
    assert!(memory(&d, *chain.last().unwrap())["superseded_by"].is_null());
}

#[test]
fn history_includes_earlier_versions() {
    let d = Daemon::start();
    add(&d, &["version one"]);
    d.cli(&["update", "1", "--content", "version two"]);
    d.cli(&["update", "1", "--content", "version three"]);
    let (h, _) = d.json(&["history", "1"]);
    let contents: Vec<&str> = h["revisions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["content"].as_str().unwrap())
        .collect();
    assert_eq!(contents, vec!["version one", "version two"]);
}

#[test]
fn confirm_counts_without_an_edit() {
    let d = Daemon::start();
    add(&d, &["confirmed fact"]);
    let g = d.status()["generation"].as_u64().unwrap();
    d.cli(&["confirm", "1"]);
    let (v, code) = d.json(&["confirm", "1"]);
    assert_eq!(code, 0);
    assert_eq!(v["memory"]["confirmed_count"], 2);
    assert!(v["memory"]["last_confirmed_at"].is_string());
    assert_eq!(v["memory"]["rev"], 1);
    assert_eq!(d.status()["generation"].as_u64().unwrap(), g);
    let (_, code) = d.json(&["confirm", "77"]);
    assert_eq!(code, 1);
}

#[test]
fn expired_memories_vanish_and_are_pruned() {
    let d = Daemon::start();
    add(
        &d,
        &["short lived note about the outage", "--expires", "1s"],
    );
    add(&d, &["long lived note about the outage", "--expires", "7d"]);
    add(&d, &["timeless note about the outage"]);
    let (l, _) = d.json(&["list"]);
    assert_eq!(l["count"], 3);
    std::thread::sleep(std::time::Duration::from_millis(1200));
    let (l, _) = d.json(&["list"]);
    assert_eq!(ids(&l, "memories"), vec![3, 2]);
    let (s, _) = d.json(&["search", "outage"]);
    assert_eq!(s["count"], 2);
    let (_, code) = d.json(&["get", "1"]);
    assert_eq!(code, 1);
    let (p, _) = d.json(&["prune", "--dry-run"]);
    assert_eq!(p["pruned"], serde_json::json!([1]));
    assert_eq!(d.status()["counts"]["memories"], 3);
    let (p, _) = d.json(&["prune"]);
    assert_eq!(p["count"], 1);
    assert_eq!(d.status()["counts"]["memories"], 2);
    let (p, _) = d.json(&["prune"]);
    assert_eq!(p["count"], 0);
}

#[test]
fn tasks_move_through_their_states() {
    let d = Daemon::start();
    let (t, code) = d.json(&["task", "add", "write the release notes", "--tag", "release"]);
    assert_eq!(code, 0, "{t}");
    let id = t["id"].as_i64().unwrap().to_string();
    d.json(&["task", "add", "tag the release"]);
    let m = memory(&d, t["id"].as_i64().unwrap());
    assert_eq!(m["category"], "task");
    assert_eq!(m["metadata"]["status"], "pending");
    assert_eq!(m["metadata"]["surface"], "startup");
    let (open, _) = d.json(&["list", "--meta", "surface=startup"]);
    assert_eq!(open["count"], 2);
    let (v, code) = d.json(&["task", "start", &id]);
    assert_eq!(code, 0, "{v}");
    assert_eq!(v["memory"]["metadata"]["status"], "in_progress");
    let (v, code) = d.json(&["task", "done", &id]);
    assert_eq!(code, 0, "{v}");
    assert_eq!(v["memory"]["metadata"]["status"], "completed");
    assert!(v["memory"]["metadata"].get("surface").is_none());
    // Closed tasks stay closed.
    for op in ["start", "done", "cancel"] {
        let (v, code) = d.json(&["task", op, &id]);
        assert_eq!(code, 4, "{op}: {v}");
        assert_eq!(v["code"], "conflict");
    }
    let (open, _) = d.json(&["task", "list"]);
    assert_eq!(open["count"], 1);
    let (all, _) = d.json(&["task", "list", "--all"]);
    assert_eq!(all["count"], 2);
    let (v, code) = d.json(&["task", "cancel", "2"]);
    assert_eq!(code, 0, "{v}");
    let (open, _) = d.json(&["list", "--meta", "surface=startup"]);
    assert_eq!(open["count"], 0);
    // Only tasks are tasks.
    add(&d, &["not a task"]);
    let (v, code) = d.json(&["task", "done", "3"]);
    assert_eq!(code, 2, "{v}");
}

#[test]
fn updates_follow_the_task_rules() {
    let d = Daemon::start();
    let open = |d: &Daemon| {
        let (l, _) = d.json(&["list", "--meta", "surface=startup"]);
        ids(&l, "memories")
    };
    let (t, _) = d.json(&["task", "add", "write the release notes"]);
    let done = t["id"].as_i64().unwrap();
    d.json(&["task", "done", &done.to_string()]);
    // A closed task is not reopened through update either.
    let (v, code) = d.json(&["update", &done.to_string(), "--meta", "status=pending"]);
    assert_eq!(code, 4, "{v}");
    assert_eq!(v["code"], "conflict");
    let m = memory(&d, done);
    assert_eq!(m["metadata"]["status"], "completed");
    assert_eq!(m["rev"], 2, "nothing written");
    // Only task states.
    let (v, code) = d.json(&["update", &done.to_string(), "--meta", "status=bogus"]);
    assert_eq!(code, 2, "{v}");
    assert!(
        v["error"]
            .as_str()
            .unwrap()
            .contains("pending, in_progress"),
        "{v}"
    );
    // An allowed move through update sets what the task commands set.
    let (t, _) = d.json(&["task", "add", "tag the release"]);
    let id = t["id"].as_i64().unwrap();
    d.json(&["task", "start", &id.to_string()]);
    let (v, code) = d.json(&["update", &id.to_string(), "--meta", "status=pending"]);
    assert_eq!(code, 0, "{v}");
    assert_eq!(v["memory"]["metadata"]["status"], "pending");
    assert_eq!(v["memory"]["metadata"]["surface"], "startup");
    assert_eq!(open(&d), vec![id]);
    let (v, code) = d.json(&["update", &id.to_string(), "--meta", "status=cancelled"]);
    assert_eq!(code, 0, "{v}");
    assert!(v["memory"]["metadata"].get("surface").is_none(), "{v}");
    assert_eq!(open(&d), Vec::<i64>::new());
    // A note that becomes a task is pending work; a task that becomes a
    // note is not.
    let (n, _) = add(&d, &["bump the version in Cargo.toml"]);
    let note = n["id"].as_i64().unwrap();
    let (v, code) = d.json(&["update", &note.to_string(), "--category", "task"]);
    assert_eq!(code, 0, "{v}");
    assert_eq!(v["memory"]["metadata"]["status"], "pending");
    let (l, _) = d.json(&["task", "list"]);
    assert_eq!(ids(&l, "memories"), vec![note]);
    let (v, code) = d.json(&["update", &note.to_string(), "--category", "note"]);
    assert_eq!(code, 0, "{v}");
    assert_eq!(v["memory"]["metadata"], serde_json::json!({}));
    assert_eq!(open(&d), Vec::<i64>::new());
}

#[test]
fn the_shell_and_the_client_speak_the_same_gate() {
    let d = Daemon::start();
    let script = concat!(
        "{\"command\": \"add\", \"content\": \"password=hunter2x\"}\n",
        "task add \"review the design\"\n",
        "{\"command\": \"task start\", \"id\": 1}\n",
        "add \"first value\"\n",
        "add \"second value\"\n",
        "{\"command\": \"supersede\", \"old\": 2, \"new\": 3}\n",
        "history 3\n",
    );
    let out = d.cli_stdin(&["--json", "shell"], Some(script.as_bytes()));
    let lines: Vec<Value> = out
        .stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 7, "{}", out.stdout);
    assert_eq!(lines[0]["reason"], "secret");
    assert_eq!(lines[2]["memory"]["metadata"]["status"], "in_progress");
    assert_eq!(lines[5]["old"], 2);
    assert_eq!(ids(&lines[6], "chain"), vec![2, 3]);

    // The blocking client: the same gate and the same moves.
    let mut c = memd_client::blocking::Client::connect(d.opts()).unwrap();
    let refused = c.add(memd_client::AddRequest {
        content: "DB_PASSWORD=hunter2hunter2".into(),
        ..Default::default()
    });
    assert!(
        matches!(refused, Err(memd_client::Error::Rejected(ref r)) if r.reason.as_deref() == Some("secret")),
        "{refused:?}"
    );
    let m = c.task(1, "completed", None).unwrap();
    assert_eq!(m.metadata, r#"{"status":"completed"}"#);
    assert!(matches!(
        c.task(1, "pending", None),
        Err(memd_client::Error::Conflict(_))
    ));
    let fourth = c
        .add(memd_client::AddRequest {
            content: "third value".into(),
            expires: Some("1s".into()),
            ..Default::default()
        })
        .unwrap()
        .id
        .unwrap();
    let s = c.supersede(3, fourth).unwrap();
    assert_eq!((s.old, s.new), (3, fourth));
    let h = c.history(2).unwrap();
    let chain: Vec<i64> = h.chain.iter().map(|m| m.id).collect();
    assert_eq!(chain, vec![2, 3, fourth]);
    assert_eq!(c.confirm(fourth).unwrap().confirmed_count, 1);
    std::thread::sleep(std::time::Duration::from_millis(1200));
    let p = c.prune(true, false).unwrap();
    assert_eq!((p.ids.clone(), p.dry_run), (vec![fourth], true));
    assert_eq!(c.prune(false, false).unwrap().ids, vec![fourth]);
}

/// Rows other tools write get their dedup key (at start and in sweeps), so
/// exact dedup finds them; a row whose content another tool changed is
/// never merged into by its old text.
#[test]
fn dedup_keeps_up_with_other_tools() {
    let d = Daemon::start();
    let (v, _) = add(&d, &["The staging database listens on port 5432"]);
    let edited = v["id"].as_i64().unwrap();
    crate::common::sqlite3(
        &d.db(),
        "INSERT INTO memories(content) VALUES ('Prefer spaces in YAML files'); \
         UPDATE memories SET content = 'The staging database moved to db2' WHERE id = 1;",
    );
    let (v, code) = d.json(&["sweep"]);
    assert_eq!(code, 0, "{v}");
    let (v, code) = add(&d, &["prefer spaces in YAML files!"]);
    assert_eq!(code, 0, "{v}");
    assert_eq!(v["deduped"], true, "{v}");
    assert_eq!(v["id"], 2);
    let (v, code) = add(&d, &["The staging database listens on port 5432"]);
    assert_eq!(code, 0, "{v}");
    assert_eq!(v["deduped"], false, "{v}");
    assert_ne!(v["id"].as_i64(), Some(edited));
    let (v, _) = add(&d, &["the staging database moved to db2."]);
    assert_eq!(
        (v["deduped"].clone(), v["id"].as_i64()),
        (serde_json::json!(true), Some(edited)),
        "{v}"
    );
}
