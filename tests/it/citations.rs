//! Code citations through the real binary and a real git repository: a
//! memory's cited lines followed as the code is edited, moved, renamed
//! and deleted; what `get`, `check --citations` and the block of a new
//! session say of them; a frozen block that does not change when a file
//! does; citations outside the repository refused.

use std::path::Path;

use serde_json::Value;

use crate::common::{Daemon, git, memd_in, memd_json, session_start, tool};

/// `memd --json ARGS` in `dir`: exit code and JSON.
fn run(d: &Daemon, dir: &Path, args: &[&str]) -> (i32, Value) {
    let (v, code) = memd_in(d, dir, args);
    (code, v)
}

/// The verdicts `memd get ID` gives in `dir`: (place, verdict, now).
fn verdicts(d: &Daemon, dir: &Path, id: i64) -> Vec<(String, String, Option<String>)> {
    let v = memd_json(d, dir, &["get", &id.to_string()]);
    v["citations"]
        .as_array()
        .unwrap_or_else(|| panic!("no citations: {v}"))
        .iter()
        .map(|c| {
            (
                c["place"].as_str().unwrap().to_string(),
                c["verdict"].as_str().unwrap().to_string(),
                c["now"].as_str().map(str::to_string),
            )
        })
        .collect()
}

fn one(place: &str, verdict: &str, now: Option<&str>) -> Vec<(String, String, Option<String>)> {
    vec![(place.into(), verdict.into(), now.map(str::to_string))]
}

/// Sixty lines; lines 40–44 are `retry_limit`.
fn webhooks() -> String {
    let mut lines: Vec<String> = (1..=60).map(|i| format!("// line {i}")).collect();
    lines[39] = "pub fn retry_limit() -> u32 {".into();
    lines[40] = "    // webhooks give up after five tries".into();
    lines[41] = "    let limit = 5;".into();
    lines[42] = "    limit".into();
    lines[43] = "}".into();
    lines.join("\n") + "\n"
}

/// A repository with `src/billing/webhooks.rs`, committed.
fn repository(dir: &Path) {
    std::fs::create_dir_all(dir.join("src/billing")).unwrap();
    git(dir, &["init", "-q"]);
    std::fs::write(dir.join("src/billing/webhooks.rs"), webhooks()).unwrap();
    git(dir, &["add", "."]);
    git(dir, &["commit", "-q", "-m", "first"]);
}

