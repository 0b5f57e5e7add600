//! A project's namespace moved (memd derives it from the repository's
//! identity, where it once came from the checkout's path): a client that
//! derived the new name also sends the old one, and the old namespace's
//! memories move to the new one, once, before the session opens — so a
//! checkout keeps what it had, and every worktree and clone of one
//! repository ends up in one namespace.

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

/// Moves the memories of `previous` (an earlier derived name of this
/// checkout) to `namespace`. Once per name and daemon run; a failure is
/// logged and the session opens anyway (the move is tried again by the
/// next daemon).
pub async fn adopt(shared: &Shared, previous: &str, namespace: &str) {
    if previous == namespace || !derived_shape(previous) {
        return;
    }
    // A shared namespace's rows are written through PostgreSQL, never
    // moved in the local file alone: such a checkout moves its memories
    // with export and import.
    if shared
        .store
        .team()
        .is_some_and(|t| t.shares(previous, "project") || t.shares(namespace, "project"))
    {
        tracing::info!(from = %previous, to = %namespace,
            "not moving memories between namespaces of which one is shared (team memory)");
        return;
    }
    {
        let mut moved = sync::lock(&shared.namespaces_moved);
        if !moved.insert(previous.to_string()) {
            return;
        }
    }
    let result = shared
        .store
        .move_namespace(previous.to_string(), namespace.to_string())
        .await;
    match result {
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
