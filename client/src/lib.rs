//! Client of the memd daemon: connect, open a session, one method per
//! request kind.
//!
//! # Layout
//! - [`Client`] (this file): async client over tokio; one connection is one
//!   session, one request at a time.
//! - [`blocking`]: the same API for code without an async runtime.
//! - [`autostart`]: connect, or start a background daemon and connect.
//! - [`error`]: typed errors ([`Error::NotFound`], [`Error::Conflict`],
//!   [`Error::Drift`], [`Error::Unreachable`], …) with the CLI's exit codes.
//! - [`exit`]: the exit codes of the command line, the one table.
//!
//! ```no_run
//! # async fn demo() -> memd_client::Result<()> {
//! use memd_client::{Client, ConnectOptions, AddRequest};
//! let mut client = Client::connect(ConnectOptions::new("/run/user/1000/memd/memd.sock")).await?;
//! let added = client.add(AddRequest { content: "Deploys go through ops/deploy.sh".into(), ..Default::default() }).await?;
//! let hits = client.search_text("deploy", 5).await?;
//! # Ok(()) }
//! ```

pub mod autostart;
pub mod blocking;
pub mod error;
pub mod exit;

use std::collections::VecDeque;
use std::path::PathBuf;
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::UnixStream;

pub use error::{Error, Result};
pub use memd_proto as proto;
pub use memd_proto::{
    AddRequest, AddResult, ChangeKind, ChangedBy, DriftDetails, DriftPolicy, DriftRule, ErrorBody,
    ErrorCode, Filter, ForgetRequest, ForgetResult, GetRequest, Hit, ListRequest, Memory,
    MemoryList, MemoryReply, QuerySyntax, SearchMode, SearchRequest, SearchResult, UpdateRequest,
    Welcome,
};
use memd_proto::{Frame, FrameBuffer, Hello, Request, Response};

/// How to reach the daemon and what session to open.
#[derive(Debug, Clone)]
pub struct ConnectOptions {
    /// The daemon's socket.
    pub socket: PathBuf,
    /// Agent id (owner of agent-scope memories).
    pub agent_id: String,
    /// Namespace of the session.
    pub namespace: String,
    /// Drift policy; `None` for the daemon's default.
    pub policy: Option<DriftPolicy>,
    /// Inject budget; `None` for the daemon's default.
    pub budget: Option<u32>,
    /// Generation seen before a reconnect.
    pub seen_generation: Option<u64>,
    /// A session name: connections with the same name in the same
    /// namespace are one session; `None` for a session of this connection.
    pub session: Option<String>,
    /// The session serves a hook-driven host: a named session created by
    /// this connection keeps its block across writes (see
    /// [`Hello::hold_block`]).
    pub hold_block: bool,
    /// The namespaces earlier derivations gave this project (see
    /// [`Hello::previous_namespaces`]).
    pub previous_namespaces: Vec<String>,
    /// Time limit for connecting and the handshake.
    pub connect_timeout: Duration,
    /// How this program reaches memd, for the provenance of what it
    /// stores: `cli`, `mcp`, `hook`, `agent-cli`; `client` for any other
    /// program. Sent as the prefix of the handshake's client version.
    pub via: String,
}

impl ConnectOptions {
    /// Defaults: agent `default`, namespace `default`, daemon's policy.
    pub fn new(socket: impl Into<PathBuf>) -> ConnectOptions {
        ConnectOptions {
            socket: socket.into(),
            agent_id: "default".into(),
            namespace: "default".into(),
            policy: None,
            budget: None,
            seen_generation: None,
            session: None,
            hold_block: false,
            previous_namespaces: Vec::new(),
            connect_timeout: Duration::from_secs(10),
            via: "client".into(),
        }
    }
}

/// An open session with the daemon.
#[derive(Debug)]
pub struct Client {
    stream: UnixStream,
    next_id: u64,
    welcome: Welcome,
    /// Pushes (frame id 0) received while waiting for a response.
    pushes: VecDeque<Response>,
    /// Bytes of frames received but not yet decoded: reading into it is
    /// cancel safe, so [`Client::next_event`] can sit in a `select!`.
    rbuf: FrameBuffer,
    /// The session's seen generation as far as this client can tell.
    seen: u64,
    /// The last request went out whole.
    written: bool,
    /// The namespace the session opened in.
    namespace: String,
    /// Told of each chunk a download receives.
    on_download: Option<DownloadHook>,
}

