//! `bench erase`: how long one erasure takes on a large SQLite store, and how long another
//! user's write waits meanwhile (an erasure holds the single writer; its cost must follow
//! what it erases, not the size of the store).

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Context as _, Result};
use membank_engine::core::{Kind, Scope, Status, TenantId, UserId};
use membank_store::{EmbeddingModel, ListQuery, NewMemory, SqliteStore, Store};
use serde::Serialize;

use super::dataset::{sentences, synthetic_memory, unit_vector};
use super::stats::{Latency, percentile};
use crate::context::Context;
use crate::progress::Bar;

/// `bench erase --json`.
#[derive(Debug, Serialize)]
pub struct EraseReport {
    /// Always `"erase"`.
    pub benchmark: &'static str,
    /// Users the memories are spread over.
    pub users: usize,
    /// One row per store size.
    pub results: Vec<EraseResult>,
}

/// Erasures on one store.
#[derive(Debug, Serialize)]
pub struct EraseResult {
    /// Memories in the store.
    pub memories: usize,
    /// Memories this run added to the kept database (0: reused as it was).
    pub built: usize,
    /// Size of the database file, bytes.
    pub file_bytes: u64,
    /// Bytes of the full-text index's segments.
    pub index_bytes: i64,
    /// Erasures measured (one memory each, of a different user each time).
    pub erases: usize,
    /// Each erasure's time, commit and WAL purge included.
    pub erase: Latency,
    /// The slowest erasure, milliseconds.
    pub erase_max_ms: f64,
    /// Another user's single-note writes made back to back while the erasures ran.
    pub writer_during_erase: WriterLatency,
    /// The same writes with nothing else running, for comparison.
    pub writer_alone: WriterLatency,
    /// One merge of the whole full-text index (FTS5 `optimize`) on this store: what every
    /// erasure also ran, under the writer lock, before erasure removed only the erased
    /// row's terms.
    pub full_index_merge_ms: f64,
}

/// Latency of a series of writes.
#[derive(Debug, Serialize)]
pub struct WriterLatency {
    /// Writes made.
    pub writes: usize,
    /// Their percentiles.
    pub latency: Latency,
    /// The slowest, milliseconds.
    pub max_ms: f64,
}

/// Runs `bench erase`.
pub fn run(
    ctx: &Context,
    sizes: &[usize],
    users: usize,
    erases: usize,
    dir: &Path,
    data: &Path,
) -> Result<EraseReport> {
    std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    let corpus = sentences(data, usize::MAX)?;
    let mut report = EraseReport { benchmark: "erase", users, results: Vec::new() };
    for &size in sizes {
        let row = one_size(ctx, size, users, erases, dir, &corpus)?;
        if !ctx.cli_json {
            println!(
                "{} memories ({} MB, index {} MB): erase p50 {:.1} ms, p95 {:.1} ms, max {:.1} ms; another user's write during erasures p50 {:.1} ms, p95 {:.1} ms, max {:.1} ms ({} writes), alone p50 {:.1} ms, max {:.1} ms; one full index merge {:.0} ms",
                row.memories,
                row.file_bytes >> 20,
                row.index_bytes >> 20,
                row.erase.p50_ms,
                row.erase.p95_ms,
                row.erase_max_ms,
                row.writer_during_erase.latency.p50_ms,
                row.writer_during_erase.latency.p95_ms,
                row.writer_during_erase.max_ms,
                row.writer_during_erase.writes,
                row.writer_alone.latency.p50_ms,
                row.writer_alone.max_ms,
                row.full_index_merge_ms,
            );
        }
        report.results.push(row);
    }
    Ok(report)
}

fn scope(user: &str) -> Result<Scope> {
    Ok(Scope::user(TenantId::default_tenant(), UserId::new(user)?))
}

