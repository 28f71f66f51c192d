//! BERT WordPiece tokenisation, reproducing Hugging Face `tokenizers` for a `tokenizer.json`
//! made of a `BertNormalizer`, a `BertPreTokenizer`, a `WordPiece` model and a
//! `[CLS] $A [SEP]` post-processor — the tokenizer of all-MiniLM-L6-v2 and other BERT models.
//!
//! The steps and their order follow `tokenizers` exactly: literal added tokens (`[MASK]`, …)
//! are split out of the raw text first; the rest is cleaned (control characters dropped,
//! whitespace made a space), CJK ideographs are surrounded by spaces, accents are stripped
//! (NFD, then non-spacing marks removed), then lowercased character by character; words are
//! split on whitespace and every punctuation character stands alone; WordPiece matches the
//! longest vocabulary entry greedily and turns a word it cannot cover into `[UNK]`. The
//! Unicode tables are the same crates `tokenizers` uses (`unicode_categories`,
//! `unicode-normalization-alignments`), so categories and decompositions agree with it
//! character for character.
//!
//! [`Tokenizer`] chooses between this and the Unigram tokenizer of [`crate::unigram`].
//!
//! It deliberately supports nothing else: no BPE models, no sentence pairs, no
//! offsets, no padding; such a `tokenizer.json` is rejected when the model is opened. The
//! truncation length stored in `tokenizer.json` is ignored: sentence-transformers overrides
//! it with the model's `max_seq_length`, and so does the caller here.

use std::collections::HashMap;

use crate::special::special_ids;
use crate::unigram::UnigramTokenizer;
use serde::Deserialize;
use unicode_categories::UnicodeCategories;
use unicode_normalization_alignments::UnicodeNormalization;

/// The tokenizer of a model directory: WordPiece (BERT vocabularies) or Unigram
/// (SentencePiece vocabularies, see [`crate::unigram`]), chosen by the model type in
/// `tokenizer.json`.
#[derive(Debug)]
pub(crate) enum Tokenizer {
    /// BERT WordPiece.
    WordPiece(BertTokenizer),
    /// SentencePiece Unigram.
    Unigram(UnigramTokenizer),
}

impl Tokenizer {
    /// Parses the contents of a `tokenizer.json`. The error is a human-readable reason.
    pub(crate) fn from_json(json: &[u8]) -> Result<Self, String> {
        #[derive(Deserialize)]
        struct Kind {
            model: KindModel,
        }
        #[derive(Deserialize)]
        struct KindModel {
            #[serde(rename = "type")]
            kind: Option<String>,
        }
        let kind: Kind = serde_json::from_slice(json).map_err(|e| format!("tokenizer.json: {e}"))?;
        match kind.model.kind.as_deref() {
            Some("Unigram") => UnigramTokenizer::from_json(json).map(Self::Unigram),
            Some("WordPiece") | None => BertTokenizer::from_json(json).map(Self::WordPiece),
            Some(other) => {
                Err(format!("tokenizer.json: model type {other} is not supported, only WordPiece and Unigram"))
            }
        }
    }

    /// Token ids of `text` between the start and end tokens, at most `max_tokens` in all.
    pub(crate) fn encode(&self, text: &str, max_tokens: usize) -> Vec<u32> {
        match self {
            Self::WordPiece(t) => t.encode(text, max_tokens),
            Self::Unigram(t) => t.encode(text, max_tokens),
        }
    }

    /// The largest token id this tokenizer can produce.
    pub(crate) fn max_id(&self) -> u32 {
        match self {
            Self::WordPiece(t) => t.max_id(),
            Self::Unigram(t) => t.max_id(),
        }
    }
}

/// A loaded BERT tokenizer.
#[derive(Debug)]
pub(crate) struct BertTokenizer {
    vocab: HashMap<String, u32>,
    unk_id: u32,
    cls_id: u32,
    sep_id: u32,
    continuing_prefix: String,
    max_input_chars_per_word: usize,
    normalizer: Normalizer,
    /// Added tokens matched literally in the raw text, before normalisation.
    added: Vec<(String, u32)>,
}

#[derive(Debug, Clone, Copy)]
struct Normalizer {
    clean_text: bool,
    handle_chinese_chars: bool,
    strip_accents: bool,
    lowercase: bool,
}

#[derive(Deserialize)]
struct TokenizerFile {
    #[serde(default)]
    added_tokens: Vec<AddedTokenJson>,
    normalizer: Option<NormalizerJson>,
    pre_tokenizer: Option<TypeOnly>,
    post_processor: Option<serde_json::Value>,
    model: ModelJson,
}

