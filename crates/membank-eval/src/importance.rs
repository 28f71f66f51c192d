//! Importance estimators against the critical-turn labels (`bench/critical`): builds one
//! example per labelled turn — the text the memory holds, exactly as the importer stores it,
//! its label, its set, its half and its group (the user, conversation or question) — and
//! scores any scorer by ROC AUC per set × half.
//!
//! The text is what the engine's importers build, so a score here is the score the memory
//! would get at import: MemoryBank turns are `"User: …\nAssistant: …"` (the person is the
//! `query` side), LoCoMo lines are the speaker's text (plus `[shared an image: …]` when a
//! caption is attached), LongMemEval memories are the user's messages alone.
//!
//! Halves follow `bench/critical/RULES.md`: MemoryBank users 1–8 in the bank's key order tune
//! and the rest report; LoCoMo conversations at positions 0–4 tune, 5–9 report; LongMemEval
//! questions in the first half of the question file tune, the second half report.

use std::collections::HashMap;
use std::fmt;
use std::path::Path;

use membank_engine::Embedder;
use membank_engine::core::memory::{Kind, Source};
use membank_engine::core::salience;
use membank_engine::import::{ImportRecord, locomo, longmemeval, memorybank};
use serde::Deserialize;
use serde_json::Value;

use crate::EvalError;

/// Which labelled set an example comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Set {
    /// MemoryBank, English bank.
    MemoryBankEn,
    /// MemoryBank, Chinese bank.
    MemoryBankCn,
    /// LoCoMo.
    Locomo,
    /// LongMemEval S (cleaned).
    LongMemEval,
}

impl Set {
    /// Every set, in report order.
    pub const ALL: [Set; 4] = [Set::MemoryBankEn, Set::MemoryBankCn, Set::Locomo, Set::LongMemEval];

    /// The name used in reports.
    pub fn name(self) -> &'static str {
        match self {
            Set::MemoryBankEn => "memorybank_en",
            Set::MemoryBankCn => "memorybank_cn",
            Set::Locomo => "locomo",
            Set::LongMemEval => "longmemeval",
        }
    }

    /// True for the sets whose memories the store embeds with the multilingual model.
    pub fn is_chinese(self) -> bool {
        self == Set::MemoryBankCn
    }
}

/// The tuning half or the reporting half.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Split {
    /// Fit and choose on these.
    Tune,
    /// Only ever reported.
    Report,
}

/// One labelled turn.
#[derive(Debug, Clone)]
pub struct Example {
    /// Its set.
    pub set: Set,
    /// Its half.
    pub split: Split,
    /// The user, conversation or question it belongs to (cross-validation folds are groups).
    pub group: String,
    /// Its group's position in the data file (MemoryBank: the user's in the bank's key
    /// order, the same person in both languages, so folds keep a user's translation with
    /// the user).
    pub position: usize,
    /// The memory's content, as the importer stores it.
    pub text: String,
    /// Critical by the written rules.
    pub critical: bool,
    /// Days since the Unix epoch at which it was said (for repetition across days).
    pub day: i64,
    /// What the importer stores it as (a turn, or a note of what the person said).
    pub kind: Kind,
    /// Who said it, as the importer stores it.
    pub source: Source,
}

/// Where the data and the labels are.
#[derive(Debug, Clone)]
pub struct Sources<'a> {
    /// `bench/critical`.
    pub labels: &'a Path,
    /// `memory_bank_en.json`.
    pub memorybank_en: &'a Path,
    /// `memory_bank_cn.json`.
    pub memorybank_cn: &'a Path,
    /// `locomo10.json`.
    pub locomo: &'a Path,
    /// `longmemeval_s_cleaned.json`, decompressed; `None` leaves LongMemEval's labels out.
    pub longmemeval: Option<&'a Path>,
}

fn read(path: &Path) -> Result<Vec<u8>, EvalError> {
    std::fs::read(path).map_err(|source| EvalError::Read { path: path.display().to_string(), source })
}

fn data(path: &Path, reason: impl fmt::Display) -> EvalError {
    EvalError::Data { path: path.display().to_string(), reason: reason.to_string() }
}

fn labels(path: &Path) -> Result<Vec<Value>, EvalError> {
    let bytes = read(path)?;
    String::from_utf8_lossy(&bytes)
        .lines()
        .enumerate()
        .filter(|(_, line)| !line.trim().is_empty())
        .map(|(i, line)| serde_json::from_str(line).map_err(|e| data(path, format!("line {}: {e}", i + 1))))
        .collect()
}

fn field(line: &Value, name: &str) -> String {
    match line.get(name) {
        Some(Value::String(s)) => s.clone(),
        Some(other) => other.to_string(),
        None => String::new(),
    }
}

fn critical(line: &Value) -> bool {
    line.get("critical").and_then(Value::as_i64) == Some(1)
}

