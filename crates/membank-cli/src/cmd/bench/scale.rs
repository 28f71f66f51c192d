//! `membank bench scale`: many users on SQLite, PostgreSQL and a Citus cluster in the same
//! run: recall over real HTTP, ingestion through `POST /turns`, and `membank migrate`'s rate
//! into each server.
//!
//! The dataset is `bench cache`'s: U users × M memories in a SQLite file of `--dir`, each
//! memory a pair of real sentences with the normalised sum of their real vectors (built
//! once). `membank migrate` (this binary, run as a child process, so the rate is the
//! command's own) copies it into a new database of the `--postgres` server and into a new
//! database of the `--citus` coordinator, made a cluster of the same nodes
//! (`TestDatabase`), where membank creates its schema distributed on first open. The copies
//! are kept between runs, recorded in `--dir` ([`pg_dataset`]), unless `--no-keep`; a
//! complete copy is reused without migrating again, an interrupted one is resumed by the
//! same migrate.
//!
//! One `membank_server::serve` per backend listens on 127.0.0.1:0 in this process (its own
//! Tokio runtime), with the configured cache budget (`--cache-mb`), maintenance off and no
//! rate limit; the load generator is `bench http`'s (threads with one keep-alive connection
//! each). Each request recalls a user drawn by a fixed hash of (client, request) from all
//! U users, so a server's caches see the whole user base, as a server of many users does:
//! with the default budget not every user stays cached, and a recall of a user not in
//! cache loads that user's rows first (on Citus, from the worker holding the user's shard,
//! through the coordinator). First every user is recalled once in order by 4 clients
//! ("first_touch": each recall loads its user). Then at each `--clients` level the
//! backends take turns in blocks, A B C then C B A, on the same users and queries, so a
//! drift of the machine's load weighs on all alike. Ingestion last: `--ingest` turns per
//! backend and level through `POST /v1/users/{user}/turns` (embedding included), spread
//! over 100 users, into scratch stores (a temporary SQLite file, temporary databases
//! dropped at the end), taking turns the same way.
//!
//! It measures; it asserts nothing. Only loopback is contacted by the load generator, and
//! every loop is bounded by a count. On one machine the coordinator, the workers and the
//! servers share its cores: the numbers say what the distribution costs, not what more
//! machines would add.

use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context as _, Result, bail};
use membank_engine::Engine;
use membank_engine::core::{InvalidInput, SystemClock, TenantId};
use membank_server::{AppState, AuthMode, RateLimit, ServerConfig};
use membank_store::postgres::testing::{TestDatabase, citus_workers};
use membank_store::{Backend, EmbeddingModel, PgOptions, PgStore, SqliteStore, Store, StoreOptions};
use serde::Serialize;

use super::cache::{build, user_scope, users_dataset_path};
use super::dataset::{Dataset, sentences};
use super::http::Connection;
use super::pg_dataset::pg_dataset;
use super::stats::Latency;
use crate::args::bench::ScaleArgs;
use crate::context::Context;

/// `bench scale --json`.
#[derive(Debug, Serialize)]
pub struct ScaleReport {
    /// Always `"scale"`.
    pub benchmark: &'static str,
    /// The embedder's model id.
    pub model: String,
    /// Users of the dataset.
    pub users: usize,
    /// Memories per user.
    pub per_user: usize,
    /// k of each recall.
    pub k: usize,
    /// Each server's search-cache budget (`--cache-mb`), in bytes.
    pub cache_budget_bytes: Option<u64>,
    /// The embedding kernel paths.
    pub kernels: super::EmbedKernels,
    /// The dense scan's kernels.
    pub scan_kernels: super::paths::ScanKernels,
    /// The backends measured, SQLite first.
    pub backends: Vec<BackendInfo>,
    /// Each backend's dataset: SQLite's build, the others' `migrate` (what this run added).
    pub datasets: Vec<Dataset>,
    /// Every user recalled once, in order, by 4 clients: each recall loads its user.
    pub first_touch: Vec<LevelResult>,
    /// One row per concurrency level and backend.
    pub results: Vec<LevelResult>,
    /// Each server's search caches at the end of the recalls.
    pub cache: Vec<CacheUse>,
    /// Ingestion through `POST /turns`, per concurrency level and backend (empty with
    /// `--ingest 0`).
    pub ingest: Vec<IngestLevel>,
}

