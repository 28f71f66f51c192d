//! The MemoryBank paper's probing questions: 15 simulated users, 10 days of
//! chat each, questions asked "the day after".
//!
//! The bank is imported as it is (`memory_bank_<lang>.json`), each question of
//! `probing_questions_<lang>.jsonl` is asked as a recall of turns for its user, and the
//! ranked turns are scored against a gold file (`gold_*.jsonl`: `user`, `qid`, `evidence`
//! as date + 0-based turn index, `kind`; `question` and `answer` are optional and unused).
//! A qid names its question by position: `en-<user name without spaces>-<i>` for English,
//! `cn-<line index>-<i>` for Chinese. Questions with empty evidence are asked but not
//! scored; the report counts them (`asked`, `skipped`, `skipped_by_reason`), so that `n`
//! is never a silently smaller number than the questions asked.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::PathBuf;

use chrono::{Duration, NaiveDate};
use membank_engine::core::{Kind, Scope, TenantId, Timestamp, UserId};
use membank_engine::import::memorybank::{self, turn_time};
use membank_engine::import::{IMPORT_KEY, ImportReport};
use membank_engine::{Engine, ImportRequest, RecallRequest};
use serde::Serialize;

use crate::error::read;
use crate::metrics::{Means, all_at, hit_at, reciprocal_rank};
use crate::{EVAL_TENANT, EvalError, Progress};

/// Which language's bank and questions.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Lang {
    /// English (`_en` files, qids `en-<name>-<i>`).
    En,
    /// Chinese (`_cn` files, qids `cn-<line>-<i>`).
    Cn,
}

impl Lang {
    /// The file suffix and qid prefix.
    pub fn as_str(self) -> &'static str {
        match self {
            Lang::En => "en",
            Lang::Cn => "cn",
        }
    }
}

/// What to run.
#[derive(Debug, Clone)]
pub struct MemoryBankRun {
    /// The bank (`memory_bank_<lang>.json`).
    pub bank: PathBuf,
    /// The questions (`probing_questions_<lang>.jsonl`).
    pub questions: PathBuf,
    /// Gold evidence; without it the questions are asked and nothing is scored.
    pub gold: Option<PathBuf>,
    /// Language (qid scheme).
    pub lang: Lang,
    /// Cut-offs for hit@k and all@k.
    pub ks: Vec<usize>,
    /// Ask every question at this time instead of the day after the user's last history date.
    pub now: Option<Timestamp>,
}

/// One retrieved turn.
#[derive(Debug, Clone, Serialize)]
pub struct Retrieved {
    /// History date.
    pub date: String,
    /// 0-based turn index within the date.
    pub turn: usize,
    /// Its fused score.
    pub score: f64,
}

/// One question's outcome.
#[derive(Debug, Clone, Serialize)]
pub struct QuestionResult {
    /// `en-Emily-0`, `cn-3-2`.
    pub qid: String,
    /// The bank's user key.
    pub user: String,
    /// The question.
    pub question: String,
    /// Gold kind, if gold was given.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub kind: Option<String>,
    /// Gold evidence as `date#turn`.
    pub evidence: Vec<String>,
    /// Whether it counts in the metrics (gold given and evidence not empty).
    pub scored: bool,
    /// Why it does not count, when it does not: [`NO_GOLD`] or [`NO_EVIDENCE`].
    #[serde(skip_serializing_if = "Option::is_none")]
    pub skip_reason: Option<&'static str>,
    /// The rank of the first gold turn (1-based), if retrieved.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub first_rank: Option<usize>,
    /// Its metric values.
    pub metrics: BTreeMap<String, f64>,
    /// What recall returned, best first.
    pub retrieved: Vec<Retrieved>,
}

/// Why a question was asked but not scored: no gold file was given.
pub const NO_GOLD: &str = "no_gold";
/// Why a question was asked but not scored: its gold line lists no evidence (the answer is
/// not in the history, e.g. a question about a day the bank has no turns for).
pub const NO_EVIDENCE: &str = "no_evidence";

