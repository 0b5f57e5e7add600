//! Running one command over an open session: the request it makes, the
//! local files it reads or writes (the daemon never opens a path a client
//! names), and its result as an [`Output`].

use std::io::Read;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use memd_client::{
    AddRequest, Client, Filter, GetRequest, ListRequest, QuerySyntax, SearchMode, SearchRequest,
    UpdateRequest,
};
use serde_json::{Value, json};

use super::CommandError;
use super::args::{self, Command, FilterArgs, MemoryFields};
use super::output::{self, Output};
use super::progress::Progress;
use super::{cites, import_md, ingest};
use crate::config::Paths;

/// Reads content given as `-` (stdin) or `--file`.
fn content_from(
    text: Option<String>,
    file: Option<&Path>,
    stdin_allowed: bool,
) -> Result<Option<String>, CommandError> {
    let bytes = match (text.as_deref(), file) {
        (_, Some(path)) => std::fs::read(path)
            .map_err(|e| CommandError::Io(format!("cannot read {}: {e}", path.display())))?,
        (Some("-"), None) if stdin_allowed => {
            let mut buf = Vec::new();
            std::io::stdin()
                .read_to_end(&mut buf)
                .map_err(|e| CommandError::Io(format!("cannot read stdin: {e}")))?;
            buf
        }
        (Some("-"), None) => {
            return Err(CommandError::Usage(
                "`-` (stdin) is not available in the shell: use --file F or a JSON line".into(),
            ));
        }
        (other, None) => return Ok(other.map(str::to_string)),
    };
    String::from_utf8(bytes)
        .map(Some)
        .map_err(|_| CommandError::Usage("the content is not valid UTF-8".into()))
}

/// `ingest`: reads the transcript here, adds its turns one by one.
async fn ingest_file(
    a: args::IngestArgs,
    client: &mut Client,
    stdin_allowed: bool,
) -> Result<Output, CommandError> {
    let format = ingest::Format::parse(&a.format).map_err(CommandError::Usage)?;
    let from_stdin = a.file.as_os_str() == "-";
    let text = if from_stdin {
        content_from(Some("-".into()), None, stdin_allowed)?
    } else {
        content_from(None, Some(&a.file), stdin_allowed)?
    }
    .unwrap_or_default();
    let default_thread = a.thread.clone().unwrap_or_else(|| {
        if from_stdin {
            "stdin".into()
        } else {
            a.file
                .file_stem()
                .map_or_else(|| "transcript".into(), |s| s.to_string_lossy().into_owned())
        }
    });
    let parsed = ingest::parse(&text, format, &default_thread, a.category.as_deref());
    let counts = ingest::send(client, parsed).await?;
    Ok(output::ingested(&counts))
}

fn metadata_json(meta: &[(String, String)]) -> Option<String> {
    if meta.is_empty() {
        return None;
    }
    let obj: serde_json::Map<String, Value> = meta
        .iter()
        .map(|(k, v)| {
            let value = serde_json::from_str(v).unwrap_or_else(|_| Value::String(v.clone()));
            (k.clone(), value)
        })
        .collect();
    Some(Value::Object(obj).to_string())
}

fn filter(f: &FilterArgs) -> Filter {
    Filter {
        namespaces: f.namespaces.clone(),
        all_namespaces: f.all_namespaces,
        scope: f.scope.clone(),
        category: f.category.clone(),
        subject: f.subject.clone(),
        tags: if f.any_tags.is_empty() {
            f.tags.clone()
        } else {
            f.any_tags.clone()
        },
        tags_any: !f.any_tags.is_empty(),
        meta: f.meta.clone(),
        since: f.since.clone(),
        until: f.until.clone(),
        updated_since: f.updated_since.clone(),
        updated_until: f.updated_until.clone(),
        include_superseded: f.include_superseded,
        include_archived: f.include_archived,
        status: f.status.clone(),
        source: f.source.clone().filter(|s| s != "any"),
        ..Filter::default()
    }
}

