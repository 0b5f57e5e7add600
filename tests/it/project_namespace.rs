//! A project's namespace through the real binary and real git: the same
//! for every worktree and every clone of one repository, named by a
//! committed `.memd.toml` when there is one and the person trusts it (a
//! cloned repository's file reaches no other namespace before), and a
//! checkout that stored memories under the namespace memd once derived from
//! its path keeps them.

use std::path::Path;
use std::process::Command;

use crate::common::{Daemon, git, memd_command, memd_json, session_start, tool};
use serde_json::Value;

/// The contents of the memories a command in `dir` lists.
fn listed(d: &Daemon, dir: &Path) -> Vec<String> {
    crate::common::listed_contents(&memd_json(d, dir, &["list"]))
}

/// The namespace `setup --project --dry-run` reports for `dir`.
fn namespace_of(d: &Daemon, dir: &Path) -> String {
    let v = memd_json(d, dir, &["setup", "claude-code", "--project", "--dry-run"]);
    v["namespace"].as_str().unwrap().to_string()
}

/// A repository with one commit.
fn repository(dir: &Path) {
    std::fs::create_dir_all(dir).unwrap();
    git(dir, &["init", "-q"]);
    std::fs::write(dir.join("README"), "shop\n").unwrap();
    git(dir, &["add", "README"]);
    git(dir, &["commit", "-q", "-m", "first"]);
}

#[test]
fn worktrees_and_clones_of_one_repository_share_one_namespace() {
    if !tool("git", "real repositories, worktrees and clones") {
        return;
    }
    let d = Daemon::start();
    let base = d.dir.path().join("src");
    let upstream = base.join("upstream/shop");
    repository(&upstream);
    let a = base.join("work/a/shop");
    let b = base.join("elsewhere/b-copy");
    std::fs::create_dir_all(a.parent().unwrap()).unwrap();
    std::fs::create_dir_all(b.parent().unwrap()).unwrap();
    git(
        &base,
        &[
            "clone",
            "-q",
            upstream.to_str().unwrap(),
            a.to_str().unwrap(),
        ],
    );
    git(
        &base,
        &[
            "clone",
            "-q",
            upstream.to_str().unwrap(),
            b.to_str().unwrap(),
        ],
    );
    let feature = base.join("trees/feature-x");
    git(&a, &["worktree", "add", "-q", feature.to_str().unwrap()]);

    let ns = namespace_of(&d, &a);
    assert!(ns.starts_with("shop-"), "{ns}");
    for dir in [&b, &feature, &a.join("sub/dir")] {
        std::fs::create_dir_all(dir).unwrap();
        assert_eq!(namespace_of(&d, dir), ns, "{}", dir.display());
    }
    memd_json(
        &d,
        &a,
        &["add", "--category", "fact", "prices are in cents"],
    );
    memd_json(
        &d,
        &feature,
        &["add", "--category", "fact", "refunds go through billing"],
    );
    let both = ["prices are in cents", "refunds go through billing"];
    assert_eq!(listed(&d, &b), both, "a second clone at another path");
    assert_eq!(listed(&d, &a), both);

    // A repository without an origin: its worktrees share its git
    // directory.
    let solo = base.join("solo");
    repository(&solo);
    let solo_tree = base.join("solo-tree");
    git(
        &solo,
        &["worktree", "add", "-q", solo_tree.to_str().unwrap()],
    );
    let solo_ns = namespace_of(&d, &solo);
    assert_ne!(solo_ns, ns);
    assert_eq!(namespace_of(&d, &solo_tree), solo_ns);

    // A committed `.memd.toml` names it (for every worktree and clone that
    // has the file), once the person trusts the file.
    std::fs::write(b.join(".memd.toml"), "namespace = \"team-shop\"\n").unwrap();
    assert_eq!(namespace_of(&d, &b), ns);
    memd_json(&d, &b, &["trust"]);
    assert_eq!(namespace_of(&d, &b), "team-shop");
    memd_json(
        &d,
        &b,
        &["add", "--category", "fact", "the team shares this"],
    );
    let v = memd_json(&d, &a, &["--namespace", "team-shop", "list"]);
    assert_eq!(v["count"], 1, "{v}");
    // Flag and environment still win over the file.
    let v = memd_json(&d, &b, &["--namespace", "mine", "list"]);
    assert_eq!(v["count"], 0, "{v}");
}

/// FNV-1a 64 as 16 hex digits.
fn fnv(text: &str) -> String {
    let h = text.bytes().fold(0xcbf2_9ce4_8422_2325_u64, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3)
    });
    format!("{h:016x}")
}