/// The run's result: `{"metrics": {...}, "by_kind": {...}, "n", "asked", "skipped",
/// "skipped_by_reason": {"no_evidence": 1}, "questions": [...]}`.
#[derive(Debug, Clone, Serialize)]
pub struct MemoryBankReport {
    /// hit@k and all@k for every k asked, and mrr; empty without gold.
    pub metrics: BTreeMap<String, f64>,
    /// The same per gold kind, each with its question count `n`.
    pub by_kind: BTreeMap<String, BTreeMap<String, f64>>,
    /// Scored questions.
    pub n: usize,
    /// Questions asked: `n` scored plus `skipped`.
    pub asked: usize,
    /// Questions asked but not scored.
    pub skipped: usize,
    /// The skipped questions counted by reason ([`NO_GOLD`], [`NO_EVIDENCE`]); empty when
    /// none was skipped.
    pub skipped_by_reason: BTreeMap<&'static str, usize>,
    /// Every question asked.
    pub questions: Vec<QuestionResult>,
    /// What the import did (all skipped when the database already held the bank).
    #[serde(skip)]
    pub import: ImportReport,
}

/// One line of a gold file (shared with `simulate`).
#[derive(Debug, serde::Deserialize)]
pub(crate) struct GoldLine {
    pub(crate) user: String,
    pub(crate) qid: String,
    #[serde(default)]
    pub(crate) evidence: Vec<GoldTurn>,
    #[serde(default)]
    pub(crate) kind: Option<String>,
}

/// One evidence turn: history date and 0-based turn index.
#[derive(Debug, serde::Deserialize)]
pub(crate) struct GoldTurn {
    pub(crate) date: String,
    pub(crate) turn: usize,
}

/// One probing question with the qid that names it.
pub(crate) struct Question {
    pub(crate) qid: String,
    pub(crate) user: UserId,
    pub(crate) user_key: String,
    pub(crate) text: String,
}

