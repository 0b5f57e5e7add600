//! `memd hook claude-code`, `memd hook codex` and `memd hook gemini`: an
//! agent runtime's hook events as memd requests, one process per event,
//! the way the host runs hook commands. Codex CLI's hooks (`hooks.json`)
//! and Gemini CLI's (`settings.json`) take Claude Code's shape: the same
//! events where they have them (Gemini's `PreCompress` is Claude Code's
//! `PreCompact`), the same input and output.
//!
//! Every event of one host session joins the named session
//! `<host>:<session_id>` in the namespace of its project, so the processes
//! share one frozen block:
//!
//! - `SessionStart` (startup, resume, clear, compact) → the block as
//!   additional context, byte-identical until the session writes or
//!   compacts;
//! - `PreCompact` (Gemini: `PreCompress`) → `compacted` (the block after
//!   the compaction is new);
//! - `SessionEnd` with reason `clear` or `logout` → the session ends (its
//!   block and read set are dropped); other reasons leave it to `[session]
//!   idle_ttl`, so `claude --resume` gets the same bytes;
//! - `Stop`, `PreCompact` and `SessionEnd` (Claude Code; Codex CLI's `Stop`
//!   and `PreCompact`) also capture the conversation: what is new in the
//!   event's `transcript_path` is stored as captured turns (see
//!   `capture`), unless `[capture] enabled = false`, an `exclude` pattern
//!   matches the working directory, or the repository's `.memd.toml` says
//!   `capture = false`; `Stop` prints nothing;
//! - any other event: nothing.
//!
//! A hook never breaks the agent: when memd cannot answer, the input is
//! not a hook event or the time is up, stdout stays empty, one line on
//! stderr says why, and the exit code is 0.

use std::io::Read;
use std::path::PathBuf;
use std::time::Duration;

use memd_client::exit;
use serde_json::{Value, json};

use super::capture::{self, Source};
use super::transcript::Format;
use crate::commands::args::Global;
pub use crate::commands::project_namespace;
use crate::commands::{CommandError, apply_project, connect, paths, project_capture_off};
use crate::config::Config;

/// How long a hook may take, connecting (and starting a daemon) included,
/// capture aside.
const TIME_LIMIT: Duration = Duration::from_secs(5);

/// How long a hook may spend capturing: `Stop` runs after every reply (a
/// short one: what is left waits for the next), the others once.
fn capture_budget(event: &Value) -> Duration {
    match event["hook_event_name"].as_str() {
        Some("Stop") => Duration::from_secs(3),
        _ => Duration::from_secs(10),
    }
}

/// The `timeout` (seconds) `setup` gives a hook: its work and the time to
/// start a daemon, with room to spare.
pub fn hook_timeout(event: &str) -> u64 {
    match event {
        "SessionStart" => 15,
        "Stop" => 15,
        _ => 30,
    }
}

/// Claude Code keeps at most this many characters of a hook's context.
pub const MAX_CONTEXT_CHARS: usize = 10_000;

/// Largest hook input read.
const MAX_INPUT_BYTES: u64 = 1 << 20;

/// What to do for one event.
#[derive(Debug, PartialEq, Eq)]
enum Action {
    /// Print the session's block as context.
    Inject,
    /// The host compacts: the next block is new.
    Compacted,
    /// End the session.
    End,
    /// Nothing to do.
    Nothing,
}

/// Whether the event captures the conversation (the host's events that
/// have a transcript to read: after a reply, before a compaction, at the
/// end).
fn captures(event: &Value, host: Host) -> bool {
    host.format().is_some()
        && matches!(
            event["hook_event_name"].as_str(),
            Some("Stop" | "PreCompact" | "SessionEnd")
        )
        && event["transcript_path"]
            .as_str()
            .is_some_and(|p| !p.is_empty())
}

fn action(event: &Value) -> Action {
    match event["hook_event_name"].as_str() {
        Some("SessionStart") => Action::Inject,
        Some("PreCompact" | "PreCompress") => Action::Compacted,
        Some("SessionEnd") if matches!(event["reason"].as_str(), Some("clear" | "logout")) => {
            Action::End
        }
        _ => Action::Nothing,
    }
}