#[test]
fn a_citation_follows_its_code_as_it_is_edited_moved_renamed_and_deleted() {
    if !tool("git", "a real repository") {
        return;
    }
    let d = Daemon::start();
    let repo = d.dir.path().join("shop");
    repository(&repo);
    let file = repo.join("src/billing/webhooks.rs");
    let place = "src/billing/webhooks.rs:40-44";

    let v = memd_json(
        &d,
        &repo,
        &[
            "add",
            "The webhook retry limit is set in retry_limit",
            "--cites",
            place,
        ],
    );
    let id = v["id"].as_i64().unwrap();
    let m = memd_json(&d, &repo, &["get", &id.to_string()]);
    let cites = &m["memory"]["metadata"]["cites"][0];
    assert_eq!(cites["path"], "src/billing/webhooks.rs", "{m}");
    assert_eq!(
        (cites["start"].as_i64(), cites["end"].as_i64()),
        (Some(40), Some(44))
    );
    assert_eq!(cites["hash"].as_str().unwrap().len(), 32, "{m}");
    assert_eq!(
        cites["commit"].as_str().unwrap().len(),
        40,
        "a clean tree: {m}"
    );
    assert!(
        !m.to_string().contains("let limit = 5"),
        "the code is not stored: {m}"
    );
    assert_eq!(verdicts(&d, &repo, id), one(place, "fresh", None));

    // Line endings are not a change.
    std::fs::write(&file, webhooks().replace('\n', "\r\n")).unwrap();
    assert_eq!(verdicts(&d, &repo, id), one(place, "fresh", None));

    // The lines edited.
    std::fs::write(
        &file,
        webhooks().replace("let limit = 5;", "let limit = 8;"),
    )
    .unwrap();
    assert_eq!(verdicts(&d, &repo, id), one(place, "changed", None));
    let (code, v) = run(&d, &repo, &["check", "--citations"]);
    assert_eq!(code, 1, "{v}");
    let fix = v["stale"][0]["fix"].as_str().unwrap();
    assert!(fix.contains(&format!("memd forget {id}")), "{v}");

    // The function moved lower in the file.
    std::fs::write(
        &file,
        format!("// a\n// b\n// c\n// d\n// e\n{}", webhooks()),
    )
    .unwrap();
    assert_eq!(
        verdicts(&d, &repo, id),
        one(place, "moved", Some("src/billing/webhooks.rs:45-49"))
    );
    let (code, v) = run(&d, &repo, &["check", "--citations"]);
    assert_eq!(code, 1, "{v}");
    assert_eq!(
        v["stale"][0]["fix"],
        format!("memd update {id} --cites 'src/billing/webhooks.rs:45-49'"),
        "{v}"
    );

    // The file renamed with git mv.
    std::fs::write(&file, webhooks()).unwrap();
    git(
        &repo,
        &["mv", "src/billing/webhooks.rs", "src/billing/hooks.rs"],
    );
    assert_eq!(
        verdicts(&d, &repo, id),
        one(place, "moved", Some("src/billing/hooks.rs:40-44"))
    );
    // …and committed: the citation's commit still names where it went.
    git(&repo, &["commit", "-q", "-m", "rename"]);
    assert_eq!(
        verdicts(&d, &repo, id),
        one(place, "moved", Some("src/billing/hooks.rs:40-44"))
    );

    // Deleted.
    git(&repo, &["rm", "-q", "src/billing/hooks.rs"]);
    assert_eq!(verdicts(&d, &repo, id), one(place, "gone", None));

    // Re-pinned where the code is now: fresh again.
    std::fs::create_dir_all(repo.join("src/billing")).unwrap();
    std::fs::write(repo.join("src/billing/hooks.rs"), webhooks()).unwrap();
    memd_json(
        &d,
        &repo,
        &[
            "update",
            &id.to_string(),
            "--cites",
            "src/billing/hooks.rs:40-44",
        ],
    );
    assert_eq!(
        verdicts(&d, &repo, id),
        one("src/billing/hooks.rs:40-44", "fresh", None)
    );
    let (code, v) = run(&d, &repo, &["check", "--citations"]);
    assert_eq!((code, v["citations"].as_i64()), (0, Some(1)), "{v}");

    // The viewer shows the last verdict reported here, with when.
    let (addr, login_code) = crate::viewer::open(&d, false);
    let (cookie, base) = crate::viewer::login(&addr, &login_code);
    let r = crate::common::http::tcp_request(
        &addr,
        "GET",
        &format!("{base}m/{id}"),
        &[("Cookie", &cookie)],
        None,
    );
    let page = String::from_utf8_lossy(&r.body);
    assert_eq!(r.status, 200, "{page}");
    assert!(
        page.contains(
            "<code>src/billing/hooks.rs:40-44</code> <span class=\"verdict v-fresh\">fresh</span>, checked <time"
        ),
        "{page}"
    );
}