/// A function told of a download's progress: bytes received, of the total.
struct DownloadHook(Box<dyn FnMut(u64, u64) + Send>);

impl std::fmt::Debug for DownloadHook {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("DownloadHook")
    }
}

impl Client {
    /// Connects and opens a session.
    ///
    /// # Errors
    /// [`Error::Unreachable`] when nothing answers on the socket,
    /// [`Error::ProtocolMismatch`] when the daemon speaks another version,
    /// and the daemon's refusal (e.g. permission denied, busy) otherwise.
    pub async fn connect(opts: ConnectOptions) -> Result<Client> {
        let stream =
            UnixStream::connect(&opts.socket)
                .await
                .map_err(|source| Error::Unreachable {
                    socket: opts.socket.clone(),
                    source,
                })?;
        let limit = opts.connect_timeout;
        tokio::time::timeout(limit, Self::handshake(stream, opts))
            .await
            .map_err(|_| Error::Protocol(format!("no handshake within {limit:?}")))?
    }

    async fn handshake(stream: UnixStream, opts: ConnectOptions) -> Result<Client> {
        let mut stream = stream;
        stream.write_all(&memd_proto::preamble()).await?;
        let mut rbuf = FrameBuffer::new();
        let preamble = loop {
            if let Some(preamble) = rbuf.take_preamble() {
                break preamble;
            }
            if stream.read_buf(rbuf.unfilled()).await? == 0 {
                return Err(Error::Closed);
            }
        };
        let version = memd_proto::parse_preamble(&preamble)?;
        memd_proto::check_version(version)?;
        let mut client = Client {
            stream,
            next_id: 1,
            welcome: Welcome {
                session_id: String::new(),
                generation: 0,
                server_version: String::new(),
                protocol: version,
            },
            pushes: VecDeque::new(),
            rbuf,
            seen: 0,
            written: false,
            namespace: opts.namespace.clone(),
            on_download: None,
        };
        let asked = opts.seen_generation;
        let hello = Hello {
            protocol: memd_proto::PROTOCOL_VERSION,
            client_version: format!("{}/{}", opts.via, env!("CARGO_PKG_VERSION")),
            agent_id: opts.agent_id,
            namespace: opts.namespace,
            policy: opts.policy,
            budget: opts.budget,
            seen_generation: opts.seen_generation,
            session: opts.session,
            hold_block: opts.hold_block,
            previous_namespaces: opts.previous_namespaces,
        };
        match client.call(Request::Hello(hello)).await? {
            Response::Welcome(w) => {
                // As the daemon does: never ahead of the database.
                client.seen = asked.map_or(w.generation, |s| s.min(w.generation));
                client.welcome = w;
                Ok(client)
            }
            other => Err(unexpected(&other)),
        }
    }

    /// The handshake's answer: session id, generation, daemon version.
    pub fn welcome(&self) -> &Welcome {
        &self.welcome
    }

    /// The namespace the session opened in.
    pub fn namespace(&self) -> &str {
        &self.namespace
    }

    /// The generation this session has seen (ARCHITECTURE.md "Drift"), as far as
    /// the client can tell from the answers: the handshake's, then that of
    /// every read (`get`, `list`, `search`, `history`, `inject`) and drift
    /// refusal. Never ahead of the daemon's own count, so passing it as
    /// [`ConnectOptions::seen_generation`] when connecting again keeps the
    /// drift guard of this session.
    pub fn seen_generation(&self) -> u64 {
        self.seen
    }

    /// Whether the last request went out whole. When a call failed on the
    /// connection and this is false, the daemon never had the request and
    /// cannot have run it: sending it again on a new connection is safe.
    /// When it is true, the daemon may have run it before the connection
    /// broke.
    pub fn last_request_written(&self) -> bool {
        self.written
    }

    /// Sends one request and waits for its response.
    ///
    /// # Errors
    /// The daemon's error as a typed [`Error`], or connection errors.
    pub async fn call(&mut self, req: Request) -> Result<Response> {
        let kind = req.kind();
        let result = self.exchange(req).await;
        // The daemon's rule for what a reply shows the session (the same
        // function, in memd-proto).
        let shown = match &result {
            Ok(resp) => resp.seen_generation(kind),
            Err(Error::Drift(body)) => body.seen_generation(),
            Err(_) => None,
        };
        if let Some(generation) = shown {
            self.saw_generation(generation);
        }
        result
    }

