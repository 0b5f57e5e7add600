//! The `memd` binary: CLI, daemon and shell in one executable.

use std::process::ExitCode;

use clap::Parser;

fn main() -> ExitCode {
    let cli = match memd::cli::args::Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => return usage_error(e),
    };
    let code = memd::cli::run(cli);
    ExitCode::from(u8::try_from(code).unwrap_or(1))
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
        return ExitCode::from(memd::cli::EXIT_USAGE as u8);
    }
    let _ = e.print();
    ExitCode::from(if is_info {
        0
    } else {
        memd::cli::EXIT_USAGE as u8
    })
}
