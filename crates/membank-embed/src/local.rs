//! [`LocalEmbedder`]: all-MiniLM-L6-v2 run in-process on the CPU from a model directory
//! (`config.json`, `tokenizer.json`, `model.safetensors`), giving the vectors
//! sentence-transformers gives: tokenise (truncated to 256 tokens), encode, mean-pool,
//! L2-normalise.
//!
//! A call to [`Embedder::embed`] tokenises every text, sorts the texts by token count, cuts
//! the sorted list into batches of similar length, and hands the batches to `threads` scoped
//! worker threads that take them from a shared counter, so that long and short batches
//! spread evenly. Results go back to input order. One thread (or a single batch) runs on the
//! caller's thread without spawning.
//!
//! It deliberately does not download models (see [`crate::fetch`]), cache vectors, or keep
//! threads alive between calls: nothing spins while the embedder is idle.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};

use crate::bert::{Bert, BertConfig, Scratch};
use crate::tokenizer::BertTokenizer;
use crate::{EmbedError, Embedder};

/// The model id every [`LocalEmbedder`] reports.
pub const MODEL_ID: &str = "sentence-transformers/all-MiniLM-L6-v2";
/// Length of the vectors of all-MiniLM-L6-v2.
pub const DIM: usize = 384;
/// Token limit per text, `[CLS]` and `[SEP]` included (the model's `max_seq_length`);
/// longer texts are truncated, as sentence-transformers does.
pub const MAX_SEQ_LENGTH: usize = 256;
/// The files a model directory must hold.
pub const MODEL_FILES: [&str; 3] = ["config.json", "tokenizer.json", "model.safetensors"];

/// Most texts in one batch.
const MAX_BATCH_TEXTS: usize = 128;
/// Most tokens in one batch. Throughput is flat from 512 to 4096 tokens (measured); 1024
/// keeps a thread's activations near 17 MiB and leaves enough batches to balance threads.
const MAX_BATCH_TOKENS: usize = 1024;

/// How a [`LocalEmbedder`] runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LocalOptions {
    /// Worker threads per `embed` call; 0 is taken as 1. Each thread runs whole batches
    /// with single-threaded matrix products.
    pub threads: usize,
}

impl Default for LocalOptions {
    /// As many threads as the machine has cores.
    fn default() -> Self {
        Self {
            threads: std::thread::available_parallelism().map_or(1, |n| n.get()),
        }
    }
}

/// all-MiniLM-L6-v2 in-process on the CPU. See the module docs.
#[derive(Debug)]
pub struct LocalEmbedder {
    dir: PathBuf,
    tokenizer: BertTokenizer,
    model: Bert,
    threads: usize,
}

impl LocalEmbedder {
    /// Loads the model in `dir`.
    ///
    /// Errors: [`EmbedError::ModelMissing`] naming the first of `config.json`,
    /// `tokenizer.json`, `model.safetensors` that is absent; [`EmbedError::InvalidModel`]
    /// when a file is unreadable as what it should be (bad JSON, truncated or foreign
    /// safetensors, wrong tensor shapes, a model other than all-MiniLM-L6-v2);
    /// [`EmbedError::Io`] when reading fails.
    pub fn open(dir: &Path, options: LocalOptions) -> Result<Self, EmbedError> {
        require_files(dir)?;
        let invalid = |reason: String| EmbedError::InvalidModel {
            dir: dir.to_path_buf(),
            reason,
        };
        let config =
            BertConfig::from_json(&std::fs::read(dir.join("config.json"))?).map_err(invalid)?;
        let expected = (DIM, 6, 12, 1536);
        let actual = (
            config.hidden_size,
            config.num_hidden_layers,
            config.num_attention_heads,
            config.intermediate_size,
        );
        if actual != expected {
            return Err(invalid(format!(
                "config.json describes (hidden, layers, heads, intermediate) = {actual:?}, \
                 not all-MiniLM-L6-v2's {expected:?}"
            )));
        }
        let tokenizer = BertTokenizer::from_json(&std::fs::read(dir.join("tokenizer.json"))?)
            .map_err(invalid)?;
        let weights = std::fs::read(dir.join("model.safetensors"))?;
        let model = Bert::from_safetensors(config, &weights).map_err(invalid)?;
        if tokenizer.max_id() as usize >= model.vocab_size() {
            return Err(invalid(format!(
                "tokenizer.json has token id {} but the model has only {} word embeddings",
                tokenizer.max_id(),
                model.vocab_size()
            )));
        }
        if model.max_positions() < MAX_SEQ_LENGTH {
            return Err(invalid(format!(
                "config.json allows {} positions, fewer than the {MAX_SEQ_LENGTH} tokens the model is used with",
                model.max_positions()
            )));
        }
        tracing::debug!(dir = %dir.display(), threads = options.threads, "loaded local embedding model");
        Ok(Self {
            dir: dir.to_path_buf(),
            tokenizer,
            model,
            threads: options.threads.max(1),
        })
    }

    /// The directory the model was loaded from.
    pub fn model_dir(&self) -> &Path {
        &self.dir
    }

    /// Worker threads per `embed` call.
    pub fn threads(&self) -> usize {
        self.threads
    }

    /// The token ids the model sees for `text`: `[CLS]`, the WordPiece tokens truncated to
    /// [`MAX_SEQ_LENGTH`] in all, `[SEP]`. For diagnostics and tests.
    pub fn token_ids(&self, text: &str) -> Vec<u32> {
        self.tokenizer.encode(text, MAX_SEQ_LENGTH)
    }

    /// Embeds already tokenised sequences, in order.
    fn embed_ids(&self, sequences: &[Vec<u32>]) -> Vec<Vec<f32>> {
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
            batch
                .iter()
                .copied()
                .zip(self.model.embed_batch(&inputs, scratch))
                .collect()
        };
        let next = AtomicUsize::new(0);
        let worker = || {
            let mut scratch = Scratch::default();
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
            worker()
        } else {
            std::thread::scope(|scope| {
                let handles: Vec<_> = (1..workers).map(|_| scope.spawn(worker)).collect();
                let mut all = worker();
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
            return Err(EmbedError::ModelMissing {
                dir: dir.to_path_buf(),
                file: file.to_owned(),
            });
        }
    }
    Ok(())
}

impl Embedder for LocalEmbedder {
    fn model_id(&self) -> &str {
        MODEL_ID
    }

    fn dim(&self) -> usize {
        self.model.hidden_size()
    }

    fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, EmbedError> {
        let sequences: Vec<Vec<u32>> = texts.iter().map(|text| self.token_ids(text)).collect();
        Ok(self.embed_ids(&sequences))
    }
}
