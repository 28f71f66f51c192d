//! What the benchmarks measure on: sentences from the public data sets or a sentence file,
//! a bench user filled with memories and their real vectors, synthetic memories, and the
//! [`Dataset`] line each report gives per backend.

use std::io::BufRead as _;
use std::path::Path;

use anyhow::{Context as _, Result};
use membank_engine::core::{InvalidInput, Kind, Memory, Scope};
use membank_store::{EmbeddingModel, NewMemory, Store};
use serde::Serialize;

use crate::progress::Bar;

/// Most bytes read from a `--sentences` file (a hostile file cannot exhaust memory).
const MAX_SENTENCE_FILE_BYTES: u64 = 64 << 20;

/// User utterances from the public data sets, deduplicated, in file order: at most `n`, at
/// least one.
pub fn sentences(data: &Path, n: usize) -> Result<Vec<String>> {
    let mut out = Vec::new();
    let mut seen = std::collections::HashSet::new();
    let bank: serde_json::Value = serde_json::from_slice(
        &std::fs::read(data.join("memorybank/memory_bank_en.json"))
            .with_context(|| format!("reading {}/memorybank/memory_bank_en.json", data.display()))?,
    )?;
    for user in bank.as_object().into_iter().flat_map(|o| o.values()) {
        for turns in user["history"].as_object().into_iter().flat_map(|h| h.values()) {
            for turn in turns.as_array().into_iter().flatten() {
                for field in ["query", "response"] {
                    if let Some(text) = turn[field].as_str()
                        && !text.trim().is_empty()
                        && seen.insert(text.to_string())
                    {
                        out.push(text.to_string());
                    }
                }
            }
        }
    }
    let locomo: serde_json::Value = serde_json::from_slice(
        &std::fs::read(data.join("locomo/locomo10.json"))
            .with_context(|| format!("reading {}/locomo/locomo10.json", data.display()))?,
    )?;
    for sample in locomo.as_array().into_iter().flatten() {
        for (key, session) in sample["conversation"].as_object().into_iter().flatten() {
            if !key.starts_with("session_") || key.ends_with("date_time") {
                continue;
            }
            for turn in session.as_array().into_iter().flatten() {
                if let Some(text) = turn["text"].as_str()
                    && seen.insert(text.to_string())
                {
                    out.push(text.to_string());
                }
            }
        }
    }
    out.truncate(n);
    if out.is_empty() {
        return Err(InvalidInput::new("data", format!("no sentences in {}", data.display())).into());
    }
    Ok(out)
}

/// The benchmarks' queries: at most `n`, every seventh sentence of `corpus` cut to its first
/// eight words (a question's length, and not the text of a stored memory).
pub(crate) fn questions(corpus: &[String], n: usize) -> Vec<String> {
    corpus.iter().step_by(7).take(n).map(|s| s.split_whitespace().take(8).collect::<Vec<_>>().join(" ")).collect()
}

/// Exactly `n` sentences from the public data.
pub(crate) fn data_sentences(data: &Path, n: usize) -> Result<Vec<String>> {
    let texts = sentences(data, n)?;
    if texts.len() < n {
        return Err(InvalidInput::new(
            "n",
            format!(
                "only {} distinct sentences in {}; ask for --n {} or fewer",
                texts.len(),
                data.display(),
                texts.len()
            ),
        )
        .into());
    }
    Ok(texts)
}

/// The first `n` lines of a sentence file, each one sentence.
pub(crate) fn sentence_file(path: &Path, n: usize) -> Result<Vec<String>> {
    let invalid =
        |reason: String| anyhow::Error::new(InvalidInput::new("sentences", format!("{}: {reason}", path.display())));
    let file = std::fs::File::open(path).map_err(|e| invalid(format!("cannot read it: {e}")))?;
    let mut reader = std::io::BufReader::new(std::io::Read::take(file, MAX_SENTENCE_FILE_BYTES + 1));
    let mut out = Vec::new();
    let mut line = Vec::new();
    let mut read = 0u64;
    while out.len() < n {
        line.clear();
        let got = reader.read_until(b'\n', &mut line).map_err(|e| invalid(format!("cannot read it: {e}")))?;
        if got == 0 {
            break;
        }
        read += got as u64;
        if read > MAX_SENTENCE_FILE_BYTES {
            return Err(invalid(format!("its first {n} lines are longer than {} MiB", MAX_SENTENCE_FILE_BYTES >> 20)));
        }
        let number = out.len() + 1;
        let text = std::str::from_utf8(&line)
            .map_err(|e| invalid(format!("line {number} is not valid UTF-8 (at byte {})", e.valid_up_to())))?;
        let text = text.strip_suffix('\n').unwrap_or(text);
        let text = text.strip_suffix('\r').unwrap_or(text);
        if text.trim().is_empty() {
            return Err(invalid(format!("line {number} is blank; the file must hold one sentence per line")));
        }
        out.push(text.to_string());
    }
    if out.is_empty() {
        return Err(invalid("it holds no sentences".into()));
    }
    if out.len() < n {
        return Err(invalid(format!("it holds only {} sentences; ask for --n {} or fewer", out.len(), out.len())));
    }
    Ok(out)
}

