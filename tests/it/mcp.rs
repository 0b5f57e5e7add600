//! `memd mcp` end to end with real MCP clients: the official Rust SDK's
//! client (rmcp) here, and the `mcp` package from PyPI (tests/mcp_client.py)
//! as an external one. Both: initialize, list the tools, call every tool,
//! read memory://inject twice (identical), see it change after
//! `memory_compacted`, and get a drift refusal (the sqlite3 shell as the
//! external writer) as a tool error carrying the structured JSON, announced
//! by a resources/updated notification. Then the session across daemon
//! restarts (with and without autostart), and near duplicates on
//! memory://similar.

use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::common::{BIN, Daemon, require, sqlite3, tool};
use rmcp::model::{
    CallToolRequestParams, CallToolResult, GetPromptRequestParams, ReadResourceRequestParams,
    ResourceUpdatedNotificationParam, SubscribeRequestParams,
};
use rmcp::service::{MaybeSendFuture, NotificationContext, RunningService};
use rmcp::{ClientHandler, RoleClient, ServiceExt};
use serde_json::{Value, json};

/// The host: records resource-updated notifications.
#[derive(Clone, Default)]
struct Host {
    updates: Arc<Mutex<Vec<String>>>,
    updated: Arc<tokio::sync::Notify>,
}

impl ClientHandler for Host {
    fn on_resource_updated(
        &self,
        params: ResourceUpdatedNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) -> impl Future<Output = ()> + MaybeSendFuture + '_ {
        self.updates.lock().unwrap().push(params.uri);
        self.updated.notify_one();
        std::future::ready(())
    }
}

type Session = RunningService<RoleClient, Host>;

async fn call(s: &Session, name: &'static str, args: Value) -> CallToolResult {
    let params = CallToolRequestParams::new(name).with_arguments(args.as_object().unwrap().clone());
    s.peer().call_tool(params).await.unwrap()
}

/// A tool's JSON, checked to be a success.
async fn ok(s: &Session, name: &'static str, args: Value) -> Value {
    let r = call(s, name, args.clone()).await;
    let v = r.structured_content.clone().unwrap();
    assert_eq!(r.is_error, Some(false), "{name} {args}: {v}");
    let text = r.content[0].as_text().unwrap().text.clone();
    assert_eq!(serde_json::from_str::<Value>(&text).unwrap(), v);
    v
}

