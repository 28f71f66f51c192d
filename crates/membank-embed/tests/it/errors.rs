//! Opening a model directory that is incomplete or corrupt gives the documented error,
//! never a panic: a missing file is `ModelMissing` naming it, anything unusable is
//! `InvalidModel` saying why.

use std::path::Path;

use membank_embed::{EmbedError, LocalEmbedder, LocalOptions};

use crate::support::model_dir;

/// A copy of the real model directory in a temp dir; `weights` replaces model.safetensors.
fn model_copy(weights: Option<&[u8]>) -> tempfile::TempDir {
    let source = model_dir();
    let dir = tempfile::tempdir().expect("temp dir");
    for file in ["config.json", "tokenizer.json"] {
        std::fs::copy(source.join(file), dir.path().join(file)).expect("copy");
    }
    match weights {
        Some(bytes) => std::fs::write(dir.path().join("model.safetensors"), bytes).expect("write"),
        None => {
            std::fs::copy(source.join("model.safetensors"), dir.path().join("model.safetensors")).expect("copy");
        }
    }
    dir
}

fn open(dir: &Path) -> Result<LocalEmbedder, EmbedError> {
    LocalEmbedder::open(dir, LocalOptions { threads: 1, ..Default::default() })
}

fn check_invalid(dir: &Path, expected_reason: &str) {
    match open(dir) {
        Err(EmbedError::InvalidModel { reason, .. }) => {
            assert!(reason.contains(expected_reason), "reason {reason:?} lacks {expected_reason:?}");
        }
        other => panic!("expected InvalidModel, got {other:?}"),
    }
}

#[test]
fn each_missing_file_is_named() {
    for missing in ["config.json", "tokenizer.json", "model.safetensors"] {
        let dir = tempfile::tempdir().expect("temp dir");
        for file in ["config.json", "tokenizer.json", "model.safetensors"] {
            if file != missing {
                std::fs::write(dir.path().join(file), b"{}").expect("write");
            }
        }
        match open(dir.path()) {
            Err(error @ EmbedError::ModelMissing { .. }) => {
                let EmbedError::ModelMissing { file, dir: reported } = &error else { unreachable!() };
                assert_eq!(file, missing);
                assert_eq!(reported, dir.path());
                assert!(error.to_string().contains("membank models fetch"), "{error}");
            }
            other => panic!("expected ModelMissing for {missing}, got {other:?}"),
        }
    }
}

#[test]
fn truncated_weights_are_invalid() {
    let real = std::fs::read(model_dir().join("model.safetensors")).expect("read weights");
    let dir = model_copy(Some(&real[..real.len() / 2]));
    check_invalid(dir.path(), "model.safetensors");
    let dir = model_copy(Some(&real[..5]));
    check_invalid(dir.path(), "model.safetensors");
    let dir = model_copy(Some(b""));
    check_invalid(dir.path(), "model.safetensors");
}

#[test]
fn weights_of_the_wrong_shape_are_invalid() {
    let data = vec![0u8; 10 * 384 * 4];
    let view = safetensors::tensor::TensorView::new(safetensors::Dtype::F32, vec![10, 384], &data).expect("view");
    let bytes = safetensors::serialize([("embeddings.word_embeddings.weight", view)], None).expect("serialize");
    let dir = model_copy(Some(&bytes));
    check_invalid(dir.path(), "embeddings.word_embeddings.weight has shape [10, 384], expected [30522, 384]");
}

#[test]
fn bad_json_is_invalid() {
    let dir = model_copy(None);
    std::fs::write(dir.path().join("config.json"), b"{\"hidden_size\": ").expect("write");
    check_invalid(dir.path(), "config.json");

    let dir = model_copy(None);
    std::fs::write(dir.path().join("tokenizer.json"), b"[1, 2, 3]").expect("write");
    check_invalid(dir.path(), "tokenizer.json");
}

#[test]
fn another_model_is_refused() {
    let dir = model_copy(None);
    let config = std::fs::read_to_string(dir.path().join("config.json")).expect("read");
    std::fs::write(dir.path().join("config.json"), config.replace("\"hidden_size\": 384", "\"hidden_size\": 768"))
        .expect("write");
    check_invalid(dir.path(), "none of the known models");
}
