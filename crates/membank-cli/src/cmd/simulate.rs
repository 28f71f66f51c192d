//! `membank simulate memorybank|locomo|longmemeval`: replays a benchmark day by day into throw-away
//! stores under a forgetting policy (see `membank_eval::simulate`), prints a short table
//! of storage and quality against no forgetting and the fifo/lru baselines, or with
//! `--json` the report, and with `--plot FILE.svg` draws it.
//!
//! It never opens the configured database: every store lives in a temporary directory and
//! is gone when the command ends. The embedder and the engine settings (forgetting
//! parameters, recall settings) are the configured ones, as for `membank eval`.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::{Context as _, Result};
use membank_engine::core::InvalidInput;
use membank_engine::{Embedder, EngineError};
use membank_eval::EvalError;
use membank_eval::memorybank::Lang;
use membank_eval::simulate::{self, Benchmark, MAX_GAP_DAYS, SimPolicy, SimulateReport, SimulateRun};

use crate::args::simulate::{BenchmarkName, SimulateArgs};
use crate::context::Context;
use crate::embedder::LazyEmbedder;
use crate::progress::Bar;

/// An invalid argument, mapped to exit code 3 like the engine's own.
fn invalid(field: &'static str, reason: impl Into<String>) -> anyhow::Error {
    anyhow::Error::new(EngineError::Invalid(InvalidInput::new(field, reason)))
}

/// `0-4`, `5,6,7`, `0-2,7`: distinct positions in the order given.
fn parse_samples(text: &str) -> Result<Vec<usize>> {
    let bad = || invalid("samples", format!("{text:?} is not a list such as 0-4 or 5,6,7"));
    let mut out = Vec::new();
    for part in text.split(',').map(str::trim) {
        let (from, to) = match part.split_once('-') {
            Some((a, b)) => {
                (a.trim().parse::<usize>().map_err(|_| bad())?, b.trim().parse::<usize>().map_err(|_| bad())?)
            }
            None => {
                let n = part.parse::<usize>().map_err(|_| bad())?;
                (n, n)
            }
        };
        if from > to || to - from > 10_000 {
            return Err(bad());
        }
        for i in from..=to {
            if !out.contains(&i) {
                out.push(i);
            }
        }
    }
    Ok(out)
}

fn parse_ks(text: &str) -> Result<Vec<usize>> {
    let ks: Vec<usize> = text
        .split(',')
        .map(|k| k.trim().parse::<usize>())
        .collect::<Result<_, _>>()
        .map_err(|_| invalid("k", "takes numbers such as 1,3,5,10"))?;
    if ks.is_empty() || ks.iter().any(|&k| k == 0 || k > membank_engine::core::limits::MAX_RECALL_K) {
        return Err(invalid(
            "k",
            format!("values must be between 1 and {}", membank_engine::core::limits::MAX_RECALL_K),
        ));
    }
    Ok(ks)
}

/// A data file that must exist, named in the error when it does not.
fn existing(path: PathBuf, what: &str) -> Result<PathBuf> {
    if path.is_file() { Ok(path) } else { Err(invalid("data", format!("{} not found: {what}", path.display()))) }
}

/// The caller's data errors exit 3 (invalid input); the engine's keep their own codes.
fn eval_error(err: EvalError) -> anyhow::Error {
    match err {
        EvalError::Engine(inner) => anyhow::Error::new(inner),
        other => invalid("data", other.to_string()),
    }
}

