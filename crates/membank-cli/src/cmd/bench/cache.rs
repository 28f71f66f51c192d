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
//!
//! With a `postgres://` `--db` it measures the PostgreSQL store too: the SQLite database is
//! built (or reused), its users are copied into a database of that server (kept between
//! runs, `bench::pg_dataset`), and then each backend is measured in a fresh process of its
//! own (this binary, run again with the hidden `--only sqlite|postgres` and `--json`), so
//! neither resident-memory figure carries the other's heap, the build's or the copy's. Both
//! stores keep their search caches under the same budget; the PostgreSQL store also holds
//! its pool of connections, and the database server's own memory is another process's and
//! not counted.
//! With `--json` it prints a [`CacheComparison`].

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

use anyhow::{Context as _, Result, bail};
use membank_engine::core::{Kind, Scope, TenantId, UserId, text};
use membank_store::{
    Backend, CacheStats, EmbeddingModel, Location, NewMemory, SearchFilter, SqliteStore, Store, StoreOptions,
};
use serde::{Deserialize, Serialize};

use super::dataset::{Dataset, sentences, synthetic_memory};
use super::pg_dataset::{copy_users, first_memory, pg_dataset, recorded_pg_dataset};
use crate::args::bench::CacheArgs;
use crate::context::Context;
use crate::progress::Bar;

/// What `bench cache --json` prints: one backend's report, or with a postgres:// `--db`
/// both backends'.
#[derive(Debug, Serialize)]
#[serde(untagged)]
pub enum CacheOutput {
    /// SQLite alone.
    One(CacheReport),
    /// SQLite and PostgreSQL.
    Both(CacheComparison),
}

/// `bench cache --json` with a postgres:// `--db`.
#[derive(Debug, Serialize)]
pub struct CacheComparison {
    /// Always `"cache"`.
    pub benchmark: &'static str,
    /// The embedder's model id.
    pub model: String,
    /// Users searched.
    pub users: usize,
    /// Memories per user.
    pub per_user: usize,
    /// The cache budget (`--cache-mb`) in bytes.
    pub budget_bytes: u64,
    /// Each backend's dataset and what this run added to it.
    pub datasets: Vec<Dataset>,
    /// Each backend measured in a process of its own, SQLite first; each as without
    /// PostgreSQL, with `"backend"`.
    pub backends: Vec<CacheReport>,
}

/// `bench cache --json`.
#[derive(Debug, Serialize, Deserialize)]
pub struct CacheReport {
    /// Always `"cache"`.
    pub benchmark: String,
    /// With a postgres:// `--db`: `"sqlite"` or `"postgres"`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub backend: Option<String>,
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
#[derive(Debug, Clone, Copy, Serialize, Deserialize)]
pub struct PerUserBytes {
    /// The vector cache's entry.
    pub vectors: u64,
    /// The BM25 cache's entry.
    pub terms: u64,
}

/// One pass over every user.
#[derive(Debug, Serialize, Deserialize)]
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
#[derive(Debug, Serialize, Deserialize)]
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
#[derive(Debug, Clone, Copy, Serialize, Deserialize)]
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
    Some(Rss {
        vm_rss_mb: field("VmRSS")?,
        rss_anon_mb: field("RssAnon")?,
        rss_file_mb: field("RssFile")?,
        vm_hwm_mb: field("VmHWM")?,
    })
}

/// The scope of the u-th user of a many-user dataset (`bench cache`, `bench scale`).
pub(super) fn user_scope(u: usize) -> Result<Scope> {
    Ok(Scope::user(TenantId::default_tenant(), UserId::new(&format!("user-{u}"))?))
}

/// Runs the benchmark.
pub fn run(ctx: &Context, args: CacheArgs) -> Result<CacheOutput> {
    match (&ctx.db, args.only.as_deref()) {
        (Location::Postgres(url), None) => Ok(CacheOutput::Both(compare(ctx, &args, url)?)),
        (Location::Postgres(url), Some("postgres")) => Ok(CacheOutput::One(measure(ctx, &args, Some(url))?)),
        (Location::Sqlite(_), Some("postgres")) => bail!("--only postgres needs a postgres:// --db"),
        _ => Ok(CacheOutput::One(measure(ctx, &args, None)?)),
    }
}

/// The SQLite database of these arguments and model.
fn sqlite_path(args: &CacheArgs, model: &EmbeddingModel) -> PathBuf {
    users_dataset_path(&args.dir, args.users, args.per_user, model)
}