#[test]
fn a_checkout_keeps_the_memories_of_its_earlier_derived_namespace() {
    if !tool("git", "a real repository") {
        return;
    }
    let d = Daemon::start();
    let checkout = d.dir.path().join("My Shop");
    repository(&checkout);
    // The name memd derived before: the work tree's directory name and a
    // hash of its path.
    let root = std::fs::canonicalize(&checkout).unwrap();
    let old = format!("my-shop-{}", &fnv(root.to_str().unwrap())[..8]);
    for text in ["tabs in Makefiles", "deploys on fridays"] {
        let (v, code) = d.json(&["--namespace", &old, "add", "--category", "fact", text]);
        assert_eq!(code, 0, "{v}");
    }
    let (v, code) = d.json(&["--namespace", "default", "add", "elsewhere"]);
    assert_eq!(code, 0, "{v}");
    // The first command in the checkout finds them in the new namespace.
    assert_eq!(
        listed(&d, &checkout),
        ["deploys on fridays", "tabs in Makefiles"]
    );
    let (v, _) = d.json(&["--namespace", &old, "list"]);
    assert_eq!(v["count"], 0, "moved, not copied: {v}");
    let (v, _) = d.json(&["--namespace", "default", "list"]);
    assert_eq!(v["count"], 1, "other namespaces stay: {v}");
    // A hook in the checkout sees them too (its block).
    let ns = namespace_of(&d, &checkout);
    let (v, _) = d.json(&["--namespace", &ns, "inject"]);
    assert!(
        v["block"].as_str().unwrap().contains("tabs in Makefiles"),
        "{v}"
    );
}

/// `memd --json ARGS` run in `dir`: the value, stderr and the exit code.
fn memd_out(d: &Daemon, dir: &Path, args: &[&str]) -> (Value, String, i32) {
    let out = memd_command(d.dir.path())
        .current_dir(dir)
        .arg("--data-dir")
        .arg(d.data_dir())
        .args(["--no-autostart", "--json"])
        .args(args)
        .output()
        .unwrap();
    let v: Value = serde_json::from_slice(&out.stdout).unwrap_or(Value::Null);
    (
        v,
        String::from_utf8_lossy(&out.stderr).into_owned(),
        out.status.code().unwrap_or(-1),
    )
}

