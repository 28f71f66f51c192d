//! LoCoMo (Maharana et al., ACL 2024): evidence recall@k by question category, the
//! paper's definition (`task_eval/evaluation.py`): the fraction of a question's gold
//! dialogue ids among the top k retrieved, averaged; a question without evidence counts 1;
//! category 5 (adversarial) is part of "overall".
//!
//! One memory per dialogue turn (see `membank_engine::import::locomo`). Questions are asked
//! the day after the conversation's last session. Evidence ids are normalised as SOURCE.md
//! describes (`"D8:6; D9:17"` split, `D:11:26` → `D11:26`, `D30:05` → `D30:5`) and ids
//! naming no turn are dropped.

use std::collections::{BTreeMap, HashSet};
use std::path::PathBuf;

use chrono::Duration;
use membank_engine::core::{Scope, TenantId};
use membank_engine::import::ImportReport;
use membank_engine::import::locomo::parse_sample;
use membank_engine::{Engine, ImportRequest, ImportSet, RecallRequest};
use serde::Serialize;

use crate::error::read;
use crate::metrics::{Means, recall_at};
use crate::selection::Conversations;
use crate::{EVAL_TENANT, EvalError, Progress};

/// What to run.
#[derive(Debug, Clone)]
pub struct LocomoRun {
    /// `locomo10.json`.
    pub data: PathBuf,
    /// Cut-offs for recall@k.
    pub ks: Vec<usize>,
    /// Score only these conversations (all when `None`); every one is still imported
    /// (see [`crate::selection`]).
    pub conversations: Option<Conversations>,
}

/// One question's outcome.
#[derive(Debug, Clone, Serialize)]
pub struct LocomoQuestion {
    /// `conv-26`.
    pub sample_id: String,
    /// Position in the sample's `qa` list.
    pub index: usize,
    /// Category code 1–5.
    pub category: u8,
    /// The question.
    pub question: String,
    /// Normalised gold dialogue ids.
    pub evidence: Vec<String>,
    /// recall@k values.
    pub metrics: BTreeMap<String, f64>,
    /// Retrieved dialogue ids, best first.
    pub retrieved: Vec<String>,
}

/// `{"metrics": {"recall@5", …}, "by_category": {"1": {…}, …}, "questions": […]}`.
#[derive(Debug, Clone, Serialize)]
pub struct LocomoReport {
    /// Overall recall@k (all categories).
    pub metrics: BTreeMap<String, f64>,
    /// Per category code, each with its question count `n`.
    pub by_category: BTreeMap<String, BTreeMap<String, f64>>,
    /// Questions scored.
    pub n: usize,
    /// The conversations scored, first and last position from 0 (`null`: all).
    pub conversations: Option<[usize; 2]>,
    /// Every question.
    pub questions: Vec<LocomoQuestion>,
    /// What the import did.
    #[serde(skip)]
    pub import: ImportReport,
}

/// Normalises LoCoMo evidence strings into dialogue ids (see the module docs).
pub fn normalise_evidence(raw: &[String]) -> Vec<String> {
    let mut out = Vec::new();
    for item in raw {
        for part in item.split(|c: char| c == ';' || c.is_whitespace()).filter(|p| !p.is_empty()) {
            let part = part.replacen("D:", "D", 1);
            let Some(rest) = part.strip_prefix('D') else { continue };
            let Some((session, turn)) = rest.split_once(':') else { continue };
            let (Ok(session), Ok(turn)) = (session.parse::<u32>(), turn.parse::<u32>()) else { continue };
            out.push(format!("D{session}:{turn}"));
        }
    }
    out
}

