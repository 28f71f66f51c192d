//! Times the store's search path on both backends with the same synthetic user: dense and
//! lexical search (150 candidates, as a recall asks), a strengthening recall of ten
//! results, and inserting. Medians and 95th percentiles in milliseconds.
//!
//! ```text
//! URL="$(scripts/postgres-dev.sh start | tail -n 1)"
//! cargo run --release -p membank-store --features postgres --example search_timing -- "$URL" 10000
//! ```
//!
//! The PostgreSQL side runs in a database of its own (`membank_timing_<pid>`, dropped at the
//! end) on the server of the URL. The data: one user, `N` memories of 8 to 30 words drawn
//! from a Zipf-distributed vocabulary of 5,000 words, each with a random 384-dimensional
//! unit vector (MiniLM's size); queries of one to four words drawn the same way but never
//! among the 50 commonest (the stopwords real queries drop), and the same queries with one
//! of the five commonest words added (in most memories: the worst case of lexical search).
//! `NO_AUTOVACUUM=1` keeps the planner without statistics during the first pass;
//! `KEEP_DATABASE=1` keeps the PostgreSQL database. A stopgap until
//! `membank bench … --db postgres://…` measures the whole recall over HTTP.

use std::time::Instant;

use chrono::{Duration, TimeZone, Utc};
use membank_core::forgetting::ForgettingPolicy;
use membank_core::{ForgettingState, Kind, Memory, MemoryId, Scope, Source, Status, TenantId, UserId};
use membank_store::{EmbeddingModel, NewMemory, PgStore, RecallRecord, SearchFilter, SqliteStore, Store};

const DIM: usize = 384;
const VOCABULARY: usize = 5_000;
const CANDIDATES: usize = 150;

struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn unit(&mut self) -> f64 {
        (self.next() >> 11) as f64 / (1u64 << 53) as f64
    }
    fn vector(&mut self) -> Vec<f32> {
        let mut v: Vec<f32> = (0..DIM).map(|_| (self.unit() * 2.0 - 1.0) as f32).collect();
        let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt();
        v.iter_mut().for_each(|x| *x /= norm);
        v
    }
}

/// Word `i` of the vocabulary: pronounceable, distinct.
fn word(mut i: usize) -> String {
    const SYLLABLES: [&str; 20] = [
        "ka", "lo", "mi", "ra", "te", "su", "no", "vi", "de", "pa", "ri", "go", "an", "el", "or", "us", "ba", "fe",
        "ti", "mo",
    ];
    let mut out = String::new();
    loop {
        out.push_str(SYLLABLES[i % 20]);
        i /= 20;
        if i == 0 {
            break;
        }
    }
    out
}

/// Zipf(1) over the vocabulary by inverse transform on the harmonic numbers.
struct Zipf(Vec<f64>);

impl Zipf {
    fn new() -> Self {
        let mut cumulative = Vec::with_capacity(VOCABULARY);
        let mut sum = 0.0;
        for k in 1..=VOCABULARY {
            sum += 1.0 / k as f64;
            cumulative.push(sum);
        }
        Self(cumulative)
    }
    fn sample(&self, rng: &mut Rng) -> usize {
        let target = rng.unit() * self.0[VOCABULARY - 1];
        self.0.partition_point(|&c| c < target)
    }
}

fn text(rng: &mut Rng, zipf: &Zipf, words: usize) -> String {
    (0..words).map(|_| word(zipf.sample(rng))).collect::<Vec<_>>().join(" ")
}

fn summary(label: &str, mut millis: Vec<f64>) {
    millis.sort_by(f64::total_cmp);
    let at = |q: f64| millis[((millis.len() - 1) as f64 * q).round() as usize];
    println!("  {label:<28} median {:>8.3} ms   p95 {:>8.3} ms   (n = {})", at(0.5), at(0.95), millis.len());
}

fn time<T>(f: impl FnOnce() -> T) -> (T, f64) {
    let start = Instant::now();
    let value = f();
    (value, start.elapsed().as_secs_f64() * 1000.0)
}

