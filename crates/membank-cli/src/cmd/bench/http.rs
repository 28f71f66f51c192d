//! `membank bench http`: recall latency over real HTTP on loopback, query embedding
//! included, for one user with many memories, at several client concurrencies.
//!
//! The server is the real `membank_server::serve` on 127.0.0.1:0 in this process (its own
//! Tokio runtime); the load generator is our own: N threads, each with one keep-alive
//! HTTP/1.1 connection written by hand over `TcpStream`, so the numbers include request
//! parsing, auth middleware, the blocking-pool hop and JSON, and nothing of a client
//! library. It measures; it asserts nothing. Only loopback is ever contacted, and every
//! loop is bounded by the request count. With `--json` it prints an [`HttpReport`].
//!
//! With a `postgres://` `--db` it measures both backends in the same run: the SQLite
//! dataset is built (or reused) as without it, and copied into a database of that
//! PostgreSQL server (the same memories, ids, vectors and times; kept between runs, so a
//! second run copies nothing); a second server on 127.0.0.1:0 serves it, and at each
//! concurrency the two servers take turns in four blocks, SQLite, PostgreSQL, PostgreSQL,
//! SQLite (so a drift of the machine's load over the run weighs on both alike), on the same
//! queries. Each row names its backend, and the PostgreSQL row gives its p50 over SQLite's.
//! It then times ingestion on each backend into scratch stores (a temporary SQLite file, a
//! temporary database dropped at the end), one memory per call, the two interleaved: the
//! engine's `remember` (query embedding included) and the store's `insert` alone with
//! vectors computed beforehand.
//!
//! On SQLite alone it measures the two query paths side by side instead, on the same
//! store: the default one (queries embedded with the int8 weights and micro-batched, as
//! `serve` does) and the reference one (f32 weights, each query alone), one server each,
//! taking turns in the same four blocks, so the ratio of the two is clear.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context as _, Result, bail};
use membank_engine::core::{Kind, Scope, SystemClock, TenantId, UserId};
use membank_engine::{Engine, RememberTurn};
use membank_server::{AppState, AuthMode, RateLimit, ServerConfig};
use membank_store::postgres::testing::TestDatabase;
use membank_store::{Backend, EmbeddingModel, Location, NewMemory, PgStore, SqliteStore, Store};
use serde::Serialize;

use super::dataset::{Dataset, fill, sentences, synthetic_memory};
use super::pg_dataset::{copy_users, first_memory, pg_dataset};
use super::stats::Latency;
use crate::args::bench::HttpArgs;
use crate::context::Context;

/// `bench http --json`. Without a postgres:// `--db` the fields marked "with PostgreSQL"
/// are absent.
#[derive(Debug, Serialize)]
pub struct HttpReport {
    /// Always `"http"`.
    pub benchmark: &'static str,
    /// The embedder's model id.
    pub model: String,
    /// Threads of the local model; null for a remote embedder.
    pub model_threads: Option<usize>,
    /// Active memories of the bench user.
    pub memories: usize,
    /// k of each recall.
    pub k: usize,
    /// The servers' micro-batcher: most queries in one pass (1: none; `--query-batch`, as
    /// `serve` takes it).
    pub query_batch: u16,
    /// Its wait for more queries after the first of a batch, in µs (`--query-batch-wait-us`).
    pub query_batch_wait_us: u32,
    /// The dense scan's kernels (the servers run in this process's environment, on its CPU).
    pub scan_kernels: super::paths::ScanKernels,
    /// One entry per client concurrency (and strengthening mode), in the order asked; with
    /// PostgreSQL, one per backend too (SQLite first).
    pub results: Vec<HttpResult>,
    /// The embedding kernel paths (the CPU's best; a remote embedder ignores them).
    pub kernels: super::EmbedKernels,
    /// With PostgreSQL: PostgreSQL's latency over SQLite's, per concurrency and mode.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ratios: Option<Vec<HttpRatio>>,
    /// With SQLite alone and a local model: the f32 path's latency over the default
    /// path's (int8 weights, micro-batched), per concurrency and mode.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub path_ratios: Option<Vec<HttpRatio>>,
    /// With PostgreSQL: where each backend's dataset is and what this run added to it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub datasets: Option<Vec<Dataset>>,
    /// With PostgreSQL: ingestion, one memory per call, per backend and path (empty with
    /// `--ingest 0`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ingest: Option<Vec<IngestResult>>,
}

