//! A memory as the wire carries it, and where it came from (provenance).

use serde::{Deserialize, Serialize};

/// A stored memory: the SQL columns of `memories` plus its tags.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
pub struct Memory {
    /// Row id; never reused.
    pub id: i64,
    /// Stable identity across export and import.
    pub uid: String,
    /// Namespace.
    pub namespace: String,
    /// `project`, `agent` or `session`.
    pub scope: String,
    /// Agent id or session key for `agent`/`session` scope.
    pub scope_owner: Option<String>,
    /// The text.
    pub content: String,
    /// Optional subject line.
    pub subject: Option<String>,
    /// Category from the allowlist.
    pub category: String,
    /// 1 (hot) to 3 (cold).
    pub tier: i64,
    /// `low`, `medium` or `high`.
    pub importance: String,
    /// 0.0 to 1.0.
    pub confidence: f64,
    /// Pinned memories sort first and skip decay.
    pub pinned: bool,
    /// `candidate`, `promoted` or `archived`.
    pub status: String,
    /// A JSON object, as text.
    pub metadata: String,
    /// Lower-cased tags, sorted.
    pub tags: Vec<String>,
    /// Id of the memory that replaced this one.
    pub superseded_by: Option<i64>,
    /// When it was superseded.
    pub superseded_at: Option<String>,
    /// Normalized content used for exact dedup.
    pub dedupe_key: Option<String>,
    /// How many times this memory was written (dedup merges count).
    pub observation_count: i64,
    /// How many times it was confirmed.
    pub confirmed_count: i64,
    /// Last confirmation time.
    pub last_confirmed_at: Option<String>,
    /// How many times it was returned by a read.
    pub use_count: i64,
    /// Last time it was returned by a read.
    pub last_used_at: Option<String>,
    /// Decayed access score.
    pub access_score: f64,
    /// `agent`, `user`, `system`, `import` or `external`.
    pub source: String,
    /// Agent id that created it.
    pub created_by: Option<String>,
    /// Expiry time (RFC 3339), if any.
    pub expires_at: Option<String>,
    /// Creation time (RFC 3339, UTC, milliseconds).
    pub created_at: String,
    /// Time of the last meaningful change.
    pub updated_at: String,
    /// Row version: +1 on every meaningful change (tags included).
    pub rev: i64,
    /// Generation of the row's last meaningful change: it moves exactly
    /// when `rev` moves, whoever made the change.
    pub changed_generation: i64,
    /// The conversation or session the memory comes from, if any.
    pub thread: Option<String>,
    /// Its position in the thread.
    pub thread_pos: Option<i64>,
    /// When what it tells happened (RFC 3339), if not when it was stored.
    pub occurred_at: Option<String>,
    /// For a turn captured from an agent host's conversation: where it came
    /// from (`<host>:<session>:<line id>`), unique.
    pub turn: Option<String>,
    /// Where it came from, and every source a merge added (`None` for a row
    /// not read from this machine's database: a team row in transit).
    #[serde(default)]
    pub provenance: Option<Provenance>,
}

/// Where a memory came from: its origin, then each source a merge of a
/// duplicate added, and the lowest trust among them (a merge never raises
/// it: an agent's guess merged into a person's note stays marked).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
pub struct Provenance {
    /// `high` (a person), `medium` (an agent, an import, memd itself) or
    /// `low` (another tool, a captured turn): the lowest of `sources`.
    pub trust: String,
    /// The origin first, then the merged sources, oldest first.
    pub sources: Vec<Origin>,
}

/// One source of a memory.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
pub struct Origin {
    /// `user` (a person), `agent`, `capture`, `import`, `external` (another
    /// tool) or `system` (memd).
    pub source: String,
    /// How it came: `cli`, `viewer`, `http`, `mcp`, `hook`, `agent-cli`
    /// (the CLI run by an agent), `client` (another program through the
    /// client library), `team` (another machine, through PostgreSQL);
    /// `None` when not known (another tool's insert, an older row).
    pub via: Option<String>,
    /// The agent.
    pub agent: Option<String>,
    /// The session.
    pub session: Option<String>,
    /// Another machine (team memory).
    pub machine: Option<String>,
    /// The PostgreSQL role that wrote it (team memory).
    pub role: Option<String>,
    /// When (RFC 3339, UTC).
    pub at: String,
}

impl Origin {
    /// The source on one line: `agent via mcp (claude-code, session …) on
    /// bob-laptop as role bob at …`.
    pub fn line(&self) -> String {
        let mut s = self.source.clone();
        if let Some(via) = &self.via {
            s.push_str(&format!(" via {via}"));
        }
        let who: Vec<String> = [
            self.agent.clone(),
            self.session.as_ref().map(|x| format!("session {x}")),
        ]
        .into_iter()
        .flatten()
        .collect();
        if !who.is_empty() {
            s.push_str(&format!(" ({})", who.join(", ")));
        }
        if let Some(m) = &self.machine {
            s.push_str(&format!(" on {m}"));
        }
        if let Some(r) = &self.role {
            s.push_str(&format!(" as role {r}"));
        }
        s.push_str(&format!(" at {}", self.at));
        s
    }

    /// How far a source is trusted: 3 a person, 2 an agent, an import or
    /// memd, 1 another tool, a captured turn or an ingested one (`ingest`:
    /// what was said in a conversation, not what someone chose to keep).
    pub fn trust_rank(&self) -> u8 {
        match self.source.as_str() {
            "user" => 3,
            "agent" | "import" | "system" => 2,
            _ => 1,
        }
    }
}

impl Provenance {
    /// The provenance of `sources` (origin first): trust is the lowest.
    pub fn of(sources: Vec<Origin>) -> Provenance {
        let rank = sources.iter().map(Origin::trust_rank).min().unwrap_or(1);
        let trust = match rank {
            3 => "high",
            2 => "medium",
            _ => "low",
        };
        Provenance {
            trust: trust.into(),
            sources,
        }
    }
}
