//! LongMemEval (Wu et al., ICLR 2025), the official retrieval protocol (SOURCE.md,
//! `src/retrieval/run_retrieval.py` and `eval_utils.py`): the person's messages of each
//! question's own haystack are indexed; a turn is gold when it carries `has_answer` in an
//! `answer_*` session, a session is gold when it is an `answer_*` session with such a
//! turn; abstention questions (`_abs`) and questions without a gold user turn are skipped.
//! Reports recall_any@k, recall_all@k and ndcg_any@k for k ∈ {1, 3, 5, 10, 30, 50} at turn
//! level and at session level, where the ranked turns are collapsed to their sessions in
//! order of first appearance (the protocol's turn → session collapse).
//!
//! Each question is its own user (its haystack is its own history) and is asked at its
//! `question_date`. Embeddings are reused by content hash across questions by the caller's
//! [`crate::CachingEmbedder`]; the import itself skips questions already in the database.

use std::collections::{BTreeMap, HashSet};
use std::path::PathBuf;

use membank_engine::core::{Scope, TenantId};
use membank_engine::import::ImportReport;
use membank_engine::import::longmemeval::{parse_question, parse_time};
use membank_engine::{Engine, ImportRequest, ImportSet, RecallRequest};
use serde::Serialize;

use crate::error::read;
use crate::metrics::{Means, collapse, hit_at, ndcg_at};
use crate::selection::Half;
use crate::{EVAL_TENANT, EvalError, Progress};

/// The official cut-offs.
pub const KS: [usize; 6] = [1, 3, 5, 10, 30, 50];

/// How many turns each recall returns (enough to collapse into 50 sessions in practice).
const DEPTH: usize = 200;

/// What to run.
#[derive(Debug, Clone)]
pub struct LongMemEvalRun {
    /// `longmemeval_s_cleaned.json` or `longmemeval_oracle.json`.
    pub data: PathBuf,
    /// Only the first `limit` questions (all when `None`).
    pub limit: Option<usize>,
    /// Score only this half of those questions, by position (all when `None`); every
    /// haystack of the `limit` is still imported (see [`crate::selection`]).
    pub half: Option<Half>,
}

/// One question's outcome.
#[derive(Debug, Clone, Serialize)]
pub struct LongMemEvalQuestion {
    /// `question_id`.
    pub question_id: String,
    /// `question_type`.
    pub question_type: String,
    /// Gold sessions.
    pub gold_sessions: Vec<String>,
    /// The first ten sessions of the collapsed ranking.
    pub top_sessions: Vec<String>,
    /// Session-level values.
    pub session: BTreeMap<String, f64>,
    /// Turn-level values.
    pub turn: BTreeMap<String, f64>,
}

/// Session- and turn-level means.
#[derive(Debug, Clone, Serialize, Default)]
pub struct Levels {
    /// Turns collapsed to sessions.
    pub session: BTreeMap<String, f64>,
    /// Turns.
    pub turn: BTreeMap<String, f64>,
}

/// `{"metrics": {"session": {...}, "turn": {...}}, "by_type": {...}, "n", "skipped", "questions"}`.
#[derive(Debug, Clone, Serialize)]
pub struct LongMemEvalReport {
    /// Means over scored questions.
    pub metrics: Levels,
    /// The same per `question_type`, each level with its count `n`.
    pub by_type: BTreeMap<String, Levels>,
    /// Questions scored.
    pub n: usize,
    /// Questions skipped (abstention, or no gold user turn).
    pub skipped: usize,
    /// The half of the questions asked, 1 or 2 (`null`: all).
    pub half: Option<u8>,
    /// Every scored question.
    pub questions: Vec<LongMemEvalQuestion>,
    /// What the imports did, summed.
    #[serde(skip)]
    pub import: ImportReport,
}

fn values(ranked: &[String], gold: &HashSet<String>) -> BTreeMap<String, f64> {
    let mut out = BTreeMap::new();
    for k in KS {
        let top: Vec<String> = ranked.iter().take(k).cloned().collect();
        out.insert(format!("recall_any@{k}"), f64::from(u8::from(hit_at(&top, gold, k))));
        out.insert(format!("recall_all@{k}"), f64::from(u8::from(gold.iter().all(|g| top.contains(g)))));
        out.insert(format!("ndcg_any@{k}"), ndcg_at(ranked, gold, k));
    }
    out
}

/// One scored question, parsed.
struct Prepared {
    question_id: String,
    question_type: String,
    question: String,
    now: membank_engine::core::Timestamp,
    user: membank_engine::import::ImportUser,
    gold_turns: HashSet<String>,
    gold_sessions: HashSet<String>,
}

