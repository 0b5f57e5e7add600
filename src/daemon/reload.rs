//! SIGHUP: reload the config file.
//!
//! Load → decide → persist: the file is read and validated (an invalid file
//! changes nothing and is logged with its line and column); [`merge`]
//! decides, key by key, which changes apply now and which wait for a
//! restart; the merged settings replace the shared ones; the log says both.
//!
//! Live settings are the ones read per request or per session: the write
//! gate, the memory model, limits on a request, search ranking, the inject
//! budget and default drift policy (for new sessions), lifecycle rules (at
//! the next sweep), and the socket's allow lists and mode. Everything else
//! (storage, the watcher, connection limit, backups, sidecars, sweep
//! schedule, and any setting not listed here) needs a restart.

use std::collections::BTreeSet;

use serde_json::Value;

use crate::config::Config;
use crate::state::Shared;

/// Prefixes of the dotted keys that apply without a restart.
const LIVE: &[&str] = &[
    "gate.",
    "memory.",
    "search.",
    "inject.",
    "session.",
    "client.",
    "drift.policy",
    "lifecycle.",
    "capture.",
    "socket.allow_uids",
    "socket.allow_gids",
    "socket.mode",
    "limits.max_content_bytes",
    "limits.max_metadata_bytes",
    "limits.max_tags",
    "limits.max_tag_chars",
    "limits.max_results",
    "limits.max_upload_bytes",
    // Read when a connection opens: they apply to new connections.
    "limits.handshake_timeout_ms",
    "limits.frame_timeout_ms",
    "limits.write_timeout_ms",
];

/// Keys under a live prefix that are still read only at start.
const AT_START: &[&str] = &["lifecycle.interval_hours", "lifecycle.at_start"];

/// Whether a dotted key applies without a restart.
pub fn is_live(key: &str) -> bool {
    LIVE.iter().any(|p| key == *p || key.starts_with(p)) && !AT_START.contains(&key)
}

/// The result of comparing the running settings with a reloaded file.
#[derive(Debug, Clone, PartialEq)]
pub struct Merged {
    /// What the daemon runs with from now on: the file's live settings, the
    /// old values of the others.
    pub config: Config,
    /// Keys whose new value applies now.
    pub applied: Vec<String>,
    /// Keys that changed in the file but apply only at the next restart.
    pub restart: Vec<String>,
}

/// Decides what a reload changes (pure).
pub fn merge(old: &Config, new: &Config) -> Merged {
    let before = old.flatten();
    let after = new.flatten();
    let keys: BTreeSet<&String> = before.keys().chain(after.keys()).collect();
    let changed: Vec<String> = keys
        .into_iter()
        .filter(|k| before.get(*k) != after.get(*k))
        .cloned()
        .collect();
    let (applied, restart): (Vec<String>, Vec<String>) =
        changed.into_iter().partition(|k| is_live(k));
    let config = if restart.is_empty() {
        new.clone()
    } else {
        keep_old(old, new, &restart)
    };
    Merged {
        config,
        applied,
        restart,
    }
}

/// `new` with the values of `keys` taken back from `old`.
fn keep_old(old: &Config, new: &Config, keys: &[String]) -> Config {
    let (Ok(old_v), Ok(mut new_v)) = (serde_json::to_value(old), serde_json::to_value(new)) else {
        return old.clone();
    };
    for key in keys {
        let path: Vec<&str> = key.split('.').collect();
        set_path(&mut new_v, &path, get_path(&old_v, &path).cloned());
    }
    // The settings came from two valid configs; if they do not combine,
    // keep the old ones whole rather than half of each.
    serde_json::from_value(new_v).unwrap_or_else(|_| old.clone())
}

fn get_path<'a>(v: &'a Value, path: &[&str]) -> Option<&'a Value> {
    path.iter().try_fold(v, |v, k| v.get(*k))
}

fn set_path(v: &mut Value, path: &[&str], value: Option<Value>) {
    let Some((last, parents)) = path.split_last() else {
        return;
    };
    let mut cur = v;
    for k in parents {
        let Some(obj) = cur.as_object_mut() else {
            return;
        };
        cur = obj
            .entry(k.to_string())
            .or_insert_with(|| Value::Object(Default::default()));
    }
    let Some(obj) = cur.as_object_mut() else {
        return;
    };
    match value {
        Some(value) => {
            obj.insert(last.to_string(), value);
        }
        None => {
            obj.remove(*last);
        }
    }
}

