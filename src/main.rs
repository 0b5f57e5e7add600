//! The `memd` binary: CLI, daemon, shell and MCP server in one executable.
//! `memd mcp` goes to the MCP server, every other command to the CLI.

use std::process::ExitCode;

use clap::FromArgMatches;
use memd::cli::help;
use memd::commands::args::{Cli, Command};
use memd_client::exit;

fn main() -> ExitCode {
    // The derived definition plus the grouped `--help` (`memd::cli::help`).
    let parsed = help::command()
        .try_get_matches()
        .and_then(|m| Cli::from_arg_matches(&m).map_err(|e| e.format(&mut help::command())));
    let cli = match parsed {
        Ok(cli) => cli,
        Err(e) => return usage_error(e),
    };
    let code = match cli.command {
        Command::Mcp => memd::mcp::run(cli.global),
        _ => memd::cli::run(cli),
    };
    ExitCode::from(u8::try_from(code).unwrap_or(exit::ERROR as u8))
}

/// Clap errors: help and version print normally; real usage errors become
/// exit 2, and with `--json` one JSON object on stdout.
fn usage_error(e: clap::Error) -> ExitCode {
    use clap::error::ErrorKind;
    let is_info = matches!(
        e.kind(),
        ErrorKind::DisplayHelp
            | ErrorKind::DisplayVersion
            | ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand
    );
    let wants_json = std::env::args()
        .take_while(|a| a != "--")
        .any(|a| a == "--json");
    if wants_json && !is_info {
        let msg = e.render().to_string();
        println!(
            "{}",
            serde_json::json!({"success": false, "code": "usage", "error": msg.trim_end()})
        );
        return ExitCode::from(exit::USAGE as u8);
    }
    let _ = e.print();
    let code = if is_info { exit::OK } else { exit::USAGE };
    ExitCode::from(code as u8)
}
