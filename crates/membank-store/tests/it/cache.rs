//! The cache budget on real SQLite files: many users whose caches together exceed a small
//! budget get exactly the results (ids, order, scores) of a store with no limit, the
//! tracked bytes stay within the budget, evictions happen and are counted, an evicted user
//! reloads, concurrent searches while evicting stay right, a user larger than the budget is
//! served without being kept, and writes, erasures and archives made while a user is
//! evicted are seen, as are those made while it stays cached. The PostgreSQL store keeps the same caches under the same budget:
//! the first of these runs on it too.

use std::path::Path;

use chrono::{Duration, TimeZone, Utc};
use membank_core::{Kind, Memory, MemoryId, Scope, TenantId, Timestamp, UserId};
use membank_store::{CacheKind, EmbeddingModel, Hit, NewMemory, SearchFilter, SqliteStore, Store, StoreOptions};

const DIM: usize = 48;
const WORDS: [&str; 40] = [
    "apple", "river", "violin", "garden", "train", "sister", "paris", "coffee", "winter", "piano", "cat", "miso",
    "hiking", "mountain", "wedding", "june", "doctor", "exam", "bread", "lake", "novel", "guitar", "summer", "office",
    "rain", "bicycle", "museum", "birthday", "soup", "beach", "letter", "garden", "猫咪", "咖啡", "火车", "花园",
    "dream", "island", "market", "storm",
];

/// A deterministic stream of numbers (splitmix64).
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }

    fn unit(&mut self) -> Vec<f32> {
        let mut v: Vec<f32> = (0..DIM).map(|_| (self.next() % 2001) as f32 / 1000.0 - 1.0).collect();
        let norm = v.iter().map(|a| a * a).sum::<f32>().sqrt().max(1e-6);
        v.iter_mut().for_each(|a| *a /= norm);
        v
    }

    fn text(&mut self) -> String {
        let n = 4 + self.below(8);
        (0..n).map(|_| WORDS[self.below(WORDS.len())]).collect::<Vec<_>>().join(" ")
    }
}

fn model() -> EmbeddingModel {
    EmbeddingModel { id: "test/cache".into(), dim: DIM }
}

fn scope(user: usize) -> Scope {
    Scope::user(TenantId::default_tenant(), UserId::new(&format!("user-{user}")).unwrap())
}

fn t0() -> Timestamp {
    Utc.with_ymd_and_hms(2024, 3, 1, 0, 0, 0).unwrap()
}

fn new_memory(rng: &mut Rng, user: usize, i: usize) -> NewMemory {
    let kind = if i.is_multiple_of(3) { Kind::Note } else { Kind::Turn };
    let mut memory: Memory = crate::memory(&scope(user), kind, &rng.text(), t0() + Duration::hours(i as i64));
    if i.is_multiple_of(5) {
        memory.scope.agent = Some(membank_core::AgentLabel::new("planner").unwrap());
    }
    NewMemory { memory, embedding: Some((model(), rng.unit())) }
}

/// Writes `per_user[u]` memories for each user `u` (every ninth one archived) with a
/// handle of its own.
fn build(path: &Path, per_user: &[usize]) {
    build_into(&SqliteStore::open(path).unwrap(), per_user);
}

/// [`build`] into any store.
fn build_into(store: &dyn Store, per_user: &[usize]) {
    let mut rng = Rng(7);
    for (user, &n) in per_user.iter().enumerate() {
        store.ensure_user(&scope(user).tenant, &scope(user).user, t0()).unwrap();
        let batch: Vec<NewMemory> = (0..n).map(|i| new_memory(&mut rng, user, i)).collect();
        let ids: Vec<MemoryId> = batch.iter().map(|m| m.memory.id).collect();
        store.insert_many(batch).unwrap();
        for id in ids.iter().step_by(9) {
            store.archive(&scope(user), *id, "test", t0() + Duration::days(30)).unwrap();
        }
    }
}