#[derive(Deserialize)]
struct AddedTokenJson {
    id: u32,
    content: String,
    #[serde(default)]
    single_word: bool,
    #[serde(default)]
    lstrip: bool,
    #[serde(default)]
    rstrip: bool,
    #[serde(default)]
    normalized: bool,
}

#[derive(Deserialize)]
struct NormalizerJson {
    #[serde(rename = "type")]
    kind: String,
    #[serde(default = "yes")]
    clean_text: bool,
    #[serde(default = "yes")]
    handle_chinese_chars: bool,
    #[serde(default)]
    strip_accents: Option<bool>,
    #[serde(default = "yes")]
    lowercase: bool,
}

#[derive(Deserialize)]
struct TypeOnly {
    #[serde(rename = "type")]
    kind: String,
}

#[derive(Deserialize)]
struct ModelJson {
    #[serde(rename = "type")]
    kind: Option<String>,
    vocab: HashMap<String, u32>,
    unk_token: String,
    #[serde(default = "default_prefix")]
    continuing_subword_prefix: String,
    #[serde(default = "default_max_chars")]
    max_input_chars_per_word: usize,
}

fn yes() -> bool {
    true
}
fn default_prefix() -> String {
    "##".to_owned()
}
fn default_max_chars() -> usize {
    100
}

impl BertTokenizer {
    /// Parses the contents of a `tokenizer.json`. The error is a human-readable reason.
    pub(crate) fn from_json(json: &[u8]) -> Result<Self, String> {
        let file: TokenizerFile = serde_json::from_slice(json).map_err(|e| format!("tokenizer.json: {e}"))?;
        if let Some(kind) = &file.model.kind
            && kind != "WordPiece"
        {
            return Err(format!("tokenizer.json: model type {kind} is not supported, only WordPiece and Unigram"));
        }
        let normalizer = match &file.normalizer {
            Some(n) if n.kind == "BertNormalizer" => Normalizer {
                clean_text: n.clean_text,
                handle_chinese_chars: n.handle_chinese_chars,
                strip_accents: n.strip_accents.unwrap_or(n.lowercase),
                lowercase: n.lowercase,
            },
            Some(n) => {
                return Err(format!("tokenizer.json: normalizer {} is not supported, only BertNormalizer", n.kind));
            }
            None => {
                return Err("tokenizer.json: no normalizer; only BertNormalizer is supported".to_owned());
            }
        };
        match &file.pre_tokenizer {
            Some(p) if p.kind == "BertPreTokenizer" => {}
            Some(p) => {
                return Err(format!(
                    "tokenizer.json: pre-tokenizer {} is not supported, only BertPreTokenizer",
                    p.kind
                ));
            }
            None => {
                return Err("tokenizer.json: no pre-tokenizer; only BertPreTokenizer is supported".to_owned());
            }
        }
        let vocab = file.model.vocab;
        let lookup = |token: &str| {
            vocab.get(token).copied().ok_or_else(|| format!("tokenizer.json: token {token} is not in the vocabulary"))
        };
        let unk_id = lookup(&file.model.unk_token)?;
        let (cls_id, sep_id) = match &file.post_processor {
            Some(value) => special_ids(value)?,
            None => (lookup("[CLS]")?, lookup("[SEP]")?),
        };
        let mut added = Vec::new();
        for token in file.added_tokens {
            if token.single_word || token.lstrip || token.rstrip || token.normalized {
                return Err(format!(
                    "tokenizer.json: added token {} uses options (single_word, lstrip, rstrip, normalized) that are not supported",
                    token.content
                ));
            }
            if !token.content.is_empty() {
                added.push((token.content, token.id));
            }
        }
        // Longest first, so that among matches starting at the same place the longest wins.
        added.sort_by_key(|(content, _)| std::cmp::Reverse(content.len()));
        Ok(Self {
            vocab,
            unk_id,
            cls_id,
            sep_id,
            continuing_prefix: file.model.continuing_subword_prefix,
            max_input_chars_per_word: file.model.max_input_chars_per_word,
            normalizer,
            added,
        })
    }

    /// The largest token id this tokenizer can produce.
    pub(crate) fn max_id(&self) -> u32 {
        let vocab_max = self.vocab.values().copied().max().unwrap_or(0);
        let added_max = self.added.iter().map(|(_, id)| *id).max().unwrap_or(0);
        vocab_max.max(added_max).max(self.cls_id).max(self.sep_id).max(self.unk_id)
    }