    /// The one place the client's seen generation moves: forward only.
    fn saw_generation(&mut self, generation: u64) {
        self.seen = self.seen.max(generation);
    }

    async fn exchange(&mut self, req: Request) -> Result<Response> {
        let id = self.next_id;
        self.next_id += 1;
        self.written = false;
        let bytes = memd_proto::encode(&Frame { id, body: req })?;
        if let Err(e) = self.stream.write_all(&bytes).await {
            // A daemon that refuses a connection (busy, another user) sends
            // its reason and closes: the reason is still ours to read.
            if matches!(
                e.kind(),
                std::io::ErrorKind::BrokenPipe | std::io::ErrorKind::ConnectionReset
            ) && let Ok(Frame {
                body: Response::Error(body),
                ..
            }) = self.read_frame().await
            {
                return Err(body.into());
            }
            return Err(e.into());
        }
        self.written = true;
        loop {
            let frame = self.read_frame().await?;
            match frame.body {
                Response::Error(body) if frame.id == id || frame.id == memd_proto::PUSH_ID => {
                    return Err(body.into());
                }
                body if frame.id == id => return Ok(body),
                body if frame.id == memd_proto::PUSH_ID => self.pushes.push_back(body),
                _ => {
                    return Err(Error::Protocol(format!(
                        "response for request {} while waiting for {id}",
                        frame.id
                    )));
                }
            }
        }
    }

    /// The next frame. Cancel safe: bytes already read stay in `rbuf`
    /// (`read_buf` either reads or does nothing), so a dropped call loses
    /// nothing and the next one resumes the same frame.
    async fn read_frame(&mut self) -> Result<Frame<Response>> {
        loop {
            if let Some(frame) = self.rbuf.next_frame()? {
                return Ok(frame);
            }
            let n = self
                .stream
                .read_buf(self.rbuf.unfilled())
                .await
                .map_err(|e| match e.kind() {
                    std::io::ErrorKind::UnexpectedEof => Error::Closed,
                    _ => Error::Io(e),
                })?;
            if n == 0 {
                return Err(Error::Closed);
            }
        }
    }

    /// Pushes received so far (drift events), oldest first.
    pub fn take_pushes(&mut self) -> Vec<Response> {
        self.pushes.drain(..).collect()
    }

    /// Stores a memory through the write gate.
    ///
    /// # Errors
    /// [`Error::Rejected`] (with a reason) when the gate refuses it,
    /// [`Error::InvalidInput`] for malformed fields.
    pub async fn add(&mut self, req: AddRequest) -> Result<AddResult> {
        match self.call(Request::Add(req)).await? {
            Response::Added(r) => Ok(r),
            other => Err(unexpected(&other)),
        }
    }

    /// Reads one memory.
    ///
    /// # Errors
    /// [`Error::NotFound`] when it does not exist or is not visible.
    pub async fn get(&mut self, id: i64) -> Result<Memory> {
        self.get_with(GetRequest {
            id,
            include_inactive: false,
        })
        .await
        .map(|r| r.memory)
    }

    /// Reads one memory, with options.
    ///
    /// # Errors
    /// As [`Client::get`].
    pub async fn get_with(&mut self, req: GetRequest) -> Result<MemoryReply> {
        match self.call(Request::Get(req)).await? {
            Response::Memory(r) => Ok(*r),
            other => Err(unexpected(&other)),
        }
    }

    /// Lists memories.
    ///
    /// # Errors
    /// [`Error::InvalidInput`] for a malformed filter.
    pub async fn list(&mut self, req: ListRequest) -> Result<MemoryList> {
        match self.call(Request::List(req)).await? {
            Response::Memories(r) => Ok(r),
            other => Err(unexpected(&other)),
        }
    }

    /// Changes a memory.
    ///
    /// # Errors
    /// [`Error::NotFound`], [`Error::Conflict`] on an `expect_rev` mismatch,
    /// [`Error::Drift`] when the session's view is stale.
    pub async fn update(&mut self, req: UpdateRequest) -> Result<MemoryReply> {
        match self.call(Request::Update(req)).await? {
            Response::Memory(r) => Ok(*r),
            other => Err(unexpected(&other)),
        }
    }

