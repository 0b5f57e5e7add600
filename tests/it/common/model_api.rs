//! A stand-in for a model API on a loopback TcpListener, for driving a
//! real agent CLI with every request it sends recorded: the Anthropic
//! Messages API (Claude Code, `claude -p`) or the OpenAI Responses API
//! (Codex, `codex exec`).
//!
//! Messages: `POST /v1/messages` answers as the API does, streamed
//! (server-sent events: `message_start`, content blocks, `message_delta`,
//! `message_stop`) when the request asks for `stream`, else one JSON
//! message; `POST /v1/messages/count_tokens` answers a count.
//!
//! Responses: `POST /v1/responses` answers with the stream's events
//! (`response.created`, `response.output_item.done` per item,
//! `response.completed`).
//!
//! What the "model" says is scripted by the prompt, the same in both:
//!
//! - the latest user turn holds `STORE: TEXT` (and no tool result): a
//!   call of memd's MCP tool `memory_store` with `TEXT` as an agent-scope
//!   fact;
//! - a tool result follows the latest user turn: a text that quotes it;
//! - anything else: `ok.` (a compaction's summary included).
//!
//! Any other request gets a 404. Every request body is kept, in order.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::{Arc, Mutex};

use serde_json::{Value, json};

/// One request the CLI sent.
#[derive(Debug, Clone)]
pub struct Recorded {
    /// Its path (`/v1/messages?beta=true`, …).
    pub path: String,
    /// Its body as JSON (`Null` when it had none or it was not JSON).
    pub body: Value,
}

/// Which API the stand-in speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dialect {
    /// Anthropic's Messages API.
    Anthropic,
    /// OpenAI's Responses API.
    Responses,
}

/// A running stand-in.
pub struct ModelApi {
    /// `http://127.0.0.1:PORT`: the CLI's base URL.
    pub url: String,
    recorded: Arc<Mutex<Vec<Recorded>>>,
}

impl ModelApi {
    /// Starts the server on a free loopback port of the calling thread's
    /// network namespace; it serves until the test process exits.
    pub fn start(dialect: Dialect) -> ModelApi {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let recorded: Arc<Mutex<Vec<Recorded>>> = Arc::default();
        let r = recorded.clone();
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(stream) = stream else { continue };
                let r = r.clone();
                std::thread::spawn(move || serve(stream, &r, dialect));
            }
        });
        ModelApi { url, recorded }
    }

    /// Every request so far.
    pub fn requests(&self) -> Vec<Recorded> {
        self.recorded.lock().unwrap().clone()
    }

    /// The model requests so far (`POST /v1/messages` or `/v1/responses`,
    /// count_tokens left out).
    pub fn model_requests(&self) -> Vec<Value> {
        self.requests()
            .into_iter()
            .filter(|r| {
                (r.path.starts_with("/v1/messages") || r.path.starts_with("/v1/responses"))
                    && !r.path.contains("count_tokens")
            })
            .map(|r| r.body)
            .collect()
    }
}

fn serve(stream: TcpStream, recorded: &Mutex<Vec<Recorded>>, dialect: Dialect) {
    let mut reader = BufReader::new(stream.try_clone().unwrap());
    let mut out = stream;
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line).unwrap_or(0) == 0 {
            return;
        }
        let mut parts = line.split_whitespace();
        let method = parts.next().unwrap_or("").to_string();
        let path = parts.next().unwrap_or("").to_string();
        let mut len = 0;
        let mut chunked = false;
        loop {
            let mut h = String::new();
            if reader.read_line(&mut h).unwrap_or(0) == 0 {
                return;
            }
            let h = h.trim_end();
            if h.is_empty() {
                break;
            }
            let (name, value) = h.split_once(':').unwrap_or((h, ""));
            match name.to_ascii_lowercase().as_str() {
                "content-length" => len = value.trim().parse().unwrap_or(0),
                "transfer-encoding" => chunked = value.to_ascii_lowercase().contains("chunked"),
                _ => {}
            }
        }
        let body = if chunked {
            let Some(b) = read_chunked(&mut reader) else {
                return;
            };
            b
        } else {
            let mut b = vec![0; len];
            if reader.read_exact(&mut b).is_err() {
                return;
            }
            b
        };
        let body: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
        if method == "POST" {
            recorded.lock().unwrap().push(Recorded {
                path: path.clone(),
                body: body.clone(),
            });
        }
        let (status, content_type, text) = match dialect {
            Dialect::Anthropic => answer(&method, &path, &body),
            Dialect::Responses => answer_responses(&method, &path, &body),
        };
        let head = format!(
            "HTTP/1.1 {status} X\r\nContent-Type: {content_type}\r\nContent-Length: {}\r\n\
             request-id: req_standin\r\n\r\n",
            text.len()
        );
        if out.write_all(head.as_bytes()).is_err() || out.write_all(text.as_bytes()).is_err() {
            return;
        }
    }
}

