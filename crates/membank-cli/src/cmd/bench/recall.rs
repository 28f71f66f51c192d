//! `bench recall`: recall latency for one user of 1k, 10k or 100k memories, whole and by
//! part (dense scan, BM25, query embedding), and the search caches' size.

use std::path::Path;
use std::sync::Arc;
use std::time::Instant;

use anyhow::{Context as _, Result};
use membank_engine::core::{ManualClock, MemoryId, Scope, TenantId, UserId};
use membank_engine::{Engine, RecallRequest};
use membank_store::{EmbeddingModel, SqliteStore, Store, StoreOptions};
use serde::Serialize;

use super::dataset::{fill, sentences};
use super::stats::Latency;
use crate::context::Context;

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
    /// The dense scan's kernels.
    pub scan_kernels: super::paths::ScanKernels,
    /// One entry per store size, in the order asked.
    pub results: Vec<RecallResult>,
    /// The embedding kernel paths (the CPU's best; a remote embedder ignores them).
    pub kernels: super::EmbedKernels,
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

/// Runs `bench recall` for each size, building (or topping up) a cached database per size.
pub fn recall(ctx: &Context, sizes: &[usize], queries: usize, dir: &Path, data: &Path) -> Result<RecallReport> {
    let embedder = ctx.embedder.load()?;
    let model = EmbeddingModel { id: embedder.model_id().to_string(), dim: embedder.dim() };
    std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    let corpus = sentences(data, 4000)?;
    let questions = super::dataset::questions(&corpus, queries);
    let k = 10;
    let mut report = RecallReport {
        benchmark: "recall",
        model: model.id.clone(),
        k,
        queries: questions.len(),
        scan_kernels: super::paths::scan(),
        results: Vec::new(),
        kernels: super::embed_kernels(),
    };
    if !ctx.cli_json {
        println!("{}", report.kernels);
        println!("{}", report.scan_kernels);
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
