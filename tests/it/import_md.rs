//! `memd import-md` through the real binary: a realistic CLAUDE.md becomes
//! memories, once; the project's namespace is the one its hooks use.

use crate::common::{Daemon, ids, memd_command};
use serde_json::Value;

const CLAUDE_MD: &str = "# CLAUDE.md

This file guides Claude Code in this repository: the billing service.

## Build and test

- Run `make test` before every push; CI runs the same target.
- Integration tests need Postgres 16 on port 5433
  (start it with `make db`).

```sh
make test
```

## Code style

- Amounts are integers in cents, never floats.
- Errors are wrapped with context at every module boundary.

## Gotchas

- The Stripe sandbox rejects amounts under 50 cents.
- API key for staging: sk_live_4eC39HqLyjWDarjtT1zdp7dc

| env | url |
|---|---|
| staging | https://staging.example.com |
";

fn import(d: &Daemon, dir: &std::path::Path, file: &str) -> Value {
    let out = memd_command(d.dir.path())
        .current_dir(dir)
        .arg("--data-dir")
        .arg(d.data_dir())
        .args(["--no-autostart", "--json", "import-md", file])
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

#[test]
fn a_claude_md_imports_once_into_the_projects_namespace() {
    let d = Daemon::start();
    let project = d.dir.path().join("billing");
    std::fs::create_dir_all(project.join(".git")).unwrap();
    let file = project.join("CLAUDE.md");
    std::fs::write(&file, CLAUDE_MD).unwrap();
    let v = import(&d, &project, "CLAUDE.md");
    assert_eq!(
        (v["items"].as_u64(), v["added"].as_u64()),
        (Some(7), Some(6)),
        "{v}"
    );
    assert_eq!(v["rejected"], 1, "the secret: {v}");
    // Again: nothing new.
    let v = import(&d, &project, "CLAUDE.md");
    assert_eq!(
        (v["added"].as_u64(), v["existing"].as_u64()),
        (Some(0), Some(6)),
        "{v}"
    );
    // A bullet added to the file: only it is new.
    std::fs::write(
        &file,
        CLAUDE_MD.replace(
            "## Gotchas\n",
            "## Gotchas\n\n- Refunds over 1000 EUR need a second approval.\n",
        ),
    )
    .unwrap();
    let v = import(&d, &project, "CLAUDE.md");
    assert_eq!(
        (v["added"].as_u64(), v["existing"].as_u64()),
        (Some(1), Some(6)),
        "{v}"
    );

    let ns = memd::cli::hook::project_namespace(&project).unwrap();
    let (list, code) = d.json(&["--namespace", &ns, "list"]);
    assert_eq!(code, 0, "{list}");
    assert_eq!(ids(&list, "memories").len(), 7);
    let (found, _) = d.json(&["--namespace", &ns, "search", "amounts in cents"]);
    let hit = &found["hits"][0];
    assert_eq!(
        hit["content"],
        "Amounts are integers in cents, never floats."
    );
    assert_eq!(hit["category"], "convention");
    assert_eq!(
        hit["metadata"]["source"],
        std::fs::canonicalize(&file).unwrap().to_str().unwrap()
    );
    assert_eq!(hit["metadata"]["line"], 17);
    assert_eq!(hit["metadata"]["heading"], "Code style");
    let (found, _) = d.json(&["--namespace", &ns, "search", "postgres port"]);
    assert_eq!(
        found["hits"][0]["content"],
        "Integration tests need Postgres 16 on port 5433 (start it with `make db`)."
    );
    assert_eq!(found["hits"][0]["category"], "procedure");
    // Nothing in the default namespace.
    let (list, _) = d.json(&["list"]);
    assert!(ids(&list, "memories").is_empty());
}
