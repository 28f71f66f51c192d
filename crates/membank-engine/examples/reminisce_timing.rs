//! Times a whole recall with `reminisce` never, auto (the trigger not firing) and always,
//! over one user with `N` memories of which half are archived: medians and 95th
//! percentiles in milliseconds over many queries.
//!
//! ```text
//! cargo run --release -p membank-engine --example reminisce_timing -- 10000 200
//! cargo run --release -p membank-engine --example reminisce_timing -- 100000 200
//! ```
//!
//! The embedder is the hashing test embedder (256 dimensions), so this times the search,
//! fusion, selection and logging, not a sentence encoder (which costs the same in every
//! mode, except that a consulted `auto` recall embeds its query a second time). Memories
//! are sentences of words drawn from a vocabulary of 5,000; every other one is archived.
//! Queries are `strengthen: false` (nothing written), so each mode sees the same store.
//! Auto queries whose trigger fired are reported apart.

use std::sync::Arc;
use std::time::Instant;

use chrono::{Duration, TimeZone, Utc};
use membank_embed::{Embedder, HashEmbedder};
use membank_engine::core::{
    ForgettingState, Kind, ManualClock, Memory, MemoryId, Scope, Source, Status, TenantId, UserId,
};
use membank_engine::{Engine, EngineConfig, RecallRequest, Reminisce};
use membank_store::{EmbeddingModel, NewMemory, SqliteStore, Store};

struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn words(&mut self, n: usize) -> String {
        (0..n).map(|_| format!("w{}", (self.next() % 5000))).collect::<Vec<_>>().join(" ")
    }
}

fn percentile(sorted: &[f64], p: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    sorted[((sorted.len() - 1) as f64 * p).round() as usize]
}

fn main() {
    let mut args = std::env::args().skip(1);
    let n: usize = args.next().map_or(10_000, |a| a.parse().expect("MEMORIES is a number"));
    let q: usize = args.next().map_or(200, |a| a.parse().expect("QUERIES is a number"));
    let dir = tempfile::tempdir().unwrap();
    let store = Arc::new(SqliteStore::open(dir.path().join("timing.db")).unwrap());
    let embedder = Arc::new(HashEmbedder::new(256));
    let t0 = Utc.with_ymd_and_hms(2024, 1, 1, 0, 0, 0).unwrap();
    let clock = Arc::new(ManualClock::new(t0 + Duration::days(400)));
    let engine = Engine::new(store.clone(), embedder.clone(), clock, EngineConfig::default()).unwrap();
    let scope = Scope::user(TenantId::default_tenant(), UserId::new("timing").unwrap());
    store.ensure_user(&scope.tenant, &scope.user, t0).unwrap();
    let model = EmbeddingModel { id: embedder.model_id().to_string(), dim: embedder.dim() };
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let started = Instant::now();
    for chunk in 0..n.div_ceil(5_000) {
        let batch: Vec<NewMemory> = (chunk * 5_000..((chunk + 1) * 5_000).min(n))
            .map(|i| {
                let at = t0 + Duration::minutes(i as i64 * 3);
                let len = 8 + (rng.next() % 20) as usize;
                let content = rng.words(len);
                let vector = embedder.embed(&[content.as_str()]).unwrap().remove(0);
                let memory = Memory {
                    id: MemoryId::generate(at),
                    scope: scope.clone(),
                    kind: Kind::Note,
                    source: Source::User,
                    content: Some(content),
                    user_text: None,
                    assistant_text: None,
                    occurred_at: at,
                    recorded_at: at,
                    day: at.date_naive(),
                    forgetting: ForgettingState::new(at),
                    status: if i % 2 == 1 { Status::Archived } else { Status::Active },
                    superseded_by: None,
                    derived_from: Vec::new(),
                    metadata: Default::default(),
                };
                NewMemory { memory, embedding: Some((model.clone(), vector)) }
            })
            .collect();
        store.insert_many(batch).unwrap();
    }
    println!("{n} memories ({} archived) stored in {:.1} s", n / 2, started.elapsed().as_secs_f64());
    let queries: Vec<String> = (0..q)
        .map(|_| {
            let len = 2 + (rng.next() % 4) as usize;
            rng.words(len)
        })
        .collect();
    let recall = |query: &str, mode: Reminisce| {
        let request =
            RecallRequest { reminisce: mode, strengthen: Some(false), ..RecallRequest::new(scope.clone(), query, 10) };
        let start = Instant::now();
        let response = engine.recall(request).unwrap();
        (start.elapsed().as_secs_f64() * 1000.0, response.reminiscence.consulted)
    };
    // Warm the caches (the first recall loads every vector and builds the BM25 index).
    for mode in [Reminisce::Never, Reminisce::Auto, Reminisce::Always] {
        recall(&queries[0], mode);
    }
    for mode in [Reminisce::Never, Reminisce::Auto, Reminisce::Always] {
        let (mut quiet, mut fired) = (Vec::new(), Vec::new());
        for query in &queries {
            let (ms, consulted) = recall(query, mode);
            if consulted && mode == Reminisce::Auto { fired.push(ms) } else { quiet.push(ms) }
        }
        quiet.sort_by(f64::total_cmp);
        fired.sort_by(f64::total_cmp);
        let label = match mode {
            Reminisce::Auto => "auto (not firing)",
            other => other.as_str(),
        };
        println!(
            "{n:>7} memories  {label:<18} n = {:>4}  median {:>7.2} ms  p95 {:>7.2} ms",
            quiet.len(),
            percentile(&quiet, 0.5),
            percentile(&quiet, 0.95)
        );
        if !fired.is_empty() {
            println!(
                "{n:>7} memories  {:<18} n = {:>4}  median {:>7.2} ms  p95 {:>7.2} ms",
                "auto (fired)",
                fired.len(),
                percentile(&fired, 0.5),
                percentile(&fired, 0.95)
            );
        }
    }
}
