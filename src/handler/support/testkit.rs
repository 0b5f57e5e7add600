//! Unit tests of the handlers: a real store in a temporary directory, real
//! sessions, requests sent through [`dispatch`](super::super::dispatch)
//! (so the seen-generation rule applies as in the daemon). No socket, no
//! daemon process: each handler kind is tested alone.

use memd_proto::{
    AddRequest, DriftPolicy, ErrorBody, ErrorCode, Filter, GetRequest, Hello, Memory, Request,
    Response,
};
use tempfile::TempDir;

use crate::config::Config;
use crate::embed::Provider;
use crate::session::Session;
use crate::state::Shared;

/// A store in a temporary directory and the daemon state around it.
pub(crate) struct Kit {
    pub shared: Shared,
    /// Kept until the kit is dropped.
    pub dir: TempDir,
}

impl Kit {
    /// Default settings, no embedder.
    pub fn new() -> Kit {
        Kit::with(|_| {})
    }

    /// Default settings changed by `f`, no embedder unless `f` names one.
    pub fn with(f: impl FnOnce(&mut Config)) -> Kit {
        Kit::build(f, crate::store::team::wing::Wing::None)
    }

    /// Default settings, no embedder, team memory through `wing` (a
    /// failing stand-in: the team branches' failure paths).
    pub fn with_wing(wing: crate::store::team::wing::Wing) -> Kit {
        Kit::build(|_| {}, wing)
    }

    fn build(f: impl FnOnce(&mut Config), wing: crate::store::team::wing::Wing) -> Kit {
        let dir = tempfile::tempdir().expect("a temporary directory");
        let mut config = Config::default();
        config.embed.provider = Provider::None;
        f(&mut config);
        let shared = crate::state::testing::shared_with(dir.path(), config, wing);
        Kit { shared, dir }
    }

    /// A new session of `agent` in namespace `default`, policy `standard`.
    pub fn session(&self, agent: &str) -> Session {
        self.session_with(agent, DriftPolicy::Standard, None)
    }

    /// A new session of `agent` in `namespace`, policy `standard`.
    pub fn session_in(&self, agent: &str, namespace: &str) -> Session {
        self.open(agent, namespace, DriftPolicy::Standard, None)
    }

    /// A new session with its policy and, optionally, a name.
    pub fn session_with(&self, agent: &str, policy: DriftPolicy, name: Option<&str>) -> Session {
        self.open(agent, "default", policy, name)
    }

    fn open(
        &self,
        agent: &str,
        namespace: &str,
        policy: DriftPolicy,
        name: Option<&str>,
    ) -> Session {
        let hello = Hello {
            protocol: memd_proto::PROTOCOL_VERSION,
            client_version: "test".into(),
            agent_id: agent.into(),
            namespace: namespace.into(),
            policy: Some(policy),
            budget: None,
            seen_generation: None,
            session: name.map(str::to_string),
            hold_block: false,
            previous_namespaces: Vec::new(),
        };
        let config = self.shared.config();
        Session::open(
            &hello,
            self.shared.store.generations.current(),
            config.drift.policy,
            config.inject.budget_chars,
            config.drift.read_set_rows,
            &self.shared.named,
        )
        .expect("a valid hello")
    }

    /// Sends one request of `session`.
    pub async fn call(&self, session: &mut Session, req: Request) -> Response {
        super::super::dispatch(req, session, &self.shared).await
    }

    /// Sends one request that must succeed.
    pub async fn ok(&self, session: &mut Session, req: Request) -> Response {
        match self.call(session, req).await {
            Response::Error(e) => panic!("request failed: {e:?}"),
            r => r,
        }
    }

    /// Sends one request that must fail with `code`; returns the error.
    pub async fn err(&self, session: &mut Session, req: Request, code: ErrorCode) -> ErrorBody {
        match self.call(session, req).await {
            Response::Error(e) if e.code == code => e,
            other => panic!("expected a {code:?} error, got {other:?}"),
        }
    }

    /// Adds `text` as a note; returns its id.
    pub async fn add(&self, session: &mut Session, text: &str) -> i64 {
        match self.ok(session, Request::Add(add(text))).await {
            Response::Added(r) => r.id.expect("the add stored a row"),
            other => panic!("not an add result: {other:?}"),
        }
    }