fn day(record: &ImportRecord) -> i64 {
    record.occurred_at.timestamp().div_euclid(86_400)
}

fn memorybank_examples(set: Set, bank: &Path, label_file: &Path, out: &mut Vec<Example>) -> Result<(), EvalError> {
    let bytes = read(bank)?;
    let order = crate::memorybank::key_order(&bytes).map_err(|e| data(bank, e))?;
    let tune: Vec<&String> = order.iter().take(8).collect();
    let parsed = memorybank::parse(&bytes).map_err(|e| data(bank, e))?;
    let mut turns = HashMap::new();
    for user in &parsed.users {
        for record in &user.records {
            let (Some(key), Some(date), Some(turn)) = (
                record.metadata.get(memorybank::SOURCE_USER_KEY),
                record.metadata.get("date"),
                record.metadata.get("turn"),
            ) else {
                continue;
            };
            if record.user_text.is_some() {
                turns.insert((key.clone(), date.clone(), turn.clone()), record);
            }
        }
    }
    for line in labels(label_file)? {
        let key = (field(&line, "user"), field(&line, "date"), field(&line, "turn"));
        let record = turns.get(&key).ok_or_else(|| data(label_file, format!("no turn {key:?} in the bank")))?;
        out.push(Example {
            set,
            split: if tune.contains(&&key.0) { Split::Tune } else { Split::Report },
            position: order.iter().position(|k| *k == key.0).unwrap_or(usize::MAX),
            group: key.0.clone(),
            text: record.content(),
            critical: critical(&line),
            day: day(record),
            kind: record.kind,
            source: record.source,
        });
    }
    Ok(())
}

fn locomo_examples(file: &Path, label_file: &Path, out: &mut Vec<Example>) -> Result<(), EvalError> {
    let root: Value = serde_json::from_slice(&read(file)?).map_err(|e| data(file, e))?;
    let samples = root.as_array().ok_or_else(|| data(file, "expected a list of samples"))?;
    let mut turns = HashMap::new();
    for (position, sample) in samples.iter().enumerate() {
        let user = locomo::parse_sample(sample, &format!("$[{position}]")).map_err(|e| data(file, e))?;
        let name = field(sample, "sample_id");
        for record in user.records {
            if let Some(dia) = record.metadata.get("dia_id").cloned() {
                turns.insert((name.clone(), dia), (position, record));
            }
        }
    }
    for line in labels(label_file)? {
        let key = (field(&line, "sample"), field(&line, "dia_id"));
        let (position, record) = turns.get(&key).ok_or_else(|| data(label_file, format!("no turn {key:?}")))?;
        out.push(Example {
            set: Set::Locomo,
            split: if *position < 5 { Split::Tune } else { Split::Report },
            position: *position,
            group: key.0.clone(),
            text: record.content(),
            critical: critical(&line),
            day: day(record),
            kind: record.kind,
            source: record.source,
        });
    }
    Ok(())
}

fn longmemeval_examples(file: &Path, label_file: &Path, out: &mut Vec<Example>) -> Result<(), EvalError> {
    #[derive(Deserialize)]
    struct Question {
        question_id: String,
    }
    let lines = labels(label_file)?;
    let wanted: std::collections::HashSet<String> = lines.iter().map(|l| field(l, "question_id")).collect();
    let root: Vec<Value> = serde_json::from_slice(&read(file)?).map_err(|e| data(file, e))?;
    let middle = root.len().div_ceil(2);
    let mut turns = HashMap::new();
    for (position, question) in root.iter().enumerate() {
        let id = Question::deserialize(question).map_err(|e| data(file, e))?.question_id;
        if !wanted.contains(&id) {
            continue;
        }
        let user = longmemeval::parse_question(question, &format!("$[{position}]")).map_err(|e| data(file, e))?;
        for record in user.records {
            if let Some(turn_id) = record.metadata.get("turn_id").cloned() {
                turns.insert((id.clone(), turn_id), (position, record));
            }
        }
    }
    for line in lines {
        let id = field(&line, "question_id");
        let turn: usize = field(&line, "turn").parse().map_err(|_| data(label_file, "turn is not a number"))?;
        let turn_id = format!("{}_{}", field(&line, "session_id"), turn + 1);
        let (position, record) =
            turns.get(&(id.clone(), turn_id.clone())).ok_or_else(|| data(label_file, format!("no turn {turn_id}")))?;
        out.push(Example {
            set: Set::LongMemEval,
            split: if *position < middle { Split::Tune } else { Split::Report },
            position: *position,
            group: id,
            text: record.content(),
            critical: critical(&line),
            day: day(record),
            kind: record.kind,
            source: record.source,
        });
    }
    Ok(())
}

