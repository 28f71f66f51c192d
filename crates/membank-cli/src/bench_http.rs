//! `membank bench http`: recall latency over real HTTP on loopback, query embedding
//! included, for one user with many memories, at several client concurrencies.
//!
//! The server is the real `membank_server::serve` on 127.0.0.1:0 in this process (its own
//! Tokio runtime); the load generator is our own: N threads, each with one keep-alive
//! HTTP/1.1 connection written by hand over `TcpStream`, so the numbers include request
//! parsing, auth middleware, the blocking-pool hop and JSON, and nothing of a client
//! library. It measures; it asserts nothing. Only loopback is ever contacted, and every
//! loop is bounded by the request count. With `--json` it prints an [`HttpReport`].

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context as _, Result, bail};
use clap::Args;
use serde::Serialize;
use membank_engine::core::{Scope, SystemClock, TenantId, UserId};
use membank_engine::Engine;
use membank_server::{AppState, AuthMode, RateLimit, ServerConfig};
use membank_store::{EmbeddingModel, SqliteStore, Store};

use crate::bench::{Latency, MAX_COUNT, count, fill, sentences};
use crate::commands::Context;

/// `bench http`.
#[derive(Debug, Args)]
pub struct HttpArgs {
    /// Memories of the bench user.
    #[arg(long, default_value_t = 100_000, value_parser = count(MAX_COUNT))]
    pub memories: usize,
    /// Client concurrencies, comma-separated (each 1 to 256).
    #[arg(long, value_delimiter = ',', default_value = "1,32", value_parser = count(256))]
    pub clients: Vec<usize>,
    /// Requests per concurrency level (spread over the clients; at least 10 per client).
    #[arg(long, default_value_t = 300, value_parser = count(MAX_COUNT))]
    pub requests: usize,
    /// k of each recall.
    #[arg(long, default_value_t = 10, value_parser = count(membank_engine::core::limits::MAX_RECALL_K as u64))]
    pub k: usize,
    /// Also measure recalls that strengthen what they return (one small write each).
    #[arg(long)]
    pub strengthen: bool,
    /// Where to keep the built database (shared with `bench recall`, reused when present).
    #[arg(long, default_value = "target/bench")]
    pub dir: PathBuf,
    /// Embed only this many distinct texts (0: all 4,000 sentences read from the data);
    /// every further memory is a pair of them with the normalised sum of their vectors,
    /// as in `bench recall`. The scan and index sizes are the same.
    #[arg(long, default_value_t = 0)]
    pub distinct: usize,
    /// Public data folder (texts of memories and queries).
    #[arg(long, default_value = "../shared/data")]
    pub data: PathBuf,
}

/// `bench http --json`.
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
    /// One entry per client concurrency (and strengthening mode), in the order asked.
    pub results: Vec<HttpResult>,
}

/// One concurrency level of `bench http`.
#[derive(Debug, Serialize)]
pub struct HttpResult {
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
    if have < args.memories {
        let start = Instant::now();
        let distinct = if args.distinct == 0 { corpus.len() } else { args.distinct.min(corpus.len()) };
        fill(store.as_ref(), &scope, &model, embedder.as_ref(), &corpus[..distinct], have, args.memories)?;
        eprintln!("built {} memories in {:.1}s", args.memories - have, start.elapsed().as_secs_f64());
    }
    let questions: Vec<String> = corpus.iter().step_by(7).take(500).map(|s| s.split_whitespace().take(8).collect::<Vec<_>>().join(" ")).collect();

    let engine = Arc::new(Engine::new(store.clone(), embedder.clone(), Arc::new(SystemClock), ctx.engine_config.clone())?);
    let mut config = ServerConfig::new(TenantId::default_tenant(), AuthMode::LoopbackOpen);
    // The bench measures recall, not a maintenance cycle archiving its memories mid-run.
    config.maintenance.enabled = false;
    config.rate_limit = RateLimit { per_second: 0.0, burst: 1.0 };
    let state = AppState::new(engine, store, config);
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build()?;
    let listener = runtime.block_on(tokio::net::TcpListener::bind("127.0.0.1:0"))?;
    let addr = listener.local_addr()?;
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let server = runtime.spawn(membank_server::serve(listener, state, async move {
        let _ = stopped.await;
    }));