/// Reloads the config file into the running daemon (SIGHUP).
pub fn reload(shared: &Shared) {
    let path = &shared.paths.config;
    let new = match Config::load(path) {
        Ok(c) => c,
        Err(e) => {
            tracing::error!("config reload failed, keeping the running settings: {e}");
            return;
        }
    };
    let old = shared.config();
    let mut merged = merge(&old, &new);
    if merged.applied.is_empty() && merged.restart.is_empty() {
        tracing::info!(config = %path.display(), "config reloaded: nothing changed");
        return;
    }
    if merged.config.socket.mode != old.socket.mode && !shared.socket_inherited {
        use std::os::unix::fs::PermissionsExt;
        let mode = merged.config.socket.mode;
        if let Err(e) =
            std::fs::set_permissions(&shared.paths.socket, std::fs::Permissions::from_mode(mode))
        {
            tracing::warn!(error = %e, socket = %shared.paths.socket.display(), "cannot change the socket's mode");
        }
    }
    if shared.socket_inherited
        && let Some(at) = merged.applied.iter().position(|k| k == "socket.mode")
    {
        // The service manager made the socket (its SocketMode= wins).
        merged.applied.remove(at);
        tracing::warn!(
            config = %path.display(),
            "socket.mode changed, but the socket came from the service manager: set SocketMode= in memd.socket instead"
        );
    }
    shared.set_config(merged.config);
    if !merged.applied.is_empty() {
        tracing::info!(
            config = %path.display(),
            applied = %merged.applied.join(", "),
            "config reloaded: applied now"
        );
    }
    if !merged.restart.is_empty() {
        tracing::warn!(
            config = %path.display(),
            needs_restart = %merged.restart.join(", "),
            "config reloaded: these settings changed in the file but apply only after a restart"
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    fn parse(text: &str) -> Config {
        Config::parse(Path::new("c.toml"), text).unwrap()
    }

    #[test]
    fn keys_are_live_or_need_a_restart() {
        let cases = [
            ("gate.secrets", true),
            ("memory.categories", true),
            ("search.half_life.episode", true),
            ("inject.budget_chars", true),
            ("drift.policy", true),
            ("socket.allow_uids", true),
            ("socket.mode", true),
            ("limits.max_content_bytes", true),
            ("lifecycle.demote_below", true),
            ("lifecycle.limits.project", true),
            ("lifecycle.interval_hours", false),
            ("lifecycle.at_start", false),
            ("limits.max_connections", false),
            ("storage.readers", false),
            ("drift.watch", false),
            ("drift.backups_keep", false),
            ("sidecar.files.default", false),
            ("embed.model", false),
        ];
        for (key, live) in cases {
            assert_eq!(is_live(key), live, "{key}");
        }
    }

    #[test]
    fn live_changes_apply_and_the_rest_keeps_the_old_value() {
        let old = parse("[storage]\nreaders = 4\n[gate]\nsecrets = \"reject\"\n");
        let new = parse(
            "[storage]\nreaders = 2\n[gate]\nsecrets = \"allow\"\n[socket]\nallow_uids = [1001]\n\
             [sidecar.files]\ndefault = \"/tmp/MEMORY.md\"\n",
        );
        let m = merge(&old, &new);
        assert_eq!(m.applied, vec!["gate.secrets", "socket.allow_uids"]);
        assert_eq!(m.restart, vec!["sidecar.files.default", "storage.readers"]);
        assert_eq!(m.config.gate.secrets, crate::gate::SecretPolicy::Allow);
        assert_eq!(m.config.socket.allow_uids, vec![1001]);
        assert_eq!(
            m.config.storage.readers, 4,
            "restart-only keys keep the old value"
        );
        assert!(m.config.sidecar.files.is_empty());
    }

    #[test]
    fn a_removed_restart_key_comes_back_and_nothing_changed_is_empty() {
        let old = parse("[sidecar.files]\ndefault = \"/tmp/MEMORY.md\"\n");
        let new = parse("");
        let m = merge(&old, &new);
        assert_eq!(m.restart, vec!["sidecar.files.default"]);
        assert_eq!(m.config, old);
        let same = merge(&old, &old.clone());
        assert!(same.applied.is_empty() && same.restart.is_empty());
    }
}
