//! `memd shell`: one session over stdin, for any language.
//!
//! Each input line is a command in the CLI's own syntax without the `memd`
//! word, split like a POSIX shell; a line starting with `{` is a JSON request
//! (for multi-line content): `{"command": "add", "content": "…", "tag":
//! ["a"]}` — keys are the long flag names (`_` or `-`), the positional
//! argument is `content` (add), `query` (search) or `id`. With `--json`
//! every input line gets exactly one flushed line of output; an error answers
//! its line and the shell goes on; end of input exits 0.

use std::io::BufRead;

use clap::Parser;
use memd_client::exit;
use serde_json::Value;

use super::emit;
use crate::commands::args::{Command, Global, ShellLine};
use crate::commands::{CommandError, Output, client_paths, connect, execute};

/// Runs the shell; returns the exit code.
pub fn run(g: &Global) -> i32 {
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => return emit(g.json, Err(CommandError::Io(e.to_string()))),
    };
    runtime.block_on(async {
        let mut client = match connect(g, true).await {
            Ok(c) => c,
            Err(e) => return emit(g.json, Err(e)),
        };
        let paths = client_paths(g);
        let stdin = std::io::stdin();
        let mut input = stdin.lock();
        let mut raw = Vec::new();
        loop {
            raw.clear();
            match input.read_until(b'\n', &mut raw) {
                Ok(0) => break,
                Ok(_) => {}
                Err(e) => {
                    emit(
                        g.json,
                        Err(CommandError::Io(format!("cannot read stdin: {e}"))),
                    );
                    return exit::ERROR;
                }
            }
            let Ok(line) = std::str::from_utf8(&raw) else {
                emit(
                    g.json,
                    Err(CommandError::Usage("the line is not valid UTF-8".into())),
                );
                continue;
            };
            let line = line.trim();
            if line.is_empty() {
                if g.json {
                    emit(true, Err(CommandError::Usage("empty line".into())));
                }
                continue;
            }
            let mut json = g.json;
            let result = match parse_line(line) {
                Ok((
                    ShellLine {
                        command: Command::Help(a),
                    },
                    line_json,
                )) => {
                    json |= line_json;
                    super::help::help(super::help::shell_command(), &a.topic)
                }
                Ok((ShellLine { command }, line_json)) => {
                    json |= line_json;
                    execute(command, &mut client, &paths, false).await
                }
                Err(LineError::Help(text)) => Ok(Output {
                    json: serde_json::json!({"success": true, "help": text}),
                    human: text,
                }),
                Err(LineError::Usage(e)) => Err(CommandError::Usage(e)),
            };
            emit(json, result);
        }
        exit::OK
    })
}

enum LineError {
    Help(String),
    Usage(String),
}

/// Parses a line; the second value says it asked for JSON output: `--json`
/// is accepted on a line as on the command line (before a `--`), and
/// answers that line in JSON.
fn parse_line(line: &str) -> Result<(ShellLine, bool), LineError> {
    let mut argv = if line.starts_with('{') {
        json_argv(line).map_err(LineError::Usage)?
    } else {
        shlex::split(line)
            .ok_or_else(|| LineError::Usage("unbalanced quotes in the line".into()))?
    };
    let end = argv.iter().position(|a| a == "--").unwrap_or(argv.len());
    let json = argv[..end].iter().any(|a| a == "--json");
    if json {
        let rest = argv.split_off(end);
        argv.retain(|a| a != "--json");
        argv.extend(rest);
    }
    let parsed = ShellLine::try_parse_from(argv).map_err(|e| {
        use clap::error::ErrorKind;
        let text = e.render().to_string().trim_end().to_string();
        match e.kind() {
            ErrorKind::DisplayHelp | ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand => {
                LineError::Help(text)
            }
            _ => LineError::Usage(text),
        }
    })?;
    Ok((parsed, json))
}

