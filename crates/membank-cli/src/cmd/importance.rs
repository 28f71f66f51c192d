//! `membank eval importance`: importance estimators against the critical-turn labels
//! (`bench/critical`), ROC AUC per data set and half.
//!
//! The turns are read as the importers store them (`membank_eval::importance`), so each
//! estimator sees what it would see when rating a deployment's memories: `lexical` the
//! rules of `salience-v1`; `probe` the importance probe of the local model that a store of
//! that set's language embeds with; `llm` the configured chat model under the engine's own
//! prompt (`importance@v1`, `membank_engine::consolidate::rate_importance`), one person's
//! turns at a time in batches of [`RATE_BATCH`].
//!
//! A batch whose reply the engine cannot use (a missing or unknown id, a rating outside
//! [0, 1], no JSON) is asked once more and otherwise left unrated: its turns are counted as
//! `unrated` and kept out of that estimator's AUC, so a small model's slips are reported
//! rather than fatal. Any other failure of the model (unreachable, refused, too slow) ends
//! the run with its own exit code: thousands of calls to a server that is not there would
//! only repeat the error.

use std::collections::BTreeMap;
use std::io::Write as _;
use std::path::{Path, PathBuf};

use anyhow::{Context as _, Result, anyhow};
use membank_engine::EngineError;
use membank_engine::core::memory::Memory;
use membank_engine::core::salience;
use membank_eval::EvalError;
use membank_eval::importance::{Example, Set, Sources, Split, load, probe_scores, roc_auc, sample};
use membank_llm::LlmError;
use serde_json::{Value, json};

use crate::args::eval::{ImportanceEstimator, LabelHalf};
use crate::context::Context;
use crate::output::print_json;
use crate::progress::Bar;

/// Turns per call of the chat model: one person's, at most this many (the engine's own
/// batches hold up to 20; smaller ones lose less when a reply is unusable).
pub const RATE_BATCH: usize = 10;

/// What `eval importance` was asked to do.
pub struct ImportanceRun {
    pub labels: PathBuf,
    pub data: PathBuf,
    pub longmemeval: Option<PathBuf>,
    pub estimators: Vec<ImportanceEstimator>,
    pub half: LabelHalf,
    pub sample: Option<u32>,
    pub scores: Option<PathBuf>,
}

fn name(estimator: ImportanceEstimator) -> &'static str {
    match estimator {
        ImportanceEstimator::Lexical => "lexical",
        ImportanceEstimator::Probe => "probe",
        ImportanceEstimator::Llm => "llm",
    }
}

fn half_name(split: Split) -> &'static str {
    match split {
        Split::Tune => "tune",
        Split::Report => "report",
    }
}

/// The data file a set's turns come from (its language chooses the probe's model).
fn set_file(run: &ImportanceRun, set: Set) -> Option<PathBuf> {
    match set {
        Set::MemoryBankEn => Some(run.data.join("memorybank/memory_bank_en.json")),
        Set::MemoryBankCn => Some(run.data.join("memorybank/memory_bank_cn.json")),
        Set::Locomo => Some(run.data.join("locomo/locomo10.json")),
        Set::LongMemEval => run.longmemeval.clone(),
    }
}

