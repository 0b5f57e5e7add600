//! Paths and settings: where the data dir, socket and config file are, and
//! what the config file may say.
//!
//! Path precedence is ARCHITECTURE.md "Files and paths": flag > environment >
//! XDG default. The config file is TOML; every key is optional and unknown
//! keys are an error (a typo must not silently fall back to a default).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use memd_proto::DriftPolicy;
use serde::{Deserialize, Serialize};

pub use crate::gate::settings::{GateConfig, MemoryConfig};
pub use crate::store::StorageConfig;

/// Longest socket path that fits `sockaddr_un.sun_path` with its NUL.
pub const MAX_SOCKET_PATH: usize = 107;

/// Path-related flags as given on the command line (or their environment
/// variables, which clap folds in).
#[derive(Debug, Clone, Default)]
pub struct PathFlags {
    /// `--data-dir` / `MEMD_DATA_DIR`.
    pub data_dir: Option<PathBuf>,
    /// `--socket` / `MEMD_SOCKET`.
    pub socket: Option<PathBuf>,
    /// `--config` / `MEMD_CONFIG`.
    pub config: Option<PathBuf>,
}

/// Resolved locations.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Paths {
    /// The data directory (holds the database, lock, backups).
    pub data_dir: PathBuf,
    /// The Unix socket the daemon listens on.
    pub socket: PathBuf,
    /// The config file (it may not exist: then defaults apply).
    pub config: PathBuf,
}

impl Paths {
    /// Resolves every path from flags and the process environment.
    pub fn resolve(flags: &PathFlags) -> Paths {
        Self::resolve_with(flags, |k| std::env::var_os(k).filter(|v| !v.is_empty()))
    }

    /// Resolves with an explicit environment lookup (for tests).
    pub fn resolve_with(
        flags: &PathFlags,
        env: impl Fn(&str) -> Option<std::ffi::OsString>,
    ) -> Paths {
        let home = || env("HOME").map_or_else(|| "/".into(), PathBuf::from);
        let xdg_data =
            env("XDG_DATA_HOME").map_or_else(|| home().join(".local/share"), PathBuf::from);
        let explicit_data_dir = flags.data_dir.is_some();
        let data_dir = flags
            .data_dir
            .clone()
            .map_or_else(|| xdg_data.join("memd"), absolute);
        let socket = match &flags.socket {
            Some(s) => absolute(s.clone()),
            None if explicit_data_dir => data_dir.join("memd.sock"),
            None => match env("XDG_RUNTIME_DIR") {
                Some(run) => PathBuf::from(run).join("memd").join("memd.sock"),
                None => data_dir.join("memd.sock"),
            },
        };
        let config = flags.config.clone().map_or_else(
            || {
                env("XDG_CONFIG_HOME")
                    .map_or_else(|| home().join(".config"), PathBuf::from)
                    .join("memd")
                    .join("config.toml")
            },
            absolute,
        );
        Paths {
            data_dir,
            socket,
            config,
        }
    }

    /// The database file.
    pub fn db(&self) -> PathBuf {
        self.data_dir.join("memory.db")
    }

    /// The named sessions kept across restarts.
    pub fn sessions_db(&self) -> PathBuf {
        self.data_dir.join("sessions.db")
    }

    /// The viewer's token (0600): what a browser presents on the loopback
    /// listener.
    pub fn ui_token(&self) -> PathBuf {
        self.data_dir.join("ui.token")
    }

    /// The lock file held by the running daemon.
    pub fn lock(&self) -> PathBuf {
        self.data_dir.join("memd.lock")
    }

    /// The log file of a daemon started in the background by a client.
    pub fn log(&self) -> PathBuf {
        self.data_dir.join("memd.log")
    }
}

fn absolute(p: PathBuf) -> PathBuf {
    if p.is_absolute() {
        p
    } else {
        std::env::current_dir().map(|d| d.join(&p)).unwrap_or(p)
    }
}

