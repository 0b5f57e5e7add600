//! `memd config show`: the effective config — every setting, its value, and
//! where it came from (`default` or `file`, with the line) — plus the
//! resolved paths and where each came from (flag, environment, default).
//!
//! It reads the config file the way the daemon does at start and at SIGHUP;
//! it does not ask a running daemon (which may not have been reloaded yet).
//! An invalid file is an error with its line and column (exit 2).

use std::path::Path;

use serde_json::{Map, Value, json};

use crate::commands::args::Global;
use crate::commands::output::Output;
use crate::commands::{CommandError, paths};
use crate::config::{Config, file_keys};

/// Where a path came from: the flag, its environment variable, or the
/// default.
fn path_source(flag: Option<&Path>, env: &str) -> String {
    match flag {
        None => "default".into(),
        Some(p) => match std::env::var_os(env) {
            Some(v) if Path::new(&v) == p => format!("env {env}"),
            _ => "flag".into(),
        },
    }
}

/// Builds the report.
///
/// # Errors
/// [`CommandError::Usage`] (exit 2) for an invalid file, with line and column;
/// [`CommandError::Io`] when it cannot be read.
pub fn show(g: &Global) -> Result<Output, CommandError> {
    let paths = paths(g);
    let text = Config::read_text(&paths.config).map_err(|e| CommandError::Io(e.to_string()))?;
    let config = match &text {
        Some(t) => {
            Config::parse(&paths.config, t).map_err(|e| CommandError::Usage(e.to_string()))?
        }
        None => Config::default(),
    };
    let set_in_file = match &text {
        Some(t) => file_keys(t).map_err(CommandError::Usage)?,
        None => Default::default(),
    };
    let mut settings = Map::new();
    let mut human = vec![
        format!(
            "# config file: {} ({})",
            paths.config.display(),
            if text.is_some() {
                "exists"
            } else {
                "missing: defaults"
            }
        ),
        format!(
            "# data_dir = {}   # {}",
            paths.data_dir.display(),
            path_source(g.data_dir.as_deref(), "MEMD_DATA_DIR")
        ),
        format!(
            "# socket = {}   # {}",
            paths.socket.display(),
            path_source(g.socket.as_deref(), "MEMD_SOCKET")
        ),
    ];
    // Settings the environment overrides (the daemon reads the same
    // variables).
    let env: Vec<(&str, &str, Value)> = std::env::var_os("MEMD_MODEL_DIR")
        .filter(|v| !v.is_empty())
        .map(|v| {
            (
                "embed.model_dir",
                "env MEMD_MODEL_DIR",
                json!(v.to_string_lossy()),
            )
        })
        .into_iter()
        .collect();
    let mut section = String::new();
    for (key, mut value) in config.flatten() {
        let (mut source, line) = match set_in_file.get(&key) {
            Some((line, _)) => ("file", Some(*line)),
            None => ("default", None),
        };
        let overridden = env.iter().find(|(k, _, _)| *k == key);
        if let Some((_, from, v)) = overridden {
            (source, value) = (from, v.clone());
        }
        let line = line.filter(|_| overridden.is_none());
        let (head, rest) = key.split_once('.').unwrap_or(("", key.as_str()));
        if head != section {
            section = head.to_string();
            human.push(format!("\n[{section}]"));
        }
        let shown = match &value {
            Value::Null => "(unset)".to_string(),
            v => v.to_string(),
        };
        let origin = match line {
            Some(l) => format!("file, line {l}"),
            None => source.to_string(),
        };
        human.push(format!("{rest} = {shown}   # {origin}"));
        let mut entry = json!({"value": value, "source": source});
        if let Some(l) = line {
            entry["line"] = json!(l);
        }
        settings.insert(key, entry);
    }
    let json = json!({
        "success": true,
        "config_file": paths.config,
        "file_exists": text.is_some(),
        "paths": {
            "config": {"value": paths.config, "source": path_source(g.config.as_deref(), "MEMD_CONFIG")},
            "data_dir": {"value": paths.data_dir, "source": path_source(g.data_dir.as_deref(), "MEMD_DATA_DIR")},
            "socket": {"value": paths.socket, "source": path_source(g.socket.as_deref(), "MEMD_SOCKET")},
        },
        "settings": settings,
    });
    Ok(Output {
        json,
        human: human.join("\n"),
    })
}