/// One concurrency level of `bench http` (on one backend).
#[derive(Debug, Serialize)]
pub struct HttpResult {
    /// With PostgreSQL: `"sqlite"` or `"postgres"`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub backend: Option<&'static str>,
    /// With SQLite alone and a local model: `"int8-batched"` (the default: int8 weights,
    /// queries micro-batched) or `"f32"` (the reference: f32 weights, each query alone).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub query_path: Option<&'static str>,
    /// Concurrent clients, each on one keep-alive connection.
    pub clients: usize,
    /// Whether the recalls strengthened what they returned.
    pub strengthen: bool,
    /// Requests timed.
    pub requests: usize,
    /// Per-request latency, as a client sees it.
    pub latency: Latency,
    /// Requests per second of wall time over all clients.
    pub recalls_per_second: f64,
}

/// The second server's latency over the first's at one concurrency level: PostgreSQL over
/// SQLite, or the f32 query path over the default one.
#[derive(Debug, Serialize)]
pub struct HttpRatio {
    /// Concurrent clients.
    pub clients: usize,
    /// Whether the recalls strengthened what they returned.
    pub strengthen: bool,
    /// p50 of the second (PostgreSQL; f32) / p50 of the first (SQLite; default path).
    pub p50: f64,
    /// The same for p95.
    pub p95: f64,
}

/// Ingestion on one backend through one path.
#[derive(Debug, Serialize)]
pub struct IngestResult {
    /// `"sqlite"` or `"postgres"`.
    pub backend: &'static str,
    /// `"remember"`: the engine's remember of one turn (embedding it, then one
    /// transaction); `"insert"`: the store's insert of one memory with its vector.
    pub path: &'static str,
    /// Memories stored.
    pub memories: usize,
    /// Seconds of all the calls (not of the other backend's between them).
    pub seconds: f64,
    /// Memories per second of those seconds.
    pub memories_per_second: f64,
    /// Latency of one call.
    pub latency: Latency,
}

/// What one server of the benchmark runs: its backend's label, its query path's label,
/// the store, and the embedder its recalls embed queries with.
type ServerSpec = (Option<&'static str>, Option<&'static str>, Arc<dyn Backend>, Arc<dyn membank_embed::Embedder>);

/// A server of the benchmark, serving one backend on loopback.
struct Target {
    /// With PostgreSQL: which backend it serves.
    backend: Option<&'static str>,
    /// Without: which query path it embeds with.
    query_path: Option<&'static str>,
    addr: SocketAddr,
}

