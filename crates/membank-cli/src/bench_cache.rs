//! `membank bench cache`: the memory of the per-user search caches over many users under
//! the cache budget (`--cache-mb`), as a server serving all of them would hold it.
//!
//! It builds (or reuses) a database of U users × M memories with the configured model's
//! vectors (each memory a pair of real sentences with the normalised sum of their vectors,
//! as in `bench recall`), measures what one user costs in each cache on its own, then runs
//! passes in which every user, in a shuffled order spread over `--clients` threads, gets
//! one dense and one BM25 search, and reports after each pass the caches' numbers and the
//! process's resident memory from `/proc/self/status` (Linux): `VmRSS`, split into
//! `RssAnon` (the heap, where the caches live) and `RssFile` (file pages mapped in, here
//! SQLite's memory-mapped reads, which the kernel may drop at will), and the peak `VmHWM`.
//! The model is dropped before the baseline, so the growth over it is the caches, SQLite's
//! page caches and the allocator's overhead. It measures; it asserts nothing. With `--json`
//! it prints a [`CacheReport`].

use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::{Context as _, Result};
use clap::Args;
use membank_engine::core::{Kind, Scope, TenantId, UserId, text};
use membank_store::{CacheStats, EmbeddingModel, NewMemory, SearchFilter, SqliteStore, Store, StoreOptions};
use serde::Serialize;

use crate::bench::{MAX_COUNT, count, sentences, synthetic_memory};
use crate::commands::Context;
use crate::progress::Bar;

/// `bench cache`.
#[derive(Debug, Args)]
pub struct CacheArgs {
    /// Users.
    #[arg(long, default_value_t = 1000, value_parser = count(MAX_COUNT))]
    pub users: usize,
    /// Memories per user.
    #[arg(long, default_value_t = 1000, value_parser = count(MAX_COUNT))]
    pub per_user: usize,
    /// Passes over every user.
    #[arg(long, default_value_t = 2, value_parser = count(1000))]
    pub passes: usize,
    /// Threads searching at once (as a server's blocking pool would).
    #[arg(long, default_value_t = 4, value_parser = count(256))]
    pub clients: usize,
    /// Where to keep the built database (reused when present).
    #[arg(long, default_value = "target/bench")]
    pub dir: PathBuf,
    /// Public data folder (texts of memories and queries).
    #[arg(long, default_value = "../shared/data")]
    pub data: PathBuf,
}

/// `bench cache --json`.
#[derive(Debug, Serialize)]
pub struct CacheReport {
    /// Always `"cache"`.
    pub benchmark: &'static str,
    /// The embedder's model id.
    pub model: String,
    /// Users searched.
    pub users: usize,
    /// Memories per user.
    pub per_user: usize,
    /// Whether this run built the database (else it was reused from `--dir`).
    pub built: bool,
    /// The cache budget (`--cache-mb`) in bytes.
    pub budget_bytes: u64,
    /// What one user's entries are charged on their own: `{"vectors", "terms"}` in bytes.
    pub per_user_bytes: PerUserBytes,
    /// Resident memory before the first search (store open, model dropped); null outside Linux.
    pub baseline: Option<Rss>,
    /// One entry per pass.
    pub results: Vec<CachePass>,
}

/// One user's cache entries, in bytes.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct PerUserBytes {
    /// The vector cache's entry.
    pub vectors: u64,
    /// The BM25 cache's entry.
    pub terms: u64,
}

/// One pass over every user.
#[derive(Debug, Serialize)]
pub struct CachePass {
    /// 1, 2, …
    pub pass: usize,
    /// Searches made (one dense and one BM25 per user).
    pub searches: usize,
    /// Wall time of the pass.
    pub seconds: f64,
    /// The caches after the pass: bytes kept, users kept per cache, and hits, misses and
    /// evictions of both caches so far.
    pub cache: CacheNumbers,
    /// Resident memory after the pass; null outside Linux.
    pub rss: Option<Rss>,
}

/// The caches' numbers, both caches together unless named.
#[derive(Debug, Serialize)]
pub struct CacheNumbers {
    /// Bytes kept.
    pub bytes: u64,
    /// Users kept by the vector cache.
    pub vectors_users: u64,
    /// Users kept by the BM25 cache.
    pub terms_users: u64,
    /// Searches served from a kept user.
    pub hits: u64,
    /// Searches that loaded a user whole.
    pub misses: u64,
    /// Users dropped to stay within the budget.
    pub evictions: u64,
}