    // Warm-up: the vector cache of the user and the model's pages, as in a running server.
    let mut warm = Connection::open(addr)?;
    for q in questions.iter().take(5) {
        warm.recall(q, args.k, false)?;
    }
    drop(warm);

    let model_threads = match &ctx.embedder {
        crate::embedder::EmbedderChoice::Local { threads, .. } => Some(*threads),
        _ => None,
    };
    let mut report = HttpReport { benchmark: "http", model: model.id.clone(), model_threads, memories: args.memories, k: args.k, results: Vec::new() };
    if !ctx.cli_json {
        println!("recall over HTTP on loopback: one user with {} memories, k = {}, query embedding included ({} threads for the model)", args.memories, args.k, model_threads.map_or("remote".into(), |t| t.to_string()));
        println!("{:>8} {:>12} {:>9} {:>10} {:>10} {:>10} {:>12}", "clients", "strengthen", "requests", "p50", "p95", "p99", "recalls/s");
    }
    let modes: &[bool] = if args.strengthen { &[false, true] } else { &[false] };
    for &clients in &args.clients {
        let per_client = (args.requests / clients).max(10);
        for &strengthen in modes {
            let start = Instant::now();
            let handles: Vec<_> = (0..clients)
                .map(|c| {
                    let questions = questions.clone();
                    let k = args.k;
                    std::thread::spawn(move || -> Result<Vec<Duration>> {
                        let mut conn = Connection::open(addr)?;
                        let mut times = Vec::with_capacity(per_client);
                        for i in 0..per_client {
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
            let wall = start.elapsed().as_secs_f64();
            let row = HttpResult { clients, strengthen, requests: times.len(), latency: Latency::of(&mut times), recalls_per_second: times.len() as f64 / wall };
            if !ctx.cli_json {
                let ms = |ms: f64| format!("{ms:.2} ms");
                println!(
                    "{:>8} {:>12} {:>9} {:>10} {:>10} {:>10} {:>12.1}",
                    clients,
                    if strengthen { "yes" } else { "no" },
                    row.requests,
                    ms(row.latency.p50_ms),
                    ms(row.latency.p95_ms),
                    ms(row.latency.p99_ms),
                    row.recalls_per_second
                );
            }
            report.results.push(row);
        }
    }
    let _ = stop.send(());
    runtime.block_on(server)??;
    Ok(report)
}

/// One keep-alive HTTP/1.1 connection to the bench server.
struct Connection {
    writer: TcpStream,
    reader: BufReader<TcpStream>,
}

impl Connection {
    fn open(addr: SocketAddr) -> Result<Self> {
        if !addr.ip().is_loopback() {
            bail!("the HTTP benchmark only talks to loopback addresses");
        }
        let stream = TcpStream::connect(addr)?;
        stream.set_nodelay(true)?;
        stream.set_read_timeout(Some(Duration::from_secs(60)))?;
        Ok(Self { reader: BufReader::new(stream.try_clone()?), writer: stream })
    }

    fn recall(&mut self, query: &str, k: usize, strengthen: bool) -> Result<()> {
        let body = serde_json::json!({ "query": query, "k": k, "strengthen": strengthen }).to_string();
        write!(self.writer, "POST /v1/users/bench/recall HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{}", body.len(), body)?;
        self.writer.flush()?;
        let mut status = String::new();
        self.reader.read_line(&mut status)?;
        let code: u16 = status.split_whitespace().nth(1).and_then(|c| c.parse().ok()).context("malformed status line")?;
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
        if code != 200 {
            bail!("recall answered {code}: {}", String::from_utf8_lossy(&body));
        }
        Ok(())
    }
}
