//! The `memd` command line: parse, connect (autostarting a daemon), run one
//! command, print, exit with the contract's code. The arguments, connecting
//! and running a command are [`crate::commands`], shared with the MCP
//! server; printing a result is here. The binary routes `memd mcp` to the
//! MCP server (`memd::mcp::run`), never through [`run`].
//!
//! # Layout
//! - [`shell`]: `memd shell`, many commands over one session.
//! - [`hook`]: `memd hook claude-code|codex`.
//! - [`setup`]: `memd setup claude-code|codex`.
//! - [`settings`]: `memd config show`.
//! - [`service`]: `memd service install|uninstall|status`.
//! - [`team`]: `memd team init` (the other team commands go to the daemon).
//! - [`doctor`]: `memd doctor`, what stands between this directory and
//!   a working memory; [`failures`]: the hooks' failure record it reads.
//! - [`help`]: `memd --help` grouped, `memd help`, `memd completions`,
//!   `memd man`.

pub mod capture;
pub mod doctor;
pub mod failures;
pub mod help;
pub mod hook;
pub mod model;
pub mod service;
pub mod settings;
pub mod setup;
pub mod shell;
pub mod team;
pub mod transcript;

use memd_client::exit;

use crate::commands::args::{self, Command, Global};
use crate::commands::{
    CommandError, Output, client_paths, connect, execute, init_logging, paths, resolve_namespace,
};
use crate::config::Config;

/// Prints a result in the selected form and returns the exit code.
pub fn emit(json_mode: bool, result: Result<Output, CommandError>) -> i32 {
    use std::io::Write;
    let mut stdout = std::io::stdout().lock();
    match result {
        Ok(out) => {
            if json_mode && !out.json.is_null() {
                let _ = writeln!(stdout, "{}", out.json);
            } else if !json_mode && !out.human.is_empty() {
                let _ = writeln!(stdout, "{}", out.human);
            }
            let _ = stdout.flush();
            exit::OK
        }
        Err(e) => {
            if json_mode {
                let _ = writeln!(stdout, "{}", e.json());
                let _ = stdout.flush();
            } else {
                eprintln!("memd: {}", e.message());
            }
            e.exit_code()
        }
    }
}

/// Runs a parsed command line; returns the exit code.
pub fn run(cli: args::Cli) -> i32 {
    let mut g = cli.global;
    // The daemon and the service and config commands open no session, so
    // they need no namespace; `hook` takes its project from the event.
    let sessionless = matches!(&cli.command, Command::Team(t) if t.is_direct())
        || matches!(
            cli.command,
            Command::Daemon
                | Command::Service(_)
                | Command::Config(_)
                | Command::Model(_)
                | Command::Socket
                | Command::Help(_)
                | Command::Completions(_)
                | Command::Man(_)
                | Command::Trust(_)
                | Command::Untrust(_)
                | Command::Doctor
        );
    // `--namespace` or `MEMD_NAMESPACE`: a by-id command stays there.
    let named_namespace = g.namespace.is_some();
    if !sessionless {
        resolve_namespace(&mut g, !matches!(cli.command, Command::Hook(_)));
    }
    if let Command::Add(a) = &cli.command
        && a.personal
    {
        if named_namespace && g.namespace.as_deref() != Some(memd_client::proto::PERSONAL_NAMESPACE)
        {
            return emit(
                g.json,
                Err(CommandError::Usage(
                    "--personal stores in your own namespace (@me): leave --namespace out".into(),
                )),
            );
        }
        g.namespace = Some(memd_client::proto::PERSONAL_NAMESPACE.into());
        g.previous_namespaces.clear();
    }
    // A repository the team's globs mean to share, under a namespace they
    // do not match (an override names another): say so, on stderr.
    let may_share = matches!(&cli.command, Command::Add(a) if !a.personal)
        || matches!(cli.command, Command::Team(args::TeamCommand::Status));
    if may_share
        && let Some(note) = doctor::glob_warning(&g, g.namespace.as_deref().unwrap_or("default"))
    {
        eprintln!("{note}");
    }
    match cli.command {
        Command::Daemon => daemon(&g),
        Command::Shell => shell::run(&g),
        // The binary serves `memd mcp` with the MCP server.
        Command::Mcp => emit(
            g.json,
            Err(CommandError::Usage(
                "mcp is not run by memd::cli::run: the binary serves it with memd::mcp::run".into(),
            )),
        ),
        Command::Hook(args::HookCommand::ClaudeCode) => hook::run_hook(&g, hook::Host::ClaudeCode),
        Command::Hook(args::HookCommand::Codex) => hook::run_hook(&g, hook::Host::Codex),
        Command::Hook(args::HookCommand::Gemini) => hook::run_hook(&g, hook::Host::Gemini),
        Command::Setup(s) => setup_command(&g, s),
        Command::Config(args::ConfigCommand::Show) => emit(g.json, settings::show(&g)),
        Command::Trust(a) => emit(g.json, crate::commands::trust::trust_command(&a)),
        Command::Untrust(a) => emit(g.json, crate::commands::trust::untrust_command(&a)),
        Command::Doctor => doctor::run(&g),
        Command::Socket => emit(
            g.json,
            Ok(crate::commands::output::socket(&client_paths(&g).socket)),
        ),
        Command::Team(args::TeamCommand::Init) => emit(g.json, team::init(&g)),
        Command::Team(t) if t.is_direct() => emit(g.json, team::rights(&g, &t)),
        Command::Service(s) => emit(g.json, service::run(&g, s)),
        Command::Model(args::ModelCommand::Fetch(a)) => emit(g.json, model::fetch(&g, &a)),
        Command::Help(a) => emit(g.json, help::help(help::command(), &a.topic)),
        Command::Completions(a) => emit(g.json, Ok(help::completions(a.shell))),
        Command::Man(a) => emit(g.json, help::man(&a.command, a.dir.as_deref())),
        command => session_command(&g, command, named_namespace),
    }
}

