//! `memd ingest`: a conversation transcript becomes memories, one per turn,
//! each knowing its thread, its position and when it was said — so search
//! reads every turn with its neighbours.
//!
//! Two formats, read by this client (the daemon never opens a path a
//! client names), one JSON object per line:
//!
//! - **turns** (memd's own): `{"text", "speaker"?, "thread"?, "position"?,
//!   "time"?, "caption"?, "id"?, "category"?, "metadata"?}`. The memory's
//!   content is `Speaker: text`, with ` [image: caption]` when a turn
//!   carries an image description. The thread is the line's, else
//!   `--thread`, else the file's name; positions count from 1 in each
//!   thread, in file order, unless a line gives its own. `id` is kept in
//!   metadata as `turn`.
//! - **claude-code**: Claude Code's session transcript
//!   (`~/.claude/projects/<project>/<session>.jsonl`): the text of user and
//!   assistant messages (tool calls, tool results, thinking and images are
//!   left out), speaker `User` or `Assistant`, thread = the session id.
//!
//! Text inside `<private>…</private>` is left out before anything is sent
//! (spans nest; a span may open in one line of an assistant message and
//! close in a later one of the same message; one left open hides the rest
//! of its message); a turn with nothing else keeps its position, unstored.
//! Every turn goes through the write gate: secrets are refused or redacted
//! as `[gate] secrets` says, and a turn it refuses (a secret, a stack
//! trace) is counted and skipped. Ingesting a transcript again adds
//! nothing: a thread position that holds a memory is that memory.

use std::collections::HashMap;

use memd_proto::AddRequest;
use serde_json::{Map, Value, json};

use crate::gate::private::Private;

/// Transcript formats.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// memd's turn lines.
    Turns,
    /// A Claude Code session transcript.
    ClaudeCode,
}

impl Format {
    /// Parses a format name (`auto` is `None`: decided per file).
    ///
    /// # Errors
    /// A message naming the known formats.
    pub fn parse(s: &str) -> Result<Option<Format>, String> {
        match s {
            "auto" => Ok(None),
            "turns" | "jsonl" => Ok(Some(Format::Turns)),
            "claude-code" => Ok(Some(Format::ClaudeCode)),
            other => Err(format!(
                "unknown transcript format `{other}`: expected auto, turns or claude-code"
            )),
        }
    }
}

/// A transcript read into adds, and the lines that could not be read.
#[derive(Debug, Default)]
pub struct Parsed {
    /// One add per turn, in file order.
    pub adds: Vec<AddRequest>,
    /// Lines read.
    pub lines: usize,
    /// Lines that hold no turn (tool calls, summaries, empty text).
    pub skipped: usize,
    /// Lines that are not what the format says, with their numbers.
    pub invalid: Vec<(usize, String)>,
}

/// The format of a transcript from its first object: Claude Code's lines
/// carry `sessionId` and `message`.
fn detect(text: &str) -> Format {
    let first = text
        .lines()
        .find_map(|l| serde_json::from_str::<Value>(l.trim()).ok());
    match first {
        Some(v) if v.get("sessionId").is_some() || v.get("message").is_some() => Format::ClaudeCode,
        _ => Format::Turns,
    }
}

/// Reads a transcript. `default_thread` is used by turn lines that name no
/// thread; `category` by turns that name none.
pub fn parse(
    text: &str,
    format: Option<Format>,
    default_thread: &str,
    category: Option<&str>,
) -> Parsed {
    let format = format.unwrap_or_else(|| detect(text));
    let mut out = Parsed::default();
    let mut next_pos: HashMap<String, i64> = HashMap::new();
    // Private spans of the message the last line belonged to.
    let mut private = Private::new();
    let mut message: Option<String> = None;
    for (i, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() {
            continue;
        }
        out.lines += 1;
        let n = i + 1;
        let v: Value = match serde_json::from_str(line) {
            Ok(v @ Value::Object(_)) => v,
            Ok(_) => {
                out.invalid.push((n, "not a JSON object".into()));
                continue;
            }
            Err(e) => {
                out.invalid.push((n, format!("not JSON: {e}")));
                continue;
            }
        };
        let turn = match format {
            Format::Turns => turn_line(&v, default_thread),
            Format::ClaudeCode => {
                if let Some(starts) = starts_message(&v)
                    && (starts.is_none() || starts != message)
                {
                    private = Private::new();
                    message = starts;
                }
                claude_code_line(&v, &mut private)
            }
        };
        match turn {
            Ok(Some(t)) => {
                let pos = match t.position {
                    Some(p) => p,
                    None => {
                        let p = next_pos.entry(t.thread.clone()).or_insert(0);
                        *p += 1;
                        *p
                    }
                };
                // All of it private: its position stays taken, so the
                // turns after it keep theirs.
                if t.content.is_empty() {
                    out.skipped += 1;
                    continue;
                }
                out.adds.push(AddRequest {
                    content: t.content,
                    category: Some(
                        t.category
                            .or_else(|| category.map(str::to_string))
                            .unwrap_or_else(|| "episode".into()),
                    ),
                    metadata: (!t.metadata.is_empty())
                        .then(|| Value::Object(t.metadata).to_string()),
                    thread: Some(t.thread),
                    position: Some(pos),
                    occurred_at: t.time,
                    ..AddRequest::default()
                });
            }
            Ok(None) => out.skipped += 1,
            Err(msg) => out.invalid.push((n, msg)),
        }
    }
    out
}