/// Imports every conversation (idempotently) and asks every question.
pub fn run(engine: &Engine, run: &LocomoRun, progress: Progress<'_>) -> Result<LocomoReport, EvalError> {
    let bytes = read(&run.data)?;
    let root: serde_json::Value = serde_json::from_slice(&bytes)
        .map_err(|e| EvalError::data(format!("{}:{}", run.data.display(), e.line()), format!("not valid JSON: {e}")))?;
    let samples = root.as_array().ok_or_else(|| EvalError::data(run.data.display(), "expected a list of samples"))?;
    let tenant = TenantId::new(EVAL_TENANT).map_err(|e| EvalError::data("tenant", e.reason))?;
    let mut users = Vec::new();
    for (i, sample) in samples.iter().enumerate() {
        users
            .push(parse_sample(sample, &format!("$[{i}]")).map_err(|e| EvalError::data(run.data.display(), e.reason))?);
    }
    if let Some(chosen) = run.conversations
        && chosen.last >= users.len()
    {
        let have = match users.len() {
            0 => "none".to_string(),
            n => format!("{n}, positions 0-{}", n - 1),
        };
        return Err(EvalError::Selection(format!(
            "conversations {chosen} are not all in {}: it has {have}",
            run.data.display()
        )));
    }
    let chosen = |position: usize| run.conversations.is_none_or(|c| c.contains(position));
    let set = ImportSet { format: "locomo", users };
    progress("importing", 0, set.len());
    let conversations = set.users.clone();
    let import = engine.import(
        ImportRequest { tenant: tenant.clone(), set, clock_from: membank_engine::core::ClockFrom::Event },
        &|done, total| progress("importing", done, total),
    )?;

    let ks: Vec<usize> = {
        let mut ks = run.ks.clone();
        ks.sort();
        ks.dedup();
        ks
    };
    let depth = ks.last().copied().unwrap_or(10).max(1);
    let total: usize = samples
        .iter()
        .enumerate()
        .filter(|(i, _)| chosen(*i))
        .map(|(_, s)| s.get("qa").and_then(|q| q.as_array()).map_or(0, Vec::len))
        .sum();
    let mut overall = Means::default();
    let mut by_category: BTreeMap<String, Means> = BTreeMap::new();
    let mut questions = Vec::new();
    for (sample, user) in
        samples.iter().zip(&conversations).enumerate().filter(|(i, _)| chosen(*i)).map(|(_, pair)| pair)
    {
        let sample_id = user.user.to_string();
        let known: HashSet<String> = user.records.iter().filter_map(|r| r.metadata.get("dia_id").cloned()).collect();
        let now = user.records.iter().map(|r| r.occurred_at).max().map(|t| t + Duration::days(1));
        let qa = sample.get("qa").and_then(|q| q.as_array()).map(Vec::as_slice).unwrap_or(&[]);
        for (index, item) in qa.iter().enumerate() {
            progress("asking", questions.len(), total);
            let at = format!("{} sample {sample_id} qa[{index}]", run.data.display());
            let question = item
                .get("question")
                .and_then(|q| q.as_str())
                .ok_or_else(|| EvalError::data(&at, "missing \"question\""))?;
            let category = item
                .get("category")
                .and_then(|c| c.as_u64())
                .filter(|c| (1..=5).contains(c))
                .ok_or_else(|| EvalError::data(&at, "\"category\" must be 1–5"))? as u8;
            let raw: Vec<String> = item
                .get("evidence")
                .and_then(|e| e.as_array())
                .map(|a| a.iter().filter_map(|x| x.as_str().map(String::from)).collect())
                .unwrap_or_default();
            let evidence: Vec<String> = normalise_evidence(&raw).into_iter().filter(|id| known.contains(id)).collect();
            let gold: HashSet<String> = evidence.iter().cloned().collect();
            let mut request = RecallRequest::new(Scope::user(tenant.clone(), user.user.clone()), question, depth);
            request.now = now;
            request.strengthen = Some(false);
            let response = engine.recall(request)?;
            let ranked: Vec<String> =
                response.results.iter().map(|h| h.memory.metadata.get("dia_id").cloned().unwrap_or_default()).collect();
            let values: BTreeMap<String, f64> =
                ks.iter().map(|&k| (format!("recall@{k}"), recall_at(&ranked, &gold, k))).collect();
            overall.add(&values);
            by_category.entry(category.to_string()).or_default().add(&values);
            questions.push(LocomoQuestion {
                sample_id: sample_id.clone(),
                index,
                category,
                question: question.to_string(),
                evidence,
                metrics: values,
                retrieved: ranked,
            });
        }
    }
    progress("asking", questions.len(), total);
    let by_category = by_category
        .into_iter()
        .map(|(category, means)| {
            let mut m = means.means();
            m.insert("n".into(), means.n as f64);
            (category, m)
        })
        .collect();
    let conversations = run.conversations.map(|c| [c.first, c.last]);
    Ok(LocomoReport { metrics: overall.means(), by_category, n: overall.n, conversations, questions, import })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn evidence_glitches_are_normalised() {
        let raw = ["D8:6; D9:17", "D9:1 D4:4 D4:6", "D:11:26", "D30:05", "D"].map(String::from);
        assert_eq!(normalise_evidence(&raw), ["D8:6", "D9:17", "D9:1", "D4:4", "D4:6", "D11:26", "D30:5"]);
    }
}