/// The SQLite database of `users` × `per_user` memories of `model` in `dir`, shared by
/// `bench cache` and `bench scale` (each builds it with [`build`] when missing).
pub(super) fn users_dataset_path(dir: &Path, users: usize, per_user: usize, model: &EmbeddingModel) -> PathBuf {
    dir.join(format!("cache-v1-{users}x{per_user}-{}.db", model.id.replace('/', "_")))
}

/// The name under which the PostgreSQL copy of that database is recorded.
fn pg_key(args: &CacheArgs, model: &EmbeddingModel) -> String {
    format!("cache-{}x{}-{}", args.users, args.per_user, model.id.replace('/', "_"))
}

/// Measures one backend in this process: SQLite (building its database when missing), or
/// with `postgres` the PostgreSQL copy `compare` made on that server.
fn measure(ctx: &Context, args: &CacheArgs, postgres: Option<&str>) -> Result<CacheReport> {
    std::fs::create_dir_all(&args.dir).with_context(|| format!("cannot create {}", args.dir.display()))?;
    let corpus = sentences(&args.data, 4000)?;
    let questions: Vec<String> = super::dataset::questions(&corpus, 64);
    let (model, queries, built) = {
        let embedder = ctx.embedder.load()?;
        let model = EmbeddingModel { id: embedder.model_id().to_string(), dim: embedder.dim() };
        let path = sqlite_path(args, &model);
        let built = postgres.is_none() && !path.exists();
        if built {
            build(&path, args.users, args.per_user, &model, embedder.as_ref(), &corpus)?;
        }
        let queries = questions.iter().map(|q| embedder.embed_query(q)).collect::<Result<Vec<_>, _>>()?;
        // The model goes before the baseline: the growth measured is the caches'.
        (model, queries, built)
    };
    let path = sqlite_path(args, &model);
    let open = |options: StoreOptions| -> Result<Arc<dyn Backend>> {
        Ok(match postgres {
            Some(url) => recorded_pg_dataset(url, &args.dir, &pg_key(args, &model), options)?.store,
            None => Arc::new(SqliteStore::open_with(&path, options)?),
        })
    };
    let terms: Vec<Vec<String>> = questions.iter().map(|q| text::query_terms(q)).collect();
    let search = |store: &dyn Backend, user: usize, round: usize| -> Result<()> {
        let scope = user_scope(user)?;
        let q = (user + round) % queries.len();
        store.dense_search(&scope, &model, &queries[q], &SearchFilter::default(), 50)?;
        store.lexical_search(&scope, &terms[q], &SearchFilter::default(), 50)?;
        Ok(())
    };
    // One user alone, with no limit: what its entries cost.
    let per_user_bytes = {
        let alone = open(StoreOptions { cache_budget: None, ..Default::default() })?;
        search(alone.as_ref(), 0, 0)?;
        let stats = alone.cache_stats();
        PerUserBytes { vectors: stats.vectors.bytes, terms: stats.terms.bytes }
    };
    let options = ctx.store_options();
    let budget_bytes = options.cache_budget.unwrap_or(u64::MAX);
    let store = open(options)?;
    let baseline = rss();
    let mut report = CacheReport {
        benchmark: "cache".into(),
        backend: args.only.clone(),
        model: model.id.clone(),
        users: args.users,
        per_user: args.per_user,
        built,
        budget_bytes,
        per_user_bytes,
        baseline,
        results: Vec::new(),
    };
    if !ctx.cli_json {
        print_header(&report);
    }
    for pass in 1..=args.passes {
        // A different order each pass (a fixed multiplicative shuffle), so eviction is not
        // always of the user just about to come again.
        let step = [7919, 104_729, 1_299_709][pass % 3] % args.users.max(1);
        let step = if gcd(step, args.users) == 1 { step } else { 1 };
        let order: Vec<usize> = (0..args.users).map(|i| (i * step + pass) % args.users).collect();
        let start = Instant::now();
        let chunk = args.users.div_ceil(args.clients);
        std::thread::scope(|s| -> Result<()> {
            let workers: Vec<_> = order
                .chunks(chunk)
                .map(|users| s.spawn(|| users.iter().try_for_each(|&u| search(store.as_ref(), u, pass))))
                .collect();
            for worker in workers {
                worker.join().map_err(|_| anyhow::anyhow!("a search thread panicked"))??;
            }
            Ok(())
        })?;
        let seconds = start.elapsed().as_secs_f64();
        let row = CachePass { pass, searches: 2 * args.users, seconds, cache: store.cache_stats().into(), rss: rss() };
        if !ctx.cli_json {
            print_pass(&row);
        }
        report.results.push(row);
    }
    Ok(report)
}