/// The filter of `list`: without a source named, ingested turns are left
/// out — a transcript's thousands of turns are history, not notes, and
/// would fill the newest-first page (`--source ingest` lists them,
/// `--source any` everything).
fn list_filter(f: &FilterArgs) -> Filter {
    let mut filter = filter(f);
    if f.source.is_none() {
        filter.source = Some("!ingest".into());
    }
    filter
}

/// Whether a listing may span namespaces (its lines then name each one).
fn across(f: &FilterArgs) -> bool {
    f.all_namespaces || !f.namespaces.is_empty()
}

fn add_request(content: String, f: MemoryFields, supersedes: Option<i64>) -> AddRequest {
    AddRequest {
        thread: None,
        position: None,
        occurred_at: None,
        content,
        category: f.category,
        subject: f.subject,
        tags: f.tags,
        scope: f.scope,
        tier: f.tier,
        pinned: f.pin,
        importance: f.importance,
        status: f.status,
        confidence: f.confidence,
        expires: f.expires,
        supersedes,
        metadata: metadata_json(&f.meta),
    }
}

/// A capture session named `ID` or `HOST:ID` (a host is a name memd
/// knows; a session id has no `:`): the host and the id.
fn capture_session(name: Option<&str>) -> (Option<String>, Option<String>) {
    match name {
        None => (None, None),
        Some(n) => match n.split_once(':') {
            Some((host, id)) if !host.is_empty() => (Some(host.into()), Some(id.into())),
            _ => (None, Some(n.into())),
        },
    }
}

/// Runs one client command over an open session.
///
/// # Errors
/// [`CommandError`] with the exit code of the failure.
pub async fn execute(
    command: Command,
    client: &mut Client,
    paths: &Paths,
    stdin_allowed: bool,
) -> Result<Output, CommandError> {
    match command {
        // Memories.
        Command::Add(a) => add(a, client, stdin_allowed).await,
        Command::Get(a) => get(&a, client).await,
        Command::List(a) => list(&a, client).await,
        Command::Search(a) => search(a, client).await,
        Command::Update(a) => update(a, client, stdin_allowed).await,
        Command::Forget(a) => forget(&a, client).await,
        Command::Purge(a) => purge(client, &a, stdin_allowed).await,
        Command::Supersede(a) => Ok(output::superseded(&client.supersede(a.old, a.new).await?)),
        Command::History(a) => Ok(output::history(&client.history(a.id).await?)),
        Command::Confirm(a) => Ok(output::memory(
            &client.confirm(a.id).await?,
            None,
            Some("confirmed"),
        )),
        Command::Prune(a) => Ok(output::pruned(
            &client.prune(a.dry_run, a.all_namespaces).await?,
        )),
        Command::Task(t) => task(t, client, stdin_allowed).await,
        // The session's memory block.
        Command::Inject => Ok(output::injected(&cites::inject(client, None).await?)),
        Command::Compacted => {
            client.compacted().await?;
            Ok(output::invalidated())
        }
        Command::Refresh => {
            client.refresh().await?;
            Ok(output::invalidated())
        }
        // The daemon and its database.
        Command::Status => Ok(output::status(client.status().await?)),
        Command::Check(a) if a.citations => cites::check_output(client).await,
        Command::Check(_) => output::check(client.check().await?),
        Command::Sweep(a) => Ok(output::swept(&client.sweep(a.dry_run).await?)),
        Command::Reembed => reembed(client).await,
        // Named sessions and the team.
        Command::Session(args::SessionCommand::List) => {
            Ok(output::sessions(&client.session_list().await?))
        }
        Command::Session(args::SessionCommand::End { name }) => {
            Ok(output::session_ended(&client.session_end(&name).await?))
        }
        Command::Capture(c) => capture(c, client).await,
        Command::Team(args::TeamCommand::Status) => Ok(output::team_status(client.status().await?)),
        Command::Team(args::TeamCommand::Push { namespace }) => {
            let _waiting = Progress::waiting(&format!("pushing {namespace}"));
            Ok(output::team_pushed(&client.team_push(&namespace).await?))
        }
        // Files read or written here, streamed through the socket.
        Command::Export(a) => export(a, client).await,
        Command::Import(a) => import(&a, client).await,
        Command::Ingest(a) => ingest_file(a, client, stdin_allowed).await,
        Command::ImportMd(a) => import_markdown(a, client).await,
        Command::Backup(a) => backup(a, client).await,
        Command::Restore(a) => restore(&a, client).await,
        Command::Stop => stop(client, paths).await,
        Command::Socket => Ok(output::socket(&paths.socket)),
        Command::Ui(a) => ui(&a, client, paths).await,
        // Commands that open no session run elsewhere.
        Command::Shell
        | Command::Daemon
        | Command::Mcp
        | Command::Hook(_)
        | Command::Setup(_)
        | Command::Config(_)
        | Command::Team(
            args::TeamCommand::Init
            | args::TeamCommand::Grant { .. }
            | args::TeamCommand::Revoke { .. }
            | args::TeamCommand::Members
            | args::TeamCommand::ReviewRequired { .. }
            | args::TeamCommand::Cleanup { .. }
            | args::TeamCommand::Review(_),
        )
        | Command::Model(_)
        | Command::Service(_)
        | Command::Help(_)
        | Command::Completions(_)
        | Command::Man(_)
        | Command::Trust(_)
        | Command::Untrust(_)
        | Command::Doctor => Err(CommandError::Usage(
            "shell, daemon, mcp, hook, setup, config, model, service, trust, untrust, \
             doctor, completions and man cannot run inside a session"
                .into(),
        )),
    }
}