/// What `ingest` did.
#[derive(Debug, Default)]
pub struct Counts {
    /// JSON lines read.
    pub lines: usize,
    /// Turns found.
    pub turns: usize,
    /// Turns stored.
    pub added: usize,
    /// Turns already stored (their thread position holds a memory).
    pub existing: usize,
    /// Turns the write gate refused.
    pub rejected: usize,
    /// Lines that hold no turn.
    pub skipped: usize,
    /// Lines that could not be read.
    pub invalid: usize,
    /// The first problems, by line or turn.
    pub errors: Vec<String>,
}

/// Adds a parsed transcript's turns through `client`, one by one (each
/// through the write gate): what `memd ingest` does. A turn the gate
/// refuses is counted and skipped; any other error stops.
///
/// # Errors
/// The client's error for anything but a gate refusal.
pub async fn send(
    client: &mut memd_client::Client,
    parsed: Parsed,
) -> Result<Counts, memd_client::Error> {
    let mut counts = Counts {
        lines: parsed.lines,
        turns: parsed.adds.len(),
        skipped: parsed.skipped,
        invalid: parsed.invalid.len(),
        errors: parsed
            .invalid
            .iter()
            .take(5)
            .map(|(n, m)| format!("line {n}: {m}"))
            .collect(),
        ..Default::default()
    };
    let progress = super::progress::Progress::items(parsed.adds.len() as u64, "ingesting turns");
    for add in parsed.adds {
        progress.inc(1);
        let at = (add.thread.clone(), add.position);
        match client.add(add).await {
            Ok(r) if r.deduped => counts.existing += 1,
            Ok(_) => counts.added += 1,
            Err(memd_client::Error::Rejected(b)) => {
                counts.rejected += 1;
                if counts.errors.len() < 5 {
                    counts.errors.push(format!(
                        "thread {} position {}: {}",
                        at.0.unwrap_or_default(),
                        at.1.unwrap_or_default(),
                        b.message
                    ));
                }
            }
            Err(e) => return Err(e),
        }
    }
    Ok(counts)
}

/// For a Claude Code line that is part of a conversation message: the
/// assistant message it continues (`Some(Some(id))`), or a message of its
/// own (`Some(None)`: a person's prompt); `None` for lines outside any
/// (tool results, summaries), which leave the message open.
fn starts_message(v: &Value) -> Option<Option<String>> {
    match v.get("type").and_then(Value::as_str) {
        Some("assistant") => Some(
            v.pointer("/message/id")
                .and_then(Value::as_str)
                .map(str::to_string),
        ),
        Some("user") => match v.pointer("/message/content") {
            Some(Value::Array(blocks))
                if blocks
                    .iter()
                    .all(|b| b.get("type").and_then(Value::as_str) == Some("tool_result")) =>
            {
                None
            }
            _ => Some(None),
        },
        _ => None,
    }
}

/// One turn of a transcript (`content` empty: all of it was private).
struct Turn {
    thread: String,
    position: Option<i64>,
    content: String,
    time: Option<String>,
    category: Option<String>,
    metadata: Map<String, Value>,
}

fn text_of(v: &Value, key: &str) -> Option<String> {
    v.get(key)
        .and_then(Value::as_str)
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(str::to_string)
}

/// `Speaker: text [image: caption]`.
fn content(speaker: Option<&str>, text: &str, caption: Option<&str>) -> String {
    let mut c = match speaker {
        Some(s) => format!("{s}: {text}"),
        None => text.to_string(),
    };
    if let Some(cap) = caption {
        c.push_str(&format!(" [image: {cap}]"));
    }
    c
}

/// `text` less its private spans (a line is a whole message), trimmed;
/// `None` when nothing is left.
fn public(text: Option<String>) -> Option<String> {
    let text = crate::gate::private::strip(&text?).0;
    let text = text.trim();
    (!text.is_empty()).then(|| text.to_string())
}

