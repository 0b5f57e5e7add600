//! A person's own memory (`@me`): in the block of every session of every
//! namespace under its own heading, within its share of the budget, under
//! the freeze rules (adding one changes no frozen block); never shared by
//! a team glob but `@me` itself.

use serde_json::Value;

use crate::common::pg::Pg;
use crate::common::{Daemon, wait_contents};

/// `memd --json [--namespace NS] ARGS`: its JSON, checked to succeed.
fn ok(d: &Daemon, ns: &str, args: &[&str]) -> Value {
    let mut all = vec!["--namespace", ns];
    all.extend_from_slice(args);
    let (v, code) = d.json(&all);
    assert_eq!(code, 0, "{args:?}: {v}");
    v
}

fn block(d: &Daemon, ns: &str, session: &str) -> String {
    ok(d, ns, &["--session", session, "inject"])["block"]
        .as_str()
        .unwrap()
        .to_string()
}

#[test]
fn a_personal_memory_reaches_every_namespace_from_the_next_session() {
    let d = Daemon::start();
    ok(
        &d,
        "github.com/acme/api",
        &["add", "the api deploys with make ship"],
    );
    ok(&d, "github.com/acme/web", &["add", "the web app is static"]);
    let frozen = block(&d, "github.com/acme/api", "held");
    assert!(!frozen.contains("## Personal"), "{frozen}");

    let (v, code) = d.json(&[
        "add",
        "--personal",
        "Prefer tabs over spaces",
        "--category",
        "preference",
    ]);
    assert_eq!(code, 0, "{v}");
    let id = v["id"].as_i64().unwrap();
    let (v, _) = d.json(&["get", &id.to_string()]);
    assert_eq!(v["memory"]["namespace"], "@me");

    // The frozen block did not change.
    assert_eq!(block(&d, "github.com/acme/api", "held"), frozen);
    // New sessions of both namespaces show it, after their own, under its
    // heading.
    for (ns, own) in [
        ("github.com/acme/api", "make ship"),
        ("github.com/acme/web", "is static"),
    ] {
        let b = block(&d, ns, "fresh");
        let personal = b.find("\n## Personal\n").unwrap_or_else(|| panic!("{b}"));
        assert!(b[..personal].contains(own), "{b}");
        assert!(
            b[personal..].contains(&format!("- #{id} Prefer tabs over spaces")),
            "{b}"
        );
    }
    // Compaction gives the frozen session a new block, which shows it.
    ok(
        &d,
        "github.com/acme/api",
        &["--session", "held", "compacted"],
    );
    assert!(block(&d, "github.com/acme/api", "held").contains("Prefer tabs"));
    // In @me itself it is not shown twice.
    let own = block(&d, "@me", "mine");
    assert_eq!(own.matches("Prefer tabs").count(), 1, "{own}");
    assert!(!own.contains("## Personal"), "{own}");
}

#[test]
fn personal_memories_take_at_most_their_share_of_the_block() {
    let d = Daemon::with_config("[inject]\nbudget_chars = 1000\npersonal_share = 20\n");
    for i in 0..20 {
        ok(
            &d,
            "proj",
            &["add", &format!("project fact number {i} about the build")],
        );
        let (v, code) = d.json(&[
            "add",
            "--personal",
            &format!("personal habit number {i} of mine"),
        ]);
        assert_eq!(code, 0, "{v}");
    }
    let b = block(&d, "proj", "s");
    assert!(b.chars().count() <= 1000, "{b}");
    let personal = b.find("\n## Personal\n").unwrap();
    assert!(b[personal..].chars().count() <= 200, "{b}");
    assert!(b[..personal].matches("project fact").count() >= 10, "{b}");
    // Without personal rows the block is the project's alone.
    let d2 = Daemon::start();
    ok(&d2, "proj", &["add", "only the project"]);
    assert_eq!(
        block(&d2, "proj", "s"),
        "## Memory\n\n### Notes\n- #1 only the project\n"
    );
}

#[test]
fn a_team_glob_never_shares_the_personal_namespace() {
    let Some(pg) = Pg::start() else { return };
    let (code, v) = crate::common::team_json(&pg.url(), &["init"]);
    assert_eq!(code, 0, "{v}");
    let config = |globs: &str| {
        format!(
            "[team]\nurl = \"{}\"\nnamespaces = {globs}\nmachine = \"m\"\ntimeout_ms = 3000\n",
            pg.url()
        )
    };
    let wide = Daemon::with_config(&config("[\"*\"]"));
    ok(&wide, "proj", &["add", "a shared project fact"]);
    let (v, code) = wide.json(&["add", "--personal", "my private habit"]);
    assert_eq!(code, 0, "{v}");
    let shared = || {
        pg.psql("SELECT string_agg(namespace || ':' || content, ',' ORDER BY content) FROM memd.memories")
    };
    Pg::wait_for(
        std::time::Duration::from_secs(10),
        "the project row",
        || shared().contains("proj:a shared project fact"),
    );
    assert!(!shared().contains("habit"), "{}", shared());
    // Named as is, it is shared (one person's machines); a machine that
    // shares `*` does not pull it.
    let mine = Daemon::with_config(&config("[\"@me\"]"));
    let (v, code) = mine.json(&["add", "--personal", "my synced habit"]);
    assert_eq!(code, 0, "{v}");
    assert!(shared().contains("@me:my synced habit"), "{}", shared());
    let other = Daemon::with_config(&config("[\"*\"]"));
    wait_contents(&other, "proj", &["a shared project fact"]);
    let (v, _) = other.json(&["--namespace", "@me", "list"]);
    assert_eq!(v["count"], 0, "{v}");
}
