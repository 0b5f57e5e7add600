//! Pure rules of embeddings: the model lock, semantic near duplicates and
//! auto-supersession.

use serde_json::Value;

/// The model and dimension recorded with the stored vectors.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ModelLock {
    /// Model id (`local:all-MiniLM-L6-v2`, …).
    pub model: String,
    /// Vector length.
    pub dim: usize,
}

/// What the recorded lock says about the daemon's embedder.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LockCheck {
    /// No vector was stored yet: the first embedding records the lock.
    Free,
    /// The stored vectors come from this embedder.
    Same,
    /// The stored vectors come from another model: semantic operations are
    /// refused until `memd reembed`.
    Other(ModelLock),
}

/// Compares the recorded lock with the embedder's model and dimension.
pub fn check_lock(recorded: Option<&ModelLock>, model: &str, dim: usize) -> LockCheck {
    match recorded {
        None => LockCheck::Free,
        Some(l) if l.model == model && l.dim == dim => LockCheck::Same,
        Some(l) => LockCheck::Other(l.clone()),
    }
}

/// The refusal when the stored vectors come from another model.
pub fn mismatch_message(stored: &ModelLock, model: &str, dim: usize) -> String {
    format!(
        "the stored vectors were made by {} (dimension {}), but this daemon embeds with {model} \
         (dimension {dim}); memd does not mix models. Run `memd reembed` to rebuild every \
         vector with {model} (in the background; progress in `memd status`), or configure {} \
         again",
        stored.model, stored.dim, stored.model
    )
}

/// An existing memory close to a new one: active, in the same namespace,
/// scope and owner.
#[derive(Debug, Clone, PartialEq)]
pub struct Neighbor {
    /// Row id.
    pub id: i64,
    /// Cosine with the new memory.
    pub cosine: f32,
    /// Its subject.
    pub subject: Option<String>,
    /// Its metadata (JSON object text).
    pub metadata: String,
}

/// What to do about a new memory's closest neighbors.
#[derive(Debug, Clone, PartialEq)]
pub enum Outcome {
    /// Nothing close enough.
    Nothing,
    /// Name the neighbor as `similar_to` (never merged).
    Similar {
        /// The neighbor.
        id: i64,
        /// Their cosine.
        cosine: f32,
    },
    /// The new memory supersedes the neighbor (auto-supersession).
    Supersede {
        /// The neighbor, now replaced.
        old: i64,
        /// Their cosine.
        cosine: f32,
    },
}

/// Thresholds of [`decide`].
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Thresholds {
    /// Cosine from which a neighbor is named `similar_to`.
    pub similar: f32,
    /// Auto-supersession on.
    pub auto_supersede: bool,
    /// Cosine from which a neighbor with the same subject is superseded.
    pub supersede: f32,
}

/// Two metadata objects conflict when a key both have holds different
/// values (unreadable metadata conflicts with nothing).
pub fn metadata_conflict(a: &str, b: &str) -> bool {
    let (Ok(Value::Object(a)), Ok(Value::Object(b))) = (
        serde_json::from_str::<Value>(a),
        serde_json::from_str::<Value>(b),
    ) else {
        return false;
    };
    a.iter().any(|(k, v)| b.get(k).is_some_and(|w| w != v))
}

fn same_subject(a: Option<&str>, b: Option<&str>) -> bool {
    match (a.map(str::trim), b.map(str::trim)) {
        (Some(a), Some(b)) => !a.is_empty() && a.eq_ignore_ascii_case(b),
        _ => false,
    }
}

/// Decides about a new memory (its subject and metadata) given its closest
/// neighbors. Auto-supersession (when on) needs the same non-empty subject,
/// a cosine at or above its threshold and metadata that do not conflict;
/// otherwise the closest neighbor at or above the similarity threshold is
/// named. Never a merge.
pub fn decide(
    subject: Option<&str>,
    metadata: &str,
    neighbors: &[Neighbor],
    t: Thresholds,
) -> Outcome {
    let best_first = {
        let mut n: Vec<&Neighbor> = neighbors.iter().collect();
        n.sort_by(|a, b| b.cosine.total_cmp(&a.cosine).then_with(|| b.id.cmp(&a.id)));
        n
    };
    if t.auto_supersede
        && let Some(n) = best_first.iter().find(|n| {
            n.cosine >= t.supersede
                && same_subject(subject, n.subject.as_deref())
                && !metadata_conflict(metadata, &n.metadata)
        })
    {
        return Outcome::Supersede {
            old: n.id,
            cosine: n.cosine,
        };
    }
    match best_first.first() {
        Some(n) if n.cosine >= t.similar => Outcome::Similar {
            id: n.id,
            cosine: n.cosine,
        },
        _ => Outcome::Nothing,
    }
}

