//! `membank eval memorybank|locomo|longmemeval` (`eval importance` is `super::importance`): builds (or reuses) an evaluation
//! database, runs a benchmark through `membank-eval`, prints a table, or with `--json`
//! the report object. Questions asked but not scored are counted, with the reason, in text
//! and JSON (MemoryBank: `asked`, `skipped`, `skipped_by_reason`; LongMemEval: `skipped`);
//! LoCoMo scores every question. `--conversations` (LoCoMo) and `--half` (LongMemEval)
//! score only the tuning or the held-apart half (`membank_eval::selection`); a malformed
//! value or one the data file does not have is a usage error (exit 2).
//!
//! The database is cached under `<cache dir>/membank/eval/`, keyed by the SHA-256 of the
//! data files, the embedding model and the import format version, so a second run skips the import; `--eval-db`
//! chooses the file and `--fresh` builds in a scratch directory. Evaluation recalls never
//! strengthen, so a cached database stays exactly as imported.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

use anyhow::{Context as _, Result, anyhow, bail};
use membank_engine::core::SystemClock;
use membank_engine::{Embedder, Engine};
use membank_eval::memorybank::Lang;
use membank_eval::{CachingEmbedder, EvalError, locomo, longmemeval, memorybank};
use membank_store::SqliteStore;
use sha2::{Digest, Sha256};

use crate::args::eval::{EvalCommand, EvalDb};
use crate::context::Context;
use crate::embedder::LazyEmbedder;
use crate::errors::UsageError;
use crate::output::print_json;
use crate::progress::Bar;

fn parse_ks(text: &str) -> Result<Vec<usize>> {
    let ks: Vec<usize> = text
        .split(',')
        .map(|k| k.trim().parse::<usize>())
        .collect::<Result<_, _>>()
        .map_err(|_| anyhow!("--k takes numbers such as 1,3,5,10"))?;
    if ks.is_empty() || ks.iter().any(|k| *k == 0 || *k > membank_engine::core::limits::MAX_RECALL_K) {
        bail!("--k values must be between 1 and {}", membank_engine::core::limits::MAX_RECALL_K);
    }
    Ok(ks)
}

fn fingerprint(files: &[&Path], model: &str) -> Result<String> {
    let mut hasher = Sha256::new();
    for file in files {
        use std::io::Read;
        let mut reader = std::fs::File::open(file).with_context(|| format!("cannot read {}", file.display()))?;
        let mut buffer = vec![0u8; 1 << 20];
        loop {
            let n = reader.read(&mut buffer).with_context(|| format!("cannot read {}", file.display()))?;
            if n == 0 {
                break;
            }
            hasher.update(&buffer[..n]);
        }
    }
    hasher.update(model.as_bytes());
    hasher.update(membank_engine::import::FORMAT_VERSION.to_le_bytes());
    Ok(hasher.finalize().iter().take(8).map(|b| format!("{b:02x}")).collect())
}

/// Opens the evaluation engine: the chosen or cached database, the configured embedder
/// behind a content-hash cache.
fn engine(
    ctx: &Context,
    db: &EvalDb,
    name: &str,
    files: &[&Path],
    scratch: &mut Option<tempfile::TempDir>,
) -> Result<Engine> {
    // With no model named, the model the data's writing calls for (crate::language).
    let inner: Arc<dyn Embedder> = Arc::new(LazyEmbedder::new(ctx.embedder_for_files(files)));
    let model = inner.model_id().to_string();
    let path = match (&db.eval_db, db.fresh) {
        (Some(path), _) => path.clone(),
        (None, true) => scratch.insert(tempfile::tempdir()?).path().join("eval.db"),
        (None, false) => {
            let dir = dirs::cache_dir()
                .ok_or_else(|| anyhow!("no cache directory on this system; pass --eval-db"))?
                .join("membank")
                .join("eval");
            std::fs::create_dir_all(&dir).with_context(|| format!("cannot create {}", dir.display()))?;
            dir.join(format!("{name}-{}.db", fingerprint(files, &model)?))
        }
    };
    tracing::info!(db = %path.display(), "evaluation database");
    let store = Arc::new(
        SqliteStore::open_with(&path, ctx.store_options())
            .with_context(|| format!("cannot open {}", path.display()))?,
    );
    Ok(Engine::new(store, Arc::new(CachingEmbedder::new(inner)), Arc::new(SystemClock), ctx.engine_config.clone())?)
}

