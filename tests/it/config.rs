//! The config file: an invalid one stops the daemon with its line and
//! column; `config show` reports every setting and where it came from, and
//! every setting is documented, with its default, in
//! docs/configuration.md; SIGHUP applies live settings,
//! logs what needs a restart, and keeps the running settings when the new
//! file is invalid.

use std::collections::BTreeMap;
use std::process::Stdio;

use crate::common::{Daemon, memd_command};

#[test]
fn an_invalid_config_stops_the_daemon_with_line_and_column() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = dir.path().join("config.toml");
    let cases = [
        (
            "[storage]\nreaders = 2\n[drift]\npolicy = \"sometimes\"\n",
            "line 4, column 10",
        ),
        ("[storage]\nredaers = 2\n", "line 2, column 1"),
        (
            "[memory]\ndefault_category = \"nope\"\n",
            "line 2, column 1",
        ),
        ("[socket]\nallow_uids = [\"me\"]\n", "line 2"),
    ];
    for (text, position) in cases {
        std::fs::write(&cfg, text).unwrap();
        let out = memd_command(dir.path())
            .arg("daemon")
            .arg("--data-dir")
            .arg(dir.path().join("data"))
            .arg("--config")
            .arg(&cfg)
            .stdin(Stdio::null())
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{text}: {stderr}");
        assert!(stderr.contains(position), "{text}: {stderr}");
        assert!(!dir.path().join("data/memd.sock").exists());

        let show = memd_command(dir.path())
            .args(["--json", "config", "show", "--config"])
            .arg(&cfg)
            .output()
            .unwrap();
        assert_eq!(show.status.code(), Some(2), "{text}");
        let v: serde_json::Value = serde_json::from_slice(&show.stdout).unwrap();
        assert!(v["error"].as_str().unwrap().contains(position), "{v}");
    }
}

#[test]
fn a_bad_team_url_is_reported_as_one_by_the_command_that_would_start_the_daemon() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = dir.path().join("config.toml");
    for (url, says) in [
        (
            "postgresql://me@db:notaport/team",
            "not a PostgreSQL connection string",
        ),
        (
            "postgresql://me@/team?host=relative/dir",
            "neither a host name nor a socket directory",
        ),
    ] {
        std::fs::write(
            &cfg,
            format!("[team]\nnamespaces = [\"t\"]\nurl = \"{url}\"\n"),
        )
        .unwrap();
        let started = std::time::Instant::now();
        let out = memd_command(dir.path())
            .arg("--data-dir")
            .arg(dir.path().join("data"))
            .arg("--config")
            .arg(&cfg)
            .args(["add", "the staging port is 5432"])
            .stdin(Stdio::null())
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        // A usage error naming the setting and its line, not a socket
        // that never answered (the autostart's 10 s wait).
        assert_eq!(out.status.code(), Some(2), "{url}: {stderr}");
        assert!(
            stderr.contains("line 3, column 1: team.url"),
            "{url}: {stderr}"
        );
        assert!(stderr.contains(says), "{url}: {stderr}");
        assert!(!stderr.contains("memd.sock"), "{url}: {stderr}");
        assert!(
            started.elapsed() < std::time::Duration::from_secs(5),
            "{url}"
        );
        assert!(!dir.path().join("data/memd.log").exists());
    }
}

#[test]
fn config_show_reports_values_and_sources() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = dir.path().join("config.toml");
    std::fs::write(
        &cfg,
        "# mine\n[storage]\nreaders = 2\n\n[socket]\nallow_uids = [1001]\n\n\
         [embed]\nsimilar_threshold = 0.92\nmodel_dir = \"/from/the/file\"\n",
    )
    .unwrap();
    let out = memd_command(dir.path())
        .args(["--json", "config", "show"])
        .env("MEMD_CONFIG", &cfg)
        .env("MEMD_MODEL_DIR", "/from/the/environment")
        .output()
        .unwrap();
    assert!(out.status.success());
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let s = &v["settings"];
    assert_eq!(
        s["storage.readers"],
        serde_json::json!({"value": 2, "source": "file", "line": 3})
    );
    assert_eq!(s["socket.allow_uids"]["value"], serde_json::json!([1001]));
    assert_eq!(
        s["storage.synchronous"],
        serde_json::json!({"value": "full", "source": "default"})
    );
    assert_eq!(s["socket.mode"]["value"], "0600");
    // Values as the daemon uses them: a float as written, the sidecar's
    // debounce it applies, the environment's model dir over the file's.
    assert_eq!(s["embed.similar_threshold"]["value"], 0.92);
    assert_eq!(
        s["sidecar.debounce_ms"],
        serde_json::json!({"value": 1000, "source": "default"})
    );
    assert_eq!(
        s["embed.model_dir"],
        serde_json::json!({"value": "/from/the/environment", "source": "env MEMD_MODEL_DIR"})
    );
    assert_eq!(v["paths"]["config"]["source"], "env MEMD_CONFIG");
    assert_eq!(v["paths"]["data_dir"]["source"], "default");
    // The human form says the same.
    let out = memd_command(dir.path())
        .args(["config", "show", "--config"])
        .arg(&cfg)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("readers = 2   # file, line 3"), "{text}");
    assert!(
        text.contains("synchronous = \"full\"   # default"),
        "{text}"
    );
}