/// A freshly embedded memory, as [`findings`] sees it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Embedded<'a> {
    /// Row id.
    pub id: i64,
    /// Its subject.
    pub subject: Option<&'a str>,
    /// Its metadata (JSON object text).
    pub metadata: &'a str,
}

/// A semantic near duplicate found: always from the newer memory (the
/// larger id) to the older one, which only the newer one may supersede.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Finding {
    /// The newer memory (`memory_similar.memory_id`).
    pub newer: i64,
    /// The older memory it is close to (`similar_to`).
    pub older: i64,
    /// Their cosine.
    pub cosine: f32,
    /// The newer memory supersedes the older one.
    pub supersede: bool,
}

/// What a freshly embedded memory and its close neighbors call for.
///
/// Its older neighbors are judged by [`decide`] with the memory as the new
/// one. A newer neighbor (the memory was changed and embedded again after
/// it) is judged as if it had arrived after the memory: it may name the
/// memory as `similar_to` or supersede it, never the other way round. The
/// neighbors in `later` are skipped there: they are judged on their own
/// after this memory (the rest of the same batch, in id order), and look
/// back at it then.
pub fn findings(
    me: Embedded<'_>,
    neighbors: &[Neighbor],
    later: &[i64],
    t: Thresholds,
) -> Vec<Finding> {
    let mut out = Vec::new();
    let older: Vec<Neighbor> = neighbors.iter().filter(|n| n.id < me.id).cloned().collect();
    match decide(me.subject, me.metadata, &older, t) {
        Outcome::Nothing => {}
        Outcome::Similar { id, cosine } => out.push(Finding {
            newer: me.id,
            older: id,
            cosine,
            supersede: false,
        }),
        Outcome::Supersede { old, cosine } => out.push(Finding {
            newer: me.id,
            older: old,
            cosine,
            supersede: true,
        }),
    }
    let mut newer: Vec<&Neighbor> = neighbors
        .iter()
        .filter(|n| n.id > me.id && !later.contains(&n.id))
        .collect();
    newer.sort_by(|a, b| b.cosine.total_cmp(&a.cosine).then_with(|| b.id.cmp(&a.id)));
    let judged: Vec<(&Neighbor, Outcome)> = newer
        .into_iter()
        .map(|n| {
            let as_older = Neighbor {
                id: me.id,
                cosine: n.cosine,
                subject: me.subject.map(str::to_string),
                metadata: me.metadata.to_string(),
            };
            (n, decide(n.subject.as_deref(), &n.metadata, &[as_older], t))
        })
        .collect();
    // As in `decide`: a supersession first, else the closest similar one.
    let pick = judged
        .iter()
        .find(|(_, o)| matches!(o, Outcome::Supersede { .. }))
        .or_else(|| {
            judged
                .iter()
                .find(|(_, o)| matches!(o, Outcome::Similar { .. }))
        });
    if let Some((n, outcome)) = pick {
        out.push(Finding {
            newer: n.id,
            older: me.id,
            cosine: n.cosine,
            supersede: matches!(outcome, Outcome::Supersede { .. }),
        });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lock(m: &str, d: usize) -> ModelLock {
        ModelLock {
            model: m.into(),
            dim: d,
        }
    }

    #[test]
    fn lock_checks() {
        assert_eq!(check_lock(None, "a", 3), LockCheck::Free);
        assert_eq!(check_lock(Some(&lock("a", 3)), "a", 3), LockCheck::Same);
        assert_eq!(
            check_lock(Some(&lock("a", 3)), "b", 3),
            LockCheck::Other(lock("a", 3))
        );
        assert_eq!(
            check_lock(Some(&lock("a", 3)), "a", 4),
            LockCheck::Other(lock("a", 3))
        );
        let m = mismatch_message(&lock("local:x", 384), "ollama:y", 768);
        for part in ["local:x", "384", "ollama:y", "768", "memd reembed"] {
            assert!(m.contains(part), "{m}");
        }
    }

    #[test]
    fn metadata_conflicts() {
        let cases = [
            ("{}", "{}", false),
            (r#"{"a":1}"#, r#"{"b":2}"#, false),
            (r#"{"a":1}"#, r#"{"a":1,"b":2}"#, false),
            (r#"{"a":1}"#, r#"{"a":2}"#, true),
            (r#"{"port":5432}"#, r#"{"port":"5432"}"#, true),
            ("not json", r#"{"a":2}"#, false),
        ];
        for (a, b, want) in cases {
            assert_eq!(metadata_conflict(a, b), want, "{a} {b}");
        }
    }

    fn n(id: i64, cosine: f32, subject: Option<&str>, metadata: &str) -> Neighbor {
        Neighbor {
            id,
            cosine,
            subject: subject.map(str::to_string),
            metadata: metadata.into(),
        }
    }

    #[test]
    fn decisions() {
        let off = Thresholds {
            similar: 0.92,
            auto_supersede: false,
            supersede: 0.85,
        };
        let on = Thresholds {
            auto_supersede: true,
            ..off
        };
        let s = Some("db");
        type Case<'a> = (Option<&'a str>, &'a str, Vec<Neighbor>, Thresholds, Outcome);
        let cases: Vec<Case<'_>> = vec![
            (s, "{}", vec![], on, Outcome::Nothing),
            (s, "{}", vec![n(1, 0.91, None, "{}")], off, Outcome::Nothing),
            (
                s,
                "{}",
                vec![n(1, 0.95, None, "{}"), n(2, 0.93, None, "{}")],
                off,
                Outcome::Similar {
                    id: 1,
                    cosine: 0.95,
                },
            ),
            // Same subject, close enough: superseded only when the flag is on.
            (
                s,
                "{}",
                vec![n(1, 0.88, Some("DB "), "{}")],
                off,
                Outcome::Nothing,
            ),
            (
                s,
                "{}",
                vec![n(1, 0.88, Some("DB "), "{}")],
                on,
                Outcome::Supersede {
                    old: 1,
                    cosine: 0.88,
                },
            ),
            // Conflicting metadata refuses the supersession; similarity stays.
            (
                s,
                r#"{"env":"prod"}"#,
                vec![n(1, 0.95, Some("db"), r#"{"env":"staging"}"#)],
                on,
                Outcome::Similar {
                    id: 1,
                    cosine: 0.95,
                },
            ),
            // Another subject, or none: never superseded.
            (
                s,
                "{}",
                vec![n(1, 0.99, Some("cache"), "{}")],
                on,
                Outcome::Similar {
                    id: 1,
                    cosine: 0.99,
                },
            ),
            (
                None,
                "{}",
                vec![n(1, 0.99, None, "{}")],
                on,
                Outcome::Similar {
                    id: 1,
                    cosine: 0.99,
                },
            ),
            // Below the supersession threshold.
            (
                s,
                "{}",
                vec![n(1, 0.8, Some("db"), "{}")],
                on,
                Outcome::Nothing,
            ),
        ];
        for (subject, meta, neighbors, t, want) in cases {
            assert_eq!(
                decide(subject, meta, &neighbors, t),
                want,
                "{neighbors:?} {t:?}"
            );
        }
    }

    #[test]
    fn findings_run_from_the_newer_memory_to_the_older() {
        let on = Thresholds {
            similar: 0.92,
            auto_supersede: true,
            supersede: 0.85,
        };
        let me = |id| Embedded {
            id,
            subject: Some("cache"),
            metadata: "{}",
        };
        let f = |newer, older, cosine, supersede| Finding {
            newer,
            older,
            cosine,
            supersede,
        };
        // A new memory supersedes its older neighbor.
        assert_eq!(
            findings(me(4), &[n(3, 0.9, Some("cache"), "{}")], &[], on),
            vec![f(4, 3, 0.9, true)]
        );
        // Embedded after a newer one (changed since, or earlier in the same
        // batch with the newer one already judged): the newer one
        // supersedes it.
        assert_eq!(
            findings(me(3), &[n(4, 0.9, Some("cache"), "{}")], &[], on),
            vec![f(4, 3, 0.9, true)]
        );
        // A newer neighbor still to be judged in this batch looks back then.
        assert_eq!(
            findings(me(3), &[n(4, 0.9, Some("cache"), "{}")], &[4], on),
            vec![]
        );
        // Without the flag, or on another subject: only named, newer → older.
        let off = Thresholds {
            auto_supersede: false,
            ..on
        };
        assert_eq!(
            findings(me(3), &[n(4, 0.95, Some("cache"), "{}")], &[], off),
            vec![f(4, 3, 0.95, false)]
        );
        assert_eq!(
            findings(me(3), &[n(4, 0.95, Some("db"), "{}")], &[], on),
            vec![f(4, 3, 0.95, false)]
        );
        // Conflicting metadata refuses it either way.
        assert_eq!(
            findings(
                Embedded {
                    metadata: r#"{"host":"alpha"}"#,
                    ..me(3)
                },
                &[n(4, 0.95, Some("cache"), r#"{"host":"beta"}"#)],
                &[],
                on
            ),
            vec![f(4, 3, 0.95, false)]
        );
        // Both ways at once: it supersedes an older one and a newer one
        // supersedes it; among newer ones a supersession wins over a closer
        // similar one.
        assert_eq!(
            findings(
                me(5),
                &[
                    n(2, 0.9, Some("cache"), "{}"),
                    n(7, 0.99, Some("db"), "{}"),
                    n(6, 0.88, Some("cache"), "{}"),
                ],
                &[],
                on
            ),
            vec![f(5, 2, 0.9, true), f(6, 5, 0.88, true)]
        );
    }
}
