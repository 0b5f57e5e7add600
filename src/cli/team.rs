//! `memd team init|grant|revoke|members|review-required|review`: run straight from this process
//! against the team's PostgreSQL (no daemon needed): the URL from
//! `MEMD_TEAM_URL` or `[team] url`, the password where libpq keeps it, the
//! role the URL names. `init` creates or migrates the schema `memd`; the
//! others are [`crate::store::team::admin::grants`].

use serde_json::json;

use crate::commands::args::{Global, ReviewArgs, ReviewCommand, TeamCommand};
use crate::commands::output::flat;
use crate::commands::{CommandError, Output, paths};
use crate::config::Config;
use crate::store::team::TeamError;
use crate::store::team::admin::{grants, review, schema};
use crate::store::team::conn::config::Target;

/// The team's PostgreSQL as this machine's config names it, and a runtime
/// to talk to it.
fn team_target(g: &Global) -> Result<(Config, Target, tokio::runtime::Runtime), CommandError> {
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
    Ok((config, target, runtime))
}

/// A team call's failure as the command line reports it.
fn failure(target: &Target, e: TeamError) -> CommandError {
    match e {
        TeamError::Unavailable(m) => CommandError::TeamUnavailable(format!(
            "the team's PostgreSQL at {}: {m}",
            target.display()
        )),
        TeamError::Forbidden(m) => CommandError::Forbidden(m),
        TeamError::Invalid(m) => CommandError::Usage(m),
        TeamError::NotFound(m) => CommandError::NotFound(m),
        other => CommandError::Io(other.to_string()),
    }
}

/// Runs `memd team init`.
///
/// # Errors
/// A usage error without a URL; the server's refusal.
pub fn init(g: &Global) -> Result<Output, CommandError> {
    let (config, target, runtime) = team_target(g)?;
    let done = runtime.block_on(schema::init_at(&target, config.team.timeout()));
    // A daemon already running here retries every 2 s: woken, it connects
    // and catches up now, so the next shared write need not wait.
    let local = done
        .is_ok()
        .then(|| runtime.block_on(wake_local_daemon(g)))
        .flatten();
    let done = done.map_err(|e| failure(&target, e))?;
    let mut human = if done.from == done.to {
        format!(
            "{}: the memd schema is at version {} already",
            target.display(),
            done.to
        )
    } else if done.from == 0 {
        format!(
            "{}: created the memd schema (version {}); role {} administers every namespace",
            target.display(),
            done.to,
            done.role
        )
    } else {
        format!(
            "{}: migrated the memd schema from version {} to {}",
            target.display(),
            done.from,
            done.to
        )
    };
    let warning = done.unbound.then(|| {
        format!(
            "warning: role {} is a superuser or has BYPASSRLS: row-level security does not bind \
             it, so grants mean nothing for it. Give people and machines login roles of their own \
             and grants (memd team grant ROLE GLOB RIGHT; see docs/team.md)",
            done.role
        )
    });
    if let Some(w) = &warning {
        eprintln!("{w}");
    }
    match &local {
        Some(r) if r.synced => human.push_str("\nthe memd daemon here has caught up with it"),
        Some(r) if r.configured => human.push_str(&format!(
            "\nthe memd daemon here has not caught up with it yet: {}",
            r.last_error.as_deref().unwrap_or("still connecting")
        )),
        _ => {}
    }
    let daemon = local.map(
        |r| json!({"configured": r.configured, "synced": r.synced, "last_error": r.last_error}),
    );
    Ok(Output {
        json: json!({
            "success": true,
            "url": target.display(),
            "from": done.from,
            "to": done.to,
            "role": done.role,
            "bypasses_row_security": done.unbound,
            "warning": warning,
            "daemon": daemon,
        }),
        human,
    })
}

