//! The conversation turns in an agent host's transcript lines (pure): what
//! capture stores of Claude Code's `<session>.jsonl` and Codex CLI's
//! `rollout-….jsonl`.
//!
//! A turn is what a person typed and what the model answered. Not turns:
//! tool output (`tool_result` lines, Codex's `function_call_output`),
//! meta lines (`isMeta`), subagents' lines (`isSidechain`), compact
//! summaries (`isCompactSummary`, Codex's `compacted`), system reminders
//! (`<system-reminder>…</system-reminder>`, taken out of a message), slash
//! command wrappers (`<command-name>`, `<local-command-stdout>`, …),
//! hook output (memd's own block among it) and the model's thinking. A
//! tool call is one line, the tool and its target (`[Bash: cargo test]`),
//! in the reply it belongs to. Text inside `<private>…</private>` (across
//! the lines of one message, nested spans closed at their match) and
//! every secret the gate knows are left out here, before anything leaves
//! the hook; a tool call's target is cut only after its secrets went.

use memd_proto::CapturedTurn;
use serde_json::Value;

use crate::gate::private::Private;
use crate::gate::secrets;

/// Longest target of a tool call kept in its line.
const MAX_TARGET_CHARS: usize = 160;

/// What a stretch of lines holds.
#[derive(Debug, Default)]
pub struct Turns {
    /// The turns, in order.
    pub turns: Vec<CapturedTurn>,
    /// Lines that were not JSON.
    pub invalid: u64,
    /// The line the last turn's message starts at, when it is an
    /// assistant message whose next lines may follow the stretch: a reader
    /// that stops in the middle of a message reads it again from there,
    /// so the message is one turn, its private spans taken out whole.
    pub last_message_from: Option<usize>,
}

/// The turns of a stretch of complete lines. Consecutive lines of one
/// assistant message (Claude Code writes each content block on its own
/// line) are one turn, named by its first line; its private spans are
/// taken out once its lines are joined (a span may open in one line and
/// close in another), and its secrets before anything is cut.
pub fn turns(host: Format, lines: &[&[u8]]) -> Turns {
    let mut pending: Vec<(Piece, usize)> = Vec::new();
    let mut invalid = 0;
    // The message the last turn came from (an assistant's, to join).
    let mut last_message: Option<String> = None;
    for (n, line) in lines.iter().enumerate() {
        let line = trim_ascii(line);
        if line.is_empty() {
            continue;
        }
        let Ok(v) = serde_json::from_slice::<Value>(line) else {
            invalid += 1;
            continue;
        };
        let piece = match host {
            Format::ClaudeCode => claude_code(&v),
            Format::Codex => codex(&v, line),
        };
        let Some(piece) = piece else {
            continue;
        };
        if piece.speaker == "Assistant"
            && piece.message.is_some()
            && piece.message == last_message
            && let Some((prev, _)) = pending.last_mut()
        {
            prev.parts.extend(piece.parts);
            continue;
        }
        last_message.clone_from(&piece.message);
        pending.push((piece, n));
    }
    let last_message_from = pending
        .last()
        .filter(|(p, _)| p.speaker == "Assistant" && p.message.is_some())
        .map(|(_, n)| *n);
    let turns = pending
        .into_iter()
        .filter_map(|(piece, _)| {
            let text = render(&piece.parts);
            // A message that kept nothing is no turn; nor is a user line
            // that is a host's wrapper.
            let dropped = text.trim().is_empty() || (piece.speaker == "User" && is_wrapper(&text));
            (!dropped).then(|| CapturedTurn {
                id: piece.id,
                speaker: piece.speaker.into(),
                text,
                at: piece.at,
            })
        })
        .collect();
    Turns {
        turns,
        invalid,
        last_message_from,
    }
}

/// A transcript's format.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// Claude Code: `{"type":"user"|"assistant","uuid",…,"message":{…}}`.
    ClaudeCode,
    /// Codex CLI: `{"timestamp","type":"response_item",
    /// "payload":{"type":"message"|"function_call",…}}` (and lines of other
    /// types, not read).
    Codex,
}

/// A part of a message, in order.
#[derive(Debug)]
enum Part {
    /// Text (system reminders out).
    Text(String),
    /// A tool call and its target as the input has it (not yet cut).
    Tool {
        name: String,
        target: Option<String>,
    },
}

