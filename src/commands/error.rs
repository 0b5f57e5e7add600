//! A command's failure: what went wrong, its exit code (ARCHITECTURE.md "CLI
//! contract"), its message and its `--json` form. The CLI prints it; the MCP
//! server returns its JSON as a tool error.

use memd_client::exit;
use memd_client::proto::ErrorCode;
use serde_json::{Value, json};

/// A failed command.
#[derive(Debug)]
pub enum CommandError {
    /// From the daemon or the connection.
    Client(memd_client::Error),
    /// Bad arguments found before anything was sent.
    Usage(String),
    /// A local file or stdin could not be read.
    Io(String),
    /// The team's PostgreSQL cannot be reached (`memd team init`).
    TeamUnavailable(String),
    /// The role this machine connects to the team's PostgreSQL as lacks
    /// the right (`memd team grant` without admin).
    Forbidden(String),
    /// What the command names is not there (a proposal of `memd team
    /// review`).
    NotFound(String),
    /// `check` found problems.
    Check {
        /// The report.
        report: Value,
        /// Its human form.
        human: String,
    },
}

impl From<memd_client::Error> for CommandError {
    fn from(e: memd_client::Error) -> Self {
        CommandError::Client(e)
    }
}

impl CommandError {
    /// The exit code (ARCHITECTURE.md "CLI contract"), from the one table,
    /// [`memd_client::exit`].
    pub fn exit_code(&self) -> i32 {
        match self {
            CommandError::Client(e) => e.exit_code(),
            CommandError::Usage(_) => exit::USAGE,
            CommandError::Io(_) | CommandError::Check { .. } => exit::ERROR,
            CommandError::TeamUnavailable(_) => exit::of(ErrorCode::TeamUnavailable),
            CommandError::Forbidden(_) => exit::of(ErrorCode::Forbidden),
            CommandError::NotFound(_) => exit::of(ErrorCode::NotFound),
        }
    }

    /// The message.
    pub fn message(&self) -> String {
        match self {
            CommandError::Client(e) => e.to_string(),
            CommandError::Usage(m)
            | CommandError::Io(m)
            | CommandError::TeamUnavailable(m)
            | CommandError::Forbidden(m)
            | CommandError::NotFound(m) => m.clone(),
            CommandError::Check { human, .. } => format!("check failed:\n{human}"),
        }
    }

    /// `{success: false, code, error, ...}`.
    pub fn json(&self) -> Value {
        match self {
            CommandError::Client(e) => {
                let mut v = memd_client::proto::json::error(&e.body());
                v["code"] = json!(e.code());
                v["error"] = json!(e.to_string());
                v
            }
            CommandError::Usage(m) => json!({"success": false, "code": "usage", "error": m}),
            CommandError::Io(m) => json!({"success": false, "code": "io", "error": m}),
            CommandError::TeamUnavailable(m) => {
                json!({"success": false, "code": "team_unavailable", "error": m})
            }
            CommandError::Forbidden(m) => {
                json!({"success": false, "code": "forbidden", "error": m})
            }
            CommandError::NotFound(m) => {
                json!({"success": false, "code": "not_found", "error": m})
            }
            CommandError::Check { report, .. } => {
                let mut v = report.clone();
                v["success"] = json!(false);
                v["code"] = json!("check_failed");
                v["error"] = json!("the check found problems");
                v
            }
        }
    }
}