fn one_size(
    ctx: &Context,
    size: usize,
    users: usize,
    erases: usize,
    dir: &Path,
    corpus: &[String],
) -> Result<EraseResult> {
    let path = dir.join(format!("erase-v1-{users}u-{size}.db"));
    let store = SqliteStore::open_with(&path, ctx.store_options())?;
    let model = EmbeddingModel { id: "bench/deterministic-384".into(), dim: 384 };
    let t0 = chrono::Utc::now() - chrono::Duration::days(365);
    // The kept database's memories of the bench users (the writer's notes from earlier runs
    // are not counted); erased ones count too, so a database is built once per size.
    let have_total: usize = rusqlite::Connection::open(&path)?.query_row(
        "SELECT count(*) FROM memories m JOIN users u ON u.id = m.user_row WHERE u.user_key LIKE 'user-%'",
        [],
        |r| r.get::<_, i64>(0),
    )? as usize;
    let built = size.saturating_sub(have_total);
    if built > 0 {
        eprintln!("building {size} memories over {users} users in {}", path.display());
        let bar = Bar::new();
        let start = Instant::now();
        // Texts are real utterances, joined in pairs once single ones run out, so the index
        // holds real vocabulary at every size.
        let text = |i: usize| -> String {
            let n = corpus.len();
            if i < n { corpus[i].clone() } else { format!("{} {}", corpus[i % n], corpus[(i / n * 31 + i) % n]) }
        };
        for chunk_start in (have_total..size).step_by(5000) {
            let chunk_end = (chunk_start + 5000).min(size);
            let mut batch = Vec::with_capacity(chunk_end - chunk_start);
            for i in chunk_start..chunk_end {
                let scope = scope(&format!("user-{}", i % users))?;
                if i < users {
                    store.ensure_user(&scope.tenant, &scope.user, t0)?;
                }
                let at = t0 + chrono::Duration::seconds(i as i64);
                batch.push(NewMemory {
                    memory: synthetic_memory(&scope, Kind::Turn, text(i), at),
                    embedding: Some((model.clone(), unit_vector(i, 384))),
                });
            }
            store.insert_many(batch)?;
            bar.update("inserting", chunk_end - have_total, size - have_total);
        }
        bar.finish();
        eprintln!("built {built} memories in {:.1}s", start.elapsed().as_secs_f64());
    }
    let writer = scope("bench-writer")?;
    store.ensure_user(&writer.tenant, &writer.user, t0)?;
    let store = Arc::new(store);

    // Another user's writes alone, for comparison.
    let alone = write_for(&store, &writer, &model, Duration::from_secs(2), None)?;

    // Each erasure: one active memory of a different user, while another user writes.
    let mut times = Vec::with_capacity(erases);
    let mut during = Vec::new();
    for e in 0..erases {
        let target = scope(&format!("user-{}", e % users))?;
        let victim = store
            .list(&target, &ListQuery { statuses: vec![Status::Active], limit: 1, ..Default::default() })?
            .into_iter()
            .next()
            .with_context(|| format!("{} has no active memory left to erase", target.user))?;
        let running = Arc::new(AtomicBool::new(true));
        let background = {
            let (store, writer, model, running) =
                (Arc::clone(&store), writer.clone(), model.clone(), Arc::clone(&running));
            std::thread::spawn(move || write_for(&store, &writer, &model, Duration::from_secs(600), Some(&running)))
        };
        // Let the writer get going, so the erasure meets it.
        std::thread::sleep(Duration::from_millis(20));
        let start = Instant::now();
        store.erase(&target, victim.id, chrono::Utc::now())?;
        times.push(start.elapsed());
        running.store(false, Ordering::SeqCst);
        during.extend(background.join().map_err(|_| anyhow::anyhow!("the writer thread panicked"))??);
    }
    let file_bytes = std::fs::metadata(&path)?.len();
    let conn = rusqlite::Connection::open(&path)?;
    conn.busy_timeout(Duration::from_secs(60))?;
    let index_bytes: i64 =
        conn.query_row("SELECT coalesce(sum(length(block)), 0) FROM memory_fts_data", [], |r| r.get(0))?;
    let start = Instant::now();
    conn.execute("INSERT INTO memory_fts (memory_fts) VALUES ('optimize')", [])?;
    let full_index_merge_ms = start.elapsed().as_secs_f64() * 1000.0;
    drop(conn);
    let erase_max_ms = times.iter().max().map_or(0.0, |t| t.as_secs_f64() * 1000.0);
    Ok(EraseResult {
        memories: size,
        built,
        file_bytes,
        index_bytes,
        erases,
        erase: Latency::of(&mut times),
        erase_max_ms,
        writer_during_erase: summary(during),
        writer_alone: summary(alone),
        full_index_merge_ms,
    })
}

/// Writes one note at a time for `writer` until `limit` passes or `running` turns false;
/// returns each write's time.
fn write_for(
    store: &SqliteStore,
    writer: &Scope,
    model: &EmbeddingModel,
    limit: Duration,
    running: Option<&AtomicBool>,
) -> Result<Vec<Duration>> {
    let start = Instant::now();
    let mut times = Vec::new();
    while start.elapsed() < limit && running.is_none_or(|r| r.load(Ordering::SeqCst)) {
        let i = times.len();
        let memory = synthetic_memory(writer, Kind::Note, format!("writer note {i}"), chrono::Utc::now());
        let began = Instant::now();
        store.insert(NewMemory { memory, embedding: Some((model.clone(), unit_vector(i, 384))) })?;
        times.push(began.elapsed());
    }
    Ok(times)
}

fn summary(mut times: Vec<Duration>) -> WriterLatency {
    if times.is_empty() {
        times.push(Duration::ZERO);
    }
    let writes = times.len();
    let latency = Latency::of(&mut times);
    WriterLatency { writes, latency, max_ms: percentile(&times, 1.0).as_secs_f64() * 1000.0 }
}