/// `memd setup HOST`: the host's hooks and MCP server installed (or
/// removed), for the user or this project.
fn setup_command(g: &Global, s: args::SetupCommand) -> i32 {
    let (host, a) = match s {
        args::SetupCommand::ClaudeCode(a) => (hook::Host::ClaudeCode, a),
        args::SetupCommand::Codex(a) => (hook::Host::Codex, a),
        args::SetupCommand::Gemini(a) => (hook::Host::Gemini, a),
    };
    let scope = if a.project {
        setup::Scope::Project
    } else {
        setup::Scope::User
    };
    let namespace = match scope {
        setup::Scope::Project => {
            let mut g = g.clone();
            crate::commands::resolve_namespace(&mut g, true);
            g.namespace.unwrap_or_else(|| "default".into())
        }
        setup::Scope::User => g
            .namespace
            .clone()
            .unwrap_or_else(|| "each project's own (from its repository)".into()),
    };
    emit(
        g.json,
        setup::run(host, scope, a.dry_run, a.uninstall, &namespace),
    )
}

/// A command served by the daemon: connects (starting it unless the
/// command only asks about it), moves a person's by-id command to the
/// namespace that holds the memory, and runs it.
fn session_command(g: &Global, command: Command, named_namespace: bool) -> i32 {
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => return emit(g.json, Err(CommandError::Io(e.to_string()))),
    };
    // Long work shows a bar on a terminal, never under --json.
    crate::commands::progress::enable(!g.json);
    let result = runtime.block_on(async {
        let autostart = !matches!(
            command,
            Command::Status | Command::Stop | Command::Team(args::TeamCommand::Status)
        );
        // A transcript's turns are a kind of their own (source
        // `ingest`), told by the way the connection came.
        let mut g = g.clone();
        if matches!(command, Command::Ingest(_)) {
            g.via = Some("ingest");
        }
        let mut client = connect(&g, autostart).await?;
        if !named_namespace
            && let Some(id) = by_id(&command)
            && let Some(there) = elsewhere(&mut client, id).await
        {
            // A person's by-id command acts on the memory wherever
            // it lives, in a session of that namespace (as HTTP).
            let mut g = g.clone();
            g.namespace = Some(there);
            g.previous_namespaces.clear();
            drop(client);
            client = connect(&g, autostart).await?;
        }
        let id = by_id(&command);
        let done = execute(command, &mut client, &client_paths(&g), true).await;
        match (done, id) {
            // Named a namespace that does not hold it: say which does.
            (Err(CommandError::Client(memd_client::Error::NotFound(_))), Some(id))
                if named_namespace && let Some(there) = elsewhere(&mut client, id).await =>
            {
                Err(CommandError::NotFound(format!(
                    "memory {id} is not in namespace {}: it is in namespace {there} \
                     (run without --namespace, or with --namespace {there})",
                    g.namespace.as_deref().unwrap_or("default")
                )))
            }
            (done, _) => done,
        }
    });
    emit(g.json, result)
}

/// The memory a by-id command of a person acts on: `get`, `update`,
/// `forget`, `history`.
fn by_id(command: &Command) -> Option<i64> {
    match command {
        Command::Get(a) => Some(a.id),
        Command::Update(a) => Some(a.id),
        Command::Forget(a) => a.id,
        Command::History(a) => Some(a.id),
        _ => None,
    }
}

/// The namespace memory `id` lives in when it is not the session's own;
/// `None` when it is here, nowhere, or the daemon cannot say (an older
/// one): the command then runs here and says what it finds.
async fn elsewhere(client: &mut memd_client::Client, id: i64) -> Option<String> {
    let there = client.locate(id).await.ok()?;
    (there != client.namespace()).then_some(there)
}

fn daemon(g: &Global) -> i32 {
    init_logging();
    let paths = paths(g);
    let config = match Config::load(&paths.config) {
        Ok(c) => c,
        Err(e) => {
            tracing::error!("{e}");
            return exit::ERROR;
        }
    };
    match crate::daemon::run(paths, config) {
        Ok(()) => exit::OK,
        Err(e) => {
            tracing::error!("{e}");
            exit::ERROR
        }
    }
}