/// Every search a test makes of one user: dense and lexical, under several filters and
/// labels, with queries fixed by the user's number.
fn searches(store: &dyn Store, user: usize) -> Vec<Vec<Hit>> {
    let mut rng = Rng(1000 + user as u64);
    let mut out = Vec::new();
    let filters = [
        SearchFilter::default(),
        SearchFilter { include_archived: true, ..Default::default() },
        SearchFilter { kinds: vec![Kind::Note], ..Default::default() },
        SearchFilter {
            day_from: Some((t0() + Duration::days(2)).date_naive()),
            day_to: Some((t0() + Duration::days(5)).date_naive()),
            ..Default::default()
        },
    ];
    for filter in &filters {
        for _ in 0..2 {
            let query = rng.unit();
            out.push(store.dense_search(&scope(user), &model(), &query, filter, 20).unwrap());
            let terms: Vec<String> = (0..3).map(|_| WORDS[rng.below(WORDS.len())].to_string()).collect();
            out.push(store.lexical_search(&scope(user), &terms, filter, 20).unwrap());
        }
    }
    let mut agent = scope(user);
    agent.agent = Some(membank_core::AgentLabel::new("planner").unwrap());
    out.push(store.dense_search(&agent, &model(), &rng.unit(), &SearchFilter::default(), 20).unwrap());
    out.push(
        store
            .lexical_search(&agent, &["garden".to_string(), "rain".to_string()], &SearchFilter::default(), 20)
            .unwrap(),
    );
    out
}

/// The budget (bytes) that holds about `users` users of an unbounded store's cache of
/// `all` users, from what it charged for them all.
fn budget_for(unbounded: &SqliteStore, all: usize, users: usize) -> u64 {
    unbounded.cache_stats().bytes() / all as u64 * users as u64
}

#[test]
fn many_users_beyond_the_budget_get_the_results_of_an_unbounded_store() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("cache.db");
    let users = 24;
    build(&path, &vec![150; users]);
    let unbounded = SqliteStore::open_with(&path, StoreOptions { cache_budget: None, ..Default::default() }).unwrap();
    let expected: Vec<Vec<Vec<Hit>>> = (0..users).map(|u| searches(&unbounded, u)).collect();
    let whole = unbounded.cache_stats();
    assert_eq!(
        (whole.vectors.entries, whole.terms.entries, whole.vectors.evictions + whole.terms.evictions),
        (users as u64, users as u64, 0)
    );
    assert!(expected.iter().flatten().any(|hits| !hits.is_empty()));
    // The real heap bytes, not a token count: at least the f32 rows, their int8 codes and
    // scales, and the row metadata of every cached row.
    let rows = 150 * users as u64;
    assert!(
        whole.vectors.bytes >= rows * (DIM as u64 * 5 + 4 + 40),
        "vectors charged {} bytes for {rows} rows",
        whole.vectors.bytes
    );
    assert!(whole.terms.bytes >= rows * (40 + 4 + 4 * 8), "terms charged {} bytes for {rows} rows", whole.terms.bytes);

    let budget = budget_for(&unbounded, users, 4);
    let bounded =
        SqliteStore::open_with(&path, StoreOptions { cache_budget: Some(budget), ..Default::default() }).unwrap();
    // In order twice (least-recently-used's worst case: every user was evicted before its
    // turn comes again), then in a scattered order.
    let mut rng = Rng(3);
    let order: Vec<usize> = (0..users).chain(0..users).chain((0..3 * users).map(|_| rng.below(users))).collect();
    for &user in &order {
        assert_eq!(searches(&bounded, user), expected[user], "user {user}");
        let stats = bounded.cache_stats();
        assert!(stats.bytes() <= budget, "{} bytes tracked over a budget of {budget}", stats.bytes());
        assert_eq!(stats.budget_bytes, Some(budget));
    }
    let stats = bounded.cache_stats();
    for kind in CacheKind::ALL {
        let c = stats.of(kind);
        assert!(c.evictions > 0, "{kind:?}: {c:?}");
        // Each user was loaded whole at least twice (the second pass), the rest of its
        // searches were hits.
        assert!(c.misses >= 2 * users as u64, "{kind:?}: {c:?}");
        assert!(c.hits > c.misses, "{kind:?}: {c:?}");
        assert!(c.entries < users as u64, "{kind:?}: {c:?}");
    }

    // User 0 was evicted long ago: searched again, it loads again and answers the same.
    let before = bounded.cache_stats();
    assert_eq!(searches(&bounded, 0), expected[0]);
    let after = bounded.cache_stats();
    assert_eq!(after.vectors.misses, before.vectors.misses + 1);
    assert_eq!(after.terms.misses, before.terms.misses + 1);
}