/// Runs `memd team grant|revoke|members`.
///
/// # Errors
/// A usage error without a URL or for an unknown right or role;
/// `forbidden` without admin; the server's refusal.
pub fn rights(g: &Global, command: &TeamCommand) -> Result<Output, CommandError> {
    let (config, target, runtime) = team_target(g)?;
    let limit = config.team.timeout();
    let out = match command {
        TeamCommand::Grant { role, glob, right } => {
            let done = runtime
                .block_on(grants::grant(&target, limit, role, glob, right))
                .map_err(|e| failure(&target, e))?;
            Output {
                human: format!("{} may now {} {}", done.role, done.access, done.glob),
                json: json!({"success": true, "grant": done}),
            }
        }
        TeamCommand::Revoke { role, glob } => {
            let was = runtime
                .block_on(grants::revoke(&target, limit, role, glob))
                .map_err(|e| failure(&target, e))?;
            Output {
                human: format!("{role} no longer holds {was} on {glob}"),
                json: json!({"success": true, "role": role, "glob": glob, "revoked": was}),
            }
        }
        TeamCommand::Cleanup { older_than } => {
            let text = older_than.as_deref().unwrap_or(&config.team.retention);
            let age = crate::clock::parse_duration(text).ok_or_else(|| {
                CommandError::Usage(format!("`{text}` is not a duration (like 90d, 12w, 0s)"))
            })?;
            let done = runtime
                .block_on(grants::cleanup(&target, limit, age))
                .map_err(|e| failure(&target, e))?;
            Output {
                human: format!(
                    "removed {} tombstones ({} revisions), {} operation ids and {} decided \
                     proposals older than {text}; machines that applied less than #{} resync",
                    done.tombstones, done.revisions, done.ops, done.proposals, done.cleaned_through
                ),
                json: json!({"success": true, "older_than": text, "cleaned": done}),
            }
        }
        TeamCommand::Members => {
            let (me, all) = runtime
                .block_on(grants::members(&target, limit))
                .map_err(|e| failure(&target, e))?;
            let mut lines = vec![format!(
                "{:<20} {:<24} {:<7} granted by",
                "role", "glob", "right"
            )];
            for m in &all {
                let note = if m.unbound {
                    " (above row-level security)"
                } else if !m.login {
                    " (cannot log in: a group role, or dropped)"
                } else {
                    ""
                };
                lines.push(format!(
                    "{:<20} {:<24} {:<7} {} at {}{note}",
                    m.role, m.glob, m.access, m.granted_by, m.granted_at
                ));
            }
            if all.is_empty() {
                lines.push(format!(
                    "(no grant visible to role {me}: it may read nothing)"
                ));
            }
            Output {
                human: lines.join("\n"),
                json: json!({"success": true, "role": me, "members": all}),
            }
        }
        TeamCommand::ReviewRequired { glob, state } => {
            let on = state == "on";
            let changed = runtime
                .block_on(review::require(&target, limit, glob, on))
                .map_err(|e| failure(&target, e))?;
            let human = match (on, changed) {
                (true, true) => format!(
                    "{glob} now requires review: writers without the review right only propose there"
                ),
                (true, false) => format!("{glob} requires review already"),
                (false, true) => format!("{glob} no longer requires review"),
                (false, false) => format!("{glob} did not require review (exactly this glob)"),
            };
            Output {
                human,
                json: json!({"success": true, "glob": glob, "review_required": on, "changed": changed}),
            }
        }
        TeamCommand::Review(args) => return review_command(&runtime, &target, limit, args),
        _ => return Err(CommandError::Usage("not a team rights command".into())),
    };
    Ok(out)
}

/// `memd team review [--all]`, `approve ID`, `reject ID [--reason]`.
fn review_command(
    runtime: &tokio::runtime::Runtime,
    target: &Target,
    limit: std::time::Duration,
    args: &ReviewArgs,
) -> Result<Output, CommandError> {
    let (id, approve, reason) = match &args.decide {
        None => {
            let queue = runtime
                .block_on(review::queue(target, limit, args.all))
                .map_err(|e| failure(target, e))?;
            return Ok(Output {
                human: queue_lines(&queue),
                json: json!({"success": true, "review": queue}),
            });
        }
        Some(ReviewCommand::Approve { id }) => (*id, true, None),
        Some(ReviewCommand::Reject { id, reason }) => (*id, false, reason.as_deref()),
    };
    let done = runtime
        .block_on(review::decide(target, limit, id, approve, reason))
        .map_err(|e| failure(target, e))?;
    let human = if approve {
        format!(
            "proposal {id} approved: memory {} is team knowledge in {}",
            done.uid, done.namespace
        )
    } else {
        format!("proposal {id} rejected: it never becomes a memory")
    };
    Ok(Output {
        human,
        json: json!({"success": true, "decision": done}),
    })
}

/// The review queue as lines a person reads.
fn queue_lines(queue: &review::Queue) -> String {
    let mut lines = Vec::new();
    if queue.required.is_empty() {
        lines.push("no namespace requires review".to_string());
    } else {
        lines.push(format!("review required in: {}", queue.required.join(", ")));
    }
    if queue.proposals.is_empty() {
        lines.push(format!(
            "no proposal for role {} (its own, or in namespaces it reviews)",
            queue.role
        ));
    }
    for p in &queue.proposals {
        let by = [p.machine.as_deref(), p.agent.as_deref()]
            .into_iter()
            .flatten()
            .collect::<Vec<_>>()
            .join("/");
        let by = if by.is_empty() {
            p.proposed_by.clone()
        } else {
            format!("{} ({by})", p.proposed_by)
        };
        lines.push(format!(
            "#{} {} {} in {} by {by} at {} [{}]",
            p.id, p.action, p.uid, p.namespace, p.proposed_at, p.state
        ));
        if let Some(current) = &p.current {
            lines.push(format!("    now:      {}", flat(current, 200)));
        }
        let label = if p.action == "forget" {
            "removes: "
        } else {
            "proposed:"
        };
        lines.push(format!("    {label} {}", flat(&p.content, 200)));
        if let Some(reason) = &p.reason {
            lines.push(format!("    reason:   {}", flat(reason, 200)));
        }
    }
    lines.join("\n")
}

/// Wakes the daemon of this data dir, when one runs (none is started):
/// its team pull connects and catches up at once.
async fn wake_local_daemon(g: &Global) -> Option<memd_client::proto::TeamSyncReport> {
    let mut client = crate::commands::connect(g, false).await.ok()?;
    client.team_sync().await.ok()
}