/// One backend of the run.
#[derive(Debug, Serialize)]
pub struct BackendInfo {
    /// `"sqlite"`, `"postgres"` or `"citus"`.
    pub backend: &'static str,
    /// The SQLite file, or the database's URL without its password.
    pub location: String,
    /// Citus: the coordinator's active workers; otherwise null.
    pub workers: Option<usize>,
}

/// Recalls at one concurrency level on one backend.
#[derive(Debug, Serialize)]
pub struct LevelResult {
    /// `"sqlite"`, `"postgres"` or `"citus"`.
    pub backend: &'static str,
    /// Concurrent clients, each on one keep-alive connection.
    pub clients: usize,
    /// Requests timed.
    pub requests: usize,
    /// Per-request latency, as a client sees it.
    pub latency: Latency,
    /// Requests per second of wall time over all clients.
    pub recalls_per_second: f64,
}

/// A server's search caches after the recalls.
#[derive(Debug, Serialize)]
pub struct CacheUse {
    /// The backend.
    pub backend: &'static str,
    /// Searches served from a kept user (both caches).
    pub hits: u64,
    /// Searches that loaded a user (both caches).
    pub misses: u64,
    /// Users dropped to stay within the budget.
    pub evictions: u64,
}

/// Ingestion at one concurrency level on one backend.
#[derive(Debug, Serialize)]
pub struct IngestLevel {
    /// The backend.
    pub backend: &'static str,
    /// Concurrent clients.
    pub clients: usize,
    /// Turns stored (each answered 201).
    pub turns: usize,
    /// Wall time of this backend's blocks.
    pub seconds: f64,
    /// Turns per second of that time.
    pub turns_per_second: f64,
    /// Latency of one `POST /turns`.
    pub latency: Latency,
}

/// A server of the run.
struct Target {
    backend: &'static str,
    addr: SocketAddr,
    store: Arc<dyn Backend>,
}

/// A running server: what stops it, and its task.
type Running = (tokio::sync::oneshot::Sender<()>, tokio::task::JoinHandle<Result<(), membank_server::ServeError>>);

/// The servers of one phase, stopped (all of them, whatever happened) by [`Servers::stop`].
struct Servers {
    runtime: tokio::runtime::Runtime,
    running: Vec<Running>,
    targets: Vec<Target>,
}

impl Servers {
    fn new() -> Result<Self> {
        Ok(Self {
            runtime: tokio::runtime::Builder::new_multi_thread().enable_all().build()?,
            running: Vec::new(),
            targets: Vec::new(),
        })
    }

    /// Serves `store` on 127.0.0.1:0 with `embedder` behind the engine.
    fn add(
        &mut self,
        ctx: &Context,
        backend: &'static str,
        store: Arc<dyn Backend>,
        embedder: Arc<dyn membank_embed::Embedder>,
    ) -> Result<()> {
        let engine = Arc::new(Engine::new(store.clone(), embedder, Arc::new(SystemClock), ctx.engine_config.clone())?);
        let mut config = ServerConfig::new(TenantId::default_tenant(), AuthMode::LoopbackOpen);
        // The bench measures recall and ingestion, not a maintenance cycle.
        config.maintenance.enabled = false;
        config.rate_limit = RateLimit { per_second: 0.0, burst: 1.0 };
        let state = AppState::new(engine, store.clone(), config);
        let listener = self.runtime.block_on(tokio::net::TcpListener::bind("127.0.0.1:0"))?;
        let addr = listener.local_addr()?;
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let server = self.runtime.spawn(membank_server::serve(listener, state, async move {
            let _ = stopped.await;
        }));
        self.running.push((stop, server));
        self.targets.push(Target { backend, addr, store });
        Ok(())
    }

    fn stop(self) -> Result<()> {
        let mut first_error = None;
        for (stop, server) in self.running {
            let _ = stop.send(());
            let outcome = self.runtime.block_on(server);
            if first_error.is_none() {
                first_error = match outcome {
                    Ok(Ok(())) => None,
                    Ok(Err(err)) => Some(anyhow::Error::new(err)),
                    Err(err) => Some(anyhow::Error::new(err)),
                };
            }
        }
        first_error.map_or(Ok(()), Err)
    }
}

