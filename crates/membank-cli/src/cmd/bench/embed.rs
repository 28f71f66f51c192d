//! `bench embed`: sentences per second of the configured embedder, per thread count.

use std::path::Path;
use std::time::Instant;

use anyhow::Result;
use serde::Serialize;

use super::dataset::{data_sentences, sentence_file};
use super::stats::{cpu_seconds, median};
use crate::context::Context;
use crate::embedder::EmbedderChoice;

/// Runs `bench embed` on `n` sentences of the `--sentences` file, else of the public data.
pub fn run(
    ctx: &Context,
    n: usize,
    threads: &[usize],
    runs: usize,
    data: &Path,
    sentences: Option<&Path>,
) -> Result<EmbedReport> {
    let (texts, source) = match sentences {
        Some(file) => (sentence_file(file, n)?, file.display().to_string()),
        None => (data_sentences(data, n)?, data.display().to_string()),
    };
    embed(ctx, texts, source, threads, runs)
}

/// `bench embed --json`.
#[derive(Debug, Serialize)]
pub struct EmbedReport {
    /// Always `"embed"`.
    pub benchmark: &'static str,
    /// The embedder's model id.
    pub model: String,
    /// Where the sentences came from: the `--sentences` file or the `--data` folder.
    pub source: String,
    /// Sentences embedded per run.
    pub sentences: usize,
    /// Their words (split at whitespace), to compare runs on different files.
    pub words: usize,
    /// Timed runs per thread count (after one warm-up batch).
    pub runs: usize,
    /// One entry per thread count, in the order asked.
    pub results: Vec<EmbedResult>,
    /// The kernel paths the local encoder ran (the CPU's best; remote embedders ignore it).
    pub kernels: super::EmbedKernels,
}

/// One thread count of `bench embed`.
#[derive(Debug, Serialize)]
pub struct EmbedResult {
    /// Model threads (ignored by a remote embedder).
    pub threads: usize,
    /// Median sentences per second of wall time.
    pub sentences_per_second: f64,
    /// Seconds to embed all sentences at that rate.
    pub seconds: f64,
    /// Median sentences per CPU-second of the process (all threads); null where the CPU
    /// time cannot be read (outside Linux).
    pub sentences_per_cpu_second: Option<f64>,
    /// Sentences per second of each run, in order.
    pub run_rates: Vec<f64>,
}

fn embed(ctx: &Context, texts: Vec<String>, source: String, threads: &[usize], runs: usize) -> Result<EmbedReport> {
    let n = texts.len();
    let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
    let words: usize = texts.iter().map(|t| t.split_whitespace().count()).sum();
    let mut report = EmbedReport {
        benchmark: "embed",
        model: String::new(),
        source,
        sentences: n,
        words,
        runs,
        results: Vec::new(),
        kernels: super::embed_kernels(),
    };
    if !ctx.cli_json {
        println!(
            "embedding {n} sentences from {} ({words} words, {:.1} per sentence), {runs} runs each, median",
            report.source,
            words as f64 / n as f64
        );
        println!("{}", report.kernels);
        println!("{:>8} {:>14} {:>12} {:>18}", "threads", "sentences/s", "seconds", "per CPU-second");
    }
    for &t in threads {
        let choice = match &ctx.embedder {
            EmbedderChoice::Local { dir, expect, query_precision, .. } => EmbedderChoice::Local {
                dir: dir.clone(),
                expect: *expect,
                threads: t,
                query_precision: *query_precision,
            },
            other => other.clone(),
        };
        let embedder = choice.load()?;
        report.model = embedder.model_id().to_string();
        embedder.embed(&refs[..refs.len().min(32)])?; // warm-up: page in weights
        let (mut rates, mut cpu_rates) = (Vec::new(), Vec::new());
        for _ in 0..runs {
            let (start, cpu_start) = (Instant::now(), cpu_seconds());
            let vectors = embedder.embed(&refs)?;
            let secs = start.elapsed().as_secs_f64();
            anyhow::ensure!(vectors.len() == n, "the embedder returned {} vectors for {n} sentences", vectors.len());
            rates.push(n as f64 / secs);
            if let (Some(before), Some(after)) = (cpu_start, cpu_seconds()) {
                cpu_rates.push(n as f64 / (after - before).max(1e-9));
            }
        }
        let rate = median(rates.clone());
        let cpu_rate = (cpu_rates.len() == runs).then(|| median(cpu_rates));
        if !ctx.cli_json {
            println!(
                "{:>8} {:>14.1} {:>12.2} {:>18}",
                t,
                rate,
                n as f64 / rate,
                cpu_rate.map_or("-".into(), |r| format!("{r:.1}"))
            );
        }
        report.results.push(EmbedResult {
            threads: t,
            sentences_per_second: rate,
            seconds: n as f64 / rate,
            sentences_per_cpu_second: cpu_rate,
            run_rates: rates,
        });
    }
    Ok(report)
}