fn fmt(value: Option<&f64>) -> String {
    value.map_or_else(|| "-".into(), |v| format!("{v:.3}"))
}

/// Prints rows of `(name, metrics)` with the given columns.
fn table(title: &str, columns: &[String], rows: &[(String, &BTreeMap<String, f64>)]) {
    println!("{title}");
    print!("{:<26} {:>5}", "", "n");
    columns.iter().for_each(|c| print!(" {c:>13}"));
    println!();
    for (name, metrics) in rows {
        print!("{name:<26} {:>5}", metrics.get("n").map_or("-".into(), |n| format!("{n:.0}")));
        columns.iter().for_each(|c| print!(" {:>13}", fmt(metrics.get(c))));
        println!();
    }
}

/// Names the questions of a MemoryBank run that were asked but not scored, and why, so
/// that an `n` smaller than the questions asked is explained where it is printed.
fn print_skipped(report: &memorybank::MemoryBankReport) {
    for (reason, count) in &report.skipped_by_reason {
        let why = match *reason {
            memorybank::NO_EVIDENCE => "the gold line lists no evidence (not answerable from the history)",
            memorybank::NO_GOLD => "no gold given",
            other => other,
        };
        let qids: Vec<&str> =
            report.questions.iter().filter(|q| q.skip_reason == Some(*reason)).map(|q| q.qid.as_str()).collect();
        let shown = qids.iter().take(10).copied().collect::<Vec<_>>().join(", ");
        let more = if qids.len() > 10 { format!(" and {} more", qids.len() - 10) } else { String::new() };
        println!("skipped {count}: {why}: {shown}{more}");
    }
}

/// A selection the data file does not have is a usage error (exit 2), like a malformed
/// one that the argument parser refuses; every other error keeps its own exit code.
fn selection_usage(err: EvalError, flag: &str) -> anyhow::Error {
    match err {
        EvalError::Selection(reason) => UsageError(format!("{flag}: {reason}")).into(),
        other => other.into(),
    }
}