/// A line's part of a turn.
struct Piece {
    id: String,
    speaker: &'static str,
    parts: Vec<Part>,
    at: Option<String>,
    /// The assistant message it belongs to (lines of one are joined).
    message: Option<String>,
}

/// A line's parts as kept: none when its text holds memd's own block
/// (hook output shown back in the transcript).
fn kept(parts: Vec<Part>) -> Vec<Part> {
    let memd_block = parts.iter().any(|p| {
        matches!(p, Part::Text(t) if t.contains("SessionStart hook additional context:")
            || t.contains("<memd-memory"))
    });
    if memd_block { Vec::new() } else { parts }
}

fn claude_code(v: &Value) -> Option<Piece> {
    let kind = v["type"].as_str()?;
    if !matches!(kind, "user" | "assistant")
        || v["isMeta"] == true
        || v["isSidechain"] == true
        || v["isCompactSummary"] == true
        || v["isVisibleInTranscriptOnly"] == true
        || !v["toolUseResult"].is_null()
    {
        return None;
    }
    let id = v["uuid"].as_str().filter(|s| !s.is_empty())?.to_string();
    let at = v["timestamp"].as_str().map(str::to_string);
    let message = &v["message"];
    let mut parts = Vec::new();
    match &message["content"] {
        Value::String(s) => parts.push(text_part(s)),
        Value::Array(blocks) => {
            for b in blocks {
                match b["type"].as_str() {
                    Some("text") => parts.extend(b["text"].as_str().map(text_part)),
                    Some("tool_use") => parts.push(Part::Tool {
                        name: b["name"].as_str().unwrap_or("tool").to_string(),
                        target: tool_target(&b["input"]),
                    }),
                    // A user line holding tool output is not a turn.
                    Some("tool_result") => return None,
                    Some("image") => parts.push(Part::Text("[image]".into())),
                    _ => {}
                }
            }
        }
        _ => return None,
    }
    let (speaker, message) = if kind == "user" {
        ("User", None)
    } else {
        ("Assistant", message["id"].as_str().map(str::to_string))
    };
    Some(Piece {
        id,
        speaker,
        parts: kept(parts),
        at,
        message,
    })
}

fn codex(v: &Value, raw: &[u8]) -> Option<Piece> {
    let payload = &v["payload"];
    let at = v["timestamp"].as_str().map(str::to_string);
    // Codex lines have no id: the line's own bytes name it (the same line
    // copied into a resumed session's file is the same turn).
    let id = || {
        use sha2::Digest;
        let d = sha2::Sha256::digest(raw);
        d[..12]
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect::<String>()
    };
    match (v["type"].as_str()?, payload["type"].as_str()?) {
        // The conversation as the model saw it (the `event_msg` lines
        // repeat it for the UI: not read, so nothing is stored twice).
        ("response_item", "message") => {
            let speaker = match payload["role"].as_str()? {
                "user" => "User",
                "assistant" => "Assistant",
                // `developer`: instructions, skills, memd's own block.
                _ => return None,
            };
            let parts = payload["content"]
                .as_array()?
                .iter()
                .filter(|c| matches!(c["type"].as_str(), Some("input_text" | "output_text")))
                .filter_map(|c| c["text"].as_str())
                .map(text_part)
                .collect();
            Some(Piece {
                id: id(),
                speaker,
                parts: kept(parts),
                at,
                message: None,
            })
        }
        ("response_item", "function_call" | "custom_tool_call" | "local_shell_call") => {
            let name = payload["name"].as_str().unwrap_or("shell");
            let input = match &payload["arguments"] {
                Value::String(s) => serde_json::from_str(s).unwrap_or(Value::String(s.clone())),
                other => other.clone(),
            };
            let input = if input.is_null() {
                payload["action"].clone()
            } else {
                input
            };
            Some(Piece {
                id: id(),
                speaker: "Assistant",
                parts: vec![Part::Tool {
                    name: name.to_string(),
                    target: tool_target(&input),
                }],
                at,
                message: None,
            })
        }
        _ => None,
    }
}

/// A text block, system reminders out.
fn text_part(text: &str) -> Part {
    Part::Text(strip_spans(text, "<system-reminder>", "</system-reminder>"))
}

