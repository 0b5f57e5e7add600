//! HTTP embedding providers: ollama (`POST /api/embed`) and any
//! openai-compatible server (`POST /v1/embeddings`), both taking a batch of
//! texts per request.
//!
//! Blocking (ureq): the worker thread and the blocking pool call it, never a
//! tokio worker. Each request has a timeout; connection failures, timeouts,
//! `429` and `5xx` answers are retried (`[embed] retries`, default 2) after
//! 250 ms, then 1 s, …; other answers fail at once with the provider's own
//! message.

use std::time::Duration;

use serde_json::{Value, json};

use super::{EmbedError, Embedder, normalize};

/// The two wire protocols.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Protocol {
    /// ollama: `{model, input: [..]}` → `{embeddings: [[..], ..]}`.
    Ollama,
    /// openai: `{model, input: [..]}` → `{data: [{index, embedding}, ..]}`.
    Openai,
}

impl Protocol {
    fn path(self) -> &'static str {
        match self {
            Protocol::Ollama => "/api/embed",
            Protocol::Openai => "/v1/embeddings",
        }
    }

    fn name(self) -> &'static str {
        match self {
            Protocol::Ollama => "ollama",
            Protocol::Openai => "openai",
        }
    }
}

/// Settings of an HTTP embedder.
#[derive(Debug, Clone)]
pub struct HttpSettings {
    /// Which protocol.
    pub protocol: Protocol,
    /// Base URL (`http://127.0.0.1:11434`); the protocol's path is appended.
    pub url: String,
    /// Model name at the provider.
    pub model: String,
    /// Bearer token (openai-compatible).
    pub api_key: Option<String>,
    /// Timeout of one request.
    pub timeout: Duration,
    /// Retries after the first attempt.
    pub retries: u32,
    /// First backoff; each retry waits four times longer.
    pub backoff: Duration,
}

/// An embedder behind an HTTP API.
pub struct HttpEmbedder {
    settings: HttpSettings,
    agent: ureq::Agent,
    endpoint: String,
    model_id: String,
    dim: usize,
}

impl HttpEmbedder {
    /// Connects: embeds a probe text to learn the vectors' dimension.
    ///
    /// # Errors
    /// [`EmbedError`] when the provider cannot be reached or answers badly.
    pub fn connect(settings: HttpSettings) -> Result<HttpEmbedder, EmbedError> {
        let agent: ureq::Agent = ureq::Agent::config_builder()
            .timeout_global(Some(settings.timeout))
            .http_status_as_error(false)
            .build()
            .into();
        let endpoint = format!(
            "{}{}",
            settings.url.trim_end_matches('/'),
            settings.protocol.path()
        );
        let model_id = format!("{}:{}", settings.protocol.name(), settings.model);
        let mut e = HttpEmbedder {
            settings,
            agent,
            endpoint,
            model_id,
            dim: 0,
        };
        let probe = e.request(&["dimension probe"])?;
        e.dim = probe.first().map_or(0, Vec::len);
        if e.dim == 0 {
            return Err(EmbedError::Provider(format!(
                "{} returned an empty vector for model {}",
                e.endpoint, e.settings.model
            )));
        }
        Ok(e)
    }