/// Runs `eval`.
pub fn run(ctx: &Context, command: EvalCommand) -> Result<()> {
    let bar = Bar::new();
    let progress = |label: &str, done: usize, total: usize| bar.update(label, done, total);
    let mut scratch = None;
    match command {
        EvalCommand::Memorybank { data, lang, gold, k, now, db } => {
            let lang = match lang.as_str() {
                "en" => Lang::En,
                "cn" | "zh" => Lang::Cn,
                other => bail!("--lang {other:?} is not one of: en, cn"),
            };
            let bank = data.join(format!("memory_bank_{}.json", lang.as_str()));
            let questions = data.join(format!("probing_questions_{}.jsonl", lang.as_str()));
            let ks = parse_ks(&k)?;
            let engine = engine(ctx, &db, &format!("memorybank-{}", lang.as_str()), &[&bank], &mut scratch)?;
            let now = now.as_deref().map(|n| membank_engine::core::time::parse_instant("now", n)).transpose()?;
            let report = memorybank::run(
                &engine,
                &memorybank::MemoryBankRun { bank, questions, gold: gold.clone(), lang, ks: ks.clone(), now },
                &progress,
            )?;
            bar.finish();
            if ctx.cli_json {
                return print_json(&report);
            }
            let Some(gold) = gold else {
                for q in &report.questions {
                    let top: Vec<String> =
                        q.retrieved.iter().take(3).map(|r| format!("{}#{}", r.date, r.turn)).collect();
                    println!("{:<14} {}  →  {}", q.qid, q.question, top.join(", "));
                }
                println!("{} questions asked (no gold given: nothing scored)", report.asked);
                return Ok(());
            };
            let mut columns: Vec<String> = ks.iter().map(|k| format!("hit@{k}")).collect();
            columns.extend(ks.iter().map(|k| format!("all@{k}")));
            columns.push("mrr".into());
            let mut overall = report.metrics.clone();
            overall.insert("n".into(), report.n as f64);
            let mut rows = vec![("all".to_string(), &overall)];
            rows.extend(report.by_kind.iter().map(|(kind, m)| (kind.clone(), m)));
            table(
                &format!(
                    "MemoryBank ({}), gold {}: {} of {} questions scored",
                    lang.as_str(),
                    gold.display(),
                    report.n,
                    report.asked
                ),
                &columns,
                &rows,
            );
            print_skipped(&report);
        }
        EvalCommand::Locomo { data, k, conversations, db } => {
            let ks = parse_ks(&k)?;
            let engine = engine(ctx, &db, "locomo", &[&data], &mut scratch)?;
            let report = locomo::run(&engine, &locomo::LocomoRun { data, ks: ks.clone(), conversations }, &progress)
                .map_err(|e| selection_usage(e, "--conversations"))?;
            bar.finish();
            if ctx.cli_json {
                return print_json(&report);
            }
            let columns: Vec<String> = ks.iter().map(|k| format!("recall@{k}")).collect();
            let mut overall = report.metrics.clone();
            overall.insert("n".into(), report.n as f64);
            let names = BTreeMap::from([
                ("1", "multi-hop"),
                ("2", "temporal"),
                ("3", "open-domain"),
                ("4", "single-hop"),
                ("5", "adversarial"),
            ]);
            let mut rows = vec![("overall".to_string(), &overall)];
            rows.extend(
                report.by_category.iter().map(|(c, m)| (format!("{c} {}", names.get(c.as_str()).unwrap_or(&"")), m)),
            );
            let which = conversations.map_or_else(String::new, |c| format!(", conversations {c}"));
            table(&format!("LoCoMo evidence recall (category codes as in the data{which})"), &columns, &rows);
        }
        EvalCommand::Importance { labels, data, longmemeval, estimator, half, sample, scores } => {
            bar.finish();
            let run = super::importance::ImportanceRun {
                labels,
                data,
                longmemeval,
                estimators: estimator,
                half,
                sample,
                scores,
            };
            return super::importance::run(ctx, run);
        }
        EvalCommand::Longmemeval { data, limit, half, db } => {
            let engine = engine(ctx, &db, "longmemeval", &[&data], &mut scratch)?;
            let report = longmemeval::run(&engine, &longmemeval::LongMemEvalRun { data, limit, half }, &progress)
                .map_err(|e| selection_usage(e, "--half"))?;
            bar.finish();
            if ctx.cli_json {
                return print_json(&report);
            }
            let columns: Vec<String> = [5, 10]
                .iter()
                .flat_map(|k| [format!("recall_any@{k}"), format!("recall_all@{k}"), format!("ndcg_any@{k}")])
                .collect();
            for (level, overall, pick) in [("session", &report.metrics.session, 0), ("turn", &report.metrics.turn, 1)] {
                let mut overall = overall.clone();
                overall.insert("n".into(), report.n as f64);
                let mut rows = vec![("all".to_string(), &overall)];
                rows.extend(
                    report.by_type.iter().map(|(t, l)| (t.clone(), if pick == 0 { &l.session } else { &l.turn })),
                );
                let which = half.map_or_else(String::new, |h| format!(", half {} of the questions", h.number()));
                table(
                    &format!(
                        "LongMemEval, {level} level{which} ({} skipped: abstention or no gold user turn)",
                        report.skipped
                    ),
                    &columns,
                    &rows,
                );
                println!();
            }
        }
    }
    Ok(())
}