/// Turns a JSON request into the argv of the same command, so JSON lines
/// get exactly the validation of typed lines.
fn json_argv(line: &str) -> Result<Vec<String>, String> {
    let value: Value =
        serde_json::from_str(line).map_err(|e| format!("the line is not valid JSON: {e}"))?;
    let Value::Object(obj) = value else {
        return Err("a JSON line must be an object with a \"command\" key".into());
    };
    let command = obj
        .get("command")
        .and_then(Value::as_str)
        .ok_or("a JSON line needs a \"command\" string")?
        .to_string();
    let command = command.split_whitespace().collect::<Vec<_>>().join(" ");
    let positional: &[&str] = match command.as_str() {
        "add" | "task add" => &["content", "text"],
        "search" => &["query"],
        "supersede" => &["old", "new"],
        "get" | "forget" | "update" | "history" | "confirm" | "task start" | "task done"
        | "task cancel" => &["id"],
        _ => &[],
    };
    let mut argv: Vec<String> = command.split(' ').map(str::to_string).collect();
    let mut tail = Vec::new();
    for (key, value) in &obj {
        if key == "command" {
            continue;
        }
        if positional.contains(&key.as_str()) {
            continue;
        }
        let flag = match key.as_str() {
            "tags" => "--tag".to_string(),
            "metadata" => "--meta".to_string(),
            k => format!("--{}", k.replace('_', "-")),
        };
        match value {
            Value::Null | Value::Bool(false) => {}
            Value::Bool(true) => argv.push(flag),
            Value::Array(items) => {
                for item in items {
                    argv.push(flag.clone());
                    argv.push(scalar(key, item)?);
                }
            }
            Value::Object(map) if key == "metadata" || key == "meta" => {
                for (k, v) in map {
                    argv.push("--meta".into());
                    let v = match v {
                        Value::String(s) => s.clone(),
                        other => other.to_string(),
                    };
                    argv.push(format!("{k}={v}"));
                }
            }
            other => {
                argv.push(flag);
                argv.push(scalar(key, other)?);
            }
        }
    }
    // Positional arguments in their order, after `--` (they may start with
    // a dash).
    for key in positional {
        if let Some(value) = obj.get(*key) {
            tail.push(scalar(key, value)?);
        }
    }
    if !tail.is_empty() {
        argv.push("--".into());
        argv.extend(tail);
    }
    Ok(argv)
}

fn scalar(key: &str, v: &Value) -> Result<String, String> {
    match v {
        Value::String(s) => Ok(s.clone()),
        Value::Number(n) => Ok(n.to_string()),
        Value::Bool(b) => Ok(b.to_string()),
        _ => Err(format!("\"{key}\" must be a string or a number")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_lines_become_argv() {
        let argv = json_argv(
            r#"{"command":"add","content":"multi\nline","tags":["a","b"],"category":"fact","pin":true,"metadata":{"port":5432,"env":"prod"}}"#,
        )
        .unwrap();
        assert_eq!(
            argv,
            vec![
                "add",
                "--category",
                "fact",
                "--meta",
                "env=prod",
                "--meta",
                "port=5432",
                "--pin",
                "--tag",
                "a",
                "--tag",
                "b",
                "--",
                "multi\nline"
            ]
        );
        let argv =
            json_argv(r#"{"command":"update","id":4,"expect_rev":2,"content":"-x"}"#).unwrap();
        assert_eq!(
            argv,
            vec!["update", "--content", "-x", "--expect-rev", "2", "--", "4"]
        );
        let argv = json_argv(r#"{"command":"supersede","new":4,"old":2}"#).unwrap();
        assert_eq!(argv, vec!["supersede", "--", "2", "4"]);
        let argv = json_argv(r#"{"command":"task done","id":7}"#).unwrap();
        assert_eq!(argv, vec!["task", "done", "--", "7"]);
        assert!(json_argv("[1]").is_err());
        assert!(json_argv(r#"{"content":"x"}"#).is_err());
    }

    #[test]
    fn lines_parse_like_the_cli() {
        assert!(matches!(
            parse_line(r#"add "two words" --tag x"#),
            Ok((
                ShellLine {
                    command: crate::commands::args::Command::Add(_)
                },
                false
            ))
        ));
        // `--json` on a line answers it in JSON; after `--` it is content.
        assert!(matches!(
            parse_line("inject --json"),
            Ok((
                ShellLine {
                    command: crate::commands::args::Command::Inject
                },
                true
            ))
        ));
        assert!(matches!(parse_line("add -- --json"), Ok((_, false))));
        assert!(matches!(
            parse_line("add 'unbalanced"),
            Err(LineError::Usage(_))
        ));
        assert!(matches!(parse_line("frobnicate"), Err(LineError::Usage(_))));
        assert!(matches!(parse_line("--help"), Err(LineError::Help(_))));
        assert!(matches!(
            parse_line("help add"),
            Ok((
                ShellLine {
                    command: crate::commands::args::Command::Help(_)
                },
                false
            ))
        ));
    }
}
