//! `membank bench …`: speed measurements. Not tests: they print medians and percentiles
//! and assert nothing. Each builds what it needs in a scratch directory unless told where.
//!
//! - `embed`: sentences/s of the configured embedder on N sentences from the public data.
//! - `recall`: recall latency p50/p95 for one user with 1k/10k/100k memories, with and
//!   without query embedding (real vectors from the configured model).
//! - `sweep`: time to sweep U users × M memories each.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context as _, Result, bail};
use clap::Subcommand;
use membank_engine::core::{ForgettingState, Kind, ManualClock, Memory, MemoryId, Scope, Source, Status, TenantId, UserId};
use membank_engine::{Engine, RecallRequest, SweepRequest};
use membank_store::{EmbeddingModel, NewMemory, SqliteStore, Store};

use crate::commands::Context;
use crate::embedder::EmbedderChoice;

/// Which benchmark.
#[derive(Debug, Subcommand)]
pub enum BenchCommand {
    /// Embedding throughput (sentences/s).
    Embed {
        /// Number of sentences.
        #[arg(long, default_value_t = 2000)]
        n: usize,
        /// Thread counts to measure, comma-separated. (Not `--threads`: that is the global
        /// number of threads, and clap panicked on the clash of the two.)
        #[arg(long = "thread-counts", id = "thread_counts", default_value = "1,2")]
        threads: String,
        /// Runs per thread count (the median is reported).
        #[arg(long, default_value_t = 3)]
        runs: usize,
        /// Public data folder (sentences come from MemoryBank and LoCoMo).
        #[arg(long, default_value = "../shared/data")]
        data: PathBuf,
    },
    /// Recall latency for one user at several store sizes.
    Recall {
        /// Store sizes, comma-separated.
        #[arg(long, default_value = "1000,10000,100000")]
        sizes: String,
        /// Queries per size.
        #[arg(long, default_value_t = 200)]
        queries: usize,
        /// Where to keep the built databases (reused when present).
        #[arg(long, default_value = "target/bench")]
        dir: PathBuf,
        /// Public data folder.
        #[arg(long, default_value = "../shared/data")]
        data: PathBuf,
    },
    /// Recall latency over real HTTP on loopback (query embedding included), 1 and N clients.
    Http(crate::bench_http::HttpArgs),
    /// Sweep time over many users.
    Sweep {
        /// Users.
        #[arg(long, default_value_t = 1000)]
        users: usize,
        /// Memories per user.
        #[arg(long, default_value_t = 1000)]
        per_user: usize,
        /// Where to keep the built database (reused when present).
        #[arg(long, default_value = "target/bench")]
        dir: PathBuf,
    },
}

/// Runs a benchmark.
pub fn run(ctx: &Context, command: BenchCommand) -> Result<()> {
    match command {
        BenchCommand::Embed { n, threads, runs, data } => embed(ctx, n, &threads, runs, &data),
        BenchCommand::Recall { sizes, queries, dir, data } => recall(ctx, &sizes, queries, &dir, &data),
        BenchCommand::Sweep { users, per_user, dir } => sweep(users, per_user, &dir),
        BenchCommand::Http(args) => crate::bench_http::run(ctx, args),
    }
}

/// User utterances from the public data sets, deduplicated, in file order.
pub fn sentences(data: &std::path::Path, n: usize) -> Result<Vec<String>> {
    let mut out = Vec::new();
    let mut seen = std::collections::HashSet::new();
    let bank: serde_json::Value = serde_json::from_slice(&std::fs::read(data.join("memorybank/memory_bank_en.json")).with_context(|| format!("reading {}/memorybank/memory_bank_en.json", data.display()))?)?;
    for user in bank.as_object().into_iter().flat_map(|o| o.values()) {
        for turns in user["history"].as_object().into_iter().flat_map(|h| h.values()) {
            for turn in turns.as_array().into_iter().flatten() {
                for field in ["query", "response"] {
                    if let Some(text) = turn[field].as_str()
                        && !text.trim().is_empty() && seen.insert(text.to_string()) {
                            out.push(text.to_string());
                        }
                }
            }
        }
    }
    let locomo: serde_json::Value = serde_json::from_slice(&std::fs::read(data.join("locomo/locomo10.json"))?)?;
    for sample in locomo.as_array().into_iter().flatten() {
        for (key, session) in sample["conversation"].as_object().into_iter().flatten() {
            if !key.starts_with("session_") || key.ends_with("date_time") {
                continue;
            }
            for turn in session.as_array().into_iter().flatten() {
                if let Some(text) = turn["text"].as_str()
                    && seen.insert(text.to_string()) {
                        out.push(text.to_string());
                    }
            }
        }
    }
    Ok(out)
        .map(|mut all: Vec<String>| {
            all.truncate(n.max(1));
            all
        })
        .and_then(|all| if all.len() < n { bail!("only {} distinct sentences in the data; ask for fewer", all.len()) } else { Ok(all) })
}