#[test]
fn a_user_larger_than_the_whole_budget_is_served_and_not_kept() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("cache.db");
    // Users 0 to 3 are small, user 4 is twenty times larger.
    build(&path, &[40, 40, 40, 40, 800]);
    let unbounded = SqliteStore::open_with(&path, StoreOptions { cache_budget: None, ..Default::default() }).unwrap();
    let mut expected: Vec<Vec<Vec<Hit>>> = (0..4).map(|u| searches(&unbounded, u)).collect();
    // Room for two and a half small users in both caches: less than either cache of the
    // large user.
    let budget = budget_for(&unbounded, 4, 5) / 2;
    let small = unbounded.cache_stats();
    expected.push(searches(&unbounded, 4));
    let whole = unbounded.cache_stats();
    for kind in CacheKind::ALL {
        assert!(whole.of(kind).bytes - small.of(kind).bytes > budget, "{kind:?}");
    }
    let bounded =
        SqliteStore::open_with(&path, StoreOptions { cache_budget: Some(budget), ..Default::default() }).unwrap();
    assert_eq!(searches(&bounded, 0), expected[0]);
    assert_eq!(searches(&bounded, 1), expected[1]);
    let kept = bounded.cache_stats();
    for _ in 0..2 {
        assert_eq!(searches(&bounded, 4), expected[4]);
    }
    let after = bounded.cache_stats();
    // Each of its searches loaded the large user and dropped it again...
    let searches_per_kind = (expected[4].len() / 2) as u64;
    assert_eq!(after.vectors.misses - kept.vectors.misses, 2 * searches_per_kind);
    assert_eq!(after.vectors.evictions - kept.vectors.evictions, 2 * searches_per_kind);
    // ... and evicted nobody else: the small users are still there, charged as before.
    assert_eq!(after.bytes(), kept.bytes());
    assert_eq!((after.vectors.entries, after.terms.entries), (2, 2));
    assert_eq!(searches(&bounded, 0), expected[0]);
    assert_eq!(bounded.cache_stats().vectors.misses, after.vectors.misses);

    // A budget of zero keeps nothing and still answers everything.
    let nothing = SqliteStore::open_with(&path, StoreOptions { cache_budget: Some(0), ..Default::default() }).unwrap();
    for (user, want) in expected.iter().enumerate() {
        assert_eq!(&searches(&nothing, user), want, "user {user}");
        let stats = nothing.cache_stats();
        assert_eq!((stats.bytes(), stats.vectors.entries, stats.terms.entries), (0, 0, 0));
    }
}

#[test]
fn concurrent_searches_while_evicting_return_the_unbounded_results() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("cache.db");
    let users = 12;
    build(&path, &vec![120; users]);
    let unbounded = SqliteStore::open_with(&path, StoreOptions { cache_budget: None, ..Default::default() }).unwrap();
    let expected: Vec<Vec<Vec<Hit>>> = (0..users).map(|u| searches(&unbounded, u)).collect();
    let budget = budget_for(&unbounded, users, 3);
    let bounded =
        SqliteStore::open_with(&path, StoreOptions { cache_budget: Some(budget), ..Default::default() }).unwrap();
    let done = std::sync::atomic::AtomicBool::new(false);
    std::thread::scope(|s| {
        let searchers: Vec<_> = (0..4u64)
            .map(|thread| {
                let (bounded, expected) = (&bounded, &expected);
                s.spawn(move || {
                    let mut rng = Rng(thread);
                    for _ in 0..40 {
                        let user = rng.below(users);
                        assert_eq!(searches(bounded, user), expected[user], "thread {thread}, user {user}");
                    }
                })
            })
            .collect();
        // A watcher: whatever the searchers are doing, the tracked total is within budget.
        let watcher = s.spawn(|| {
            let mut looks = 0u64;
            while !done.load(std::sync::atomic::Ordering::Relaxed) {
                let bytes = bounded.cache_stats().bytes();
                assert!(bytes <= budget, "{bytes} bytes tracked over a budget of {budget}");
                looks += 1;
                std::thread::yield_now();
            }
            looks
        });
        for searcher in searchers {
            searcher.join().unwrap();
        }
        done.store(true, std::sync::atomic::Ordering::Relaxed);
        assert!(watcher.join().unwrap() > 0);
    });
    let stats = bounded.cache_stats();
    assert!(stats.bytes() <= budget);
    assert!(stats.vectors.evictions > 0 && stats.terms.evictions > 0, "{stats:?}");
}