/// Runs `eval importance`.
pub fn run(ctx: &Context, run: ImportanceRun) -> Result<()> {
    let mut estimators: Vec<ImportanceEstimator> = Vec::new();
    for e in &run.estimators {
        if !estimators.contains(e) {
            estimators.push(*e);
        }
    }
    if estimators.is_empty() {
        return Err(crate::errors::UsageError("--estimator names none: lexical, probe or llm".into()).into());
    }
    // The chat model first: a missing or half-set configuration is an error before any work.
    let llm = if estimators.contains(&ImportanceEstimator::Llm) { Some(ctx.llm.client()?) } else { None };
    let memorybank = run.data.join("memorybank");
    let examples = load(&Sources {
        labels: &run.labels,
        memorybank_en: &memorybank.join("memory_bank_en.json"),
        memorybank_cn: &memorybank.join("memory_bank_cn.json"),
        locomo: &run.data.join("locomo/locomo10.json"),
        longmemeval: run.longmemeval.as_deref(),
    })
    .map_err(file_error)?;
    let splits: &[Split] = match run.half {
        LabelHalf::Tune => &[Split::Tune],
        LabelHalf::Report => &[Split::Report],
        LabelHalf::All => &[Split::Tune, Split::Report],
    };
    let chosen: Vec<usize> = (0..examples.len()).filter(|&i| splits.contains(&examples[i].split)).collect();
    let ids = match run.sample {
        Some(n) => sample(&examples, &chosen, n as usize),
        None => chosen,
    };
    if ids.is_empty() {
        return Err(crate::errors::UsageError(format!(
            "{}: no labelled turn in the chosen halves",
            run.labels.display()
        ))
        .into());
    }

    // Opened before any scoring: a path that cannot be written fails now, not after hours
    // of a model's calls.
    let scores_file = match &run.scores {
        // Not truncated yet: a run that fails keeps the scores of an earlier one.
        Some(path) => Some(
            std::fs::OpenOptions::new()
                .write(true)
                .create(true)
                .truncate(false)
                .open(path)
                .with_context(|| format!("cannot write {}", path.display()))?,
        ),
        None => None,
    };
    let bar = Bar::new();
    let mut columns: BTreeMap<&'static str, Vec<Option<f64>>> = BTreeMap::new();
    let mut llm_report = None;
    for &estimator in &estimators {
        let scores = match estimator {
            ImportanceEstimator::Lexical => {
                ids.iter().map(|&i| Some(salience::estimate_importance(&examples[i].text))).collect()
            }
            ImportanceEstimator::Probe => probe(ctx, &run, &examples, &ids, &bar)?,
            ImportanceEstimator::Llm => {
                let llm = llm.as_deref().ok_or_else(|| anyhow!("no chat model"))?;
                let (scores, report) = rate(llm, &examples, &ids, &bar)?;
                llm_report = Some(report);
                scores
            }
        };
        columns.insert(name(estimator), scores);
    }
    bar.finish();

    if let (Some(file), Some(path)) = (scores_file, &run.scores) {
        write_scores(file, path, &examples, &ids, &estimators, &columns)?;
    }
    let rows = table(&examples, &ids, splits, &estimators, &columns);
    if ctx.cli_json {
        return print_json(&json!({
            "labels": run.labels.display().to_string(),
            "scored": ids.len(),
            "estimators": estimators.iter().map(|e| name(*e)).collect::<Vec<_>>(),
            "rows": rows,
            "llm": llm_report,
        }));
    }
    println!("Importance against the critical-turn labels in {}: {} turns", run.labels.display(), ids.len());
    print!("{:<14} {:<7} {:>6} {:>9}", "set", "half", "turns", "critical");
    estimators.iter().for_each(|e| print!(" {:>8}", name(*e)));
    println!();
    for row in &rows {
        let count = |key: &str| row[key].as_u64().unwrap_or(0);
        let text = |key: &str| row[key].as_str().unwrap_or("").to_string();
        print!("{:<14} {:<7} {:>6} {:>9}", text("set"), text("half"), count("turns"), count("critical"));
        for e in &estimators {
            let auc = row["auc"][name(*e)].as_f64().map_or_else(|| "-".to_string(), |a| format!("{a:.3}"));
            print!(" {auc:>8}");
        }
        println!();
    }
    if let Some(report) = llm_report {
        println!(
            "llm: {} with prompt {}: {} calls, {} of {} turns unrated (replies it could not use, each asked twice)",
            report["model"].as_str().unwrap_or(""),
            report["prompt"].as_str().unwrap_or(""),
            report["calls"],
            report["unrated"],
            ids.len()
        );
    }
    Ok(())
}

/// A label or data file's error with the exit code it deserves: a file that is not there
/// is "not found" (4), one that is malformed or names a turn the data lacks "invalid
/// input" (3).
fn file_error(err: EvalError) -> anyhow::Error {
    match err {
        EvalError::Read { ref source, .. } if source.kind() == std::io::ErrorKind::NotFound => {
            crate::errors::Missing(err.to_string()).into()
        }
        EvalError::Data { .. } => membank_engine::core::InvalidInput::new("labelled set", err.to_string()).into(),
        other => other.into(),
    }
}

/// The probe's reading of every chosen turn, by the local model a store of its set's
/// language embeds with. `None` per turn when that model has no probe (a remote embedder).
fn probe(
    ctx: &Context,
    run: &ImportanceRun,
    examples: &[Example],
    ids: &[usize],
    bar: &Bar,
) -> Result<Vec<Option<f64>>> {
    let mut scores: BTreeMap<usize, Option<f64>> = BTreeMap::new();
    let mut done = 0;
    for set in Set::ALL {
        let of_set: Vec<usize> = ids.iter().copied().filter(|&i| examples[i].set == set).collect();
        let Some(file) = set_file(run, set).filter(|_| !of_set.is_empty()) else { continue };
        let embedder = ctx.embedder_for_files(&[file.as_path()]).load()?;
        for chunk in of_set.chunks(256) {
            let read = probe_scores(embedder.as_ref(), examples, chunk)?;
            for (k, &i) in chunk.iter().enumerate() {
                scores.insert(i, read.as_ref().map(|r| r[k].0));
            }
            done += chunk.len();
            bar.update("probe", done, ids.len());
        }
        if scores.iter().any(|(i, s)| examples[*i].set == set && s.is_none()) {
            tracing::warn!(model = embedder.model_id(), set = set.name(), "this model has no importance probe");
        }
    }
    Ok(ids.iter().map(|i| scores.get(i).copied().flatten()).collect())
}