/// Every labelled turn of the four sets, in label-file order.
///
/// Errors: a file is unreadable or malformed, or a label names a turn the data lacks.
pub fn load(sources: &Sources<'_>) -> Result<Vec<Example>, EvalError> {
    let mut out = Vec::new();
    let dir = sources.labels;
    memorybank_examples(Set::MemoryBankEn, sources.memorybank_en, &dir.join("memorybank_en.jsonl"), &mut out)?;
    memorybank_examples(Set::MemoryBankCn, sources.memorybank_cn, &dir.join("memorybank_cn.jsonl"), &mut out)?;
    locomo_examples(sources.locomo, &dir.join("locomo.jsonl"), &mut out)?;
    if let Some(file) = sources.longmemeval {
        longmemeval_examples(file, &dir.join("longmemeval.jsonl"), &mut out)?;
    }
    Ok(out)
}

/// At most `per_cell` examples of each set × half among `ids`, spread evenly over the
/// cell in label-file order (the first, then every `len/per_cell`-th), so a sample of a
/// cell reaches all of its groups rather than the first few.
pub fn sample(examples: &[Example], ids: &[usize], per_cell: usize) -> Vec<usize> {
    let mut cells: std::collections::BTreeMap<(Set, Split), Vec<usize>> = std::collections::BTreeMap::new();
    for &i in ids {
        cells.entry((examples[i].set, examples[i].split)).or_default().push(i);
    }
    let mut out: Vec<usize> = cells
        .into_values()
        .flat_map(|cell| {
            let n = cell.len();
            let take = per_cell.min(n);
            (0..take).map(move |k| cell[k * n / take.max(1)]).collect::<Vec<_>>()
        })
        .collect();
    out.sort_unstable();
    out
}

/// The shipped estimator's reading of `ids` by `embedder`, as the engine rates a new
/// memory: the importance probe over the person's words (`salience::probe_text`) read at
/// the probe's layer, with the estimator version it reports (`…+asked` when a request to
/// remember raised it). `Ok(None)` when the model has no probe weights or shows no layers
/// (then the engine falls back to the lexical rules).
///
/// Errors: the embedder fails.
pub fn probe_scores(
    embedder: &dyn Embedder,
    examples: &[Example],
    ids: &[usize],
) -> Result<Option<Vec<(f64, &'static str)>>, EvalError> {
    let Some(layer) = salience::probe_layer(embedder.model_id()) else { return Ok(None) };
    let mut out = Vec::with_capacity(ids.len());
    for chunk in ids.chunks(64) {
        let texts: Vec<&str> = chunk.iter().map(|&i| salience::probe_text(&examples[i].text)).collect();
        let means = embedder.layer_means(&texts, layer).map_err(membank_engine::EngineError::from)?;
        let Some(means) = means else { return Ok(None) };
        for (&i, features) in chunk.iter().zip(&means) {
            out.push(salience::estimate_importance_with(&examples[i].text, embedder.model_id(), Some(features)));
        }
    }
    Ok(Some(out))
}

/// ROC AUC, ties counted half: the one in [`crate::metrics`].
pub use crate::metrics::roc_auc;

/// One cell of an AUC table.
#[derive(Debug, Clone, serde::Serialize)]
pub struct AucRow {
    /// The set's name.
    pub set: &'static str,
    /// `tune` or `report`.
    pub half: &'static str,
    /// Labelled turns.
    pub turns: usize,
    /// Of which critical.
    pub critical: usize,
    /// ROC AUC (`None` without both classes).
    pub auc: Option<f64>,
}

/// AUC per set × half for the given splits, from one score per example (same order).
pub fn auc_table(examples: &[Example], scores: &[f64], splits: &[Split]) -> Vec<AucRow> {
    let mut rows = Vec::new();
    for set in Set::ALL {
        for &split in splits {
            let scored: Vec<(f64, bool)> = examples
                .iter()
                .zip(scores)
                .filter(|(e, _)| e.set == set && e.split == split)
                .map(|(e, s)| (*s, e.critical))
                .collect();
            rows.push(AucRow {
                set: set.name(),
                half: if split == Split::Tune { "tune" } else { "report" },
                turns: scored.len(),
                critical: scored.iter().filter(|(_, y)| *y).count(),
                auc: roc_auc(&scored),
            });
        }
    }
    rows
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn auc_counts_ties_half_and_needs_both_classes() {
        assert_eq!(roc_auc(&[(0.1, false), (0.9, true)]), Some(1.0));
        assert_eq!(roc_auc(&[(0.5, false), (0.5, true)]), Some(0.5));
        assert_eq!(roc_auc(&[(0.9, false), (0.1, true)]), Some(0.0));
        assert_eq!(roc_auc(&[(0.9, true)]), None);
    }

    #[test]
    fn keys_keep_file_order() {
        assert_eq!(crate::memorybank::key_order(br#"{"b": 1, "a": {"x": [1]}, "c": null}"#).unwrap(), ["b", "a", "c"]);
    }
}