#[test]
fn a_new_sessions_block_marks_stale_code_and_a_frozen_block_stays() {
    if !tool("git", "a real repository") {
        return;
    }
    let d = Daemon::start();
    let repo = d.dir.path().join("shop");
    repository(&repo);
    // Recognised in the text: the path and its line.
    let v = memd_json(
        &d,
        &repo,
        &[
            "add",
            "Retries: see src/billing/webhooks.rs line 42 before changing them",
        ],
    );
    let id = v["id"].as_i64().unwrap();
    assert_eq!(
        v["cites"],
        serde_json::json!(["src/billing/webhooks.rs:42"]),
        "{v}"
    );
    assert_eq!(
        verdicts(&d, &repo, id),
        one("src/billing/webhooks.rs:42", "fresh", None)
    );
    let (fresh, _) = session_start(&d, &repo, "s1");
    assert!(fresh.contains("before changing them\n"), "{fresh}");

    std::fs::write(
        repo.join("src/billing/webhooks.rs"),
        webhooks().replace("let limit = 5;", "let limit = 8;"),
    )
    .unwrap();
    // The frozen block of s1 does not change because a file did.
    assert_eq!(session_start(&d, &repo, "s1").0, fresh);
    // A new session is told.
    let (block, _) = session_start(&d, &repo, "s2");
    assert!(
        block.contains(
            "before changing them [cited code changed since: src/billing/webhooks.rs:42]"
        ),
        "{block}"
    );
    // The doctor says so too (and records nothing: it changes nothing).
    let (v, _) = memd_in(&d, &repo, &["doctor"]);
    let check = v["checks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == "citations")
        .unwrap_or_else(|| panic!("{v}"));
    assert_eq!(check["verdict"], "fail", "{v}");
    assert!(
        check["detail"]
            .as_str()
            .unwrap()
            .contains(&format!("#{id} changed src/billing/webhooks.rs:42")),
        "{v}"
    );
    std::fs::remove_file(repo.join("src/billing/webhooks.rs")).unwrap();
    let (block, _) = session_start(&d, &repo, "s3");
    assert!(
        block.contains("[cited code gone: src/billing/webhooks.rs:42]"),
        "{block}"
    );
}

#[test]
fn citations_outside_the_repository_are_refused_and_odd_paths_work() {
    if !tool("git", "a real repository") {
        return;
    }
    let d = Daemon::start();
    let repo = d.dir.path().join("shop");
    repository(&repo);
    let outside = d.dir.path().join("secret.txt");
    std::fs::write(&outside, "the key\n").unwrap();
    std::os::unix::fs::symlink(&outside, repo.join("link.txt")).unwrap();
    for bad in [
        "../secret.txt:1",
        "link.txt:1",
        "link.txt",
        "/etc/passwd",
        "src/none.rs",
    ] {
        let (code, v) = run(&d, &repo, &["add", "about a file", "--cites", bad]);
        assert_eq!(code, 2, "{bad}: {v}");
        assert_eq!(v["code"], "usage", "{bad}: {v}");
    }
    // Outside a checkout there is nothing to cite.
    let (code, v) = run(
        &d,
        d.dir.path(),
        &["add", "about a file", "--cites", "x.rs"],
    );
    assert_eq!(code, 2, "{v}");
    // Nothing was stored by the refusals.
    assert_eq!(memd_json(&d, &repo, &["list"])["count"], 0);

    std::fs::create_dir_all(repo.join("docs/a b")).unwrap();
    std::fs::write(repo.join("docs/a b/ünïcode.md"), "one\ntwo\n").unwrap();
    let v = memd_json(
        &d,
        &repo,
        &["add", "the odd doc", "--cites", "docs/a b/ünïcode.md:2"],
    );
    let id = v["id"].as_i64().unwrap();
    assert_eq!(
        verdicts(&d, &repo, id),
        one("docs/a b/ünïcode.md:2", "fresh", None)
    );
    // A binary file's lines are refused; the file itself may be cited.
    std::fs::write(repo.join("logo.png"), b"\x89PNG\r\n\x1a\n\0\0\0").unwrap();
    let (code, v) = run(&d, &repo, &["add", "the logo", "--cites", "logo.png:1"]);
    assert_eq!(code, 2, "{v}");
    assert!(v["error"].as_str().unwrap().contains("not text"), "{v}");
    memd_json(&d, &repo, &["add", "the logo", "--cites", "logo.png"]);
}

/// An agent through `memd mcp` run in the checkout: `memory_store` with
/// `cites`, and `memory_search`'s compact hit carrying the verdict.
#[tokio::test(flavor = "multi_thread")]
async fn an_agents_tools_cite_and_are_told_the_verdict() {
    use rmcp::ServiceExt;
    use rmcp::model::CallToolRequestParams;
    if !tool("git", "a real repository") {
        return;
    }
    let d = Daemon::start();
    let repo = d.dir.path().join("shop");
    repository(&repo);
    let mut cmd = crate::common::memd_command(d.dir.path());
    cmd.current_dir(&repo)
        .arg("--data-dir")
        .arg(d.data_dir())
        .args(["--no-autostart", "mcp"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::inherit());
    let mut child = tokio::process::Command::from(cmd)
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let transport = (child.stdout.take().unwrap(), child.stdin.take().unwrap());
    let s = ().serve(transport).await.unwrap();
    let call = |name: &'static str, args: Value| {
        let params =
            CallToolRequestParams::new(name).with_arguments(args.as_object().unwrap().clone());
        let peer = s.peer().clone();
        async move {
            let r = peer.call_tool(params).await.unwrap();
            assert_eq!(r.is_error, Some(false), "{name}: {r:?}");
            r.structured_content.unwrap()
        }
    };
    call(
        "memory_store",
        serde_json::json!({"content": "webhook retries stop at the limit in retry_limit",
            "cites": ["src/billing/webhooks.rs:40-44"]}),
    )
    .await;
    std::fs::write(
        repo.join("src/billing/webhooks.rs"),
        webhooks().replace("let limit = 5;", "let limit = 8;"),
    )
    .unwrap();
    let v = call(
        "memory_search",
        serde_json::json!({"query": "webhook retries", "mode": "lexical"}),
    )
    .await;
    let hit = &v["hits"][0];
    assert_eq!(
        hit["citations"],
        serde_json::json!([{"place": "src/billing/webhooks.rs:40-44", "verdict": "changed"}]),
        "{v}"
    );
    drop(s);
    let _ = child.kill().await;
}