fn turn_line(v: &Value, default_thread: &str) -> Result<Option<Turn>, String> {
    let Some(text) = text_of(v, "text").or_else(|| text_of(v, "content")) else {
        return Ok(None);
    };
    let speaker = text_of(v, "speaker");
    let caption = public(text_of(v, "caption"));
    let text = public(Some(text)).unwrap_or_default();
    let mut metadata = match v.get("metadata") {
        None | Some(Value::Null) => Map::new(),
        Some(Value::Object(m)) => m.clone(),
        Some(_) => return Err("`metadata` is not an object".into()),
    };
    match v.get("id") {
        None | Some(Value::Null) => {}
        Some(id) => {
            metadata.insert("turn".into(), id.clone());
        }
    }
    let position = match v.get("position") {
        None | Some(Value::Null) => None,
        Some(p) => Some(p.as_i64().ok_or("`position` is not an integer")?),
    };
    Ok(Some(Turn {
        thread: text_of(v, "thread").unwrap_or_else(|| default_thread.to_string()),
        position,
        content: if text.is_empty() && caption.is_none() {
            String::new()
        } else {
            content(speaker.as_deref(), &text, caption.as_deref())
        },
        time: text_of(v, "time"),
        category: text_of(v, "category"),
        metadata,
    }))
}

