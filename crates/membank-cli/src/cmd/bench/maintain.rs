//! `bench maintain`: one maintenance cycle's time and peak memory on the two shapes that
//! used to make it unbounded, many long memories (20k × 10 KB) and many near-identical
//! turns (2,000 sharing a long prefix, with near-identical vectors), and on a large user of
//! short memories (100k sentences).

use std::path::Path;
use std::sync::Arc;
use std::time::Instant;

use anyhow::{Context as _, Result};
use membank_engine::core::{Kind, ManualClock, Scope, TenantId, UserId};
use membank_engine::{Engine, MaintainRequest};
use membank_store::{EmbeddingModel, NewMemory, SqliteStore, Store};
use serde::Serialize;

use super::dataset::{normalised, sentences, synthetic_memory, unit_vector};
use crate::context::Context;
use crate::progress::Bar;

/// The model the stored vectors are filed under; the cycle compares vectors of the
/// engine's model, so its embedder names the same one (and never embeds: without an LLM
/// nothing new is written).
const BENCH_MODEL: &str = "bench/deterministic-384";

struct BenchModel;

impl membank_embed::Embedder for BenchModel {
    fn model_id(&self) -> &str {
        BENCH_MODEL
    }
    fn dim(&self) -> usize {
        384
    }
    fn embed(&self, _: &[&str]) -> Result<Vec<Vec<f32>>, membank_embed::EmbedError> {
        Err(membank_embed::EmbedError::Remote("the maintain benchmark does not embed".into()))
    }
}

/// `bench maintain --json`.
#[derive(Debug, Serialize)]
pub struct MaintainBenchReport {
    /// Always `"maintain"`.
    pub benchmark: &'static str,
    /// One row per shape and mode.
    pub results: Vec<MaintainBenchResult>,
}

/// One cycle.
#[derive(Debug, Serialize)]
pub struct MaintainBenchResult {
    /// `"long"` (many long memories) or `"similar"` (near-identical turns).
    pub shape: &'static str,
    /// Memories of the user.
    pub memories: usize,
    /// Bytes of text per memory (about).
    pub text_bytes: usize,
    /// A dry run, or the real cycle (on a copy).
    pub dry_run: bool,
    /// Wall time of the cycle.
    pub seconds: f64,
    /// Peak resident memory during the cycle, MiB (VmHWM after resetting it; null where
    /// /proc cannot be read).
    pub peak_rss_mb: Option<f64>,
    /// Peak anonymous memory during the cycle, MiB (sampled every 10 ms: the heap, without
    /// the database file's pages mapped by SQLite, which the kernel can drop).
    pub peak_anon_mb: Option<f64>,
    /// Resident memory before it, MiB.
    pub rss_before_mb: Option<f64>,
    /// Anonymous memory before it, MiB.
    pub anon_before_mb: Option<f64>,
    /// What the cycle reported: merged, archived, deferred and its `skipped` lines.
    pub merged: usize,
    /// Memories archived.
    pub archived: usize,
    /// Memories whose archiving was deferred.
    pub deferred: usize,
    /// The report's `skipped` lines.
    pub skipped: Vec<String>,
}

/// The shapes to run and their sizes.
pub struct Shapes {
    /// Memories of the "long" user.
    pub long: usize,
    /// Bytes per "long" memory.
    pub long_bytes: usize,
    /// Turns of the "similar" user.
    pub similar: usize,
    /// Memories of the "short" user.
    pub short: usize,
    /// Only this shape.
    pub only: Option<String>,
}

/// Runs `bench maintain`.
pub fn run(ctx: &Context, shapes: &Shapes, dir: &Path, data: &Path) -> Result<MaintainBenchReport> {
    std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    let corpus = sentences(data, usize::MAX)?;
    let mut report = MaintainBenchReport { benchmark: "maintain", results: Vec::new() };
    let all = [("long", shapes.long, shapes.long_bytes), ("similar", shapes.similar, 4096), ("short", shapes.short, 0)];
    for (shape, n, bytes) in all {
        if shapes.only.as_deref().is_some_and(|only| only != shape) {
            continue;
        }
        let path = dir.join(format!("maintain-v2-{shape}-{n}x{bytes}.db"));
        if !path.exists() {
            build(ctx, &path, shape, n, bytes, &corpus)?;
        }
        for dry_run in [true, false] {
            let copy = dir.join(format!("maintain-{shape}-run.db"));
            for suffix in ["", "-wal", "-shm"] {
                let _ = std::fs::remove_file(format!("{}{suffix}", copy.display()));
            }
            SqliteStore::open_with(&path, ctx.store_options())?.backup(&copy)?;
            let store: Arc<dyn Store> = Arc::new(SqliteStore::open_with(&copy, ctx.store_options())?);
            let now = chrono::Utc::now();
            let engine = Engine::new(store, Arc::new(BenchModel), Arc::new(ManualClock::new(now)), Default::default())?;
            let scope = Scope::user(TenantId::default_tenant(), UserId::new("bench")?);
            let (rss_before_mb, anon_before_mb) = (rss("VmRSS"), rss("RssAnon"));
            reset_peak();
            let sampler = AnonSampler::start();
            let start = Instant::now();
            let cycle = engine.maintain(MaintainRequest { scope, now: None, dry_run });
            let seconds = start.elapsed().as_secs_f64();
            let peak_anon_mb = sampler.stop();
            let cycle = cycle?;
            let row = MaintainBenchResult {
                shape,
                memories: n,
                text_bytes: bytes,
                dry_run,
                seconds,
                peak_rss_mb: rss("VmHWM"),
                peak_anon_mb,
                rss_before_mb,
                anon_before_mb,
                merged: cycle.merged.len(),
                archived: cycle.archived.len(),
                deferred: cycle.deferred,
                skipped: cycle.skipped.clone(),
            };
            if !ctx.cli_json {
                println!(
                    "{shape}: {n} memories of ~{bytes} bytes, {}: {seconds:.2}s, peak RSS {} MiB (before {} MiB), peak anon {} MiB (before {} MiB); merged {}, archived {}, deferred {}; skipped: {}",
                    if dry_run { "dry run" } else { "real cycle" },
                    mib(row.peak_rss_mb),
                    mib(row.rss_before_mb),
                    mib(row.peak_anon_mb),
                    mib(row.anon_before_mb),
                    row.merged,
                    row.archived,
                    row.deferred,
                    row.skipped.join("; ")
                );
            }
            report.results.push(row);
        }
    }
    Ok(report)
}