/// The block within the host's limit: whole lines, then a note.
fn within_limit(block: &str) -> String {
    if block.chars().count() <= MAX_CONTEXT_CHARS {
        return block.to_string();
    }
    let note = "\n[memd: the memory block was cut to fit the hook's limit]";
    let room = MAX_CONTEXT_CHARS - note.chars().count();
    let mut out = String::new();
    for line in block.split_inclusive('\n') {
        if out.chars().count() + line.chars().count() > room {
            break;
        }
        out.push_str(line);
    }
    out.push_str(note);
    out
}

/// The agent runtime a hook serves.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Host {
    /// Claude Code.
    ClaudeCode,
    /// OpenAI's Codex CLI.
    Codex,
    /// Google's Gemini CLI.
    Gemini,
}

impl Host {
    /// Its name: the agent id and the session names' prefix.
    pub fn name(self) -> &'static str {
        match self {
            Host::ClaudeCode => "claude-code",
            Host::Codex => "codex",
            Host::Gemini => "gemini",
        }
    }

    /// The format of its transcripts, when memd captures them (Gemini
    /// CLI's is not: see docs/capture.md).
    pub fn format(self) -> Option<Format> {
        match self {
            Host::ClaudeCode => Some(Format::ClaudeCode),
            Host::Codex => Some(Format::Codex),
            Host::Gemini => None,
        }
    }
}

/// Runs `memd hook claude-code|codex`; always exits 0. A failure is said
/// on stderr and recorded for `memd doctor` (see [`super::failures`]).
pub fn run_hook(g: &Global, host: Host) -> i32 {
    let mut event = None;
    match run(g, host, &mut event) {
        Ok(Some(out)) => println!("{out}"),
        Ok(None) => {}
        Err(failed) => {
            eprintln!("memd hook: {}", failed.why);
            let failure = super::failures::Failure {
                at: time::OffsetDateTime::now_utc().unix_timestamp(),
                host: host.name().into(),
                event: super::failures::event_name(event.as_deref()),
                code: failed.code,
            };
            let path = super::failures::path();
            if let Err(e) = super::failures::record(&path, failure) {
                eprintln!(
                    "memd hook: cannot record the failure in {}: {e}",
                    path.display()
                );
            }
        }
    }
    exit::OK
}

/// Why a hook failed: the message for stderr and the code recorded.
struct Failed {
    why: String,
    code: String,
}

impl Failed {
    fn new(code: &str, why: impl Into<String>) -> Failed {
        Failed {
            why: why.into(),
            code: code.into(),
        }
    }
}

impl From<&str> for Failed {
    fn from(why: &str) -> Failed {
        Failed::new("input", why)
    }
}

/// The host's answer to an event: the session's block at its start
/// (none for a resumed Codex session whose block is unchanged), nothing
/// otherwise.
async fn answer(
    client: &mut memd_client::Client,
    action: Action,
    host: Host,
    resumed: bool,
    cwd: Option<&std::path::Path>,
    g: &Global,
) -> Result<Option<String>, CommandError> {
    match action {
        Action::Inject => {
            let injected = crate::commands::cites::inject(client, cwd).await?;
            // Codex keeps every SessionStart context it is given, the
            // same bytes too: at a resume, a block the conversation
            // already holds (one memd did not have to build) is not
            // given again. Claude Code drops a repeated one itself.
            if host == Host::Codex && resumed && injected.stats.cached {
                Ok(None)
            } else {
                Ok(Some(
                    json!({
                        "hookSpecificOutput": {
                            "hookEventName": "SessionStart",
                            "additionalContext": within_limit(&injected.block),
                        }
                    })
                    .to_string(),
                ))
            }
        }
        Action::Compacted => {
            client.compacted().await?;
            Ok(None)
        }
        Action::End => {
            // Ending a session that no longer exists is not an error.
            match client
                .session_end(g.session.as_deref().unwrap_or_default())
                .await
            {
                Ok(_) | Err(memd_client::Error::InvalidInput(_)) => Ok(None),
                Err(e) => Err(e.into()),
            }
        }
        Action::Nothing => Ok(None),
    }
}

