//! Fuzzes the SentencePiece Unigram tokenizer of membank-embed (multilingual-e5-small's:
//! precompiled charsmap, whitespace collapsing, Metaspace, Viterbi over the lattice, added
//! tokens) on arbitrary text.
//!
//! It uses the real `multilingual-e5-small/tokenizer.json` when the model has been fetched
//! (see `tokenizer_common.rs`); otherwise a small vocabulary of the same shape built here,
//! with a charsmap that folds full-width forms and a few compositions, so the target still
//! exercises every code path without the 17 MB file.
#![no_main]
#![allow(dead_code, unused_imports, missing_docs)]

use std::collections::BTreeMap;
use std::sync::LazyLock;

use libfuzzer_sys::fuzz_target;

#[path = "../../crates/membank-embed/src/charsmap.rs"]
mod charsmap;
#[path = "../../crates/membank-embed/src/tokenizer.rs"]
mod tokenizer;
#[path = "../../crates/membank-embed/src/unigram.rs"]
mod unigram;
#[path = "tokenizer_common.rs"]
mod tokenizer_common;

const MODEL: &str = "multilingual-e5-small";

fn synthetic() -> tokenizer::Tokenizer {
    let mut map = BTreeMap::new();
    for c in '!'..='~' {
        map.insert(char::from_u32(c as u32 - 0x21 + 0xFF01).unwrap().to_string(), c.to_string());
    }
    for (from, to) in [("\u{3000}", " "), ("\t", " "), ("e\u{301}", "é"), ("ﬁ", "fi"), ("①", "1"), ("\u{200b}", ""), ("Å", "Å"), ("ｶ", "カ")] {
        map.insert(from.to_owned(), to.to_owned());
    }
    let charsmap = charsmap::base64_encode(&charsmap::build(&map).expect("charsmap builds"));
    let mut vocab: Vec<(String, f64)> = ["<s>", "<pad>", "</s>", "<unk>"].iter().map(|p| ((*p).to_owned(), 0.0)).collect();
    vocab.push(("\u{2581}".into(), -2.0));
    for word in ["hello", "world", "the", "may", "day", "yesterday", "我", "昨天", "中国", "カタカナ", "é", "fi"] {
        vocab.push((format!("\u{2581}{word}"), -3.0 - word.len() as f64 / 10.0));
    }
    for piece in ["he", "llo", "wor", "ld", "ing", "ed", "天", "前", "月", "日", "中", "国", "人", "カ", "タ", "ナ", "1", "2", "0"] {
        vocab.push((piece.to_owned(), -5.0));
    }
    for c in ('a'..='z').chain('0'..='9') {
        vocab.push((c.to_string(), -8.0));
    }
    vocab.push(("<mask>".into(), 0.0));
    let mask = vocab.len() - 1;
    let vocab_json: Vec<String> = vocab.iter().map(|(p, s)| format!("[{}, {s}]", serde_json::Value::from(p.as_str()))).collect();
    let json = format!(
        r#"{{
          "added_tokens": [
            {{"id": 0, "content": "<s>", "single_word": false, "lstrip": false, "rstrip": false, "normalized": false, "special": true}},
            {{"id": 2, "content": "</s>", "single_word": false, "lstrip": false, "rstrip": false, "normalized": false, "special": true}},
            {{"id": {mask}, "content": "<mask>", "single_word": false, "lstrip": true, "rstrip": false, "normalized": false, "special": true}}
          ],
          "normalizer": {{"type": "Sequence", "normalizers": [{{"type": "Precompiled", "precompiled_charsmap": "{charsmap}"}}, {{"type": "Replace", "pattern": {{"Regex": " {{2,}}"}}, "content": " "}}]}},
          "pre_tokenizer": {{"type": "Metaspace", "replacement": "\u2581", "prepend_scheme": "always", "split": true}},
          "post_processor": {{"type": "TemplateProcessing",
             "single": [{{"SpecialToken": {{"id": "<s>", "type_id": 0}}}}, {{"Sequence": {{"id": "A", "type_id": 0}}}}, {{"SpecialToken": {{"id": "</s>", "type_id": 0}}}}],
             "special_tokens": {{"<s>": {{"id": "<s>", "ids": [0], "tokens": ["<s>"]}}, "</s>": {{"id": "</s>", "ids": [2], "tokens": ["</s>"]}}}}}},
          "model": {{"type": "Unigram", "unk_id": 3, "vocab": [{}], "byte_fallback": false}}
        }}"#,
        vocab_json.join(", ")
    );
    tokenizer::Tokenizer::from_json(json.as_bytes()).expect("the synthetic tokenizer parses")
}

static TOKENIZER: LazyLock<tokenizer::Tokenizer> = LazyLock::new(|| {
    if tokenizer_common::path(MODEL).is_file() {
        tokenizer_common::load(MODEL)
    } else {
        eprintln!("{} is absent: fuzzing a synthetic Unigram vocabulary", tokenizer_common::path(MODEL).display());
        synthetic()
    }
});

fuzz_target!(|data: &[u8]| tokenizer_common::check(&TOKENIZER, data));