/// Runs `simulate`.
pub fn run(ctx: &Context, args: SimulateArgs) -> Result<()> {
    if args.gap_days > u64::from(MAX_GAP_DAYS) {
        return Err(invalid(
            "gap_days",
            format!("{} is more than the {MAX_GAP_DAYS} days (ten years) a simulation may skip", args.gap_days),
        ));
    }
    if !args.data.exists() {
        return Err(invalid("data", format!("{} does not exist", args.data.display())));
    }
    let policy = match &args.policy {
        Some(name) => name.parse::<SimPolicy>()?,
        None => match ctx.engine_config.forgetting.kind {
            membank_engine::core::PolicyKind::MemoryBank => SimPolicy::MemoryBank,
            membank_engine::core::PolicyKind::FadeMem => SimPolicy::FadeMem,
        },
    };
    let (benchmark, default_ks) = match args.benchmark {
        BenchmarkName::Memorybank => {
            let lang = match args.lang.as_str() {
                "en" => Lang::En,
                "cn" | "zh" => Lang::Cn,
                other => return Err(invalid("lang", format!("{other:?} is not one of: en, cn"))),
            };
            if !args.data.is_dir() {
                return Err(invalid(
                    "data",
                    format!(
                        "{} is not a folder (memorybank needs the folder holding memory_bank_{}.json)",
                        args.data.display(),
                        lang.as_str()
                    ),
                ));
            }
            let bank =
                existing(args.data.join(format!("memory_bank_{}.json", lang.as_str())), "the MemoryBank history")?;
            let questions = existing(
                args.data.join(format!("probing_questions_{}.jsonl", lang.as_str())),
                "the probing questions",
            )?;
            let gold = args.gold.clone().map(|g| existing(g, "the gold file given with --gold")).transpose()?;
            let users = args.samples.as_deref().map(parse_samples).transpose()?;
            (Benchmark::MemoryBank { bank, questions, gold, lang, users }, "1,3,5,10")
        }
        BenchmarkName::Locomo => {
            if args.gold.is_some() {
                return Err(invalid("gold", "is for MemoryBank; LoCoMo's evidence is in its own file"));
            }
            let data = if args.data.is_dir() { args.data.join("locomo10.json") } else { args.data.clone() };
            let data = existing(data, "the LoCoMo conversations")?;
            let samples = args.samples.as_deref().map(parse_samples).transpose()?;
            (Benchmark::Locomo { data, samples }, "5,10,25,50")
        }
        BenchmarkName::Longmemeval => {
            if args.gold.is_some() {
                return Err(invalid("gold", "is for MemoryBank; LongMemEval's evidence is in its own file"));
            }
            let data = if args.data.is_dir() {
                let file = args.data.join("longmemeval_s_cleaned.json");
                if !file.is_file() && args.data.join("longmemeval_s_cleaned.json.xz").is_file() {
                    return Err(invalid(
                        "data",
                        format!(
                            "{} holds longmemeval_s_cleaned.json.xz only: decompress it first (xz -dk), or pass \
                             --data with the .json file",
                            args.data.display()
                        ),
                    ));
                }
                file
            } else {
                args.data.clone()
            };
            if data.extension().is_some_and(|e| e == "xz") {
                return Err(invalid(
                    "data",
                    format!("{} is compressed: decompress it first (xz -dk) and pass the .json", data.display()),
                ));
            }
            let data = existing(data, "the LongMemEval questions")?;
            let samples = args.samples.as_deref().map(parse_samples).transpose()?;
            (Benchmark::LongMemEval { data, samples }, "1,3,5,10,30,50")
        }
    };
    let ks = parse_ks(args.k.as_deref().unwrap_or(default_ks))?;
    let shape = match args.benchmark {
        BenchmarkName::Memorybank => membank_eval::critical::LabelShape::MemoryBank,
        BenchmarkName::Locomo => membank_eval::critical::LabelShape::Locomo,
        BenchmarkName::Longmemeval => membank_eval::critical::LabelShape::LongMemEval,
    };
    let labels = match &args.critical {
        Some(path) => {
            let path = existing(path.clone(), "the labels given with --critical")?;
            let text = std::fs::read_to_string(&path)
                .map_err(|e| invalid("critical", format!("cannot read {}: {e}", path.display())))?;
            Some(membank_eval::critical::parse(&text, &path.display().to_string(), shape).map_err(eval_error)?)
        }
        None => None,
    };
    let run = SimulateRun {
        benchmark,
        policy,
        base: ctx.engine_config.clone(),
        threshold: args.threshold,
        gap_days: args.gap_days as u32,
        ks,
    };

    // With no model named, the model the data's writing calls for (crate::language).
    #[allow(unreachable_patterns)]
    let choice = match &run.benchmark {
        Benchmark::MemoryBank { bank, .. } => ctx.embedder_for_files(&[bank.as_path()]),
        Benchmark::Locomo { data, .. } | Benchmark::LongMemEval { data, .. } => {
            ctx.embedder_for_files(&[data.as_path()])
        }
        _ => ctx.embedder.clone(),
    };
    let embedder: Arc<dyn Embedder> = Arc::new(LazyEmbedder::one_shot(choice));
    let bar = Bar::new();
    let progress = |label: &str, done: usize, total: usize| bar.update(label, done, total);
    let report = simulate::run_with_labels(embedder, &run, labels.as_ref(), &progress).map_err(eval_error);
    bar.finish();
    let report = report?;
    if let Some(path) = &args.plot {
        simulate::plot(&report, path).map_err(eval_error).with_context(|| format!("--plot {}", path.display()))?;
    }
    if ctx.cli_json {
        println!("{}", serde_json::to_string_pretty(&report)?);
    } else {
        print_table(&report, args.plot.as_deref());
    }
    Ok(())
}

