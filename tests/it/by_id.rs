//! A person's by-id commands (`get`, `update`, `forget`, `history`) act on a
//! memory wherever it lives, with the drift guard unchanged; `not found`
//! only when no namespace holds the id; a listing across namespaces names
//! each memory's namespace. An agent's MCP tools stay inside their
//! namespace (tests/it/mcp.rs).

use std::path::Path;

use crate::common::{Daemon, git, memd_command, memd_in};

/// A git repository (no origin) at `dir`.
fn repository(dir: &Path) {
    std::fs::create_dir_all(dir).unwrap();
    git(dir, &["init", "-q"]);
}

#[test]
fn ids_work_from_any_directory_for_a_person() {
    let d = Daemon::start();
    let (a, b) = (d.dir.path().join("shop"), d.dir.path().join("blog"));
    repository(&a);
    repository(&b);
    let (v, code) = memd_in(&d, &a, &["add", "the shop deploys with make ship"]);
    assert_eq!(code, 0, "{v}");
    let id = v["id"].as_i64().unwrap();
    let (v, _) = memd_in(&d, &a, &["get", &id.to_string()]);
    let home = v["memory"]["namespace"].as_str().unwrap().to_string();

    // From the other project: get, history, update, forget reach it.
    let (v, code) = memd_in(&d, &b, &["get", &id.to_string()]);
    assert_eq!(code, 0, "{v}");
    assert_eq!(v["memory"]["namespace"], home.as_str());
    let (v, code) = memd_in(&d, &b, &["history", &id.to_string()]);
    assert_eq!(code, 0, "{v}");
    let (v, code) = memd_in(
        &d,
        &b,
        &[
            "update",
            &id.to_string(),
            "--content",
            "the shop deploys with make release",
        ],
    );
    assert_eq!(code, 0, "{v}");
    let (v, _) = memd_in(&d, &a, &["get", &id.to_string()]);
    assert_eq!(v["memory"]["content"], "the shop deploys with make release");
    assert_eq!(v["memory"]["namespace"], home.as_str());

    // The drift guard is unchanged: a named session's stale read is refused
    // there as it would be from the memory's own project.
    let (_, code) = memd_in(&d, &b, &["--session", "me", "get", &id.to_string()]);
    assert_eq!(code, 0);
    let (_, code) = memd_in(
        &d,
        &a,
        &["update", &id.to_string(), "--content", "moved to ops/ship"],
    );
    assert_eq!(code, 0);
    let (v, code) = memd_in(
        &d,
        &b,
        &[
            "--session",
            "me",
            "update",
            &id.to_string(),
            "--content",
            "a blind change",
        ],
    );
    assert_eq!(code, 3, "{v}");
    let (v, _) = memd_in(&d, &a, &["get", &id.to_string()]);
    assert_eq!(v["memory"]["content"], "moved to ops/ship");

    // A listing across namespaces names each memory's namespace.
    memd_in(&d, &b, &["add", "the blog is static"]);
    let out = memd_command(d.dir.path())
        .current_dir(&b)
        .arg("--data-dir")
        .arg(d.data_dir())
        .args(["--no-autostart", "list", "--all-namespaces"])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.lines()
            .any(|l| l.starts_with(&format!("#{id} {home} ["))),
        "{text}"
    );

    // A namespace named explicitly is kept, and the answer says where the
    // memory is; an id no namespace holds is plainly not found.
    let (v, code) = memd_in(
        &d,
        &b,
        &["--namespace", "elsewhere", "get", &id.to_string()],
    );
    assert_eq!(code, 1, "{v}");
    assert!(v["error"].as_str().unwrap().contains(&home), "{v}");
    let (v, code) = memd_in(&d, &b, &["get", "9999"]);
    assert_eq!(code, 1, "{v}");
    assert_eq!(v["error"], "memory 9999 not found");

    // Forget from the other project.
    let (v, code) = memd_in(&d, &b, &["forget", &id.to_string()]);
    assert_eq!(code, 0, "{v}");
    let (v, code) = memd_in(&d, &a, &["get", &id.to_string()]);
    assert_eq!(code, 1, "{v}");
}