    /// Deletes a memory.
    ///
    /// # Errors
    /// As [`Client::update`].
    pub async fn forget(&mut self, id: i64, expect_rev: Option<i64>) -> Result<ForgetResult> {
        match self
            .call(Request::Forget(ForgetRequest { id, expect_rev }))
            .await?
        {
            Response::Forgotten(r) => Ok(r),
            other => Err(unexpected(&other)),
        }
    }

    /// Searches.
    ///
    /// # Errors
    /// [`Error::InvalidInput`] for an invalid FTS query (FTS syntax only) or
    /// filter.
    pub async fn search(&mut self, req: SearchRequest) -> Result<SearchResult> {
        match self.call(Request::Search(req)).await? {
            Response::Hits(r) => Ok(r),
            other => Err(unexpected(&other)),
        }
    }

    /// Searches plain text in the session's namespace.
    ///
    /// # Errors
    /// As [`Client::search`].
    pub async fn search_text(&mut self, query: &str, limit: u32) -> Result<Vec<Hit>> {
        self.search(SearchRequest {
            query: query.to_string(),
            filter: Filter::default(),
            limit,
            mode: SearchMode::Auto,
            syntax: QuerySyntax::Plain,
            explain: false,
            offset: 0,
        })
        .await
        .map(|r| r.hits)
    }

    /// The daemon's status as JSON.
    ///
    /// # Errors
    /// Connection errors.
    pub async fn status(&mut self) -> Result<serde_json::Value> {
        match self
            .call(Request::Status(memd_proto::StatusRequest {}))
            .await?
        {
            Response::Status(s) => serde_json::from_str(&s.json)
                .map_err(|e| Error::Protocol(format!("status is not JSON: {e}"))),
            other => Err(unexpected(&other)),
        }
    }

    /// Asks the daemon to shut down gracefully.
    ///
    /// # Errors
    /// Connection errors.
    pub async fn stop(&mut self) -> Result<()> {
        match self.call(Request::Stop(memd_proto::StopRequest {})).await? {
            Response::Stopping => Ok(()),
            other => Err(unexpected(&other)),
        }
    }
}

impl Client {
    /// Asks the daemon to push drift events to this session.
    ///
    /// # Errors
    /// Connection errors.
    pub async fn subscribe(&mut self) -> Result<()> {
        match self
            .call(Request::Subscribe(memd_proto::SubscribeRequest {}))
            .await?
        {
            Response::Subscribed => Ok(()),
            other => Err(unexpected(&other)),
        }
    }

    /// Waits for the next push (after [`Client::subscribe`]). Cancel safe:
    /// it can wait in a `select!` next to other work, and a frame that was
    /// half read when it was dropped is completed by the next read.
    ///
    /// # Errors
    /// Connection errors, or a daemon error pushed before closing.
    pub async fn next_event(&mut self) -> Result<memd_proto::Event> {
        while let Some(push) = self.pushes.pop_front() {
            if let Response::Event(e) = push {
                return Ok(e);
            }
        }
        let frame = self.read_frame().await?;
        match frame.body {
            Response::Event(e) if frame.id == memd_proto::PUSH_ID => Ok(e),
            Response::Error(body) if frame.id == memd_proto::PUSH_ID => Err(body.into()),
            other => Err(Error::Protocol(format!(
                "unexpected frame {} while waiting for an event: {other:?}",
                frame.id
            ))),
        }
    }

    /// The daemon's integrity report (SQLite, FTS, triggers).
    ///
    /// # Errors
    /// Connection errors.
    pub async fn check(&mut self) -> Result<memd_proto::CheckReport> {
        match self
            .call(Request::Check(memd_proto::CheckRequest {}))
            .await?
        {
            Response::Checked(r) => Ok(r),
            other => Err(unexpected(&other)),
        }
    }

    /// Streams a file's bytes to this session's upload (for restore).
    ///
    /// # Errors
    /// I/O errors reading `reader`, the daemon's upload limit.
    pub async fn upload(&mut self, mut reader: impl std::io::Read) -> Result<u64> {
        let mut buf = vec![0u8; memd_proto::UPLOAD_CHUNK];
        let mut first = true;
        let mut received = 0;
        loop {
            let n = read_full(&mut reader, &mut buf)?;
            if n == 0 && !first {
                return Ok(received);
            }
            let chunk = memd_proto::UploadChunk {
                data: buf[..n].to_vec(),
                reset: first,
            };
            first = false;
            match self.call(Request::Upload(chunk)).await? {
                Response::Uploaded(ack) => received = ack.received,
                other => return Err(unexpected(&other)),
            }
            if n < buf.len() {
                return Ok(received);
            }
        }
    }