/// The chat model's ratings, one person's turns per batch, and a summary of the calls.
fn rate(
    llm: &dyn membank_engine::Llm,
    examples: &[Example],
    ids: &[usize],
    bar: &Bar,
) -> Result<(Vec<Option<f64>>, Value)> {
    // One person per batch, as maintenance rates a user's memories; file order within.
    let mut people: BTreeMap<(Set, &str), Vec<usize>> = BTreeMap::new();
    for (k, &i) in ids.iter().enumerate() {
        people.entry((examples[i].set, examples[i].group.as_str())).or_default().push(k);
    }
    let scope = membank_engine::core::Scope::user(
        membank_engine::core::TenantId::default_tenant(),
        membank_engine::core::UserId::new("labelled-person")?,
    );
    let mut scores = vec![None; ids.len()];
    let (mut calls, mut unrated, mut done) = (0usize, 0usize, 0usize);
    for ((set, group), positions) in people {
        // MemoryBank's groups are the people's names; the other sets' are ids.
        let person = if matches!(set, Set::MemoryBankEn | Set::MemoryBankCn) { group } else { "the person" };
        for batch in positions.chunks(RATE_BATCH) {
            let memories: Vec<Memory> = batch
                .iter()
                .map(|&k| {
                    let e = &examples[ids[k]];
                    let at = chrono::DateTime::from_timestamp(e.day * 86_400, 0).unwrap_or_default();
                    Memory { source: e.source, ..Memory::fixture(&scope, e.kind, e.text.clone(), at) }
                })
                .collect();
            let mut rated = None;
            for _attempt in 0..2 {
                calls += 1;
                match membank_engine::consolidate::rate_importance(llm, person, &memories) {
                    Ok(ratings) => {
                        rated = Some(ratings);
                        break;
                    }
                    Err(EngineError::Llm(LlmError::Malformed { reason, .. })) => {
                        tracing::warn!(%reason, "the model's ratings were unusable");
                    }
                    Err(other) => return Err(other.into()),
                }
            }
            match rated {
                Some(ratings) => batch.iter().zip(ratings).for_each(|(&k, r)| scores[k] = Some(r)),
                None => unrated += batch.len(),
            }
            done += batch.len();
            bar.update("llm", done, ids.len());
        }
    }
    let report = json!({
        "model": llm.model(),
        "prompt": membank_llm::prompts::IMPORTANCE.id(),
        "calls": calls,
        "unrated": unrated,
    });
    Ok((scores, report))
}

/// One row per set × half with turns: its counts and each estimator's AUC over the turns
/// it rated (null without both labels among them), and how many it left unrated.
fn table(
    examples: &[Example],
    ids: &[usize],
    splits: &[Split],
    estimators: &[ImportanceEstimator],
    columns: &BTreeMap<&'static str, Vec<Option<f64>>>,
) -> Vec<Value> {
    let mut rows = Vec::new();
    for set in Set::ALL {
        for &split in splits {
            let cell: Vec<usize> =
                (0..ids.len()).filter(|&k| examples[ids[k]].set == set && examples[ids[k]].split == split).collect();
            if cell.is_empty() {
                continue;
            }
            let mut auc = serde_json::Map::new();
            let mut unrated = serde_json::Map::new();
            for e in estimators {
                let scores = &columns[name(*e)];
                let pairs: Vec<(f64, bool)> =
                    cell.iter().filter_map(|&k| scores[k].map(|s| (s, examples[ids[k]].critical))).collect();
                auc.insert(name(*e).into(), json!(roc_auc(&pairs)));
                unrated.insert(name(*e).into(), json!(cell.len() - pairs.len()));
            }
            rows.push(json!({
                "set": set.name(),
                "half": half_name(split),
                "turns": cell.len(),
                "critical": cell.iter().filter(|&&k| examples[ids[k]].critical).count(),
                "auc": auc,
                "unrated": unrated,
            }));
        }
    }
    rows
}

fn write_scores(
    file: std::fs::File,
    path: &Path,
    examples: &[Example],
    ids: &[usize],
    estimators: &[ImportanceEstimator],
    columns: &BTreeMap<&'static str, Vec<Option<f64>>>,
) -> Result<()> {
    file.set_len(0).with_context(|| format!("cannot write {}", path.display()))?;
    let mut out = std::io::BufWriter::new(file);
    for (k, &i) in ids.iter().enumerate() {
        let e = &examples[i];
        let mut line = json!({
            "set": e.set.name(),
            "half": half_name(e.split),
            "group": e.group,
            "critical": u8::from(e.critical),
        });
        for est in estimators {
            line[name(*est)] = json!(columns[name(*est)][k]);
        }
        writeln!(out, "{line}").with_context(|| format!("cannot write {}", path.display()))?;
    }
    out.flush().with_context(|| format!("cannot write {}", path.display()))
}