/// Builds or reuses the SQLite database, copies it into PostgreSQL (or finds the copy of
/// an earlier run), then measures each backend in a process of its own.
fn compare(ctx: &Context, args: &CacheArgs, url: &str) -> Result<CacheComparison> {
    std::fs::create_dir_all(&args.dir).with_context(|| format!("cannot create {}", args.dir.display()))?;
    let (model, path, sqlite) = {
        let embedder = ctx.embedder.load()?;
        let model = EmbeddingModel { id: embedder.model_id().to_string(), dim: embedder.dim() };
        let path = sqlite_path(args, &model);
        let start = Instant::now();
        let built = !path.exists();
        if built {
            build(&path, args.users, args.per_user, &model, embedder.as_ref(), &sentences(&args.data, 4000)?)?;
        }
        let sqlite = Dataset::new(
            "sqlite",
            path.display().to_string(),
            if built { args.users * args.per_user } else { 0 },
            start.elapsed().as_secs_f64(),
        );
        (model, path, sqlite)
    };
    let postgres = {
        let source = SqliteStore::open_with(&path, StoreOptions { cache_budget: Some(0), ..Default::default() })?;
        let first = first_memory(&source, &user_scope(0)?)?.context("the SQLite dataset has no memory")?;
        let dataset = pg_dataset(url, &args.dir, &pg_key(args, &model), &first.to_string())?;
        let scopes = (0..args.users).map(user_scope).collect::<Result<Vec<_>>>()?;
        let start = Instant::now();
        let copied = copy_users(&source, dataset.store.as_ref(), &scopes)?;
        if copied > 0 {
            eprintln!("copied {copied} memories to PostgreSQL in {:.1}s", start.elapsed().as_secs_f64());
        }
        Dataset::new("postgres", dataset.location, copied, start.elapsed().as_secs_f64())
    };
    let mut comparison = CacheComparison {
        benchmark: "cache",
        model: model.id.clone(),
        users: args.users,
        per_user: args.per_user,
        budget_bytes: ctx.store_options().cache_budget.unwrap_or(u64::MAX),
        datasets: vec![sqlite, postgres],
        backends: Vec::new(),
    };
    for backend in ["sqlite", "postgres"] {
        let report = measure_in_child(ctx, backend)?;
        if !ctx.cli_json {
            print_header(&report);
            report.results.iter().for_each(print_pass);
        }
        comparison.backends.push(report);
    }
    if !ctx.cli_json {
        for d in &comparison.datasets {
            match (d.seconds, d.memories_per_second) {
                (Some(seconds), Some(rate)) => println!(
                    "{} dataset {}: {} memories added in {seconds:.1} s ({rate:.0} memories/s)",
                    d.backend, d.location, d.added
                ),
                _ => println!("{} dataset {}: reused as it was", d.backend, d.location),
            }
        }
        let last = |i: usize| {
            comparison
                .backends
                .get(i)
                .and_then(|r| r.results.last())
                .and_then(|p| p.rss)
                .map_or("-".to_string(), |r| format!("{:.0} MiB", r.vm_rss_mb))
        };
        println!(
            "VmRSS after the last pass: SQLite {}, PostgreSQL {} (budget {:.0} MiB; each in a process of its own; the PostgreSQL server's memory is not counted)",
            last(0),
            last(1),
            comparison.budget_bytes as f64 / (1024.0 * 1024.0)
        );
    }
    Ok(comparison)
}

/// Runs this command again as a child measuring one backend alone (`--only`, `--json`) and
/// reads its report. Its progress goes to our standard error.
fn measure_in_child(ctx: &Context, backend: &str) -> Result<CacheReport> {
    // This very program: on Linux through /proc, which still runs it when a rebuild has
    // replaced the file meanwhile (another binary's numbers would not be this run's).
    let exe = if cfg!(target_os = "linux") {
        PathBuf::from("/proc/self/exe")
    } else {
        std::env::current_exe().context("cannot find this program to run it again")?
    };
    let mut command = std::process::Command::new(exe);
    command.args(std::env::args_os().skip(1)).args(["--only", backend]);
    if !ctx.cli_json {
        command.arg("--json");
    }
    command.stdin(std::process::Stdio::null()).stderr(std::process::Stdio::inherit());
    let output = command.output().with_context(|| format!("cannot run the {backend} measurement"))?;
    if !output.status.success() {
        bail!("the {backend} measurement failed ({})", output.status);
    }
    let mut report: CacheReport = serde_json::from_slice(&output.stdout)
        .with_context(|| format!("the {backend} measurement printed no report"))?;
    report.backend = Some(backend.to_string());
    Ok(report)
}