    /// Replaces the database with a SQLite file (a `memd backup` or a copy
    /// of `memory.db`), read from `reader` and streamed to the daemon.
    /// Counts as an external change for every session.
    ///
    /// # Errors
    /// [`Error::InvalidInput`] when the file is not a usable memd database
    /// (then nothing changed).
    pub async fn restore(
        &mut self,
        reader: impl std::io::Read,
    ) -> Result<memd_proto::RestoreReport> {
        self.upload(reader).await?;
        match self
            .call(Request::Restore(memd_proto::RestoreRequest {}))
            .await?
        {
            Response::Restored(r) => Ok(r),
            other => Err(unexpected(&other)),
        }
    }
}

impl Client {
    /// The session's memory block: built at the first call, then the same
    /// bytes until this session writes, compacts or refreshes.
    ///
    /// # Errors
    /// Connection errors.
    pub async fn inject(&mut self) -> Result<memd_proto::Injection> {
        match self
            .call(Request::Inject(memd_proto::InjectRequest {}))
            .await?
        {
            Response::Injected(i) => Ok(i),
            other => Err(unexpected(&other)),
        }
    }

    /// Tells the daemon the agent compacted its context: the next inject
    /// rebuilds the block.
    ///
    /// # Errors
    /// Connection errors.
    pub async fn compacted(&mut self) -> Result<()> {
        match self
            .call(Request::Compacted(memd_proto::CompactedRequest {}))
            .await?
        {
            Response::Invalidated => Ok(()),
            other => Err(unexpected(&other)),
        }
    }

    /// Drops the session's block: the next inject rebuilds it.
    ///
    /// # Errors
    /// Connection errors.
    pub async fn refresh(&mut self) -> Result<()> {
        match self
            .call(Request::Refresh(memd_proto::RefreshRequest {}))
            .await?
        {
            Response::Invalidated => Ok(()),
            other => Err(unexpected(&other)),
        }
    }
}

impl Client {
    /// Marks `old` as replaced by `new`.
    ///
    /// # Errors
    /// [`Error::Conflict`] for a double supersession or a cycle,
    /// [`Error::NotFound`], [`Error::Drift`].
    pub async fn supersede(&mut self, old: i64, new: i64) -> Result<memd_proto::SupersedeResult> {
        match self
            .call(Request::Supersede(memd_proto::SupersedeRequest {
                old,
                new,
            }))
            .await?
        {
            Response::Superseded(r) => Ok(r),
            other => Err(unexpected(&other)),
        }
    }

    /// The supersession chain through `id` (oldest first) and the earlier
    /// versions of its memories.
    ///
    /// # Errors
    /// [`Error::NotFound`].
    pub async fn history(&mut self, id: i64) -> Result<memd_proto::History> {
        match self
            .call(Request::History(memd_proto::HistoryRequest { id }))
            .await?
        {
            Response::History(h) => Ok(h),
            other => Err(unexpected(&other)),
        }
    }

    /// The namespace memory `id` lives in, whichever namespace this
    /// session is in (the look is not a read of the row).
    ///
    /// # Errors
    /// [`Error::NotFound`] when no namespace holds it (for this session).
    pub async fn locate(&mut self, id: i64) -> Result<String> {
        match self
            .call(Request::Locate(memd_proto::LocateRequest { id }))
            .await?
        {
            Response::Located(r) => Ok(r.namespace),
            other => Err(unexpected(&other)),
        }
    }

    /// Deletes every memory of `thread`, of `source`, or of both (one at
    /// least) in this session's namespace; with `dry_run`, only names them.
    ///
    /// # Errors
    /// Transport and daemon errors (`invalid_input`, `drift`).
    pub async fn forget_where(
        &mut self,
        thread: Option<&str>,
        source: Option<&str>,
        dry_run: bool,
    ) -> Result<memd_proto::ForgottenWhere> {
        let req = memd_proto::ForgetWhereRequest {
            thread: thread.map(str::to_string),
            source: source.map(str::to_string),
            dry_run,
        };
        match self.call(Request::ForgetWhere(req)).await? {
            Response::ForgottenWhere(r) => Ok(r),
            other => Err(unexpected(&other)),
        }
    }