    /// Token ids of `text`: `[CLS]`, the text's tokens truncated so that the whole is at most
    /// `max_tokens` long, `[SEP]`. Never fails and never panics, whatever the text.
    pub(crate) fn encode(&self, text: &str, max_tokens: usize) -> Vec<u32> {
        // Position limit for content tokens: ids[0] is [CLS], and [SEP] still has to fit.
        let limit = max_tokens.max(2) - 1;
        let mut ids = Vec::with_capacity(limit.min(text.len() + 1) + 1);
        ids.push(self.cls_id);
        let mut next_match: Vec<Option<usize>> = vec![None; self.added.len()];
        let mut offset = 0;
        let mut word = Word::default();
        while offset < text.len() && ids.len() < limit {
            match self.next_added(text, offset, &mut next_match) {
                Some((start, index)) => {
                    self.encode_plain(&text[offset..start], &mut ids, limit, &mut word);
                    if ids.len() < limit {
                        ids.push(self.added[index].1);
                    }
                    offset = start + self.added[index].0.len();
                }
                None => {
                    self.encode_plain(&text[offset..], &mut ids, limit, &mut word);
                    offset = text.len();
                }
            }
        }
        ids.truncate(limit);
        ids.push(self.sep_id);
        ids
    }

    /// The leftmost (then longest) added token at or after `offset`, as (byte start, index
    /// into `self.added`). `cache` remembers each token's next occurrence so that a long text
    /// is scanned once per token, not once per match.
    fn next_added(&self, text: &str, offset: usize, cache: &mut [Option<usize>]) -> Option<(usize, usize)> {
        let mut best: Option<(usize, usize)> = None;
        for (index, (content, _)) in self.added.iter().enumerate() {
            // `usize::MAX` in the cache means "no further occurrence".
            let position = match cache[index] {
                Some(p) if p >= offset => p,
                _ => {
                    let found = text[offset..].find(content.as_str()).map_or(usize::MAX, |p| p + offset);
                    cache[index] = Some(found);
                    found
                }
            };
            if position != usize::MAX && best.is_none_or(|(b, _)| position < b) {
                // `added` is sorted longest first, so an equal start keeps the longer token.
                best = Some((position, index));
            }
        }
        best
    }

    /// Normalises, pre-tokenises and WordPiece-encodes a text without added tokens, appending
    /// ids until `ids` holds `limit` of them.
    fn encode_plain(&self, segment: &str, ids: &mut Vec<u32>, limit: usize, word: &mut Word) {
        let n = self.normalizer;
        let cleaned = segment.chars().filter_map(move |c| {
            if n.clean_text {
                if c == '\0' || c == '\u{fffd}' || is_control(c) {
                    return None;
                }
                if is_bert_whitespace(c) {
                    return Some(' ');
                }
            }
            Some(c)
        });
        let spaced = cleaned.flat_map(move |c| {
            if n.handle_chinese_chars && is_chinese_char(c) {
                [' ', c, ' '].into_iter().take(3)
            } else {
                [c, ' ', ' '].into_iter().take(1)
            }
        });
        let stripped: Box<dyn Iterator<Item = char>> = if n.strip_accents {
            Box::new(spaced.nfd().map(|(c, _)| c).filter(|c| !c.is_mark_nonspacing()))
        } else {
            Box::new(spaced)
        };
        word.clear();
        for c in stripped {
            if ids.len() >= limit {
                return;
            }
            let lowered = LowerIter::new(c, n.lowercase);
            for c in lowered {
                if c.is_whitespace() {
                    self.flush(word, ids, limit);
                } else if is_bert_punctuation(c) {
                    self.flush(word, ids, limit);
                    word.push(c, self.max_input_chars_per_word);
                    self.flush(word, ids, limit);
                } else {
                    word.push(c, self.max_input_chars_per_word);
                }
            }
        }
        self.flush(word, ids, limit);
    }

    /// WordPiece-encodes the pending word, if any, and empties it.
    fn flush(&self, word: &mut Word, ids: &mut Vec<u32>, limit: usize) {
        if word.chars == 0 {
            return;
        }
        if ids.len() < limit {
            if word.chars > self.max_input_chars_per_word {
                ids.push(self.unk_id);
            } else {
                self.word_piece(&word.text, ids, limit);
            }
        }
        word.clear();
    }