fn read_chunked(reader: &mut BufReader<TcpStream>) -> Option<Vec<u8>> {
    let mut body = Vec::new();
    loop {
        let mut size = String::new();
        reader.read_line(&mut size).ok()?;
        let n = usize::from_str_radix(size.trim().split(';').next()?, 16).ok()?;
        let mut chunk = vec![0; n + 2];
        reader.read_exact(&mut chunk).ok()?;
        if n == 0 {
            return Some(body);
        }
        body.extend_from_slice(&chunk[..n]);
    }
}

/// The content blocks of a message (a string is one text block).
fn blocks(message: &Value) -> Vec<Value> {
    match &message["content"] {
        Value::String(s) => vec![json!({"type": "text", "text": s})],
        Value::Array(a) => a.clone(),
        _ => Vec::new(),
    }
}

/// What the "model" answers: its content blocks and stop reason.
fn reply(req: &Value) -> (Vec<Value>, &'static str) {
    let last_user = req["messages"]
        .as_array()
        .and_then(|m| m.iter().rev().find(|m| m["role"] == "user"))
        .map(blocks)
        .unwrap_or_default();
    if let Some(result) = last_user.iter().find(|b| b["type"] == "tool_result") {
        let text = format!("the tool said: {}", result["content"]);
        return (vec![json!({"type": "text", "text": text})], "end_turn");
    }
    // `ECHO: words` is answered `heard: words` (a reply capture can find).
    if let Some(words) = last_user.iter().find_map(|b| {
        b["text"]
            .as_str()
            .and_then(|t| t.split_once("ECHO:"))
            .map(|(_, rest)| rest.trim().to_string())
    }) {
        let text = format!(
            "heard: {}",
            words
                .split_whitespace()
                .take(4)
                .collect::<Vec<_>>()
                .join(" ")
        );
        return (vec![json!({"type": "text", "text": text})], "end_turn");
    }
    let store = last_user.iter().find_map(|b| {
        b["text"]
            .as_str()
            .and_then(|t| t.split_once("STORE:"))
            .map(|(_, rest)| rest.trim().to_string())
    });
    if let Some(content) = store {
        let input = json!({"content": content, "category": "fact", "scope": "agent"});
        return (
            vec![json!({"type": "tool_use", "id": "toolu_standin_1",
                        "name": "mcp__memd__memory_store", "input": input})],
            "tool_use",
        );
    }
    (vec![json!({"type": "text", "text": "ok."})], "end_turn")
}