impl From<CacheStats> for CacheNumbers {
    fn from(s: CacheStats) -> Self {
        Self {
            bytes: s.bytes(),
            vectors_users: s.vectors.entries,
            terms_users: s.terms.entries,
            hits: s.vectors.hits + s.terms.hits,
            misses: s.vectors.misses + s.terms.misses,
            evictions: s.vectors.evictions + s.terms.evictions,
        }
    }
}

/// Resident memory of this process, in MiB, from `/proc/self/status`.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct Rss {
    /// `VmRSS`: all resident pages.
    pub vm_rss_mb: f64,
    /// `RssAnon`: resident anonymous pages (the heap).
    pub rss_anon_mb: f64,
    /// `RssFile`: resident file pages mapped in (SQLite's memory-mapped reads, the binary).
    pub rss_file_mb: f64,
    /// `VmHWM`: the peak of `VmRSS` so far.
    pub vm_hwm_mb: f64,
}

/// Reads [`Rss`] (Linux); `None` where `/proc/self/status` does not say.
pub fn rss() -> Option<Rss> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let field = |name: &str| -> Option<f64> {
        let line = status.lines().find(|l| l.starts_with(name) && l[name.len()..].starts_with(':'))?;
        let kb: f64 = line[name.len() + 1..].trim().trim_end_matches("kB").trim().parse().ok()?;
        Some(kb / 1024.0)
    };
    Some(Rss { vm_rss_mb: field("VmRSS")?, rss_anon_mb: field("RssAnon")?, rss_file_mb: field("RssFile")?, vm_hwm_mb: field("VmHWM")? })
}

fn user_scope(u: usize) -> Result<Scope> {
    Ok(Scope::user(TenantId::default_tenant(), UserId::new(&format!("user-{u}"))?))
}

/// Runs the benchmark.
pub fn run(ctx: &Context, args: CacheArgs) -> Result<CacheReport> {
    std::fs::create_dir_all(&args.dir).with_context(|| format!("cannot create {}", args.dir.display()))?;
    let corpus = sentences(&args.data, 4000)?;
    let questions: Vec<String> = corpus.iter().step_by(7).take(64).map(|s| s.split_whitespace().take(8).collect::<Vec<_>>().join(" ")).collect();
    let (model, queries, built, path) = {
        let embedder = ctx.embedder.load()?;
        let model = EmbeddingModel { id: embedder.model_id().to_string(), dim: embedder.dim() };
        let path = args.dir.join(format!("cache-v1-{}x{}-{}.db", args.users, args.per_user, model.id.replace('/', "_")));
        let built = !path.exists();
        if built {
            build(&path, &args, &model, embedder.as_ref(), &corpus)?;
        }
        let queries = questions.iter().map(|q| embedder.embed_query(q)).collect::<Result<Vec<_>, _>>()?;
        // The model goes before the baseline: the growth measured is the caches'.
        (model, queries, built, path)
    };
    let terms: Vec<Vec<String>> = questions.iter().map(|q| text::query_terms(q)).collect();
    let search = |store: &SqliteStore, user: usize, round: usize| -> Result<()> {
        let scope = user_scope(user)?;
        let q = (user + round) % queries.len();
        store.dense_search(&scope, &model, &queries[q], &SearchFilter::default(), 50)?;
        store.lexical_search(&scope, &terms[q], &SearchFilter::default(), 50)?;
        Ok(())
    };
    // One user alone, with no limit: what its entries cost.
    let per_user_bytes = {
        let alone = SqliteStore::open_with(&path, StoreOptions { cache_budget: None })?;
        search(&alone, 0, 0)?;
        let stats = alone.cache_stats();
        PerUserBytes { vectors: stats.vectors.bytes, terms: stats.terms.bytes }
    };
    let options = ctx.store_options();
    let budget_bytes = options.cache_budget.unwrap_or(u64::MAX);
    let store = SqliteStore::open_with(&path, options)?;
    let baseline = rss();
    let mb = |bytes: u64| bytes as f64 / (1024.0 * 1024.0);
    if !ctx.cli_json {
        println!(
            "{} users x {} memories ({}), budget {:.0} MiB; one user alone: vectors {:.2} MiB, BM25 {:.2} MiB",
            args.users,
            args.per_user,
            model.id,
            mb(budget_bytes),
            mb(per_user_bytes.vectors),
            mb(per_user_bytes.terms)
        );
        if let Some(b) = baseline {
            println!("baseline: VmRSS {:.0} MiB (anon {:.0}, file {:.0})", b.vm_rss_mb, b.rss_anon_mb, b.rss_file_mb);
        }
        println!("{:>5} {:>9} {:>8} {:>10} {:>7} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9}", "pass", "searches", "seconds", "cache MiB", "users", "hits", "misses", "evictions", "VmRSS", "RssAnon", "RssFile");
    }
    let mut report = CacheReport { benchmark: "cache", model: model.id.clone(), users: args.users, per_user: args.per_user, built, budget_bytes, per_user_bytes, baseline, results: Vec::new() };
    for pass in 1..=args.passes {
        // A different order each pass (a fixed multiplicative shuffle), so eviction is not
        // always of the user just about to come again.
        let step = [7919, 104_729, 1_299_709][pass % 3] % args.users.max(1);
        let step = if gcd(step, args.users) == 1 { step } else { 1 };
        let order: Vec<usize> = (0..args.users).map(|i| (i * step + pass) % args.users).collect();
        let start = Instant::now();
        let chunk = args.users.div_ceil(args.clients);
        std::thread::scope(|s| -> Result<()> {
            let workers: Vec<_> = order.chunks(chunk).map(|users| s.spawn(|| users.iter().try_for_each(|&u| search(&store, u, pass)))).collect();
            for worker in workers {
                worker.join().map_err(|_| anyhow::anyhow!("a search thread panicked"))??;
            }
            Ok(())
        })?;
        let seconds = start.elapsed().as_secs_f64();
        let row = CachePass { pass, searches: 2 * args.users, seconds, cache: store.cache_stats().into(), rss: rss() };
        if !ctx.cli_json {
            let r = row.rss.map_or(["-".to_string(), "-".to_string(), "-".to_string()], |r| [r.vm_rss_mb, r.rss_anon_mb, r.rss_file_mb].map(|x| format!("{x:.0}")));
            println!(
                "{:>5} {:>9} {:>8.2} {:>10.1} {:>7} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9}",
                pass,
                row.searches,
                seconds,
                mb(row.cache.bytes),
                row.cache.vectors_users,
                row.cache.hits,
                row.cache.misses,
                row.cache.evictions,
                r[0],
                r[1],
                r[2]
            );
        }
        report.results.push(row);
    }
    Ok(report)
}