/// `memd forget ID`, or every memory of a thread or source.
async fn forget(a: &args::ForgetArgs, client: &mut Client) -> Result<Output, CommandError> {
    match a.id {
        Some(id) => Ok(output::forgotten(&client.forget(id, a.expect_rev).await?)),
        None => Ok(output::forgotten_where(
            &client
                .forget_where(a.thread.as_deref(), a.source.as_deref(), a.dry_run)
                .await?,
        )),
    }
}

/// `memd get`: the memory, its citations checked here.
async fn get(a: &args::GetArgs, client: &mut Client) -> Result<Output, CommandError> {
    let r = client
        .get_with(GetRequest {
            id: a.id,
            include_inactive: a.include_inactive,
        })
        .await?;
    let mut out = output::memory(&r.memory, Some(r.generation), None);
    cites::annotate_memory(&mut out, &r.memory, client).await;
    Ok(out)
}

/// `memd list`.
async fn list(a: &args::ListArgs, client: &mut Client) -> Result<Output, CommandError> {
    let r = client
        .list(ListRequest {
            filter: list_filter(&a.filter),
            limit: a.filter.limit,
            offset: a.offset,
        })
        .await?;
    Ok(output::list(&r, across(&a.filter)))
}

/// `memd capture status|forget`.
async fn capture(c: args::CaptureCommand, client: &mut Client) -> Result<Output, CommandError> {
    match c {
        args::CaptureCommand::Status { session } => {
            let (host, id) = capture_session(session.as_deref());
            Ok(output::capture_states(
                &client.capture_status(host, id).await?,
            ))
        }
        args::CaptureCommand::Forget { session } => {
            let (host, id) = capture_session(Some(&session));
            let turns = client
                .capture_forget(host.as_deref().unwrap_or_default(), &id.unwrap_or_default())
                .await?;
            Ok(output::capture_forgotten(&session, turns))
        }
    }
}