    /// One request with retries.
    fn request(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, EmbedError> {
        let mut wait = self.settings.backoff;
        let mut attempt = 0;
        loop {
            match self.attempt(texts) {
                Ok(v) => return Ok(v),
                Err(Failure::Final(e)) => return Err(e),
                Err(Failure::Retry(e)) if attempt >= self.settings.retries => {
                    return Err(match e {
                        EmbedError::Unreachable(m) => {
                            EmbedError::Unreachable(format!("{m} (after {} attempts)", attempt + 1))
                        }
                        EmbedError::Provider(m) => {
                            EmbedError::Provider(format!("{m} (after {} attempts)", attempt + 1))
                        }
                        other => other,
                    });
                }
                Err(Failure::Retry(e)) => {
                    tracing::debug!(error = %e, attempt, "embedding request failed; retrying");
                    std::thread::sleep(wait);
                    wait = wait.saturating_mul(4);
                    attempt += 1;
                }
            }
        }
    }

    fn attempt(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, Failure> {
        let body = json!({ "model": self.settings.model, "input": texts }).to_string();
        let mut req = self
            .agent
            .post(&self.endpoint)
            .header("Content-Type", "application/json");
        if let Some(key) = &self.settings.api_key {
            req = req.header("Authorization", &format!("Bearer {key}"));
        }
        let mut resp = req.send(body).map_err(|e| {
            Failure::Retry(EmbedError::Unreachable(format!(
                "cannot reach the embedding provider at {}: {e}",
                self.endpoint
            )))
        })?;
        let status = resp.status().as_u16();
        let text = resp
            .body_mut()
            .with_config()
            .limit(256 << 20)
            .read_to_string()
            .map_err(|e| {
                Failure::Retry(EmbedError::Unreachable(format!(
                    "the embedding provider at {} stopped answering: {e}",
                    self.endpoint
                )))
            })?;
        if status != 200 {
            let e = EmbedError::Provider(format!(
                "the embedding provider at {} answered {status}: {}",
                self.endpoint,
                provider_message(&text)
            ));
            return Err(if status == 429 || status >= 500 {
                Failure::Retry(e)
            } else {
                Failure::Final(e)
            });
        }
        parse(self.settings.protocol, &text, texts.len())
            .map_err(|m| {
                Failure::Final(EmbedError::Provider(format!(
                    "the embedding provider at {} answered something unreadable: {m}",
                    self.endpoint
                )))
            })
            .map(|mut vs| {
                for v in &mut vs {
                    normalize(v);
                }
                vs
            })
    }
}

enum Failure {
    Retry(EmbedError),
    Final(EmbedError),
}

/// The error message inside a provider's error body, or the body itself
/// (cut to 300 characters).
fn provider_message(text: &str) -> String {
    let msg = serde_json::from_str::<Value>(text).ok().and_then(|v| {
        let e = v.get("error")?;
        e.get("message")
            .and_then(Value::as_str)
            .or_else(|| e.as_str())
            .map(str::to_string)
    });
    let msg = msg.unwrap_or_else(|| text.trim().to_string());
    msg.chars().take(300).collect()
}

/// Reads a provider's answer: `n` vectors of one dimension.
fn parse(protocol: Protocol, text: &str, n: usize) -> Result<Vec<Vec<f32>>, String> {
    let v: Value = serde_json::from_str(text).map_err(|e| format!("not JSON ({e})"))?;
    let vectors: Vec<Vec<f32>> = match protocol {
        Protocol::Ollama => {
            let list = v
                .get("embeddings")
                .and_then(Value::as_array)
                .ok_or("no `embeddings` array")?;
            list.iter().map(floats).collect::<Result<_, _>>()?
        }
        Protocol::Openai => {
            let list = v
                .get("data")
                .and_then(Value::as_array)
                .ok_or("no `data` array")?;
            let mut out: Vec<Option<Vec<f32>>> = vec![None; list.len()];
            for (i, item) in list.iter().enumerate() {
                let index = item
                    .get("index")
                    .and_then(Value::as_u64)
                    .map_or(i, |x| x as usize);
                let slot = out.get_mut(index).ok_or("an `index` out of range")?;
                *slot = Some(floats(
                    item.get("embedding").ok_or("an item without `embedding`")?,
                )?);
            }
            out.into_iter()
                .collect::<Option<Vec<_>>>()
                .ok_or("repeated `index` values")?
        }
    };
    if vectors.len() != n {
        return Err(format!("{} vectors for {n} texts", vectors.len()));
    }
    let dim = vectors.first().map_or(0, Vec::len);
    if vectors.iter().any(|v| v.len() != dim) {
        return Err("vectors of different lengths".into());
    }
    Ok(vectors)
}

fn floats(v: &Value) -> Result<Vec<f32>, String> {
    v.as_array()
        .ok_or("a vector that is not an array")?
        .iter()
        .map(|x| {
            x.as_f64()
                .map(|f| f as f32)
                .ok_or_else(|| "a vector with a non-number".to_string())
        })
        .collect()
}

impl Embedder for HttpEmbedder {
    fn model_id(&self) -> &str {
        &self.model_id
    }

    fn dim(&self) -> usize {
        self.dim
    }

    fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, EmbedError> {
        if texts.is_empty() {
            return Ok(Vec::new());
        }
        let out = self.request(texts)?;
        if let Some(v) = out.iter().find(|v| v.len() != self.dim) {
            return Err(EmbedError::Provider(format!(
                "the embedding provider at {} changed its dimension from {} to {}",
                self.endpoint,
                self.dim,
                v.len()
            )));
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_both_protocols() {
        let o = parse(Protocol::Ollama, r#"{"embeddings":[[1,0],[0,2.5]]}"#, 2).unwrap();
        assert_eq!(o, vec![vec![1.0, 0.0], vec![0.0, 2.5]]);
        let a = parse(
            Protocol::Openai,
            r#"{"data":[{"index":1,"embedding":[0,1]},{"index":0,"embedding":[1,0]}]}"#,
            2,
        )
        .unwrap();
        assert_eq!(a, vec![vec![1.0, 0.0], vec![0.0, 1.0]]);
    }

    #[test]
    fn refuses_bad_answers() {
        let cases = [
            (Protocol::Ollama, "nope", "not JSON"),
            (Protocol::Ollama, r#"{"x":1}"#, "no `embeddings`"),
            (
                Protocol::Ollama,
                r#"{"embeddings":[[1]]}"#,
                "1 vectors for 2",
            ),
            (
                Protocol::Ollama,
                r#"{"embeddings":[[1],[1,2]]}"#,
                "different lengths",
            ),
            (
                Protocol::Ollama,
                r#"{"embeddings":[[1],["a"]]}"#,
                "non-number",
            ),
            (
                Protocol::Openai,
                r#"{"data":[{"index":5,"embedding":[1]},{"embedding":[1]}]}"#,
                "out of range",
            ),
            (
                Protocol::Openai,
                r#"{"data":[{"index":0,"embedding":[1]},{"index":0,"embedding":[1]}]}"#,
                "repeated",
            ),
        ];
        for (p, text, want) in cases {
            let err = parse(p, text, 2).unwrap_err();
            assert!(err.contains(want), "{text}: {err}");
        }
    }

    #[test]
    fn provider_messages() {
        assert_eq!(
            provider_message(r#"{"error":{"message":"bad key"}}"#),
            "bad key"
        );
        assert_eq!(
            provider_message(r#"{"error":"model not found"}"#),
            "model not found"
        );
        assert_eq!(provider_message(" plain text "), "plain text");
    }
}