    /// The live memories of the session's namespace (and, with
    /// `personal`, the person's own) that cite code, to check in a checkout.
    ///
    /// # Errors
    /// Transport and daemon errors.
    pub async fn citations(&mut self, personal: bool) -> Result<memd_proto::cite::CitationList> {
        let req = memd_proto::cite::CitationsRequest { personal, id: None };
        match self.call(Request::Citations(req)).await? {
            Response::Citations(l) => Ok(l),
            other => Err(unexpected(&other)),
        }
    }

    /// Reports verdicts computed in a checkout (the last ones this machine
    /// knows); returns how many the daemon recorded.
    ///
    /// # Errors
    /// Transport and daemon errors (`invalid_input`).
    pub async fn report_verdicts(
        &mut self,
        checked: Vec<memd_proto::cite::Checked>,
    ) -> Result<u32> {
        let req = memd_proto::cite::VerdictReport { checked };
        match self.call(Request::Verdicts(req)).await? {
            Response::VerdictsRecorded(r) => Ok(r.recorded),
            other => Err(unexpected(&other)),
        }
    }

    /// Counts a confirmation of a memory.
    ///
    /// # Errors
    /// [`Error::NotFound`].
    pub async fn confirm(&mut self, id: i64) -> Result<Memory> {
        match self
            .call(Request::Confirm(memd_proto::ConfirmRequest { id }))
            .await?
        {
            Response::Memory(r) => Ok(r.memory),
            other => Err(unexpected(&other)),
        }
    }

    /// Deletes expired memories (or lists them with `dry_run`).
    ///
    /// # Errors
    /// Connection errors.
    pub async fn prune(
        &mut self,
        dry_run: bool,
        all_namespaces: bool,
    ) -> Result<memd_proto::PruneResult> {
        match self
            .call(Request::Prune(memd_proto::PruneRequest {
                dry_run,
                all_namespaces,
            }))
            .await?
        {
            Response::Pruned(r) => Ok(r),
            other => Err(unexpected(&other)),
        }
    }

    /// Moves a task to `status` (`in_progress`, `completed`, `cancelled`,
    /// `pending`).
    ///
    /// # Errors
    /// [`Error::Conflict`] for a transition that is not allowed.
    pub async fn task(&mut self, id: i64, status: &str, expect_rev: Option<i64>) -> Result<Memory> {
        match self
            .call(Request::Task(memd_proto::TaskRequest {
                id,
                status: status.to_string(),
                expect_rev,
            }))
            .await?
        {
            Response::Memory(r) => Ok(r.memory),
            other => Err(unexpected(&other)),
        }
    }
}

impl Client {
    /// Runs a lifecycle sweep now (or counts what it would do).
    ///
    /// # Errors
    /// Connection errors; a failed sweep.
    pub async fn sweep(&mut self, dry_run: bool) -> Result<memd_proto::SweepReport> {
        match self
            .call(Request::Sweep(memd_proto::SweepRequest { dry_run }))
            .await?
        {
            Response::Swept(r) => Ok(r),
            other => Err(unexpected(&other)),
        }
    }

    /// Stores a stretch of an agent host's transcript as captured turns and
    /// moves the session's capture offset (one transaction).
    ///
    /// # Errors
    /// [`Error::InvalidInput`] for a bad host or session name; the store's
    /// errors. Nothing is stored then and the offset stays.
    pub async fn capture(
        &mut self,
        req: memd_proto::CaptureRequest,
    ) -> Result<memd_proto::CaptureReport> {
        match self.call(Request::Capture(req)).await? {
            Response::Captured(r) => Ok(r),
            other => Err(unexpected(&other)),
        }
    }

    /// Where capture stands, per host and session (of `host`, of
    /// `session`).
    ///
    /// # Errors
    /// Transport and daemon errors.
    pub async fn capture_status(
        &mut self,
        host: Option<String>,
        session: Option<String>,
    ) -> Result<Vec<memd_proto::CaptureState>> {
        match self
            .call(Request::CaptureStatus(memd_proto::CaptureStatusRequest {
                host,
                session,
            }))
            .await?
        {
            Response::CaptureStates(r) => Ok(r.sessions),
            other => Err(unexpected(&other)),
        }
    }