/// Runs the benchmark.
pub fn run(ctx: &Context, args: ScaleArgs) -> Result<ScaleReport> {
    let servers_asked = [("postgres", &args.postgres), ("citus", &args.citus)];
    let mut remote: Vec<(&'static str, String, Option<usize>)> = Vec::new();
    for (backend, url) in servers_asked {
        let Some(url) = url else { continue };
        if !(url.starts_with("postgres://") || url.starts_with("postgresql://")) {
            return Err(InvalidInput::new(backend, "must be a postgres:// or postgresql:// URL").into());
        }
        let workers = citus_workers(url).with_context(|| {
            format!("cannot use the --{backend} database {}; nothing was measured", membank_store::redact(url))
        })?;
        match (backend, workers) {
            ("citus", None) => {
                return Err(InvalidInput::new(
                    "citus",
                    format!(
                        "{} is not a Citus coordinator (no citus extension in that database; scripts/citus-dev.sh start prints one)",
                        membank_store::redact(url)
                    ),
                )
                .into());
            }
            ("postgres", Some(_)) => {
                return Err(InvalidInput::new(
                    "postgres",
                    format!("{} is a Citus coordinator: pass it as --citus", membank_store::redact(url)),
                )
                .into());
            }
            _ => remote.push((backend, url.clone(), workers)),
        }
    }
    std::fs::create_dir_all(&args.dir).with_context(|| format!("cannot create {}", args.dir.display()))?;
    let embedder = ctx.embedder.load()?;
    let model = EmbeddingModel { id: embedder.model_id().to_string(), dim: embedder.dim() };
    let corpus = sentences(&args.data, 4000)?;
    let path = users_dataset_path(&args.dir, args.users, args.per_user, &model);
    let start = Instant::now();
    let built = !path.exists();
    if built {
        build(&path, args.users, args.per_user, &model, embedder.as_ref(), &corpus)?;
    }
    let mut datasets = vec![Dataset::new(
        "sqlite",
        path.display().to_string(),
        if built { args.users * args.per_user } else { 0 },
        start.elapsed().as_secs_f64(),
    )];
    let mut backends = vec![BackendInfo { backend: "sqlite", location: path.display().to_string(), workers: None }];

    // The copies: migrate into each server (or find the complete copy of an earlier run).
    let store_options = ctx.store_options();
    let mut copies: Vec<(&'static str, Arc<dyn Backend>)> = Vec::new();
    let mut scratch_copies: Vec<TestDatabase> = Vec::new();
    for (backend, url, workers) in &remote {
        let (db_url, location, complete) = if args.no_keep {
            let database = TestDatabase::try_create(url, &format!("bench_scale_{backend}"))
                .with_context(|| format!("cannot create a database on {}", membank_store::redact(url)))?;
            let out = (database.url.clone(), membank_store::redact(&database.url), false);
            scratch_copies.push(database);
            out
        } else {
            let source = SqliteStore::open_with(&path, StoreOptions { cache_budget: Some(0), ..Default::default() })?;
            let first = super::pg_dataset::first_memory(&source, &user_scope(0)?)?
                .context("the SQLite dataset has no memory")?;
            let key = format!("scale-{}x{}-{}", args.users, args.per_user, model.id.replace('/', "_"));
            let dataset = pg_dataset(url, &args.dir, &key, &first.to_string())?;
            let complete = complete_copy(&source, dataset.store.as_ref(), args.users)?;
            (dataset.url, dataset.location, complete)
        };
        let (added, seconds) = if complete {
            eprintln!("{backend}: {location} holds the whole dataset; reused");
            (0, 0.0)
        } else {
            migrate(&path, &db_url, backend)?
        };
        datasets.push(Dataset::new(backend, location.clone(), added, seconds));
        backends.push(BackendInfo { backend, location, workers: *workers });
        let store = PgStore::open_with(
            &db_url,
            PgOptions {
                cache_budget: store_options.cache_budget,
                dense_screen: store_options.dense_screen,
                ..Default::default()
            },
        )
        .with_context(|| format!("cannot open the {backend} copy"))?;
        copies.push((backend, Arc::new(store)));
    }

    let questions = super::dataset::questions(&corpus, 500);
    let batched: Arc<dyn membank_embed::Embedder> =
        Arc::new(membank_embed::BatchingEmbedder::new(embedder.clone(), membank_embed::BatchOptions::default())?);
    let mut report = ScaleReport {
        benchmark: "scale",
        model: model.id.clone(),
        users: args.users,
        per_user: args.per_user,
        k: args.k,
        cache_budget_bytes: store_options.cache_budget,
        kernels: super::embed_kernels(),
        scan_kernels: super::paths::scan(),
        backends,
        datasets,
        first_touch: Vec::new(),
        results: Vec::new(),
        cache: Vec::new(),
        ingest: Vec::new(),
    };
    if !ctx.cli_json {
        print_start(&report);
    }

    // Recall.
    let mut servers = Servers::new()?;
    let started = (|| -> Result<()> {
        servers.add(ctx, "sqlite", Arc::new(SqliteStore::open_with(&path, store_options)?), batched.clone())?;
        for (backend, store) in &copies {
            servers.add(ctx, backend, store.clone(), batched.clone())?;
        }
        Ok(())
    })();
    let measured = started.and_then(|()| recalls(ctx, &args, &servers.targets, &questions, &mut report));
    for target in &servers.targets {
        let stats = target.store.cache_stats();
        report.cache.push(CacheUse {
            backend: target.backend,
            hits: stats.vectors.hits + stats.terms.hits,
            misses: stats.vectors.misses + stats.terms.misses,
            evictions: stats.vectors.evictions + stats.terms.evictions,
        });
    }
    let stopped = servers.stop();
    measured?;
    stopped?;
    drop(copies);
    drop(scratch_copies);
    if !ctx.cli_json {
        print_cache(&report.cache);
    }

    // Ingestion, into scratch stores.
    if args.ingest > 0 {
        let scratch = tempfile::tempdir().context("cannot make a scratch directory")?;
        let mut databases = Vec::new();
        let mut servers = Servers::new()?;
        let started = (|| -> Result<()> {
            let sqlite = SqliteStore::open_with(scratch.path().join("ingest.db"), store_options)?;
            servers.add(ctx, "sqlite", Arc::new(sqlite), batched.clone())?;
            for (backend, url, _) in &remote {
                let database = TestDatabase::try_create(url, &format!("bench_ingest_{backend}"))
                    .with_context(|| format!("cannot create a scratch database on {}", membank_store::redact(url)))?;
                let store = PgStore::open_with(
                    &database.url,
                    PgOptions { cache_budget: store_options.cache_budget, ..Default::default() },
                )?;
                databases.push(database);
                servers.add(ctx, backend, Arc::new(store), batched.clone())?;
            }
            Ok(())
        })();
        let measured = started.and_then(|()| ingest(ctx, &args, &servers.targets, &corpus, &mut report));
        let stopped = servers.stop();
        measured?;
        stopped?;
        // The stores are closed (the servers are gone); now the scratch databases go.
        drop(databases);
    }
    Ok(report)
}

/// Whether `target` holds every one of the dataset's users with as many memories as the
/// source (counted; `migrate` verifies row by row when it copies).
fn complete_copy(source: &dyn Store, target: &dyn Store, users: usize) -> Result<bool> {
    if target.all_users()?.len() != users {
        return Ok(false);
    }
    for u in [0, users / 2, users - 1] {
        let scope = user_scope(u)?;
        if source.counts(&scope)? != target.counts(&scope)? {
            return Ok(false);
        }
    }
    Ok(true)
}

/// Runs `membank --json migrate --from <path> --to <url>` (this binary) and returns the
/// memories it copied and its whole time (checks, copy and verification).
fn migrate(path: &Path, url: &str, backend: &str) -> Result<(usize, f64)> {
    let exe = std::env::current_exe().context("cannot find this binary to run migrate")?;
    eprintln!("{backend}: membank migrate from the SQLite dataset (progress below)");
    let out = std::process::Command::new(exe)
        .arg("--json")
        .arg("migrate")
        .arg("--from")
        .arg(path)
        .arg("--to")
        .arg(url)
        .stderr(std::process::Stdio::inherit())
        .output()
        .context("cannot run membank migrate")?;
    if !out.status.success() {
        bail!("membank migrate into the {backend} database failed ({}); its message is above", out.status);
    }
    let report: serde_json::Value =
        serde_json::from_slice(&out.stdout).context("membank migrate printed no JSON report")?;
    let memories = report["memories"].as_u64().context("migrate's report has no \"memories\"")?;
    let seconds = report["seconds"].as_f64().context("migrate's report has no \"seconds\"")?;
    eprintln!("{backend}: migrated {memories} memories in {seconds:.1} s");
    Ok((usize::try_from(memories).unwrap_or(usize::MAX), seconds))
}

/// The user of the `i`-th request of client `c`: a fixed hash, spread over all users.
fn user_of(c: usize, i: usize, users: usize) -> usize {
    let mut x = (c as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ (i as u64).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    x ^= x >> 31;
    x = x.wrapping_mul(0x94D0_49BB_1331_11EB);
    x ^= x >> 29;
    usize::try_from(x % users as u64).unwrap_or(0)
}

/// One level of load on every target, the targets taking turns in blocks A B C, C B A, each
/// block half of each client's `per_client` requests; request j of client c is `next(c, j)`
/// (none: that client is done), sent with `send`. Returns each target's latencies and the
/// wall time of its blocks.
fn in_turns<N, S>(
    targets: &[Target],
    clients: usize,
    per_client: usize,
    next: N,
    send: S,
) -> Result<Vec<(Vec<Duration>, f64)>>
where
    N: Fn(usize, usize) -> Option<(String, usize)> + Sync,
    S: Fn(&mut Connection, &str, usize) -> Result<()> + Sync,
{
    let half = per_client / 2;
    let mut order: Vec<(usize, usize, usize)> = (0..targets.len()).map(|t| (t, 0, half)).collect();
    order.extend((0..targets.len()).rev().map(|t| (t, half, per_client - half)));
    let mut out: Vec<(Vec<Duration>, f64)> = vec![(Vec::new(), 0.0); targets.len()];
    for (t, first, n) in order.into_iter().filter(|&(_, _, n)| n > 0) {
        let (block, seconds) =
            load(targets[t].addr, clients, |c, i| if i < n { next(c, first + i) } else { None }, &send)?;
        out[t].0.extend(block);
        out[t].1 += seconds;
    }
    Ok(out)
}

/// The first touch of every user, then each level's turns.
fn recalls(
    ctx: &Context,
    args: &ScaleArgs,
    targets: &[Target],
    questions: &[String],
    report: &mut ScaleReport,
) -> Result<()> {
    // Every user once, in order, by 4 clients (client c takes users c, c + 4, …).
    let touch_clients = 4.min(args.users);
    for target in targets {
        let (times, seconds) = load(
            target.addr,
            touch_clients,
            |c, i| {
                let user = c + i * touch_clients;
                (user < args.users).then(|| (format!("user-{user}"), (c * 31 + i) % questions.len()))
            },
            |conn, user, q| conn.recall_of(user, &questions[q], args.k, false),
        )?;
        let row = level_result(target.backend, touch_clients, times, seconds);
        if !ctx.cli_json {
            print_row("first touch", &row);
        }
        report.first_touch.push(row);
    }
    for &clients in &args.clients {
        let per_client = (args.requests / clients).max(10);
        let measured = in_turns(
            targets,
            clients,
            per_client,
            |c, j| Some((format!("user-{}", user_of(c, j, args.users)), (c * 31 + j) % questions.len())),
            |conn, user, q| conn.recall_of(user, &questions[q], args.k, false),
        )?;
        for (target, (times, wall)) in targets.iter().zip(measured) {
            let row = level_result(target.backend, clients, times, wall);
            if !ctx.cli_json {
                print_row("recall", &row);
            }
            report.results.push(row);
        }
    }
    Ok(())
}

/// `POST /turns` at each level, the backends taking turns.
fn ingest(
    ctx: &Context,
    args: &ScaleArgs,
    targets: &[Target],
    corpus: &[String],
    report: &mut ScaleReport,
) -> Result<()> {
    if !ctx.cli_json {
        println!("ingestion: POST /v1/users/{{user}}/turns (embedding included) over 100 users, into scratch stores");
        println!(
            "{:>8} {:>9} {:>8} {:>9} {:>10} {:>10} {:>10}",
            "clients", "backend", "turns", "seconds", "turns/s", "p50", "p95"
        );
    }
    for &clients in &args.clients {
        let per_client = args.ingest.div_ceil(clients);
        let measured = in_turns(
            targets,
            clients,
            per_client,
            |c, j| {
                (c * per_client + j < args.ingest)
                    .then(|| (format!("ingest-{}", (c * 31 + j) % 100), (c * 131 + j * 7) % corpus.len()))
            },
            |conn, user, s| {
                let body = serde_json::json!({ "user_text": corpus[s], "assistant_text": "Noted." }).to_string();
                let (code, answer) = conn.post(&format!("/v1/users/{user}/turns"), &body)?;
                if code != 201 {
                    bail!("POST /turns answered {code}: {}", String::from_utf8_lossy(&answer));
                }
                Ok(())
            },
        )?;
        for (target, (mut times, seconds)) in targets.iter().zip(measured) {
            let row = IngestLevel {
                backend: target.backend,
                clients,
                turns: times.len(),
                seconds,
                turns_per_second: times.len() as f64 / seconds,
                latency: Latency::of(&mut times),
            };
            if !ctx.cli_json {
                println!(
                    "{:>8} {:>9} {:>8} {:>9.2} {:>10.1} {:>10} {:>10}",
                    row.clients,
                    row.backend,
                    row.turns,
                    row.seconds,
                    row.turns_per_second,
                    format!("{:.2} ms", row.latency.p50_ms),
                    format!("{:.2} ms", row.latency.p95_ms)
                );
            }
            report.ingest.push(row);
        }
    }
    Ok(())
}

/// `clients` threads, each on its own connection, each sending the requests `next(c, i)`
/// names for i = 0, 1, … until it says `None`, through `send`. Returns each request's
/// latency and the wall time in seconds.
fn load<N, S>(addr: SocketAddr, clients: usize, next: N, send: S) -> Result<(Vec<Duration>, f64)>
where
    N: Fn(usize, usize) -> Option<(String, usize)> + Sync,
    S: Fn(&mut Connection, &str, usize) -> Result<()> + Sync,
{
    let start = Instant::now();
    let (next, send) = (&next, &send);
    let times = std::thread::scope(|scope| -> Result<Vec<Duration>> {
        let handles: Vec<_> = (0..clients)
            .map(|c| {
                scope.spawn(move || -> Result<Vec<Duration>> {
                    let mut conn = Connection::open(addr)?;
                    let mut times = Vec::new();
                    let mut i = 0;
                    while let Some((user, item)) = next(c, i) {
                        let t = Instant::now();
                        send(&mut conn, &user, item)?;
                        times.push(t.elapsed());
                        i += 1;
                    }
                    Ok(times)
                })
            })
            .collect();
        let mut times = Vec::new();
        for handle in handles {
            times.extend(handle.join().map_err(|_| anyhow::anyhow!("a client thread panicked"))??);
        }
        Ok(times)
    })?;
    Ok((times, start.elapsed().as_secs_f64()))
}

fn level_result(backend: &'static str, clients: usize, mut times: Vec<Duration>, seconds: f64) -> LevelResult {
    LevelResult {
        backend,
        clients,
        requests: times.len(),
        latency: Latency::of(&mut times),
        recalls_per_second: times.len() as f64 / seconds,
    }
}

fn print_start(report: &ScaleReport) {
    println!(
        "scale: {} users x {} memories, k = {}, recall and ingestion over HTTP on loopback (query embedding included), cache budget {} per server",
        report.users,
        report.per_user,
        report.k,
        report.cache_budget_bytes.map_or("unbounded".into(), |b| format!("{} MiB", b >> 20))
    );
    println!("{}", report.kernels);
    println!("{}", report.scan_kernels);
    for b in &report.backends {
        let workers = b.workers.map_or(String::new(), |w| format!(" ({w} workers)"));
        println!("{:>9}: {}{workers}", b.backend, b.location);
    }
    for d in &report.datasets {
        let how = if d.backend == "sqlite" { "built" } else { "migrated" };
        match (d.seconds, d.memories_per_second) {
            (Some(seconds), Some(rate)) => {
                println!("{:>9}: {} memories {how} in {seconds:.1} s ({rate:.0} memories/s)", d.backend, d.added)
            }
            _ => println!("{:>9}: dataset reused as it was", d.backend),
        }
    }
    println!(
        "{:>12} {:>8} {:>9} {:>9} {:>10} {:>10} {:>10} {:>12}",
        "", "clients", "backend", "requests", "p50", "p95", "p99", "recalls/s"
    );
}

fn print_row(what: &str, row: &LevelResult) {
    println!(
        "{what:>12} {:>8} {:>9} {:>9} {:>10} {:>10} {:>10} {:>12.1}",
        row.clients,
        row.backend,
        row.requests,
        format!("{:.2} ms", row.latency.p50_ms),
        format!("{:.2} ms", row.latency.p95_ms),
        format!("{:.2} ms", row.latency.p99_ms),
        row.recalls_per_second
    );
}

fn print_cache(cache: &[CacheUse]) {
    for c in cache {
        println!(
            "{:>9} search caches: {} hits, {} misses (a user loaded), {} evictions",
            c.backend, c.hits, c.misses, c.evictions
        );
    }
}
