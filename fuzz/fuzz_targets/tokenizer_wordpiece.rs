//! Fuzzes the WordPiece (all-MiniLM-L6-v2, English) tokenizer of membank-embed on arbitrary text.
#![no_main]
#![allow(dead_code, unused_imports, missing_docs)]

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

static TOKENIZER: LazyLock<tokenizer::Tokenizer> = LazyLock::new(|| tokenizer_common::load("all-MiniLM-L6-v2"));

fuzz_target!(|data: &[u8]| tokenizer_common::check(&TOKENIZER, data));