    /// Removes a session's captured turns and its capture state (`host`
    /// empty: every host's session of that id); how many turns.
    ///
    /// # Errors
    /// Transport and daemon errors.
    pub async fn capture_forget(&mut self, host: &str, session: &str) -> Result<u64> {
        match self
            .call(Request::CaptureForget(memd_proto::CaptureForgetRequest {
                host: host.into(),
                session: session.into(),
            }))
            .await?
        {
            Response::CaptureForgotten(r) => Ok(r.turns),
            other => Err(unexpected(&other)),
        }
    }

    /// Erases memory `id`, or every memory whose text holds `matching`, of
    /// the session's namespace, and every trace of their text this machine
    /// keeps; without `confirm`, only lists what would be erased.
    ///
    /// # Errors
    /// Transport and daemon errors (`not_found`, `invalid_input`).
    pub async fn purge(
        &mut self,
        id: Option<i64>,
        matching: Option<&str>,
        confirm: bool,
    ) -> Result<memd_proto::PurgeReport> {
        self.purge_request(memd_proto::PurgeRequest {
            id,
            matching: matching.map(str::to_string),
            confirm,
            all_namespaces: false,
        })
        .await
    }

    /// A purge as [`Client::purge`], every field given (`all_namespaces`:
    /// of every namespace).
    ///
    /// # Errors
    /// Transport and daemon errors (`not_found`, `invalid_input`).
    pub async fn purge_request(
        &mut self,
        req: memd_proto::PurgeRequest,
    ) -> Result<memd_proto::PurgeReport> {
        match self.call(Request::Purge(req)).await? {
            Response::Purged(r) => Ok(r),
            other => Err(unexpected(&other)),
        }
    }

    /// Drops every stored vector and has the daemon re-embed every memory
    /// with its embedder, in the background (progress in `status`).
    ///
    /// # Errors
    /// [`Error::Daemon`] with code `not_configured` when the daemon has no
    /// ready embedder.
    pub async fn reembed(&mut self) -> Result<memd_proto::ReembedReport> {
        match self
            .call(Request::Reembed(memd_proto::ReembedRequest {}))
            .await?
        {
            Response::Reembedding(r) => Ok(r),
            other => Err(unexpected(&other)),
        }
    }

    /// Several searches in one request (semantic ones embedded in one
    /// batch, all read in one transaction); one result per search, in order.
    ///
    /// # Errors
    /// As [`Client::search`]; the first invalid search fails the batch.
    pub async fn search_batch(
        &mut self,
        searches: Vec<SearchRequest>,
    ) -> Result<Vec<SearchResult>> {
        match self
            .call(Request::SearchBatch(memd_proto::SearchBatchRequest {
                searches,
            }))
            .await?
        {
            Response::HitsBatch(r) => Ok(r.results),
            other => Err(unexpected(&other)),
        }
    }

    /// The named sessions of this session's namespace.
    ///
    /// # Errors
    /// The daemon's errors.
    pub async fn session_list(&mut self) -> Result<memd_proto::SessionList> {
        match self
            .call(Request::SessionList(
                memd_proto::SessionListRequest::default(),
            ))
            .await?
        {
            Response::Sessions(r) => Ok(r),
            other => Err(unexpected(&other)),
        }
    }

    /// Shares `namespace` with the team: uploads its memories to the
    /// team's PostgreSQL (idempotent by uid).
    ///
    /// # Errors
    /// The daemon's error (team memory off, namespace not shared,
    /// PostgreSQL unreachable).
    pub async fn team_push(&mut self, namespace: &str) -> Result<memd_proto::TeamPushReport> {
        match self
            .call(Request::TeamPush(memd_proto::TeamPushRequest {
                namespace: namespace.to_string(),
            }))
            .await?
        {
            Response::TeamPushed(r) => Ok(r),
            other => Err(unexpected(&other)),
        }
    }

    /// Wakes the daemon's team pull and waits until it reconnected and
    /// caught up, or failed to (`memd team init` asks it of the local
    /// daemon).
    ///
    /// # Errors
    /// Connection errors.
    pub async fn team_sync(&mut self) -> Result<memd_proto::TeamSyncReport> {
        match self
            .call(Request::TeamSync(memd_proto::TeamSyncRequest {}))
            .await?
        {
            Response::TeamSynced(r) => Ok(r),
            other => Err(unexpected(&other)),
        }
    }