fn mb(bytes: u64) -> f64 {
    bytes as f64 / (1024.0 * 1024.0)
}

/// The lines before the passes' table.
fn print_header(report: &CacheReport) {
    let backend = report.backend.as_deref().map_or(String::new(), |b| format!("{b}: "));
    println!(
        "{backend}{} users x {} memories ({}), budget {:.0} MiB; one user alone: vectors {:.2} MiB, BM25 {:.2} MiB",
        report.users,
        report.per_user,
        report.model,
        mb(report.budget_bytes),
        mb(report.per_user_bytes.vectors),
        mb(report.per_user_bytes.terms)
    );
    if let Some(b) = report.baseline {
        println!("baseline: VmRSS {:.0} MiB (anon {:.0}, file {:.0})", b.vm_rss_mb, b.rss_anon_mb, b.rss_file_mb);
    }
    println!(
        "{:>5} {:>9} {:>8} {:>10} {:>7} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9}",
        "pass",
        "searches",
        "seconds",
        "cache MiB",
        "users",
        "hits",
        "misses",
        "evictions",
        "VmRSS",
        "RssAnon",
        "RssFile"
    );
}

/// One row of the passes' table.
fn print_pass(row: &CachePass) {
    let r = row.rss.map_or(["-".to_string(), "-".to_string(), "-".to_string()], |r| {
        [r.vm_rss_mb, r.rss_anon_mb, r.rss_file_mb].map(|x| format!("{x:.0}"))
    });
    println!(
        "{:>5} {:>9} {:>8.2} {:>10.1} {:>7} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9}",
        row.pass,
        row.searches,
        row.seconds,
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

fn gcd(a: usize, b: usize) -> usize {
    if b == 0 { a } else { gcd(b, a % b) }
}

/// Builds the database under a temporary name and renames it when complete, so an
/// interrupted build is never reused as a finished one.
pub(super) fn build(
    path: &Path,
    users: usize,
    per_user: usize,
    model: &EmbeddingModel,
    embedder: &dyn membank_embed::Embedder,
    corpus: &[String],
) -> Result<()> {
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
        let store = SqliteStore::open_with(&partial, StoreOptions { cache_budget: Some(0), ..Default::default() })?;
        let start_day = chrono::Utc::now() - chrono::Duration::days(365);
        let n = corpus.len();
        for u in 0..users {
            let scope = user_scope(u)?;
            store.ensure_user(&scope.tenant, &scope.user, start_day)?;
            let batch = (0..per_user)
                .map(|i| {
                    // Two sentences chosen by user and position: every user's texts and
                    // vectors differ, from the same real vocabulary and vector space.
                    let a = (u * 7919 + i * 31) % n;
                    let b = (u * 104_729 + i * 17 + 1) % n;
                    let mut v: Vec<f32> = base[a].iter().zip(&base[b]).map(|(x, y)| x + y).collect();
                    let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt().max(1e-6);
                    v.iter_mut().for_each(|x| *x /= norm);
                    let at = start_day + chrono::Duration::minutes((i * 5) as i64);
                    NewMemory {
                        memory: synthetic_memory(&scope, Kind::Turn, format!("{} {}", corpus[a], corpus[b]), at),
                        embedding: Some((model.clone(), v)),
                    }
                })
                .collect();
            store.insert_many(batch)?;
            bar.update("inserting users", u + 1, users);
        }
    }
    bar.finish();
    // Closing the last connection checkpointed the WAL into the file; were one left, it
    // goes with the file.
    let wal = format!("{}-wal", partial.display());
    if Path::new(&wal).exists() {
        std::fs::rename(&wal, format!("{}-wal", path.display())).with_context(|| format!("cannot rename {wal}"))?;
    }
    std::fs::rename(&partial, path)
        .with_context(|| format!("cannot rename {} to {}", partial.display(), path.display()))?;
    eprintln!("built {} users x {} memories in {:.1}s", users, per_user, start.elapsed().as_secs_f64());
    Ok(())
}