fn run(name: &str, store: &dyn Store, memories: &[NewMemory], queries: &[(Vec<f32>, Vec<String>)], scope: &Scope) {
    println!("{name}");
    let t0 = Utc.with_ymd_and_hms(2024, 1, 1, 0, 0, 0).unwrap();
    store.ensure_user(&scope.tenant, &scope.user, t0).unwrap();
    let (_, load) = time(|| {
        for chunk in memories.chunks(1000) {
            store.insert_many(chunk.to_vec()).unwrap();
        }
    });
    println!(
        "  load {} memories in batches of 1,000: {:.1} s ({:.0} memories/s)",
        memories.len(),
        load / 1000.0,
        memories.len() as f64 / (load / 1000.0)
    );
    let model = EmbeddingModel { id: "timing/model".into(), dim: DIM };
    let filter = SearchFilter::default();
    // Warm-up (the SQLite store loads its caches; PostgreSQL reads its pages once).
    for (vector, terms) in queries.iter().take(5) {
        store.dense_search(scope, &model, vector, &filter, CANDIDATES).unwrap();
        store.lexical_search(scope, terms, &filter, CANDIDATES).unwrap();
    }
    let mut dense = Vec::new();
    let mut lexical = Vec::new();
    let mut found = Vec::new();
    for (vector, terms) in queries {
        let (hits, ms) = time(|| store.dense_search(scope, &model, vector, &filter, CANDIDATES).unwrap());
        dense.push(ms);
        let (words, ms) = time(|| store.lexical_search(scope, terms, &filter, CANDIDATES).unwrap());
        lexical.push(ms);
        found.push((hits, words));
    }
    summary("dense search (150)", dense);
    summary("lexical search (150)", lexical);
    let policy = ForgettingPolicy::default();
    let mut recall = Vec::new();
    let mut fetch = Vec::new();
    for (i, (hits, _)) in found.iter().enumerate().take(100) {
        let ids: Vec<MemoryId> = hits.iter().take(10).map(|h| h.id).collect();
        let (_, ms) = time(|| store.get_many(scope, &ids).unwrap());
        fetch.push(ms);
        let record = RecallRecord {
            query_id: format!("q{i}"),
            now: t0 + Duration::days(1),
            results: hits.iter().take(10).map(|h| (h.id, h.score)).collect(),
            query_vector: Some(queries[i].0.clone()),
            include_archived: false,
            reminisced: Vec::new(),
        };
        let (_, ms) = time(|| store.record_recall(scope, &record, Some(&policy)).unwrap());
        recall.push(ms);
    }
    summary("get_many (10)", fetch);
    summary("record_recall (10, strengthen)", recall);
    let mut single = Vec::new();
    for new in memories.iter().take(100) {
        let mut copy = new.clone();
        copy.memory.id = MemoryId::generate(copy.memory.occurred_at);
        let (_, ms) = time(|| store.insert(copy).unwrap());
        single.push(ms);
    }
    summary("insert (one memory)", single);
}