fn build(ctx: &Context, path: &Path, shape: &str, n: usize, bytes: usize, corpus: &[String]) -> Result<()> {
    eprintln!("building {n} {shape} memories in {}", path.display());
    let store = SqliteStore::open_with(path, ctx.store_options())?;
    let scope = Scope::user(TenantId::default_tenant(), UserId::new("bench")?);
    // Five days old: young enough that the default curve archives none of them (importance
    // .5 lasts about nine days), so every stage of the cycle has the whole set to work on.
    let t0 = chrono::Utc::now() - chrono::Duration::days(5);
    store.ensure_user(&scope.tenant, &scope.user, t0)?;
    let model = EmbeddingModel { id: BENCH_MODEL.into(), dim: 384 };
    // "similar": one long prefix, then a short sentence of its own; vectors a shared
    // direction plus a little noise (cosine about 0.99 to one another).
    let prefix = text_of(corpus, 0, bytes);
    let base = unit_vector(0, 384);
    let bar = Bar::new();
    for chunk in (0..n).collect::<Vec<_>>().chunks(1000) {
        let batch = chunk
            .iter()
            .map(|&i| {
                let (text, vector) = match shape {
                    "similar" => (format!("{prefix} {}", corpus[(i * 7 + 1) % corpus.len()]), near(&base, i + 1, 0.1)),
                    "short" => (corpus[(i * 37) % corpus.len()].clone(), unit_vector(i + 1, 384)),
                    _ => (text_of(corpus, i * 37, bytes), unit_vector(i + 1, 384)),
                };
                let at = t0 + chrono::Duration::seconds((i * 60) as i64);
                NewMemory {
                    memory: synthetic_memory(&scope, Kind::Turn, text, at),
                    embedding: Some((model.clone(), vector)),
                }
            })
            .collect();
        store.insert_many(batch)?;
        bar.update("inserting", (chunk[0] + chunk.len()).min(n), n);
    }
    bar.finish();
    Ok(())
}

/// About `bytes` of text: corpus sentences from `start` on, joined.
fn text_of(corpus: &[String], start: usize, bytes: usize) -> String {
    let mut text = String::with_capacity(bytes + 200);
    let mut i = start;
    while text.len() < bytes {
        if !text.is_empty() {
            text.push(' ');
        }
        text.push_str(&corpus[i % corpus.len()]);
        i += 1;
    }
    text
}

/// `base` moved by `noise` towards the random direction of `seed`, normalised: with
/// `noise` 0.1, about 0.995 in cosine to `base`.
fn near(base: &[f32], seed: usize, noise: f32) -> Vec<f32> {
    normalised(base.iter().zip(unit_vector(seed, base.len())).map(|(b, d)| b + noise * d).collect())
}

fn mib(value: Option<f64>) -> String {
    value.map_or("?".into(), |m| format!("{m:.0}"))
}

/// Samples `RssAnon` every 10 ms on a thread of its own, keeping the highest (the kernel
/// keeps a peak only for the whole resident size, which includes mapped file pages).
struct AnonSampler {
    stop: Arc<std::sync::atomic::AtomicBool>,
    thread: std::thread::JoinHandle<Option<f64>>,
}

impl AnonSampler {
    fn start() -> Self {
        let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let flag = stop.clone();
        let thread = std::thread::spawn(move || {
            let mut peak = rss("RssAnon");
            while !flag.load(std::sync::atomic::Ordering::Relaxed) {
                peak = higher(peak, rss("RssAnon"));
                std::thread::sleep(std::time::Duration::from_millis(10));
            }
            higher(peak, rss("RssAnon"))
        });
        Self { stop, thread }
    }

    fn stop(self) -> Option<f64> {
        self.stop.store(true, std::sync::atomic::Ordering::Relaxed);
        self.thread.join().ok().flatten()
    }
}

fn higher(a: Option<f64>, b: Option<f64>) -> Option<f64> {
    match (a, b) {
        (Some(a), Some(b)) => Some(a.max(b)),
        (a, b) => a.or(b),
    }
}

/// A line of /proc/self/status in MiB.
fn rss(field: &str) -> Option<f64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with(field) && l[field.len()..].starts_with(':'))?;
    let kb: f64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb / 1024.0)
}

/// Resets VmHWM to the current resident size (Linux: writing 5 to clear_refs).
fn reset_peak() {
    let _ = std::fs::write("/proc/self/clear_refs", "5");
}