/// The key tables of docs/configuration.md: `section.key` → its default
/// as written there (a TOML value), `None` where it says "unset".
fn documented_settings() -> BTreeMap<String, Option<toml::Value>> {
    let page = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/docs/configuration.md"
    ))
    .unwrap();
    let mut settings = BTreeMap::new();
    let mut section: Option<String> = None;
    for line in page.lines() {
        if let Some(rest) = line.strip_prefix("### `[") {
            section = rest.split(']').next().map(str::to_string);
            continue;
        }
        if line.starts_with("## ") {
            section = None;
        }
        let Some(section) = &section else { continue };
        let cells: Vec<&str> = line.split('|').map(str::trim).collect();
        if cells.len() < 4 || !cells[1].starts_with('`') {
            continue;
        }
        let key = cells[1].trim_matches('`');
        let default = match cells[2] {
            "unset" => None,
            d => {
                let text = format!("v = {}", d.trim_matches('`'));
                let table: toml::Table = toml::from_str(&text)
                    .unwrap_or_else(|e| panic!("{section}.{key}: default {d}: {e}"));
                Some(table["v"].clone())
            }
        };
        settings.insert(format!("{section}.{key}"), default);
    }
    settings
}

/// The same value, numbers compared as numbers (`30` and `30.0`).
fn same(doc: &serde_json::Value, shown: &serde_json::Value) -> bool {
    use serde_json::Value;
    match (doc, shown) {
        (Value::Number(a), Value::Number(b)) => a.as_f64() == b.as_f64(),
        (Value::Array(a), Value::Array(b)) => {
            a.len() == b.len() && a.iter().zip(b).all(|(a, b)| same(a, b))
        }
        (a, b) => a == b,
    }
}

#[test]
fn every_setting_is_documented_with_its_default() {
    let dir = tempfile::tempdir().unwrap();
    let out = memd_command(dir.path())
        .args(["--json", "config", "show"])
        .output()
        .unwrap();
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let documented = documented_settings();
    let mut wrong = Vec::new();
    let shown = v["settings"].as_object().unwrap();
    for (key, setting) in shown {
        let value = &setting["value"];
        match documented.get(key) {
            None => wrong.push(format!("{key}: not in docs/configuration.md")),
            Some(None) if !value.is_null() => {
                wrong.push(format!("{key}: documented unset, the default is {value}"));
            }
            Some(Some(doc)) => {
                let doc = serde_json::to_value(doc).unwrap();
                if !same(&doc, value) {
                    wrong.push(format!("{key}: documented {doc}, the default is {value}"));
                }
            }
            Some(None) => {}
        }
    }
    for (key, default) in &documented {
        let empty_table = default
            .as_ref()
            .is_some_and(|d| d.as_table().is_some_and(toml::Table::is_empty));
        if !shown.contains_key(key) && !empty_table {
            wrong.push(format!(
                "{key}: documented, but config show has no such key"
            ));
        }
    }
    assert!(
        wrong.is_empty(),
        "docs/configuration.md:\n{}",
        wrong.join("\n")
    );
}

#[test]
fn sighup_applies_live_settings_and_keeps_them_on_an_invalid_file() {
    let dir = tempfile::Builder::new().prefix("memd").tempdir().unwrap();
    let cfg = dir.path().join("config.toml");
    std::fs::write(&cfg, "[gate]\nsecrets = \"reject\"\n").unwrap();
    let mut d = Daemon::prepare(dir);
    d.extra = vec!["--config".into(), cfg.display().to_string()];
    d.spawn();

    let (v, code) = d.json(&["add", "the staging db password=hunter2"]);
    assert_eq!(code, 6, "{v}");
    assert_eq!(v["reason"], "secret");

    std::fs::write(
        &cfg,
        "[gate]\nsecrets = \"allow\"\n[storage]\nreaders = 2\n",
    )
    .unwrap();
    d.reload();
    let (v, code) = d.json(&["add", "the staging db password=hunter2"]);
    assert_eq!(code, 0, "the reloaded gate setting applies: {v}");
    let log = d.log();
    assert!(
        log.contains("config reloaded: applied now") && log.contains("applied=gate.secrets"),
        "{log}"
    );
    assert!(
        log.contains("apply only after a restart") && log.contains("needs_restart=storage.readers"),
        "{log}"
    );

    // An invalid file: logged with its position, the running settings stay.
    std::fs::write(&cfg, "[gate]\nsecrets = \"sometimes\"\n").unwrap();
    d.reload();
    assert!(
        d.log().contains("config reload failed") && d.log().contains("line 2, column 11"),
        "{}",
        d.log()
    );
    let (v, code) = d.json(&["add", "the prod db password=hunter3"]);
    assert_eq!(code, 0, "still the reloaded settings: {v}");
    assert_eq!(d.status()["success"], true, "still serving");
}