/// Limits on what a request may carry.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct LimitsConfig {
    /// Largest memory content, in bytes.
    pub max_content_bytes: usize,
    /// Largest metadata object (JSON text), in bytes.
    pub max_metadata_bytes: usize,
    /// Most tags on one memory.
    pub max_tags: usize,
    /// Longest tag, in characters.
    pub max_tag_chars: usize,
    /// Most results of one list or search.
    pub max_results: u32,
    /// Most concurrent connections; more are refused with `busy`.
    pub max_connections: usize,
    /// Largest file a client may upload (restore, import), in bytes.
    pub max_upload_bytes: u64,
    /// How long a new connection may take to send its preamble and `Hello`, in ms.
    pub handshake_timeout_ms: u64,
    /// How long the rest of a frame may take once its first byte arrived, in ms.
    pub frame_timeout_ms: u64,
    /// How long one response may take to be written, in ms: a client that
    /// stops reading its responses is disconnected after it.
    pub write_timeout_ms: u64,
}

impl Default for LimitsConfig {
    fn default() -> Self {
        LimitsConfig {
            max_content_bytes: 10 * 1024,
            max_metadata_bytes: 16 * 1024,
            max_tags: 32,
            max_tag_chars: 64,
            max_results: 1_000,
            max_connections: 1_024,
            max_upload_bytes: 4 << 30,
            handshake_timeout_ms: 10_000,
            frame_timeout_ms: 30_000,
            write_timeout_ms: 30_000,
        }
    }
}

/// Drift guard settings.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct DriftConfig {
    /// Default policy of sessions that do not name one.
    #[serde(deserialize_with = "de_policy", serialize_with = "ser_policy")]
    pub policy: DriftPolicy,
    /// Most drift backups kept.
    pub backups_keep: usize,
    /// Most bytes of drift backups kept.
    pub backups_max_bytes: u64,
    /// How long file events are collected before one check, in ms.
    pub debounce_ms: u64,
    /// Watch the data dir for external changes (otherwise they are seen at
    /// the next write or poll).
    pub watch: bool,
    /// While idle, look for external commits this often, in ms (0: never;
    /// catches writers that keep their connection open).
    pub poll_ms: u64,
    /// Rows a session's read set remembers (the row rule); past it, the
    /// oldest reads go and a row not remembered is judged by the oldest
    /// read that went.
    pub read_set_rows: usize,
}

impl Default for DriftConfig {
    fn default() -> Self {
        DriftConfig {
            policy: DriftPolicy::Standard,
            backups_keep: 20,
            backups_max_bytes: 1 << 30,
            debounce_ms: 5,
            watch: true,
            poll_ms: 50,
            read_set_rows: 4096,
        }
    }
}

fn ser_policy<S: serde::Serializer>(p: &DriftPolicy, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(p.as_str())
}

fn de_policy<'de, D: serde::Deserializer<'de>>(d: D) -> Result<DriftPolicy, D::Error> {
    let s = String::deserialize(d)?;
    DriftPolicy::parse(&s).ok_or_else(|| {
        serde::de::Error::custom(format!(
            "unknown drift policy `{s}`: expected standard, external, strict or off"
        ))
    })
}

/// Memory injection settings.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct InjectConfig {
    /// Character budget of a session's memory block.
    pub budget_chars: u32,
    /// The most of that budget, in percent, the person's own memories
    /// (namespace `@me`) may take in every session's block; 0: none.
    pub personal_share: u32,
}

impl Default for InjectConfig {
    fn default() -> Self {
        InjectConfig {
            budget_chars: 4_000,
            personal_share: 25,
        }
    }
}

/// `[http]`: the loopback listener browsers use (the viewer, `memd ui`).
/// The API is always served on the daemon's socket; this adds a TCP port.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct HttpConfig {
    /// A loopback address and port (`127.0.0.1:7420`, `[::1]:7420`) the
    /// daemon listens on from its start; empty: none until `memd ui` asks
    /// for one (then on a free port).
    pub listen: String,
    /// Most connections the listener holds at once (and at most a quarter
    /// of the daemon's open-file limit): past it, the oldest connection
    /// that never presented a credential is closed to make room, or the
    /// new one when every one did.
    pub max_connections: usize,
    /// Most connections from one peer address at once, by the same rule.
    pub max_connections_per_peer: usize,
}

impl Default for HttpConfig {
    fn default() -> Self {
        HttpConfig {
            listen: String::new(),
            max_connections: 256,
            max_connections_per_peer: 64,
        }
    }
}