/// What a tool call is about: its file, command, pattern, URL or query.
fn tool_target(input: &Value) -> Option<String> {
    const KEYS: &[&str] = &[
        "file_path",
        "notebook_path",
        "path",
        "command",
        "cmd",
        "pattern",
        "url",
        "query",
        "description",
        "prompt",
    ];
    KEYS.iter().find_map(|k| match &input[*k] {
        Value::String(s) if !s.trim().is_empty() => Some(s.clone()),
        Value::Array(a) if !a.is_empty() => Some(
            a.iter()
                .filter_map(Value::as_str)
                .collect::<Vec<_>>()
                .join(" "),
        ),
        _ => None,
    })
}

/// A turn's text from its parts, in order: private spans out across all
/// of them (a span opened in a text block hides the tool calls and text
/// after it until it closes), each tool call one line, then every secret
/// replaced by `[redacted:<kind>]` — before anything leaves the hook.
fn render(parts: &[Part]) -> String {
    let mut private = Private::new();
    let mut lines: Vec<String> = Vec::new();
    for part in parts {
        match part {
            Part::Text(text) => {
                let kept = private.feed(text);
                let kept = kept.trim();
                if !kept.is_empty() {
                    lines.push(kept.to_string());
                }
            }
            Part::Tool { name, target } => {
                let hidden = private.open();
                let target = target.as_deref().map(|t| private.feed(t));
                if !hidden {
                    lines.push(tool_line(name, target.as_deref()));
                }
            }
        }
    }
    let text = lines.join("\n");
    let found = secrets::find(&text);
    secrets::redact_with(&text, &found, secrets::capture_marker)
}

/// A tool call as one line: `[Tool: target]`, the target's secrets
/// replaced before it is cut to [`MAX_TARGET_CHARS`] (a cut secret may
/// keep all but its last characters and no longer have its shape).
fn tool_line(name: &str, target: Option<&str>) -> String {
    let target = target.map(|t| {
        let t = secrets::redact_with(t, &secrets::find(t), secrets::capture_marker);
        t.split_whitespace().collect::<Vec<_>>().join(" ")
    });
    match target.filter(|t| !t.is_empty()) {
        Some(t) => {
            let t: String = if t.chars().count() > MAX_TARGET_CHARS {
                t.chars().take(MAX_TARGET_CHARS).chain(['…']).collect()
            } else {
                t
            };
            format!("[{name}: {t}]")
        }
        None => format!("[{name}]"),
    }
}

/// `text` without its `open…close` spans (an unclosed one hides the rest).
fn strip_spans(text: &str, open: &str, close: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut at = 0;
    while let Some(i) = text[at..].find(open) {
        out.push_str(&text[at..at + i]);
        match text[at + i..].find(close) {
            Some(j) => at = at + i + j + close.len(),
            None => return out,
        }
    }
    out.push_str(&text[at..]);
    out
}

/// A slash command's wrapper, a local command's output, an interruption
/// note, the host's own context blocks: not something a person said.
fn is_wrapper(text: &str) -> bool {
    const OPENERS: &[&str] = &[
        "<command-name>",
        "<command-message>",
        "<command-args>",
        "<local-command-stdout>",
        "<local-command-stderr>",
        "<local-command-caveat>",
        "<bash-input>",
        "<bash-stdout>",
        "<bash-stderr>",
        "<user_instructions>",
        "<environment_context>",
        "<user_shell_command>",
        "<turn_aborted>",
        "# AGENTS.md instructions",
        "[Request interrupted by user",
        "Caveat: The messages below were generated",
    ];
    let t = text.trim_start();
    t.is_empty() || OPENERS.iter().any(|o| t.starts_with(o))
}