/// Runs the benchmark.
pub fn run(ctx: &Context, args: HttpArgs) -> Result<HttpReport> {
    let embedder = ctx.embedder.load()?;
    let model = EmbeddingModel { id: embedder.model_id().to_string(), dim: embedder.dim() };
    std::fs::create_dir_all(&args.dir).with_context(|| format!("cannot create {}", args.dir.display()))?;
    let corpus = sentences(&args.data, 4000)?;
    let path = args.dir.join(format!("recall-{}-{}.db", args.memories, model.id.replace('/', "_")));
    let store = Arc::new(SqliteStore::open_with(&path, ctx.store_options())?);
    let scope = Scope::user(TenantId::default_tenant(), UserId::new("bench")?);
    let have = store.counts(&scope)?.active as usize;
    let start = Instant::now();
    if have < args.memories {
        let distinct = if args.distinct == 0 { corpus.len() } else { args.distinct.min(corpus.len()) };
        fill(store.as_ref(), &scope, &model, embedder.as_ref(), &corpus[..distinct], have, args.memories)?;
        eprintln!("built {} memories in {:.1}s", args.memories - have, start.elapsed().as_secs_f64());
    }
    let sqlite_dataset = Dataset::new(
        "sqlite",
        path.display().to_string(),
        args.memories.saturating_sub(have),
        start.elapsed().as_secs_f64(),
    );
    let questions = super::dataset::questions(&corpus, 500);

    // The PostgreSQL copy of the same dataset, keyed by the SQLite build it copies.
    let postgres = match &ctx.db {
        Location::Postgres(url) => {
            let first = first_memory(store.as_ref(), &scope)?.context("the SQLite dataset has no memory")?;
            let key = format!("http-{}-{}", args.memories, model.id.replace('/', "_"));
            let dataset = pg_dataset(url, &args.dir, &key, &first.to_string())?;
            let start = Instant::now();
            let copied = copy_users(store.as_ref(), dataset.store.as_ref(), std::slice::from_ref(&scope))?;
            let seconds = start.elapsed().as_secs_f64();
            if copied > 0 {
                eprintln!("copied {copied} memories to PostgreSQL in {seconds:.1}s ({:.0}/s)", copied as f64 / seconds);
            }
            Some((url.clone(), dataset.store, Dataset::new("postgres", dataset.location, copied, seconds)))
        }
        Location::Sqlite(_) => None,
    };

    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build()?;
    let mut servers = Vec::new();
    let mut targets = Vec::new();
    // What `serve` embeds queries with: the configured model behind the micro-batcher, as
    // `serve --query-batch` and `--query-batch-wait-us` set it.
    let batched = crate::embedder::micro_batched(embedder.clone(), args.query_batch, args.query_batch_wait_us)?;
    let backends: Vec<ServerSpec> = match (&postgres, &ctx.embedder) {
        (Some((_, pg, _)), _) => vec![
            (Some("sqlite"), None, store.clone() as Arc<dyn Backend>, batched.clone()),
            (Some("postgres"), None, pg.clone() as Arc<dyn Backend>, batched.clone()),
        ],
        // The reference path beside the default one: the same model with f32 query weights,
        // each query alone.
        (None, crate::embedder::EmbedderChoice::Local { dir, expect, threads, .. }) => {
            let reference = crate::embedder::EmbedderChoice::Local {
                dir: dir.clone(),
                expect: *expect,
                threads: *threads,
                query_precision: membank_embed::QueryPrecision::F32,
            }
            .load()?;
            let f32_configured = matches!(
                ctx.embedder,
                crate::embedder::EmbedderChoice::Local { query_precision: membank_embed::QueryPrecision::F32, .. }
            );
            let default_path = match (f32_configured, args.query_batch > 1) {
                (true, true) => "f32-batched",
                (true, false) => "f32-unbatched",
                (false, true) => "int8-batched",
                (false, false) => "int8-unbatched",
            };
            vec![
                (None, Some(default_path), store.clone() as Arc<dyn Backend>, batched.clone()),
                (None, Some("f32"), store.clone() as Arc<dyn Backend>, reference),
            ]
        }
        (None, _) => vec![(None, None, store.clone() as Arc<dyn Backend>, batched.clone())],
    };
    for (backend, query_path, backend_store, embedder) in backends {
        let engine =
            Arc::new(Engine::new(backend_store.clone(), embedder, Arc::new(SystemClock), ctx.engine_config.clone())?);
        let mut config = ServerConfig::new(TenantId::default_tenant(), AuthMode::LoopbackOpen);
        // The bench measures recall, not a maintenance cycle archiving its memories mid-run.
        config.maintenance.enabled = false;
        config.rate_limit = RateLimit { per_second: 0.0, burst: 1.0 };
        let state = AppState::new(engine, backend_store, config);
        let listener = runtime.block_on(tokio::net::TcpListener::bind("127.0.0.1:0"))?;
        let addr = listener.local_addr()?;
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let server = runtime.spawn(membank_server::serve(listener, state, async move {
            let _ = stopped.await;
        }));
        servers.push((stop, server));
        targets.push(Target { backend, query_path, addr });
    }
    let measured = measure(ctx, &args, &model, &targets, &questions);
    // Every server is stopped, whether the measurement succeeded or not.
    for (stop, server) in servers {
        let _ = stop.send(());
        runtime.block_on(server)??;
    }
    let mut report = measured?;

    if let Some((url, _, pg_dataset)) = postgres {
        report.datasets = Some(vec![sqlite_dataset, pg_dataset]);
        let ingest = if args.ingest > 0 {
            ingest(ctx, embedder.clone(), &model, &corpus, args.ingest, &url)?
        } else {
            Vec::new()
        };
        if !ctx.cli_json {
            print_datasets(report.datasets.as_deref().unwrap_or_default());
            print_ingest(&ingest);
        }
        report.ingest = Some(ingest);
    }
    Ok(report)
}