/// `memd import FILE`: uploaded with a progress bar.
async fn import(a: &args::ImportArgs, client: &mut Client) -> Result<Output, CommandError> {
    let file = open(&a.file)?;
    let progress = Progress::bytes(
        file.metadata().map_or(0, |m| m.len()),
        &format!("uploading {}", a.file.display()),
    );
    let report = client
        .import(progress.reader(file, "importing"), a.replace)
        .await?;
    progress.finish();
    Ok(output::imported(&report))
}

/// `memd restore FILE`: uploaded with a progress bar.
async fn restore(a: &args::RestoreArgs, client: &mut Client) -> Result<Output, CommandError> {
    let file = open(&a.file)?;
    let progress = Progress::bytes(
        file.metadata().map_or(0, |m| m.len()),
        &format!("uploading {}", a.file.display()),
    );
    let report = client.restore(progress.reader(file, "restoring")).await?;
    progress.finish();
    Ok(output::restored(&report))
}

/// `memd ui`: the viewer's address with a one-time code, opened in a
/// browser unless asked not to.
async fn ui(a: &args::UiArgs, client: &mut Client, paths: &Paths) -> Result<Output, CommandError> {
    let r = client.ui(a.new_token).await?;
    let url = format!("http://{}/login?code={}", r.address, r.code);
    let opened = if a.no_open {
        None
    } else {
        Some(open_browser(&url, &paths.data_dir))
    };
    Ok(output::ui(
        &url,
        &r.address,
        r.expires_secs,
        opened,
        a.new_token,
    ))
}

/// A local file to send.
fn open(path: &Path) -> Result<std::fs::File, CommandError> {
    std::fs::File::open(path)
        .map_err(|e| CommandError::Io(format!("cannot open {}: {e}", path.display())))
}

/// `add`: the content from TEXT, stdin or a file.
async fn add(
    a: args::AddArgs,
    client: &mut Client,
    stdin_allowed: bool,
) -> Result<Output, CommandError> {
    if a.personal && client.namespace() != memd_client::proto::PERSONAL_NAMESPACE {
        // A session holds one namespace (`memd shell`): never store a
        // person's own memory in the project's.
        return Err(CommandError::Usage(
            "--personal stores in your own namespace (@me), and this session is in another:              run `memd add --personal`"
                .into(),
        ));
    }
    let content = content_from(a.text, a.file.as_deref(), stdin_allowed)?;
    let (explicit, recognise) = (a.fields.cites.clone(), !a.no_cites);
    let mut req = AddRequest {
        thread: a.thread,
        position: a.position,
        occurred_at: a.occurred_at,
        ..add_request(content.clone().unwrap_or_default(), a.fields, a.supersedes)
    };
    match a.from {
        Some(id) => keep_captured(&mut req, id, content.is_none(), client).await?,
        None if content.is_none() => {
            return Err(CommandError::Usage(
                "add needs TEXT, `-` (stdin), --file F or --from ID".into(),
            ));
        }
        None => {}
    }
    cites::pin(&mut req, &explicit, recognise && a.from.is_none())?;
    let places = cites::places(req.metadata.as_deref());
    let r = client.add(req).await?;
    let mut out = output::added(&r);
    cites::tell_cited(&mut out, &places);
    Ok(out)
}

/// `add --from ID`: a captured turn kept as a memory of its own — its
/// text (unless one was given) and time, and where it came from in the
/// metadata (`kept_from`: the turn's id, uid, thread and identity).
async fn keep_captured(
    req: &mut AddRequest,
    id: i64,
    take_text: bool,
    client: &mut Client,
) -> Result<(), CommandError> {
    let turn = client
        .get_with(GetRequest {
            id,
            include_inactive: true,
        })
        .await?
        .memory;
    if turn.source != "capture" {
        return Err(CommandError::Usage(format!(
            "memory {id} is not a captured turn (its source is `{}`): --from keeps a turn \
             found by search as a memory of its own",
            turn.source
        )));
    }
    if take_text {
        req.content.clone_from(&turn.content);
    }
    if req.occurred_at.is_none() {
        req.occurred_at.clone_from(&turn.occurred_at);
    }
    let mut meta: serde_json::Map<String, Value> = req
        .metadata
        .as_deref()
        .and_then(|m| serde_json::from_str(m).ok())
        .unwrap_or_default();
    meta.insert(
        "kept_from".into(),
        serde_json::json!({
            "id": turn.id,
            "uid": turn.uid,
            "thread": turn.thread,
            "turn": turn.turn,
        }),
    );
    req.metadata = Some(Value::Object(meta).to_string());
    Ok(())
}