/// Imports the bank (idempotently) and asks every question.
pub fn run(engine: &Engine, run: &MemoryBankRun, progress: Progress<'_>) -> Result<MemoryBankReport, EvalError> {
    let bank_bytes = read(&run.bank)?;
    let set = memorybank::parse(&bank_bytes).map_err(|e| EvalError::data(run.bank.display(), e.reason))?;
    // The day after each user's last history date, at the hour turns are dated.
    let mut last_day: HashMap<UserId, NaiveDate> = HashMap::new();
    let mut key_of: HashMap<UserId, String> = HashMap::new();
    for user in &set.users {
        let raw = user
            .records
            .first()
            .and_then(|r| r.metadata.get(memorybank::SOURCE_USER_KEY))
            .cloned()
            .unwrap_or_else(|| user.user.to_string());
        key_of.insert(user.user.clone(), raw);
        for record in &user.records {
            if record.kind == Kind::Turn {
                let day = record.occurred_at.date_naive();
                let entry = last_day.entry(user.user.clone()).or_insert(day);
                *entry = (*entry).max(day);
            }
        }
    }
    let tenant = TenantId::new(EVAL_TENANT).map_err(|e| EvalError::data("tenant", e.reason))?;
    progress("importing", 0, set.len());
    let import = engine.import(
        ImportRequest { tenant: tenant.clone(), set, clock_from: membank_engine::core::ClockFrom::Event },
        &|done, total| progress("importing", done, total),
    )?;

    let questions = read_questions(run, &key_of)?;
    let gold = match &run.gold {
        Some(path) => Some(read_gold(path)?),
        None => None,
    };
    let ks: Vec<usize> = {
        let mut ks = run.ks.clone();
        ks.sort();
        ks.dedup();
        ks
    };
    let depth = ks.last().copied().unwrap_or(10).max(1);

    let asked: Vec<&Question> = match &gold {
        Some(gold) => {
            let by_qid: HashMap<&str, &Question> = questions.iter().map(|q| (q.qid.as_str(), q)).collect();
            let mut out = Vec::new();
            for (line, g) in gold {
                let question = by_qid.get(g.qid.as_str()).ok_or_else(|| {
                    EvalError::data(
                        format!("{}:{line}", run.gold.as_ref().map(|p| p.display().to_string()).unwrap_or_default()),
                        format!("qid {:?} names no question in {}", g.qid, run.questions.display()),
                    )
                })?;
                if g.user.trim() != question.user.as_str() {
                    return Err(EvalError::data(
                        format!("{}:{line}", run.gold.as_ref().map(|p| p.display().to_string()).unwrap_or_default()),
                        format!(
                            "qid {:?} belongs to user {:?}, the gold line says {:?}",
                            g.qid, question.user_key, g.user
                        ),
                    ));
                }
                out.push(*question);
            }
            out
        }
        None => questions.iter().collect(),
    };
    let gold_by_qid: HashMap<&str, &GoldLine> = gold.iter().flatten().map(|(_, g)| (g.qid.as_str(), g)).collect();

    let mut results = Vec::new();
    let mut overall = Means::default();
    let mut by_kind: BTreeMap<String, Means> = BTreeMap::new();
    for (i, question) in asked.iter().enumerate() {
        progress("asking", i, asked.len());
        let now = run.now.or_else(|| last_day.get(&question.user).map(|d| turn_time(*d + Duration::days(1), 0)));
        let mut request =
            RecallRequest::new(Scope::user(tenant.clone(), question.user.clone()), question.text.clone(), depth);
        request.now = now;
        request.kinds = vec![Kind::Turn];
        request.strengthen = Some(false);
        let response = engine.recall(request)?;
        let mut ranked = Vec::new();
        let mut retrieved = Vec::new();
        for hit in &response.results {
            let key = hit.memory.metadata.get(IMPORT_KEY).cloned().unwrap_or_default();
            let date = hit.memory.metadata.get("date").cloned().unwrap_or_default();
            let turn = hit.memory.metadata.get("turn").and_then(|t| t.parse().ok()).unwrap_or(0);
            retrieved.push(Retrieved { date, turn, score: hit.score });
            ranked.push(key);
        }
        let gold_line = gold_by_qid.get(question.qid.as_str());
        let evidence: HashSet<String> = gold_line
            .map(|g| g.evidence.iter().map(|e| format!("memorybank:{}:{}", e.date.trim(), e.turn)).collect())
            .unwrap_or_default();
        let skip_reason = match gold_line {
            None => Some(NO_GOLD),
            Some(_) if evidence.is_empty() => Some(NO_EVIDENCE),
            Some(_) => None,
        };
        let scored = skip_reason.is_none();
        let mut values = BTreeMap::new();
        let mut first_rank = None;
        if scored {
            for &k in &ks {
                values.insert(format!("hit@{k}"), f64::from(u8::from(hit_at(&ranked, &evidence, k))));
                values.insert(format!("all@{k}"), f64::from(u8::from(all_at(&ranked, &evidence, k))));
            }
            values.insert("mrr".into(), reciprocal_rank(&ranked, &evidence));
            first_rank = ranked.iter().position(|x| evidence.contains(x)).map(|p| p + 1);
            overall.add(&values);
            let kind = gold_line.and_then(|g| g.kind.clone()).unwrap_or_else(|| "unknown".into());
            by_kind.entry(kind).or_default().add(&values);
        }
        let mut evidence_list: Vec<String> = gold_line
            .map(|g| g.evidence.iter().map(|e| format!("{}#{}", e.date.trim(), e.turn)).collect())
            .unwrap_or_default();
        evidence_list.sort();
        results.push(QuestionResult {
            qid: question.qid.clone(),
            user: question.user_key.clone(),
            question: question.text.clone(),
            kind: gold_line.and_then(|g| g.kind.clone()),
            evidence: evidence_list,
            scored,
            skip_reason,
            first_rank,
            metrics: values,
            retrieved,
        });
    }
    progress("asking", asked.len(), asked.len());
    let by_kind = by_kind
        .into_iter()
        .map(|(kind, means)| {
            let mut m = means.means();
            m.insert("n".into(), means.n as f64);
            (kind, m)
        })
        .collect();
    let mut skipped_by_reason = BTreeMap::new();
    for reason in results.iter().filter_map(|q| q.skip_reason) {
        *skipped_by_reason.entry(reason).or_insert(0) += 1;
    }
    Ok(MemoryBankReport {
        metrics: overall.means(),
        by_kind,
        n: overall.n,
        asked: results.len(),
        skipped: results.len() - overall.n,
        skipped_by_reason,
        questions: results,
        import,
    })
}

