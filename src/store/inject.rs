//! The read behind a snapshot build: promoted, active, unexpired memories
//! visible to the session, in priority order (ARCHITECTURE.md "Frozen snapshot").

use rusqlite::Connection;

use super::StoreError;
use super::citations::{self, CITED};
use crate::session::snapshot::{Builder, PERSONAL_HEADER, Rendered, Row};
use crate::store::kinds::not_history;

/// The `WHERE` of eligible rows: `?1` namespace, `?2` agent, `?3` session,
/// `?4` now. A captured or ingested turn never is, whatever its status.
const ELIGIBLE: &str = concat!(
    "m.namespace = ?1 \
    AND (m.scope = 'project' OR (m.scope = 'agent' AND m.scope_owner = ?2) \
         OR (m.scope = 'session' AND m.scope_owner = ?3)) \
    AND m.status = 'promoted' AND m.superseded_by IS NULL \
    AND ",
    not_history!("m"),
    " \
    AND (m.expires_at IS NULL OR m.expires_at > ?4)"
);

/// Who the block is for.
#[derive(Debug, Clone)]
pub struct For<'a> {
    /// Namespace.
    pub namespace: &'a str,
    /// Agent id.
    pub agent: &'a str,
    /// Session key.
    pub session: &'a str,
    /// Now (stored time format), for expiry.
    pub now: &'a str,
}

/// The block of a session: its namespace's rows within `budget`
/// characters and, when `personal` names a namespace other than the
/// session's (`@me`, see [`memd_proto::PERSONAL_NAMESPACE`]), that
/// namespace's rows after them under their own heading, within
/// `personal_share` percent of the budget (what they leave unused goes to
/// the project; without personal rows the block is the project's alone,
/// byte for byte). Returns the rendering and the number of eligible rows.
///
/// # Errors
/// SQLite errors.
pub fn build_for(
    conn: &Connection,
    who: &For<'_>,
    budget: usize,
    personal: Option<&str>,
    personal_share: u32,
) -> Result<(Rendered, u32), StoreError> {
    let personal = personal.filter(|ns| *ns != who.namespace && personal_share > 0);
    let Some(ns) = personal else {
        return build(conn, who, Builder::new(budget));
    };
    let share = budget * personal_share.min(100) as usize / 100;
    let mine = For {
        namespace: ns,
        ..who.clone()
    };
    let (own, own_eligible) = build(conn, &mine, Builder::headed(PERSONAL_HEADER, share))?;
    if own.included == 0 {
        let (project, eligible) = build(conn, who, Builder::new(budget))?;
        return Ok((project, eligible + own_eligible));
    }
    let rest = budget.saturating_sub(own.chars as usize);
    let (project, eligible) = build(conn, who, Builder::new(rest))?;
    Ok((project.then(own), eligible + own_eligible))
}

/// Builds the block: offers rows in priority order until the builder is
/// full. Returns the rendering and the number of eligible rows.
///
/// # Errors
/// SQLite errors.
pub fn build(
    conn: &Connection,
    who: &For<'_>,
    mut builder: Builder,
) -> Result<(Rendered, u32), StoreError> {
    let params = (who.namespace, who.agent, who.session, who.now);
    // The ORDER BY matches the `memories_inject` index (schema v2) term for
    // term, so rows come in order straight from it, no sort.
    let sql = format!(
        "SELECT m.id, m.category, m.subject, m.content, m.rev, \
         CASE WHEN {CITED} THEN m.metadata END FROM memories m WHERE {ELIGIBLE} \
         ORDER BY m.pinned DESC, m.tier, \
         (CASE m.importance WHEN 'high' THEN 0 WHEN 'medium' THEN 1 ELSE 2 END), \
         m.category, m.created_at, m.id"
    );
    let mut stmt = conn.prepare_cached(&sql)?;
    let mut rows = stmt.query(params)?;
    while let Some(r) = rows.next()? {
        let row = Row {
            id: r.get(0)?,
            category: r.get(1)?,
            subject: r.get(2)?,
            content: r.get::<_, Option<String>>(3)?.unwrap_or_default(),
            rev: r.get(4)?,
            mark: None,
        };
        let row = match r.get::<_, Option<String>>(5)? {
            Some(metadata) => Row {
                mark: mark_of(conn, row.id, &metadata)?,
                ..row
            },
            None => row,
        };
        builder.offer(&row);
        if builder.is_full() {
            break;
        }
    }
    drop(rows);
    let eligible: i64 = conn
        .prepare_cached(&format!("SELECT count(*) FROM memories m WHERE {ELIGIBLE}"))?
        .query_row(params, |r| r.get(0))?;
    Ok((builder.finish(), eligible.max(0) as u32))
}

/// The mark of a row whose metadata may cite code: its citations' last
/// verdicts on this machine (a frozen block keeps the mark it was built
/// with; nothing rebuilds a block because a file changed).
fn mark_of(conn: &Connection, id: i64, metadata: &str) -> Result<Option<String>, StoreError> {
    let Ok(cites) = memd_proto::cite::from_metadata(metadata) else {
        return Ok(None);
    };
    if cites.is_empty() {
        return Ok(None);
    }
    let last = citations::checks_of(conn, id, &cites)?;
    Ok(citations::block_mark(&cites, &last))
}