/// `search`: the mode and syntax named, then one search.
async fn search(a: args::SearchArgs, client: &mut Client) -> Result<Output, CommandError> {
    let mode = SearchMode::parse(&a.mode).ok_or_else(|| {
        CommandError::Usage(format!(
            "unknown mode `{}`: expected auto, lexical, fuzzy, semantic or hybrid",
            a.mode
        ))
    })?;
    let syntax = match a.syntax.as_str() {
        "plain" => QuerySyntax::Plain,
        "fts" => QuerySyntax::Fts,
        other => {
            return Err(CommandError::Usage(format!(
                "unknown syntax `{other}`: expected plain or fts"
            )));
        }
    };
    let r = client
        .search(SearchRequest {
            query: a.query,
            filter: filter(&a.filter),
            limit: a.filter.limit,
            mode,
            syntax,
            explain: a.explain,
            offset: a.offset,
        })
        .await?;
    let mut out = output::hits(&r, across(&a.filter));
    cites::annotate_hits(&mut out, &r.hits, client).await;
    Ok(out)
}

/// `update`: the fields given, the new content from TEXT, stdin or a file.
async fn update(
    a: args::UpdateArgs,
    client: &mut Client,
    stdin_allowed: bool,
) -> Result<Output, CommandError> {
    let content = content_from(a.content, a.file.as_deref(), stdin_allowed)?;
    let f = a.fields;
    let pinned = match (f.pin, a.unpin) {
        (true, _) => Some(true),
        (_, true) => Some(false),
        _ => None,
    };
    let req = UpdateRequest {
        id: a.id,
        content,
        category: f.category,
        subject: f.subject,
        tags: (a.clear_tags || !f.tags.is_empty()).then_some(f.tags),
        scope: f.scope,
        tier: f.tier,
        pinned,
        importance: f.importance,
        status: f.status,
        confidence: f.confidence,
        expires: f.expires,
        metadata: metadata_json(&f.meta),
        expect_rev: a.expect_rev,
    };
    let req = cites::repin(req, &f.cites)?;
    let r = client.update(req).await?;
    if let Some(p) = r.proposal {
        return Ok(output::proposed_update(&r.memory, p));
    }
    Ok(output::memory(
        &r.memory,
        Some(r.generation),
        Some("updated"),
    ))
}

/// `export`: into a file (written whole or not at all), or to stdout.
async fn export(a: args::ExportArgs, client: &mut Client) -> Result<Output, CommandError> {
    let req = memd_client::proto::ExportRequest {
        format: a.format.clone(),
        namespaces: a.namespaces.clone(),
        all_namespaces: a.all_namespaces,
        top: a.top,
    };
    match &a.out {
        Some(path) => {
            let (out, file) = OutFile::create(path)?;
            let progress = Progress::bytes(0, &format!("exporting to {}", path.display()));
            client.on_download(progress.download_hook());
            let (info, bytes) = client.export(req, file).await?;
            progress.finish();
            out.commit()?;
            Ok(output::downloaded(info, bytes, path))
        }
        None if a.format == "markdown" => {
            // Text: the output itself, and under --json (or in
            // `shell --json`) one JSON object that carries it.
            let mut text = Vec::new();
            let (info, _) = client.export(req, &mut text).await?;
            let text = String::from_utf8_lossy(&text).trim_end().to_string();
            Ok(output::Output {
                json: json!({
                    "success": true,
                    "format": "markdown",
                    "entries": info["entries"],
                    "markdown": text,
                }),
                human: text,
            })
        }
        None => {
            // The JSON document itself (one compact line) is the
            // output, streamed.
            let (_, _) = client.export(req, Stdout).await?;
            Ok(output::Output {
                json: serde_json::Value::Null,
                human: String::new(),
            })
        }
    }
}