fn trim_ascii(b: &[u8]) -> &[u8] {
    let start = b
        .iter()
        .position(|c| !c.is_ascii_whitespace())
        .unwrap_or(b.len());
    let end = b
        .iter()
        .rposition(|c| !c.is_ascii_whitespace())
        .map_or(start, |e| e + 1);
    &b[start..end.max(start)]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(format: Format, text: &str) -> (Vec<CapturedTurn>, u64) {
        let lines: Vec<&[u8]> = text.lines().map(str::as_bytes).collect();
        let t = turns(format, &lines);
        (t.turns, t.invalid)
    }

    /// A Claude Code assistant line of message `m` holding `blocks`.
    fn assistant(uuid: &str, m: &str, blocks: serde_json::Value) -> String {
        serde_json::json!({"type": "assistant", "uuid": uuid,
            "message": {"id": m, "role": "assistant", "content": blocks}})
        .to_string()
    }

    fn text(t: &str) -> serde_json::Value {
        serde_json::json!({"type": "text", "text": t})
    }

    fn bash(command: &str) -> serde_json::Value {
        serde_json::json!({"type": "tool_use", "name": "Bash", "input": {"command": command}})
    }

    #[test]
    fn claude_code_prompts_and_replies_are_turns_the_rest_is_not() {
        let t = r##"{"type":"queue-operation","operation":"dequeue"}
{"type":"user","uuid":"u1","timestamp":"2026-11-27T10:00:00Z","message":{"role":"user","content":"where is the deploy script?"}}
{"type":"assistant","uuid":"a1","message":{"id":"m1","role":"assistant","content":[{"type":"thinking","thinking":"hmm"}]}}
{"type":"assistant","uuid":"a2","message":{"id":"m1","role":"assistant","content":[{"type":"text","text":"Let me look."}]}}
{"type":"assistant","uuid":"a3","message":{"id":"m1","role":"assistant","content":[{"type":"tool_use","name":"Read","input":{"file_path":"/srv/ops/deploy.sh"}}]}}
{"type":"user","uuid":"u2","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"t","content":"#!/bin/sh\nsecret output"}]},"toolUseResult":{"stdout":"x"}}
{"type":"assistant","uuid":"a4","message":{"id":"m2","role":"assistant","content":[{"type":"text","text":"It is ops/deploy.sh."}]}}
{"type":"user","uuid":"u3","isMeta":true,"message":{"role":"user","content":"Caveat: meta"}}
{"type":"user","uuid":"u4","message":{"role":"user","content":"<command-name>/clear</command-name>"}}
{"type":"user","uuid":"u5","isCompactSummary":true,"message":{"role":"user","content":"This session is being continued..."}}
{"type":"user","uuid":"u6","isSidechain":true,"message":{"role":"user","content":"subagent prompt"}}
{"type":"system","uuid":"s1","content":"hook ran"}
{"type":"user","uuid":"u7","message":{"role":"user","content":"<system-reminder>memd block</system-reminder>thanks <private>my pin is 1234</private>bye"}}
not json at all
{"type":"summary","summary":"Deploy script","leafUuid":"a4"}"##;
        let (turns, invalid) = run(Format::ClaudeCode, t);
        assert_eq!(invalid, 1);
        let got: Vec<(&str, &str, &str)> = turns
            .iter()
            .map(|t| (t.id.as_str(), t.speaker.as_str(), t.text.as_str()))
            .collect();
        assert_eq!(
            got,
            vec![
                ("u1", "User", "where is the deploy script?"),
                (
                    "a1",
                    "Assistant",
                    "Let me look.\n[Read: /srv/ops/deploy.sh]"
                ),
                ("a4", "Assistant", "It is ops/deploy.sh."),
                ("u7", "User", "thanks bye"),
            ]
        );
        assert_eq!(turns[0].at.as_deref(), Some("2026-11-27T10:00:00Z"));
    }

    #[test]
    fn codex_messages_and_tool_calls_are_turns() {
        let t = r###"{"timestamp":"2026-11-27T10:00:00Z","type":"session_meta","payload":{"id":"s"}}
{"timestamp":"2026-11-27T10:00:01Z","type":"response_item","payload":{"type":"message","role":"user","content":[{"type":"input_text","text":"<environment_context>cwd</environment_context>"}]}}
{"timestamp":"2026-11-27T10:00:01Z","type":"response_item","payload":{"type":"message","role":"developer","content":[{"type":"input_text","text":"## Memory\n- a rule"}]}}
{"timestamp":"2026-11-27T10:00:02Z","type":"response_item","payload":{"type":"message","role":"user","content":[{"type":"input_text","text":"run the tests"}]}}
{"timestamp":"2026-11-27T10:00:02Z","type":"event_msg","payload":{"type":"user_message","message":"run the tests"}}
{"timestamp":"2026-11-27T10:00:03Z","type":"response_item","payload":{"type":"function_call","name":"shell","arguments":"{\"command\":[\"cargo\",\"test\"]}","call_id":"c"}}
{"timestamp":"2026-11-27T10:00:04Z","type":"response_item","payload":{"type":"function_call_output","call_id":"c","output":"ok"}}
{"timestamp":"2026-11-27T10:00:05Z","type":"event_msg","payload":{"type":"agent_message","message":"All tests pass."}}
{"timestamp":"2026-11-27T10:00:05Z","type":"response_item","payload":{"type":"message","role":"assistant","content":[{"type":"output_text","text":"All tests pass."}]}}"###;
        let (turns, invalid) = run(Format::Codex, t);
        assert_eq!(invalid, 0);
        let got: Vec<(&str, &str)> = turns
            .iter()
            .map(|t| (t.speaker.as_str(), t.text.as_str()))
            .collect();
        assert_eq!(
            got,
            vec![
                ("User", "run the tests"),
                ("Assistant", "[shell: cargo test]"),
                ("Assistant", "All tests pass."),
            ]
        );
        // The same line is the same turn; another line another.
        let (again, _) = run(Format::Codex, t);
        assert_eq!(again[0].id, turns[0].id);
        assert_ne!(turns[0].id, turns[1].id);
    }

    #[test]
    fn a_long_tool_target_is_cut_after_its_secrets_go() {
        let line = tool_line("Bash", Some(&"x".repeat(1_000)));
        assert!(line.chars().count() < MAX_TARGET_CHARS + 20, "{line}");
        // A token at every offset around the cut: none of it is kept.
        let token = "ghp_R8x2kQ9mN4vB7cT1wZ5yL3pH6jF0dS8aE2gU";
        for at in 100..200 {
            let command = format!("{} {token} && echo done", "a".repeat(at));
            let line = tool_line("Bash", Some(&command));
            assert!(!line.contains("R8x2kQ9m"), "{at}: {line}");
            for n in (8..=token.len()).rev() {
                assert!(!line.contains(&token[token.len() - n..]), "{at}: {line}");
            }
        }
    }

    #[test]
    fn private_spans_never_leave_whole_messages() {
        // Across the lines of one assistant message, tool calls between.
        let t = [
            assistant(
                "a1",
                "m1",
                serde_json::json!([text("Here is the plan <private>the vault pin is 4471")]),
            ),
            assistant("a2", "m1", serde_json::json!([bash("echo 4471 > pin")])),
            assistant(
                "a3",
                "m1",
                serde_json::json!([text("and 4471 again</private> then deploy.")]),
            ),
            // Nested: closed at its match, not at the first close.
            assistant(
                "b1",
                "m2",
                serde_json::json!([text("a <private>x <private>y</private> ZZTOP</private> b")]),
            ),
            // Unclosed: the rest of the message is hidden, the next message is not.
            assistant(
                "c1",
                "m3",
                serde_json::json!([text("keep <private>hidden")]),
            ),
            assistant(
                "c2",
                "m3",
                serde_json::json!([text("hidden too"), bash("cat secret")]),
            ),
            assistant("d1", "m4", serde_json::json!([text("visible again")])),
            // A span inside a tool call's target.
            assistant(
                "e1",
                "m5",
                serde_json::json!([bash("echo <private>hunter2</private> done")]),
            ),
        ]
        .join("\n");
        let (turns, _) = run(Format::ClaudeCode, &t);
        let got: Vec<(&str, &str)> = turns
            .iter()
            .map(|t| (t.id.as_str(), t.text.as_str()))
            .collect();
        assert_eq!(
            got,
            vec![
                ("a1", "Here is the plan\nthen deploy."),
                ("b1", "a  b"),
                ("c1", "keep"),
                ("d1", "visible again"),
                ("e1", "[Bash: echo done]"),
            ]
        );
    }

    #[test]
    fn secrets_never_leave_the_hook() {
        let t = [assistant(
            "a1",
            "m1",
            serde_json::json!([
                text("the key is AKIAIOSFODNN7EXAMPLE"),
                bash("PGPASSWORD=Tr0ub4dor3x psql -h db")
            ]),
        )]
        .join("\n");
        let (turns, _) = run(Format::ClaudeCode, &t);
        assert_eq!(
            turns[0].text,
            "the key is [redacted:AWS-access-key]\n[Bash: PGPASSWORD=[redacted:credential-assignment] psql -h db]"
        );
    }

    #[test]
    fn the_last_message_may_go_on_after_the_stretch() {
        let t = [
            r#"{"type":"user","uuid":"u1","message":{"role":"user","content":"go"}}"#.to_string(),
            assistant("a1", "m1", serde_json::json!([text("first")])),
            assistant("a2", "m1", serde_json::json!([text("second")])),
        ];
        let lines: Vec<&[u8]> = t.iter().map(String::as_bytes).collect();
        assert_eq!(turns(Format::ClaudeCode, &lines).last_message_from, Some(1));
        assert_eq!(
            turns(Format::ClaudeCode, &lines[..1]).last_message_from,
            None
        );
    }
}
