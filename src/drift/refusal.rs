//! A refused write: what the session saw, what changed and who changed it,
//! and the words of the error every interface shows (the message and the
//! remediation).

use memd_proto::{ChangeKind, ChangedBy, DriftDetails, DriftRule, RowDrift};

use super::log::{Attribution, Committer};

/// Why a write was refused.
#[derive(Debug, Clone, PartialEq)]
pub enum Refusal {
    /// The external rule, or `strict`'s rule on other sessions: the
    /// session's whole view is older than a change it must see first.
    View(ViewRefusal),
    /// The row rule: a row the request changes moved after the version of
    /// it the session last saw.
    Row(Box<RowRefusal>),
}

/// A refusal on the session's whole view.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ViewRefusal {
    /// `external` or `strict`.
    pub rule: DriftRule,
    /// The session's seen generation.
    pub observed: u64,
    /// The generation in the refused transaction.
    pub actual: u64,
    /// Generation of the unseen change (backups are shared per cause).
    pub cause: u64,
    /// Absolute path of the backup, once written.
    pub backup: Option<String>,
    /// A few of the rows changed since the session's view, newest first.
    pub changes: Vec<RowChange>,
    /// More rows changed than `changes` lists.
    pub more: bool,
}

/// A row changed since a session's view.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RowChange {
    /// The row.
    pub id: i64,
    /// It was deleted.
    pub deleted: bool,
    /// Who changed it.
    pub by: ChangedBy,
}

/// A row-rule refusal.
#[derive(Debug, Clone, PartialEq)]
pub struct RowRefusal {
    /// The session's seen generation (unchanged by the refusal).
    pub observed: u64,
    /// The generation in the refused transaction.
    pub actual: u64,
    /// The row now and who changed it.
    pub row: RowDrift,
}

impl Refusal {
    /// The session's seen generation.
    pub fn observed(&self) -> u64 {
        match self {
            Refusal::View(v) => v.observed,
            Refusal::Row(r) => r.observed,
        }
    }

    /// The generation in the refused transaction.
    pub fn actual(&self) -> u64 {
        match self {
            Refusal::View(v) => v.actual,
            Refusal::Row(r) => r.actual,
        }
    }

    /// The rule that refused.
    pub fn rule(&self) -> DriftRule {
        match self {
            Refusal::View(v) => v.rule,
            Refusal::Row(_) => DriftRule::Row,
        }
    }

    /// What happened, what was kept, and what to do.
    pub fn message(&self) -> String {
        match self {
            Refusal::View(v) => view_message(v),
            Refusal::Row(r) => row_message(r),
        }
    }

    /// The structured details of the error.
    pub fn details(&self) -> DriftDetails {
        match self {
            Refusal::View(v) => DriftDetails {
                drift_backup: v.backup.clone().unwrap_or_default(),
                remediation: "read again (get ID, list or search) to see what changed, then \
                              retry the request; the backup holds every row if something must \
                              be recovered"
                    .into(),
                generation_observed: v.observed,
                generation_actual: v.actual,
                rule: v.rule,
                row: None,
            },
            Refusal::Row(r) => DriftDetails {
                drift_backup: String::new(),
                remediation: row_remediation(&r.row),
                generation_observed: r.observed,
                generation_actual: r.actual,
                rule: DriftRule::Row,
                row: Some(Box::new(r.row.clone())),
            },
        }
    }
}

/// The author of a change, from the commit log.
pub fn changed_by(a: &Attribution) -> ChangedBy {
    let none = |kind| ChangedBy {
        kind,
        agent: None,
        session: None,
        machine: None,
    };
    match a {
        Attribution::Known(Committer::Session(who)) => ChangedBy {
            kind: ChangeKind::Session,
            agent: Some(who.agent.clone()),
            session: Some(who.session.clone()),
            machine: None,
        },
        Attribution::Known(Committer::Remote {
            machine,
            agent,
            session,
        }) => ChangedBy {
            kind: ChangeKind::Session,
            agent: Some(agent.clone()),
            session: Some(session.clone()),
            machine: Some(machine.clone()),
        },
        Attribution::Known(Committer::Daemon) => none(ChangeKind::Daemon),
        Attribution::Known(Committer::External) => none(ChangeKind::External),
        Attribution::Known(Committer::Team) | Attribution::Unknown => none(ChangeKind::Unknown),
    }
}

/// "session S (agent A)", "another tool", … for messages.
pub fn describe(by: &ChangedBy) -> String {
    match by.kind {
        ChangeKind::Session => match &by.machine {
            Some(machine) => format!(
                "session {} (agent {}) on machine {machine}",
                by.session.as_deref().unwrap_or("?"),
                by.agent.as_deref().unwrap_or("?")
            ),
            None => format!(
                "session {} (agent {})",
                by.session.as_deref().unwrap_or("?"),
                by.agent.as_deref().unwrap_or("?")
            ),
        },
        ChangeKind::Daemon => {
            "memd itself (a lifecycle sweep, expiry or automatic supersession)".into()
        }
        ChangeKind::External => "another tool, outside memd".into(),
        ChangeKind::Unknown => "a writer memd no longer knows (older than its commit log)".into(),
    }
}

fn view_message(v: &ViewRefusal) -> String {
    let what = if v.changes.is_empty() {
        match v.rule {
            DriftRule::Strict => "another session wrote in this namespace".to_string(),
            _ => "another tool changed the database outside memd".to_string(),
        }
    } else {
        let mut parts: Vec<String> = v
            .changes
            .iter()
            .map(|c| {
                format!(
                    "memory {} was {} by {}",
                    c.id,
                    if c.deleted { "deleted" } else { "changed" },
                    describe(&c.by)
                )
            })
            .collect();
        if v.more {
            parts.push("more rows changed".into());
        }
        parts.join("; ")
    };
    let saved = match &v.backup {
        Some(path) => format!("Every row as it is now is saved in {path}."),
        None => "The backup could not be written (see the daemon log).".to_string(),
    };
    format!(
        "refused: since this session's view (generation {}; the database is at {}), {what}; \
         nothing was written. {saved} Read again (get, list or search) to see the change, then \
         retry.",
        v.observed, v.actual
    )
}

fn row_message(r: &RowRefusal) -> String {
    let row = &r.row;
    let id = row.current.id;
    let seen = match row.rev_seen {
        Some(rev) => format!(
            "this session last saw rev {rev}, it is at rev {}",
            row.rev_now
        ),
        None => format!(
            "this session never read it, and it changed after the session's view began (it is \
             at rev {})",
            row.rev_now
        ),
    };
    format!(
        "refused: memory {id} was changed by {} at {} ({seen}); nothing was written. {}",
        describe(&row.changed_by),
        row.changed_at,
        row_remediation(row)
    )
}

fn row_remediation(row: &RowDrift) -> String {
    let id = row.current.id;
    format!(
        "Read memory {id} again before changing it — in memd shell `get {id}`, over MCP \
         memory_get with id {id}, from the client get({id}) — then retry; a one-shot CLI call \
         that means to write over this version passes --expect-rev {}.",
        row.rev_now
    )
}