fn run(g: &Global, host: Host, name: &mut Option<String>) -> Result<Option<String>, Failed> {
    let mut input = String::new();
    std::io::stdin()
        .take(MAX_INPUT_BYTES)
        .read_to_string(&mut input)
        .map_err(|e| Failed::new("input", format!("cannot read the hook event: {e}")))?;
    let event: Value = serde_json::from_str(&input).map_err(|e| {
        Failed::new(
            "input",
            format!("the input is not a hook event (JSON): {e}"),
        )
    })?;
    name.clone_from(&event["hook_event_name"].as_str().map(String::from));
    let action = action(&event);
    let resumed = event["source"] == "resume";
    let mut capturing = captures(&event, host);
    if action == Action::Nothing && !capturing {
        return Ok(None);
    }
    let session_id = event["session_id"]
        .as_str()
        .filter(|s| !s.is_empty())
        .ok_or("the hook event has no session_id")?;
    let mut g = g.clone();
    let cwd = event["cwd"]
        .as_str()
        .map(PathBuf::from)
        .or_else(|| std::env::current_dir().ok());
    if g.namespace.is_none()
        && let Some(cwd) = &cwd
    {
        apply_project(&mut g, cwd);
    }
    let config = Config::load(&paths(&g).config).unwrap_or_default();
    if capturing {
        capturing = cwd
            .as_deref()
            .is_none_or(|d| config.capture.captures(d) && !project_capture_off(d));
    }
    if action == Action::Nothing && !capturing {
        return Ok(None);
    }
    let transcript = PathBuf::from(event["transcript_path"].as_str().unwrap_or_default());
    let budget = if capturing {
        capture_budget(&event)
    } else {
        Duration::ZERO
    };
    if g.agent.is_none() {
        g.agent = Some(host.name().into());
    }
    g.session = Some(format!("{}:{session_id}", host.name()));
    g.hold_block = true;
    g.via = Some("hook");
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| Failed::new("io", e.to_string()))?;
    let work = async {
        let mut client = connect(&g, true).await?;
        let mut captured = Ok(());
        if capturing && let Some(format) = host.format() {
            let src = Source {
                host: host.name(),
                format,
                session: session_id,
                path: &transcript,
            };
            captured = capture::capture(&mut client, &src, config.capture.chunk_bytes, budget)
                .await
                .map(|outcome| {
                    for note in outcome.notes(&transcript) {
                        eprintln!("memd hook: capture: {note}");
                    }
                });
        }
        let answer = answer(&mut client, action, host, resumed, cwd.as_deref(), &g).await?;
        // The host's answer stands; a capture that failed is said after.
        if let Err(why) = captured {
            eprintln!("memd hook: capture: {why}");
        }
        Ok::<_, CommandError>(answer)
    };
    runtime.block_on(async {
        match tokio::time::timeout(TIME_LIMIT + budget, work).await {
            Ok(Ok(out)) => Ok(out),
            Ok(Err(e)) => Err(Failed::new(
                e.json()["code"].as_str().unwrap_or("error"),
                e.message(),
            )),
            Err(_) => Err(Failed::new(
                "timeout",
                format!("memd did not answer within {:?}", TIME_LIMIT + budget),
            )),
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn events_map_to_actions() {
        let a = |v: Value| action(&v);
        assert_eq!(
            a(json!({"hook_event_name": "SessionStart", "source": "resume"})),
            Action::Inject
        );
        assert_eq!(
            a(json!({"hook_event_name": "PreCompact", "trigger": "auto"})),
            Action::Compacted
        );
        assert_eq!(
            a(json!({"hook_event_name": "PreCompress", "trigger": "manual"})),
            Action::Compacted,
            "Gemini CLI's name for it"
        );
        assert_eq!(
            a(json!({"hook_event_name": "SessionEnd", "reason": "clear"})),
            Action::End
        );
        assert_eq!(
            a(json!({"hook_event_name": "SessionEnd", "reason": "logout"})),
            Action::End
        );
        assert_eq!(
            a(json!({"hook_event_name": "SessionEnd", "reason": "prompt_input_exit"})),
            Action::Nothing,
            "a resumed session keeps its block"
        );
        assert_eq!(
            a(json!({"hook_event_name": "UserPromptSubmit"})),
            Action::Nothing
        );
    }

    #[test]
    fn a_long_block_is_cut_at_a_line_within_the_limit() {
        let short = "## Memory\n- a\n";
        assert_eq!(within_limit(short), short);
        let long: String = (0..2000).map(|i| format!("- line {i}\n")).collect();
        let cut = within_limit(&long);
        assert!(cut.chars().count() <= MAX_CONTEXT_CHARS);
        assert!(cut.ends_with("hook's limit]"));
        assert!(cut.starts_with("- line 0\n- line 1\n"));
    }
}