async fn inject(s: &Session) -> String {
    let r = s
        .peer()
        .read_resource(ReadResourceRequestParams::new("memory://inject"))
        .await
        .unwrap();
    match &r.contents[0] {
        rmcp::model::ResourceContents::TextResourceContents { text, .. } => text.clone(),
        other => panic!("{other:?}"),
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn rmcp_client_uses_every_tool_resource_and_prompt() {
    let d = Daemon::start();
    let host = Host::default();
    let mut child = tokio::process::Command::new(BIN)
        .arg("--data-dir")
        .arg(d.data_dir())
        .args(["--no-autostart", "mcp"])
        .env("HOME", d.dir.path())
        .current_dir(d.dir.path())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let transport = (child.stdout.take().unwrap(), child.stdin.take().unwrap());
    let s: Session = host.clone().serve(transport).await.unwrap();

    let info = s.peer().peer_info().unwrap();
    assert_eq!(info.server_info.as_ref().unwrap().name, "memd");
    let tools = s.peer().list_tools(None).await.unwrap().tools;
    let mut names: Vec<&str> = tools.iter().map(|t| t.name.as_ref()).collect();
    names.sort_unstable();
    assert_eq!(
        names,
        [
            "memory_compacted",
            "memory_forget",
            "memory_get",
            "memory_history",
            "memory_list",
            "memory_search",
            "memory_store",
            "memory_supersede",
            "memory_task_add",
            "memory_task_list",
            "memory_task_update",
            "memory_update",
        ]
    );
    let store = tools.iter().find(|t| t.name == "memory_store").unwrap();
    assert_eq!(store.input_schema["required"], json!(["content"]));
    assert!(store.description.as_ref().unwrap().contains("durable"));

    // Every tool.
    let a = ok(
        &s,
        "memory_store",
        json!({"content": "CI runs on two cores", "category": "fact", "tags": ["ci"],
               "metadata": {"cores": 2}}),
    )
    .await;
    let id = a["id"].as_i64().unwrap();
    let hits = ok(
        &s,
        "memory_search",
        json!({"query": "cores", "mode": "lexical"}),
    )
    .await;
    assert_eq!(hits["hits"][0]["id"], id);
    // Compact hits: what an agent picks by; memory_get has the rest.
    crate::common::assert_compact_hit(&hits["hits"][0], false);
    assert_eq!(hits["hits"][0]["text"], "CI runs on two cores");
    let got = ok(&s, "memory_get", json!({"id": id})).await;
    assert_eq!(got["memory"]["metadata"], json!({"cores": 2}));
    // An agent's, through MCP.
    let origin = &got["memory"]["provenance"]["sources"][0];
    assert_eq!(
        (origin["source"].as_str(), origin["via"].as_str()),
        (Some("agent"), Some("mcp")),
        "{got}"
    );
    let listed = ok(&s, "memory_list", json!({"category": "fact", "limit": 5})).await;
    assert_eq!(listed["count"], 1);
    let upd = ok(
        &s,
        "memory_update",
        json!({"id": id, "tags": ["ci", "infra"], "expect_rev": got["memory"]["rev"]}),
    )
    .await;
    assert_eq!(upd["memory"]["tags"], json!(["ci", "infra"]));
    let b = ok(
        &s,
        "memory_store",
        json!({"content": "CI runs on four cores", "category": "fact"}),
    )
    .await;
    let sup = ok(
        &s,
        "memory_supersede",
        json!({"old_id": id, "new_id": b["id"]}),
    )
    .await;
    assert_eq!(sup["old"], id);
    let hist = ok(&s, "memory_history", json!({"id": id})).await;
    assert_eq!(hist["chain"].as_array().unwrap().len(), 2);
    let t = ok(
        &s,
        "memory_task_add",
        json!({"content": "Upgrade the runners"}),
    )
    .await;
    let tasks = ok(&s, "memory_task_list", json!({})).await;
    assert_eq!(tasks["memories"][0]["id"], t["id"]);
    let moved = ok(
        &s,
        "memory_task_update",
        json!({"id": t["id"], "status": "in_progress"}),
    )
    .await;
    assert_eq!(moved["memory"]["metadata"]["status"], "in_progress");
    let fgt = ok(&s, "memory_forget", json!({"id": t["id"]})).await;
    assert_eq!(fgt["forgotten"], true);
    let comp = ok(&s, "memory_compacted", json!({})).await;
    assert_eq!(comp["invalidated"], true);
    // A rejected store is a tool error with the gate's reason.
    let r = call(
        &s,
        "memory_store",
        json!({"content": "token ghp_0123456789abcdefghijklmnopqrstuvwxyzAB"}),
    )
    .await;
    assert_eq!(r.is_error, Some(true));
    assert_eq!(r.structured_content.unwrap()["reason"], "secret");

    // The frozen block, and the prompt with the same bytes.
    let first = inject(&s).await;
    assert_eq!(inject(&s).await, first, "memory://inject is byte-stable");
    assert!(first.contains("CI runs on four cores"), "{first}");
    let prompt = s
        .peer()
        .get_prompt(GetPromptRequestParams::new("memory"))
        .await
        .unwrap();
    let text = serde_json::to_value(&prompt.messages[0].content).unwrap();
    assert_eq!(text["text"], first);
    // Another session's write does not move it; compacted does.
    let out = d.cli(&[
        "add",
        "Runners live in the eu-west pool",
        "--category",
        "fact",
    ]);
    assert_eq!(out.code, 0, "{out:?}");
    assert_eq!(inject(&s).await, first);
    ok(&s, "memory_compacted", json!({})).await;
    let rebuilt = inject(&s).await;
    assert_ne!(rebuilt, first);
    assert!(rebuilt.contains("eu-west pool"), "{rebuilt}");

    // Drift: subscribe, let the sqlite3 shell change a memory, get the
    // notification, and a refused update as a tool error.
    #[allow(deprecated)]
    s.peer()
        .subscribe(SubscribeRequestParams::new("memory://inject"))
        .await
        .unwrap();
    let bid = b["id"].as_i64().unwrap();
    let before = ok(&s, "memory_get", json!({"id": bid})).await;
    sqlite3(
        &d.db(),
        &format!("UPDATE memories SET content = 'CI runs on eight cores' WHERE id = {bid}"),
    );
    tokio::time::timeout(Duration::from_secs(15), host.updated.notified())
        .await
        .expect("a resources/updated notification");
    assert_eq!(*host.updates.lock().unwrap(), ["memory://inject"]);
    assert_eq!(
        inject(&s).await,
        rebuilt,
        "still frozen after an external edit"
    );
    let r = call(
        &s,
        "memory_update",
        json!({"id": bid, "content": "CI runs on sixteen cores", "expect_rev": before["memory"]["rev"]}),
    )
    .await;
    assert_eq!(r.is_error, Some(true));
    let body = r.structured_content.unwrap();
    assert_eq!(body["code"], "drift", "{body}");
    assert_eq!(body["success"], false);
    assert!(body["drift_backup"].as_str().unwrap().ends_with(".json"));
    assert!(body["generation_actual"].as_u64() > body["generation_observed"].as_u64());
    assert!(body["remediation"].as_str().is_some());
    let reread = ok(&s, "memory_get", json!({"id": bid})).await;
    assert_eq!(reread["memory"]["content"], "CI runs on eight cores");

    s.cancel().await.unwrap();
    let status = child.wait().await.unwrap();
    assert!(status.success(), "memd mcp exits 0 when the host leaves");
}

#[test]
fn mcp_python_sdk_client_end_to_end() {
    // .ci/run installs the `mcp` package in a venv and names its python
    // here; a developer without it sees a skip message.
    let python = std::env::var("MEMD_TEST_PYTHON").unwrap_or_else(|_| "python3".into());
    let has_mcp = std::process::Command::new(&python)
        .args(["-c", "import mcp"])
        .output()
        .is_ok_and(|o| o.status.success());
    if !tool("sqlite3", "the external writer")
        || !require(
            has_mcp,
            &format!("{python} cannot import the `mcp` package (pip install mcp)"),
        )
    {
        return;
    }
    let d = Daemon::start();
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/mcp_client.py");
    let out = std::process::Command::new(&python)
        .arg(script)
        .arg(BIN)
        .arg(d.data_dir())
        .env("HOME", d.dir.path())
        .env("PYTHONWARNINGS", "ignore")
        .current_dir(d.dir.path())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "the Python MCP client failed:\n{stdout}\n{stderr}\ndaemon log:\n{}",
        d.log()
    );
    assert!(stdout.contains("checks passed"), "{stdout}");
    eprintln!("{}", stdout.trim());
}

#[tokio::test(flavor = "multi_thread")]
async fn mcp_autostarts_the_daemon_and_refuses_unknown_tools() {
    let dir = tempfile::Builder::new().prefix("memd").tempdir().unwrap();
    let data = dir.path().join("data");
    let (s, mut child) = start_mcp(dir.path(), &data, &[], Host::default()).await;
    let stored = ok(
        &s,
        "memory_store",
        json!({"content": "Autostarted for MCP"}),
    )
    .await;
    assert_eq!(stored["accepted"], true);
    assert!(data.join("memd.sock").exists(), "a daemon was started");
    let params = CallToolRequestParams::new("memory_drop_everything");
    assert!(s.peer().call_tool(params).await.is_err(), "unknown tool");
    s.cancel().await.unwrap();
    child.wait().await.unwrap();
    // Stop the daemon the MCP server started.
    let out = std::process::Command::new(BIN)
        .arg("--data-dir")
        .arg(&data)
        .args(["--no-autostart", "stop"])
        .env("HOME", dir.path())
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    assert!(!data.join("memd.sock").exists());
}

/// Starts `memd mcp` on `data` (HOME `home`) with extra global flags and
/// connects the rmcp client to it.
async fn start_mcp(
    home: &std::path::Path,
    data: &std::path::Path,
    flags: &[&str],
    host: Host,
) -> (Session, tokio::process::Child) {
    let mut child = tokio::process::Command::new(BIN)
        .arg("--data-dir")
        .arg(data)
        .args(flags)
        .arg("mcp")
        .env("HOME", home)
        .current_dir(home)
        .env_remove("MEMD_NO_AUTOSTART")
        .env_remove("MEMD_SEEN_GENERATION")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let transport = (child.stdout.take().unwrap(), child.stdin.take().unwrap());
    let s: Session = host.serve(transport).await.unwrap();
    (s, child)
}

/// A tool error's JSON.
async fn refused(s: &Session, name: &'static str, args: Value) -> Value {
    let r = call(s, name, args.clone()).await;
    assert_eq!(r.is_error, Some(true), "{name} {args}: {r:?}");
    r.structured_content.unwrap()
}

/// Calls a tool in the background, stops the daemon `pid` for the time the
/// request takes to reach it, then kills it: the connection breaks with the
/// request in flight.
async fn call_as_the_daemon_dies(
    s: &Session,
    pid: u32,
    kill: impl FnOnce(),
    name: &'static str,
    args: Value,
) -> CallToolResult {
    crate::common::signal(pid, "STOP");
    let peer = s.peer().clone();
    let params = CallToolRequestParams::new(name).with_arguments(args.as_object().unwrap().clone());
    let pending = tokio::spawn(async move { peer.call_tool(params).await.unwrap() });
    // The request reaches the stopped daemon's socket long before this.
    tokio::time::sleep(Duration::from_millis(1000)).await;
    kill();
    pending.await.unwrap()
}

/// A restart as `systemctl --user restart memd` or a crash and its
/// `Restart=on-failure` would do, with autostart off: `memd mcp` connects
/// again when the daemon is back, keeping the session's drift guard.
#[tokio::test(flavor = "multi_thread")]
async fn mcp_session_survives_a_daemon_restart() {
    if !tool("sqlite3", "the external writer") {
        return;
    }
    let mut d = Daemon::start();
    let host = Host::default();
    let (s, mut child) = start_mcp(
        d.dir.path(),
        &d.data_dir(),
        &["--no-autostart"],
        host.clone(),
    )
    .await;
    let a = ok(
        &s,
        "memory_store",
        json!({"content": "The build cache lives on the NAS"}),
    )
    .await;
    let id = a["id"].as_i64().unwrap();
    ok(&s, "memory_get", json!({"id": id})).await;

    d.terminate();
    // Down, autostart off: a clear error (nothing was sent), not a broken
    // pipe.
    let e = refused(
        &s,
        "memory_search",
        json!({"query": "cache", "mode": "lexical"}),
    )
    .await;
    assert_eq!(e["code"], "unreachable", "{e}");
    let e = refused(&s, "memory_store", json!({"content": "Stored while down"})).await;
    assert_eq!(e["code"], "unreachable", "{e}");
    // Changed outside memd while no daemon ran.
    sqlite3(
        &d.db(),
        &format!("UPDATE memories SET content = 'The build cache moved to S3' WHERE id = {id}"),
    );
    d.spawn();
    // The new connection carries the generation this session had seen: an
    // update on that stale view is refused, as it would have been without
    // the restart.
    let e = refused(
        &s,
        "memory_update",
        json!({"id": id, "content": "The build cache lives on the SAN"}),
    )
    .await;
    assert_eq!(e["code"], "drift", "{e}");
    let got = ok(&s, "memory_get", json!({"id": id})).await;
    assert_eq!(got["memory"]["content"], "The build cache moved to S3");
    ok(
        &s,
        "memory_update",
        json!({"id": id, "content": "The build cache lives on the SAN"}),
    )
    .await;
    let hits = ok(
        &s,
        "memory_search",
        json!({"query": "cache", "mode": "lexical"}),
    )
    .await;
    assert_eq!(hits["hits"][0]["id"], id, "{hits}");
    assert!(inject(&s).await.contains("lives on the SAN"));

    // Drift events flow again without a request: the event pump found the
    // daemon on its own.
    d.terminate();
    d.spawn();
    #[allow(deprecated)]
    s.peer()
        .subscribe(SubscribeRequestParams::new("memory://drift"))
        .await
        .unwrap();
    let mut notified = false;
    for i in 0..20 {
        sqlite3(
            &d.db(),
            &format!(
                "UPDATE memories SET content = 'The build cache lives on the SAN ({i})' WHERE id = {id}"
            ),
        );
        if tokio::time::timeout(Duration::from_millis(500), host.updated.notified())
            .await
            .is_ok()
        {
            notified = true;
            break;
        }
    }
    assert!(notified, "no drift notification after the restart");
    assert!(
        host.updates
            .lock()
            .unwrap()
            .contains(&"memory://drift".to_string())
    );

    // A write in flight when the daemon dies is not sent again: the error
    // says it may have been applied.
    let pid = d.child.as_ref().unwrap().id();
    let r = call_as_the_daemon_dies(
        &s,
        pid,
        || d.kill(),
        "memory_store",
        json!({"content": "In flight"}),
    )
    .await;
    assert_eq!(r.is_error, Some(true), "{r:?}");
    let e = r.structured_content.unwrap();
    assert_eq!(e["code"], "connection", "{e}");
    let msg = e["error"].as_str().unwrap();
    assert!(msg.contains("may or may not have been applied"), "{msg}");
    assert!(
        msg.contains("connecting to the daemon again failed"),
        "{msg}"
    );
    d.spawn();
    ok(
        &s,
        "memory_store",
        json!({"content": "Stored after the crash"}),
    )
    .await;

    s.cancel().await.unwrap();
    assert!(child.wait().await.unwrap().success());
}

/// With autostart on, `memd mcp` starts a daemon again after `memd stop`,
/// and repeats a read that was in flight when its daemon died.
#[tokio::test(flavor = "multi_thread")]
async fn mcp_starts_the_daemon_again_after_stop() {
    let d = Daemon::start();
    let (s, mut child) = start_mcp(d.dir.path(), &d.data_dir(), &[], Host::default()).await;
    let a = ok(
        &s,
        "memory_store",
        json!({"content": "Deploys go through ops/deploy.sh"}),
    )
    .await;
    let out = d.cli(&["stop"]);
    assert_eq!(out.code, 0, "{out:?}");

    let hits = ok(
        &s,
        "memory_search",
        json!({"query": "deploys", "mode": "lexical"}),
    )
    .await;
    assert_eq!(hits["hits"][0]["id"], a["id"], "{hits}");
    ok(
        &s,
        "memory_store",
        json!({"content": "Releases are cut on Thursdays"}),
    )
    .await;

    let pid = |d: &Daemon| d.status()["pid"].as_u64().unwrap() as u32;
    let first = pid(&d);
    let hits = call_as_the_daemon_dies(
        &s,
        first,
        || crate::common::signal(first, "KILL"),
        "memory_search",
        json!({"query": "releases", "mode": "lexical"}),
    )
    .await;
    assert_eq!(hits.is_error, Some(false), "{hits:?}");
    let v = hits.structured_content.unwrap();
    assert_eq!(v["count"], 1, "{v}");
    assert_ne!(pid(&d), first, "another daemon answered");

    s.cancel().await.unwrap();
    child.wait().await.unwrap();
    let out = d.cli(&["stop"]);
    assert_eq!(out.code, 0, "{out:?}");
}

/// A semantic near duplicate the daemon finds is announced on
/// memory://similar.
#[tokio::test(flavor = "multi_thread")]
async fn near_duplicates_reach_the_host_as_memory_similar() {
    let p = crate::common::provider::Provider::start();
    let d = Daemon::with_config(&format!(
        "[embed]\nprovider = \"ollama\"\nurl = \"{}\"\nmodel = \"bag-64\"\n",
        p.url
    ));
    let host = Host::default();
    let (s, mut child) = start_mcp(
        d.dir.path(),
        &d.data_dir(),
        &["--no-autostart"],
        host.clone(),
    )
    .await;
    #[allow(deprecated)]
    s.peer()
        .subscribe(SubscribeRequestParams::new("memory://similar"))
        .await
        .unwrap();
    let read = |s: &Session| {
        let peer = s.peer().clone();
        async move {
            let r = peer
                .read_resource(ReadResourceRequestParams::new("memory://similar"))
                .await
                .unwrap();
            match &r.contents[0] {
                rmcp::model::ResourceContents::TextResourceContents { text, .. } => {
                    serde_json::from_str::<Value>(text).unwrap()
                }
                other => panic!("{other:?}"),
            }
        }
    };
    assert_eq!(read(&s).await["notices"], 0);
    let old = ok(
        &s,
        "memory_store",
        json!({"content": "alpha bravo charlie delta"}),
    )
    .await;
    let new = ok(
        &s,
        "memory_store",
        json!({"content": "delta charlie bravo alpha"}),
    )
    .await;
    tokio::time::timeout(Duration::from_secs(30), host.updated.notified())
        .await
        .expect("a resources/updated notification");
    assert_eq!(*host.updates.lock().unwrap(), ["memory://similar"]);
    let v = read(&s).await;
    assert_eq!(v["notices"], 1, "{v}");
    assert_eq!(v["recent"][0]["id"], new["id"], "{v}");
    assert_eq!(v["recent"][0]["similar_to"], old["id"], "{v}");
    assert_eq!(v["recent"][0]["superseded"], false, "{v}");
    s.cancel().await.unwrap();
    child.wait().await.unwrap();
}

/// Two agents' MCP servers on one daemon: B updates a memory A read; A's
/// blind update is a tool error naming B and carrying B's text, refused
/// again on a blind retry, and passes once A read the memory again.
#[tokio::test(flavor = "multi_thread")]
async fn two_mcp_servers_never_overwrite_each_others_update() {
    let d = Daemon::start();
    let flags_b = ["--no-autostart", "--agent", "agent-b"];
    let (a, mut child_a) = start_mcp(
        d.dir.path(),
        &d.data_dir(),
        &["--no-autostart"],
        Host::default(),
    )
    .await;
    let (b, mut child_b) = start_mcp(d.dir.path(), &d.data_dir(), &flags_b, Host::default()).await;
    let stored = ok(
        &a,
        "memory_store",
        json!({"content": "Releases are tagged from the main branch"}),
    )
    .await;
    let id = stored["id"].as_i64().unwrap();
    assert_eq!(
        ok(&a, "memory_get", json!({"id": id})).await["memory"]["rev"],
        1
    );
    ok(&b, "memory_get", json!({"id": id})).await;
    let by_b = ok(
        &b,
        "memory_update",
        json!({"id": id, "content": "Releases are tagged from release branches"}),
    )
    .await;
    assert_eq!(by_b["memory"]["rev"], 2);
    let mine = json!({"id": id, "content": "Releases are tagged by CI"});
    for _ in 0..2 {
        let body = refused(&a, "memory_update", mine.clone()).await;
        assert_eq!(
            (body["code"].as_str(), body["rule"].as_str()),
            (Some("drift"), Some("row"))
        );
        assert_eq!(
            body["current"]["content"],
            "Releases are tagged from release branches"
        );
        assert_eq!(body["changed_by"]["agent"], "agent-b", "{body}");
        assert_eq!(
            (body["rev_seen"].as_i64(), body["rev_now"].as_i64()),
            (Some(1), Some(2))
        );
        assert!(
            body["remediation"].as_str().unwrap().contains("memory_get"),
            "{body}"
        );
    }
    let got = ok(&a, "memory_get", json!({"id": id})).await;
    assert_eq!(
        got["memory"]["content"],
        "Releases are tagged from release branches"
    );
    assert!(got["generation"].as_u64().is_some(), "{got}");
    let r = ok(&a, "memory_update", mine).await;
    assert_eq!(r["memory"]["rev"], 3);
    for (s, child) in [(a, &mut child_a), (b, &mut child_b)] {
        s.cancel().await.unwrap();
        assert!(child.wait().await.unwrap().success());
    }
}

/// Runs `memd hook claude-code` once with `event` on stdin, as Claude Code
/// runs a hook command: (stdout, stderr, exit code).
fn hook(d: &Daemon, event: &Value) -> (String, String, i32) {
    hook_of(d, "claude-code", event)
}

/// As [`hook`], for the hook of `host`.
fn hook_of(d: &Daemon, host: &str, event: &Value) -> (String, String, i32) {
    run_hook(
        d.dir.path(),
        &d.data_dir(),
        &[host],
        event.to_string().as_bytes(),
    )
}

/// `memd --data-dir DATA hook ARGS` with `input` on stdin: (stdout,
/// stderr, exit code).
fn run_hook(
    home: &std::path::Path,
    data: &std::path::Path,
    args: &[&str],
    input: &[u8],
) -> (String, String, i32) {
    use std::io::Write;
    let mut child = crate::common::memd_command(home)
        .arg("--data-dir")
        .arg(data)
        .arg("hook")
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(input).unwrap();
    let out = child.wait_with_output().unwrap();
    (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
        out.status.code().unwrap_or(-1),
    )
}

/// The block a SessionStart hook answered with.
fn context(stdout: &str) -> String {
    let v: Value =
        serde_json::from_str(stdout.trim()).unwrap_or_else(|e| panic!("{e}: {stdout:?}"));
    assert_eq!(v["hookSpecificOutput"]["hookEventName"], "SessionStart");
    v["hookSpecificOutput"]["additionalContext"]
        .as_str()
        .unwrap()
        .to_string()
}

/// A project (a git work tree) under the daemon's dir, its namespace, and
/// one convention stored in it.
fn project_with(d: &Daemon, name: &str, convention: &str) -> (std::path::PathBuf, String) {
    let project = d.dir.path().join(name);
    std::fs::create_dir_all(project.join(".git")).unwrap();
    let ns = memd::cli::hook::project_namespace(&project).unwrap();
    let (v, code) = d.json(&[
        "--namespace",
        &ns,
        "add",
        "--category",
        "convention",
        convention,
    ]);
    assert_eq!(code, 0, "{v}");
    (project, ns)
}

/// `base` with the keys of `extra` added.
fn with(mut base: Value, extra: Value) -> Value {
    for (k, v) in extra.as_object().unwrap() {
        base[k] = v.clone();
    }
    base
}

/// A Claude Code session replayed as its hooks see it, one process per
/// event with the documented payloads, while the agent writes through
/// `memd mcp` started as `setup` configures it and as Claude Code starts
/// it (`CLAUDE_CODE_SESSION_ID` in its environment): one session, the
/// server's writes leave the block as it is until the compaction.
#[tokio::test(flavor = "multi_thread")]
async fn a_claude_code_session_through_its_hooks_and_memd_mcp() {
    let d = Daemon::start();
    let (project, ns) = project_with(&d, "shop", "prices are in cents");
    let event = |name: &str, extra: Value| {
        let base = json!({
            "session_id": "4f1c2d3e",
            "transcript_path": project.join("4f1c2d3e.jsonl"),
            "cwd": project,
            "hook_event_name": name,
        });
        with(base, extra)
    };
    let start = |source: &str| {
        let (out, err, code) = hook(&d, &event("SessionStart", json!({"source": source})));
        assert_eq!(code, 0, "{err}");
        context(&out)
    };
    let first = start("startup");
    assert!(first.contains("prices are in cents"), "{first}");
    assert_eq!(start("resume"), first, "resume: the same bytes");

    // The agent adds a memory through its MCP server, in the project's
    // namespace (the server runs in the project's directory).
    let mut child = tokio::process::Command::new(BIN)
        .arg("--data-dir")
        .arg(d.data_dir())
        .args(["--no-autostart", "mcp", "--agent", "claude-code"])
        .env("HOME", d.dir.path())
        .env("CLAUDE_CODE_SESSION_ID", "4f1c2d3e")
        .current_dir(&project)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let transport = (child.stdout.take().unwrap(), child.stdin.take().unwrap());
    let s: Session = Host::default().serve(transport).await.unwrap();
    let added = ok(
        &s,
        "memory_store",
        json!({"content": "refunds go through the billing service", "category": "fact"}),
    )
    .await;
    assert_eq!(added["accepted"], true, "{added}");
    let mine = ok(
        &s,
        "memory_store",
        json!({"content": "this user reviews diffs before committing", "category": "preference",
               "scope": "agent"}),
    )
    .await;
    assert_eq!(mine["accepted"], true, "{mine}");
    let (found, _) = d.json(&["--namespace", &ns, "search", "refunds billing"]);
    assert_eq!(
        found["count"], 1,
        "the MCP server wrote in the project's namespace: {found}"
    );
    assert_eq!(
        found["hits"][0]["created_by"], "claude-code",
        "as the host's agent: {found}"
    );
    let (v, _) = d.json(&["--namespace", &ns, "session", "list"]);
    assert_eq!(
        v["sessions"].as_array().unwrap().len(),
        1,
        "the server joined the hooks' session: {v}"
    );
    assert_eq!(v["sessions"][0]["connections"], 1, "{v}");
    assert_eq!(
        start("resume"),
        first,
        "the session's own writes leave the block its host holds as it was"
    );

    // Compaction: the next start gets a new block with the new memory.
    let (out, err, code) = hook(
        &d,
        &event(
            "PreCompact",
            json!({"trigger": "auto", "custom_instructions": ""}),
        ),
    );
    assert_eq!((code, out.as_str()), (0, ""), "{err}");
    let after = start("compact");
    assert_ne!(after, first);
    assert!(
        after.contains("refunds go through the billing service")
            && after.contains("this user reviews diffs before committing"),
        "the agent-scope row is Claude Code's, in its block: {after}"
    );
    assert_eq!(start("resume"), after);

    // An exit that is not a clear keeps the session for a resume.
    let (_, err, code) = hook(
        &d,
        &event("SessionEnd", json!({"reason": "prompt_input_exit"})),
    );
    assert_eq!(code, 0, "{err}");
    let (v, _) = d.json(&["--namespace", &ns, "session", "list"]);
    assert_eq!(v["sessions"][0]["name"], "claude-code:4f1c2d3e", "{v}");
    // `/clear` ends it: the session and its block are gone.
    let (_, err, code) = hook(&d, &event("SessionEnd", json!({"reason": "clear"})));
    assert_eq!(code, 0, "{err}");
    let (v, _) = d.json(&["--namespace", &ns, "session", "list"]);
    assert_eq!(v["sessions"], json!([]), "{v}");
    drop(s);
}

/// A hook never breaks the agent: no daemon, bad input — nothing on stdout,
/// a reason on stderr, exit 0.
#[test]
fn a_hook_fails_quietly() {
    let d = Daemon::start();
    for input in [&b"not json"[..], br#"{"hook_event_name": "SessionStart"}"#] {
        let (out, err, code) = run_hook(d.dir.path(), &d.data_dir(), &["claude-code"], input);
        assert_eq!(code, 0);
        assert!(out.is_empty());
        assert!(!err.is_empty());
    }
    // No daemon answers and none may start.
    let (out, err, code) = run_hook(
        d.dir.path(),
        &d.dir.path().join("nowhere"),
        &["--no-autostart", "claude-code"],
        br#"{"session_id": "x", "cwd": "/", "hook_event_name": "SessionStart", "source": "startup"}"#,
    );
    assert_eq!(code, 0);
    assert!(out.is_empty());
    assert!(err.starts_with("memd hook: "), "{err}");
}

/// Codex CLI's hooks take Claude Code's shape: its session is `codex:<id>`.
#[test]
fn a_codex_session_through_its_hooks() {
    let d = Daemon::start();
    let (project, ns) = project_with(&d, "api", "handlers return typed errors");
    let event = |name: &str, extra: Value| {
        let base = json!({"session_id": "019a-77", "cwd": project, "hook_event_name": name,
                          "transcript_path": null, "model": "gpt-5-codex"});
        with(base, extra)
    };
    let start_raw = |source: &str| {
        let (out, err, code) = hook_of(
            &d,
            "codex",
            &event("SessionStart", json!({"source": source})),
        );
        assert_eq!(code, 0, "{err}");
        out
    };
    let start = |source: &str| context(&start_raw(source));
    let first = start("startup");
    assert!(first.contains("handlers return typed errors"), "{first}");
    let (v, code) = d.json(&[
        "--namespace",
        &ns,
        "add",
        "--category",
        "convention",
        "ids are ULIDs",
    ]);
    assert_eq!(code, 0, "{v}");
    // Codex keeps every context it is given, the same bytes too: a resume
    // whose conversation holds the block gets nothing more.
    assert_eq!(start_raw("resume"), "");
    let (_, err, code) = hook_of(
        &d,
        "codex",
        &event("PreCompact", json!({"trigger": "auto"})),
    );
    assert_eq!(code, 0, "{err}");
    assert!(
        start("resume").contains("ids are ULIDs"),
        "the block built after the compaction is given at the next resume"
    );
    let (v, _) = d.json(&["--namespace", &ns, "session", "list"]);
    assert_eq!(v["sessions"][0]["name"], "codex:019a-77", "{v}");
    assert_eq!(v["sessions"][0]["agent"], "codex", "{v}");
}

/// Gemini CLI's hooks take Claude Code's shape too: its session is
/// `gemini:<id>`, `PreCompress` is its compaction.
#[test]
fn a_gemini_session_through_its_hooks() {
    let d = Daemon::start();
    let (project, ns) = project_with(&d, "site", "pages are server-rendered");
    let event = |name: &str, extra: Value| {
        let base = json!({"session_id": "g-51", "cwd": project, "hook_event_name": name,
                          "transcript_path": "/tmp/t.json", "timestamp": "2026-11-25T10:00:00Z"});
        with(base, extra)
    };
    let start = |source: &str| {
        let (out, err, code) = hook_of(
            &d,
            "gemini",
            &event("SessionStart", json!({"source": source})),
        );
        assert_eq!(code, 0, "{err}");
        context(&out)
    };
    let first = start("startup");
    assert!(first.contains("pages are server-rendered"), "{first}");
    let (v, code) = d.json(&[
        "--namespace",
        &ns,
        "add",
        "--category",
        "convention",
        "no inline styles",
    ]);
    assert_eq!(code, 0, "{v}");
    assert_eq!(start("resume"), first);
    let (_, err, code) = hook_of(
        &d,
        "gemini",
        &event("PreCompress", json!({"trigger": "manual"})),
    );
    assert_eq!(code, 0, "{err}");
    assert!(start("resume").contains("no inline styles"));
    let (v, _) = d.json(&["--namespace", &ns, "session", "list"]);
    assert_eq!(v["sessions"][0]["name"], "gemini:g-51", "{v}");
    assert_eq!(v["sessions"][0]["agent"], "gemini", "{v}");
    let (_, err, code) = hook_of(
        &d,
        "gemini",
        &event("SessionEnd", json!({"reason": "clear"})),
    );
    assert_eq!(code, 0, "{err}");
    let (v, _) = d.json(&["--namespace", &ns, "session", "list"]);
    assert_eq!(v["sessions"], json!([]), "{v}");
}

#[tokio::test(flavor = "multi_thread")]
async fn an_agents_tools_stay_inside_their_namespace() {
    // A hostile repository must not read other projects by counting ids:
    // the MCP tools never look a memory up across namespaces.
    let d = Daemon::start();
    let (v, code) = d.json(&[
        "--namespace",
        "github.com/acme/secret",
        "add",
        "the vault pin is 4711",
    ]);
    assert_eq!(code, 0, "{v}");
    let id = v["id"].as_i64().unwrap();
    let mut child = tokio::process::Command::new(BIN)
        .arg("--data-dir")
        .arg(d.data_dir())
        .args([
            "--no-autostart",
            "--namespace",
            "github.com/evil/clone",
            "mcp",
        ])
        .env("HOME", d.dir.path())
        .current_dir(d.dir.path())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let transport = (child.stdout.take().unwrap(), child.stdin.take().unwrap());
    let s: Session = Host::default().serve(transport).await.unwrap();
    for (tool, args) in [
        ("memory_get", json!({"id": id})),
        ("memory_history", json!({"id": id})),
        ("memory_update", json!({"id": id, "content": "overwritten"})),
        ("memory_forget", json!({"id": id})),
    ] {
        let r = call(&s, tool, args).await;
        assert_eq!(r.is_error, Some(true), "{tool}: {r:?}");
        let text = r.content[0].as_text().unwrap().text.clone();
        assert!(
            text.contains("not_found") && !text.contains("4711"),
            "{tool}: {text}"
        );
    }
    let (v, _) = d.json(&[
        "--namespace",
        "github.com/acme/secret",
        "get",
        &id.to_string(),
    ]);
    assert_eq!(v["memory"]["content"], "the vault pin is 4711");
    s.cancel().await.unwrap();
}

#[tokio::test(flavor = "multi_thread")]
async fn memory_store_personal_goes_to_the_users_own_namespace() {
    let d = Daemon::start();
    let mut child = tokio::process::Command::new(BIN)
        .arg("--data-dir")
        .arg(d.data_dir())
        .args([
            "--no-autostart",
            "--namespace",
            "github.com/acme/api",
            "mcp",
        ])
        .env("HOME", d.dir.path())
        .current_dir(d.dir.path())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let transport = (child.stdout.take().unwrap(), child.stdin.take().unwrap());
    let s: Session = Host::default().serve(transport).await.unwrap();
    ok(&s, "memory_store", json!({"content": "the api uses axum"})).await;
    let before = inject(&s).await;
    let a = ok(
        &s,
        "memory_store",
        json!({"content": "the user prefers short answers", "category": "preference",
               "personal": true}),
    )
    .await;
    let id = a["id"].as_i64().unwrap();
    // This session's frozen block is unchanged; the memory is the user's.
    assert_eq!(inject(&s).await, before);
    let (v, _) = d.json(&["get", &id.to_string()]);
    assert_eq!(v["memory"]["namespace"], "@me", "{v}");
    let (v, _) = d.json(&["--namespace", "github.com/acme/other", "inject"]);
    assert!(
        v["block"]
            .as_str()
            .unwrap()
            .contains("the user prefers short answers"),
        "{v}"
    );
    s.cancel().await.unwrap();
}