#[test]
fn writes_erasures_and_archives_while_a_user_is_evicted_are_seen() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("cache.db");
    let users = 6;
    build(&path, &vec![80; users]);
    let reference = |user: usize| {
        searches(
            &SqliteStore::open_with(&path, StoreOptions { cache_budget: None, ..Default::default() }).unwrap(),
            user,
        )
    };
    let sizing = SqliteStore::open_with(&path, StoreOptions { cache_budget: None, ..Default::default() }).unwrap();
    (0..users).for_each(|u| drop(searches(&sizing, u)));
    let budget = budget_for(&sizing, users, 2);
    let bounded =
        SqliteStore::open_with(&path, StoreOptions { cache_budget: Some(budget), ..Default::default() }).unwrap();
    // Another handle writes, as another process would.
    let writer = SqliteStore::open(&path).unwrap();
    let evict_user_0 = || {
        for user in 1..users {
            searches(&bounded, user);
        }
    };
    let mut rng = Rng(99);
    let user = scope(0);
    let all = SearchFilter { include_archived: true, ..Default::default() };
    let everything = |store: &SqliteStore| -> Vec<MemoryId> {
        let mut ids: Vec<MemoryId> = store
            .lexical_search(&user, &WORDS.iter().map(|w| w.to_string()).collect::<Vec<_>>(), &all, 10_000)
            .unwrap()
            .into_iter()
            .map(|h| h.id)
            .collect();
        ids.sort();
        ids
    };

    assert_eq!(searches(&bounded, 0), reference(0));
    // Loaded, then evicted; a new memory, one erased and one archived meanwhile.
    evict_user_0();
    let fresh = new_memory(&mut rng, 0, 1000);
    let fresh_vector = fresh.embedding.clone().unwrap().1;
    let fresh_id = writer.insert(fresh).unwrap().id;
    let ids = everything(&bounded);
    let (erased, archived) = (ids[3], ids[4]);
    writer.erase(&user, erased, t0() + Duration::days(40)).unwrap();
    let _ = writer.archive(&user, archived, "test", t0() + Duration::days(40));
    let misses = bounded.cache_stats().vectors.misses;
    assert_eq!(searches(&bounded, 0), reference(0));
    assert!(bounded.cache_stats().vectors.misses > misses, "user 0 should have been loaded again");
    let seen = everything(&bounded);
    assert!(seen.contains(&fresh_id) && !seen.contains(&erased));
    let top = bounded.dense_search(&user, &model(), &fresh_vector, &SearchFilter::default(), 1).unwrap();
    assert_eq!(top[0].id, fresh_id);
    assert!(
        !bounded
            .dense_search(&user, &model(), &fresh_vector, &SearchFilter::default(), 10_000)
            .unwrap()
            .iter()
            .any(|h| h.id == archived || h.id == erased)
    );

    // Loaded and kept this time: the same changes are followed in place, then the user
    // is evicted between a write and its next search.
    let another = writer.insert(new_memory(&mut rng, 0, 1001)).unwrap().id;
    writer.erase(&user, fresh_id, t0() + Duration::days(41)).unwrap();
    assert_eq!(searches(&bounded, 0), reference(0));
    let seen = everything(&bounded);
    assert!(seen.contains(&another) && !seen.contains(&fresh_id));
    writer.restore(&user, archived, t0() + Duration::days(42)).unwrap();
    evict_user_0();
    assert_eq!(searches(&bounded, 0), reference(0));
    assert!(
        bounded
            .dense_search(&user, &model(), &fresh_vector, &SearchFilter::default(), 10_000)
            .unwrap()
            .iter()
            .any(|h| h.id == archived)
    );
    assert!(bounded.cache_stats().bytes() <= budget);
}