/// `import-md`: each Markdown file read here, its entries added.
async fn import_markdown(
    a: args::ImportMdArgs,
    client: &mut Client,
) -> Result<Output, CommandError> {
    let mut counts = import_md::Counts::default();
    for file in &a.files {
        let text = std::fs::read_to_string(file)
            .map_err(|e| CommandError::Io(format!("cannot read {}: {e}", file.display())))?;
        let source = std::fs::canonicalize(file)
            .unwrap_or_else(|_| file.clone())
            .display()
            .to_string();
        import_md::send(client, &source, import_md::parse(&text), &mut counts).await?;
    }
    Ok(output::imported_md(&counts))
}

/// `backup`: a consistent copy of the database, into a file (an existing
/// one only with --force).
async fn backup(a: args::BackupArgs, client: &mut Client) -> Result<Output, CommandError> {
    if !a.force && std::fs::symlink_metadata(&a.file).is_ok() {
        return Err(CommandError::Usage(format!(
            "{} exists: nothing written; pass --force to replace it",
            a.file.display()
        )));
    }
    let (out, file) = OutFile::create(&a.file)?;
    let progress = Progress::bytes(0, &format!("backing up to {}", a.file.display()));
    client.on_download(progress.download_hook());
    let (info, bytes) = client.backup(file).await?;
    progress.finish();
    out.commit()?;
    Ok(output::downloaded(info, bytes, &a.file))
}

/// `stop`: the daemon stops; the command returns once it is gone.
async fn stop(client: &mut Client, paths: &Paths) -> Result<Output, CommandError> {
    // A socket inherited from systemd stays after the daemon exits
    // (and a connection to it starts the daemon again): wait for
    // the process instead.
    let inherited_pid = client
        .status()
        .await
        .ok()
        .filter(|s| s["socket_inherited"] == true)
        .and_then(|s| s["pid"].as_u64())
        .and_then(|pid| u32::try_from(pid).ok());
    client.stop().await?;
    match inherited_pid {
        Some(pid) => wait_exit(pid).await,
        None => wait_gone(&paths.socket).await,
    }
    Ok(output::stopped())
}

async fn task(
    command: args::TaskCommand,
    client: &mut Client,
    stdin_allowed: bool,
) -> Result<Output, CommandError> {
    use args::TaskCommand as T;
    let (id, status, expect_rev) = match command {
        T::Add(a) => {
            let content = content_from(Some(a.text), None, stdin_allowed)?.unwrap_or_default();
            let mut meta = a.meta;
            meta.push(("status".into(), "pending".into()));
            let fields = MemoryFields {
                category: Some("task".into()),
                subject: a.subject,
                tags: a.tags,
                scope: a.scope,
                importance: a.importance,
                meta,
                ..MemoryFields::default()
            };
            let r = client.add(add_request(content, fields, None)).await?;
            return Ok(output::added(&r));
        }
        T::List(a) => {
            let mut filter = Filter {
                category: Some("task".into()),
                ..Filter::default()
            };
            if !a.all {
                filter.meta.push(("surface".into(), "startup".into()));
            }
            let r = client
                .list(ListRequest {
                    filter,
                    limit: a.limit,
                    offset: 0,
                })
                .await?;
            return Ok(output::tasks(&r));
        }
        T::Start(a) => (a.id, "in_progress", a.expect_rev),
        T::Done(a) => (a.id, "completed", a.expect_rev),
        T::Cancel(a) => (a.id, "cancelled", a.expect_rev),
    };
    let m = client.task(id, status, expect_rev).await?;
    Ok(output::memory(&m, None, Some(&format!("task {status}:"))))
}

