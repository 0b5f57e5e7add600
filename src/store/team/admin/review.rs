//! Review (team schema version 4): a namespace can require it, and there a
//! role without the `review` right writes only proposals, which reviewers
//! approve or reject. PostgreSQL enforces it (a trigger on
//! `memd.memories`, `memd.decide`); these are the operations of `memd team
//! review-required` and `memd team review`. The write-through makes the
//! proposals themselves ([`super::super::engine::write`]).

use serde::Serialize;
use tokio_postgres::Client;

use super::super::TeamError;
use super::super::conn::config::Target;
use super::grants::{bounded, connect, fail, require_admin};

/// One proposal, as the connection's role may see it (its own, and those
/// of the namespaces it reviews).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Proposal {
    /// Its number (`memd team review approve ID`).
    pub id: i64,
    /// `add`, `update` or `forget`.
    pub action: String,
    /// The memory's uid (new for an add).
    pub uid: String,
    /// The namespace.
    pub namespace: String,
    /// The text as proposed (for a forget: the text it would remove).
    pub content: String,
    /// The subject as proposed.
    pub subject: Option<String>,
    /// The category as proposed.
    pub category: String,
    /// The tags as proposed.
    pub tags: Vec<String>,
    /// For an update: the memory's text now.
    pub current: Option<String>,
    /// The role that proposed it.
    pub proposed_by: String,
    /// The machine, agent and session memd reported for it.
    pub machine: Option<String>,
    /// The agent.
    pub agent: Option<String>,
    /// The session.
    pub session: Option<String>,
    /// When (UTC).
    pub proposed_at: String,
    /// `open`, `approved` or `rejected`.
    pub state: String,
    /// The reviewer who decided.
    pub decided_by: Option<String>,
    /// When.
    pub decided_at: Option<String>,
    /// The reviewer's reason.
    pub reason: Option<String>,
}

/// What `memd team review` shows.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Queue {
    /// The connection's role.
    pub role: String,
    /// The globs of the namespaces that require review.
    pub required: Vec<String>,
    /// The proposals, oldest first.
    pub proposals: Vec<Proposal>,
}

/// A decision.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Decision {
    /// The proposal.
    pub id: i64,
    /// `approved` or `rejected`.
    pub state: String,
    /// The memory's uid.
    pub uid: String,
    /// Its namespace.
    pub namespace: String,
    /// The number of the commit that made it team knowledge (approved).
    pub seq: Option<i64>,
}

/// `memd team review-required GLOB on|off`: namespaces `glob` matches
/// require review (`on`) or no longer do. Needs `admin` on `glob`.
/// Whether anything changed.
///
/// # Errors
/// [`TeamError::Forbidden`], [`TeamError::Unavailable`].
pub async fn require(
    target: &Target,
    timeout: std::time::Duration,
    glob: &str,
    on: bool,
) -> Result<bool, TeamError> {
    if glob.is_empty() {
        return Err(TeamError::Invalid("the glob is empty".into()));
    }
    bounded(timeout, async {
        let link = connect(target, timeout).await?;
        let client = &link.client;
        require_admin(
            client,
            glob,
            &format!("change whether {glob} requires review"),
        )
        .await?;
        let sql = if on {
            "INSERT INTO memd.reviewed (glob) VALUES ($1) ON CONFLICT DO NOTHING"
        } else {
            "DELETE FROM memd.reviewed WHERE glob = $1"
        };
        let n = client.execute(sql, &[&glob]).await.map_err(|e| fail(&e))?;
        Ok(n > 0)
    })
    .await
}

/// `memd team review`: the globs that require review and the proposals
/// the connection's role may see — open ones, or every one with `all`.
///
/// # Errors
/// [`TeamError::Unavailable`].
pub async fn queue(
    target: &Target,
    timeout: std::time::Duration,
    all: bool,
) -> Result<Queue, TeamError> {
    bounded(timeout, async {
        let link = connect(target, timeout).await?;
        queue_on(&link.client, all).await
    })
    .await
}