fn main() {
    let mut args = std::env::args().skip(1);
    let url = args.next().expect("usage: search_timing POSTGRES_URL [MEMORIES] [QUERIES]");
    let n: usize = args.next().map_or(10_000, |a| a.parse().expect("MEMORIES is a number"));
    let q: usize = args.next().map_or(200, |a| a.parse().expect("QUERIES is a number"));
    let scope = Scope::user(TenantId::default_tenant(), UserId::new("timing").unwrap());
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let zipf = Zipf::new();
    let t0 = Utc.with_ymd_and_hms(2024, 1, 1, 0, 0, 0).unwrap();
    let memories: Vec<NewMemory> = (0..n)
        .map(|i| {
            let at = t0 + Duration::minutes(i as i64 * 7);
            let words = 8 + (rng.next() % 23) as usize;
            let content = text(&mut rng, &zipf, words);
            let memory = Memory {
                id: MemoryId::generate(at),
                scope: scope.clone(),
                kind: Kind::Turn,
                source: Source::User,
                content: Some(content),
                user_text: None,
                assistant_text: None,
                occurred_at: at,
                recorded_at: at,
                day: at.date_naive(),
                forgetting: ForgettingState::new(at),
                status: Status::Active,
                superseded_by: None,
                derived_from: Vec::new(),
                metadata: Default::default(),
            };
            NewMemory {
                memory,
                embedding: Some((EmbeddingModel { id: "timing/model".into(), dim: DIM }, rng.vector())),
            }
        })
        .collect();
    // A query's words are drawn like the text's but never from the 50 commonest, which
    // stand for the stopwords `query_terms` drops from real queries.
    let queries: Vec<(Vec<f32>, Vec<String>)> = (0..q)
        .map(|_| {
            let words = 1 + (rng.next() % 4) as usize;
            let mut terms: Vec<String> = Vec::new();
            while terms.len() < words {
                let rank = zipf.sample(&mut rng);
                if rank >= 50 {
                    terms.push(word(rank));
                }
            }
            (rng.vector(), membank_core::text::query_terms(&terms.join(" ")))
        })
        .collect();
    // The worst case: a query with one of the five commonest words (in most memories).
    let common: Vec<(Vec<f32>, Vec<String>)> = queries
        .iter()
        .enumerate()
        .map(|(i, (v, terms))| {
            let mut terms = terms.clone();
            terms.push(word(i % 5));
            (v.clone(), terms)
        })
        .collect();

    let dir = tempfile::tempdir().unwrap();
    let sqlite = SqliteStore::open(dir.path().join("timing.db")).unwrap();
    run("SQLite (in-process caches)", &sqlite, &memories, &queries, &scope);
    println!("SQLite, searches again");
    time_searches(&sqlite, &queries, &common, &scope);

    let name = format!("membank_timing_{}", std::process::id());
    let mut admin = postgres::Client::connect(&url, postgres::NoTls).unwrap();
    admin.batch_execute(&format!("CREATE DATABASE {name}")).unwrap();
    let db_url = match url.rsplit_once('/') {
        Some((server, _)) => format!("{server}/{name}"),
        None => panic!("POSTGRES_URL must end in /DATABASE"),
    };
    {
        let pg = PgStore::open(&db_url).unwrap();
        let mut client = postgres::Client::connect(&db_url, postgres::NoTls).unwrap();
        if std::env::var("NO_AUTOVACUUM").is_ok() {
            // The planner without statistics, as right after a large import: the plans must
            // stay sane (they once went quadratic there).
            for table in ["users", "memories", "embeddings", "memory_terms", "events"] {
                client.batch_execute(&format!("ALTER TABLE {table} SET (autovacuum_enabled = false)")).unwrap();
            }
        }
        run("PostgreSQL (exact SQL, before VACUUM ANALYZE)", &pg, &memories, &queries, &scope);
        // What autovacuum does after a bulk load (statistics for the planner, the visibility
        // map for index-only scans), so the plans timed next are the steady ones.
        client.batch_execute("VACUUM ANALYZE").unwrap();
        println!("PostgreSQL after VACUUM ANALYZE, searches again");
        time_searches(&pg, &queries, &common, &scope);
    }
    if std::env::var("KEEP_DATABASE").is_ok() {
        println!("kept {db_url}");
    } else {
        admin.batch_execute(&format!("DROP DATABASE {name} WITH (FORCE)")).unwrap();
    }
}

fn time_searches(
    store: &dyn Store,
    queries: &[(Vec<f32>, Vec<String>)],
    common: &[(Vec<f32>, Vec<String>)],
    scope: &Scope,
) {
    let model = EmbeddingModel { id: "timing/model".into(), dim: DIM };
    let filter = SearchFilter::default();
    let mut dense = Vec::new();
    let mut lexical = Vec::new();
    for (vector, terms) in queries {
        dense.push(time(|| store.dense_search(scope, &model, vector, &filter, CANDIDATES).unwrap()).1);
        lexical.push(time(|| store.lexical_search(scope, terms, &filter, CANDIDATES).unwrap()).1);
    }
    summary("dense search (150)", dense);
    summary("lexical search (150)", lexical);
    let mut lexical = Vec::new();
    for (_, terms) in common {
        lexical.push(time(|| store.lexical_search(scope, terms, &filter, CANDIDATES).unwrap()).1);
    }
    summary("lexical, with a common word", lexical);
}
