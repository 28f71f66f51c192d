//! `membank bench …`: speed measurements. Not tests: they print medians and percentiles
//! and assert nothing. Each builds what it needs in a scratch directory unless told where.
//!
//! - `embed`: sentences/s of the configured embedder on N sentences from the public data
//!   or from a sentence file (`bench/embed/compare.sh` puts it beside PyTorch).
//! - `recall`: recall latency p50/p95 for one user with 1k/10k/100k memories, with and
//!   without query embedding (real vectors from the configured model).
//! - `http`: the same over real HTTP on loopback (`http.rs`).
//! - `sweep`: time to sweep U users × M memories each.
//! - `cache`: memory of the search caches over U users × M memories under the cache
//!   budget (`cache.rs`).
//!
//! With `--json` each prints one report object (the `*Report` structs below, documented
//! field by field) instead of its table; progress of database builds goes to standard
//! error either way. The report structs are this command's output, not domain types.
//!
//! With a `postgres://` `--db`, `http` and `cache` measure the PostgreSQL store next to the
//! SQLite one in the same run, on a copy of the same SQLite dataset ([`copy_users`]) kept
//! in a database of that server between runs ([`pg_dataset`]).

pub mod cache;
pub mod http;

use std::collections::BTreeMap;
use std::io::BufRead as _;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context as _, Result};
use membank_engine::core::{
    ForgettingState, InvalidInput, Kind, ManualClock, Memory, MemoryId, Scope, Source, Status, TenantId, UserId,
};
use membank_engine::{Engine, RecallRequest, SweepRequest};
use membank_store::postgres::testing::{TestDatabase, with_database};
use membank_store::{
    EmbeddingModel, ExportRow, ListQuery, NewMemory, PgStore, SqliteStore, Store, StoreError, StoreOptions, UserImport,
};
use serde::Serialize;

use crate::args::bench::BenchCommand;
use crate::context::Context;
use crate::embedder::EmbedderChoice;
use crate::output::print_json;
use crate::progress::Bar;

/// Most bytes read from a `--sentences` file (a hostile file cannot exhaust memory).
const MAX_SENTENCE_FILE_BYTES: u64 = 64 << 20;

/// Runs a benchmark.
pub fn run(ctx: &Context, command: BenchCommand) -> Result<()> {
    match command {
        BenchCommand::Embed { n, threads, runs, data, sentences } => {
            let (texts, source) = match &sentences {
                Some(file) => (sentence_file(file, n)?, file.display().to_string()),
                None => (data_sentences(data.as_path(), n)?, data.display().to_string()),
            };
            finish(ctx, &embed(ctx, texts, source, &threads, runs)?)
        }
        BenchCommand::Recall { sizes, queries, dir, data } => finish(ctx, &recall(ctx, &sizes, queries, &dir, &data)?),
        BenchCommand::Sweep { users, per_user, dir } => finish(ctx, &sweep(ctx, users, per_user, &dir)?),
        BenchCommand::Http(args) => finish(ctx, &http::run(ctx, args)?),
        BenchCommand::Cache(args) => finish(ctx, &cache::run(ctx, args)?),
    }
}

/// Prints the report with `--json`; the text tables were printed as the rows came.
fn finish(ctx: &Context, report: &impl Serialize) -> Result<()> {
    if ctx.cli_json { print_json(report) } else { Ok(()) }
}

/// Latency percentiles of one series, in milliseconds.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct Latency {
    /// Median.
    pub p50_ms: f64,
    /// 95th percentile.
    pub p95_ms: f64,
    /// 99th percentile.
    pub p99_ms: f64,
}

impl Latency {
    /// Percentiles of `times`, which must not be empty.
    pub(crate) fn of(times: &mut [Duration]) -> Self {
        times.sort();
        let ms = |p| percentile(times, p).as_secs_f64() * 1000.0;
        Self { p50_ms: ms(0.5), p95_ms: ms(0.95), p99_ms: ms(0.99) }
    }
}

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