    /// Greedy longest-match-first WordPiece, as `tokenizers` does it.
    fn word_piece(&self, word: &str, ids: &mut Vec<u32>, limit: usize) {
        let mut pieces: Vec<u32> = Vec::new();
        let mut candidate = String::with_capacity(word.len() + self.continuing_prefix.len());
        let mut start = 0;
        while start < word.len() {
            let mut end = word.len();
            let mut found = None;
            while start < end {
                candidate.clear();
                if start > 0 {
                    candidate.push_str(&self.continuing_prefix);
                }
                candidate.push_str(&word[start..end]);
                if let Some(&id) = self.vocab.get(candidate.as_str()) {
                    found = Some(id);
                    break;
                }
                end -= word[start..end].chars().next_back().map_or(1, char::len_utf8);
            }
            match found {
                Some(id) => {
                    pieces.push(id);
                    start = end;
                }
                None => {
                    pieces.clear();
                    pieces.push(self.unk_id);
                    break;
                }
            }
        }
        let room = limit.saturating_sub(ids.len());
        ids.extend(pieces.into_iter().take(room));
    }
}

/// The word being assembled. Past `max_input_chars_per_word` characters only the count
/// grows: such a word becomes `[UNK]` anyway, and a text without spaces must not make it
/// unbounded.
#[derive(Default)]
struct Word {
    text: String,
    chars: usize,
}

impl Word {
    fn push(&mut self, c: char, max_chars: usize) {
        if self.chars <= max_chars {
            self.text.push(c);
        }
        self.chars += 1;
    }
    fn clear(&mut self) {
        self.text.clear();
        self.chars = 0;
    }
}

/// `char::to_lowercase` when lowercasing is on, the character itself otherwise.
enum LowerIter {
    Lower(std::char::ToLowercase),
    Same(Option<char>),
}

impl LowerIter {
    fn new(c: char, lowercase: bool) -> Self {
        if lowercase { Self::Lower(c.to_lowercase()) } else { Self::Same(Some(c)) }
    }
}

impl Iterator for LowerIter {
    type Item = char;
    fn next(&mut self) -> Option<char> {
        match self {
            Self::Lower(it) => it.next(),
            Self::Same(c) => c.take(),
        }
    }
}

/// `tokenizers`' notion of whitespace for cleaning: tab, newline, carriage return and
/// Unicode White_Space.
fn is_bert_whitespace(c: char) -> bool {
    matches!(c, '\t' | '\n' | '\r') || c.is_whitespace()
}

/// `tokenizers`' notion of a control character: categories Cc, Cf and Co, except tab,
/// newline and carriage return (which count as whitespace).
fn is_control(c: char) -> bool {
    if c.is_ascii() {
        return (c < ' ' && !matches!(c, '\t' | '\n' | '\r')) || c == '\x7f';
    }
    c.is_other()
}

/// CJK ideographs, the ones BERT tokenises one character at a time.
fn is_chinese_char(c: char) -> bool {
    matches!(
        u32::from(c),
        0x4E00..=0x9FFF
            | 0x3400..=0x4DBF
            | 0x20000..=0x2A6DF
            | 0x2A700..=0x2B73F
            | 0x2B740..=0x2B81F
            | 0x2B920..=0x2CEAF
            | 0xF900..=0xFAFF
            | 0x2F800..=0x2FA1F
    )
}