fn fmt(value: Option<&f64>) -> String {
    value.map_or_else(|| "-".into(), |v| format!("{v:.3}"))
}

fn print_table(report: &SimulateReport, plot: Option<&Path>) {
    let s = &report.storage;
    println!(
        "simulate {} · policy {} · {} users · gap {} days · {}",
        report.benchmark, report.policy, report.parameters.users, report.parameters.gap_days, report.parameters.model
    );
    println!(
        "storage: {} stored, {} active ({} archived, {} superseded): reduction {:.1}%",
        s.stored,
        s.active,
        s.archived,
        s.superseded,
        s.reduction * 100.0
    );
    if let Some(note) = &report.questions.note {
        println!("quality: {note}");
    } else {
        // hit@k, then all@k, then recall@k, each by k, then mrr (not in text order: @10 before @3).
        let mut columns: Vec<&String> = report.quality.no_forgetting.keys().collect();
        let order = |name: &str| {
            let (family, k) = name.split_once('@').unwrap_or((name, ""));
            let rank =
                ["hit", "all", "recall", "recall_any", "recall_all"].iter().position(|f| *f == family).unwrap_or(3);
            (rank, k.parse::<usize>().unwrap_or(0))
        };
        columns.sort_by_key(|c| order(c));
        println!("quality over {} questions (main metric {}):", report.questions.scored, report.questions.main_metric);
        print!("{:<15} {:>7}", "", "active");
        columns.iter().for_each(|c| print!(" {c:>10}"));
        println!();
        let rows: [(&str, &BTreeMap<String, f64>, u64); 5] = [
            (report.policy, &report.quality.forgetting, s.active),
            ("+ reminiscence", &report.quality.forgetting_reminiscence, s.active),
            ("no forgetting", &report.quality.no_forgetting, report.no_forgetting_active),
            ("fifo", &report.quality.fifo, s.active),
            ("lru", &report.quality.lru, s.active),
        ];
        for (name, metrics, active) in rows {
            print!("{name:<15} {active:>7}");
            columns.iter().for_each(|c| print!(" {:>10}", fmt(metrics.get(*c))));
            println!();
        }
    }
    let r = &report.reminiscence;
    if r.questions > 0 {
        println!(
            "reminiscence: {} of {} questions consulted the archive, {} found evidence there",
            r.consulted_archive, r.questions, r.answered_from_archive
        );
    }
    if let Some(c) = &report.critical {
        let kept = |name: &str| fmt(c.kept.get(name));
        println!(
            "critical: {} of {} labelled turns; kept {} {}, fifo {}, lru {}, no forgetting {}; importance AUC {}",
            c.critical,
            c.labelled,
            report.policy,
            kept("forgetting"),
            kept("fifo"),
            kept("lru"),
            kept("no_forgetting"),
            fmt(c.importance_auc.as_ref())
        );
    }
    if let Some(path) = plot {
        println!("plot: {}", path.display());
    }
}
