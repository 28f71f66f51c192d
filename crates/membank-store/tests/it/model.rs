//! Model-based test: a random sequence of writes through two store handles on the same
//! file, each followed by a comparison of everything observable (list, counts, dense and
//! lexical search) with a plain in-memory model. The dense search is checked against a
//! brute-force scan, so the vector cache must track appends and status changes made
//! through the *other* handle. A third handle, checked the same way, has a cache budget of
//! a few kilobytes, so its users' entries are evicted and reloaded (or, once larger than
//! the budget, never kept) between the writes.

use std::collections::BTreeMap;

use chrono::{Duration, TimeZone, Utc};
use membank_core::forgetting::ForgettingPolicy;
use membank_core::{ForgettingState, Kind, Memory, MemoryId, Scope, Source, Status, TenantId, Timestamp, UserId};
use membank_store::{
    EmbeddingModel, ListQuery, NewMemory, RecallRecord, SearchFilter, SqliteStore, Store, StoreOptions,
};
use proptest::prelude::*;

const DIM: usize = 8;
const USERS: [&str; 2] = ["ana", "ben"];
const WORDS: [&str; 5] = ["apple", "river", "violin", "garden", "猫咪"];

fn model_id() -> EmbeddingModel {
    EmbeddingModel { id: "test/model".into(), dim: DIM }
}

fn scope(user: usize) -> Scope {
    Scope::user(TenantId::default_tenant(), UserId::new(USERS[user]).unwrap())
}

fn t0() -> Timestamp {
    Utc.with_ymd_and_hms(2024, 3, 1, 0, 0, 0).unwrap()
}

fn unit(seed: u64) -> Vec<f32> {
    let mut x = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
    let mut v: Vec<f32> = (0..DIM)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            (x % 2000) as f32 / 1000.0 - 1.0
        })
        .collect();
    let norm = v.iter().map(|a| a * a).sum::<f32>().sqrt().max(1e-6);
    v.iter_mut().for_each(|a| *a /= norm);
    v
}

#[derive(Debug, Clone)]
enum Op {
    Insert { handle: usize, user: usize, word: usize, seed: u64 },
    Archive { handle: usize, target: usize },
    Restore { handle: usize, target: usize },
    Pin { handle: usize, target: usize, pinned: bool },
    Erase { handle: usize, target: usize },
    Recall { handle: usize, target: usize },
    Sweep { handle: usize, user: usize, days: i64 },
}

fn op() -> impl Strategy<Value = Op> {
    let h = 0..2usize;
    prop_oneof![
        4 => (h.clone(), 0..2usize, 0..WORDS.len(), any::<u64>()).prop_map(|(handle, user, word, seed)| Op::Insert { handle, user, word, seed }),
        1 => (h.clone(), any::<usize>()).prop_map(|(handle, target)| Op::Archive { handle, target }),
        1 => (h.clone(), any::<usize>()).prop_map(|(handle, target)| Op::Restore { handle, target }),
        1 => (h.clone(), any::<usize>(), any::<bool>()).prop_map(|(handle, target, pinned)| Op::Pin { handle, target, pinned }),
        1 => (h.clone(), any::<usize>()).prop_map(|(handle, target)| Op::Erase { handle, target }),
        2 => (h.clone(), any::<usize>()).prop_map(|(handle, target)| Op::Recall { handle, target }),
        1 => (h, 0..2usize, 0..5i64).prop_map(|(handle, user, days)| Op::Sweep { handle, user, days }),
    ]
}

/// What the model knows of one memory.
#[derive(Debug, Clone, PartialEq)]
struct Expected {
    user: usize,
    word: usize,
    vector: Vec<f32>,
    status: Status,
    state: ForgettingState,
}

fn new_memory(user: usize, word: usize, at: Timestamp) -> Memory {
    Memory {
        source: Source::Agent,
        ..crate::memory(&scope(user), Kind::Note, &format!("we talked about the {}", WORDS[word]), at)
    }
}

