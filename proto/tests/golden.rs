//! Golden bytes: the checked-in encoding of every message kind. A failure
//! here means the wire format changed: if that is intended, bump
//! `PROTOCOL_VERSION` and re-bless with `MEMD_BLESS=1 cargo test -p memd-proto`.

use std::path::PathBuf;

use memd_proto::*;

fn memory() -> Memory {
    Memory {
        id: 42,
        uid: "0123456789abcdef0123456789abcdef".into(),
        namespace: "default".into(),
        scope: "agent".into(),
        scope_owner: Some("agent-7".into()),
        content: "The deploy script lives in ops/deploy.sh".into(),
        subject: Some("deploy".into()),
        category: "fact".into(),
        tier: 1,
        importance: "high".into(),
        confidence: 0.75,
        pinned: true,
        status: "promoted".into(),
        metadata: r#"{"port":5432}"#.into(),
        tags: vec!["ops".into(), "deploy".into()],
        superseded_by: None,
        superseded_at: None,
        dedupe_key: Some("the deploy script lives in ops deploy sh".into()),
        observation_count: 2,
        confirmed_count: 1,
        last_confirmed_at: Some("2026-06-07T18:00:00.000Z".into()),
        use_count: 3,
        last_used_at: Some("2026-06-07T18:00:01.000Z".into()),
        access_score: 0.5,
        source: "agent".into(),
        created_by: Some("agent-7".into()),
        expires_at: None,
        created_at: "2026-06-07T17:00:00.000Z".into(),
        updated_at: "2026-06-07T17:30:00.000Z".into(),
        rev: 3,
        changed_generation: 9,
        thread: Some("deploy-review".into()),
        thread_pos: Some(4),
        occurred_at: Some("2026-06-07T16:00:00.000Z".into()),
        turn: None,
        provenance: Some(Provenance::of(vec![
            Origin {
                source: "user".into(),
                via: Some("cli".into()),
                agent: Some("default".into()),
                session: Some("s-1".into()),
                machine: None,
                role: None,
                at: "2026-06-07T17:00:00.000Z".into(),
            },
            Origin {
                source: "agent".into(),
                via: Some("team".into()),
                agent: Some("agent-7".into()),
                session: None,
                machine: Some("bob-laptop".into()),
                role: Some("bob".into()),
                at: "2026-06-07T17:20:00.000Z".into(),
            },
        ])),
    }
}

fn filter() -> Filter {
    Filter {
        namespaces: vec!["other".into()],
        all_namespaces: false,
        scope: Some("project".into()),
        category: Some("fact".into()),
        subject: None,
        tags: vec!["ops".into()],
        tags_any: true,
        meta: vec![("port".into(), "5432".into())],
        since: Some("7d".into()),
        until: None,
        updated_since: Some("2026-01-01T00:00:00Z".into()),
        updated_until: None,
        include_superseded: true,
        include_archived: false,
        status: None,
        created_by: Some("claude-code".into()),
        tier: Some(1),
        source: None,
    }
}