/// Parses one record; `None` for a question the protocol skips (abstention, or no gold user turn).
fn prepare(record: &serde_json::Value, index: usize, run: &LongMemEvalRun) -> Result<Option<Prepared>, EvalError> {
    let at = format!("{} $[{index}]", run.data.display());
    let field = |name: &str| {
        record
            .get(name)
            .and_then(|v| v.as_str())
            .map(String::from)
            .ok_or_else(|| EvalError::data(&at, format!("missing string field {name:?}")))
    };
    let question_id = field("question_id")?;
    let question_type = field("question_type")?;
    let question = field("question")?;
    let date = field("question_date")?;
    let now = parse_time(&date).ok_or_else(|| {
        EvalError::data(&at, format!("question_date {date:?} is not a time such as \"2023/05/30 (Tue) 23:40\""))
    })?;
    let user =
        parse_question(record, &format!("$[{index}]")).map_err(|e| EvalError::data(run.data.display(), e.reason))?;
    let gold_turns: HashSet<String> = user
        .records
        .iter()
        .filter(|r| {
            r.metadata.get("has_answer").is_some_and(|h| h == "true")
                && r.metadata.get("session_id").is_some_and(|s| s.contains("answer"))
        })
        .map(|r| r.key.clone())
        .collect();
    if question_id.ends_with("_abs") || gold_turns.is_empty() {
        return Ok(None);
    }
    let gold_sessions: HashSet<String> = user
        .records
        .iter()
        .filter(|r| gold_turns.contains(&r.key))
        .filter_map(|r| r.metadata.get("session_id").cloned())
        .collect();
    Ok(Some(Prepared { question_id, question_type, question, now, user, gold_turns, gold_sessions }))
}

/// Imports every question's haystack (idempotently), then asks every question.
pub fn run(engine: &Engine, run: &LongMemEvalRun, progress: Progress<'_>) -> Result<LongMemEvalReport, EvalError> {
    let bytes = read(&run.data)?;
    let root: serde_json::Value = serde_json::from_slice(&bytes)
        .map_err(|e| EvalError::data(format!("{}:{}", run.data.display(), e.line()), format!("not valid JSON: {e}")))?;
    drop(bytes);
    let records = root.as_array().ok_or_else(|| EvalError::data(run.data.display(), "expected a list of questions"))?;
    let records = &records[..run.limit.unwrap_or(records.len()).min(records.len())];
    let tenant = TenantId::new(EVAL_TENANT).map_err(|e| EvalError::data("tenant", e.reason))?;
    let asked = run.half.map_or(0..records.len(), |half| half.range(records.len()));
    if let Some(half) = run.half
        && asked.is_empty()
    {
        let held = if run.limit.is_some() { "within the limit" } else { "in the file" };
        return Err(EvalError::Selection(format!(
            "half {} of the questions of {} is empty: there are {} {held}",
            half.number(),
            run.data.display(),
            records.len()
        )));
    }

    // Every haystack is imported before any question is asked. BM25's term statistics are
    // those of the whole full-text index, so asking while importing would score each
    // question against a different index, and a rerun on the cached database would not
    // reproduce the first run.
    let mut import = ImportReport::default();
    let mut parsed = 0;
    for (index, record) in records.iter().enumerate() {
        progress("importing", index, records.len());
        let Some(question) = prepare(record, index, run)? else { continue };
        let report = engine.import(
            ImportRequest {
                tenant: tenant.clone(),
                set: ImportSet { format: "longmemeval", users: vec![question.user] },
                clock_from: membank_engine::core::ClockFrom::Event,
            },
            &|_, _| {},
        )?;
        import.users += report.users;
        import.records += report.records;
        import.imported += report.imported;
        import.skipped += report.skipped;
        parsed += 1;
    }
    progress("importing", records.len(), records.len());

    let mut session_means = Means::default();
    let mut turn_means = Means::default();
    let mut by_type: BTreeMap<String, (Means, Means)> = BTreeMap::new();
    let mut questions = Vec::with_capacity(parsed);
    let mut skipped = 0;
    for (index, record) in records.iter().enumerate().filter(|(i, _)| asked.contains(i)) {
        progress("questions", index - asked.start, asked.len());
        let Some(Prepared { question_id, question_type, question, now, user, gold_turns, gold_sessions }) =
            prepare(record, index, run)?
        else {
            skipped += 1;
            continue;
        };
        let scope = Scope::user(tenant.clone(), user.user.clone());
        let mut request = RecallRequest::new(scope, question.clone(), DEPTH);
        request.now = Some(now);
        request.strengthen = Some(false);
        let response = engine.recall(request)?;
        let ranked_turns: Vec<String> =
            response.results.iter().filter_map(|h| h.memory.metadata.get("turn_id").cloned()).collect();
        let ranked_sessions: Vec<String> = collapse(
            &response.results.iter().filter_map(|h| h.memory.metadata.get("session_id").cloned()).collect::<Vec<_>>(),
        );
        let session = values(&ranked_sessions, &gold_sessions);
        let turn = values(&ranked_turns, &gold_turns);
        session_means.add(&session);
        turn_means.add(&turn);
        let entry = by_type.entry(question_type.clone()).or_default();
        entry.0.add(&session);
        entry.1.add(&turn);
        let mut gold_list: Vec<String> = gold_sessions.into_iter().collect();
        gold_list.sort();
        questions.push(LongMemEvalQuestion {
            question_id,
            question_type,
            gold_sessions: gold_list,
            top_sessions: ranked_sessions.into_iter().take(10).collect(),
            session,
            turn,
        });
    }
    progress("questions", asked.len(), asked.len());
    let with_n = |means: &Means| {
        let mut m = means.means();
        m.insert("n".into(), means.n as f64);
        m
    };
    let by_type =
        by_type.iter().map(|(t, (s, u))| (t.clone(), Levels { session: with_n(s), turn: with_n(u) })).collect();
    Ok(LongMemEvalReport {
        metrics: Levels { session: session_means.means(), turn: turn_means.means() },
        by_type,
        n: session_means.n,
        skipped,
        half: run.half.map(Half::number),
        questions,
        import,
    })
}
