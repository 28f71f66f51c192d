//! What both tokenizer targets check: `encode` never panics, keeps within `max_tokens`,
//! starts and ends with the special tokens, and produces no id above the vocabulary.
//!
//! The tokenizer is crate-private in membank-embed and needs no model weights, so the
//! targets compile its three source files directly (`#[path]` modules in each target)
//! and read `tokenizer.json` once from the model directory:
//! `$MEMBANK_FUZZ_MODELS/<model>/tokenizer.json`, by default
//! `~/.local/share/membank/models/<model>/tokenizer.json` (`membank models fetch`).

use std::path::PathBuf;

use crate::tokenizer::Tokenizer;

/// Where a model's `tokenizer.json` is looked for.
pub fn path(model: &str) -> PathBuf {
    let root = std::env::var_os("MEMBANK_FUZZ_MODELS").map(PathBuf::from).unwrap_or_else(|| {
        let home = std::env::var_os("HOME").map(PathBuf::from).unwrap_or_default();
        home.join(".local/share/membank/models")
    });
    root.join(model).join("tokenizer.json")
}

/// Loads the tokenizer of a model directory, or stops with the path it looked at.
pub fn load(model: &str) -> Tokenizer {
    let path = path(model);
    let bytes = std::fs::read(&path).unwrap_or_else(|e| panic!("cannot read {}: {e} (run `membank models fetch`)", path.display()));
    Tokenizer::from_json(&bytes).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// Encodes the input (first byte: the length limit; the rest: lossy UTF-8 text) and checks it.
pub fn check(tokenizer: &Tokenizer, data: &[u8]) {
    let Some((&first, rest)) = data.split_first() else { return };
    let max_tokens = [0, 1, 2, 3, 8, 64, 128, 512][first as usize % 8];
    let text = String::from_utf8_lossy(rest);
    let ids = tokenizer.encode(&text, max_tokens);
    assert!(ids.len() >= 2 && ids.len() <= max_tokens.max(2), "{} ids for max {max_tokens}", ids.len());
    let max_id = tokenizer.max_id();
    assert!(ids.iter().all(|id| *id <= max_id), "an id above {max_id}");
    // Truncation keeps a prefix: the same text with more room starts with the same tokens.
    if max_tokens < 512 {
        let longer = tokenizer.encode(&text, 512);
        assert_eq!(longer[..ids.len() - 1], ids[..ids.len() - 1], "truncation is not a prefix");
    }
}
