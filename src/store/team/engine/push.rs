//! `memd team push NAMESPACE`: a local namespace that starts to be shared
//! uploads its memories to PostgreSQL, once (idempotent by uid): a row
//! PostgreSQL holds already is left as it is there; a row PostgreSQL holds
//! under another uid with the same text (the dedup index) is that row, and
//! this machine's copy gives way to it (the pull brings it).

use memd_proto::TeamPushReport;

use super::super::TeamError;
use super::super::conn::pg::describe;
use super::apply;
use super::row::{INSERT, Insert, TeamRow};
use crate::session::ident::{Author, Who};
use crate::store::readers::ReadKind;
use crate::store::{Store, StoreError, memories};

/// Rows uploaded per PostgreSQL transaction.
const CHUNK: usize = 500;

impl Store {
    /// Pushes `namespace` (see the module) as the session `who`.
    ///
    /// # Errors
    /// `InvalidInput` when the namespace is not shared, `TeamUnavailable`,
    /// SQLite errors.
    pub async fn team_push(
        &self,
        who: &Who,
        namespace: &str,
    ) -> Result<TeamPushReport, StoreError> {
        let team = self.wing.engine().cloned().ok_or_else(|| {
            StoreError::NotConfigured("team memory is off: no [team] section".into())
        })?;
        if !team.config().shares(namespace) {
            return Err(StoreError::InvalidInput(format!(
                "namespace `{namespace}` does not match [team] namespaces {:?}: add it there first",
                team.config().namespaces
            )));
        }
        let ns = namespace.to_string();
        let rows: Vec<TeamRow> = self
            .readers
            .read(ReadKind::Internal, move |conn| {
                let mut out = Vec::new();
                for id in memories::unpushed_ids(conn, &ns)? {
                    if let Some(row) = apply::after(conn, id)? {
                        out.push(row);
                    }
                }
                Ok(out)
            })
            .await?
            .value;
        let mut report = TeamPushReport {
            namespace: namespace.to_string(),
            pushed: 0,
            already: 0,
            merged: 0,
        };
        let author = format!(
            "session\n{}\n{}\n{}",
            team.machine(),
            who.agent,
            who.session
        );
        for chunk in rows.chunks(CHUNK) {
            let chunk = chunk.to_vec();
            let outcome = team
                .with_writer(async |link| {
                    team.bounded(upload(&mut link.client, &author, &chunk))
                        .await
                })
                .await
                .map_err(|e| StoreError::TeamUnavailable(e.to_string()))?;
            report.pushed += outcome.pushed.len() as u64;
            report.already += outcome.already.len() as u64;
            report.merged += outcome.merged.len() as u64;
            let mut settled = outcome.pushed;
            settled.extend(outcome.already);
            let merged = outcome.merged;
            self.writer
                .call(Author::Team, move |ctx| {
                    for (uid, rev) in &settled {
                        memories::set_team_rev(ctx.conn, uid, *rev)?;
                    }
                    for uid in &merged {
                        if let Some(id) = apply::id_of(ctx.conn, uid)? {
                            memories::delete(ctx.conn, id)?;
                        }
                    }
                    Ok(())
                })
                .await?;
        }
        team.mark_clean(namespace);
        team.wake.notify_one();
        tracing::info!(
            namespace,
            pushed = report.pushed,
            already = report.already,
            merged = report.merged,
            "team memory: pushed a namespace"
        );
        Ok(report)
    }
}

struct Uploaded {
    /// Inserted now: uid, rev.
    pushed: Vec<(String, i64)>,
    /// Held already under the same uid: uid, PostgreSQL's rev.
    already: Vec<(String, i64)>,
    /// Held as another row (same dedup key): the local uid.
    merged: Vec<String>,
}

async fn upload(
    client: &mut tokio_postgres::Client,
    author: &str,
    rows: &[TeamRow],
) -> Result<Uploaded, TeamError> {
    let fail = |e: tokio_postgres::Error| TeamError::Unavailable(describe(&e));
    let tx = client.transaction().await.map_err(fail)?;
    tx.execute("SELECT set_config('memd.author', $1, true)", &[&author])
        .await
        .map_err(fail)?;
    tx.execute("SELECT memd.take_seq()", &[])
        .await
        .map_err(fail)?;
    let insert = tx
        .prepare(&format!("{INSERT} ON CONFLICT DO NOTHING RETURNING rev"))
        .await
        .map_err(fail)?;
    let mut out = Uploaded {
        pushed: Vec::new(),
        already: Vec::new(),
        merged: Vec::new(),
    };
    for a in rows {
        let values = Insert::of(a);
        match tx
            .query_opt(&insert, &values.params())
            .await
            .map_err(fail)?
        {
            Some(r) => out.pushed.push((a.uid.clone(), r.get(0))),
            None => {
                let held: Option<i64> = tx
                    .query_opt("SELECT rev FROM memd.memories WHERE uid = $1", &[&a.uid])
                    .await
                    .map_err(fail)?
                    .map(|r| r.get(0));
                match held {
                    Some(rev) => out.already.push((a.uid.clone(), rev)),
                    None => out.merged.push(a.uid.clone()),
                }
            }
        }
    }
    // Closed inside the transaction: through a pooler in transaction mode,
    // a statement left open would stay on a server connection others get.
    drop(insert);
    tx.commit().await.map_err(fail)?;
    Ok(out)
}
