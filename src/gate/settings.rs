//! The gate's settings (`[memory]`, `[gate]`) and the input every rule of
//! the gate reads: [`Rules`], borrowed from the daemon's settings.

use serde::{Deserialize, Serialize};

/// The default category allowlist (ARCHITECTURE.md "Data model").
pub const DEFAULT_CATEGORIES: &[&str] = &[
    "preference",
    "fact",
    "convention",
    "decision",
    "gotcha",
    "pattern",
    "procedure",
    "identity",
    "project",
    "note",
    "task",
    "episode",
];

/// Memory model settings.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct MemoryConfig {
    /// Allowed categories.
    pub categories: Vec<String>,
    /// Category of a memory added without one.
    pub default_category: String,
    /// Categories stored as `promoted` when added without `--status`; the
    /// others start as `candidate` (kept out of the memory block until
    /// promoted). Unset: every category but `episode`.
    pub promote_on_write: Option<Vec<String>>,
}

impl MemoryConfig {
    /// Whether an add of `category` without `--status` is promoted.
    pub fn promotes(&self, category: &str) -> bool {
        match &self.promote_on_write {
            Some(list) => list.iter().any(|c| c == category),
            None => category != "episode",
        }
    }
}

impl Default for MemoryConfig {
    fn default() -> Self {
        MemoryConfig {
            categories: DEFAULT_CATEGORIES
                .iter()
                .map(std::string::ToString::to_string)
                .collect(),
            default_category: "note".into(),
            promote_on_write: None,
        }
    }
}

/// What the gate does with content that looks like a secret.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum SecretPolicy {
    /// Refuse the write (reason `secret`).
    #[default]
    Reject,
    /// Replace the secret with `[REDACTED]` and store the rest.
    Redact,
    /// Store it as it is.
    Allow,
}

/// Write gate settings.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct GateConfig {
    /// Refuse diffs, stack traces, git log output, path dumps and blobs.
    pub code_derivable: bool,
    /// Secrets: reject, redact or allow.
    pub secrets: SecretPolicy,
    /// Merge exact duplicates (same normalized text, namespace, scope, owner).
    pub dedup: bool,
    /// Jaccard similarity (word 3-shingles) from which an add is a near
    /// duplicate; above 1.0 turns near-duplicate detection off.
    pub near_duplicate_threshold: f64,
}

impl Default for GateConfig {
    fn default() -> Self {
        GateConfig {
            code_derivable: true,
            secrets: SecretPolicy::Reject,
            dedup: true,
            near_duplicate_threshold: 0.85,
        }
    }
}

/// The content limits the gate enforces (from `[limits]`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Largest memory content, in bytes.
    pub max_content_bytes: usize,
    /// Largest metadata object (JSON text), in bytes.
    pub max_metadata_bytes: usize,
    /// Most tags on one memory.
    pub max_tags: usize,
    /// Longest tag, in characters.
    pub max_tag_chars: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_content_bytes: 10 * 1024,
            max_metadata_bytes: 16 * 1024,
            max_tags: 32,
            max_tag_chars: 64,
        }
    }
}

/// Everything the gate's rules read besides the request: the category
/// model, the gate's switches and the content limits.
#[derive(Debug, Clone, Copy)]
pub struct Rules<'a> {
    /// Categories and what is promoted on write.
    pub memory: &'a MemoryConfig,
    /// Code, secrets and duplicate switches.
    pub gate: &'a GateConfig,
    /// Size and count limits.
    pub limits: Limits,
}