/// Standard output as a `Send` writer (the standard lock is not `Send`,
/// and a command's future may move between threads).
struct Stdout;

impl std::io::Write for Stdout {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        std::io::stdout().write(buf)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        std::io::stdout().flush()
    }
}

/// An output file for the client: written under a temporary name beside
/// the destination (mode 0600, created new, never through a symlink) and
/// renamed over it only when the download completed, so a failed export or
/// backup leaves an existing file as it was.
struct OutFile {
    tmp: PathBuf,
    dest: PathBuf,
    done: bool,
}

impl OutFile {
    fn create(dest: &Path) -> Result<(OutFile, std::fs::File), CommandError> {
        let name = dest
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let tmp = dest.with_file_name(format!(".{name}.memd-{}.part", std::process::id()));
        let file = crate::session::create_private(&tmp)
            .map_err(|e| CommandError::Io(format!("cannot write {}: {e}", dest.display())))?;
        Ok((
            OutFile {
                tmp,
                dest: dest.to_path_buf(),
                done: false,
            },
            file,
        ))
    }

    /// Puts the finished file in place (replacing what was there).
    fn commit(mut self) -> Result<(), CommandError> {
        std::fs::rename(&self.tmp, &self.dest)
            .map_err(|e| CommandError::Io(format!("cannot write {}: {e}", self.dest.display())))?;
        self.done = true;
        Ok(())
    }
}

impl Drop for OutFile {
    fn drop(&mut self) {
        if !self.done {
            let _ = std::fs::remove_file(&self.tmp);
        }
    }
}