/// The same on PostgreSQL: its search caches share the budget, evict, reload, and answer
/// exactly as a handle with no limit does.
#[cfg(feature = "postgres")]
#[test]
fn postgres_users_beyond_the_budget_get_the_results_of_an_unbounded_store() {
    let Some(url) = crate::conformance::Fixture::postgres_url(
        "postgres_users_beyond_the_budget_get_the_results_of_an_unbounded_store",
    ) else {
        return;
    };
    use membank_store::{PgOptions, PgStore};
    let database = membank_store::postgres::testing::TestDatabase::create(&url, "cache_budget");
    let users = 12;
    build_into(&PgStore::open(&database.url).unwrap(), &vec![120; users]);
    let unbounded = PgStore::open_with(&database.url, PgOptions { cache_budget: None, ..Default::default() }).unwrap();
    let expected: Vec<Vec<Vec<Hit>>> = (0..users).map(|u| searches(&unbounded, u)).collect();
    assert!(expected.iter().flatten().any(|hits| !hits.is_empty()));
    let budget = unbounded.cache_stats().bytes() / users as u64 * 3;
    let bounded =
        PgStore::open_with(&database.url, PgOptions { cache_budget: Some(budget), ..Default::default() }).unwrap();
    for user in (0..users).chain(0..users) {
        assert_eq!(searches(&bounded, user), expected[user], "user {user}");
        assert!(bounded.cache_stats().bytes() <= budget);
    }
    let stats = bounded.cache_stats();
    for kind in CacheKind::ALL {
        let c = stats.of(kind);
        assert!(c.evictions > 0 && c.misses >= 2 * users as u64 && c.hits > 0, "{kind:?}: {c:?}");
    }
}

/// A user kept in the cache the whole time (no budget): each change is followed in place,
/// and every search after it answers as a fresh handle does. An append, an archive and a
/// restore each change the rows a status-only filter admits, which the vector cache keeps
/// built between searches.
#[test]
fn changes_to_a_cached_user_are_followed_in_place() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("cache.db");
    build(&path, &[60]);
    let kept = SqliteStore::open_with(&path, StoreOptions { cache_budget: None, ..Default::default() }).unwrap();
    let writer = SqliteStore::open(&path).unwrap();
    let fresh = || SqliteStore::open_with(&path, StoreOptions { cache_budget: None, ..Default::default() }).unwrap();
    let user = scope(0);
    let mut rng = Rng(5);
    let dense = |store: &SqliteStore, query: &[f32], include_archived: bool| -> Vec<Hit> {
        let filter = SearchFilter { include_archived, ..Default::default() };
        store.dense_search(&user, &model(), query, &filter, 1_000).unwrap()
    };
    let memory = new_memory(&mut rng, 0, 500);
    let vector = memory.embedding.clone().unwrap().1;
    let ids = |hits: &[Hit]| hits.iter().map(|h| h.id).collect::<Vec<_>>();
    // Both admitted lists built before any change.
    let before = (dense(&kept, &vector, false), dense(&kept, &vector, true));
    assert_eq!(before, (dense(&fresh(), &vector, false), dense(&fresh(), &vector, true)));

    let added = writer.insert(memory).unwrap().id;
    let now = (dense(&kept, &vector, false), dense(&kept, &vector, true));
    assert_eq!(now.0[0].id, added, "an appended memory is found at once");
    assert_eq!(now, (dense(&fresh(), &vector, false), dense(&fresh(), &vector, true)));

    writer.archive(&user, added, "test", t0() + Duration::days(40)).unwrap();
    let now = (dense(&kept, &vector, false), dense(&kept, &vector, true));
    assert!(!ids(&now.0).contains(&added), "an archived memory leaves the active search");
    assert!(ids(&now.1).contains(&added), "and stays in the archive's");
    assert_eq!(now, (dense(&fresh(), &vector, false), dense(&fresh(), &vector, true)));

    writer.restore(&user, added, t0() + Duration::days(41)).unwrap();
    let now = (dense(&kept, &vector, false), dense(&kept, &vector, true));
    assert_eq!(now.0[0].id, added, "a restored memory is active again");
    assert_eq!(now, (dense(&fresh(), &vector, false), dense(&fresh(), &vector, true)));
    assert_eq!(kept.cache_stats().vectors.misses, 1, "followed in place, never reloaded");
}
