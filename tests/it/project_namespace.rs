//! A project's namespace through the real binary and real git: the same
//! for every worktree and every clone of one repository, named by a
//! committed `.memd.toml` when there is one, and a checkout that stored
//! memories under the namespace memd once derived from its path keeps
//! them.

use std::path::Path;
use std::process::Command;

use crate::common::{Daemon, memd_command, tool};
use serde_json::Value;

/// Runs git in `dir` (no user or system config).
fn git(dir: &Path, args: &[&str]) {
    let out = Command::new("git")
        .current_dir(dir)
        .env("HOME", dir)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .args(["-c", "user.name=t", "-c", "user.email=t@example.invalid"])
        .args([
            "-c",
            "init.defaultBranch=main",
            "-c",
            "protocol.file.allow=always",
        ])
        .args(args)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// `memd --json ARGS` run in `dir` against the daemon.
fn memd_in(d: &Daemon, dir: &Path, args: &[&str]) -> Value {
    let out = memd_command(d.dir.path())
        .current_dir(dir)
        .arg("--data-dir")
        .arg(d.data_dir())
        .args(["--no-autostart", "--json"])
        .args(args)
        .output()
        .unwrap();
    let v: Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stderr)));
    assert_eq!(out.status.code(), Some(0), "memd {args:?}: {v}");
    v
}

/// The contents of the memories a command in `dir` lists.
fn listed(d: &Daemon, dir: &Path) -> Vec<String> {
    crate::common::listed_contents(&memd_in(d, dir, &["list"]))
}

/// The namespace `setup --project --dry-run` reports for `dir`.
fn namespace_of(d: &Daemon, dir: &Path) -> String {
    let v = memd_in(d, dir, &["setup", "claude-code", "--project", "--dry-run"]);
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
    memd_in(
        &d,
        &a,
        &["add", "--category", "fact", "prices are in cents"],
    );
    memd_in(
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
    // has the file).
    std::fs::write(b.join(".memd.toml"), "namespace = \"team-shop\"\n").unwrap();
    assert_eq!(namespace_of(&d, &b), "team-shop");
    memd_in(
        &d,
        &b,
        &["add", "--category", "fact", "the team shares this"],
    );
    let v = memd_in(&d, &a, &["--namespace", "team-shop", "list"]);
    assert_eq!(v["count"], 1, "{v}");
    // Flag and environment still win over the file.
    let v = memd_in(&d, &b, &["--namespace", "mine", "list"]);
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