fn median(mut xs: Vec<f64>) -> f64 {
    xs.sort_by(f64::total_cmp);
    xs[xs.len() / 2]
}

pub(crate) fn percentile(sorted: &[Duration], p: f64) -> Duration {
    sorted[((sorted.len() as f64 - 1.0) * p).round() as usize]
}

fn embed(ctx: &Context, n: usize, threads: &str, runs: usize, data: &std::path::Path) -> Result<()> {
    let texts = sentences(data, n)?;
    let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
    let tokens: usize = texts.iter().map(|t| t.split_whitespace().count()).sum();
    println!("embedding {} sentences ({} words, {:.1} per sentence), {} runs each, median", n, tokens, tokens as f64 / n as f64, runs);
    println!("{:>8} {:>14} {:>12}", "threads", "sentences/s", "seconds");
    for t in threads.split(',') {
        let t: usize = t.trim().parse().context("--thread-counts takes numbers such as 1,2")?;
        let choice = match &ctx.embedder {
            EmbedderChoice::Local { dir, expect, .. } => EmbedderChoice::Local { dir: dir.clone(), expect: *expect, threads: t },
            other => other.clone(),
        };
        let embedder = choice.load()?;
        embedder.embed(&refs[..refs.len().min(32)])?; // warm-up: page in weights
        let mut rates = Vec::new();
        for _ in 0..runs.max(1) {
            let start = Instant::now();
            let vectors = embedder.embed(&refs)?;
            let secs = start.elapsed().as_secs_f64();
            assert_eq!(vectors.len(), n);
            rates.push(n as f64 / secs);
        }
        let rate = median(rates);
        println!("{:>8} {:>14.1} {:>12.2}", t, rate, n as f64 / rate);
    }
    Ok(())
}

fn recall(ctx: &Context, sizes: &str, queries: usize, dir: &std::path::Path, data: &std::path::Path) -> Result<()> {
    let embedder = ctx.embedder.load()?;
    let model = EmbeddingModel { id: embedder.model_id().to_string(), dim: embedder.dim() };
    std::fs::create_dir_all(dir)?;
    let corpus = sentences(data, 4000)?;
    let questions: Vec<String> = corpus.iter().step_by(7).take(queries.max(1)).map(|s| s.split_whitespace().take(8).collect::<Vec<_>>().join(" ")).collect();
    println!("recall latency, one user, k = 10, {} queries per size, strengthening off (read path only)", questions.len());
    println!("{:>8} {:>12} {:>12} {:>14} {:>14} {:>11} {:>11} {:>11}", "memories", "p50 total", "p95 total", "p50 no-embed", "p95 no-embed", "p50 dense", "p50 BM25", "p50 embed");
    for size in sizes.split(',') {
        let size: usize = size.trim().parse().context("--sizes takes numbers such as 1000,10000")?;
        let path = dir.join(format!("recall-v2-{size}-{}.db", model.id.replace('/', "_")));
        let store = Arc::new(SqliteStore::open(&path)?);
        let scope = Scope::user(TenantId::default_tenant(), UserId::new("bench")?);
        let have = store.counts(&scope)?.active as usize;
        if have < size {
            let start = Instant::now();
            fill(store.as_ref(), &scope, &model, embedder.as_ref(), &corpus, have, size)?;
            eprintln!("built {} memories in {:.1}s", size - have, start.elapsed().as_secs_f64());
        }
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
        embed_only.sort();
        // Warm the vector cache once, as a long-running server has it warm.
        let mut warm = RecallRequest::new(scope.clone(), questions[0].clone(), 10);
        warm.strengthen = Some(false);
        engine.recall(warm)?;
        let mut total = Vec::new();
        let mut search_only = Vec::new();
        let (mut dense_only, mut lexical_only) = (Vec::new(), Vec::new());
        for (q, vector) in questions.iter().zip(&vectors) {
            let mut request = RecallRequest::new(scope.clone(), q.clone(), 10);
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
            store.get_many(&scope, &ids[..ids.len().min(10)])?;
            search_only.push(start.elapsed());
        }
        total.sort();
        search_only.sort();
        dense_only.sort();
        lexical_only.sort();
        let ms = |d: Duration| format!("{:.2} ms", d.as_secs_f64() * 1000.0);
        println!(
            "{:>8} {:>12} {:>12} {:>14} {:>14} {:>11} {:>11} {:>11}",
            size,
            ms(percentile(&total, 0.5)),
            ms(percentile(&total, 0.95)),
            ms(percentile(&search_only, 0.5)),
            ms(percentile(&search_only, 0.95)),
            ms(percentile(&dense_only, 0.5)),
            ms(percentile(&lexical_only, 0.5)),
            ms(percentile(&embed_only, 0.5))
        );
    }
    Ok(())
}