impl HttpConfig {
    /// The address to listen on from the start, if any.
    ///
    /// # Errors
    /// A message when it is not a loopback address and port.
    pub fn address(&self) -> Result<Option<std::net::SocketAddr>, String> {
        let text = self.listen.trim();
        if text.is_empty() {
            return Ok(None);
        }
        let addr: std::net::SocketAddr = text.parse().map_err(|_| {
            format!("http.listen `{text}` is not an address and port (e.g. 127.0.0.1:7420)")
        })?;
        if !addr.ip().is_loopback() {
            return Err(format!(
                "http.listen `{text}` is not a loopback address: the viewer listens on 127.0.0.1 \
                 or ::1 only (every local user can reach it; its token keeps them out)"
            ));
        }
        Ok(Some(addr))
    }
}

/// `[capture]`: conversations captured from agent hosts' hooks (the hooks
/// read `enabled` and `exclude`; the daemon's sweeps, the retention).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct CaptureConfig {
    /// Hooks capture the session's conversation.
    pub enabled: bool,
    /// Working directories not captured: globs (`*` any run, `/` too; `?`
    /// one character; `~/` the home directory); a directory's pattern
    /// covers everything below it.
    pub exclude: Vec<String>,
    /// Captured turns older than this many days are deleted by the sweeps
    /// (0: kept until the size cap or `capture forget`).
    pub keep_days: u32,
    /// Per namespace, the bytes of captured text kept: over it, the sweeps
    /// delete the oldest captured turns (0: no cap).
    pub max_bytes: u64,
    /// Most bytes of a transcript one hook reads: a longer stretch is
    /// captured over several hooks.
    pub chunk_bytes: u64,
}

impl Default for CaptureConfig {
    fn default() -> Self {
        CaptureConfig {
            enabled: true,
            exclude: Vec::new(),
            keep_days: 90,
            max_bytes: 512 << 20,
            chunk_bytes: 8 << 20,
        }
    }
}

impl CaptureConfig {
    /// The sweeps' retention.
    pub fn retention(&self) -> crate::store::capture::Retention {
        crate::store::capture::Retention {
            keep_days: self.keep_days,
            max_bytes: self.max_bytes,
        }
    }

    /// Whether a session in `dir` is captured: capture is on and no
    /// `exclude` pattern matches it or a directory above it.
    pub fn captures(&self, dir: &Path) -> bool {
        if !self.enabled {
            return false;
        }
        let home = std::env::var_os("HOME").map(PathBuf::from);
        let patterns: Vec<String> = self
            .exclude
            .iter()
            .map(|p| match (p.strip_prefix("~/"), &home) {
                (Some(rest), Some(h)) => h.join(rest).to_string_lossy().into_owned(),
                _ => p.clone(),
            })
            .map(|p| p.trim_end_matches('/').to_string())
            .collect();
        !dir.ancestors().any(|d| {
            let d = d.to_string_lossy();
            patterns
                .iter()
                .any(|p| crate::store::team::conn::config::glob_matches(p, &d))
        })
    }
}

/// Settings of the `memd` commands (the daemon does not read them).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
#[serde(default, deny_unknown_fields)]
pub struct ClientConfig {
    /// Namespace of commands given none (`--namespace`, `MEMD_NAMESPACE`);
    /// empty: the project's, from the git root, else `default`.
    pub namespace: String,
}

/// Named session settings.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct SessionConfig {
    /// A named session with no connection for this long ends (its snapshot
    /// is dropped): `90s`, `30m`, `24h`, `7d`.
    pub idle_ttl: String,
}

impl Default for SessionConfig {
    fn default() -> Self {
        SessionConfig {
            idle_ttl: "24h".into(),
        }
    }
}

impl SessionConfig {
    /// `idle_ttl` as a duration (validated when the config is loaded).
    pub fn idle_ttl(&self) -> std::time::Duration {
        crate::clock::parse_duration(&self.idle_ttl)
            .unwrap_or(std::time::Duration::from_secs(24 * 3600))
    }
}

/// Sidecar settings (`[sidecar]`).
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct SidecarConfig {
    /// Namespace → file to keep up to date.
    pub files: std::collections::HashMap<String, PathBuf>,
    /// Wait after a change before rewriting, in ms (0 means the default).
    pub debounce_ms: u64,
}

/// `[sidecar] debounce_ms` when unset (or 0).
pub const SIDECAR_DEBOUNCE_MS: u64 = 1_000;

impl Default for SidecarConfig {
    fn default() -> Self {
        SidecarConfig {
            files: std::collections::HashMap::new(),
            debounce_ms: SIDECAR_DEBOUNCE_MS,
        }
    }
}

