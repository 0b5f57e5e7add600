//! `memd-bench`: measurements of memd through its real daemon and socket.
//!
//! - `perf`: latency and throughput of requests over the socket.
//! - `commit`: group commit: durable adds through 1, 4 and 16 sessions.
//! - `drift`: external-change detection latency, the guard's cost.
//! - `eval`: retrieval quality (recall@k, MRR) on a conversation benchmark.
//! - `floor`: the relevance floor of the embedding model, chosen by
//!   leave-one-conversation-out.
//! - `hook`: wall time of `memd hook claude-code` per event process.
//! - `capture`: the incremental `Stop` hook's wall time, database growth
//!   per 1,000 captured turns.
//! - `http`: the HTTP API against the binary protocol, SSE event delay.
//! - `semantic`: embedding throughput, semantic and hybrid query latency at
//!   10K and 100K memories, the vector index's memory.
//! - `team`: team memory against a real PostgreSQL.
//!
//! The daemon under test is memd's own daemon code, run by this binary in a
//! child process (`memd-bench daemon`, hidden) on a temp data dir, so the
//! numbers are those of a real daemon behind a real socket.

mod capture;
mod citations;
mod commit;
mod corpus;
mod daemon;
mod drift;
mod eval;
mod fleet;
mod floor;
mod hook;
mod http;
mod perf;
mod purge;
mod semantic;
mod stats;
mod team;

use clap::{Parser, Subcommand};

#[derive(Debug, Parser)]
#[command(name = "memd-bench", about = "Measure memd over its real socket")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Latency and throughput over the socket
    Perf(perf::PerfArgs),
    /// Group commit: durable adds/s through 1, 4 and 16 sessions, runs'
    /// medians and ranges, against one session in the same run
    Commit(commit::CommitArgs),
    /// External-change detection latency and the drift guard's cost
    Drift(drift::DriftArgs),
    /// Retrieval quality on a conversation benchmark
    Eval(Box<eval::EvalArgs>),
    /// The relevance floor of the embedding model, chosen by
    /// leave-one-conversation-out: in-store recall lost, out-of-store and
    /// nonsense searches that return nothing
    Floor(floor::FloorArgs),
    /// Wall time of `memd hook claude-code` (a process per event)
    Hook(hook::HookArgs),
    /// Capture: the incremental Stop hook's time, growth per 1,000 turns
    Capture(capture::CaptureArgs),
    /// The HTTP API against the binary protocol: search and add latency,
    /// an event's delay on the SSE stream
    Http(http::HttpArgs),
    /// Embedding throughput, semantic query latency at scale, index memory
    Semantic(semantic::SemanticArgs),
    /// Team memory on a real PostgreSQL: shared and local adds, propagation,
    /// the initial pull, search on a replica, a partition
    Team(team::TeamArgs),
    /// What `memd purge` costs at a database size, against `forget`
    Purge(purge::PurgeArgs),
    /// Many machines on one team server: connections, the server's idle
    /// load, add latency, propagation to all, with and without a pooler
    /// and a replica
    Fleet(fleet::FleetArgs),
    /// A block build's cost when its memories cite code: 200 cited files of
    /// a 10,000-file repository checked, against the same build without
    /// citations
    Citations(citations::CitationsArgs),
    /// Run the daemon (used by the other commands)
    #[command(hide = true)]
    Daemon {
        #[arg(long)]
        data_dir: std::path::PathBuf,
        #[arg(long)]
        config: Option<std::path::PathBuf>,
    },
    /// Echo on a Unix socket (the bare round trip `perf` compares with)
    #[command(hide = true)]
    Echo {
        #[arg(long)]
        socket: std::path::PathBuf,
    },
}

/// Runs a benchmark's body on a multi-threaded runtime (one worker per
/// core).
///
/// # Errors
/// When the runtime cannot start, or the body's error.
pub(crate) fn block_on<T>(
    body: impl std::future::Future<Output = anyhow::Result<T>>,
) -> anyhow::Result<T> {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?
        .block_on(body)
}

fn main() -> anyhow::Result<()> {
    let cli = Cli::parse();
    match cli.command {
        Command::Perf(args) => perf::run(args),
        Command::Commit(args) => commit::run(args),
        Command::Drift(args) => drift::run(args),
        Command::Eval(args) => eval::run(*args),
        Command::Floor(args) => floor::run(args),
        Command::Semantic(args) => semantic::run(args),
        Command::Hook(args) => hook::run(args),
        Command::Capture(args) => capture::run(args),
        Command::Http(args) => http::run(args),
        Command::Team(args) => team::run(args),
        Command::Purge(args) => purge::run(args),
        Command::Fleet(args) => fleet::run(args),
        Command::Citations(args) => citations::run(args),
        Command::Daemon { data_dir, config } => daemon::run_child(data_dir, config),
        Command::Echo { socket } => perf::echo(&socket),
    }
}