    /// Reads memory `id` (a read: the session has seen it).
    pub async fn get(&self, session: &mut Session, id: i64) -> Memory {
        let req = Request::Get(GetRequest {
            id,
            include_inactive: true,
        });
        match self.ok(session, req).await {
            Response::Memory(m) => m.memory,
            other => panic!("not a memory: {other:?}"),
        }
    }

    /// Another tool (the `sqlite3` shell, a separate process) inserts a
    /// memory; `false` when the shell is missing (the test is skipped, or
    /// fails under `MEMD_REQUIRE_TOOLS=1`).
    pub fn insert_by_hand(&self, content: &str) -> bool {
        crate::store::testing::insert_by_hand(&self.shared.paths.db(), content)
    }
}

/// An add request for a plain note.
pub(crate) fn add(text: &str) -> AddRequest {
    AddRequest {
        content: text.into(),
        ..AddRequest::default()
    }
}

/// An add request for a note that cites code (`path`, `path:N-M`), as a
/// client writes the metadata (no hash: a client that pins adds it).
pub(crate) fn cited(text: &str, cites: &[&str]) -> AddRequest {
    let cites: Vec<serde_json::Value> = cites
        .iter()
        .map(|c| memd_proto::cite::Cite::parse(c).unwrap().to_json())
        .collect();
    AddRequest {
        content: text.into(),
        metadata: Some(serde_json::json!({ "cites": cites }).to_string()),
        ..AddRequest::default()
    }
}

/// A lexical search for `query` (the page size left to the daemon).
pub(crate) fn search(query: &str) -> memd_proto::SearchRequest {
    memd_proto::SearchRequest {
        query: query.into(),
        filter: Filter::default(),
        limit: 0,
        mode: memd_proto::SearchMode::Lexical,
        syntax: memd_proto::QuerySyntax::default(),
        explain: false,
        offset: 0,
    }
}

/// The drift refusal in an error, with its rule.
pub(crate) fn drift_rule(e: &ErrorBody) -> memd_proto::DriftRule {
    e.drift
        .as_ref()
        .expect("a drift refusal carries details")
        .rule
}

impl Kit {
    /// Rows in the database (every status).
    pub async fn store_count(&self) -> i64 {
        let facts = self.shared.store.status_facts(false).await.expect("status");
        facts.by_status.iter().map(|(_, n)| n).sum()
    }
}

impl Kit {
    /// Streams `data` as the session's upload.
    pub async fn upload(&self, session: &mut Session, data: &[u8]) {
        let req = Request::Upload(memd_proto::UploadChunk {
            data: data.to_vec(),
            reset: true,
        });
        self.ok(session, req).await;
    }

    /// Fetches the session's download whole.
    pub async fn fetch_all(&self, session: &mut Session) -> Vec<u8> {
        let mut out = Vec::new();
        loop {
            let req = Request::Fetch(memd_proto::FetchRequest {
                offset: out.len() as u64,
                len: 1_000,
            });
            match self.ok(session, req).await {
                Response::Chunk(c) => {
                    out.extend_from_slice(&c.data);
                    if c.eof {
                        return out;
                    }
                }
                other => panic!("not a chunk: {other:?}"),
            }
        }
    }
}

/// A turn of a host's transcript.
pub(crate) fn turn(id: &str, speaker: &str, text: &str) -> memd_proto::CapturedTurn {
    memd_proto::CapturedTurn {
        id: id.into(),
        speaker: speaker.into(),
        text: text.into(),
        at: None,
    }
}

/// A capture of `turns` of session `session` between two offsets.
pub(crate) fn stretch(
    session: &str,
    from: u64,
    to: u64,
    turns: Vec<memd_proto::CapturedTurn>,
) -> memd_proto::Request {
    memd_proto::Request::Capture(memd_proto::CaptureRequest {
        host: "claude-code".into(),
        session: session.into(),
        file: "2049:77".into(),
        path: "/home/a/.claude/projects/x/s1.jsonl".into(),
        from,
        to,
        turns,
        invalid_lines: 0,
        error: None,
    })
}