/// After `stop` of a socket-activated daemon: waits (up to 15 s) until its
/// process is gone.
async fn wait_exit(pid: u32) {
    let deadline = Instant::now() + Duration::from_secs(15);
    while Instant::now() < deadline && crate::sys::alive(pid) {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// After `stop`: waits (up to 15 s) until the daemon has removed its socket,
/// which it does last, after draining the writer and checkpointing — so a
/// script that runs `memd stop` can rely on the daemon being gone.
async fn wait_gone(socket: &Path) {
    let deadline = Instant::now() + Duration::from_secs(15);
    while Instant::now() < deadline && socket.exists() {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// Opens `url` in the desktop's browser (`xdg-open`, `open` on macOS), in
/// the background; a machine without one is no error (the link is
/// printed).
/// The launcher page `memd ui` writes in the data dir and opens.
pub const LAUNCHER: &str = "ui-open.html";

/// Opens the one-time login `url` in a browser without putting it on any
/// command line (another user reads a browser's `/proc/PID/cmdline`): a
/// launcher page that moves on to `url` is written to `<data_dir>/`
/// [`LAUNCHER`] (mode 0600, in the data dir only its owner may enter) and
/// the opener (`xdg-open`, `open`) is given its path. The path, or why
/// nothing was opened.
fn open_browser(url: &str, data_dir: &Path) -> Result<PathBuf, String> {
    let path = write_launcher(url, data_dir)?;
    let opener = if cfg!(target_os = "macos") {
        "open"
    } else {
        "xdg-open"
    };
    std::process::Command::new(opener)
        .arg(&path)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .map_err(|e| format!("cannot run {opener}: {e}"))?;
    Ok(path)
}

/// Writes the launcher page for `url` into `dir`, which must be the
/// user's own and closed to others.
fn write_launcher(url: &str, dir: &Path) -> Result<PathBuf, String> {
    use std::io::Write;
    use std::os::unix::fs::MetadataExt;
    let meta = std::fs::metadata(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    if meta.uid() != crate::sys::euid() || meta.mode() & 0o077 != 0 {
        return Err(format!(
            "{} is not yours alone (mode {:o}): no launcher page written there",
            dir.display(),
            meta.mode() & 0o777
        ));
    }
    let url = crate::http::ui::page::esc(url);
    let page = format!(
        "<!doctype html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
         <meta name=\"referrer\" content=\"no-referrer\">\n\
         <meta http-equiv=\"refresh\" content=\"0; url={url}\">\n<title>memd</title>\n</head>\n\
         <body>\n<p><a href=\"{url}\">Open memd's viewer</a> (the link works once, within two \
         minutes).</p>\n</body>\n</html>\n"
    );
    let path = dir.join(LAUNCHER);
    let tmp = dir.join(format!("{LAUNCHER}.{}.tmp", std::process::id()));
    let _ = std::fs::remove_file(&tmp);
    let written = crate::session::create_private(&tmp)
        .and_then(|mut f| f.write_all(page.as_bytes()))
        .and_then(|()| std::fs::rename(&tmp, &path));
    if let Err(e) = written {
        let _ = std::fs::remove_file(&tmp);
        return Err(format!("cannot write {}: {e}", path.display()));
    }
    Ok(path)
}

/// `reembed`: starts the re-embedding; with a bar on a terminal, follows
/// it in `status` until every memory is embedded (Ctrl-C stops watching,
/// not the work, which the daemon does in the background).
async fn reembed(client: &mut Client) -> Result<Output, CommandError> {
    let report = client.reembed().await?;
    let progress = Progress::items(report.pending, "embedding memories");
    if super::progress::shown() && report.pending > 0 {
        loop {
            let status = client.status().await?;
            let embedder = &status["embedder"];
            let Some(pending) = embedder["pending"].as_u64() else {
                break;
            };
            progress.set(report.pending.saturating_sub(pending));
            if pending == 0 || embedder["state"].as_str() != Some("ready") {
                break;
            }
            tokio::time::sleep(Duration::from_millis(250)).await;
        }
    }
    progress.finish();
    Ok(output::reembedding(&report))
}

/// `purge`: lists what it will erase, asks on a terminal (or takes
/// `--yes`), then erases.
async fn purge(
    client: &mut Client,
    a: &args::PurgeArgs,
    stdin_allowed: bool,
) -> Result<Output, CommandError> {
    use std::io::{BufRead, IsTerminal, Write};
    let req = |confirm| memd_proto::PurgeRequest {
        id: a.id,
        matching: a.matching.clone(),
        confirm,
        all_namespaces: a.all_namespaces,
    };
    if a.yes {
        let _erasing = Progress::waiting("erasing");
        let r = client.purge_request(req(true)).await?;
        return Ok(output::purged(&r));
    }
    let listed = {
        let _finding = Progress::waiting("finding what to erase");
        client.purge_request(req(false)).await?
    };
    if a.dry_run || listed.targets.is_empty() {
        return Ok(output::purged(&listed));
    }
    let ask = stdin_allowed && std::io::stdin().is_terminal() && std::io::stderr().is_terminal();
    if !ask {
        return Err(CommandError::Usage(format!(
            "purge would erase {} memor{} (see them with --dry-run); nothing was erased: add \
             --yes to erase",
            listed.targets.len(),
            if listed.targets.len() == 1 {
                "y"
            } else {
                "ies"
            }
        )));
    }
    let mut err = std::io::stderr();
    let _ = writeln!(err, "{}", output::purged(&listed).human);
    let _ = write!(err, "erase these and every trace of their text? type yes: ");
    let _ = err.flush();
    let mut answer = String::new();
    std::io::stdin()
        .lock()
        .read_line(&mut answer)
        .map_err(|e| CommandError::Io(e.to_string()))?;
    if answer.trim() != "yes" {
        return Err(CommandError::Usage("nothing was erased".into()));
    }
    let _erasing = Progress::waiting("erasing");
    let r = client.purge_request(req(true)).await?;
    Ok(output::purged(&r))
}