fn read_questions(run: &MemoryBankRun, key_of: &HashMap<UserId, String>) -> Result<Vec<Question>, EvalError> {
    questions(&run.bank, &run.questions, run.lang, key_of)
}

/// The probing questions of `questions` (users must be among `key_of`, the bank's users with
/// their raw keys), each named by its qid.
pub(crate) fn questions(
    bank: &std::path::Path,
    questions: &std::path::Path,
    lang: Lang,
    key_of: &HashMap<UserId, String>,
) -> Result<Vec<Question>, EvalError> {
    let bytes = read(questions)?;
    let text = String::from_utf8(bytes).map_err(|e| {
        EvalError::data(questions.display(), format!("not valid UTF-8 at byte {}", e.utf8_error().valid_up_to()))
    })?;
    let mut out = Vec::new();
    for (line_index, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let at = format!("{}:{}", questions.display(), line_index + 1);
        let value: serde_json::Value =
            serde_json::from_str(line).map_err(|e| EvalError::data(&at, format!("not valid JSON: {e}")))?;
        let object = value
            .as_object()
            .ok_or_else(|| EvalError::data(&at, "expected an object {\"<user name>\": [questions…]}"))?;
        for (name, list) in object {
            let user =
                UserId::new(name).map_err(|e| EvalError::data(&at, format!("bad user name {name:?}: {}", e.reason)))?;
            let user_key = key_of
                .get(&user)
                .cloned()
                .ok_or_else(|| EvalError::data(&at, format!("user {name:?} is not in {}", bank.display())))?;
            let list =
                list.as_array().ok_or_else(|| EvalError::data(&at, format!("questions of {name:?} must be a list")))?;
            for (i, question) in list.iter().enumerate() {
                let text = question
                    .as_str()
                    .ok_or_else(|| EvalError::data(&at, format!("question {i} of {name:?} is not a string")))?;
                let qid = match lang {
                    Lang::En => format!("en-{}-{i}", name.split_whitespace().collect::<String>()),
                    Lang::Cn => format!("cn-{line_index}-{i}"),
                };
                out.push(Question { qid, user: user.clone(), user_key: user_key.clone(), text: text.to_string() });
            }
        }
    }
    Ok(out)
}

/// The lines of a gold file, each with its 1-based line number.
pub(crate) fn read_gold(path: &std::path::Path) -> Result<Vec<(usize, GoldLine)>, EvalError> {
    let bytes = read(path)?;
    let text = String::from_utf8(bytes).map_err(|e| {
        EvalError::data(path.display(), format!("not valid UTF-8 at byte {}", e.utf8_error().valid_up_to()))
    })?;
    let mut out = Vec::new();
    for (index, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let gold: GoldLine = serde_json::from_str(line).map_err(|e| {
            EvalError::data(format!("{}:{}", path.display(), index + 1), format!("not a gold record: {e}"))
        })?;
        out.push((index + 1, gold));
    }
    Ok(out)
}

/// The bank file's user keys in the order the file lists them (a parsed JSON map sorts
/// them); the labelled halves and `simulate --samples` count users in this order.
pub fn key_order(bytes: &[u8]) -> Result<Vec<String>, String> {
    struct Keys;
    impl<'de> serde::de::Visitor<'de> for Keys {
        type Value = Vec<String>;
        fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str("an object of users")
        }
        fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<Vec<String>, A::Error> {
            let mut keys = Vec::new();
            while let Some(key) = map.next_key::<String>()? {
                map.next_value::<serde::de::IgnoredAny>()?;
                keys.push(key);
            }
            Ok(keys)
        }
    }
    let mut de = serde_json::Deserializer::from_slice(bytes);
    serde::Deserializer::deserialize_map(&mut de, Keys).map_err(|e| e.to_string())
}