fn check(store: &SqliteStore, model: &BTreeMap<MemoryId, Expected>) -> Result<(), TestCaseError> {
    for user in 0..USERS.len() {
        let listed = store
            .list(&scope(user), &ListQuery { statuses: Status::ALL.to_vec(), limit: 1000, ..Default::default() })
            .unwrap();
        let expected: BTreeMap<&MemoryId, &Expected> = model.iter().filter(|(_, e)| e.user == user).collect();
        prop_assert_eq!(listed.len(), expected.len());
        for memory in &listed {
            let e = expected[&memory.id];
            prop_assert_eq!(memory.status, e.status);
            prop_assert_eq!(memory.forgetting, e.state);
            prop_assert_eq!(memory.content.is_none(), e.status == Status::Erased);
        }
        // Dense: brute force over the model's active memories of this user.
        let query = unit(user as u64 + 99);
        let hits = store.dense_search(&scope(user), &model_id(), &query, &SearchFilter::default(), 1000).unwrap();
        let mut want: Vec<(MemoryId, f32)> = expected
            .iter()
            .filter(|(_, e)| e.status == Status::Active)
            .map(|(id, e)| (**id, e.vector.iter().zip(&query).map(|(a, b)| a * b).sum::<f32>()))
            .collect();
        want.sort_by(|a, b| b.1.total_cmp(&a.1));
        prop_assert_eq!(hits.len(), want.len());
        for (hit, (id, score)) in hits.iter().zip(&want) {
            prop_assert!(
                (hit.score - f64::from(*score)).abs() < 1e-5,
                "score of {} is {} not {}",
                id,
                hit.score,
                score
            );
        }
        // Lexical: exactly the active memories containing the word.
        for (w, word) in WORDS.iter().enumerate() {
            let terms = membank_core::text::query_terms(word);
            let found: std::collections::BTreeSet<MemoryId> = store
                .lexical_search(&scope(user), &terms, &SearchFilter::default(), 1000)
                .unwrap()
                .into_iter()
                .map(|h| h.id)
                .collect();
            let want: std::collections::BTreeSet<MemoryId> = expected
                .iter()
                .filter(|(_, e)| e.status == Status::Active && e.word == w)
                .map(|(id, _)| **id)
                .collect();
            prop_assert_eq!(found, want, "lexical {}", word);
        }
    }
    prop_assert!(store.integrity_check().unwrap().is_empty());
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 16, ..ProptestConfig::default() })]

    #[test]
    fn the_store_behaves_like_the_model(ops in proptest::collection::vec(op(), 1..60)) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("model.db");
        let handles = [SqliteStore::open(&path).unwrap(), SqliteStore::open(&path).unwrap()];
        let tight = SqliteStore::open_with(&path, StoreOptions { cache_budget: Some(3000), ..Default::default() }).unwrap();
        let policy = ForgettingPolicy::default();
        let mut model: BTreeMap<MemoryId, Expected> = BTreeMap::new();
        let mut order: Vec<MemoryId> = Vec::new();
        let mut now = t0();
        for user in 0..USERS.len() {
            handles[0].ensure_user(&scope(user).tenant, &scope(user).user, now).unwrap();
        }
        for op in ops {
            now += Duration::hours(3);
            let pick = |target: usize| order.get(target % order.len().max(1)).copied();
            match op {
                Op::Insert { handle, user, word, seed } => {
                    let memory = new_memory(user, word, now);
                    let vector = unit(seed);
                    let stored = handles[handle].insert(NewMemory { memory: memory.clone(), embedding: Some((model_id(), vector.clone())) }).unwrap();
                    prop_assert_eq!(&stored, &memory);
                    order.push(memory.id);
                    model.insert(memory.id, Expected { user, word, vector, status: Status::Active, state: memory.forgetting });
                }
                Op::Archive { handle, target } => if let Some(id) = pick(target) {
                    let e = model.get_mut(&id).unwrap();
                    let result = handles[handle].archive(&scope(e.user), id, "test", now);
                    prop_assert_eq!(result.is_ok(), e.status == Status::Active);
                    if result.is_ok() { e.status = Status::Archived; }
                },
                Op::Restore { handle, target } => if let Some(id) = pick(target) {
                    let e = model.get_mut(&id).unwrap();
                    let result = handles[handle].restore(&scope(e.user), id, now);
                    prop_assert_eq!(result.is_ok(), e.status == Status::Archived);
                    if result.is_ok() {
                        e.status = Status::Active;
                        e.state.last_recalled_at = e.state.last_recalled_at.max(now);
                    }
                },
                Op::Pin { handle, target, pinned } => if let Some(id) = pick(target) {
                    let e = model.get_mut(&id).unwrap();
                    let result = handles[handle].set_pinned(&scope(e.user), id, pinned, now);
                    prop_assert_eq!(result.is_ok(), e.status != Status::Erased);
                    if result.is_ok() { e.state.pinned = pinned; }
                },
                Op::Erase { handle, target } => if let Some(id) = pick(target) {
                    let e = model.get_mut(&id).unwrap();
                    handles[handle].erase(&scope(e.user), id, now).unwrap();
                    e.status = Status::Erased;
                },
                Op::Recall { handle, target } => if let Some(id) = pick(target) {
                    let e = model.get_mut(&id).unwrap();
                    let record = RecallRecord { query_id: "q".into(), now, results: vec![(id, 0.5)], query_vector: None, include_archived: false, reminisced: Vec::new() };
                    handles[handle].record_recall(&scope(e.user), &record, Some(&policy)).unwrap();
                    if e.status == Status::Active { e.state = policy.strengthen(&e.state, now); }
                },
                Op::Sweep { handle, user, days } => {
                    now += Duration::days(days);
                    let active: Vec<(MemoryId, ForgettingState)> = model.iter().filter(|(_, e)| e.user == user && e.status == Status::Active).map(|(id, e)| (*id, e.state)).collect();
                    let plan = policy.plan_sweep(active.iter().map(|(id, s)| (*id, s)), now);
                    let report = handles[handle].sweep(&scope(user), &policy, now, false).unwrap();
                    let mut got: Vec<MemoryId> = report.archived.iter().map(|a| a.id).collect();
                    let mut want: Vec<MemoryId> = plan.archive.iter().map(|a| a.id).collect();
                    got.sort();
                    want.sort();
                    prop_assert_eq!(&got, &want);
                    for id in want { model.get_mut(&id).unwrap().status = Status::Archived; }
                }
            }
            // Both handles must agree with the model after every step.
            check(&handles[0], &model)?;
            check(&handles[1], &model)?;
            check(&tight, &model)?;
            prop_assert!(tight.cache_stats().bytes() <= 3000);
        }
    }
}