/// Stores `text` through `memd mcp` run in `dir` (as a host starts it);
/// the server's stderr.
async fn store_through_mcp(d: &Daemon, dir: &Path, text: &str) -> String {
    use rmcp::ServiceExt;
    use rmcp::model::CallToolRequestParams;
    let stderr = d.dir.path().join("mcp.stderr");
    let mut cmd = memd_command(d.dir.path());
    cmd.current_dir(dir)
        .arg("--data-dir")
        .arg(d.data_dir())
        .args(["--no-autostart", "mcp"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::fs::File::create(&stderr).unwrap());
    let mut child = tokio::process::Command::from(cmd)
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let transport = (child.stdout.take().unwrap(), child.stdin.take().unwrap());
    let s = ().serve(transport).await.unwrap();
    let args = serde_json::json!({"content": text, "category": "fact"});
    let r = s
        .peer()
        .call_tool(
            CallToolRequestParams::new("memory_store")
                .with_arguments(args.as_object().unwrap().clone()),
        )
        .await
        .unwrap();
    assert_eq!(r.is_error, Some(false), "{r:?}");
    drop(s);
    let _ = child.kill().await;
    std::fs::read_to_string(stderr).unwrap()
}

/// A cloned repository's committed `.memd.toml` names another project's
/// namespace (anyone can compute one from a public origin). Until the
/// person trusts that file, nothing reaches that namespace — the CLI's
/// add, search and inject, a hook's block, an MCP server's store all stay
/// in the clone's derived namespace, and each says why on stderr; once
/// trusted, the file's namespace is used; edited, it is untrusted again.
#[tokio::test(flavor = "multi_thread")]
async fn a_cloned_repositorys_memd_toml_reaches_its_namespace_only_once_trusted() {
    if !tool("git", "a real repository and its clone") {
        return;
    }
    let d = Daemon::start();
    let victim = "acme-api";
    let (v, code) = d.json(&[
        "--namespace",
        victim,
        "add",
        "--category",
        "fact",
        "the payments key rotates on mondays",
    ]);
    assert_eq!(code, 0, "{v}");
    let upstream = d.dir.path().join("upstream/tool");
    repository(&upstream);
    std::fs::write(
        upstream.join(".memd.toml"),
        format!("namespace = \"{victim}\"\n"),
    )
    .unwrap();
    git(&upstream, &["add", ".memd.toml"]);
    git(&upstream, &["commit", "-q", "-m", "memd"]);
    let clone = d.dir.path().join("work/tool");
    std::fs::create_dir_all(clone.parent().unwrap()).unwrap();
    git(
        d.dir.path(),
        &[
            "clone",
            "-q",
            upstream.to_str().unwrap(),
            clone.to_str().unwrap(),
        ],
    );
    let derived = namespace_of(&d, &clone);
    assert!(derived.starts_with("tool-"), "{derived}");
    let contents = |d: &Daemon, ns: &str| {
        let (v, _) = d.json(&["--namespace", ns, "list"]);
        let mut all = crate::common::listed_contents(&v);
        all.sort();
        all
    };
    let in_victim = |d: &Daemon| contents(d, victim);
    let says_why = |stderr: &str| {
        let lines: Vec<&str> = stderr
            .lines()
            .filter(|l| l.contains("memd trust"))
            .collect();
        assert_eq!(lines.len(), 1, "{stderr}");
        assert!(
            lines[0].contains(victim) && lines[0].contains(&derived),
            "{stderr}"
        );
    };

    // Untrusted: the CLI.
    let (v, err, code) = memd_out(
        &d,
        &clone,
        &["add", "--category", "fact", "written in the clone"],
    );
    assert_eq!(code, 0, "{v} {err}");
    says_why(&err);
    let id = v["id"].as_i64().unwrap().to_string();
    let (v, _, _) = memd_out(&d, &clone, &["get", &id]);
    assert_eq!(v["memory"]["namespace"], derived.as_str(), "{v}");
    let (v, err, _) = memd_out(&d, &clone, &["search", "payments key"]);
    assert_eq!(v["count"], 0, "{v}");
    says_why(&err);
    let (v, _, _) = memd_out(&d, &clone, &["inject"]);
    let block = v["block"].as_str().unwrap();
    assert!(
        block.contains("written in the clone") && !block.contains("payments"),
        "{block}"
    );
    // A hook's block.
    let (block, err) = session_start(&d, &clone, "s1");
    assert!(!block.contains("payments"), "{block}");
    says_why(&err);
    // An MCP server's store.
    let err = store_through_mcp(&d, &clone, "stored through mcp in the clone").await;
    says_why(&err);
    assert_eq!(in_victim(&d), ["the payments key rotates on mondays"]);
    assert_eq!(
        contents(&d, &derived),
        ["stored through mcp in the clone", "written in the clone"]
    );

    // Trusted: the file's namespace, and no note.
    let (v, err, code) = memd_out(&d, &clone, &["trust"]);
    assert_eq!(code, 0, "{v} {err}");
    assert_eq!(v["namespace"], victim, "{v}");
    assert_eq!(namespace_of(&d, &clone), victim);
    let (v, err, code) = memd_out(
        &d,
        &clone,
        &["add", "--category", "fact", "added once trusted"],
    );
    assert_eq!(code, 0, "{v}");
    assert!(!err.contains("memd trust"), "{err}");
    let (block, err) = session_start(&d, &clone, "s2");
    assert!(block.contains("payments key"), "{block}");
    assert!(!err.contains("memd trust"), "{err}");
    store_through_mcp(&d, &clone, "stored through mcp once trusted").await;
    assert_eq!(
        in_victim(&d),
        [
            "added once trusted",
            "stored through mcp once trusted",
            "the payments key rotates on mondays"
        ]
    );

    // Edited after the trust: untrusted again, until trusted again.
    let file = clone.join(".memd.toml");
    let mut text = std::fs::read_to_string(&file).unwrap();
    text.push_str("# edited\n");
    std::fs::write(&file, text).unwrap();
    let (v, err, _) = memd_out(
        &d,
        &clone,
        &["add", "--category", "fact", "added after the edit"],
    );
    says_why(&err);
    assert!(err.contains("changed since you trusted it"), "{err}");
    let id = v["id"].as_i64().unwrap().to_string();
    let (v, _, _) = memd_out(&d, &clone, &["get", &id]);
    assert_eq!(v["memory"]["namespace"], derived.as_str(), "{v}");
    let (v, _, _) = memd_out(&d, &clone, &["trust", "--list"]);
    assert_eq!(v["trusted"][0]["state"], "changed", "{v}");
    memd_json(&d, &clone, &["trust", ".memd.toml"]);
    assert_eq!(namespace_of(&d, &clone), victim);
    let (v, _, _) = memd_out(&d, &clone, &["untrust"]);
    assert_eq!(v["untrusted"], true, "{v}");
    assert_eq!(namespace_of(&d, &clone), derived);
    assert_eq!(in_victim(&d).len(), 3);

    // The trust lives in the user's data home, never in the repository.
    let (v, _, _) = memd_out(&d, &clone, &["trust"]);
    let sha = v["sha256"].as_str().unwrap().to_string();
    let out = Command::new("grep")
        .args(["-rl", &sha])
        .arg(&clone)
        .output()
        .unwrap();
    assert!(
        out.stdout.is_empty(),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    let store = d.dir.path().join("xdg-data/memd/trusted");
    let out = Command::new("grep")
        .args(["-rl", &sha])
        .arg(&store)
        .output()
        .unwrap();
    assert!(!out.stdout.is_empty());
}