fn requests() -> Vec<(&'static str, Request)> {
    vec![
        (
            "req_hello",
            Request::Hello(Hello {
                protocol: PROTOCOL_VERSION,
                client_version: "0.1.0".into(),
                agent_id: "agent-7".into(),
                namespace: "default".into(),
                policy: Some(DriftPolicy::Strict),
                budget: Some(4000),
                seen_generation: Some(17),
                session: Some("claude-code:4f1c".into()),
                hold_block: true,
                previous_namespaces: vec!["api-6eacb40f".into(), "shop-1f0c3a9e".into()],
            }),
        ),
        (
            "req_add",
            Request::Add(AddRequest {
                content: "Use tabs in Makefiles".into(),
                category: Some("convention".into()),
                subject: None,
                tags: vec!["build".into()],
                scope: Some("project".into()),
                tier: Some(2),
                pinned: false,
                importance: None,
                status: None,
                confidence: Some(0.9),
                expires: Some("7d".into()),
                supersedes: Some(3),
                metadata: Some(r#"{"k":"v"}"#.into()),
                thread: Some("build-chat".into()),
                position: Some(7),
                occurred_at: Some("2026-06-07".into()),
            }),
        ),
        (
            "req_get",
            Request::Get(GetRequest {
                id: 42,
                include_inactive: true,
            }),
        ),
        (
            "req_list",
            Request::List(ListRequest {
                filter: filter(),
                limit: 20,
                offset: 40,
            }),
        ),
        (
            "req_update",
            Request::Update(UpdateRequest {
                id: 42,
                content: Some("new text".into()),
                tags: Some(vec!["a".into()]),
                pinned: Some(false),
                expect_rev: Some(3),
                ..Default::default()
            }),
        ),
        (
            "req_forget",
            Request::Forget(ForgetRequest {
                id: 42,
                expect_rev: None,
            }),
        ),
        (
            "req_search",
            Request::Search(SearchRequest {
                query: "deploy script".into(),
                filter: filter(),
                limit: 10,
                mode: SearchMode::Auto,
                syntax: QuerySyntax::Fts,
                explain: true,
                offset: 0,
            }),
        ),
        ("req_status", Request::Status(StatusRequest {})),
        ("req_stop", Request::Stop(StopRequest {})),
        ("req_subscribe", Request::Subscribe(SubscribeRequest {})),
        ("req_check", Request::Check(CheckRequest {})),
        (
            "req_upload",
            Request::Upload(UploadChunk {
                data: vec![0, 1, 2, 255],
                reset: true,
            }),
        ),
        ("req_restore", Request::Restore(RestoreRequest {})),
        ("req_reembed", Request::Reembed(ReembedRequest {})),
        (
            "req_search_batch",
            Request::SearchBatch(SearchBatchRequest {
                searches: vec![SearchRequest {
                    query: "what does the user drink?".into(),
                    filter: Filter::default(),
                    limit: 5,
                    mode: SearchMode::Hybrid,
                    syntax: QuerySyntax::Plain,
                    explain: false,
                    offset: 0,
                }],
            }),
        ),
        (
            "req_session_list",
            Request::SessionList(SessionListRequest::default()),
        ),
        (
            "req_session_end",
            Request::SessionEnd(SessionEndRequest {
                name: "claude-code:4f1c".into(),
            }),
        ),
        ("req_inject", Request::Inject(InjectRequest {})),
        ("req_compacted", Request::Compacted(CompactedRequest {})),
        ("req_refresh", Request::Refresh(RefreshRequest {})),
        (
            "req_supersede",
            Request::Supersede(SupersedeRequest { old: 3, new: 4 }),
        ),
        ("req_history", Request::History(HistoryRequest { id: 42 })),
        ("req_confirm", Request::Confirm(ConfirmRequest { id: 42 })),
        (
            "req_prune",
            Request::Prune(PruneRequest {
                dry_run: true,
                all_namespaces: false,
            }),
        ),
        (
            "req_task",
            Request::Task(TaskRequest {
                id: 42,
                status: "in_progress".into(),
                expect_rev: Some(2),
            }),
        ),
        ("req_sweep", Request::Sweep(SweepRequest { dry_run: true })),
        (
            "req_export",
            Request::Export(ExportRequest {
                format: "json".into(),
                namespaces: vec!["default".into(), "other".into()],
                all_namespaces: false,
                top: 20,
            }),
        ),
        ("req_backup", Request::Backup(BackupRequest {})),
        (
            "req_fetch",
            Request::Fetch(FetchRequest {
                offset: 1 << 20,
                len: 65_536,
            }),
        ),
        (
            "req_import",
            Request::Import(ImportRequest { replace: true }),
        ),
        (
            "req_team_push",
            Request::TeamPush(TeamPushRequest {
                namespace: "github.com/acme/api".into(),
            }),
        ),
        ("req_team_sync", Request::TeamSync(TeamSyncRequest {})),
        ("req_ui", Request::Ui(UiRequest { new_token: true })),
        (
            "req_capture",
            Request::Capture(CaptureRequest {
                host: "claude-code".into(),
                session: "4f1c".into(),
                file: "2049:1234".into(),
                path: "/home/a/.claude/projects/p/4f1c.jsonl".into(),
                from: 1024,
                to: 4096,
                turns: vec![CapturedTurn {
                    id: "u1".into(),
                    speaker: "User".into(),
                    text: "where do the deploy scripts live?".into(),
                    at: Some("2026-06-07T18:00:00Z".into()),
                }],
                invalid_lines: 1,
                error: None,
            }),
        ),
        (
            "req_capture_status",
            Request::CaptureStatus(CaptureStatusRequest {
                host: Some("claude-code".into()),
                session: None,
            }),
        ),
        (
            "req_capture_forget",
            Request::CaptureForget(CaptureForgetRequest {
                host: "claude-code".into(),
                session: "4f1c".into(),
            }),
        ),
        (
            "req_session_show",
            Request::SessionShow(SessionShowRequest {
                namespace: "github.com/acme/api".into(),
                name: "claude-code:4f1c".into(),
            }),
        ),
        (
            "req_purge",
            Request::Purge(PurgeRequest {
                id: None,
                matching: Some("AKIA".into()),
                confirm: true,
                all_namespaces: true,
            }),
        ),
        ("req_locate", Request::Locate(LocateRequest { id: 42 })),
        (
            "req_forget_where",
            Request::ForgetWhere(ForgetWhereRequest {
                thread: Some("session 1".into()),
                source: Some("ingest".into()),
                dry_run: true,
            }),
        ),
        (
            "req_citations",
            Request::Citations(memd_proto::cite::CitationsRequest {
                personal: true,
                id: None,
            }),
        ),
        (
            "req_verdicts",
            Request::Verdicts(memd_proto::cite::VerdictReport {
                checked: vec![golden_checked()],
            }),
        ),
    ]
}

fn golden_cite() -> memd_proto::cite::Cite {
    memd_proto::cite::Cite {
        path: "src/billing/webhooks.rs".into(),
        start: Some(40),
        end: Some(44),
        hash: Some("9f86d081884c7d65".into()),
        commit: Some("0123abcd".into()),
    }
}

fn golden_checked() -> memd_proto::cite::Checked {
    memd_proto::cite::Checked {
        id: 42,
        cite: golden_cite(),
        verdict: memd_proto::cite::Verdict::Moved,
        now: Some(memd_proto::cite::Cite {
            start: Some(50),
            end: Some(54),
            commit: None,
            ..golden_cite()
        }),
        reason: None,
    }
}

fn responses() -> Vec<(&'static str, Response)> {
    vec![
        (
            "resp_welcome",
            Response::Welcome(Welcome {
                session_id: "ab".repeat(16),
                generation: 17,
                server_version: "0.1.0".into(),
                protocol: PROTOCOL_VERSION,
            }),
        ),
        (
            "resp_added",
            Response::Added(AddResult {
                accepted: true,
                id: Some(42),
                deduped: false,
                merged_into: None,
                similar_to: Some(7),
                reason: None,
                drift: Some(DriftNotice {
                    generation_observed: 4,
                    generation_actual: 7,
                }),
                generation: 8,
                proposal: Some(3),
            }),
        ),
        (
            "resp_memory",
            Response::Memory(Box::new(MemoryReply {
                memory: memory(),
                generation: 9,
                proposal: None,
            })),
        ),
        (
            "resp_memories",
            Response::Memories(MemoryList {
                memories: vec![memory()],
                generation: 9,
            }),
        ),
        (
            "resp_forgotten",
            Response::Forgotten(ForgetResult {
                id: 42,
                generation: 10,
                proposal: None,
            }),
        ),
        (
            "resp_hits",
            Response::Hits(SearchResult {
                hits: vec![Hit {
                    memory: memory(),
                    score: 1.5,
                    matched: MatchKind::Lexical,
                    explain: Some(r#"{"bm25":1.5}"#.into()),
                    relevance: None,
                }],
                generation: 9,
                mode: SearchMode::Lexical,
            }),
        ),
        (
            "resp_status",
            Response::Status(StatusReply {
                json: r#"{"version":"0.1.0"}"#.into(),
            }),
        ),
        ("resp_stopping", Response::Stopping),
        (
            "resp_error",
            Response::Error(ErrorBody {
                code: ErrorCode::Drift,
                message: "refused".into(),
                reason: None,
                current_rev: Some(3),
                drift: Some(DriftDetails {
                    drift_backup: "/d/memory.bak.1.json".into(),
                    remediation: "read again".into(),
                    generation_observed: 4,
                    generation_actual: 7,
                    rule: DriftRule::External,
                    row: None,
                }),
                operation_id: None,
            }),
        ),
        (
            "resp_error_outcome_unknown",
            Response::Error(ErrorBody {
                operation_id: Some("4f1c2a9e".into()),
                ..ErrorBody::new(ErrorCode::TeamOutcomeUnknown, "may have been applied")
            }),
        ),
        ("resp_subscribed", Response::Subscribed),
        (
            "resp_checked",
            Response::Checked(CheckReport {
                ok: false,
                integrity: vec!["ok".into()],
                fts_integrity: vec!["fts5: checksum mismatch for table memories_fts".into()],
                memories: 12,
                fts_rows: 11,
                fts_out_of_sync: 1,
                fts_orphans: 0,
                missing_objects: vec!["memories_ai".into()],
                schema_version: 9,
                generation: 40,
            }),
        ),
        (
            "resp_uploaded",
            Response::Uploaded(UploadAck { received: 4 }),
        ),
        (
            "resp_event",
            Response::Event(Event::Drift(DriftEvent {
                generation: 9,
                external_epoch: 9,
                at: "2026-06-07T18:00:00.000Z".into(),
                reason: "external write".into(),
            })),
        ),
        (
            "resp_hits_batch",
            Response::HitsBatch(SearchBatchResult {
                results: vec![SearchResult {
                    hits: vec![Hit {
                        memory: memory(),
                        score: 0.5,
                        matched: MatchKind::Hybrid,
                        explain: None,
                        relevance: Some(0.625),
                    }],
                    generation: 7,
                    mode: SearchMode::Hybrid,
                }],
            }),
        ),
        (
            "resp_event_similar",
            Response::Event(Event::Similar(SimilarEvent {
                namespace: "default".into(),
                id: 43,
                similar_to: 42,
                cosine: 0.95,
                superseded: false,
            })),
        ),
        (
            "resp_injected",
            Response::Injected(Injection {
                block: "## Memory\n\n### Facts\n- The deploy script lives in ops/deploy.sh\n"
                    .into(),
                hash: "0f".repeat(16),
                built_at_generation: 9,
                stats: InjectStats {
                    included: 1,
                    eligible: 2,
                    chars: 60,
                    budget: 4000,
                    cached: true,
                },
            }),
        ),
        ("resp_invalidated", Response::Invalidated),
        (
            "resp_superseded",
            Response::Superseded(SupersedeResult {
                old: 3,
                new: 4,
                generation: 11,
            }),
        ),
        (
            "resp_history",
            Response::History(History {
                chain: vec![memory()],
                revisions: vec![Revision {
                    rev_id: 5,
                    memory_id: 42,
                    op: "update".into(),
                    rev: Some(2),
                    tags: Some(vec!["ops".into()]),
                    content: Some("The deploy script lived in ops/old.sh".into()),
                    subject: None,
                    category: Some("fact".into()),
                    tier: Some(2),
                    status: Some("promoted".into()),
                    metadata: Some("{}".into()),
                    superseded_by: None,
                    updated_at: Some("2026-06-07T17:10:00.000Z".into()),
                    recorded_at: "2026-06-07T17:30:00.000Z".into(),
                    generation: Some(6),
                }],
                generation: 11,
                authors: vec![VersionAuthor {
                    memory_id: 42,
                    rev: 3,
                    changed_by: ChangedBy {
                        kind: ChangeKind::Session,
                        agent: Some("agent-8".into()),
                        session: Some("s-2".into()),
                        machine: None,
                    },
                }],
            }),
        ),
        (
            "resp_pruned",
            Response::Pruned(PruneResult {
                ids: vec![7, 8],
                dry_run: false,
                generation: 12,
            }),
        ),
        (
            "resp_download",
            Response::Download(DownloadInfo {
                size: 1 << 20,
                info: r#"{"generation":12}"#.into(),
            }),
        ),
        (
            "resp_chunk",
            Response::Chunk(Chunk {
                data: b"SQLite format 3\0".to_vec(),
                eof: false,
            }),
        ),
        (
            "resp_error_row",
            Response::Error(ErrorBody {
                code: ErrorCode::Drift,
                message: "refused: memory 42 changed".into(),
                reason: None,
                current_rev: None,
                drift: Some(DriftDetails {
                    drift_backup: String::new(),
                    remediation: "get 42".into(),
                    generation_observed: 8,
                    generation_actual: 9,
                    rule: DriftRule::Row,
                    row: Some(Box::new(RowDrift {
                        current: memory(),
                        changed_by: ChangedBy {
                            kind: ChangeKind::Session,
                            agent: Some("agent-8".into()),
                            session: Some("s-2".into()),
                            machine: Some("build-server".into()),
                        },
                        changed_at: "2026-06-07T17:30:00.000Z".into(),
                        rev_seen: Some(2),
                        rev_now: 3,
                    })),
                }),
                operation_id: None,
            }),
        ),
        (
            "resp_swept",
            Response::Swept(SweepReport {
                trigger: "manual".into(),
                dry_run: true,
                started_at: "2026-06-07T18:00:00.000Z".into(),
                ended_at: "2026-06-07T18:00:00.250Z".into(),
                counts: SweepCounts {
                    decayed: 7,
                    demoted: 1,
                    archived: 2,
                    promoted: 3,
                    limited: 0,
                    expired: 4,
                    sessions: 5,
                },
            }),
        ),
        (
            "resp_imported",
            Response::Imported(ImportReport {
                read: 6,
                inserted: 3,
                skipped: 1,
                replaced: 0,
                links: 2,
                dangling_links: 1,
                invalid: 1,
                errors: vec!["entry at byte 812: missing content".into()],
            }),
        ),
        (
            "resp_restored",
            Response::Restored(RestoreReport {
                bytes: 1_048_576,
                generation_in_file: 30,
                generation: 61,
            }),
        ),
        (
            "resp_reembedding",
            Response::Reembedding(ReembedReport {
                model: "ollama:bag-24".into(),
                dim: 24,
                previous_model: Some("ollama:bag-16".into()),
                previous_dim: Some(16),
                pending: 2,
            }),
        ),
        (
            "resp_sessions",
            Response::Sessions(SessionList {
                sessions: vec![NamedSessionInfo {
                    namespace: "default".into(),
                    name: "claude-code:4f1c".into(),
                    agent: "claude-code".into(),
                    connections: 2,
                    idle_secs: 0,
                    seen_generation: 17,
                    has_block: true,
                }],
            }),
        ),
        (
            "resp_session_ended",
            Response::SessionEnded(SessionEnded {
                ended: "claude-code:4f1c".into(),
                connections: 1,
            }),
        ),
        (
            "resp_team_pushed",
            Response::TeamPushed(TeamPushReport {
                namespace: "github.com/acme/api".into(),
                pushed: 9_998,
                already: 2,
                merged: 1,
            }),
        ),
        (
            "resp_session_shown",
            Response::SessionShown(Box::new(SessionDetail {
                info: NamedSessionInfo {
                    namespace: "default".into(),
                    name: "claude-code:4f1c".into(),
                    agent: "claude-code".into(),
                    connections: 1,
                    idle_secs: 30,
                    seen_generation: 12,
                    has_block: true,
                },
                policy: DriftPolicy::Standard,
                hold_block: true,
                block: Some(Injection {
                    block: "## Memory\n".into(),
                    hash: "0123456789abcdef".into(),
                    built_at_generation: 11,
                    stats: InjectStats {
                        included: 0,
                        eligible: 0,
                        chars: 10,
                        budget: 4000,
                        cached: true,
                    },
                }),
                built_at: Some("2026-06-07T18:00:00.000Z".into()),
                block_rows: vec![(3, 2)],
                read_set_rows: 4,
            })),
        ),
        (
            "resp_ui_opened",
            Response::UiOpened(UiReport {
                address: "127.0.0.1:7420".into(),
                code: "0123456789abcdef".into(),
                expires_secs: 120,
            }),
        ),
        (
            "resp_captured",
            Response::Captured(CaptureReport {
                stored: 3,
                existing: 1,
                redactions: 1,
                marked: 0,
                offset: 4096,
                stale: false,
            }),
        ),
        (
            "resp_capture_states",
            Response::CaptureStates(CaptureStates {
                sessions: vec![CaptureState {
                    host: "claude-code".into(),
                    session: "4f1c".into(),
                    namespace: "github.com/acme/api".into(),
                    file: "2049:1234".into(),
                    path: "/p/4f1c.jsonl".into(),
                    offset: 4096,
                    turns: 12,
                    bytes: 2048,
                    redactions: 1,
                    marked: 0,
                    invalid_lines: 0,
                    last_at: Some("2026-06-07T18:00:00.000Z".into()),
                    last_error: None,
                }],
            }),
        ),
        (
            "resp_capture_forgotten",
            Response::CaptureForgotten(CaptureForgotten { turns: 12 }),
        ),
        (
            "resp_team_synced",
            Response::TeamSynced(TeamSyncReport {
                configured: true,
                synced: false,
                last_error: Some("connection refused".into()),
            }),
        ),
        (
            "resp_purged",
            Response::Purged(PurgeReport {
                targets: vec![PurgeTarget {
                    id: Some(7),
                    uid: "0123456789abcdef0123456789abcdef".into(),
                    namespace: "default".into(),
                    preview: "the key is AKIA…".into(),
                    revisions: 2,
                }],
                purged: true,
                blocks_rebuilt: 1,
                backups_rewritten: 0,
                not_rewritten: Vec::new(),
                scrubbed: true,
                generation: 12,
            }),
        ),
        (
            "resp_event_purged",
            Response::Event(Event::Purged(PurgedEvent {
                ids: vec![7, 9],
                block_dropped: true,
                generation: 12,
            })),
        ),
        (
            "resp_located",
            Response::Located(LocateReply {
                id: 42,
                namespace: "github.com/acme/api".into(),
            }),
        ),
        (
            "resp_forgotten_where",
            Response::ForgottenWhere(ForgottenWhere {
                ids: vec![7, 9],
                dry_run: false,
                generation: 12,
            }),
        ),
        (
            "resp_citations",
            Response::Citations(memd_proto::cite::CitationList {
                memories: vec![memd_proto::cite::Cited {
                    id: 42,
                    namespace: "github.com/acme/api".into(),
                    preview: "The retry limit is set in webhooks.rs".into(),
                    cites: vec![golden_cite()],
                    last: vec![memd_proto::cite::LastVerdict {
                        checked: golden_checked(),
                        at: "2026-12-07T06:00:00.000Z".into(),
                    }],
                }],
            }),
        ),
        (
            "resp_verdicts_recorded",
            Response::VerdictsRecorded(memd_proto::cite::VerdictsRecorded { recorded: 1 }),
        ),
    ]
}

fn hex(bytes: &[u8]) -> String {
    let mut out = String::new();
    for (i, chunk) in bytes.chunks(32).enumerate() {
        if i > 0 {
            out.push('\n');
        }
        for b in chunk {
            out.push_str(&format!("{b:02x}"));
        }
    }
    out.push('\n');
    out
}

fn check(name: &str, bytes: &[u8]) {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/golden")
        .join(format!("{name}.hex"));
    if std::env::var_os("MEMD_BLESS").is_some() {
        std::fs::write(&path, hex(bytes)).unwrap();
        return;
    }
    let want = std::fs::read_to_string(&path).unwrap_or_else(|_| {
        panic!(
            "{} is missing: run MEMD_BLESS=1 cargo test -p memd-proto",
            path.display()
        )
    });
    assert_eq!(
        hex(bytes),
        want,
        "the encoding of {name} changed: bump PROTOCOL_VERSION and re-bless"
    );
}

/// The position of a request kind in the enum. The match has no catch-all:
/// a new kind does not compile here until it is listed, and then the
/// completeness test wants golden bytes for it.
fn request_kind(r: &Request) -> usize {
    match r {
        Request::Hello(_) => 0,
        Request::Add(_) => 1,
        Request::Get(_) => 2,
        Request::List(_) => 3,
        Request::Update(_) => 4,
        Request::Forget(_) => 5,
        Request::Search(_) => 6,
        Request::Status(_) => 7,
        Request::Stop(_) => 8,
        Request::Subscribe(_) => 9,
        Request::Check(_) => 10,
        Request::Upload(_) => 11,
        Request::Restore(_) => 12,
        Request::Inject(_) => 13,
        Request::Compacted(_) => 14,
        Request::Refresh(_) => 15,
        Request::Supersede(_) => 16,
        Request::History(_) => 17,
        Request::Confirm(_) => 18,
        Request::Prune(_) => 19,
        Request::Task(_) => 20,
        Request::Sweep(_) => 21,
        Request::Export(_) => 22,
        Request::Backup(_) => 23,
        Request::Fetch(_) => 24,
        Request::Import(_) => 25,
        Request::Reembed(_) => 26,
        Request::SearchBatch(_) => 27,
        Request::SessionList(_) => 28,
        Request::SessionEnd(_) => 29,
        Request::TeamPush(_) => 30,
        Request::TeamSync(_) => 31,
        Request::SessionShow(_) => 32,
        Request::Ui(_) => 33,
        Request::Capture(_) => 34,
        Request::CaptureStatus(_) => 35,
        Request::CaptureForget(_) => 36,
        Request::Purge(_) => 37,
        Request::Locate(_) => 38,
        Request::ForgetWhere(_) => 39,
        Request::Citations(_) => 40,
        Request::Verdicts(_) => 41,
    }
}
const REQUEST_KINDS: usize = 42;

#[test]
fn request_kinds_are_listed_in_tag_order() {
    assert_eq!(Request::KINDS.len(), REQUEST_KINDS);
    for (name, req) in requests() {
        assert_eq!(
            Request::KINDS[request_kind(&req)],
            req.kind(),
            "{name}: Request::KINDS is out of the enum's order"
        );
    }
}

#[test]
fn an_unknown_request_kind_is_told_by_its_tag() {
    // A frame from a newer peer: id 7, then a tag past the last kind.
    let mut body = encode(&Frame {
        id: 7,
        body: Request::Status(StatusRequest {}),
    })
    .unwrap()[HEADER_LEN..]
        .to_vec();
    // id 7 is one byte; the tag follows.
    body[1] = u8::try_from(REQUEST_KINDS).unwrap();
    match decode_request(&body) {
        Err(CodecError::UnknownKind { index, known }) => {
            assert_eq!(index as usize, REQUEST_KINDS);
            assert_eq!(known, REQUEST_KINDS);
        }
        other => panic!("expected UnknownKind, got {other:?}"),
    }
    // Garbage after a known tag is malformed, not unknown.
    body[1] = 2; // get
    body.truncate(2);
    assert!(matches!(
        decode_request(&body),
        Err(CodecError::Malformed(_))
    ));
}

/// As [`request_kind`], for responses (events by their own kind).
fn response_kind(r: &Response) -> usize {
    match r {
        Response::Welcome(_) => 0,
        Response::Added(_) => 1,
        Response::Memory(_) => 2,
        Response::Memories(_) => 3,
        Response::Forgotten(_) => 4,
        Response::Hits(_) => 5,
        Response::Status(_) => 6,
        Response::Stopping => 7,
        Response::Error(_) => 8,
        Response::Subscribed => 9,
        Response::Checked(_) => 10,
        Response::Uploaded(_) => 11,
        Response::Event(Event::Drift(_)) => 12,
        Response::Event(Event::Similar(_)) => 13,
        Response::Event(Event::Purged(_)) => 36,
        Response::Injected(_) => 14,
        Response::Invalidated => 15,
        Response::Superseded(_) => 16,
        Response::History(_) => 17,
        Response::Pruned(_) => 18,
        Response::Download(_) => 19,
        Response::Chunk(_) => 20,
        Response::HitsBatch(_) => 21,
        Response::Swept(_) => 22,
        Response::Imported(_) => 23,
        Response::Restored(_) => 24,
        Response::Reembedding(_) => 25,
        Response::Sessions(_) => 26,
        Response::SessionEnded(_) => 27,
        Response::TeamPushed(_) => 28,
        Response::TeamSynced(_) => 29,
        Response::SessionShown(_) => 30,
        Response::UiOpened(_) => 31,
        Response::Captured(_) => 32,
        Response::CaptureStates(_) => 33,
        Response::CaptureForgotten(_) => 34,
        Response::Purged(_) => 35,
        Response::Located(_) => 37,
        Response::ForgottenWhere(_) => 38,
        Response::Citations(_) => 39,
        Response::VerdictsRecorded(_) => 40,
    }
}
const RESPONSE_KINDS: usize = 41;

#[test]
fn golden_bytes_cover_every_message_kind() {
    let mut seen: Vec<usize> = requests().iter().map(|(_, r)| request_kind(r)).collect();
    seen.sort_unstable();
    seen.dedup();
    assert_eq!(seen, (0..REQUEST_KINDS).collect::<Vec<_>>(), "requests");
    let mut seen: Vec<usize> = responses().iter().map(|(_, r)| response_kind(r)).collect();
    seen.sort_unstable();
    seen.dedup();
    assert_eq!(seen, (0..RESPONSE_KINDS).collect::<Vec<_>>(), "responses");
}

#[test]
fn every_request_kind_matches_its_golden_bytes() {
    for (i, (name, req)) in requests().into_iter().enumerate() {
        let frame = Frame {
            id: i as u64 + 1,
            body: req,
        };
        let bytes = encode(&frame).unwrap();
        check(name, &bytes);
        let back: Frame<Request> = decode(&bytes[HEADER_LEN..]).unwrap();
        assert_eq!(back, frame, "{name} round trip");
    }
}

#[test]
fn every_response_kind_matches_its_golden_bytes() {
    for (i, (name, resp)) in responses().into_iter().enumerate() {
        let frame = Frame {
            id: i as u64 + 1,
            body: resp,
        };
        let bytes = encode(&frame).unwrap();
        check(name, &bytes);
        let back: Frame<Response> = decode(&bytes[HEADER_LEN..]).unwrap();
        assert_eq!(back, frame, "{name} round trip");
    }
}

#[test]
fn preamble_is_magic_and_version() {
    let p = preamble();
    assert_eq!(&p[..4], b"MEMD");
    assert_eq!(
        u32::from_be_bytes([p[4], p[5], p[6], p[7]]),
        PROTOCOL_VERSION
    );
    check("preamble", &p);
    assert_eq!(parse_preamble(&p).unwrap(), PROTOCOL_VERSION);
    assert!(matches!(
        parse_preamble(b"HTTP/1.1"),
        Err(CodecError::BadMagic)
    ));
    assert!(matches!(
        check_version(PROTOCOL_VERSION + 1),
        Err(CodecError::VersionMismatch { .. })
    ));
}

#[test]
fn frame_limits_are_enforced_both_ways() {
    assert!(matches!(frame_len([0, 0, 0, 0]), Err(CodecError::Empty)));
    assert_eq!(frame_len([0, 0, 1, 0]).unwrap(), 256);
    let over = (MAX_FRAME_LEN as u32 + 1).to_be_bytes();
    assert!(matches!(frame_len(over), Err(CodecError::TooLarge { .. })));
    let huge = Frame {
        id: 1,
        body: Request::Add(AddRequest {
            content: "x".repeat(MAX_FRAME_LEN + 1),
            ..Default::default()
        }),
    };
    assert!(matches!(encode(&huge), Err(CodecError::TooLarge { .. })));
}

#[test]
fn malformed_bodies_are_errors_not_panics() {
    let good = encode(&Frame {
        id: 5,
        body: Request::Get(GetRequest {
            id: 1,
            include_inactive: false,
        }),
    })
    .unwrap();
    let body = &good[HEADER_LEN..];
    for cut in 0..body.len() {
        assert!(decode::<Request>(&body[..cut]).is_err(), "prefix {cut}");
    }
    let mut trailing = body.to_vec();
    trailing.push(0);
    assert!(matches!(
        decode::<Request>(&trailing),
        Err(CodecError::Trailing(1))
    ));
    assert_eq!(peek_id(body), Some(5));
    // A length inside the message larger than the frame cannot allocate it.
    let mut lie = vec![1u8, 1]; // id 1, Add
    lie.extend_from_slice(&[253, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f]);
    assert!(decode::<Request>(&lie).is_err());
}

#[test]
fn which_replies_move_a_sessions_seen_generation() {
    let reply = Response::Memory(Box::new(MemoryReply {
        memory: memory(),
        generation: 9,
        proposal: None,
    }));
    assert_eq!(reply.seen_generation("get"), Some(9), "a read");
    assert_eq!(reply.seen_generation("update"), None, "an own write");
    assert_eq!(reply.seen_generation("confirm"), None, "an own write");
    let download = Response::Download(DownloadInfo {
        size: 10,
        info: r#"{"entries":1,"generation":12}"#.into(),
    });
    assert_eq!(download.seen_generation("export"), Some(12));
    assert_eq!(download.seen_generation("backup"), None);
    let refusal = |rule| {
        Response::Error(ErrorBody {
            drift: Some(DriftDetails {
                drift_backup: String::new(),
                remediation: String::new(),
                generation_observed: 3,
                generation_actual: 5,
                rule,
                row: None,
            }),
            ..ErrorBody::new(ErrorCode::Drift, "refused")
        })
    };
    assert_eq!(
        refusal(DriftRule::External).seen_generation("update"),
        Some(5)
    );
    assert_eq!(refusal(DriftRule::Strict).seen_generation("add"), Some(5));
    assert_eq!(refusal(DriftRule::Row).seen_generation("update"), None);
    assert_eq!(
        Response::Error(ErrorBody::new(ErrorCode::NotFound, "no")).seen_generation("get"),
        None
    );
}