    /// Opens the viewer's loopback listener when it is not open (with
    /// `new_token`, after making a new token); its address and a one-time
    /// login code for a browser.
    ///
    /// # Errors
    /// The daemon's error (the listener could not start).
    pub async fn ui(&mut self, new_token: bool) -> Result<memd_proto::UiReport> {
        match self
            .call(Request::Ui(memd_proto::UiRequest { new_token }))
            .await?
        {
            Response::UiOpened(r) => Ok(r),
            other => Err(unexpected(&other)),
        }
    }

    /// Ends a named session of this namespace.
    ///
    /// # Errors
    /// [`Error::InvalidInput`] when no session has that name.
    pub async fn session_end(&mut self, name: &str) -> Result<memd_proto::SessionEnded> {
        match self
            .call(Request::SessionEnd(memd_proto::SessionEndRequest {
                name: name.to_string(),
            }))
            .await?
        {
            Response::SessionEnded(r) => Ok(r),
            other => Err(unexpected(&other)),
        }
    }

    /// Exports memories into `out` (JSON with every column, or Markdown).
    /// Returns what the daemon says of the export and the bytes written.
    ///
    /// # Errors
    /// I/O errors writing `out`, [`Error::InvalidInput`] for an unknown
    /// format.
    pub async fn export(
        &mut self,
        req: memd_proto::ExportRequest,
        out: impl std::io::Write,
    ) -> Result<(serde_json::Value, u64)> {
        match self.call(Request::Export(req)).await? {
            Response::Download(d) => self.download(d, out).await,
            other => Err(unexpected(&other)),
        }
    }

    /// A consistent online copy of the database (a SQLite file), written
    /// into `out` while writes go on.
    ///
    /// # Errors
    /// I/O errors writing `out`.
    pub async fn backup(&mut self, out: impl std::io::Write) -> Result<(serde_json::Value, u64)> {
        match self
            .call(Request::Backup(memd_proto::BackupRequest {}))
            .await?
        {
            Response::Download(d) => self.download(d, out).await,
            other => Err(unexpected(&other)),
        }
    }

    /// Has `hook` told, after each chunk an export or a backup receives,
    /// the bytes received so far and the download's size (a progress bar).
    pub fn on_download(&mut self, hook: impl FnMut(u64, u64) + Send + 'static) {
        self.on_download = Some(DownloadHook(Box::new(hook)));
    }

    async fn download(
        &mut self,
        d: memd_proto::DownloadInfo,
        mut out: impl std::io::Write,
    ) -> Result<(serde_json::Value, u64)> {
        let info = serde_json::from_str(&d.info)
            .map_err(|e| Error::Protocol(format!("download info is not JSON: {e}")))?;
        let mut offset = 0u64;
        loop {
            let req = memd_proto::FetchRequest {
                offset,
                len: memd_proto::UPLOAD_CHUNK as u32,
            };
            match self.call(Request::Fetch(req)).await? {
                Response::Chunk(c) => {
                    out.write_all(&c.data)?;
                    offset += c.data.len() as u64;
                    if let Some(DownloadHook(hook)) = &mut self.on_download {
                        hook(offset, d.size);
                    }
                    if c.eof {
                        break;
                    }
                    if c.data.is_empty() {
                        return Err(Error::Protocol("the download stopped short".into()));
                    }
                }
                other => return Err(unexpected(&other)),
            }
        }
        out.flush()?;
        if offset != d.size {
            return Err(Error::Protocol(format!(
                "downloaded {offset} bytes of {}",
                d.size
            )));
        }
        Ok((info, offset))
    }

    /// Imports an export or a drift backup read from `reader`: rows whose
    /// uid exists are skipped (or, with `replace`, overwritten — a
    /// destructive write under the drift rules).
    ///
    /// # Errors
    /// [`Error::InvalidInput`] for a file that is not an export or backup.
    pub async fn import(
        &mut self,
        reader: impl std::io::Read,
        replace: bool,
    ) -> Result<memd_proto::ImportReport> {
        self.upload(reader).await?;
        match self
            .call(Request::Import(memd_proto::ImportRequest { replace }))
            .await?
        {
            Response::Imported(r) => Ok(r),
            other => Err(unexpected(&other)),
        }
    }
}

fn read_full(reader: &mut impl std::io::Read, buf: &mut [u8]) -> std::io::Result<usize> {
    let mut n = 0;
    while n < buf.len() {
        match reader.read(&mut buf[n..]) {
            Ok(0) => break,
            Ok(k) => n += k,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(n)
}

fn unexpected(resp: &Response) -> Error {
    Error::Protocol(format!("unexpected response {resp:?}"))
}