/// Adds memories `have..size` to the bench user. Texts are real utterances, then pairs of
/// them once single ones run out (so every text is distinct). Single utterances get their
/// real vectors; a pair gets the normalised sum of its two sentences' real vectors, which
/// keeps building 100k memories to minutes. An exact scan's cost does not depend on the
/// vectors' values, and BM25 sees the real pair text.
pub(crate) fn fill(
    store: &dyn Store,
    scope: &Scope,
    model: &EmbeddingModel,
    embedder: &dyn membank_embed::Embedder,
    corpus: &[String],
    have: usize,
    size: usize,
) -> Result<()> {
    let start_day = chrono::Utc::now() - chrono::Duration::days(365);
    store.ensure_user(&scope.tenant, &scope.user, start_day)?;
    // Only the sentences the store will hold: all of them once pairs are needed.
    let needed = &corpus[..size.min(corpus.len())];
    eprintln!("embedding {} sentences; pairs beyond them reuse their vectors (normalised sums)", needed.len());
    let bar = Bar::new();
    let mut base = Vec::with_capacity(needed.len());
    for chunk in needed.chunks(256) {
        base.extend(embedder.embed(&chunk.iter().map(String::as_str).collect::<Vec<_>>())?);
        bar.update("embedding", base.len(), needed.len());
    }
    let pair = |i: usize| (i % corpus.len(), (i / corpus.len() * 31 + i) % corpus.len());
    for chunk_start in (have..size).step_by(5000) {
        let chunk_end = (chunk_start + 5000).min(size);
        let batch = (chunk_start..chunk_end).map(|i| {
            let (text, vector) = if i < corpus.len() {
                (corpus[i].clone(), base[i].clone())
            } else {
                let (a, b) = pair(i);
                let mut v: Vec<f32> = base[a].iter().zip(&base[b]).map(|(x, y)| x + y).collect();
                let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt().max(1e-6);
                v.iter_mut().for_each(|x| *x /= norm);
                (format!("{} {}", corpus[a], corpus[b]), v)
            };
            let at = start_day + chrono::Duration::minutes((i * 5) as i64);
            NewMemory {
                memory: synthetic_memory(scope, Kind::Turn, text, at),
                embedding: Some((model.clone(), vector)),
            }
        });
        store.insert_many(batch.collect())?;
        bar.update("inserting", chunk_end - have, size - have);
    }
    bar.finish();
    Ok(())
}

/// A deterministic pseudo-random unit vector of `dim` components (xorshift from `seed`),
/// for benchmarks that store vectors without a model.
pub(crate) fn unit_vector(seed: usize, dim: usize) -> Vec<f32> {
    let mut x = (seed as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    let v: Vec<f32> = (0..dim)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            (x % 2000) as f32 / 1000.0 - 1.0
        })
        .collect();
    normalised(v)
}

/// `v` scaled to unit length.
pub(crate) fn normalised(mut v: Vec<f32>) -> Vec<f32> {
    let norm = v.iter().map(|a| a * a).sum::<f32>().sqrt().max(1e-6);
    v.iter_mut().for_each(|a| *a /= norm);
    v
}

pub(crate) fn synthetic_memory(scope: &Scope, kind: Kind, text: String, at: membank_engine::core::Timestamp) -> Memory {
    Memory { user_text: Some(text.clone()), ..Memory::fixture(scope, kind, text, at) }
}

/// One backend's copy of the dataset.
#[derive(Debug, Clone, Serialize, serde::Deserialize)]
pub struct Dataset {
    /// `"sqlite"` or `"postgres"`.
    pub backend: String,
    /// The SQLite file, or the PostgreSQL URL without its password.
    pub location: String,
    /// Memories this run added (built for SQLite, copied from it for PostgreSQL); 0 when it
    /// was reused as it was.
    pub added: usize,
    /// Seconds that took; null when nothing was added.
    pub seconds: Option<f64>,
    /// Memories added per second (SQLite: embedding and `insert_many`; PostgreSQL: export
    /// from SQLite and `import_users`, `pg_dataset::copy_users`);
    /// null when nothing was added.
    pub memories_per_second: Option<f64>,
}

impl Dataset {
    /// `added` memories in `seconds` (nothing added: no time, no rate).
    pub(crate) fn new(backend: &str, location: String, added: usize, seconds: f64) -> Self {
        let timed = added > 0;
        Self {
            backend: backend.to_string(),
            location,
            added,
            seconds: timed.then_some(seconds),
            memories_per_second: timed.then(|| added as f64 / seconds),
        }
    }
}