/// Socket settings.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct SocketConfig {
    /// Permission bits of the socket file (octal in the file: `0o600`, or
    /// the string `"0600"`). A socket inherited from the service manager
    /// keeps the mode the manager gave it.
    #[serde(deserialize_with = "de_mode", serialize_with = "ser_mode")]
    pub mode: u32,
    /// Other users served besides the daemon's own uid.
    pub allow_uids: Vec<u32>,
    /// Groups whose members are served: a peer whose gid or one of whose
    /// supplementary groups, as the kernel reports them for the connection,
    /// is in this list.
    pub allow_gids: Vec<u32>,
}

impl Default for SocketConfig {
    fn default() -> Self {
        SocketConfig {
            mode: 0o600,
            allow_uids: Vec::new(),
            allow_gids: Vec::new(),
        }
    }
}

fn ser_mode<S: serde::Serializer>(mode: &u32, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(&format!("{mode:04o}"))
}

fn de_mode<'de, D: serde::Deserializer<'de>>(d: D) -> Result<u32, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum Mode {
        Int(u32),
        Str(String),
    }
    let mode = match Mode::deserialize(d)? {
        Mode::Int(m) => m,
        Mode::Str(s) => u32::from_str_radix(s.trim_start_matches("0o"), 8)
            .map_err(|_| serde::de::Error::custom(format!("`{s}` is not an octal mode")))?,
    };
    if mode & !0o777 != 0 {
        return Err(serde::de::Error::custom(format!(
            "mode {mode:o} has bits outside 0o777"
        )));
    }
    Ok(mode)
}

/// Every setting of the daemon.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
#[serde(default, deny_unknown_fields)]
pub struct Config {
    /// `[storage]`.
    pub storage: StorageConfig,
    /// `[limits]`.
    pub limits: LimitsConfig,
    /// `[memory]`.
    pub memory: MemoryConfig,
    /// `[gate]`.
    pub gate: GateConfig,
    /// `[drift]`.
    pub drift: DriftConfig,
    /// `[inject]`.
    pub inject: InjectConfig,
    /// `[session]`: named sessions.
    pub session: SessionConfig,
    /// `[client]`: the commands' own settings.
    pub client: ClientConfig,
    /// `[search]`: ranking and the fuzzy fallback.
    pub search: crate::store::search::rank::RankConfig,
    /// `[lifecycle]`: sweeps.
    pub lifecycle: crate::store::lifecycle::rules::LifecycleConfig,
    /// `[sidecar]`: MEMORY.md files kept up to date.
    pub sidecar: SidecarConfig,
    /// `[socket]`.
    pub socket: SocketConfig,
    /// `[embed]`: the embedder behind semantic and hybrid search.
    pub embed: crate::embed::EmbedConfig,
    /// `[team]`: shared namespaces on the team's PostgreSQL.
    pub team: crate::store::team::conn::config::TeamConfig,
    /// `[http]`: the loopback listener of the viewer.
    pub http: HttpConfig,
    /// `[capture]`: conversations captured by the hooks.
    pub capture: CaptureConfig,
}

/// A config file that could not be used.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// The file exists but cannot be read.
    #[error("cannot read config file {path}: {source}")]
    Read {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// The file is not valid TOML or has an invalid value.
    #[error("invalid config file {path} at line {line}, column {column}: {message}")]
    Invalid {
        /// The file.
        path: PathBuf,
        /// 1-based line of the error.
        line: usize,
        /// 1-based column of the error.
        column: usize,
        /// What is wrong.
        message: String,
    },
}