/// A Claude Code line's turn; `private` holds the spans its message left
/// open.
fn claude_code_line(v: &Value, private: &mut Private) -> Result<Option<Turn>, String> {
    let speaker = match v.get("type").and_then(Value::as_str) {
        Some("user") => "User",
        Some("assistant") => "Assistant",
        // Summaries, system and progress lines, file snapshots: no turn.
        _ => return Ok(None),
    };
    if v.get("isMeta").and_then(Value::as_bool) == Some(true) {
        return Ok(None);
    }
    let Some(session) = text_of(v, "sessionId") else {
        return Err("a message without `sessionId`".into());
    };
    let text = match v.pointer("/message/content") {
        Some(Value::String(s)) => s.trim().to_string(),
        Some(Value::Array(blocks)) => blocks
            .iter()
            .filter(|b| b.get("type").and_then(Value::as_str) == Some("text"))
            .filter_map(|b| b.get("text").and_then(Value::as_str))
            .map(str::trim)
            .filter(|t| !t.is_empty())
            .collect::<Vec<_>>()
            .join("\n"),
        _ => String::new(),
    };
    if text.is_empty() {
        // Tool calls and their results, thinking, images.
        return Ok(None);
    }
    let text = private.feed(&text);
    let text = text.trim();
    let mut metadata = Map::new();
    if let Some(uuid) = text_of(v, "uuid") {
        metadata.insert("turn".into(), json!(uuid));
    }
    Ok(Some(Turn {
        thread: session,
        position: None,
        content: if text.is_empty() {
            String::new()
        } else {
            content(Some(speaker), text, None)
        },
        time: text_of(v, "timestamp"),
        category: None,
        metadata,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn turn_lines_become_threaded_adds() {
        let text = r#"{"thread": "s1", "speaker": "Ann", "text": "I adopted a dog", "time": "2023-05-08T13:56", "id": "D1:1"}
{"thread": "s1", "speaker": "Bob", "text": "What breed?", "caption": "a beagle on a sofa"}

{"thread": "s2", "text": "a new day"}
{"speaker": "Ann", "text": ""}
{"text": "no thread given", "position": 9, "metadata": {"k": 1}}
[1, 2]
not json"#;
        let p = parse(text, None, "file", None);
        assert_eq!(p.lines, 7);
        assert_eq!(p.skipped, 1, "the empty text");
        assert_eq!(
            p.invalid.iter().map(|(n, _)| *n).collect::<Vec<_>>(),
            [7, 8]
        );
        let a = &p.adds;
        assert_eq!(a.len(), 4);
        assert_eq!(a[0].content, "Ann: I adopted a dog");
        assert_eq!(
            (
                a[0].thread.as_deref(),
                a[0].position,
                a[0].occurred_at.as_deref()
            ),
            (Some("s1"), Some(1), Some("2023-05-08T13:56"))
        );
        assert_eq!(a[0].category.as_deref(), Some("episode"));
        assert_eq!(a[0].metadata.as_deref(), Some(r#"{"turn":"D1:1"}"#));
        assert_eq!(a[1].content, "Bob: What breed? [image: a beagle on a sofa]");
        assert_eq!(a[1].position, Some(2));
        assert_eq!(
            (a[2].thread.as_deref(), a[2].position),
            (Some("s2"), Some(1))
        );
        assert_eq!(
            (a[3].thread.as_deref(), a[3].position),
            (Some("file"), Some(9))
        );
    }

    #[test]
    fn claude_code_transcripts_keep_the_conversation_text() {
        let text = r#"{"type":"permission-mode","permissionMode":"default","sessionId":"abc"}
{"type":"user","uuid":"u1","sessionId":"abc","timestamp":"2026-11-01T10:00:00Z","message":{"role":"user","content":"Where do the deploy scripts live?"}}
{"type":"assistant","uuid":"a1","sessionId":"abc","timestamp":"2026-11-01T10:00:02Z","message":{"role":"assistant","content":[{"type":"thinking","thinking":"hm"},{"type":"text","text":"Let me look."},{"type":"tool_use","id":"t1","name":"Bash","input":{"command":"ls ops"}}]}}
{"type":"user","uuid":"u2","sessionId":"abc","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":"deploy.sh"}]}}
{"type":"assistant","uuid":"a2","sessionId":"abc","message":{"role":"assistant","content":[{"type":"text","text":"They live in ops/deploy.sh."}]}}
{"type":"user","isMeta":true,"uuid":"u3","sessionId":"abc","message":{"role":"user","content":"<command-name>/clear</command-name>"}}"#;
        let p = parse(text, None, "file", None);
        assert!(p.invalid.is_empty(), "{:?}", p.invalid);
        let got: Vec<(&str, Option<i64>)> = p
            .adds
            .iter()
            .map(|a| (a.content.as_str(), a.position))
            .collect();
        assert_eq!(
            got,
            [
                ("User: Where do the deploy scripts live?", Some(1)),
                ("Assistant: Let me look.", Some(2)),
                ("Assistant: They live in ops/deploy.sh.", Some(3)),
            ]
        );
        assert!(p.adds.iter().all(|a| a.thread.as_deref() == Some("abc")));
        assert_eq!(
            p.adds[0].occurred_at.as_deref(),
            Some("2026-11-01T10:00:00Z")
        );
        assert_eq!(p.skipped, 3);
    }

    #[test]
    fn private_spans_are_left_out_whole() {
        // Turn lines: each line a message; nested spans close at their
        // match; a turn with nothing else keeps its position.
        let text = r#"{"thread": "t", "speaker": "Ann", "text": "a <private>x <private>y</private> LEAK1</private> b"}
{"thread": "t", "speaker": "Ann", "text": "<private>all of it</private>"}
{"thread": "t", "speaker": "Bob", "text": "c <private>open to the end", "caption": "<private>LEAK2</private>"}
{"thread": "t", "speaker": "Bob", "text": "d"}"#;
        let p = parse(text, None, "f", None);
        let got: Vec<(&str, Option<i64>)> = p
            .adds
            .iter()
            .map(|a| (a.content.as_str(), a.position))
            .collect();
        assert_eq!(
            got,
            [
                ("Ann: a  b", Some(1)),
                ("Bob: c", Some(3)),
                ("Bob: d", Some(4))
            ]
        );
        assert_eq!(p.skipped, 1);

        // Claude Code: a span across the lines of one assistant message
        // (a tool result between them), one left open hides the rest of
        // its message only.
        let text = r#"{"type":"assistant","uuid":"a1","sessionId":"s","message":{"id":"m1","role":"assistant","content":[{"type":"text","text":"Plan: <private>the pin is LEAK3"}]}}
{"type":"user","uuid":"u1","sessionId":"s","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"t","content":"ok"}]}}
{"type":"assistant","uuid":"a2","sessionId":"s","message":{"id":"m1","role":"assistant","content":[{"type":"text","text":"still LEAK4</private> then deploy"}]}}
{"type":"assistant","uuid":"a3","sessionId":"s","message":{"id":"m2","role":"assistant","content":[{"type":"text","text":"x <private>LEAK5"}]}}
{"type":"assistant","uuid":"a4","sessionId":"s","message":{"id":"m2","role":"assistant","content":[{"type":"text","text":"LEAK6</private> y"}]}}
{"type":"user","uuid":"u2","sessionId":"s","message":{"role":"user","content":"next <private>LEAK7"}}
{"type":"assistant","uuid":"a5","sessionId":"s","message":{"id":"m3","role":"assistant","content":[{"type":"text","text":"visible"}]}}"#;
        let p = parse(text, None, "f", None);
        let got: Vec<&str> = p.adds.iter().map(|a| a.content.as_str()).collect();
        assert_eq!(
            got,
            [
                "Assistant: Plan:",
                "Assistant: then deploy",
                "Assistant: x",
                "Assistant: y",
                "User: next",
                "Assistant: visible"
            ]
        );
        assert!(!format!("{:?}", p.adds).contains("LEAK"));
    }

    #[test]
    fn formats_by_name() {
        assert_eq!(Format::parse("auto"), Ok(None));
        assert_eq!(Format::parse("claude-code"), Ok(Some(Format::ClaudeCode)));
        assert!(Format::parse("csv").is_err());
    }
}
