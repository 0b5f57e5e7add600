//! The embedder as the daemon sees it: which provider, whether it is ready,
//! the model lock recorded with the stored vectors, and the in-memory index.
//! Handlers ask [`EmbedService::ready`] before any semantic operation; the
//! worker loads the embedder and keeps the index current.

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, RwLock};

use serde_json::{Value, json};

use super::rules::{LockCheck, ModelLock, check_lock, mismatch_message};
use super::vectors::Index;
use super::{EmbedConfig, Embedder, Provider};
use crate::sync::{read, write};

/// Where the embedder is.
#[derive(Clone)]
pub enum State {
    /// No embedder configured (`[embed] provider = "none"`).
    Off,
    /// Configured but not usable; the reason says why and what to do.
    Unavailable(String),
    /// Being loaded or connected.
    Loading,
    /// Ready.
    Ready(Arc<dyn Embedder>),
}

/// The daemon's embedder, its model lock and its index.
pub struct EmbedService {
    /// `[embed]` settings.
    pub config: EmbedConfig,
    /// The local model's directory (resolved).
    pub model_dir: PathBuf,
    state: RwLock<State>,
    lock: RwLock<Option<ModelLock>>,
    /// Current vectors, quantized.
    pub index: Arc<RwLock<Index>>,
    /// Wakes the worker (new rows, reembed).
    pub wake: tokio::sync::Notify,
    /// A reembed asked the worker to reload its index.
    pub reload: AtomicBool,
    /// Semantic near duplicates, for subscribed sessions.
    pub similar: tokio::sync::broadcast::Sender<memd_proto::SimilarEvent>,
}

impl EmbedService {
    /// A service for these settings; the worker loads the embedder.
    pub fn new(config: EmbedConfig, model_dir: PathBuf) -> EmbedService {
        let state = match config.provider {
            Provider::None => State::Off,
            _ => State::Loading,
        };
        EmbedService {
            config,
            model_dir,
            state: RwLock::new(state),
            lock: RwLock::new(None),
            index: Arc::new(RwLock::new(Index::default())),
            wake: tokio::sync::Notify::new(),
            reload: AtomicBool::new(false),
            similar: tokio::sync::broadcast::channel(64).0,
        }
    }

    /// The current state.
    pub fn state(&self) -> State {
        read(&self.state).clone()
    }

    /// Sets the state (the worker does).
    pub fn set_state(&self, s: State) {
        *write(&self.state) = s;
    }

    /// The lock recorded with the stored vectors.
    pub fn lock(&self) -> Option<ModelLock> {
        read(&self.lock).clone()
    }

    /// Records what `memory_meta` says (the worker does).
    pub fn set_lock(&self, l: Option<ModelLock>) {
        *write(&self.lock) = l;
    }

    /// The embedder, whatever the lock says (for `reembed`).
    ///
    /// # Errors
    /// [`NotReady`] when there is none or it is not ready.
    pub fn embedder(&self) -> Result<Arc<dyn Embedder>, NotReady> {
        match self.state() {
            State::Ready(e) => Ok(e),
            State::Off => Err(NotReady(
                "no embedder is configured ([embed] provider = \"none\"); semantic and hybrid \
                 search need one: use --mode lexical or fuzzy, or configure a provider"
                    .into(),
            )),
            State::Unavailable(why) => Err(NotReady(format!(
                "no embedder is available: {why}; use --mode lexical or fuzzy meanwhile"
            ))),
            State::Loading => Err(NotReady(
                "the embedder is still loading; retry in a moment, or use --mode lexical".into(),
            )),
        }
    }

    /// The embedder for a semantic operation: ready, and the stored vectors
    /// come from its model.
    ///
    /// # Errors
    /// [`NotReady`] without a ready embedder, or when the
    /// stored vectors were made by another model (the message names both
    /// and says how to re-embed).
    pub fn ready(&self) -> Result<Arc<dyn Embedder>, NotReady> {
        let e = self.embedder()?;
        match check_lock(self.lock().as_ref(), e.model_id(), e.dim()) {
            LockCheck::Free | LockCheck::Same => Ok(e),
            LockCheck::Other(stored) => {
                Err(NotReady(mismatch_message(&stored, e.model_id(), e.dim())))
            }
        }
    }

    /// Whether semantic search can run now.
    pub fn is_ready(&self) -> bool {
        self.ready().is_ok()
    }

    /// The `embedder` object of `status` (null when none is configured).
    pub fn status(&self, embedded: i64, pending: i64) -> Value {
        let (state, model, dim, reason) = match self.state() {
            State::Off => return Value::Null,
            State::Loading => ("loading", None, None, None),
            State::Unavailable(why) => ("unavailable", None, None, Some(why)),
            State::Ready(e) => match self.ready() {
                Ok(_) => ("ready", Some(e.model_id().to_string()), Some(e.dim()), None),
                Err(err) => (
                    "model_mismatch",
                    Some(e.model_id().to_string()),
                    Some(e.dim()),
                    Some(err.to_string()),
                ),
            },
        };
        let lock = self.lock();
        json!({
            "provider": self.config.provider.as_str(),
            "state": state,
            "model": model,
            "dim": dim,
            "reason": reason,
            "stored_model": lock.as_ref().map(|l| l.model.clone()),
            "stored_dim": lock.as_ref().map(|l| l.dim),
            "embedded": embedded,
            "pending": pending,
            "index_bytes": read(&self.index).bytes(),
        })
    }

    /// The index, for a read on the blocking pool.
    pub fn index_handle(&self) -> Arc<RwLock<Index>> {
        self.index.clone()
    }

    /// Asks the worker to look for work now.
    pub fn kick(&self) {
        self.wake.notify_one();
    }

    /// Marks that the worker must reload the index and the lock.
    pub fn request_reload(&self) {
        self.reload.store(true, Ordering::Release);
        self.kick();
    }
}

/// Why semantic search or `reembed` cannot run now: no embedder, one still
/// loading, or one locked out by the vectors of another model.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct NotReady(pub String);