impl Config {
    /// What the write gate reads: categories, gate switches, content limits.
    pub fn gate_rules(&self) -> crate::gate::Rules<'_> {
        crate::gate::Rules {
            memory: &self.memory,
            gate: &self.gate,
            limits: crate::gate::Limits {
                max_content_bytes: self.limits.max_content_bytes,
                max_metadata_bytes: self.limits.max_metadata_bytes,
                max_tags: self.limits.max_tags,
                max_tag_chars: self.limits.max_tag_chars,
            },
        }
    }

    /// Loads the config file; a missing file means defaults.
    ///
    /// # Errors
    /// [`ConfigError`] when the file cannot be read or is invalid (with the
    /// line and column of the problem).
    pub fn load(path: &Path) -> Result<Config, ConfigError> {
        match std::fs::read_to_string(path) {
            Ok(text) => Self::parse(path, &text),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Config::default()),
            Err(source) => Err(ConfigError::Read {
                path: path.to_path_buf(),
                source,
            }),
        }
    }

    /// Parses config text.
    ///
    /// # Errors
    /// [`ConfigError::Invalid`] with the position of the problem.
    pub fn parse(path: &Path, text: &str) -> Result<Config, ConfigError> {
        let config: Config = toml::from_str(text).map_err(|e| {
            let (line, column) = e.span().map_or((1, 1), |span| line_col(text, span.start));
            ConfigError::Invalid {
                path: path.to_path_buf(),
                line,
                column,
                message: e.message().to_string(),
            }
        })?;
        config.validate().map_err(|(key, message)| {
            let (line, column) = file_keys(text)
                .ok()
                .and_then(|keys| keys.get(key).copied())
                .unwrap_or((1, 1));
            ConfigError::Invalid {
                path: path.to_path_buf(),
                line,
                column,
                message,
            }
        })?;
        Ok(config)
    }

    /// The file's text, or `None` when it does not exist.
    ///
    /// # Errors
    /// [`ConfigError::Read`] when it exists but cannot be read.
    pub fn read_text(path: &Path) -> Result<Option<String>, ConfigError> {
        match std::fs::read_to_string(path) {
            Ok(text) => Ok(Some(text)),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(source) => Err(ConfigError::Read {
                path: path.to_path_buf(),
                source,
            }),
        }
    }

    /// Every setting as a dotted key (`storage.readers`) and its value,
    /// sorted by key. Tables (including maps such as `search.half_life`)
    /// are walked; arrays and unset options (`null`) are values.
    pub fn flatten(&self) -> BTreeMap<String, serde_json::Value> {
        let mut out = BTreeMap::new();
        // Serializing plain data into a JSON value cannot fail.
        if let Ok(value) = serde_json::to_value(self) {
            flatten_into(String::new(), &value, &mut out);
        }
        out
    }

    fn validate(&self) -> Result<(), (&'static str, String)> {
        self.team.check()?;
        if let Err(message) = self.http.address() {
            return Err(("http.listen", message));
        }
        check_memory(&self.memory)?;
        let t = self.gate.near_duplicate_threshold;
        if t.is_nan() || t <= 0.0 {
            return Err((
                "gate.near_duplicate_threshold",
                "gate.near_duplicate_threshold must be above 0".into(),
            ));
        }
        if self.inject.personal_share > 100 {
            return Err((
                "inject.personal_share",
                "inject.personal_share is a percentage: at most 100".into(),
            ));
        }
        if self.inject.budget_chars > crate::session::MAX_BUDGET_CHARS {
            return Err((
                "inject.budget_chars",
                format!(
                    "inject.budget_chars must be at most {}",
                    crate::session::MAX_BUDGET_CHARS
                ),
            ));
        }
        if self.storage.readers == 0 {
            return Err((
                "storage.readers",
                "storage.readers must be at least 1".into(),
            ));
        }
        if self.storage.max_batch == 0 {
            return Err((
                "storage.max_batch",
                "storage.max_batch must be at least 1".into(),
            ));
        }
        if crate::clock::parse_duration(&self.session.idle_ttl).is_none_or(|d| d.is_zero()) {
            return Err((
                "session.idle_ttl",
                format!(
                    "session.idle_ttl `{}` is not a duration like 90s, 30m, 24h or 7d",
                    self.session.idle_ttl
                ),
            ));
        }
        check_search(&self.search)?;
        self.embed.validate()?;
        self.check_limits()
    }

    /// The capture and connection limits.
    fn check_limits(&self) -> Result<(), (&'static str, String)> {
        if self.capture.chunk_bytes < 4096 {
            return Err((
                "capture.chunk_bytes",
                "capture.chunk_bytes must be at least 4096".into(),
            ));
        }
        if self.limits.max_content_bytes == 0 {
            return Err((
                "limits.max_content_bytes",
                "limits.max_content_bytes must be at least 1".into(),
            ));
        }
        for (key, value) in [
            ("limits.max_connections", self.limits.max_connections as u64),
            ("http.max_connections", self.http.max_connections as u64),
            (
                "http.max_connections_per_peer",
                self.http.max_connections_per_peer as u64,
            ),
            (
                "limits.handshake_timeout_ms",
                self.limits.handshake_timeout_ms,
            ),
            ("limits.frame_timeout_ms", self.limits.frame_timeout_ms),
            ("limits.write_timeout_ms", self.limits.write_timeout_ms),
        ] {
            if value == 0 {
                return Err((key, format!("{key} must be at least 1")));
            }
        }
        Ok(())
    }
}