/// Times the recalls against every target (one, or SQLite and PostgreSQL in turns).
fn measure(
    ctx: &Context,
    args: &HttpArgs,
    model: &EmbeddingModel,
    targets: &[Target],
    questions: &[String],
) -> Result<HttpReport> {
    // Warm-up: the vector cache of the user and the model's pages, as in a running server;
    // then as many connections at once as the busiest level will open (up to the size of
    // PostgreSQL's pool), so each pooled connection has prepared its statements.
    let busiest = args.clients.iter().copied().max().unwrap_or(1).min(16);
    for target in targets {
        let mut warm = Connection::open(target.addr)?;
        for q in questions.iter().take(5) {
            warm.recall(q, args.k, false)?;
        }
        drop(warm);
        if busiest > 1 {
            block(target.addr, busiest, 0, 2, args.k, false, questions)?;
        }
    }

    let model_threads = match &ctx.embedder {
        crate::embedder::EmbedderChoice::Local { threads, .. } => Some(*threads),
        _ => None,
    };
    let both = targets.len() > 1;
    let backends = targets.iter().any(|t| t.backend.is_some());
    let mut report = HttpReport {
        benchmark: "http",
        model: model.id.clone(),
        model_threads,
        memories: args.memories,
        k: args.k,
        query_batch: args.query_batch,
        query_batch_wait_us: args.query_batch_wait_us,
        scan_kernels: super::paths::scan(),
        results: Vec::new(),
        kernels: super::embed_kernels(),
        ratios: (both && backends).then(Vec::new),
        path_ratios: (both && !backends).then(Vec::new),
        datasets: None,
        ingest: None,
    };
    if !ctx.cli_json {
        println!(
            "recall over HTTP on loopback: one user with {} memories, k = {}, query embedding included ({} threads for the model)",
            args.memories,
            args.k,
            model_threads.map_or("remote".into(), |t| t.to_string())
        );
        println!("{}", report.kernels);
        println!("{}", report.scan_kernels);
        if both && backends {
            println!(
                "SQLite and PostgreSQL (the same memories, vectors and times), one server each; at each level the backends take turns (SQLite, PostgreSQL, PostgreSQL, SQLite) on the same queries"
            );
            println!(
                "{:>8} {:>12} {:>9} {:>9} {:>10} {:>10} {:>10} {:>12} {:>14}",
                "clients", "strengthen", "backend", "requests", "p50", "p95", "p99", "recalls/s", "p50 pg/sqlite"
            );
        } else if both {
            println!(
                "two query paths on the same store, one server each, taking turns (default, f32, f32, default) on the same queries: the default (int8 query weights, micro-batched) and the reference (f32 weights, each query alone)"
            );
            println!(
                "{:>8} {:>12} {:>13} {:>9} {:>10} {:>10} {:>10} {:>12} {:>12}",
                "clients", "strengthen", "query path", "requests", "p50", "p95", "p99", "recalls/s", "p50 f32/int8"
            );
        } else {
            println!(
                "{:>8} {:>12} {:>9} {:>10} {:>10} {:>10} {:>12}",
                "clients", "strengthen", "requests", "p50", "p95", "p99", "recalls/s"
            );
        }
    }
    let modes: &[bool] = if args.strengthen { &[false, true] } else { &[false] };
    for &clients in &args.clients {
        let per_client = (args.requests / clients).max(10);
        for &strengthen in modes {
            // Each target's blocks: (first request of each client, requests per client).
            // Alone: one block. Both: two halves each, in the order A B B A.
            let half = per_client / 2;
            let order: Vec<(usize, usize, usize)> = if both {
                vec![(0, 0, half), (1, 0, half), (1, half, per_client - half), (0, half, per_client - half)]
            } else {
                vec![(0, 0, per_client)]
            };
            let mut times: Vec<Vec<Duration>> = vec![Vec::new(); targets.len()];
            let mut wall = vec![0.0; targets.len()];
            for (t, first, n) in order {
                let (block_times, seconds) = block(targets[t].addr, clients, first, n, args.k, strengthen, questions)?;
                times[t].extend(block_times);
                wall[t] += seconds;
            }
            let rows: Vec<HttpResult> = targets
                .iter()
                .zip(times.iter_mut().zip(&wall))
                .map(|(target, (times, wall))| HttpResult {
                    backend: target.backend,
                    query_path: target.query_path,
                    clients,
                    strengthen,
                    requests: times.len(),
                    latency: Latency::of(times),
                    recalls_per_second: times.len() as f64 / wall,
                })
                .collect();
            let ratio = both.then(|| HttpRatio {
                clients,
                strengthen,
                p50: rows[1].latency.p50_ms / rows[0].latency.p50_ms,
                p95: rows[1].latency.p95_ms / rows[0].latency.p95_ms,
            });
            if !ctx.cli_json {
                let ms = |ms: f64| format!("{ms:.2} ms");
                for row in &rows {
                    let common = format!("{:>8} {:>12}", clients, if strengthen { "yes" } else { "no" });
                    let numbers = format!(
                        "{:>10} {:>10} {:>10} {:>12.1}",
                        ms(row.latency.p50_ms),
                        ms(row.latency.p95_ms),
                        ms(row.latency.p99_ms),
                        row.recalls_per_second
                    );
                    match (row.backend, row.query_path, &ratio) {
                        (Some(backend), _, Some(ratio)) => {
                            let versus =
                                if backend == "postgres" { format!("{:.2}x", ratio.p50) } else { String::new() };
                            println!("{common} {backend:>9} {:>9} {numbers} {versus:>14}", row.requests);
                        }
                        (None, Some(path), Some(ratio)) => {
                            let versus = if path == "f32" { format!("{:.2}x", ratio.p50) } else { String::new() };
                            println!("{common} {path:>13} {:>9} {numbers} {versus:>12}", row.requests);
                        }
                        _ => println!("{common} {:>9} {numbers}", row.requests),
                    }
                }
            }
            report.results.extend(rows);
            if let Some(ratio) = ratio {
                if let Some(ratios) = report.ratios.as_mut() {
                    ratios.push(ratio);
                } else if let Some(ratios) = report.path_ratios.as_mut() {
                    ratios.push(ratio);
                }
            }
        }
    }
    Ok(report)
}