/// [`queue`] on a connection this process holds (the daemon's, for the
/// viewer).
///
/// # Errors
/// [`TeamError::Unavailable`].
pub async fn queue_on(client: &Client, all: bool) -> Result<Queue, TeamError> {
    let role: String = client
        .query_one("SELECT current_user::text", &[])
        .await
        .map_err(|e| fail(&e))?
        .get(0);
    let required = client
        .query("SELECT glob FROM memd.reviewed ORDER BY glob", &[])
        .await
        .map_err(|e| fail(&e))?
        .iter()
        .map(|r| r.get(0))
        .collect();
    let proposals = proposals(client, all).await?;
    Ok(Queue {
        role,
        required,
        proposals,
    })
}

impl super::super::Team {
    /// The review queue as this daemon's role sees it (the viewer's team
    /// page).
    ///
    /// # Errors
    /// [`TeamError`] when PostgreSQL cannot be asked.
    pub async fn review_queue(&self) -> Result<Queue, TeamError> {
        self.with_writer(async |link| self.bounded(queue_on(&link.client, false)).await)
            .await
    }
}

const UTC: &str = "'YYYY-MM-DD\"T\"HH24:MI:SS\"Z\"'";

async fn proposals(client: &Client, all: bool) -> Result<Vec<Proposal>, TeamError> {
    let sql = format!(
        "SELECT p.id, p.action, p.uid, p.namespace, p.content, p.subject, p.category, p.tags, \
                CASE WHEN p.action = 'update' THEN m.content END, p.proposed_by, \
                p.changed_machine, p.changed_agent, p.changed_session, \
                to_char(p.proposed_at AT TIME ZONE 'UTC', {UTC}), p.state, p.decided_by, \
                to_char(p.decided_at AT TIME ZONE 'UTC', {UTC}), p.reason \
         FROM memd.proposals p LEFT JOIN memd.memories m ON m.uid = p.uid \
         WHERE $1 OR p.state = 'open' \
         ORDER BY p.id"
    );
    let rows = client.query(&sql, &[&all]).await.map_err(|e| fail(&e))?;
    Ok(rows
        .iter()
        .map(|r| Proposal {
            id: r.get(0),
            action: r.get(1),
            uid: r.get(2),
            namespace: r.get(3),
            content: r.get(4),
            subject: r.get(5),
            category: r.get(6),
            tags: r.get(7),
            current: r.get(8),
            proposed_by: r.get(9),
            machine: r.get(10),
            agent: r.get(11),
            session: r.get(12),
            proposed_at: r.get(13),
            state: r.get(14),
            decided_by: r.get(15),
            decided_at: r.get(16),
            reason: r.get(17),
        })
        .collect())
}

/// `memd team review approve ID` (`approve`) / `reject ID [--reason]`.
/// Needs `review` on the proposal's namespace; an approved proposal is
/// written by PostgreSQL as this role's change and reaches every machine
/// by its pull.
///
/// # Errors
/// [`TeamError::NotFound`] (no such proposal, or one this role may not
/// see), [`TeamError::Forbidden`], [`TeamError::Invalid`] (decided
/// already, or the memory changed since it was proposed),
/// [`TeamError::Unavailable`].
pub async fn decide(
    target: &Target,
    timeout: std::time::Duration,
    id: i64,
    approve: bool,
    reason: Option<&str>,
) -> Result<Decision, TeamError> {
    bounded(timeout, async {
        let mut link = connect(target, timeout).await?;
        let tx = link.client.transaction().await.map_err(|e| fail(&e))?;
        let seq: Option<i64> = tx
            .query_one("SELECT memd.decide($1, $2, $3)", &[&id, &approve, &reason])
            .await
            .map_err(|e| fail(&e))?
            .get(0);
        let row = tx
            .query_one(
                "SELECT state, uid, namespace FROM memd.proposals WHERE id = $1",
                &[&id],
            )
            .await
            .map_err(|e| fail(&e))?;
        let decision = Decision {
            id,
            state: row.get(0),
            uid: row.get(1),
            namespace: row.get(2),
            seq,
        };
        tx.commit().await.map_err(|e| fail(&e))?;
        Ok(decision)
    })
    .await
}