/// Adds memories `have..size` to the bench user. Texts are real utterances, then pairs of
/// them once single ones run out (so every text is distinct). Single utterances get their
/// real vectors; a pair gets the normalised sum of its two sentences' real vectors, which
/// keeps building 100k memories to minutes. An exact scan's cost does not depend on the
/// vectors' values, and BM25 sees the real pair text.
pub(crate) fn fill(store: &dyn Store, scope: &Scope, model: &EmbeddingModel, embedder: &dyn membank_embed::Embedder, corpus: &[String], have: usize, size: usize) -> Result<()> {
    let start_day = chrono::Utc::now() - chrono::Duration::days(365);
    store.ensure_user(&scope.tenant, &scope.user, start_day)?;
    eprintln!("embedding {} sentences; pairs beyond them reuse their vectors (normalised sums)", corpus.len());
    let base = embedder.embed(&corpus.iter().map(String::as_str).collect::<Vec<_>>())?;
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
            NewMemory { memory: synthetic_memory(scope, Kind::Turn, text, at), embedding: Some((model.clone(), vector)) }
        });
        store.insert_many(batch.collect())?;
        eprint!("\r{chunk_end}/{size}");
    }
    eprintln!();
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

fn sweep(users: usize, per_user: usize, dir: &std::path::Path) -> Result<()> {
    std::fs::create_dir_all(dir)?;
    let path = dir.join(format!("sweep-v2-{users}x{per_user}.db"));
    let build = !path.exists();
    let store = Arc::new(SqliteStore::open(&path)?);
    let t0 = chrono::DateTime::parse_from_rfc3339("2024-01-01T00:00:00Z")?.to_utc();
    let tenant = TenantId::default_tenant();
    if build {
        let start = Instant::now();
        for u in 0..users {
            let scope = Scope::user(tenant.clone(), UserId::new(&format!("user-{u}"))?);
            store.ensure_user(&scope.tenant, &scope.user, t0)?;
            // Memories spread over 30 days with strengths 1–8 (as if recalled 0–7 times), so
            // a sweep at day 40 archives some and keeps others; vectors are not needed to sweep.
            let batch = (0..per_user)
                .map(|i| {
                    let mut memory = synthetic_memory(&scope, Kind::Note, format!("note {i} of user {u}"), t0 + chrono::Duration::minutes((i * 43) as i64));
                    memory.forgetting.strength = membank_engine::core::Strength::new(1.0 + ((i * 7 + u) % 8) as f64).expect("positive");
                    memory.forgetting.recall_count = ((i * 7 + u) % 8) as u32;
                    NewMemory { memory, embedding: None }
                })
                .collect();
            store.insert_many(batch)?;
            if u % 50 == 0 {
                eprint!("\rbuilding {u}/{users} users");
            }
        }
        eprintln!("\rbuilt {} memories in {:.1}s", users * per_user, start.elapsed().as_secs_f64());
    }
    // Sweep as of day 40 on a copy so the benchmark can be repeated on the same data.
    let copy = dir.join(format!("sweep-{users}x{per_user}-run.db"));
    for suffix in ["", "-wal", "-shm"] {
        let _ = std::fs::remove_file(format!("{}{suffix}", copy.display()));
    }
    store.backup(&copy)?;
    let store: Arc<dyn Store> = Arc::new(SqliteStore::open(&copy)?);
    let clock = Arc::new(ManualClock::new(t0 + chrono::Duration::days(40)));
    let engine = Engine::new(store.clone(), Arc::new(NoEmbedder), clock, Default::default())?;
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
        println!(
            "sweep{} of {} users x {} memories: examined {}, archived {}, {:.2}s ({:.0} memories/s, {:.2} ms per user)",
            if dry_run { " (dry run)" } else { "" },
            users,
            per_user,
            examined,
            archived,
            secs,
            examined as f64 / secs,
            secs * 1000.0 / users as f64
        );
    }
    Ok(())
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