fn answer(method: &str, path: &str, body: &Value) -> (u16, &'static str, String) {
    if method != "POST" {
        return (404, "application/json", "{}".into());
    }
    if path.starts_with("/v1/messages/count_tokens") {
        return (
            200,
            "application/json",
            json!({"input_tokens": 100}).to_string(),
        );
    }
    if !path.starts_with("/v1/messages") {
        return (404, "application/json", "{}".into());
    }
    let model = body["model"].as_str().unwrap_or("stand-in").to_string();
    let (content, stop) = reply(body);
    let usage = json!({"input_tokens": 10, "output_tokens": 2});
    if body["stream"] != true {
        let message = json!({
            "id": "msg_standin", "type": "message", "role": "assistant", "model": model,
            "content": content, "stop_reason": stop, "stop_sequence": null, "usage": usage,
        });
        return (200, "application/json", message.to_string());
    }
    let mut events = vec![(
        "message_start",
        json!({"type": "message_start", "message": {
            "id": "msg_standin", "type": "message", "role": "assistant", "model": model,
            "content": [], "stop_reason": null, "stop_sequence": null,
            "usage": {"input_tokens": 10, "output_tokens": 1}}}),
    )];
    for (index, block) in content.iter().enumerate() {
        let (start, delta) = if block["type"] == "tool_use" {
            (
                json!({"type": "tool_use", "id": block["id"], "name": block["name"], "input": {}}),
                json!({"type": "input_json_delta", "partial_json": block["input"].to_string()}),
            )
        } else {
            (
                json!({"type": "text", "text": ""}),
                json!({"type": "text_delta", "text": block["text"]}),
            )
        };
        events.push((
            "content_block_start",
            json!({"type": "content_block_start", "index": index, "content_block": start}),
        ));
        events.push((
            "content_block_delta",
            json!({"type": "content_block_delta", "index": index, "delta": delta}),
        ));
        events.push((
            "content_block_stop",
            json!({"type": "content_block_stop", "index": index}),
        ));
    }
    events.push((
        "message_delta",
        json!({"type": "message_delta", "delta": {"stop_reason": stop, "stop_sequence": null},
               "usage": {"output_tokens": 2}}),
    ));
    events.push(("message_stop", json!({"type": "message_stop"})));
    let text = events
        .iter()
        .map(|(name, data)| format!("event: {name}\ndata: {data}\n\n"))
        .collect();
    (200, "text/event-stream", text)
}

/// What the "model" answers to a Responses request: its output items.
fn reply_responses(req: &Value) -> Vec<Value> {
    let input = req["input"].as_array().cloned().unwrap_or_default();
    let last_user = input.iter().rposition(|i| i["role"] == "user");
    let after_user = last_user.map_or(&input[..0], |i| &input[i + 1..]);
    if let Some(out) = after_user
        .iter()
        .find(|i| i["type"] == "function_call_output")
    {
        let text = format!("the tool said: {}", out["output"]);
        return vec![message_item(&text)];
    }
    let said = |marker: &str| {
        last_user.and_then(|i| {
            input[i]["content"].as_array()?.iter().find_map(|c| {
                c["text"]
                    .as_str()
                    .and_then(|t| t.split_once(marker))
                    .map(|(_, rest)| rest.trim().to_string())
            })
        })
    };
    if let Some(words) = said("ECHO:") {
        let words: Vec<&str> = words.split_whitespace().take(4).collect();
        return vec![message_item(&format!("heard: {}", words.join(" ")))];
    }
    let store = said("STORE:");
    if let Some(content) = store {
        let args = json!({"content": content, "category": "fact", "scope": "agent"});
        return vec![json!({"type": "function_call", "id": "fc_standin_1",
                           "call_id": "call_standin_1", "namespace": "mcp__memd",
                           "name": "memory_store", "arguments": args.to_string(),
                           "status": "completed"})];
    }
    vec![message_item("ok.")]
}

fn message_item(text: &str) -> Value {
    json!({"type": "message", "id": "msg_standin", "role": "assistant", "status": "completed",
           "content": [{"type": "output_text", "text": text, "annotations": []}]})
}

fn answer_responses(method: &str, path: &str, body: &Value) -> (u16, &'static str, String) {
    if method != "POST" || !path.starts_with("/v1/responses") {
        return (404, "application/json", "{}".into());
    }
    let output = reply_responses(body);
    let usage = json!({"input_tokens": 10, "output_tokens": 2, "total_tokens": 12,
                       "input_tokens_details": {"cached_tokens": 0},
                       "output_tokens_details": {"reasoning_tokens": 0}});
    let mut events = vec![(
        "response.created",
        json!({"type": "response.created", "response": {"id": "resp_standin",
               "object": "response", "status": "in_progress", "output": []}}),
    )];
    for (index, item) in output.iter().enumerate() {
        events.push((
            "response.output_item.done",
            json!({"type": "response.output_item.done", "output_index": index, "item": item}),
        ));
    }
    events.push((
        "response.completed",
        json!({"type": "response.completed", "response": {"id": "resp_standin",
               "object": "response", "status": "completed", "output": output, "usage": usage}}),
    ));
    let text = events
        .iter()
        .map(|(name, data)| format!("event: {name}\ndata: {data}\n\n"))
        .collect();
    (200, "text/event-stream", text)
}
