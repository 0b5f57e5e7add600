//! A small embedding provider on a loopback TcpListener, speaking the
//! ollama (`POST /api/embed`) and openai (`POST /v1/embeddings`) protocols,
//! for the HTTP backends and for daemons that need a second model.
//!
//! Its "model" is a bag of words: each lower-cased word adds 1 to the
//! coordinate its hash picks, so texts with the same words get the same
//! vector. The model name picks the dimension (`bag-8` → 8, `bag-16` → 16).
//! Failures can be scripted: the next N requests answer a status, or stall.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Value, json};

/// What the next requests get instead of an answer.
#[derive(Debug, Clone, Copy)]
pub enum Fault {
    /// This HTTP status with an error body.
    Status(u16, &'static str),
    /// No answer for this long.
    Stall(Duration),
}

/// A running fake provider.
pub struct Provider {
    /// `http://127.0.0.1:PORT`.
    pub url: String,
    /// Requests received.
    pub requests: Arc<AtomicUsize>,
    faults: Arc<Mutex<Vec<Fault>>>,
    /// Bearer tokens seen.
    pub tokens: Arc<Mutex<Vec<String>>>,
}

impl Provider {
    /// Starts the server on a free loopback port; it serves until the test
    /// process exits.
    pub fn start() -> Provider {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let requests = Arc::new(AtomicUsize::new(0));
        let faults: Arc<Mutex<Vec<Fault>>> = Arc::default();
        let tokens: Arc<Mutex<Vec<String>>> = Arc::default();
        let (r, f, t) = (requests.clone(), faults.clone(), tokens.clone());
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(stream) = stream else { continue };
                let (r, f, t) = (r.clone(), f.clone(), t.clone());
                std::thread::spawn(move || serve(stream, &r, &f, &t));
            }
        });
        Provider {
            url,
            requests,
            faults,
            tokens,
        }
    }

    /// The next requests fail this way, in order.
    pub fn fail_next(&self, faults: &[Fault]) {
        self.faults.lock().unwrap().extend_from_slice(faults);
    }
}

/// The bag-of-words vector of a text (not normalized).
pub fn bag(text: &str, dim: usize) -> Vec<f32> {
    let mut v = vec![0.0f32; dim];
    for w in text
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
    {
        let h = w
            .to_lowercase()
            .bytes()
            .fold(0xcbf2_9ce4_8422_2325u64, |h, b| {
                (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3)
            });
        v[(h % dim as u64) as usize] += 1.0;
    }
    v
}

fn serve(
    stream: TcpStream,
    requests: &AtomicUsize,
    faults: &Mutex<Vec<Fault>>,
    tokens: &Mutex<Vec<String>>,
) {
    let mut reader = BufReader::new(stream.try_clone().unwrap());
    let mut out = stream;
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line).unwrap_or(0) == 0 {
            return;
        }
        let path = line.split_whitespace().nth(1).unwrap_or("").to_string();
        let mut len = 0;
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
                "authorization" => tokens.lock().unwrap().push(value.trim().to_string()),
                _ => {}
            }
        }
        let mut body = vec![0; len];
        if reader.read_exact(&mut body).is_err() {
            return;
        }
        requests.fetch_add(1, Ordering::SeqCst);
        let fault = {
            let mut f = faults.lock().unwrap();
            (!f.is_empty()).then(|| f.remove(0))
        };
        let (status, answer) = match fault {
            Some(Fault::Stall(d)) => {
                std::thread::sleep(d);
                return;
            }
            Some(Fault::Status(code, msg)) => (code, json!({"error": {"message": msg}})),
            None => answer(&path, &body),
        };
        let text = answer.to_string();
        let head = format!(
            "HTTP/1.1 {status} X\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n",
            text.len()
        );
        if out.write_all(head.as_bytes()).is_err() || out.write_all(text.as_bytes()).is_err() {
            return;
        }
    }
}

fn answer(path: &str, body: &[u8]) -> (u16, Value) {
    let Ok(req) = serde_json::from_slice::<Value>(body) else {
        return (400, json!({"error": "body is not JSON"}));
    };
    let model = req["model"].as_str().unwrap_or("");
    let Some(dim) = model
        .strip_prefix("bag-")
        .and_then(|d| d.parse::<usize>().ok())
    else {
        return (
            404,
            json!({"error": format!("model \"{model}\" not found")}),
        );
    };
    let texts: Vec<String> = match &req["input"] {
        Value::String(s) => vec![s.clone()],
        Value::Array(a) => a
            .iter()
            .filter_map(|t| t.as_str().map(String::from))
            .collect(),
        _ => return (400, json!({"error": "no input"})),
    };
    let vectors: Vec<Vec<f32>> = texts.iter().map(|t| bag(t, dim)).collect();
    match path {
        "/api/embed" => (200, json!({"model": model, "embeddings": vectors})),
        "/v1/embeddings" => (
            200,
            json!({
                "object": "list",
                "model": model,
                // Out of order on purpose: clients must use `index`.
                "data": vectors.iter().enumerate().rev()
                    .map(|(i, v)| json!({"object": "embedding", "index": i, "embedding": v}))
                    .collect::<Vec<_>>(),
            }),
        ),
        _ => (404, json!({"error": format!("no route {path}")})),
    }
}