/// The categories, and every category the memory settings name among them.
fn check_memory(memory: &MemoryConfig) -> Result<(), (&'static str, String)> {
    if memory.categories.is_empty() {
        return Err((
            "memory.categories",
            "memory.categories must not be empty".into(),
        ));
    }
    if !memory
        .categories
        .iter()
        .any(|c| c == &memory.default_category)
    {
        return Err((
            "memory.default_category",
            format!(
                "memory.default_category `{}` is not in memory.categories",
                memory.default_category
            ),
        ));
    }
    if let Some(c) = memory
        .promote_on_write
        .iter()
        .flatten()
        .find(|c| !memory.categories.contains(c))
    {
        return Err((
            "memory.promote_on_write",
            format!("memory.promote_on_write names `{c}`, which is not in memory.categories"),
        ));
    }
    Ok(())
}

/// The ranking's weights (0 to 100) and its feedback sizes (at most 50).
fn check_search(
    search: &crate::store::search::rank::RankConfig,
) -> Result<(), (&'static str, String)> {
    for (key, value) in [
        ("search.context_weight", search.context_weight),
        ("search.date_weight", search.date_weight),
        ("search.feedback_weight", search.feedback_weight),
        ("search.long_exponent", search.long_exponent),
        ("search.hybrid.semantic_from", search.hybrid.semantic_from),
        ("search.hybrid.semantic_full", search.hybrid.semantic_full),
        ("search.hybrid.thread_near", search.hybrid.thread_near),
        ("search.hybrid.thread_far", search.hybrid.thread_far),
    ] {
        if !value.is_finite() || !(0.0..=100.0).contains(&value) {
            return Err((key, format!("{key} must be between 0 and 100")));
        }
    }
    if !(0.0..=1.0).contains(&search.related_words) {
        return Err((
            "search.related_words",
            "search.related_words must be between 0 and 1".into(),
        ));
    }
    for (key, value) in [
        ("search.feedback_docs", search.feedback_docs),
        ("search.feedback_terms", search.feedback_terms),
    ] {
        if value > 50 {
            return Err((key, format!("{key} must be at most 50")));
        }
    }
    Ok(())
}

fn flatten_into(
    prefix: String,
    value: &serde_json::Value,
    out: &mut BTreeMap<String, serde_json::Value>,
) {
    match value {
        serde_json::Value::Object(map) => {
            for (k, v) in map {
                let key = if prefix.is_empty() {
                    k.clone()
                } else {
                    format!("{prefix}.{k}")
                };
                flatten_into(key, v, out);
            }
        }
        serde_json::Value::Number(n) if n.is_f64() => {
            out.insert(prefix, shortest_float(n.as_f64().unwrap_or_default()));
        }
        other => {
            out.insert(prefix, other.clone());
        }
    }
}

/// A setting's float as written: an `f32` setting widened to `f64` shows
/// binary noise (0.92 → 0.9200000166893005); a value an `f32` holds exactly
/// is shown as the shortest decimal that gives that `f32` back.
fn shortest_float(v: f64) -> serde_json::Value {
    let narrow = v as f32;
    let v = if f64::from(narrow) == v {
        narrow.to_string().parse().unwrap_or(v)
    } else {
        v
    };
    serde_json::json!(v)
}

/// The dotted keys a config file sets, each with the 1-based line and
/// column where it is written.
///
/// # Errors
/// The TOML parser's message when the text is not TOML.
pub fn file_keys(text: &str) -> Result<BTreeMap<String, (usize, usize)>, String> {
    let table = toml::de::DeTable::parse(text).map_err(|e| e.message().to_string())?;
    let mut out = BTreeMap::new();
    walk_keys(text, String::new(), table.get_ref(), &mut out);
    Ok(out)
}