fn gcd(a: usize, b: usize) -> usize {
    if b == 0 { a } else { gcd(b, a % b) }
}

/// Builds the database under a temporary name and renames it when complete, so an
/// interrupted build is never reused as a finished one.
fn build(path: &Path, args: &CacheArgs, model: &EmbeddingModel, embedder: &dyn membank_embed::Embedder, corpus: &[String]) -> Result<()> {
    let partial = path.with_extension("partial");
    for suffix in ["", "-wal", "-shm"] {
        let _ = std::fs::remove_file(format!("{}{suffix}", partial.display()));
    }
    let start = Instant::now();
    let bar = Bar::new();
    let mut base = Vec::with_capacity(corpus.len());
    for chunk in corpus.chunks(256) {
        base.extend(embedder.embed(&chunk.iter().map(String::as_str).collect::<Vec<_>>())?);
        bar.update("embedding", base.len(), corpus.len());
    }
    {
        let store = SqliteStore::open_with(&partial, StoreOptions { cache_budget: Some(0) })?;
        let start_day = chrono::Utc::now() - chrono::Duration::days(365);
        let n = corpus.len();
        for u in 0..args.users {
            let scope = user_scope(u)?;
            store.ensure_user(&scope.tenant, &scope.user, start_day)?;
            let batch = (0..args.per_user)
                .map(|i| {
                    // Two sentences chosen by user and position: every user's texts and
                    // vectors differ, from the same real vocabulary and vector space.
                    let a = (u * 7919 + i * 31) % n;
                    let b = (u * 104_729 + i * 17 + 1) % n;
                    let mut v: Vec<f32> = base[a].iter().zip(&base[b]).map(|(x, y)| x + y).collect();
                    let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt().max(1e-6);
                    v.iter_mut().for_each(|x| *x /= norm);
                    let at = start_day + chrono::Duration::minutes((i * 5) as i64);
                    NewMemory { memory: synthetic_memory(&scope, Kind::Turn, format!("{} {}", corpus[a], corpus[b]), at), embedding: Some((model.clone(), v)) }
                })
                .collect();
            store.insert_many(batch)?;
            bar.update("inserting users", u + 1, args.users);
        }
    }
    bar.finish();
    // Closing the last connection checkpointed the WAL into the file; were one left, it
    // goes with the file.
    let wal = format!("{}-wal", partial.display());
    if Path::new(&wal).exists() {
        std::fs::rename(&wal, format!("{}-wal", path.display())).with_context(|| format!("cannot rename {wal}"))?;
    }
    std::fs::rename(&partial, path).with_context(|| format!("cannot rename {} to {}", partial.display(), path.display()))?;
    eprintln!("built {} users x {} memories in {:.1}s", args.users, args.per_user, start.elapsed().as_secs_f64());
    Ok(())
}
