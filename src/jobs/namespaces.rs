//! A project's namespace moved (memd derives it from the repository's
//! origin, `github.com/acme/api`, where it once was `<name>-<hash>` of the
//! identity, and before that of the checkout's path): a client that derived
//! the new name also sends the old ones, and what the daemon keeps under
//! them moves to the new one, once, before the session opens — so a
//! checkout keeps what it had, and every worktree and clone of one
//! repository ends up in one namespace. A namespace someone named is never
//! moved: only names of the derived shape are.

use crate::session::ident::{Reach, Who};
use crate::state::Shared;
use crate::sync;

/// Whether `name` has the shape of the earlier derivation
/// (`<name>-<8 hex digits>`): only such a name is moved.
fn derived_shape(name: &str) -> bool {
    name.rsplit_once('-').is_some_and(|(stem, hash)| {
        !stem.is_empty()
            && hash.len() == 8
            && hash
                .bytes()
                .all(|b| b.is_ascii_hexdigit() && !b.is_ascii_uppercase())
            && stem.chars().all(|c| {
                c.is_ascii_lowercase() || c.is_ascii_digit() || matches!(c, '.' | '_' | '-')
            })
    })
}

/// Moves what this daemon keeps under `previous` (an earlier derived name
/// of this checkout) to `namespace`: its memories, named sessions (the
/// same frozen block, seen generation and read set) and capture state.
/// Once per name and daemon run; a failure is logged and the session opens
/// anyway (the move is tried again by the next session that names it).
///
/// Team memory: when the team shares both names, the rows are moved in
/// PostgreSQL first, in one transaction that also closes the old name to
/// every writer (an older memd included), and every machine applies them
/// at its next pull; when it shares only the new name, the moved rows are
/// pushed; when it shares only the old one, nothing moves (they would
/// leave the team): `memd doctor` says to add the new name to `[team]
/// namespaces`.
pub async fn adopt(shared: &Shared, previous: &str, namespace: &str) {
    if previous == namespace || !derived_shape(previous) {
        return;
    }
    {
        let mut moved = sync::lock(&shared.namespaces_moved);
        if !moved.insert(previous.to_string()) {
            return;
        }
    }
    match move_all(shared, previous, namespace).await {
        Ok(0) => {}
        Ok(n) => tracing::info!(
            memories = n,
            from = %previous,
            to = %namespace,
            "moved a checkout's memories from its earlier derived namespace"
        ),
        Err(e) => {
            tracing::warn!(error = %e, from = %previous, to = %namespace,
                "cannot move memories to the project's namespace; will try again");
            sync::lock(&shared.namespaces_moved).remove(previous);
        }
    }
}

async fn move_all(shared: &Shared, from: &str, to: &str) -> Result<usize, String> {
    let mut push = false;
    let team = shared.store.wing();
    match (team.shares(from, "project"), team.shares(to, "project")) {
        (true, true) => {
            let n = team
                .rename_namespace(from, to)
                .await
                .map_err(|e| format!("renaming the shared namespace in PostgreSQL: {e}"))?;
            tracing::info!(rows = n, from = %from, to = %to,
                "team memory: renamed the shared namespace in PostgreSQL");
        }
        (true, false) => {
            tracing::warn!(from = %from, to = %to,
                "not moving memories out of a shared namespace into one the team does not \
                 share: add the new name to [team] namespaces");
            return Ok(0);
        }
        (false, true) => push = true,
        (false, false) => {}
    }
    let n = shared
        .store
        .move_namespace(from.to_string(), to.to_string())
        .await
        .map_err(|e| e.to_string())?;
    let sessions = shared.named.move_namespace(from, to);
    for name in &sessions {
        shared.session_file.remove(from, name);
    }
    if !sessions.is_empty() {
        crate::jobs::sessions::keep_all(shared);
        if let Err(e) = shared.session_file.sync().await {
            tracing::warn!(error = %e, "moved named sessions were not kept on disk yet");
        }
        tracing::info!(sessions = sessions.len(), from = %from, to = %to,
            "moved named sessions to the project's namespace");
    }
    if push && n > 0 {
        let who = Who {
            namespace: to.to_string(),
            agent: "memd".into(),
            session: "namespace-move".into(),
            reach: Reach::default(),
        };
        match shared.store.team_push(&who, to).await {
            Ok(r) => tracing::info!(pushed = r.pushed, namespace = %to,
                "team memory: pushed the memories moved into a shared namespace"),
            Err(e) => tracing::warn!(error = %e, namespace = %to,
                "team memory: the moved memories were not pushed: run `memd team push`"),
        }
    }
    Ok(n)
}

#[cfg(test)]
mod tests {
    use super::derived_shape;

    #[test]
    fn only_earlier_derived_names_are_moved() {
        assert!(derived_shape("shop-1f0c3a9e"));
        assert!(derived_shape("my-app.v2-0000abcd"));
        assert!(!derived_shape("default"));
        assert!(!derived_shape("team-shop"));
        assert!(!derived_shape("shop-1F0C3A9E"));
        assert!(!derived_shape("-1f0c3a9e"));
        assert!(!derived_shape("Shop-1f0c3a9e"));
    }
}