/// ASCII punctuation (which includes symbols such as `$`, `+`, `^`) or any Unicode
/// punctuation category.
fn is_bert_punctuation(c: char) -> bool {
    if c.is_ascii() {
        return c.is_ascii_punctuation();
    }
    c.is_punctuation()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A tiny tokenizer.json with the structure of all-MiniLM-L6-v2's.
    fn tiny() -> BertTokenizer {
        let vocab = [
            "[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "hello", "world", "!", ",", "un", "##aff", "##able", "cafe",
            "中", "国", "a", "##b", "$", "i", "\u{307}",
        ];
        let vocab_json: Vec<String> =
            vocab.iter().enumerate().map(|(i, t)| format!("{}: {i}", serde_json::Value::from(*t))).collect();
        let json = format!(
            r###"{{
              "added_tokens": [
                {{"id": 0, "content": "[PAD]", "single_word": false, "lstrip": false, "rstrip": false, "normalized": false, "special": true}},
                {{"id": 4, "content": "[MASK]", "single_word": false, "lstrip": false, "rstrip": false, "normalized": false, "special": true}}
              ],
              "normalizer": {{"type": "BertNormalizer", "clean_text": true, "handle_chinese_chars": true, "strip_accents": null, "lowercase": true}},
              "pre_tokenizer": {{"type": "BertPreTokenizer"}},
              "post_processor": {{"type": "TemplateProcessing",
                 "single": [{{"SpecialToken": {{"id": "[CLS]", "type_id": 0}}}}, {{"Sequence": {{"id": "A", "type_id": 0}}}}, {{"SpecialToken": {{"id": "[SEP]", "type_id": 0}}}}],
                 "special_tokens": {{"[CLS]": {{"id": "[CLS]", "ids": [2], "tokens": ["[CLS]"]}}, "[SEP]": {{"id": "[SEP]", "ids": [3], "tokens": ["[SEP]"]}}}}}},
              "model": {{"type": "WordPiece", "unk_token": "[UNK]", "continuing_subword_prefix": "##", "max_input_chars_per_word": 100,
                 "vocab": {{{}}}}}
            }}"###,
            vocab_json.join(", ")
        );
        BertTokenizer::from_json(json.as_bytes()).expect("tiny tokenizer parses")
    }

    fn check(text: &str, expected: &[u32]) {
        assert_eq!(tiny().encode(text, 256), expected, "text {text:?}");
    }

    #[test]
    fn words_punctuation_and_case() {
        check("Hello, WORLD!", &[2, 5, 8, 6, 7, 3]);
        check("  hello\t\nworld  ", &[2, 5, 6, 3]);
    }

    #[test]
    fn word_pieces_and_unknown_words() {
        check("unaffable", &[2, 9, 10, 11, 3]);
        // One unknown piece makes the whole word [UNK].
        check("unaffablex", &[2, 1, 3]);
        check("ab", &[2, 15, 16, 3]);
    }

    #[test]
    fn empty_and_blank_text_is_cls_sep() {
        check("", &[2, 3]);
        check(" \t\n ", &[2, 3]);
        check("\u{0}\u{fffd}\u{200d}", &[2, 3]);
    }

    #[test]
    fn accents_are_stripped_and_cjk_split() {
        check("Café", &[2, 12, 3]);
        check("cafe\u{301}", &[2, 12, 3]);
        check("中国", &[2, 13, 14, 3]);
        check("hello中国world", &[2, 5, 13, 14, 6, 3]);
    }

    #[test]
    fn accents_are_stripped_before_lowercasing() {
        // U+0130 decomposes to I + U+0307; the mark is stripped, then I lowercases to i.
        check("\u{130}", &[2, 18, 3]);
    }

    #[test]
    fn ascii_symbols_are_punctuation() {
        check("a$b", &[2, 15, 17, 1, 3]);
    }

    #[test]
    fn added_tokens_match_in_raw_text() {
        check("hello [MASK] world", &[2, 5, 4, 6, 3]);
        check("hello[MASK]world", &[2, 5, 4, 6, 3]);
        // Lowercase is not the added token; it is normalised like any text.
        check("[mask]", &[2, 1, 1, 1, 3]);
        check("[PAD][MASK]", &[2, 0, 4, 3]);
    }

    #[test]
    fn truncation_keeps_cls_and_sep() {
        let tokenizer = tiny();
        let long = "hello ".repeat(1000);
        let ids = tokenizer.encode(&long, 8);
        assert_eq!(ids, vec![2, 5, 5, 5, 5, 5, 5, 3]);
        let masks = "[MASK]".repeat(1000);
        assert_eq!(tokenizer.encode(&masks, 4), vec![2, 4, 4, 3]);
        assert_eq!(tokenizer.encode("hello world", 0), vec![2, 3]);
    }

    #[test]
    fn very_long_words_are_unknown() {
        check(&"a".repeat(101), &[2, 1, 3]);
        check(&"a".repeat(100_000), &[2, 1, 3]);
    }

    #[test]
    fn hostile_text_never_panics() {
        let tokenizer = tiny();
        let samples = [
            "\u{1F600}\u{200D}\u{1F469}\u{FE0F}",
            "\u{10FFFF}\u{E000}\u{FFFF}",
            "a\u{301}\u{302}\u{303}\u{304}",
            "[MAS",
            "[",
            "ǅ ﬃ ẞ Σ",
        ];
        for text in samples {
            let ids = tokenizer.encode(text, 256);
            assert!(ids.len() >= 2 && ids.len() <= 256);
            assert_eq!((ids[0], ids[ids.len() - 1]), (2, 3));
        }
    }

    #[test]
    fn unsupported_tokenizers_are_rejected() {
        let bpe = r#"{"model": {"type": "BPE", "vocab": {}, "unk_token": "x"}}"#;
        assert!(BertTokenizer::from_json(bpe.as_bytes()).is_err());
        assert!(BertTokenizer::from_json(b"{not json").is_err());
    }
}