/// Exactly `n` sentences from the public data.
fn data_sentences(data: &Path, n: usize) -> Result<Vec<String>> {
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
fn sentence_file(path: &Path, n: usize) -> Result<Vec<String>> {
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

fn median(mut xs: Vec<f64>) -> f64 {
    xs.sort_by(f64::total_cmp);
    xs[xs.len() / 2]
}

pub(crate) fn percentile(sorted: &[Duration], p: f64) -> Duration {
    sorted[((sorted.len() as f64 - 1.0) * p).round() as usize]
}

/// CPU time (user + system, all threads) of this process so far, from `/proc/self/stat`
/// (Linux); `None` elsewhere. A second view of efficiency that other load on the machine
/// disturbs less than wall time.
fn cpu_seconds() -> Option<f64> {
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    // The fields after the parenthesised command name; utime and stime are fields 14 and
    // 15 of the line, 12 and 13 after the name (counted from 0).
    let (_, after) = stat.rsplit_once(')')?;
    let fields: Vec<&str> = after.split_whitespace().collect();
    let ticks = |i: usize| fields.get(i)?.parse::<f64>().ok();
    // /proc reports in USER_HZ, 100 per second on every Linux architecture in use.
    Some((ticks(11)? + ticks(12)?) / 100.0)
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
    };
    if !ctx.cli_json {
        println!(
            "embedding {n} sentences from {} ({words} words, {:.1} per sentence), {runs} runs each, median",
            report.source,
            words as f64 / n as f64
        );
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

/// `bench recall --json`.
#[derive(Debug, Serialize)]
pub struct RecallReport {
    /// Always `"recall"`.
    pub benchmark: &'static str,
    /// The embedder's model id.
    pub model: String,
    /// Results per recall.
    pub k: usize,
    /// Queries timed per size.
    pub queries: usize,
    /// One entry per store size, in the order asked.
    pub results: Vec<RecallResult>,
}

/// One store size of `bench recall`.
#[derive(Debug, Serialize)]
pub struct RecallResult {
    /// Active memories of the bench user.
    pub memories: usize,
    /// Memories this run added to the cached database (0 when it was reused as it was).
    pub built: usize,
    /// The engine's whole recall, query embedding included.
    pub total: Latency,
    /// Dense search, BM25 and fetching the top rows, without embedding.
    pub no_embed: Latency,
    /// The dense scan alone (the default screening: 4-bit first for large users).
    pub dense: Latency,
    /// The dense scan with the proven-exact screening only (`DenseScreen::Exact`), on a
    /// second handle of the same file.
    pub dense_exact: Latency,
    /// Of the exact scan's top 50 per query, the share the default scan returned too (1.0:
    /// the same rows; scores are always exact).
    pub dense_recall: f64,
    /// BM25 alone.
    pub bm25: Latency,
    /// Embedding the query alone.
    pub embed: Latency,
    /// What the user's entries in the two search caches are charged, once warm.
    pub cache_bytes: UserCacheBytes,
}

/// One user's entries in the search caches, in bytes.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct UserCacheBytes {
    /// The vector cache's entry.
    pub vectors: u64,
    /// The BM25 cache's entry.
    pub terms: u64,
}

fn recall(ctx: &Context, sizes: &[usize], queries: usize, dir: &Path, data: &Path) -> Result<RecallReport> {
    let embedder = ctx.embedder.load()?;
    let model = EmbeddingModel { id: embedder.model_id().to_string(), dim: embedder.dim() };
    std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    let corpus = sentences(data, 4000)?;
    let questions: Vec<String> = corpus
        .iter()
        .step_by(7)
        .take(queries)
        .map(|s| s.split_whitespace().take(8).collect::<Vec<_>>().join(" "))
        .collect();
    let k = 10;
    let mut report =
        RecallReport { benchmark: "recall", model: model.id.clone(), k, queries: questions.len(), results: Vec::new() };
    if !ctx.cli_json {
        println!(
            "recall latency, one user, k = {k}, {} queries per size, strengthening off (read path only)",
            questions.len()
        );
        println!(
            "{:>8} {:>12} {:>12} {:>14} {:>14} {:>11} {:>13} {:>12} {:>11} {:>11} {:>11} {:>11}",
            "memories",
            "p50 total",
            "p95 total",
            "p50 no-embed",
            "p95 no-embed",
            "p50 dense",
            "dense exact",
            "dense recall",
            "p50 BM25",
            "p50 embed",
            "cache vec",
            "cache BM25"
        );
    }
    for &size in sizes {
        let path = dir.join(format!("recall-v2-{size}-{}.db", model.id.replace('/', "_")));
        let store = Arc::new(SqliteStore::open_with(&path, ctx.store_options())?);
        let scope = Scope::user(TenantId::default_tenant(), UserId::new("bench")?);
        let have = store.counts(&scope)?.active as usize;
        let built = size.saturating_sub(have);
        if have < size {
            let start = Instant::now();
            fill(store.as_ref(), &scope, &model, embedder.as_ref(), &corpus, have, size)?;
            eprintln!("built {built} memories in {:.1}s", start.elapsed().as_secs_f64());
        }
        let exact_store = SqliteStore::open_with(
            &path,
            StoreOptions { dense_screen: membank_store::DenseScreen::Exact, ..ctx.store_options() },
        )?;
        let clock = Arc::new(ManualClock::new(chrono::Utc::now()));
        let engine = Engine::new(store.clone(), embedder.clone(), clock, Default::default())?;
        // Embedded as queries, as recall does (e5 puts `query: ` before a query).
        // One query at a time, as a recall embeds it; timed on its own as well.
        let mut embed_only = Vec::new();
        let vectors = questions
            .iter()
            .map(|q| {
                let start = Instant::now();
                let vector = embedder.embed_query(q);
                embed_only.push(start.elapsed());
                vector
            })
            .collect::<Result<Vec<_>, _>>()?;
        // Warm the vector cache once, as a long-running server has it warm.
        let mut warm = RecallRequest::new(scope.clone(), questions[0].clone(), k);
        warm.strengthen = Some(false);
        engine.recall(warm)?;
        exact_store.dense_search(&scope, &model, &vectors[0], &Default::default(), 50)?;
        let (mut dense_exact, mut found, mut wanted) = (Vec::new(), 0usize, 0usize);
        let mut total = Vec::new();
        let mut search_only = Vec::new();
        let (mut dense_only, mut lexical_only) = (Vec::new(), Vec::new());
        for (q, vector) in questions.iter().zip(&vectors) {
            let mut request = RecallRequest::new(scope.clone(), q.clone(), k);
            request.strengthen = Some(false);
            let start = Instant::now();
            engine.recall(request)?;
            total.push(start.elapsed());
            let start = Instant::now();
            let filter = Default::default();
            let dense = store.dense_search(&scope, &model, vector, &filter, 50)?;
            let dense_done = Instant::now();
            let lexical = store.lexical_search(&scope, &membank_engine::core::text::query_terms(q), &filter, 50)?;
            lexical_only.push(dense_done.elapsed());
            dense_only.push(dense_done - start);
            let ids: Vec<MemoryId> = dense.iter().chain(&lexical).map(|h| h.id).collect();
            store.get_many(&scope, &ids[..ids.len().min(k)])?;
            search_only.push(start.elapsed());
            let start = Instant::now();
            let exact = exact_store.dense_search(&scope, &model, vector, &filter, 50)?;
            dense_exact.push(start.elapsed());
            wanted += exact.len();
            found += exact.iter().filter(|e| dense.iter().any(|d| d.id == e.id)).count();
        }
        let row = RecallResult {
            memories: size,
            built,
            total: Latency::of(&mut total),
            no_embed: Latency::of(&mut search_only),
            dense: Latency::of(&mut dense_only),
            dense_exact: Latency::of(&mut dense_exact),
            dense_recall: if wanted == 0 { 1.0 } else { found as f64 / wanted as f64 },
            bm25: Latency::of(&mut lexical_only),
            embed: Latency::of(&mut embed_only),
            cache_bytes: {
                let stats = store.cache_stats();
                UserCacheBytes { vectors: stats.vectors.bytes, terms: stats.terms.bytes }
            },
        };
        if !ctx.cli_json {
            let ms = |ms: f64| format!("{ms:.2} ms");
            let mib = |bytes: u64| format!("{:.1} MiB", bytes as f64 / (1024.0 * 1024.0));
            println!(
                "{:>8} {:>12} {:>12} {:>14} {:>14} {:>11} {:>13} {:>12.4} {:>11} {:>11} {:>11} {:>11}",
                size,
                ms(row.total.p50_ms),
                ms(row.total.p95_ms),
                ms(row.no_embed.p50_ms),
                ms(row.no_embed.p95_ms),
                ms(row.dense.p50_ms),
                ms(row.dense_exact.p50_ms),
                row.dense_recall,
                ms(row.bm25.p50_ms),
                ms(row.embed.p50_ms),
                mib(row.cache_bytes.vectors),
                mib(row.cache_bytes.terms)
            );
        }
        report.results.push(row);
    }
    Ok(report)
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

pub(crate) fn synthetic_memory(scope: &Scope, kind: Kind, text: String, at: membank_engine::core::Timestamp) -> Memory {
    Memory {
        id: MemoryId::generate(at),
        scope: scope.clone(),
        kind,
        source: Source::User,
        content: Some(text.clone()),
        user_text: Some(text),
        assistant_text: None,
        occurred_at: at,
        recorded_at: at,
        day: at.date_naive(),
        forgetting: ForgettingState::new(at),
        status: Status::Active,
        superseded_by: None,
        derived_from: Vec::new(),
        metadata: BTreeMap::new(),
    }
}

/// `bench sweep --json`.
#[derive(Debug, Serialize)]
pub struct SweepReport {
    /// Always `"sweep"`.
    pub benchmark: &'static str,
    /// Users swept.
    pub users: usize,
    /// Memories per user.
    pub per_user: usize,
    /// Whether this run built the database (else it was reused from `--dir`).
    pub built: bool,
    /// The dry run, then the real sweep (each on the same copy of the data).
    pub results: Vec<SweepResult>,
}

/// One sweep over every user.
#[derive(Debug, Serialize)]
pub struct SweepResult {
    /// A dry run decides and counts but archives nothing.
    pub dry_run: bool,
    /// Memories examined.
    pub examined: usize,
    /// Memories archived (would be, in a dry run).
    pub archived: usize,
    /// Wall time of the whole sweep.
    pub seconds: f64,
    /// Memories examined per second.
    pub memories_per_second: f64,
    /// Milliseconds per user.
    pub ms_per_user: f64,
}

fn sweep(ctx: &Context, users: usize, per_user: usize, dir: &Path) -> Result<SweepReport> {
    std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    let path = dir.join(format!("sweep-v2-{users}x{per_user}.db"));
    let build = !path.exists();
    let store = Arc::new(SqliteStore::open_with(&path, ctx.store_options())?);
    let t0 = chrono::DateTime::parse_from_rfc3339("2024-01-01T00:00:00Z")?.to_utc();
    let tenant = TenantId::default_tenant();
    if build {
        let start = Instant::now();
        let bar = Bar::new();
        for u in 0..users {
            let scope = Scope::user(tenant.clone(), UserId::new(&format!("user-{u}"))?);
            store.ensure_user(&scope.tenant, &scope.user, t0)?;
            // Memories spread over 30 days with strengths 1–8 (as if recalled 0–7 times), so
            // a sweep at day 40 archives some and keeps others; vectors are not needed to sweep.
            let batch = (0..per_user)
                .map(|i| {
                    let mut memory = synthetic_memory(
                        &scope,
                        Kind::Note,
                        format!("note {i} of user {u}"),
                        t0 + chrono::Duration::minutes((i * 43) as i64),
                    );
                    memory.forgetting.strength =
                        membank_engine::core::Strength::new(1.0 + ((i * 7 + u) % 8) as f64).expect("positive");
                    memory.forgetting.recall_count = ((i * 7 + u) % 8) as u32;
                    NewMemory { memory, embedding: None }
                })
                .collect();
            store.insert_many(batch)?;
            bar.update("building users", u + 1, users);
        }
        bar.finish();
        eprintln!("built {} memories in {:.1}s", users * per_user, start.elapsed().as_secs_f64());
    }
    // Sweep as of day 40 on a copy so the benchmark can be repeated on the same data.
    let copy = dir.join(format!("sweep-{users}x{per_user}-run.db"));
    for suffix in ["", "-wal", "-shm"] {
        let _ = std::fs::remove_file(format!("{}{suffix}", copy.display()));
    }
    store.backup(&copy)?;
    let store: Arc<dyn Store> = Arc::new(SqliteStore::open_with(&copy, ctx.store_options())?);
    let clock = Arc::new(ManualClock::new(t0 + chrono::Duration::days(40)));
    let engine = Engine::new(store.clone(), Arc::new(NoEmbedder), clock, Default::default())?;
    let mut report = SweepReport { benchmark: "sweep", users, per_user, built: build, results: Vec::new() };
    for dry_run in [true, false] {
        let start = Instant::now();
        let (mut examined, mut archived) = (0, 0);
        for u in 0..users {
            let scope = Scope::user(tenant.clone(), UserId::new(&format!("user-{u}"))?);
            let report = engine.sweep(SweepRequest { scope, now: None, dry_run, max_archive_fraction: None })?;
            examined += report.examined;
            archived += report.archived.len();
        }
        let secs = start.elapsed().as_secs_f64();
        let row = SweepResult {
            dry_run,
            examined,
            archived,
            seconds: secs,
            memories_per_second: examined as f64 / secs,
            ms_per_user: secs * 1000.0 / users as f64,
        };
        if !ctx.cli_json {
            println!(
                "sweep{} of {} users x {} memories: examined {}, archived {}, {:.2}s ({:.0} memories/s, {:.2} ms per user)",
                if dry_run { " (dry run)" } else { "" },
                users,
                per_user,
                row.examined,
                row.archived,
                row.seconds,
                row.memories_per_second,
                row.ms_per_user
            );
        }
        report.results.push(row);
    }
    Ok(report)
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
    /// from SQLite and `import_users`, [`copy_users`]); null when nothing was added.
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

/// A PostgreSQL database that holds one benchmark dataset between runs.
pub(crate) struct PgDataset {
    /// The store on it.
    pub store: Arc<PgStore>,
    /// Its URL without a password, for messages and reports.
    pub location: String,
}

/// Most memories [`copy_users`] writes in one transaction: big enough that a transaction's
/// overhead does not count, small enough that an interruption loses little and the batch
/// in hand stays a few MiB.
const COPY_BATCH: usize = 5000;

/// The file in `dir` that records which database of the server `server_url` holds the
/// dataset `key`, and of which build of it.
fn pg_record(server_url: &str, dir: &Path, key: &str) -> PathBuf {
    // The server named without its database (user, host and port); a password in the URL
    // is hashed with them, never written.
    use sha2::Digest as _;
    let server: String = sha2::Sha256::digest(with_database(server_url, "").as_bytes())
        .iter()
        .take(6)
        .map(|b| format!("{b:02x}"))
        .collect();
    dir.join(format!("{key}.postgres-{server}"))
}

/// The database on the server of `server_url` that holds the dataset `key` copied from the
/// source build `identity` (the id of its first memory: a rebuilt source has another):
/// the one recorded in `dir` if it still opens and holds that build, else a new one,
/// recorded there. The CLI has no PostgreSQL client of its own (only the store crate talks
/// to the server), so a new database is made by the store's [`TestDatabase`] and kept by not
/// dropping its handle; its name is generated, hence the record. Where the server refuses
/// to create a database, the dataset goes into the database of `--db` itself.
pub(crate) fn pg_dataset(server_url: &str, dir: &Path, key: &str, identity: &str) -> Result<PgDataset> {
    let record = pg_record(server_url, dir, key);
    if let Ok(text) = std::fs::read_to_string(&record) {
        let text = text.trim();
        let (name, recorded) = text.split_once(' ').unwrap_or((text, ""));
        let url = with_database(server_url, name);
        if recorded == identity {
            match PgStore::open(&url) {
                Ok(store) => return Ok(PgDataset { store: Arc::new(store), location: membank_store::redact(&url) }),
                Err(err) => eprintln!("the recorded database {name} does not open ({err}); making a new one"),
            }
        } else {
            eprintln!(
                "the database {name} holds a copy of an earlier build of {key}; making a new one (DROP DATABASE {name} on the server reclaims its space)"
            );
        }
    }
    match TestDatabase::try_create(server_url, &format!("bench_{key}")) {
        Ok(database) => {
            // Opened before it is recorded: a database that does not open is dropped with
            // its handle.
            let store = PgStore::open(&database.url)
                .with_context(|| format!("cannot open the new database {}", database.name))?;
            std::fs::write(&record, format!("{} {identity}\n", database.name))
                .with_context(|| format!("cannot write {}", record.display()))?;
            let location = membank_store::redact(&database.url);
            eprintln!("made the database {location} for {key}");
            // Kept for the next run: dropping the handle would drop the database.
            database.keep();
            Ok(PgDataset { store: Arc::new(store), location })
        }
        Err(err) => {
            eprintln!(
                "cannot create a database on {} ({err}); the dataset goes into the database of --db itself",
                membank_store::redact(server_url)
            );
            Ok(PgDataset { store: Arc::new(PgStore::open(server_url)?), location: membank_store::redact(server_url) })
        }
    }
}

/// The database [`pg_dataset`] recorded for `key` on this server, or the database of
/// `--db` itself when none is recorded (the server refused to create one).
pub(crate) fn recorded_pg_dataset(
    server_url: &str,
    dir: &Path,
    key: &str,
    options: membank_store::StoreOptions,
) -> Result<PgDataset> {
    let url = match std::fs::read_to_string(pg_record(server_url, dir, key)) {
        Ok(text) => with_database(server_url, text.split_whitespace().next().unwrap_or_default()),
        Err(_) => server_url.to_string(),
    };
    let store =
        PgStore::open_with(&url, membank_store::PgOptions { cache_budget: options.cache_budget, ..Default::default() })
            .with_context(|| format!("cannot open {}", membank_store::redact(&url)))?;
    Ok(PgDataset { store: Arc::new(store), location: membank_store::redact(&url) })
}

/// The id of the scope's first memory (the oldest), which names a build of a dataset: ids
/// are UUIDv7 with random bits, so a rebuild never repeats it. `None` for no memory.
pub(crate) fn first_memory(store: &dyn Store, scope: &Scope) -> Result<Option<MemoryId>> {
    Ok(store.list(scope, &ListQuery { limit: 1, oldest_first: true, ..Default::default() })?.first().map(|m| m.id))
}

/// All of a scope's memories, whatever their status.
fn total_memories(store: &dyn Store, scope: &Scope) -> Result<u64> {
    let counts = store.counts(scope)?;
    Ok(counts.active + counts.archived + counts.superseded + counts.erased)
}

/// Copies the users of `scopes` from `source` into `target`: each user's settings and
/// memories with all of their state and vectors, ids kept, through `export_user` and
/// `import_users` (merging), in transactions of at most [`COPY_BATCH`] memories. Not the
/// event logs nor the recent recall queries: no search reads them. A user whose count and
/// first memory already match is skipped, and the import skips memories already present, so
/// an interrupted copy resumes where it stopped. Afterwards every user must match its
/// source (count and first memory), or this fails saying which does not. Returns the
/// memories copied.
pub(crate) fn copy_users(source: &dyn Store, target: &dyn Store, scopes: &[Scope]) -> Result<usize> {
    let matches = |scope: &Scope| -> Result<bool> {
        Ok(total_memories(source, scope)? == total_memories(target, scope)?
            && first_memory(source, scope)? == first_memory(target, scope)?)
    };
    let todo: Vec<&Scope> = scopes
        .iter()
        .filter_map(|scope| matches(scope).map(|ok| (!ok).then_some(scope)).transpose())
        .collect::<Result<_>>()?;
    if todo.is_empty() {
        return Ok(0);
    }
    let mut expected = 0;
    for scope in &todo {
        expected += total_memories(source, scope)? as usize;
    }
    let bar = Bar::new();
    let mut batch: Vec<UserImport> = Vec::new();
    let mut in_batch = 0;
    let mut seen = 0;
    let mut copied = 0;
    let mut flush = |batch: &mut Vec<UserImport>, in_batch: &mut usize| -> Result<(), StoreError> {
        if !batch.is_empty() {
            copied += target.import_users(std::mem::take(batch), true)?.memories;
        }
        *in_batch = 0;
        Ok(())
    };
    for scope in &todo {
        source.export_user(&scope.tenant, &scope.user, true, &mut |row| {
            match row {
                ExportRow::User(state) => {
                    batch.push(UserImport { state, memories: Vec::new(), events: Vec::new(), queries: Vec::new() })
                }
                ExportRow::Memory(memory, vector) => {
                    let Some(user) = batch.last_mut() else {
                        return Err(StoreError::Corrupt("an export gave a memory before its user".into()));
                    };
                    user.memories.push((*memory, vector));
                    in_batch += 1;
                    seen += 1;
                    if in_batch >= COPY_BATCH {
                        // The user's further memories go in the next transaction (merged).
                        let state = user.state.clone();
                        flush(&mut batch, &mut in_batch)?;
                        batch.push(UserImport { state, memories: Vec::new(), events: Vec::new(), queries: Vec::new() });
                        bar.update("copying to PostgreSQL", seen, expected);
                    }
                }
                ExportRow::Event(_) | ExportRow::Query(..) => {}
            }
            Ok(())
        })?;
    }
    flush(&mut batch, &mut in_batch)?;
    bar.update("copying to PostgreSQL", seen, expected);
    bar.finish();
    for scope in &todo {
        anyhow::ensure!(
            matches(scope)?,
            "after the copy, user {} has {} memories in PostgreSQL and {} in SQLite (or another first memory): the PostgreSQL database held another user of that name",
            scope.user,
            total_memories(target, scope)?,
            total_memories(source, scope)?
        );
    }
    Ok(copied)
}

/// Sweeps never embed; this makes that explicit.
struct NoEmbedder;

impl membank_embed::Embedder for NoEmbedder {
    fn model_id(&self) -> &str {
        "none"
    }
    fn dim(&self) -> usize {
        0
    }
    fn embed(&self, _: &[&str]) -> Result<Vec<Vec<f32>>, membank_embed::EmbedError> {
        Err(membank_embed::EmbedError::Remote("the sweep benchmark does not embed".into()))
    }
}