fn walk_keys(
    text: &str,
    prefix: String,
    table: &toml::de::DeTable<'_>,
    out: &mut BTreeMap<String, (usize, usize)>,
) {
    for (k, v) in table {
        let key = if prefix.is_empty() {
            k.get_ref().to_string()
        } else {
            format!("{prefix}.{}", k.get_ref())
        };
        match v.get_ref() {
            toml::de::DeValue::Table(inner) => walk_keys(text, key, inner, out),
            _ => {
                out.insert(key, line_col(text, k.span().start));
            }
        }
    }
}

fn line_col(text: &str, offset: usize) -> (usize, usize) {
    let before = &text[..offset.min(text.len())];
    let line = before.matches('\n').count() + 1;
    let column = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
    (line, column)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::ffi::OsString;

    fn env<'a>(vars: &'a [(&'a str, &'a str)]) -> impl Fn(&str) -> Option<OsString> + 'a {
        move |k| {
            vars.iter()
                .find(|(name, _)| *name == k)
                .map(|(_, v)| OsString::from(v))
        }
    }

    #[test]
    fn socket_follows_explicit_data_dir() {
        let flags = PathFlags {
            data_dir: Some("/d".into()),
            ..Default::default()
        };
        let p = Paths::resolve_with(&flags, env(&[("XDG_RUNTIME_DIR", "/run/user/1")]));
        assert_eq!(p.socket, PathBuf::from("/d/memd.sock"));
        assert_eq!(p.data_dir, PathBuf::from("/d"));
    }

    #[test]
    fn socket_defaults_to_runtime_dir() {
        let p = Paths::resolve_with(
            &PathFlags::default(),
            env(&[("HOME", "/h"), ("XDG_RUNTIME_DIR", "/run/user/1")]),
        );
        assert_eq!(p.socket, PathBuf::from("/run/user/1/memd/memd.sock"));
        assert_eq!(p.data_dir, PathBuf::from("/h/.local/share/memd"));
        assert_eq!(p.config, PathBuf::from("/h/.config/memd/config.toml"));
    }

    #[test]
    fn socket_without_runtime_dir_is_in_data_dir() {
        let p = Paths::resolve_with(
            &PathFlags::default(),
            env(&[("HOME", "/h"), ("XDG_DATA_HOME", "/x")]),
        );
        assert_eq!(p.socket, PathBuf::from("/x/memd/memd.sock"));
    }

    #[test]
    fn socket_flag_wins() {
        let flags = PathFlags {
            data_dir: Some("/d".into()),
            socket: Some("/s.sock".into()),
            config: Some("/c.toml".into()),
        };
        let p = Paths::resolve_with(&flags, env(&[]));
        assert_eq!(p.socket, PathBuf::from("/s.sock"));
        assert_eq!(p.config, PathBuf::from("/c.toml"));
    }

    #[test]
    fn config_errors_carry_line_and_column() {
        let text = "[storage]\nreaders = 2\n[drift]\npolicy = \"sometimes\"\n";
        let err = Config::parse(Path::new("c.toml"), text).unwrap_err();
        match err {
            ConfigError::Invalid { line, column, .. } => {
                assert_eq!(line, 4);
                assert_eq!(column, 10);
            }
            other => panic!("unexpected {other}"),
        }
        let err = Config::parse(Path::new("c.toml"), "[storage]\nredaers = 2\n").unwrap_err();
        assert!(err.to_string().contains("line 2"), "{err}");
    }

    #[test]
    fn config_values_parse() {
        let text = "[socket]\nmode = \"0660\"\n[storage]\nsynchronous = \"normal\"\n";
        let c = Config::parse(Path::new("c.toml"), text).unwrap();
        assert_eq!(c.socket.mode, 0o660);
        assert_eq!(c.storage.synchronous, crate::store::Synchronous::Normal);
        assert_eq!(
            Config::parse(Path::new("c"), "").unwrap(),
            Config::default()
        );
    }

    #[test]
    fn related_words_is_a_share() {
        let parse =
            |v: &str| Config::parse(Path::new("c"), &format!("[search]\nrelated_words = {v}\n"));
        assert_eq!(parse("0.6").unwrap().search.related_words, 0.6);
        assert_eq!(parse("0").unwrap().search.related_words, 0.0);
        for bad in ["1.5", "-0.1", "nan"] {
            let err = parse(bad).unwrap_err().to_string();
            assert!(
                err.contains("search.related_words must be between 0 and 1"),
                "{bad}: {err}"
            );
        }
    }
}
