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
//! in the reply it belongs to. Text inside `<private>…</private>` is left
//! out here, before anything leaves the hook.

use memd_proto::CapturedTurn;
use serde_json::Value;

use crate::gate::capture::strip_private;

/// Longest target of a tool call kept in its line.
const MAX_TARGET_CHARS: usize = 160;

/// The turns of a stretch of complete lines and how many lines were not
/// JSON. Consecutive lines of one assistant message (Claude Code writes
/// each content block on its own line) are one turn, named by its first
/// line.
pub fn turns(host: Format, lines: &[&[u8]]) -> (Vec<CapturedTurn>, u64) {
    let mut out: Vec<CapturedTurn> = Vec::new();
    let mut invalid = 0;
    // The message the last turn came from (an assistant's, to join).
    let mut last_message: Option<String> = None;
    for line in lines {
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
            && let Some(prev) = out.last_mut()
        {
            if !piece.text.is_empty() {
                if !prev.text.is_empty() {
                    prev.text.push('\n');
                }
                prev.text.push_str(&piece.text);
            }
            continue;
        }
        last_message.clone_from(&piece.message);
        // An assistant message's first line may hold nothing to keep (its
        // thinking): it still names the turn its next lines join.
        if piece.text.trim().is_empty() && piece.message.is_none() {
            continue;
        }
        out.push(CapturedTurn {
            id: piece.id,
            speaker: piece.speaker.into(),
            text: piece.text,
            at: piece.at,
        });
    }
    // A message that kept nothing is no turn.
    out.retain(|t| !t.text.trim().is_empty());
    (out, invalid)
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

/// A line's part of a turn.
struct Piece {
    id: String,
    speaker: &'static str,
    text: String,
    at: Option<String>,
    /// The assistant message it belongs to (lines of one are joined).
    message: Option<String>,
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
        Value::String(s) => parts.push(s.clone()),
        Value::Array(blocks) => {
            for b in blocks {
                match b["type"].as_str() {
                    Some("text") => parts.extend(b["text"].as_str().map(str::to_string)),
                    Some("tool_use") => {
                        parts.push(tool_line(b["name"].as_str().unwrap_or("tool"), &b["input"]));
                    }
                    // A user line holding tool output is not a turn.
                    Some("tool_result") => return None,
                    Some("image") => parts.push("[image]".into()),
                    _ => {}
                }
            }
        }
        _ => return None,
    }
    let text = clean(&parts.join("\n"));
    if kind == "user" {
        if is_wrapper(&text) {
            return None;
        }
        return Some(Piece {
            id,
            speaker: "User",
            text,
            at,
            message: None,
        });
    }
    Some(Piece {
        id,
        speaker: "Assistant",
        text,
        at,
        message: message["id"].as_str().map(str::to_string),
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
            let text: Vec<&str> = payload["content"]
                .as_array()?
                .iter()
                .filter(|c| matches!(c["type"].as_str(), Some("input_text" | "output_text")))
                .filter_map(|c| c["text"].as_str())
                .collect();
            let text = clean(&text.join("\n"));
            (!is_wrapper(&text)).then(|| Piece {
                id: id(),
                speaker,
                text,
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
                text: tool_line(name, &input),
                at,
                message: None,
            })
        }
        _ => None,
    }
}

/// A tool call as one line: `[Tool: target]`.
fn tool_line(name: &str, input: &Value) -> String {
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
    let target = KEYS.iter().find_map(|k| match &input[*k] {
        Value::String(s) if !s.trim().is_empty() => Some(s.clone()),
        Value::Array(a) if !a.is_empty() => Some(
            a.iter()
                .filter_map(Value::as_str)
                .collect::<Vec<_>>()
                .join(" "),
        ),
        _ => None,
    });
    match target {
        Some(t) => {
            let t = t.split_whitespace().collect::<Vec<_>>().join(" ");
            let t: String = if t.chars().count() > MAX_TARGET_CHARS {
                t.chars().take(MAX_TARGET_CHARS).chain(['…']).collect()
            } else {
                t
            };
            format!("[{name}: {}]", strip_private(&t).0)
        }
        None => format!("[{name}]"),
    }
}

/// The text of a message as stored: system reminders and private spans
/// out, memd's block (hook output) out, trimmed.
fn clean(text: &str) -> String {
    let text = strip_spans(text, "<system-reminder>", "</system-reminder>");
    let (text, _) = strip_private(&text);
    if text.contains("SessionStart hook additional context:") || text.contains("<memd-memory") {
        return String::new();
    }
    text.trim().to_string()
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
        turns(format, &lines)
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
    fn a_long_tool_target_is_cut_and_private_spans_never_leave() {
        let long = "x".repeat(1_000);
        let line = tool_line("Bash", &serde_json::json!({ "command": long }));
        assert!(line.chars().count() < MAX_TARGET_CHARS + 20, "{line}");
        let line = tool_line(
            "Bash",
            &serde_json::json!({"command": "echo <private>hunter2</private> done"}),
        );
        assert!(!line.contains("hunter2"), "{line}");
        assert_eq!(
            clean("a <private>x\ny</private> b <private>rest"),
            "a  b".to_string()
        );
    }
}