/// One block of load: `clients` threads, each on its own connection, each sending `n`
/// recalls, the i-th of client c asking question `c * 31 + first + i` (so two blocks with
/// the same `first` ask the same questions). Returns each request's latency and the
/// block's wall time in seconds.
fn block(
    addr: SocketAddr,
    clients: usize,
    first: usize,
    n: usize,
    k: usize,
    strengthen: bool,
    questions: &[String],
) -> Result<(Vec<Duration>, f64)> {
    let start = Instant::now();
    let handles: Vec<_> = (0..clients)
        .map(|c| {
            let questions = questions.to_vec();
            std::thread::spawn(move || -> Result<Vec<Duration>> {
                let mut conn = Connection::open(addr)?;
                let mut times = Vec::with_capacity(n);
                for i in first..first + n {
                    let q = &questions[(c * 31 + i) % questions.len()];
                    let t = Instant::now();
                    conn.recall(q, k, strengthen)?;
                    times.push(t.elapsed());
                }
                Ok(times)
            })
        })
        .collect();
    let mut times = Vec::new();
    for h in handles {
        times.extend(h.join().map_err(|_| anyhow::anyhow!("a client thread panicked"))??);
    }
    Ok((times, start.elapsed().as_secs_f64()))
}

/// Times storing `n` memories one at a time on a scratch SQLite file and a scratch
/// PostgreSQL database (made on the server of `server_url`, dropped at the end; skipped
/// when the server refuses to make one), through the engine's remember and through the
/// store's insert, alternating the backends call by call.
fn ingest(
    ctx: &Context,
    embedder: Arc<dyn membank_embed::Embedder>,
    model: &EmbeddingModel,
    corpus: &[String],
    n: usize,
    server_url: &str,
) -> Result<Vec<IngestResult>> {
    let scratch = tempfile::tempdir().context("cannot make a scratch directory")?;
    let mut stores: Vec<(&'static str, Arc<dyn Store>)> =
        vec![("sqlite", Arc::new(SqliteStore::open_with(scratch.path().join("ingest.db"), ctx.store_options())?))];
    // Dropped (with its database) when this function returns, after the stores.
    let database = match TestDatabase::try_create(server_url, "bench_ingest") {
        Ok(database) => Some(database),
        Err(err) => {
            eprintln!(
                "no PostgreSQL ingest: cannot create a scratch database on {} ({err})",
                membank_store::redact(server_url)
            );
            None
        }
    };
    if let Some(database) = &database {
        stores.push(("postgres", Arc::new(PgStore::open(&database.url)?)));
    }
    let texts: Vec<&String> = corpus.iter().cycle().take(n).collect();
    let mut results = Vec::new();

    // The engine's remember: validation, the user's day, one embedding, one transaction.
    let engines = stores
        .iter()
        .map(|(_, store)| {
            Engine::new(store.clone(), embedder.clone(), Arc::new(SystemClock), ctx.engine_config.clone())
        })
        .collect::<Result<Vec<_>, _>>()?;
    let scope = Scope::user(TenantId::default_tenant(), UserId::new("ingest-remember")?);
    let mut times = vec![Vec::with_capacity(n); stores.len()];
    for text in &texts {
        for (engine, times) in engines.iter().zip(&mut times) {
            let request = RememberTurn {
                scope: scope.clone(),
                user_text: (*text).clone(),
                assistant_text: None,
                occurred_at: None,
                metadata: Default::default(),
                importance: None,
                clock_from: Default::default(),
            };
            let start = Instant::now();
            engine.remember_turn(request)?;
            times.push(start.elapsed());
        }
    }
    for ((backend, _), times) in stores.iter().zip(&mut times) {
        results.push(ingest_result(backend, "remember", times));
    }
    drop(engines);

    // The store's insert alone: the vectors are computed first, in batches.
    let mut vectors = Vec::with_capacity(n);
    for chunk in texts.chunks(256) {
        vectors.extend(embedder.embed(&chunk.iter().map(|t| t.as_str()).collect::<Vec<_>>())?);
    }
    let scope = Scope::user(TenantId::default_tenant(), UserId::new("ingest-insert")?);
    let now = chrono::Utc::now();
    for (_, store) in &stores {
        store.ensure_user(&scope.tenant, &scope.user, now)?;
    }
    let mut times = vec![Vec::with_capacity(n); stores.len()];
    for (i, (text, vector)) in texts.iter().zip(&vectors).enumerate() {
        let at = now - chrono::Duration::seconds((n - i) as i64);
        for ((_, store), times) in stores.iter().zip(&mut times) {
            let new = NewMemory {
                memory: synthetic_memory(&scope, Kind::Turn, (*text).clone(), at),
                embedding: Some((model.clone(), vector.clone())),
            };
            let start = Instant::now();
            store.insert(new)?;
            times.push(start.elapsed());
        }
    }
    for ((backend, _), times) in stores.iter().zip(&mut times) {
        results.push(ingest_result(backend, "insert", times));
    }
    drop(stores);
    drop(database);
    Ok(results)
}

fn ingest_result(backend: &'static str, path: &'static str, times: &mut [Duration]) -> IngestResult {
    let seconds: f64 = times.iter().map(Duration::as_secs_f64).sum();
    IngestResult {
        backend,
        path,
        memories: times.len(),
        seconds,
        memories_per_second: times.len() as f64 / seconds,
        latency: Latency::of(times),
    }
}

fn print_datasets(datasets: &[Dataset]) {
    for d in datasets {
        match (d.seconds, d.memories_per_second) {
            (Some(seconds), Some(rate)) => println!(
                "{} dataset {}: {} memories added in {seconds:.1} s ({rate:.0} memories/s)",
                d.backend, d.location, d.added
            ),
            _ => println!("{} dataset {}: reused as it was", d.backend, d.location),
        }
    }
}

fn print_ingest(results: &[IngestResult]) {
    if results.is_empty() {
        return;
    }
    println!(
        "ingest, one memory per call, backends alternating call by call (remember: embedding + one transaction; insert: the store alone)"
    );
    println!(
        "{:>9} {:>9} {:>9} {:>9} {:>12} {:>10} {:>10}",
        "backend", "path", "memories", "seconds", "memories/s", "p50", "p95"
    );
    for r in results {
        println!(
            "{:>9} {:>9} {:>9} {:>9.2} {:>12.1} {:>10} {:>10}",
            r.backend,
            r.path,
            r.memories,
            r.seconds,
            r.memories_per_second,
            format!("{:.2} ms", r.latency.p50_ms),
            format!("{:.2} ms", r.latency.p95_ms)
        );
    }
}

/// One keep-alive HTTP/1.1 connection to a bench server (`bench http`, `bench scale`).
pub(super) struct Connection {
    writer: TcpStream,
    reader: BufReader<TcpStream>,
}

impl Connection {
    pub(super) fn open(addr: SocketAddr) -> Result<Self> {
        if !addr.ip().is_loopback() {
            bail!("the HTTP benchmarks only talk to loopback addresses");
        }
        let stream = TcpStream::connect(addr)?;
        stream.set_nodelay(true)?;
        stream.set_read_timeout(Some(Duration::from_secs(60)))?;
        Ok(Self { reader: BufReader::new(stream.try_clone()?), writer: stream })
    }

    /// A recall of the bench user.
    fn recall(&mut self, query: &str, k: usize, strengthen: bool) -> Result<()> {
        self.recall_of("bench", query, k, strengthen)
    }

    /// A recall of `user`; an answer other than 200 is an error.
    pub(super) fn recall_of(&mut self, user: &str, query: &str, k: usize, strengthen: bool) -> Result<()> {
        let body = serde_json::json!({ "query": query, "k": k, "strengthen": strengthen }).to_string();
        let (code, body) = self.post(&format!("/v1/users/{user}/recall"), &body)?;
        if code != 200 {
            bail!("recall answered {code}: {}", String::from_utf8_lossy(&body));
        }
        Ok(())
    }

    /// `POST path` with a JSON body; the status and the response body.
    pub(super) fn post(&mut self, path: &str, body: &str) -> Result<(u16, Vec<u8>)> {
        write!(
            self.writer,
            "POST {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{}",
            body.len(),
            body
        )?;
        self.writer.flush()?;
        let mut status = String::new();
        self.reader.read_line(&mut status)?;
        let code: u16 =
            status.split_whitespace().nth(1).and_then(|c| c.parse().ok()).context("malformed status line")?;
        let mut length = None;
        loop {
            let mut line = String::new();
            self.reader.read_line(&mut line)?;
            let line = line.trim_end();
            if line.is_empty() {
                break;
            }
            if let Some((name, value)) = line.split_once(':')
                && name.eq_ignore_ascii_case("content-length")
            {
                length = value.trim().parse::<usize>().ok();
            }
        }
        let mut body = vec![0; length.context("response without Content-Length")?];
        self.reader.read_exact(&mut body)?;
        Ok((code, body))
    }
}
