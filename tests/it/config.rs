//! The config file: an invalid one stops the daemon with its line and
//! column; `config show` reports every setting and where it came from, and
//! every setting is documented in the README; SIGHUP applies live settings,
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

/// The `## Config` example of the README, section → keys mentioned.
fn readme_config_keys() -> BTreeMap<String, Vec<String>> {
    let readme =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/README.md")).unwrap();
    let section = readme
        .split("\n## Config\n")
        .nth(1)
        .expect("README has a Config section");
    let block = section
        .split("```toml\n")
        .nth(1)
        .and_then(|b| b.split("\n```").next())
        .expect("the Config section has a toml block");
    let mut keys: BTreeMap<String, Vec<String>> = BTreeMap::new();
    let mut current = String::new();
    for line in block.lines() {
        let line = line.trim_start_matches('#').trim();
        if let Some(header) = line.strip_prefix('[') {
            current = header.split(']').next().unwrap().to_string();
        } else if let Some((key, _)) = line.split_once('=') {
            keys.entry(current.clone())
                .or_default()
                .push(key.trim().to_string());
        }
    }
    keys
}

#[test]
fn every_setting_is_documented_in_the_readme() {
    let dir = tempfile::tempdir().unwrap();
    let out = memd_command(dir.path())
        .args(["--json", "config", "show"])
        .output()
        .unwrap();
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let documented = readme_config_keys();
    let mut missing = Vec::new();
    for key in v["settings"].as_object().unwrap().keys() {
        let (section, leaf) = key.rsplit_once('.').unwrap();
        if !documented
            .get(section)
            .is_some_and(|k| k.iter().any(|k| k == leaf))
        {
            missing.push(key.clone());
        }
    }
    assert!(
        missing.is_empty(),
        "settings missing from README ## Config: {missing:?}"
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
