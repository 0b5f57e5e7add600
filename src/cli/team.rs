//! `memd team init`: creates or migrates the schema `memd` in the team's
//! PostgreSQL, straight from this process (no daemon needed): the URL from
//! `MEMD_TEAM_URL` or `[team] url`, the password where libpq keeps it.

use serde_json::json;

use crate::commands::args::Global;
use crate::commands::{CommandError, Output, paths};
use crate::config::Config;
use crate::store::team::config::Target;
use crate::store::team::schema;

/// Runs `memd team init`.
///
/// # Errors
/// A usage error without a URL; the server's refusal.
pub fn init(g: &Global) -> Result<Output, CommandError> {
    let paths = paths(g);
    let config = Config::load(&paths.config).map_err(|e| CommandError::Usage(e.to_string()))?;
    let url = config
        .team
        .url_with(|k| std::env::var(k).ok())
        .ok_or_else(|| {
            CommandError::Usage(
                "no team database: set [team] url in the config file or MEMD_TEAM_URL".into(),
            )
        })?;
    let target = Target::parse(&url).map_err(CommandError::Usage)?;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| CommandError::Io(e.to_string()))?;
    let done = runtime.block_on(schema::init_at(&target, config.team.timeout()));
    // A daemon already running here retries every 2 s: woken, it connects
    // and catches up now, so the next shared write need not wait.
    let local = done
        .is_ok()
        .then(|| runtime.block_on(wake_local_daemon(g)))
        .flatten();
    let done = done.map_err(|e| match e {
        crate::store::team::TeamError::Unavailable(m) => CommandError::TeamUnavailable(format!(
            "cannot reach the team's PostgreSQL at {}: {m}",
            target.display()
        )),
        other => CommandError::Io(other.to_string()),
    })?;
    let human = if done.from == done.to {
        format!(
            "{}: the memd schema is at version {} already",
            target.display(),
            done.to
        )
    } else if done.from == 0 {
        format!(
            "{}: created the memd schema (version {})",
            target.display(),
            done.to
        )
    } else {
        format!(
            "{}: migrated the memd schema from version {} to {}",
            target.display(),
            done.from,
            done.to
        )
    };
    let human = match &local {
        Some(r) if r.synced => format!("{human}\nthe memd daemon here has caught up with it"),
        Some(r) if r.configured => format!(
            "{human}\nthe memd daemon here has not caught up with it yet: {}",
            r.last_error.as_deref().unwrap_or("still connecting")
        ),
        _ => human,
    };
    let daemon = local.map(
        |r| json!({"configured": r.configured, "synced": r.synced, "last_error": r.last_error}),
    );
    Ok(Output {
        json: json!({
            "success": true,
            "url": target.display(),
            "from": done.from,
            "to": done.to,
            "daemon": daemon,
        }),
        human,
    })
}

/// Wakes the daemon of this data dir, when one runs (none is started):
/// its team pull connects and catches up at once.
async fn wake_local_daemon(g: &Global) -> Option<memd_client::proto::TeamSyncReport> {
    let mut client = crate::commands::connect(g, false).await.ok()?;
    client.team_sync().await.ok()
}
