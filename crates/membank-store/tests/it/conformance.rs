//! The store's contract, run against every backend: one body of test code, two fixtures.
//!
//! Each test is written once as a function of a [`Fixture`] (a fresh, empty store behind
//! `Arc<dyn Store>` and `Arc<dyn ApiKeyStore>`, a way to open a second handle on the same
//! database as another process would, and the backend's integrity check) and runs as
//! `conformance::<test>::sqlite` on a temporary SQLite file and as
//! `conformance::<test>::postgres` in a database of its own on the PostgreSQL server that
//! `MEMBANK_TEST_PG_URL` names (created from that URL's server, dropped afterwards, so tests
//! run in parallel). Without that variable the PostgreSQL half prints why it skipped,
//! unless `MEMBANK_REQUIRE_PG=1`, when it fails; built without the `postgres` feature it
//! skips the same way.
//!
//! Covered: the model-based random-operation test, scoping (another user's id is `NotFound`,
//! searches never cross users, labels narrow), erasure (content, vector and index gone,
//! cascades, no text left in events or stored answers, BM25 statistics as if the memory
//! had never been), the forgetting operations (sweep, strengthening recalls with no lost
//! increment under concurrency, pin, restore), edits and supersession, idempotent inserts,
//! API keys, the embedding-model rule, neighbours and days, maintenance plans, users, lists
//! and counts, and export/import round trips.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use chrono::{Duration, TimeZone, Utc};
use membank_core::event::EventKind;
use membank_core::forgetting::ForgettingPolicy;
use membank_core::{
    ForgettingState, Kind, Layer, Memory, MemoryId, Scope, Source, Status, TenantId, Timestamp, UserId,
};
use membank_store::{
    Adjacent, ApiKeyStore, EmbeddingModel, EventQuery, ExportRow, IdempotencyClaim, Insertion, ListQuery,
    MaintenancePlan, NewApiKey, NewMemory, RecallRecord, Replacement, SearchFilter, SqliteStore, StateUpdate, Store,
    StoreError, Supersession, Unmaintained, UserImport, UserState,
};
use proptest::prelude::*;
use serde_json::json;

use crate::memory;

// ---------------------------------------------------------------------------------------
// Fixtures
// ---------------------------------------------------------------------------------------

/// A fresh, empty store of one backend.
pub struct Fixture {
    /// `sqlite` or `postgres`.
    pub backend: &'static str,
    pub store: Arc<dyn Store>,
    pub keys: Arc<dyn ApiKeyStore>,
    other: Box<dyn Fn() -> Arc<dyn Store>>,
    integrity: Box<dyn Fn() -> Vec<String>>,
    /// Dropped last: removes the file or the database.
    _guard: Box<dyn std::any::Any>,
}

impl Fixture {
    /// A second handle on the same database, as another process (another server) has.
    pub fn open_other(&self) -> Arc<dyn Store> {
        (self.other)()
    }

    /// The backend's own consistency checks; empty when healthy.
    pub fn integrity(&self) -> Vec<String> {
        (self.integrity)()
    }

    pub fn sqlite() -> Fixture {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("conformance.db");
        let store = Arc::new(SqliteStore::open(&path).unwrap());
        let (other_path, check) = (path.clone(), Arc::clone(&store));
        Fixture {
            backend: "sqlite",
            store: store.clone(),
            keys: store,
            other: Box::new(move || Arc::new(SqliteStore::open(&other_path).unwrap())),
            integrity: Box::new(move || check.integrity_check().unwrap()),
            _guard: Box::new(dir),
        }
    }

    /// A store in a new database of the server `MEMBANK_TEST_PG_URL` names, or `None` (with
    /// a message) when there is none and none is required.
    pub fn postgres(test: &str) -> Option<Fixture> {
        let url = Self::postgres_url(test)?;
        #[cfg(not(feature = "postgres"))]
        {
            let _ = url;
            None
        }
        #[cfg(feature = "postgres")]
        {
            Some(pg::fixture(&url, test))
        }
    }

    /// The server URL for the PostgreSQL half of `test`, or `None` after saying why it skips;
    /// fails instead when `MEMBANK_REQUIRE_PG=1`.
    pub fn postgres_url(test: &str) -> Option<String> {
        let required = std::env::var("MEMBANK_REQUIRE_PG").is_ok_and(|v| v == "1");
        let skip = |why: &str| {
            assert!(!required, "MEMBANK_REQUIRE_PG=1 but {why}");
            eprintln!("skipping {test} on PostgreSQL: {why}");
            None
        };
        let Some(url) = std::env::var("MEMBANK_TEST_PG_URL").ok().filter(|u| !u.trim().is_empty()) else {
            return skip("MEMBANK_TEST_PG_URL is not set (scripts/postgres-dev.sh start prints one)");
        };
        if cfg!(not(feature = "postgres")) {
            return skip("membank-store was built without the `postgres` feature");
        }
        Some(url)
    }
}

#[cfg(feature = "postgres")]
pub mod pg {
    //! Databases for the PostgreSQL fixtures: one per test, made on the server of
    //! `MEMBANK_TEST_PG_URL` and dropped (with any connection left) when the test ends.

    use std::sync::Arc;

    use membank_store::PgStore;
    pub use membank_store::postgres::testing::TestDatabase;

    use super::Fixture;

    /// With `MEMBANK_REQUIRE_CITUS=1`, fails unless `database` is a Citus cluster (the URL
    /// is a coordinator's): the Citus run of the suite cannot pass on plain PostgreSQL.
    pub fn require_citus(database: &TestDatabase) {
        let required = std::env::var("MEMBANK_REQUIRE_CITUS").is_ok_and(|v| v == "1");
        assert!(
            !required || database.citus,
            "MEMBANK_REQUIRE_CITUS=1 but MEMBANK_TEST_PG_URL is not a Citus coordinator (scripts/citus-dev.sh start prints one)"
        );
    }

    pub fn fixture(admin_url: &str, test: &str) -> Fixture {
        let database = TestDatabase::create(admin_url, test);
        require_citus(&database);
        let store = Arc::new(PgStore::open(&database.url).unwrap());
        let (other_url, check) = (database.url.clone(), Arc::clone(&store));
        Fixture {
            backend: "postgres",
            store: store.clone(),
            keys: store,
            other: Box::new(move || Arc::new(PgStore::open(&other_url).unwrap())),
            integrity: Box::new(move || check.integrity_check().unwrap()),
            _guard: Box::new(database),
        }
    }
}

/// Declares each test once and runs it on both backends: `name::sqlite`, `name::postgres`.
macro_rules! conformance {
    ($(fn $name:ident($fx:ident: Fixture) $body:block)*) => {
        $(
            mod $name {
                #[allow(unused_imports)]
                use super::*;

                fn body($fx: Fixture) $body

                #[test]
                fn sqlite() {
                    body(Fixture::sqlite());
                }

                #[test]
                fn postgres() {
                    if let Some(fx) = Fixture::postgres(stringify!($name)) {
                        body(fx);
                    }
                }
            }
        )*
    };
}

// ---------------------------------------------------------------------------------------
// Helpers
// ---------------------------------------------------------------------------------------

pub(crate) const DIM: usize = 8;

pub(crate) fn model() -> EmbeddingModel {
    EmbeddingModel { id: "test/model".into(), dim: DIM }
}

pub(crate) fn scope(user: &str) -> Scope {
    Scope::user(TenantId::default_tenant(), UserId::new(user).unwrap())
}

pub(crate) fn t0() -> Timestamp {
    Utc.with_ymd_and_hms(2024, 5, 4, 9, 0, 0).unwrap()
}

/// A pseudo-random unit vector of `DIM` components.
pub(crate) fn unit(seed: u64) -> Vec<f32> {
    let mut x = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407) | 1;
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

pub(crate) fn ensure(store: &dyn Store, scope: &Scope) {
    store.ensure_user(&scope.tenant, &scope.user, t0()).unwrap();
}

/// Inserts a note with `text` at `at` and the vector of `seed`; returns its id.
pub(crate) fn note(store: &dyn Store, scope: &Scope, text: &str, at: Timestamp, seed: u64) -> MemoryId {
    store
        .insert(NewMemory { memory: memory(scope, Kind::Note, text, at), embedding: Some((model(), unit(seed))) })
        .unwrap()
        .id
}

/// Inserts `m` without a vector; returns its id.
pub(crate) fn plain(store: &dyn Store, m: Memory) -> MemoryId {
    store.insert(NewMemory { memory: m, embedding: None }).unwrap().id
}

pub(crate) fn all_statuses() -> ListQuery {
    ListQuery { statuses: Status::ALL.to_vec(), limit: 1000, ..Default::default() }
}

pub(crate) fn lexical(store: &dyn Store, scope: &Scope, query: &str, filter: &SearchFilter) -> Vec<MemoryId> {
    store
        .lexical_search(scope, &membank_core::text::query_terms(query), filter, 100)
        .unwrap()
        .into_iter()
        .map(|h| h.id)
        .collect()
}

pub(crate) fn dense(store: &dyn Store, scope: &Scope, query: &[f32], filter: &SearchFilter) -> Vec<MemoryId> {
    store.dense_search(scope, &model(), query, filter, 100).unwrap().into_iter().map(|h| h.id).collect()
}

fn is_not_found<T: std::fmt::Debug>(result: Result<T, StoreError>) -> bool {
    matches!(result, Err(StoreError::NotFound { .. }))
}

pub(crate) fn audit() -> SearchFilter {
    SearchFilter { include_archived: true, ..Default::default() }
}

// ---------------------------------------------------------------------------------------
// The model-based test
// ---------------------------------------------------------------------------------------

mod model_based {
    //! A random sequence of writes through two handles on one database, each followed by a
    //! comparison of everything observable (list, forgetting state, dense search against a
    //! brute-force scan, lexical search) through both handles with a plain in-memory model.

    use super::*;

    const USERS: [&str; 2] = ["ana", "ben"];
    const WORDS: [&str; 5] = ["apple", "river", "violin", "garden", "猫咪"];

    fn user_scope(user: usize) -> Scope {
        scope(USERS[user])
    }

    #[derive(Debug, Clone)]
    pub enum Op {
        Insert { handle: usize, user: usize, word: usize, seed: u64 },
        Archive { handle: usize, target: usize },
        Restore { handle: usize, target: usize },
        Pin { handle: usize, target: usize, pinned: bool },
        Erase { handle: usize, target: usize },
        Recall { handle: usize, target: usize },
        Sweep { handle: usize, user: usize, days: i64 },
    }

    pub fn op() -> impl Strategy<Value = Op> {
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

    #[derive(Debug, Clone, PartialEq)]
    struct Expected {
        user: usize,
        word: usize,
        vector: Vec<f32>,
        status: Status,
        state: ForgettingState,
    }

    fn check(store: &dyn Store, expected_all: &BTreeMap<MemoryId, Expected>) -> Result<(), TestCaseError> {
        for user in 0..USERS.len() {
            let listed = store.list(&user_scope(user), &all_statuses()).unwrap();
            let expected: BTreeMap<&MemoryId, &Expected> =
                expected_all.iter().filter(|(_, e)| e.user == user).collect();
            prop_assert_eq!(listed.len(), expected.len());
            for memory in &listed {
                let e = expected[&memory.id];
                prop_assert_eq!(memory.status, e.status);
                prop_assert_eq!(memory.forgetting, e.state);
                prop_assert_eq!(memory.content.is_none(), e.status == Status::Erased);
            }
            let query = unit(user as u64 + 99);
            let hits = store.dense_search(&user_scope(user), &model(), &query, &SearchFilter::default(), 1000).unwrap();
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
            for (w, word) in WORDS.iter().enumerate() {
                let terms = membank_core::text::query_terms(word);
                let found: BTreeSet<MemoryId> = store
                    .lexical_search(&user_scope(user), &terms, &SearchFilter::default(), 1000)
                    .unwrap()
                    .into_iter()
                    .map(|h| h.id)
                    .collect();
                let want: BTreeSet<MemoryId> = expected
                    .iter()
                    .filter(|(_, e)| e.status == Status::Active && e.word == w)
                    .map(|(id, _)| **id)
                    .collect();
                prop_assert_eq!(found, want, "lexical {}", word);
            }
        }
        Ok(())
    }

    pub fn run(fx: &Fixture, ops: Vec<Op>) -> Result<(), TestCaseError> {
        let handles = [fx.store.clone(), fx.open_other()];
        let policy = ForgettingPolicy::default();
        let mut world: BTreeMap<MemoryId, Expected> = BTreeMap::new();
        let mut order: Vec<MemoryId> = Vec::new();
        let mut now = Utc.with_ymd_and_hms(2024, 3, 1, 0, 0, 0).unwrap();
        for user in 0..USERS.len() {
            handles[0].ensure_user(&user_scope(user).tenant, &user_scope(user).user, now).unwrap();
        }
        for op in ops {
            now += Duration::hours(3);
            let pick = |target: usize| order.get(target % order.len().max(1)).copied();
            match op {
                Op::Insert { handle, user, word, seed } => {
                    let memory = Memory {
                        source: Source::Agent,
                        ..memory(&user_scope(user), Kind::Note, &format!("we talked about the {}", WORDS[word]), now)
                    };
                    let vector = unit(seed);
                    let stored = handles[handle]
                        .insert(NewMemory { memory: memory.clone(), embedding: Some((model(), vector.clone())) })
                        .unwrap();
                    prop_assert_eq!(&stored, &memory);
                    order.push(memory.id);
                    world.insert(
                        memory.id,
                        Expected { user, word, vector, status: Status::Active, state: memory.forgetting },
                    );
                }
                Op::Archive { handle, target } => {
                    if let Some(id) = pick(target) {
                        let e = world.get_mut(&id).unwrap();
                        let result = handles[handle].archive(&user_scope(e.user), id, "test", now);
                        prop_assert_eq!(result.is_ok(), e.status == Status::Active);
                        if result.is_ok() {
                            e.status = Status::Archived;
                        }
                    }
                }
                Op::Restore { handle, target } => {
                    if let Some(id) = pick(target) {
                        let e = world.get_mut(&id).unwrap();
                        let result = handles[handle].restore(&user_scope(e.user), id, now);
                        prop_assert_eq!(result.is_ok(), e.status == Status::Archived);
                        if result.is_ok() {
                            e.status = Status::Active;
                            e.state.last_recalled_at = e.state.last_recalled_at.max(now);
                        }
                    }
                }
                Op::Pin { handle, target, pinned } => {
                    if let Some(id) = pick(target) {
                        let e = world.get_mut(&id).unwrap();
                        let result = handles[handle].set_pinned(&user_scope(e.user), id, pinned, now);
                        prop_assert_eq!(result.is_ok(), e.status != Status::Erased);
                        if result.is_ok() {
                            e.state.pinned = pinned;
                        }
                    }
                }
                Op::Erase { handle, target } => {
                    if let Some(id) = pick(target) {
                        let e = world.get_mut(&id).unwrap();
                        handles[handle].erase(&user_scope(e.user), id, now).unwrap();
                        e.status = Status::Erased;
                    }
                }
                Op::Recall { handle, target } => {
                    if let Some(id) = pick(target) {
                        let e = world.get_mut(&id).unwrap();
                        let record = RecallRecord {
                            query_id: "q".into(),
                            now,
                            results: vec![(id, 0.5)],
                            query_vector: None,
                            include_archived: false,
                            reminisced: Vec::new(),
                        };
                        handles[handle].record_recall(&user_scope(e.user), &record, Some(&policy)).unwrap();
                        if e.status == Status::Active {
                            e.state = policy.strengthen(&e.state, now);
                        }
                    }
                }
                Op::Sweep { handle, user, days } => {
                    now += Duration::days(days);
                    let active: Vec<(MemoryId, ForgettingState)> = world
                        .iter()
                        .filter(|(_, e)| e.user == user && e.status == Status::Active)
                        .map(|(id, e)| (*id, e.state))
                        .collect();
                    let plan = policy.plan_sweep(active.iter().map(|(id, s)| (*id, s)), now);
                    let report = handles[handle].sweep(&user_scope(user), &policy, now, false).unwrap();
                    let mut got: Vec<MemoryId> = report.archived.iter().map(|a| a.id).collect();
                    let mut want: Vec<MemoryId> = plan.archive.iter().map(|a| a.id).collect();
                    got.sort();
                    want.sort();
                    prop_assert_eq!(&got, &want);
                    for id in want {
                        world.get_mut(&id).unwrap().status = Status::Archived;
                    }
                }
            }
            check(handles[0].as_ref(), &world)?;
            check(handles[1].as_ref(), &world)?;
            prop_assert_eq!(fx.integrity(), Vec::<String>::new());
        }
        Ok(())
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 16, ..ProptestConfig::default() })]

        #[test]
        fn sqlite(ops in proptest::collection::vec(op(), 1..60)) {
            run(&Fixture::sqlite(), ops)?;
        }

        #[test]
        fn postgres(ops in proptest::collection::vec(op(), 1..60)) {
            if let Some(fx) = Fixture::postgres("model_based") {
                run(&fx, ops)?;
            }
        }
    }
}

// ---------------------------------------------------------------------------------------
// The contract, test by test
// ---------------------------------------------------------------------------------------

conformance! {
    fn users_are_found_created_and_listed(fx: Fixture) {
        let store = fx.store.as_ref();
        let tenant = TenantId::default_tenant();
        let other_tenant = TenantId::new("acme").unwrap();
        assert_eq!(store.find_user(&tenant, &UserId::new("ana").unwrap()).unwrap(), None);
        let ana = store.ensure_user(&tenant, &UserId::new(" ana ").unwrap(), t0()).unwrap();
        assert_eq!((ana.user.as_str(), ana.time_zone.as_str(), ana.created_at), ("ana", "UTC", t0()));
        // Creating again changes nothing.
        assert_eq!(store.ensure_user(&tenant, &UserId::new("ana").unwrap(), t0() + Duration::days(1)).unwrap(), ana);
        store.ensure_user(&tenant, &UserId::new("ben").unwrap(), t0() + Duration::seconds(1)).unwrap();
        store.ensure_user(&other_tenant, &UserId::new("ana").unwrap(), t0()).unwrap();
        let zoned = store.set_time_zone(&tenant, &UserId::new("ben").unwrap(), "Asia/Shanghai", t0()).unwrap();
        assert_eq!(zoned.time_zone, "Asia/Shanghai");
        assert!(matches!(store.set_time_zone(&tenant, &UserId::new("ben").unwrap(), "Mars/Olympus", t0()), Err(StoreError::Invalid(_))));
        let names: Vec<String> = store.list_users(&tenant).unwrap().into_iter().map(|u| u.user).collect();
        assert_eq!(names, ["ana", "ben"]);
        assert_eq!(store.list_users(&other_tenant).unwrap().len(), 1);
        let all: Vec<(String, String)> = store.all_users().unwrap().into_iter().map(|(t, u)| (t.to_string(), u.to_string())).collect();
        assert_eq!(all, [("default".to_string(), "ana".to_string()), ("default".into(), "ben".into()), ("acme".into(), "ana".into())]);
        // The same user name in two tenants is two users.
        let acme_ana = Scope::user(other_tenant, UserId::new("ana").unwrap());
        note(store, &scope("ana"), "only in the default tenant", t0(), 1);
        assert!(store.list(&acme_ana, &all_statuses()).unwrap().is_empty());
    }

    fn a_list_without_text_has_every_state_and_no_text(fx: Fixture) {
        let store = fx.store.as_ref();
        let ana = scope("ana");
        ensure(store, &ana);
        let mut turn = memory(&ana, Kind::Turn, "User: my locker code is 4417\nAssistant: noted", t0());
        turn.user_text = Some("my locker code is 4417".into());
        turn.assistant_text = Some("noted".into());
        turn.forgetting.importance = 0.25;
        plain(store, turn);
        note(store, &ana, "a second memory", t0() + Duration::hours(1), 2);
        let full = store.list(&ana, &all_statuses()).unwrap();
        let lean = store.list(&ana, &ListQuery { without_text: true, ..all_statuses() }).unwrap();
        assert_eq!(lean.len(), 2);
        for (lean, full) in lean.iter().zip(&full) {
            assert_eq!((lean.content.as_deref(), lean.user_text.as_deref(), lean.assistant_text.as_deref()), (None, None, None));
            assert!(full.content.is_some());
            let refilled = Memory {
                content: full.content.clone(),
                user_text: full.user_text.clone(),
                assistant_text: full.assistant_text.clone(),
                ..lean.clone()
            };
            assert_eq!(&refilled, full, "everything but the texts is as a full list reads it");
        }
    }

    fn a_memory_reads_back_exactly_as_stored(fx: Fixture) {
        let store = fx.store.as_ref();
        let ana = scope("ana");
        ensure(store, &ana);
        let mut turn = memory(&ana, Kind::Turn, "User: hello\nAssistant: hi", t0());
        turn.user_text = Some("hello".into());
        turn.assistant_text = Some("hi".into());
        turn.source = Source::Assistant;
        turn.recorded_at = t0() + Duration::milliseconds(1234);
        turn.day = chrono::NaiveDate::from_ymd_opt(2024, 5, 3).unwrap();
        turn.metadata.insert("import_key".into(), "k1".into());
        turn.metadata.insert("speaker".into(), "Ana \"A\" \u{1F600}".into());
        turn.forgetting.importance = 0.25;
        turn.forgetting.base_importance = 0.75;
        turn.forgetting.layer = Layer::Long;
        turn.scope.agent = Some(membank_core::AgentLabel::new("helper").unwrap());
        turn.scope.session = Some(membank_core::AgentLabel::new("s1").unwrap());
        let stored = store.insert(NewMemory { memory: turn.clone(), embedding: Some((model(), unit(1))) }).unwrap();
        assert_eq!(stored, turn);
        assert_eq!(store.get(&ana, turn.id).unwrap(), turn);
        let mut derived = memory(&ana, Kind::DailySummary, "a summary", t0() + Duration::hours(1));
        derived.derived_from = vec![turn.id];
        let derived = store.insert(NewMemory { memory: derived.clone(), embedding: None }).unwrap();
        assert_eq!(store.get(&ana, derived.id).unwrap().derived_from, vec![turn.id]);
        assert_eq!(store.vectors(&ana, &[derived.id, turn.id]).unwrap(), vec![(turn.id, unit(1))]);
        let created = store.events(&ana, &EventQuery { memory_id: Some(turn.id), ..Default::default() }).unwrap();
        assert_eq!(created.len(), 1);
        assert_eq!(created[0].kind, EventKind::Created);
        assert_eq!(created[0].data["strength"], json!(1.0));
    }

    fn another_users_memory_is_not_found(fx: Fixture) {
        let store = fx.store.as_ref();
        let (ana, ben) = (scope("ana"), scope("ben"));
        ensure(store, &ana);
        ensure(store, &ben);
        let anas = note(store, &ana, "ana's violin lesson", t0(), 1);
        let policy = ForgettingPolicy::default();
        let now = t0() + Duration::hours(1);
        assert!(is_not_found(store.get(&ben, anas)));
        assert!(is_not_found(store.archive(&ben, anas, "x", now)));
        assert!(is_not_found(store.restore(&ben, anas, now)));
        assert!(is_not_found(store.set_pinned(&ben, anas, true, now)));
        assert!(is_not_found(store.erase(&ben, anas, now)));
        assert!(is_not_found(store.confirm_used(&ben, &[anas], None, &policy, now)));
        let edit = NewMemory { memory: memory(&ben, Kind::Note, "edited", now), embedding: None };
        assert!(is_not_found(store.supersede(&ben, anas, edit)));
        // A user that does not exist at all behaves the same.
        let nobody = scope("nobody");
        assert!(is_not_found(store.get(&nobody, anas)));
        assert!(is_not_found(store.erase(&nobody, anas, now)));
        assert!(store.list(&nobody, &all_statuses()).unwrap().is_empty());
        // Lists, reads, searches and logs never cross.
        assert!(store.get_many(&ben, &[anas]).unwrap().is_empty());
        assert!(store.vectors(&ben, &[anas]).unwrap().is_empty());
        assert!(store.list(&ben, &all_statuses()).unwrap().is_empty());
        assert_eq!(store.counts(&ben).unwrap(), Default::default());
        assert!(dense(store, &ben, &unit(1), &audit()).is_empty());
        assert!(lexical(store, &ben, "violin", &audit()).is_empty());
        assert!(store.events(&ben, &EventQuery::default()).unwrap().is_empty());
        assert!(store.events(&ben, &EventQuery { memory_id: Some(anas), ..Default::default() }).unwrap().is_empty());
        assert!(store.adjacent(&ben, &[anas], &audit()).unwrap().is_empty());
        // A recall naming another user's memory logs and strengthens nothing of it.
        let record = RecallRecord { query_id: "q".into(), now, results: vec![(anas, 1.0)], query_vector: None, include_archived: true, reminisced: Vec::new() };
        assert!(store.record_recall(&ben, &record, Some(&policy)).unwrap().is_empty());
        let untouched = store.get(&ana, anas).unwrap();
        assert_eq!(untouched.status, Status::Active);
        assert_eq!(untouched.forgetting.recall_count, 0);
        assert_eq!(store.events(&ana, &EventQuery::default()).unwrap().len(), 1);
    }

    fn agent_and_session_labels_narrow_reads(fx: Fixture) {
        let store = fx.store.as_ref();
        let ana = scope("ana");
        ensure(store, &ana);
        let helper = Scope { agent: Some(membank_core::AgentLabel::new("helper").unwrap()), ..ana.clone() };
        let other_agent = Scope { agent: Some(membank_core::AgentLabel::new("other").unwrap()), ..ana.clone() };
        let by_helper = note(store, &helper, "the helper's violin note", t0(), 1);
        let unlabelled = note(store, &ana, "a plain violin note", t0() + Duration::minutes(1), 2);
        // The whole user sees both; a label sees its own.
        assert_eq!(store.list(&ana, &all_statuses()).unwrap().len(), 2);
        assert_eq!(store.list(&helper, &all_statuses()).unwrap().into_iter().map(|m| m.id).collect::<Vec<_>>(), [by_helper]);
        assert!(store.list(&other_agent, &all_statuses()).unwrap().is_empty());
        assert_eq!(lexical(store, &helper, "violin", &SearchFilter::default()), [by_helper]);
        assert_eq!(dense(store, &helper, &unit(2), &SearchFilter::default()), [by_helper]);
        assert!(is_not_found(store.get(&helper, unlabelled)));
        assert!(is_not_found(store.archive(&other_agent, by_helper, "x", t0())));
        assert_eq!(store.counts(&helper).unwrap().active, 1);
    }

    fn search_hits_carry_their_memories_speakers(fx: Fixture) {
        let store = fx.store.as_ref();
        let ana = scope("ana");
        ensure(store, &ana);
        let said = |text: &str, minutes: i64, speaker: Option<&str>, seed: u64| {
            let mut m = memory(&ana, Kind::Turn, text, t0() + Duration::minutes(minutes));
            if let Some(speaker) = speaker {
                m.metadata.insert(membank_core::SPEAKER_KEY.to_string(), speaker.to_string());
            }
            m.metadata.insert("mood".into(), "glad".into());
            store.insert(NewMemory { memory: m, embedding: Some((model(), unit(seed))) }).unwrap().id
        };
        let hostile = "Mary \"Mel\" O'Neil'); DROP TABLE memories; --";
        let caroline = said("violin with caroline", 0, Some("Caroline"), 1);
        let nobody = said("violin alone", 1, None, 2);
        let mel = said("violin with mel", 2, Some(hostile), 3);
        let speakers = |hits: Vec<membank_store::Hit>| -> BTreeMap<MemoryId, Option<String>> {
            hits.into_iter().map(|h| (h.id, h.speaker.map(|s| s.to_string()))).collect()
        };
        let expected: BTreeMap<MemoryId, Option<String>> =
            [(caroline, Some("Caroline".to_string())), (nobody, None), (mel, Some(hostile.to_string()))].into();
        let terms = membank_core::text::query_terms("violin");
        assert_eq!(speakers(store.dense_search(&ana, &model(), &unit(1), &SearchFilter::default(), 10).unwrap()), expected);
        assert_eq!(speakers(store.lexical_search(&ana, &terms, &SearchFilter::default(), 10).unwrap()), expected);
        // Rows added after the caches loaded carry theirs too; another Caroline line shares
        // the cached name.
        let again = said("violin again with caroline", 3, Some("Caroline"), 4);
        let dense = store.dense_search(&ana, &model(), &unit(4), &SearchFilter::default(), 10).unwrap();
        let of = |id: MemoryId| dense.iter().find(|h| h.id == id).and_then(|h| h.speaker.clone()).unwrap();
        assert_eq!(&*of(again), "Caroline");
        assert!(std::sync::Arc::ptr_eq(&of(again), &of(caroline)), "one cached string per speaker");
        // Erasure empties the metadata: an erased memory is never a hit, and the others keep theirs.
        store.erase(&ana, caroline, t0()).unwrap();
        let (_, wide) = store.dense_search_tiers(&ana, &model(), &unit(1), &SearchFilter::default(), 10, 10).unwrap();
        let wide: BTreeMap<MemoryId, Option<String>> =
            wide.into_iter().map(|(h, _)| (h.id, h.speaker.map(|s| s.to_string()))).collect();
        assert_eq!(
            wide,
            [(nobody, None), (mel, Some(hostile.to_string())), (again, Some("Caroline".to_string()))].into()
        );
        assert_eq!(speakers(store.lexical_search(&ana, &terms, &SearchFilter::default(), 10).unwrap()).len(), 3);
        // A second handle (another process) loads the same speakers from the database.
        let other = fx.open_other();
        assert_eq!(
            speakers(other.lexical_search(&ana, &terms, &SearchFilter::default(), 10).unwrap()),
            [(nobody, None), (mel, Some(hostile.to_string())), (again, Some("Caroline".to_string()))].into()
        );
    }

    fn lists_filter_page_and_order(fx: Fixture) {
        let store = fx.store.as_ref();
        let ana = scope("ana");
        ensure(store, &ana);
        let ids: Vec<MemoryId> = (0..6).map(|i| note(store, &ana, &format!("note {i}"), t0() + Duration::days(i), i as u64)).collect();
        let turn = plain(store, memory(&ana, Kind::Turn, "a turn", t0() + Duration::days(2)));
        store.archive(&ana, ids[1], "x", t0()).unwrap();
        store.set_pinned(&ana, ids[2], true, t0()).unwrap();
        store.erase(&ana, ids[3], t0()).unwrap();
        let list = |q: ListQuery| store.list(&ana, &q).unwrap().into_iter().map(|m| m.id).collect::<Vec<_>>();
        // Default: every status but erased, newest first, inserted later first on a tie.
        assert_eq!(list(ListQuery::default()), [ids[5], ids[4], turn, ids[2], ids[1], ids[0]]);
        assert_eq!(list(ListQuery { oldest_first: true, ..Default::default() }), [ids[0], ids[1], ids[2], turn, ids[4], ids[5]]);
        assert_eq!(list(ListQuery { statuses: vec![Status::Archived, Status::Erased], ..Default::default() }), [ids[3], ids[1]]);
        assert_eq!(list(ListQuery { kinds: vec![Kind::Turn], ..Default::default() }), [turn]);
        assert_eq!(list(ListQuery { pinned_only: true, ..Default::default() }), [ids[2]]);
        let day = |i: i64| (t0() + Duration::days(i)).date_naive();
        assert_eq!(list(ListQuery { day_from: Some(day(2)), day_to: Some(day(4)), ..Default::default() }), [ids[4], turn, ids[2]]);
        assert_eq!(list(ListQuery { limit: 2, offset: 1, ..Default::default() }), [ids[4], turn]);
        assert_eq!(store.counts(&ana).unwrap(), membank_store::StatusCounts { active: 5, archived: 1, superseded: 0, erased: 1 });
        let got: Vec<MemoryId> = store.get_many(&ana, &[ids[5], ids[0], MemoryId::generate(t0()), ids[3]]).unwrap().into_iter().map(|m| m.id).collect();
        assert_eq!(got, [ids[5], ids[0], ids[3]]);
    }

    fn search_respects_status_kind_and_day_filters(fx: Fixture) {
        let store = fx.store.as_ref();
        let ana = scope("ana");
        ensure(store, &ana);
        let active = note(store, &ana, "violin on monday", t0(), 1);
        let archived = note(store, &ana, "violin on tuesday", t0() + Duration::days(1), 2);
        let superseded = note(store, &ana, "violin on wednesday", t0() + Duration::days(2), 3);
        let mut summary = memory(&ana, Kind::DailySummary, "violin summary", t0() + Duration::days(3));
        summary.derived_from = vec![superseded];
        let summary = store.insert_superseding(NewMemory { memory: summary, embedding: Some((model(), unit(4))) }, &[superseded], t0() + Duration::days(3)).unwrap().id;
        store.archive(&ana, archived, "x", t0()).unwrap();
        let set = |ids: Vec<MemoryId>| ids.into_iter().collect::<BTreeSet<_>>();
        let plain_filter = SearchFilter::default();
        assert_eq!(set(lexical(store, &ana, "violin", &plain_filter)), set(vec![active, summary]));
        assert_eq!(set(dense(store, &ana, &unit(9), &plain_filter)), set(vec![active, summary]));
        assert_eq!(set(lexical(store, &ana, "violin", &audit())), set(vec![active, archived, superseded, summary]));
        assert_eq!(set(dense(store, &ana, &unit(9), &audit())), set(vec![active, archived, superseded, summary]));
        let notes = SearchFilter { kinds: vec![Kind::Note], include_archived: true, ..Default::default() };
        assert_eq!(set(lexical(store, &ana, "violin", &notes)), set(vec![active, archived, superseded]));
        let days = SearchFilter { day_from: Some((t0() + Duration::days(1)).date_naive()), day_to: Some((t0() + Duration::days(2)).date_naive()), include_archived: true, ..Default::default() };
        assert_eq!(set(lexical(store, &ana, "violin", &days)), set(vec![archived, superseded]));
        assert_eq!(set(dense(store, &ana, &unit(9), &days)), set(vec![archived, superseded]));
        // The best vector first, with its cosine; limits cut.
        let hits = store.dense_search(&ana, &model(), &unit(1), &plain_filter, 1).unwrap();
        assert_eq!(hits.len(), 1);
        assert_eq!(hits[0].id, active);
        assert!((hits[0].score - 1.0).abs() < 1e-6);
        assert!(store.dense_search(&ana, &model(), &unit(1), &plain_filter, 0).unwrap().is_empty());
        assert!(store.lexical_search(&ana, &[], &plain_filter, 10).unwrap().is_empty());
        assert!(matches!(store.dense_search(&ana, &model(), &[1.0; 3], &plain_filter, 10), Err(StoreError::Invalid(_))));
    }

    fn the_tiers_search_gives_both_searches_and_the_statuses(fx: Fixture) {
        let store = fx.store.as_ref();
        let ana = scope("ana");
        ensure(store, &ana);
        let ids: Vec<MemoryId> = (0..30).map(|i| note(store, &ana, &format!("note {i}"), t0() + Duration::minutes(i), i as u64 + 1)).collect();
        for &id in ids.iter().step_by(4) {
            store.archive(&ana, id, "x", t0()).unwrap();
        }
        let mut summary = memory(&ana, Kind::DailySummary, "summary", t0() + Duration::days(1));
        summary.derived_from = vec![ids[1]];
        store.insert_superseding(NewMemory { memory: summary, embedding: Some((model(), unit(99))) }, &[ids[1]], t0() + Duration::days(1)).unwrap();
        let notes = SearchFilter { kinds: vec![Kind::Note], ..Default::default() };
        for filter in [SearchFilter::default(), notes] {
            for (limit, wide) in [(5, 12), (12, 5), (0, 40), (40, 0)] {
                let query = unit(7);
                let (active, tiers) = store.dense_search_tiers(&ana, &model(), &query, &filter, limit, wide).unwrap();
                assert_eq!(active, store.dense_search(&ana, &model(), &query, &filter, limit).unwrap(), "{filter:?} {limit}/{wide}");
                let audit = SearchFilter { include_archived: true, ..filter.clone() };
                let expected = store.dense_search(&ana, &model(), &query, &audit, wide).unwrap();
                assert_eq!(tiers.iter().map(|(h, _)| h.clone()).collect::<Vec<_>>(), expected, "{filter:?} {limit}/{wide}");
                let got: Vec<MemoryId> = tiers.iter().map(|(h, _)| h.id).collect();
                let rows = store.get_many(&ana, &got).unwrap();
                for (hit, status) in &tiers {
                    assert_eq!(Some(*status), rows.iter().find(|m| m.id == hit.id).map(|m| m.status));
                }
                if wide >= 30 {
                    assert!(tiers.iter().any(|(_, s)| *s == Status::Archived));
                    assert!(tiers.iter().any(|(_, s)| *s == Status::Superseded));
                }
            }
        }
        // Another user's memories are never in either list, and an unknown user has none.
        let bo = scope("bo");
        ensure(store, &bo);
        note(store, &bo, "bo's", t0(), 7);
        let (active, tiers) = store.dense_search_tiers(&ana, &model(), &unit(7), &SearchFilter::default(), 50, 50).unwrap();
        assert!(!active.iter().chain(tiers.iter().map(|(h, _)| h)).any(|h| store.get_many(&bo, &[h.id]).unwrap().len() == 1));
        let (a, t) = store.dense_search_tiers(&scope("nobody"), &model(), &unit(7), &SearchFilter::default(), 5, 5).unwrap();
        assert!(a.is_empty() && t.is_empty());
        assert!(matches!(store.dense_search_tiers(&ana, &model(), &[1.0; 3], &SearchFilter::default(), 5, 5), Err(StoreError::Invalid(_))));
    }

    fn chinese_text_is_found_by_its_bigrams(fx: Fixture) {
        let store = fx.store.as_ref();
        let ana = scope("ana");
        ensure(store, &ana);
        let cat = note(store, &ana, "我的猫叫咪咪", t0(), 1);
        let sushi = note(store, &ana, "I love 寿司 a lot", t0() + Duration::minutes(1), 2);
        note(store, &ana, "今天下雨了", t0() + Duration::minutes(2), 3);
        assert_eq!(lexical(store, &ana, "猫叫什么", &SearchFilter::default()), [cat]);
        assert_eq!(lexical(store, &ana, "咪咪", &SearchFilter::default()), [cat]);
        assert_eq!(lexical(store, &ana, "寿司", &SearchFilter::default()), [sushi]);
        assert!(lexical(store, &ana, "猫咪", &SearchFilter::default()).is_empty(), "a bigram the text does not hold");
    }

    fn one_embedding_model_per_store(fx: Fixture) {
        let store = fx.store.as_ref();
        let ana = scope("ana");
        ensure(store, &ana);
        // Before any vector, a search finds nothing rather than failing.
        assert!(dense(store, &ana, &unit(1), &SearchFilter::default()).is_empty());
        note(store, &ana, "first", t0(), 1);
        let other = EmbeddingModel { id: "other/model".into(), dim: DIM };
        let refused = store.insert(NewMemory { memory: memory(&ana, Kind::Note, "second", t0()), embedding: Some((other.clone(), unit(2))) });
        assert!(matches!(refused, Err(StoreError::ModelMismatch { .. })), "{refused:?}");
        assert!(matches!(store.dense_search(&ana, &other, &unit(2), &SearchFilter::default(), 5), Err(StoreError::ModelMismatch { .. })));
        let wider = EmbeddingModel { id: "test/model".into(), dim: DIM + 1 };
        let refused = store.insert(NewMemory { memory: memory(&ana, Kind::Note, "third", t0()), embedding: Some((wider, vec![0.1; DIM + 1])) });
        assert!(matches!(refused, Err(StoreError::ModelMismatch { .. })), "{refused:?}");
        // A vector that does not fit its own model, or is not finite, is refused.
        let short = store.insert(NewMemory { memory: memory(&ana, Kind::Note, "fourth", t0()), embedding: Some((model(), vec![0.5; DIM - 1])) });
        assert!(matches!(short, Err(StoreError::Invalid(_))));
        let nan = store.insert(NewMemory { memory: memory(&ana, Kind::Note, "fifth", t0()), embedding: Some((model(), vec![f32::NAN; DIM])) });
        assert!(matches!(nan, Err(StoreError::Invalid(_))));
        // Nothing of the refused inserts was stored; another handle refuses the same way.
        assert_eq!(store.counts(&ana).unwrap().active, 1);
        let other_handle = fx.open_other();
        assert!(matches!(other_handle.insert(NewMemory { memory: memory(&ana, Kind::Note, "sixth", t0()), embedding: Some((other, unit(3))) }), Err(StoreError::ModelMismatch { .. })));
    }

    fn the_store_says_its_model_and_how_its_memories_are_written(fx: Fixture) {
        let store = fx.store.as_ref();
        let ana = scope("ana");
        let bo = scope("bo");
        ensure(store, &ana);
        ensure(store, &bo);
        // A new store has no model, and a memory without a vector gives it none.
        assert_eq!(store.embedding_model().unwrap(), None);
        assert_eq!(store.script_census().unwrap(), membank_store::ScriptCensus::default());
        plain(store, memory(&ana, Kind::Note, "no vector yet", t0()));
        assert_eq!(store.embedding_model().unwrap(), None);
        // The first vector records it; another handle (another process) reads the same.
        note(store, &ana, "我的猫叫咪咪", t0() + Duration::minutes(1), 1);
        assert_eq!(store.embedding_model().unwrap(), Some(model()));
        assert_eq!(fx.open_other().embedding_model().unwrap(), Some(model()));
        // A refused model changes nothing.
        let other = EmbeddingModel { id: "other/model".into(), dim: DIM };
        assert!(store.insert(NewMemory { memory: memory(&ana, Kind::Note, "x", t0()), embedding: Some((other, unit(2))) }).is_err());
        assert_eq!(store.embedding_model().unwrap(), Some(model()));
        // The census: every user's active memories; a turn by its two sides without the
        // content's English labels; archived memories left out.
        note(store, &bo, "Я люблю своего кота", t0(), 2);
        note(store, &bo, "I had 寿司 for lunch with my friends today", t0() + Duration::minutes(1), 3);
        note(store, &bo, "😀🎉 12345", t0() + Duration::minutes(2), 4);
        let mut turn = memory(&bo, Kind::Turn, &membank_core::memory::turn_content("好", Some("好的")), t0() + Duration::minutes(3));
        turn.user_text = Some("好".into());
        turn.assistant_text = Some("好的".into());
        store.insert(NewMemory { memory: turn, embedding: Some((model(), unit(5))) }).unwrap();
        let archived = note(store, &bo, "今天下雨了", t0() + Duration::minutes(4), 6);
        store.archive(&bo, archived, "test", t0() + Duration::minutes(5)).unwrap();
        let census = store.script_census().unwrap();
        assert_eq!(census, membank_store::ScriptCensus { model: Some(model()), active: 6, other_script: 3 }, "{census:?}");
        assert_eq!(fx.open_other().script_census().unwrap(), census);
    }

    fn erasure_removes_content_vector_and_index_for_good(fx: Fixture) {
        let store = fx.store.as_ref();
        let ana = scope("ana");
        ensure(store, &ana);
        let secret = "my secret password is swordfish";
        let mut m = memory(&ana, Kind::Note, secret, t0());
        m.metadata.insert("note".into(), "swordfish".into());
        let id = store.insert(NewMemory { memory: m, embedding: Some((model(), unit(7))) }).unwrap().id;
        let keep = note(store, &ana, "an ordinary note about fish", t0() + Duration::minutes(1), 8);
        // A recall logs it (events carry no text), a stored idempotent answer quotes it.
        let record = RecallRecord { query_id: "q1".into(), now: t0(), results: vec![(id, 0.9)], query_vector: Some(unit(7)), include_archived: false, reminisced: Vec::new() };
        store.record_recall(&ana, &record, Some(&ForgettingPolicy::default())).unwrap();
        let claim = IdempotencyClaim { key: "k-erase".into(), request_hash: "h".into(), now: t0(), expire_before: t0() - Duration::days(1) };
        let batch = vec![NewMemory { memory: memory(&ana, Kind::Note, "stored with a key", t0()), embedding: None }];
        let Insertion::Stored(stored) = store.insert_all(batch, Some(&claim)).unwrap() else { panic!("stored") };
        store.record_idempotent_response(&ana, "k-erase", &format!("{{\"quoted\":\"{secret}\"}}")).unwrap();
        // Erase the keyed memory too, so its answer must go.
        store.erase(&ana, stored[0].id, t0()).unwrap();

        let tombstone = store.erase(&ana, id, t0() + Duration::hours(1)).unwrap();
        assert_eq!(tombstone.status, Status::Erased);
        assert_eq!((tombstone.content.as_deref(), tombstone.user_text.as_deref(), tombstone.assistant_text.as_deref()), (None, None, None));
        assert!(tombstone.metadata.is_empty());
        assert_eq!(store.get(&ana, id).unwrap(), tombstone);
        // Erasing again is a no-op that answers the tombstone.
        assert_eq!(store.erase(&ana, id, t0() + Duration::hours(2)).unwrap(), tombstone);
        assert!(store.vectors(&ana, &[id]).unwrap().is_empty());
        assert!(!dense(store, &ana, &unit(7), &audit()).contains(&id));
        assert!(lexical(store, &ana, "swordfish password", &audit()).is_empty());
        assert_eq!(lexical(store, &ana, "fish", &audit()), [keep]);
        assert!(store.metadata_index(&ana, "note").unwrap().is_empty());
        assert!(store.list(&ana, &ListQuery::default()).unwrap().iter().all(|m| m.id != id));
        assert_eq!(store.list(&ana, &ListQuery { statuses: vec![Status::Erased], ..Default::default() }).unwrap().len(), 2);
        assert!(matches!(store.restore(&ana, id, t0()), Err(StoreError::Conflict(_))));
        assert!(matches!(store.set_pinned(&ana, id, true, t0()), Err(StoreError::Conflict(_))));
        // No word of it in the log or in stored answers.
        for event in store.events(&ana, &EventQuery::default()).unwrap() {
            assert!(!event.data.to_string().contains("swordfish"), "{event:?}");
        }
        let record = store.idempotency_record(&ana, "k-erase", t0() - Duration::days(1)).unwrap().unwrap();
        assert_eq!(record.response, None);
        assert_eq!(record.memory_ids, vec![stored[0].id]);
        let erased = store.events(&ana, &EventQuery { memory_id: Some(id), ..Default::default() }).unwrap();
        assert_eq!(erased.last().unwrap().kind, EventKind::Erased);
        // Another handle sees the same (no cache keeps the text).
        let other = fx.open_other();
        assert!(lexical(other.as_ref(), &ana, "swordfish", &audit()).is_empty());
        assert!(!dense(other.as_ref(), &ana, &unit(7), &audit()).contains(&id));
        assert_eq!(fx.integrity(), Vec::<String>::new());
    }

    fn erasure_reaches_what_was_made_from_or_replaced_by_the_memory(fx: Fixture) {
        let store = fx.store.as_ref();
        let ana = scope("ana");
        ensure(store, &ana);
        let source = note(store, &ana, "we adopted a cat called Miso", t0(), 1);
        let unrelated = note(store, &ana, "the garden needs water", t0(), 2);
        // An edit keeps the old text as a superseded memory...
        let edited = store.supersede(&ana, source, NewMemory { memory: memory(&ana, Kind::Note, "we adopted a cat called Misoshiru", t0() + Duration::hours(1)), embedding: Some((model(), unit(3))) }).unwrap();
        assert_eq!(store.get(&ana, source).unwrap().status, Status::Superseded);
        assert_eq!(store.get(&ana, source).unwrap().superseded_by, Some(edited.id));
        // ...and a summary is made from the new version.
        let mut summary = memory(&ana, Kind::DailySummary, "Ana adopted Misoshiru", t0() + Duration::hours(2));
        summary.derived_from = vec![edited.id, unrelated];
        let summary = store.insert_superseding(NewMemory { memory: summary, embedding: None }, &[], t0() + Duration::hours(2)).unwrap();
        assert!(!store.maintenance_state(&ana).unwrap().resummarize_due);

        store.erase(&ana, edited.id, t0() + Duration::hours(3)).unwrap();
        for id in [edited.id, source, summary.id] {
            let m = store.get(&ana, id).unwrap();
            assert_eq!(m.status, Status::Erased, "{id}");
            assert_eq!(m.content, None);
        }
        assert_eq!(store.get(&ana, unrelated).unwrap().status, Status::Active);
        assert!(lexical(store, &ana, "misoshiru miso cat adopted", &audit()).is_empty());
        assert_eq!(dense(store, &ana, &unit(1), &audit()), [unrelated]);
        assert!(store.maintenance_state(&ana).unwrap().resummarize_due);
        store.clear_resummarize_due(&ana).unwrap();
        assert!(!store.maintenance_state(&ana).unwrap().resummarize_due);
        let root = store.events(&ana, &EventQuery { memory_id: Some(edited.id), ..Default::default() }).unwrap();
        assert_eq!(root.last().unwrap().data["cascaded"].as_array().unwrap().len(), 2);
        let cascade = store.events(&ana, &EventQuery { memory_id: Some(source), ..Default::default() }).unwrap();
        assert_eq!(cascade.last().unwrap().data["cascade_of"], json!(edited.id.to_string()));
        assert_eq!(fx.integrity(), Vec::<String>::new());
    }

    fn erasure_cascades_breadth_first_in_stored_order(fx: Fixture) {
        // Both backends erase in one order: breadth first from the erased memory, the
        // memories found from one memory in the order they were stored. The root's event
        // lists the cascade in that order, and the `erased` events are logged in it.
        let store = fx.store.as_ref();
        let ana = scope("ana");
        ensure(store, &ana);
        let at = |minutes: i64| t0() + Duration::minutes(minutes);
        let derived = |kind: Kind, text: &str, minutes: i64, from: MemoryId| {
            let mut m = memory(&ana, kind, text, at(minutes));
            m.derived_from = vec![from];
            plain(store, m)
        };
        let old = note(store, &ana, "the first draft of the plan", at(0), 1);
        let root = store.supersede(&ana, old, NewMemory { memory: memory(&ana, Kind::Note, "the plan", at(1)), embedding: Some((model(), unit(2))) }).unwrap().id;
        let daily = derived(Kind::DailySummary, "a day about the plan", 2, root);
        // A later duplicate a maintenance cycle merged into the (older) root.
        let duplicate = note(store, &ana, "the plan, again", at(3), 4);
        let merge = Supersession { old: duplicate, by: Replacement::Existing(root), data: json!({ "rule": "duplicate" }) };
        let applied = store
            .apply_maintenance(&ana, MaintenancePlan { now: at(4), updates: Vec::new(), archive: Vec::new(), insert: Vec::new(), supersede: vec![merge], summary: json!({}), maintained_through: None })
            .unwrap();
        assert_eq!(applied.superseded, 1);
        let fused = derived(Kind::Fused, "the plan, fused", 5, root);
        let global = derived(Kind::GlobalSummary, "all days: the plan", 6, daily);
        let from_old = derived(Kind::DailyPortrait, "a planner at heart", 7, old);
        let unrelated = note(store, &ana, "the garden needs water", at(8), 3);

        store.erase(&ana, root, at(10)).unwrap();
        // From the root, in the order they were stored, whether the root replaced them or
        // they were made from it: the first draft, the day's summary, the merged duplicate,
        // the fusion; then what those reached, in the same order.
        let expected = [old, daily, duplicate, fused, from_old, global];
        let events = store.events(&ana, &EventQuery::default()).unwrap();
        let erased: Vec<MemoryId> = events.iter().filter(|e| e.kind == EventKind::Erased).filter_map(|e| e.memory_id).collect();
        assert_eq!(erased, [&[root][..], &expected[..]].concat());
        let root_event = events.iter().find(|e| e.kind == EventKind::Erased && e.memory_id == Some(root)).unwrap();
        let cascaded: Vec<String> = expected.iter().map(ToString::to_string).collect();
        assert_eq!(root_event.data["cascaded"], json!(cascaded));
        for id in expected {
            assert_eq!(store.get(&ana, id).unwrap().status, Status::Erased, "{id}");
        }
        assert_eq!(store.get(&ana, unrelated).unwrap().status, Status::Active);
        assert_eq!(fx.integrity(), Vec::<String>::new());
    }

    fn lexical_statistics_after_erasure_are_as_if_the_memory_had_never_been(fx: Fixture) {
        let store = fx.store.as_ref();
        let (ana, ben) = (scope("ana"), scope("ben"));
        ensure(store, &ana);
        ensure(store, &ben);
        let texts = ["my violin lesson went well", "the violin strings are expensive", "we walked by the river", "a river of violin music and more violin"];
        for (i, text) in texts.iter().enumerate() {
            note(store, &ben, text, t0() + Duration::minutes(i as i64), i as u64);
        }
        let mut erased = None;
        for (i, text) in texts.iter().enumerate() {
            let id = note(store, &ana, text, t0() + Duration::minutes(i as i64), i as u64);
            if i == 1 {
                // A memory with both words, which shifts N, the average length and the df.
                erased = Some(note(store, &ana, "violin and river and violin again", t0() + Duration::seconds(90), 11));
            }
            let _ = id;
        }
        store.erase(&ana, erased.unwrap(), t0() + Duration::hours(1)).unwrap();
        let terms = membank_core::text::query_terms("violin river");
        let scores = |scope: &Scope| store.lexical_search(scope, &terms, &SearchFilter::default(), 10).unwrap().into_iter().map(|h| h.score).collect::<Vec<_>>();
        assert_eq!(scores(&ana), scores(&ben));
        assert_eq!(scores(&ana).len(), 4);
    }

    fn forgetting_sweeps_archive_what_the_policy_decides(fx: Fixture) {
        let store = fx.store.as_ref();
        let ana = scope("ana");
        ensure(store, &ana);
        let policy = ForgettingPolicy::default();
        let old = note(store, &ana, "an old note", t0(), 1);
        let pinned = note(store, &ana, "an old pinned note", t0(), 2);
        let recalled = note(store, &ana, "an old recalled note", t0(), 3);
        let fresh = note(store, &ana, "a fresh note", t0() + Duration::days(29), 4);
        store.set_pinned(&ana, pinned, true, t0()).unwrap();
        // Pinning twice changes nothing and logs once.
        store.set_pinned(&ana, pinned, true, t0()).unwrap();
        assert_eq!(store.events(&ana, &EventQuery { memory_id: Some(pinned), ..Default::default() }).unwrap().iter().filter(|e| e.kind == EventKind::Pinned).count(), 1);
        let record = RecallRecord { query_id: "q".into(), now: t0() + Duration::days(20), results: vec![(recalled, 0.5)], query_vector: None, include_archived: false, reminisced: Vec::new() };
        store.record_recall(&ana, &record, Some(&policy)).unwrap();
        let now = t0() + Duration::days(30);
        let states: Vec<(MemoryId, ForgettingState)> = store.list(&ana, &ListQuery::default()).unwrap().into_iter().map(|m| (m.id, m.forgetting)).collect();
        let plan = policy.plan_sweep(states.iter().map(|(id, s)| (*id, s)), now);
        let planned: BTreeSet<MemoryId> = plan.archive.iter().map(|a| a.id).collect();
        assert!(planned.contains(&old) && !planned.contains(&pinned) && !planned.contains(&fresh), "{planned:?}");

        let dry = store.sweep(&ana, &policy, now, true).unwrap();
        assert!(dry.dry_run);
        assert_eq!(dry.archived.iter().map(|a| a.id).collect::<BTreeSet<_>>(), planned);
        assert_eq!(store.counts(&ana).unwrap().archived, 0, "a dry run changes nothing");
        let report = store.sweep(&ana, &policy, now, false).unwrap();
        assert_eq!(report.archived.iter().map(|a| a.id).collect::<BTreeSet<_>>(), planned);
        assert_eq!((report.examined, report.kept), (4, 4 - planned.len()));
        for id in [old, pinned, recalled, fresh] {
            let want = if planned.contains(&id) { Status::Archived } else { Status::Active };
            assert_eq!(store.get(&ana, id).unwrap().status, want);
        }
        let swept = store.events(&ana, &EventQuery::default()).unwrap();
        assert_eq!(swept.last().unwrap().kind, EventKind::Swept);
        assert_eq!(swept.last().unwrap().data["archived"], json!(planned.len()));
        // A sweep of a user who does not exist examines nothing.
        assert_eq!(store.sweep(&scope("nobody"), &policy, now, false).unwrap().examined, 0);

        // Restoring makes it active with its clock reset, so the next sweep keeps it.
        let restored = store.restore(&ana, old, now).unwrap();
        assert_eq!(restored.status, Status::Active);
        assert_eq!(restored.forgetting.last_recalled_at, now);
        assert!(store.sweep(&ana, &policy, now + Duration::hours(1), false).unwrap().archived.iter().all(|a| a.id != old));
        assert!(matches!(store.restore(&ana, old, now), Err(StoreError::Conflict(_))));
        assert!(matches!(store.archive(&ana, old, "again", now).map(|m| m.status), Ok(Status::Archived)));
        assert!(matches!(store.archive(&ana, old, "again", now), Err(StoreError::Conflict(_))));
    }

    fn recalls_log_strengthen_and_drop_what_became_ineligible(fx: Fixture) {
        let store = fx.store.as_ref();
        let ana = scope("ana");
        ensure(store, &ana);
        // Every recall strengthens (the paper's reading), so each occurrence counts; spaced
        // strengthening has its own test below.
        let policy = ForgettingPolicy { spaced_recall: false, ..Default::default() };
        let a = note(store, &ana, "a", t0(), 1);
        let b = note(store, &ana, "b", t0(), 2);
        let gone = note(store, &ana, "c", t0(), 3);
        store.archive(&ana, b, "x", t0()).unwrap();
        store.erase(&ana, gone, t0()).unwrap();
        let now = t0() + Duration::days(2);
        let record = RecallRecord { query_id: "q1".into(), now, results: vec![(a, 0.9), (b, 0.8), (gone, 0.7)], query_vector: Some(unit(5)), include_archived: false, reminisced: Vec::new() };
        let returned = store.record_recall(&ana, &record, Some(&policy)).unwrap();
        assert_eq!(returned.iter().map(|m| m.id).collect::<Vec<_>>(), [a]);
        let want = policy.strengthen(&ForgettingState::new(t0()), now);
        assert_eq!(returned[0].forgetting, want);
        // An audit recall returns the archived one too; without strengthening nothing moves.
        let audit_record = RecallRecord { query_id: "q2".into(), include_archived: true, query_vector: None, ..record.clone() };
        let returned = store.record_recall(&ana, &audit_record, None).unwrap();
        assert_eq!(returned.iter().map(|m| m.id).collect::<Vec<_>>(), [a, b]);
        assert_eq!(returned[0].forgetting, want);
        let log = store.events(&ana, &EventQuery::default()).unwrap();
        let kinds: Vec<(EventKind, Option<MemoryId>)> = log.iter().filter(|e| e.kind == EventKind::Recalled || e.kind == EventKind::Strengthened).map(|e| (e.kind, e.memory_id)).collect();
        assert_eq!(kinds, [(EventKind::Recalled, Some(a)), (EventKind::Strengthened, Some(a)), (EventKind::Recalled, Some(a)), (EventKind::Recalled, Some(b))]);
        let strengthened = log.iter().find(|e| e.kind == EventKind::Strengthened).unwrap();
        assert_eq!((strengthened.data["strength_before"].as_f64(), strengthened.data["strength_after"].as_f64()), (Some(1.0), Some(2.0)));
        assert!(log.windows(2).all(|w| w[0].seq < w[1].seq));
        // The query vector is kept among the recent ones.
        assert_eq!(store.recent_queries(&ana, 5).unwrap(), vec![unit(5)]);
        // Confirmed use strengthens the same way, an id given twice twice.
        let used = store.confirm_used(&ana, &[a, a], Some("q3"), &policy, now + Duration::days(1)).unwrap();
        assert_eq!(used[0].forgetting.strength.get(), 4.0);
        assert_eq!(used[0].forgetting.recall_count, 3);
        let after: Vec<f64> = store.events(&ana, &EventQuery { memory_id: Some(a), ..Default::default() }).unwrap().iter().filter(|e| e.kind == EventKind::Strengthened).map(|e| e.data["strength_after"].as_f64().unwrap()).collect();
        assert_eq!(after, [2.0, 3.0, 4.0]);
        assert!(is_not_found(store.confirm_used(&ana, &[a, MemoryId::generate(now)], None, &policy, now)));
        // An archived memory confirmed as used (a reminiscing recall returned it) comes back
        // with savings, logged as reminisced; an erased one stays erased.
        let later = now + Duration::days(3);
        let used = store.confirm_used(&ana, &[b, gone], Some("q4"), &policy, later).unwrap();
        let back = used.iter().find(|m| m.id == b).unwrap();
        assert_eq!((back.status, back.forgetting.strength.get(), back.forgetting.last_recalled_at), (Status::Active, 2.0, later));
        assert!(used.iter().all(|m| m.id != gone || m.status == Status::Erased));
        let log = store.events(&ana, &EventQuery { memory_id: Some(b), ..Default::default() }).unwrap();
        let event = log.iter().find(|e| e.kind == EventKind::Reminisced).expect("a reminisced event");
        assert_eq!((event.data["query_id"].as_str(), event.data["confirmed_used"].as_bool()), (Some("q4"), Some(true)));
        assert!(log.iter().all(|e| e.kind != EventKind::Strengthened));
        // Recent queries are bounded per user.
        let keep = policy.fademem.recent_queries;
        for i in 0..keep + 3 {
            let record = RecallRecord { query_id: format!("r{i}"), now, results: vec![(a, 0.5)], query_vector: Some(unit(100 + i as u64)), include_archived: false, reminisced: Vec::new() };
            store.record_recall(&ana, &record, None).unwrap();
        }
        let recent = store.recent_queries(&ana, 1000).unwrap();
        assert_eq!(recent.len(), keep);
        assert_eq!(recent[0], unit(100 + (keep + 2) as u64));
    }

    fn concurrent_strengthening_loses_no_increment(fx: Fixture) {
        let ana = scope("ana");
        ensure(fx.store.as_ref(), &ana);
        let id = note(fx.store.as_ref(), &ana, "often recalled", t0(), 1);
        let handles = [fx.store.clone(), fx.open_other()];
        // Every recall strengthens, so a lost update would show (spaced strengthening would
        // count one a day).
        let policy = ForgettingPolicy { spaced_recall: false, ..Default::default() };
        const THREADS: usize = 8;
        const EACH: usize = 10;
        std::thread::scope(|s| {
            for t in 0..THREADS {
                let store = handles[t % 2].clone();
                let ana = ana.clone();
                s.spawn(move || {
                    for i in 0..EACH {
                        let record = RecallRecord { query_id: format!("{t}-{i}"), now: t0() + Duration::minutes(i as i64), results: vec![(id, 0.5)], query_vector: None, include_archived: false, reminisced: Vec::new() };
                        store.record_recall(&ana, &record, Some(&policy)).unwrap();
                    }
                });
            }
        });
        let m = fx.store.get(&ana, id).unwrap();
        assert_eq!(m.forgetting.strength.get(), 1.0 + (THREADS * EACH) as f64);
        assert_eq!(m.forgetting.recall_count as usize, THREADS * EACH);
        let mut after: Vec<f64> = fx.store.events(&ana, &EventQuery { memory_id: Some(id), ..Default::default() }).unwrap().iter().filter(|e| e.kind == EventKind::Strengthened).map(|e| e.data["strength_after"].as_f64().unwrap()).collect();
        assert_eq!(after.len(), THREADS * EACH);
        after.sort_by(f64::total_cmp);
        let want: Vec<f64> = (0..THREADS * EACH).map(|i| 2.0 + i as f64).collect();
        assert_eq!(after, want, "each strengthening saw the one before it");
    }

    fn writes_through_one_handle_are_seen_by_another_at_once(fx: Fixture) {
        let ana = scope("ana");
        ensure(fx.store.as_ref(), &ana);
        let other = fx.open_other();
        let reader = fx.store.as_ref();
        // Warm both (caches, where a backend has them), then write through the other.
        assert!(lexical(reader, &ana, "violin", &SearchFilter::default()).is_empty());
        assert!(dense(reader, &ana, &unit(1), &SearchFilter::default()).is_empty());
        let id = note(other.as_ref(), &ana, "a violin concert", t0(), 1);
        assert_eq!(lexical(reader, &ana, "violin", &SearchFilter::default()), [id]);
        assert_eq!(dense(reader, &ana, &unit(1), &SearchFilter::default()), [id]);
        other.archive(&ana, id, "x", t0()).unwrap();
        assert!(lexical(reader, &ana, "violin", &SearchFilter::default()).is_empty());
        assert!(dense(reader, &ana, &unit(1), &SearchFilter::default()).is_empty());
        assert_eq!(dense(reader, &ana, &unit(1), &audit()), [id]);
        other.restore(&ana, id, t0()).unwrap();
        assert_eq!(lexical(reader, &ana, "violin", &SearchFilter::default()), [id]);
        other.erase(&ana, id, t0()).unwrap();
        assert!(lexical(reader, &ana, "violin", &audit()).is_empty());
        assert!(dense(reader, &ana, &unit(1), &audit()).is_empty());
    }

    fn edits_keep_history_and_stay_with_the_user(fx: Fixture) {
        let store = fx.store.as_ref();
        let (ana, ben) = (scope("ana"), scope("ben"));
        ensure(store, &ana);
        ensure(store, &ben);
        let old = note(store, &ana, "the meeting is on monday", t0(), 1);
        let new = store.supersede(&ana, old, NewMemory { memory: memory(&ana, Kind::Note, "the meeting is on tuesday", t0() + Duration::hours(1)), embedding: Some((model(), unit(2))) }).unwrap();
        assert_eq!(store.get(&ana, old).unwrap().status, Status::Superseded);
        assert_eq!(lexical(store, &ana, "meeting", &SearchFilter::default()), [new.id]);
        let log = store.events(&ana, &EventQuery::default()).unwrap();
        assert!(log.iter().any(|e| e.kind == EventKind::Edited && e.memory_id == Some(new.id) && e.data["previous"] == json!(old.to_string())));
        assert!(log.iter().any(|e| e.kind == EventKind::Superseded && e.memory_id == Some(old)));
        // Only an active memory can be edited, and an edit cannot move to another user.
        let again = NewMemory { memory: memory(&ana, Kind::Note, "again", t0()), embedding: None };
        assert!(matches!(store.supersede(&ana, old, again), Err(StoreError::Conflict(_))));
        let elsewhere = NewMemory { memory: memory(&ben, Kind::Note, "moved", t0()), embedding: None };
        assert!(matches!(store.supersede(&ana, new.id, elsewhere), Err(StoreError::Invalid(_))));
        // A superseded memory can be restored.
        assert_eq!(store.restore(&ana, old, t0() + Duration::days(1)).unwrap().superseded_by, None);
        // A derived memory cannot supersede what is already superseded, and nothing is stored then.
        let s1 = note(store, &ana, "summary one", t0(), 3);
        let mut s2 = memory(&ana, Kind::DailySummary, "summary two", t0());
        s2.derived_from = vec![old];
        store.insert_superseding(NewMemory { memory: s2, embedding: None }, &[s1], t0()).unwrap();
        let before = store.counts(&ana).unwrap();
        let s3 = memory(&ana, Kind::DailySummary, "summary three", t0());
        assert!(matches!(store.insert_superseding(NewMemory { memory: s3, embedding: None }, &[s1], t0()), Err(StoreError::Conflict(_))));
        assert_eq!(store.counts(&ana).unwrap(), before);
    }

    fn idempotent_inserts_store_once(fx: Fixture) {
        let store = fx.store.as_ref();
        let ana = scope("ana");
        ensure(store, &ana);
        let claim = IdempotencyClaim { key: "key-1".into(), request_hash: "hash-a".into(), now: t0(), expire_before: t0() - Duration::days(1) };
        let batch = |n: usize| (0..n).map(|i| NewMemory { memory: memory(&ana, Kind::Note, &format!("entry {i}"), t0()), embedding: Some((model(), unit(i as u64))) }).collect::<Vec<_>>();
        let Insertion::Stored(first) = store.insert_all(batch(2), Some(&claim)).unwrap() else { panic!("first insert must store") };
        assert_eq!(first.len(), 2);
        let Insertion::Replayed(record) = store.insert_all(batch(2), Some(&claim)).unwrap() else { panic!("a retry must replay") };
        assert_eq!(record.memory_ids, first.iter().map(|m| m.id).collect::<Vec<_>>());
        assert_eq!(record.response, None);
        assert_eq!(store.counts(&ana).unwrap().active, 2);
        // Another request with the same key is refused; another handle agrees.
        let other_request = IdempotencyClaim { request_hash: "hash-b".into(), ..claim.clone() };
        assert!(matches!(store.insert_all(batch(1), Some(&other_request)), Err(StoreError::Invalid(_))));
        assert!(matches!(fx.open_other().insert_all(batch(2), Some(&claim)).unwrap(), Insertion::Replayed(_)));
        // The first answer recorded wins.
        store.record_idempotent_response(&ana, "key-1", "{\"n\":1}").unwrap();
        store.record_idempotent_response(&ana, "key-1", "{\"n\":2}").unwrap();
        assert_eq!(store.idempotency_record(&ana, "key-1", t0() - Duration::days(1)).unwrap().unwrap().response.as_deref(), Some("{\"n\":1}"));
        // Keys are per user, and expire.
        let ben = scope("ben");
        ensure(store, &ben);
        assert!(store.idempotency_record(&ben, "key-1", t0() - Duration::days(1)).unwrap().is_none());
        assert!(store.idempotency_record(&ana, "key-1", t0() + Duration::seconds(1)).unwrap().is_none());
        let later = IdempotencyClaim { now: t0() + Duration::days(2), expire_before: t0() + Duration::days(1), ..claim.clone() };
        assert!(matches!(store.insert_all(batch(1), Some(&later)).unwrap(), Insertion::Stored(_)), "an expired key is claimed afresh");
        assert!(matches!(store.idempotency_record(&ana, "bad key", t0()), Err(StoreError::Invalid(_))));
        // All or nothing: a batch with one bad vector stores none, and claims no key.
        let mut bad = batch(3);
        bad[2].embedding = Some((model(), vec![0.0; DIM - 2]));
        let fresh = IdempotencyClaim { key: "key-2".into(), ..claim.clone() };
        let before = store.counts(&ana).unwrap();
        assert!(store.insert_all(bad, Some(&fresh)).is_err());
        assert_eq!(store.counts(&ana).unwrap(), before);
        assert!(store.idempotency_record(&ana, "key-2", t0() - Duration::days(1)).unwrap().is_none());
        // One insert belongs to one user.
        let mixed = vec![NewMemory { memory: memory(&ana, Kind::Note, "a", t0()), embedding: None }, NewMemory { memory: memory(&ben, Kind::Note, "b", t0()), embedding: None }];
        assert!(matches!(store.insert_all(mixed, None), Err(StoreError::Invalid(_))));
        // A user that does not exist cannot be written to.
        assert!(is_not_found(store.insert(NewMemory { memory: memory(&scope("nobody"), Kind::Note, "x", t0()), embedding: None })));
    }

    fn concurrent_claims_of_one_key_store_once(fx: Fixture) {
        let ana = scope("ana");
        ensure(fx.store.as_ref(), &ana);
        let handles = [fx.store.clone(), fx.open_other()];
        let claim = IdempotencyClaim { key: "same-key".into(), request_hash: "same-request".into(), now: t0(), expire_before: t0() - Duration::days(1) };
        let outcomes: Vec<Insertion> = std::thread::scope(|s| {
            let threads: Vec<_> = (0..8)
                .map(|t| {
                    let (store, ana, claim) = (handles[t % 2].clone(), ana.clone(), claim.clone());
                    s.spawn(move || {
                        let batch = (0..3).map(|i| NewMemory { memory: memory(&ana, Kind::Note, &format!("retry {t} entry {i}"), t0()), embedding: None }).collect();
                        store.insert_all(batch, Some(&claim)).unwrap()
                    })
                })
                .collect();
            threads.into_iter().map(|t| t.join().unwrap()).collect()
        });
        let stored: Vec<&Vec<Memory>> = outcomes.iter().filter_map(|o| if let Insertion::Stored(m) = o { Some(m) } else { None }).collect();
        assert_eq!(stored.len(), 1, "exactly one request stores");
        let ids: Vec<MemoryId> = stored[0].iter().map(|m| m.id).collect();
        for outcome in &outcomes {
            if let Insertion::Replayed(record) = outcome {
                assert_eq!(record.memory_ids, ids);
            }
        }
        assert_eq!(fx.store.counts(&ana).unwrap().active, 3);
    }

    fn api_keys_are_stored_as_hashes_and_revoked(fx: Fixture) {
        let keys = fx.keys.as_ref();
        assert_eq!(keys.live_key_count().unwrap(), 0);
        let tenant = TenantId::default_tenant();
        let new = |id: &str, hash: &str, user: Option<&str>, admin: bool| NewApiKey {
            key_id: id.into(),
            hash: hash.into(),
            tenant: tenant.clone(),
            user: user.map(|u| UserId::new(u).unwrap()),
            admin,
            label: Some(format!("label of {id}")),
            created_at: t0(),
        };
        let a = keys.create_key(new("ka", "hash-a", None, true)).unwrap();
        assert_eq!((a.key_id.as_str(), a.admin, a.user.clone(), a.created_at, a.revoked_at), ("ka", true, None, t0(), None));
        let b = keys.create_key(new("kb", "hash-b", Some("ana"), false)).unwrap();
        assert_eq!(b.user, Some(UserId::new("ana").unwrap()));
        assert!(keys.create_key(new("kb", "hash-c", None, false)).is_err(), "a key id is unique");
        assert!(keys.create_key(new("kc", "hash-a", None, false)).is_err(), "a hash is unique");
        assert_eq!(keys.find_key_by_hash("hash-b").unwrap(), Some(b.clone()));
        assert_eq!(keys.find_key_by_hash("nope").unwrap(), None);
        assert_eq!(keys.live_key_count().unwrap(), 2);
        let revoked = keys.revoke_key("kb", t0() + Duration::days(1)).unwrap();
        assert_eq!(revoked.revoked_at, Some(t0() + Duration::days(1)));
        assert_eq!(keys.find_key_by_hash("hash-b").unwrap(), None);
        assert!(matches!(keys.revoke_key("kb", t0()), Err(StoreError::Conflict(_))));
        assert!(matches!(keys.revoke_key("nope", t0()), Err(StoreError::NotFound { .. })));
        assert_eq!(keys.live_key_count().unwrap(), 1);
        assert_eq!(keys.list_keys().unwrap(), vec![a, revoked]);
    }

    fn neighbours_are_the_adjacent_admitted_memories_of_the_same_day(fx: Fixture) {
        let store = fx.store.as_ref();
        let ana = scope("ana");
        let day1 = t0();
        let day2 = day1 + Duration::days(1);
        ensure(store, &ana);
        // Inserted out of time order: neighbours follow occurred_at, not insertion.
        let c = plain(store, memory(&ana, Kind::Note, "third", day1 + Duration::minutes(20)));
        let a = plain(store, memory(&ana, Kind::Note, "first", day1));
        let summary = plain(store, memory(&ana, Kind::DailySummary, "a summary", day1 + Duration::minutes(5)));
        let b = plain(store, memory(&ana, Kind::Note, "second", day1 + Duration::minutes(10)));
        let next_day = plain(store, memory(&ana, Kind::Note, "next day", day2));
        let same1 = plain(store, memory(&ana, Kind::Note, "same one", day2 + Duration::hours(1)));
        let same2 = plain(store, memory(&ana, Kind::Note, "same two", day2 + Duration::hours(1)));
        let lines = SearchFilter { kinds: vec![Kind::Turn, Kind::Note], ..Default::default() };
        assert_eq!(
            store.adjacent(&ana, &[b, a, c, next_day, same1, same2], &lines).unwrap(),
            [
                Adjacent { id: b, before: Some(a), after: Some(c) },
                Adjacent { id: a, before: None, after: Some(b) },
                Adjacent { id: c, before: Some(b), after: None },
                Adjacent { id: next_day, before: None, after: Some(same1) },
                Adjacent { id: same1, before: Some(next_day), after: Some(same2) },
                Adjacent { id: same2, before: Some(same1), after: None },
            ]
        );
        assert_eq!(store.adjacent(&ana, &[a], &SearchFilter::default()).unwrap(), [Adjacent { id: a, before: None, after: Some(summary) }]);
        store.archive(&ana, b, "test", day2).unwrap();
        assert_eq!(store.adjacent(&ana, &[a], &lines).unwrap(), [Adjacent { id: a, before: None, after: Some(c) }]);
        let audit_lines = SearchFilter { include_archived: true, ..lines.clone() };
        assert_eq!(store.adjacent(&ana, &[a], &audit_lines).unwrap(), [Adjacent { id: a, before: None, after: Some(b) }]);
        assert!(store.adjacent(&ana, &[b], &lines).unwrap().is_empty());
        let ben = scope("ben");
        ensure(store, &ben);
        let bens = plain(store, memory(&ben, Kind::Note, "ben's", day1 + Duration::minutes(1)));
        assert!(store.adjacent(&ben, &[a, c], &lines).unwrap().is_empty());
        assert_eq!(store.adjacent(&ben, &[bens], &lines).unwrap(), [Adjacent { id: bens, before: None, after: None }]);
        assert!(store.adjacent(&ana, &[], &lines).unwrap().is_empty());
    }

    fn days_with_memories_are_the_scopes_own_admitted_days(fx: Fixture) {
        let store = fx.store.as_ref();
        let (ana, ben) = (scope("ana"), scope("ben"));
        let t = Utc.with_ymd_and_hms(2023, 5, 4, 9, 0, 0).unwrap();
        ensure(store, &ana);
        ensure(store, &ben);
        let day = |s: &str| s.parse::<chrono::NaiveDate>().unwrap();
        plain(store, memory(&ana, Kind::Turn, "lake", t));
        let archived = plain(store, memory(&ana, Kind::Turn, "mountains", t + Duration::days(366)));
        plain(store, memory(&ana, Kind::DailySummary, "a summary", t + Duration::days(731)));
        plain(store, memory(&ben, Kind::Turn, "ben's", t + Duration::days(1096)));
        store.archive(&ana, archived, "test", t + Duration::days(400)).unwrap();
        let candidates = [day("2026-05-04"), day("2025-05-04"), day("2024-05-04"), day("2023-05-04")];
        let sorted = |mut days: Vec<chrono::NaiveDate>| {
            days.sort();
            days
        };
        assert_eq!(sorted(store.days_with_memories(&ana, &candidates, &SearchFilter::default()).unwrap()), [day("2023-05-04"), day("2025-05-04")]);
        assert_eq!(sorted(store.days_with_memories(&ana, &candidates, &audit()).unwrap()), [day("2023-05-04"), day("2024-05-04"), day("2025-05-04")]);
        let turns = SearchFilter { kinds: vec![Kind::Turn], ..Default::default() };
        assert_eq!(store.days_with_memories(&ana, &candidates, &turns).unwrap(), [day("2023-05-04")]);
        assert_eq!(store.days_with_memories(&ben, &candidates, &audit()).unwrap(), [day("2026-05-04")]);
        assert!(store.days_with_memories(&scope("nobody"), &candidates, &audit()).unwrap().is_empty());
        assert!(store.days_with_memories(&ana, &[], &audit()).unwrap().is_empty());
    }

    fn lexical_scores_depend_on_the_users_own_memories_only(fx: Fixture) {
        let store = fx.store.as_ref();
        let (ana, ben) = (scope("ana"), scope("ben"));
        let t = t0();
        ensure(store, &ana);
        for (i, text) in ["my violin lesson went well", "the garden needs water", "violin strings are expensive", "we walked by the river"].iter().enumerate() {
            plain(store, memory(&ana, Kind::Note, text, t + Duration::minutes(i as i64)));
        }
        for i in 0..12 {
            plain(store, memory(&ana, Kind::Note, &format!("an ordinary day number {i}"), t + Duration::minutes(10 + i)));
        }
        let terms = vec!["violin".to_string(), "river".to_string()];
        let before = store.lexical_search(&ana, &terms, &SearchFilter::default(), 10).unwrap();
        assert_eq!(before.len(), 3);
        assert!(before.iter().all(|h| h.score > 0.0));
        ensure(store, &ben);
        let batch = (0..200).map(|i| NewMemory { memory: memory(&ben, Kind::Note, &format!("violin practice number {i}"), t + Duration::seconds(i)), embedding: None }).collect();
        store.insert_many(batch).unwrap();
        let after = store.lexical_search(&ana, &terms, &SearchFilter::default(), 10).unwrap();
        assert_eq!(before, after);
        let bens = store.lexical_search(&ben, &terms, &SearchFilter::default(), 500).unwrap();
        assert_eq!(bens.len(), 200);
        assert!(bens.iter().all(|h| !after.iter().any(|a| a.id == h.id)));
        let other = fx.open_other();
        let late = plain(other.as_ref(), memory(&ana, Kind::Note, "a violin concert on the river", t + Duration::hours(1)));
        let found = store.lexical_search(&ana, &terms, &SearchFilter::default(), 10).unwrap();
        assert_eq!(found[0].id, late, "both terms rank first");
        other.erase(&ana, late, t + Duration::hours(2)).unwrap();
        let found = store.lexical_search(&ana, &terms, &SearchFilter::default(), 10).unwrap();
        assert!(found.iter().all(|h| h.id != late));
        assert_eq!(found, before);
    }

    fn an_exact_match_scores_clearly_and_ranks_first_in_tiny_stores(fx: Fixture) {
        let store = fx.store.as_ref();
        let t = t0();
        let others = ["the garden needs water", "we walked by the river", "a long day at work", "dinner with my sister", "the train was late", "rain all afternoon", "new shoes for running", "a quiet evening", "reading before bed"];
        // One user per store size: each user's statistics are its own.
        for size in [1usize, 2, 10] {
            let ana = scope(&format!("ana{size}"));
            ensure(store, &ana);
            let violin = plain(store, memory(&ana, Kind::Note, "my violin lesson went well", t));
            for (i, text) in others.iter().take(size - 1).enumerate() {
                plain(store, memory(&ana, Kind::Note, text, t + Duration::minutes(i as i64 + 1)));
            }
            let hits = store.lexical_search(&ana, &["violin".to_string()], &SearchFilter::default(), 10).unwrap();
            assert_eq!(hits.len(), 1, "store of {size}");
            assert_eq!(hits[0].id, violin);
            assert!(hits[0].score > 0.1, "store of {size}: an exact match scored {}", hits[0].score);
            let hits = store.lexical_search(&ana, &["violin".to_string(), "the".to_string(), "my".to_string()], &SearchFilter::default(), 10).unwrap();
            assert_eq!(hits[0].id, violin, "store of {size}");
            assert!(hits.iter().all(|h| h.score > 0.0));
        }
        let ana = scope("ana-idf");
        ensure(store, &ana);
        let rare = plain(store, memory(&ana, Kind::Note, "violin", t));
        let common: Vec<MemoryId> = (0..9).map(|i| plain(store, memory(&ana, Kind::Note, "garden", t + Duration::minutes(i + 1)))).collect();
        let score = |word: &str, id: MemoryId| store.lexical_search(&ana, &[word.to_string()], &SearchFilter::default(), 10).unwrap().into_iter().find(|h| h.id == id).unwrap().score;
        assert!(score("violin", rare) > score("garden", common[0]));
    }

    fn metadata_index_finds_each_value_once(fx: Fixture) {
        let store = fx.store.as_ref();
        let (ana, ben) = (scope("ana"), scope("ben"));
        ensure(store, &ana);
        ensure(store, &ben);
        let keyed = |scope: &Scope, key: &str, value: &str, at: Timestamp| {
            let mut m = memory(scope, Kind::Turn, "a turn", at);
            m.metadata.insert(key.into(), value.into());
            plain(store, m)
        };
        let first = keyed(&ana, "import_key", "a", t0());
        keyed(&ana, "import_key", "a", t0() + Duration::minutes(1));
        let b = keyed(&ana, "import_key", "b", t0());
        keyed(&ana, "other", "c", t0());
        keyed(&ben, "import_key", "z", t0());
        // A key with JSON-path characters is just a key.
        let odd = keyed(&ana, "a.b\"[0]", "odd", t0());
        let index = store.metadata_index(&ana, "import_key").unwrap();
        assert_eq!(index, [("a".to_string(), first), ("b".to_string(), b)].into_iter().collect());
        assert_eq!(store.metadata_index(&ana, "a.b\"[0]").unwrap(), [("odd".to_string(), odd)].into_iter().collect());
        assert!(store.metadata_index(&ana, "missing").unwrap().is_empty());
    }

    fn a_maintenance_plan_is_applied_whole_or_not_at_all(fx: Fixture) {
        let store = fx.store.as_ref();
        let ana = scope("ana");
        let ids = maintenance_setup(store, &ana);
        let before = store.events(&ana, &EventQuery::default()).unwrap().len();
        let mut p = plan(t0() + Duration::days(1));
        p.archive.push((ids[0], json!({ "policy": "test" })));
        p.updates.push(StateUpdate::new(ids[1], 0.9, Layer::Long));
        let mut fused = memory(&ana, Kind::Fused, "fused", t0());
        fused.derived_from = vec![ids[2]];
        p.insert.push((NewMemory { memory: fused, embedding: Some((model(), vec![1.0; 3])) }, EventKind::Fused, json!({})));
        assert!(store.apply_maintenance(&ana, p).is_err());
        for id in &ids {
            let m = store.get(&ana, *id).unwrap();
            assert_eq!(m.status, Status::Active);
            assert_eq!(m.forgetting.layer, Layer::Short);
        }
        assert_eq!(store.events(&ana, &EventQuery::default()).unwrap().len(), before);
        assert_eq!(store.maintenance_state(&ana).unwrap().maintained_at, None);
    }

    fn maintenance_items_whose_memory_changed_meanwhile_are_skipped(fx: Fixture) {
        let store = fx.store.as_ref();
        let ana = scope("ana");
        let ids = maintenance_setup(store, &ana);
        let now = t0() + Duration::days(1);
        store.erase(&ana, ids[0], now).unwrap();
        store.archive(&ana, ids[1], "requested", now).unwrap();
        let mut p = plan(now);
        p.archive.push((ids[0], json!({})));
        p.supersede.push(Supersession { old: ids[1], by: Replacement::Existing(ids[2]), data: json!({ "rule": "near_duplicate" }) });
        p.updates.push(StateUpdate::new(ids[0], 0.9, Layer::Long));
        let applied = store.apply_maintenance(&ana, p).unwrap();
        assert_eq!(applied.skipped, 3);
        assert_eq!(applied.archived + applied.superseded, 0);
        assert_eq!(store.get(&ana, ids[0]).unwrap().status, Status::Erased);
        assert_eq!(store.get(&ana, ids[1]).unwrap().status, Status::Archived);
        assert_eq!(store.get(&ana, ids[1]).unwrap().superseded_by, None);
        assert_eq!(store.maintenance_state(&ana).unwrap().maintained_at, Some(now));
    }

    fn a_cycle_that_covered_part_of_the_new_memories_leaves_the_rest_for_the_next(fx: Fixture) {
        let store = fx.store.as_ref();
        let ana = scope("ana");
        let ids = maintenance_setup(store, &ana);
        let bob = scope("bob");
        ensure(store, &bob);
        store.insert(NewMemory { memory: memory(&bob, Kind::Turn, "bob's turn", t0()), embedding: Some((model(), unit(9))) }).unwrap();
        // Never maintained: all of ana's active memories, in storage order, and only hers.
        let new = store.unmaintained(&ana).unwrap();
        assert_eq!(new.memories.iter().map(|(id, _)| *id).collect::<Vec<_>>(), ids);
        assert!(new.memories.windows(2).all(|w| w[0].1 < w[1].1), "{new:?}");
        assert_eq!(new.newest, new.memories[2].1);
        // A cycle that finished with the first memory only.
        let mut p = plan(t0() + Duration::days(1));
        p.maintained_through = Some(new.memories[1].1 - 1);
        store.apply_maintenance(&ana, p).unwrap();
        let rest = store.unmaintained(&ana).unwrap();
        assert_eq!(rest.memories.iter().map(|(id, _)| *id).collect::<Vec<_>>(), ids[1..]);
        // An archived memory is not waiting; the position never moves back.
        store.archive(&ana, ids[1], "requested", t0() + Duration::days(1)).unwrap();
        let mut p = plan(t0() + Duration::days(2));
        p.maintained_through = Some(0);
        store.apply_maintenance(&ana, p).unwrap();
        assert_eq!(store.unmaintained(&ana).unwrap().memories.iter().map(|(id, _)| *id).collect::<Vec<_>>(), [ids[2]]);
        // A cycle that covered everything up to its snapshot: a memory stored after it waits.
        let later = store
            .insert(NewMemory { memory: memory(&ana, Kind::Turn, "a later turn", t0() + Duration::days(2)), embedding: Some((model(), unit(3))) })
            .unwrap()
            .id;
        let mut p = plan(t0() + Duration::days(3));
        p.maintained_through = Some(new.newest);
        store.apply_maintenance(&ana, p).unwrap();
        assert_eq!(store.unmaintained(&ana).unwrap().memories.iter().map(|(id, _)| *id).collect::<Vec<_>>(), [later]);
        assert_eq!(store.maintenance_state(&ana).unwrap().new_turns, 1);
        // Without a position, everything stored is covered; bob is untouched throughout.
        store.apply_maintenance(&ana, plan(t0() + Duration::days(4))).unwrap();
        assert!(store.unmaintained(&ana).unwrap().memories.is_empty());
        assert_eq!(store.unmaintained(&bob).unwrap().memories.len(), 1);
        assert_eq!(store.unmaintained(&scope("nobody")).unwrap(), Unmaintained::default());
    }

    fn maintenance_supersessions_point_at_inserted_memories_and_the_schedule_moves(fx: Fixture) {
        let store = fx.store.as_ref();
        let ana = scope("ana");
        let ids = maintenance_setup(store, &ana);
        let bob = scope("bob");
        ensure(store, &bob);
        let bobs = store.insert(NewMemory { memory: memory(&bob, Kind::Turn, "bob's turn", t0()), embedding: Some((model(), unit(9))) }).unwrap().id;
        assert_eq!(store.maintenance_state(&ana).unwrap().new_turns, 0);
        assert_eq!(store.maintenance_state(&bob).unwrap().new_turns, 1);
        let now = t0() + Duration::days(2);
        let mut fused = memory(&ana, Kind::Fused, "notes 0 and 1, fused", now);
        fused.derived_from = vec![ids[0], ids[1]];
        let fused_id = fused.id;
        let mut p = plan(now);
        p.insert.push((NewMemory { memory: fused, embedding: Some((model(), unit(10))) }, EventKind::Fused, json!({ "sources": 2 })));
        for id in &ids[..2] {
            p.supersede.push(Supersession { old: *id, by: Replacement::Inserted(0), data: json!({ "rule": "fusion" }) });
        }
        let mut update = StateUpdate::new(ids[2], 0.8, Layer::Long);
        update.base_importance = Some((0.9, "llm".into()));
        update.add_recalls = 2;
        update.add_frequency = 1.5;
        update.decay_factor = Some(2.0);
        update.events.push((EventKind::Promoted, json!({ "to": "long" })));
        p.updates.push(update);
        let applied = store.apply_maintenance(&ana, p).unwrap();
        assert_eq!((applied.inserted, applied.superseded, applied.skipped), (1, 2, 0));
        for id in &ids[..2] {
            let m = store.get(&ana, *id).unwrap();
            assert_eq!(m.status, Status::Superseded);
            assert_eq!(m.superseded_by, Some(fused_id));
        }
        assert_eq!(store.get(&ana, fused_id).unwrap().derived_from, vec![ids[0], ids[1]]);
        let updated = store.get(&ana, ids[2]).unwrap();
        assert_eq!((updated.forgetting.importance, updated.forgetting.layer, updated.forgetting.base_importance), (0.8, Layer::Long, 0.9));
        assert_eq!((updated.forgetting.recall_count, updated.forgetting.access_frequency, updated.forgetting.decay_factor), (2, 1.5, 2.0));
        assert_eq!(updated.metadata.get("importance_source").map(String::as_str), Some("llm"));
        let due = store.users_due_for_maintenance(now, None, 10).unwrap();
        assert_eq!(due.iter().map(|(_, u)| u.as_str()).collect::<Vec<_>>(), ["bob"]);
        let due = store.users_due_for_maintenance(now + Duration::seconds(1), None, 10).unwrap();
        assert_eq!(due.iter().map(|(_, u)| u.as_str()).collect::<Vec<_>>(), ["bob", "ana"], "never maintained first");
        let due = store.users_due_for_maintenance(t0() - Duration::days(1), Some(1), 10).unwrap();
        assert_eq!(due.iter().map(|(_, u)| u.as_str()).collect::<Vec<_>>(), ["bob"]);
        assert_eq!(store.get(&bob, bobs).unwrap().status, Status::Active);
        assert!(store.events(&bob, &EventQuery::default()).unwrap().iter().all(|e| e.kind != EventKind::Maintained));
        assert_eq!(store.vectors(&ana, &[fused_id, ids[2]]).unwrap(), vec![(fused_id, unit(10)), (ids[2], vec![0.5; DIM])]);
    }

    fn export_and_import_round_trip_losslessly(fx: Fixture) {
        let store = fx.store.as_ref();
        let ana = scope("ana");
        ensure(store, &ana);
        store.set_time_zone(&ana.tenant, &ana.user, "Europe/Paris", t0()).unwrap();
        populate(store, &ana);
        let exported = export(store, &ana);
        assert!(exported.len() > 10);
        let import = import_of(store, &ana);
        // Into a fresh database of the same backend, then out again: the same rows.
        let target = match fx.backend {
            "sqlite" => Fixture::sqlite(),
            _ => Fixture::postgres("export_target").expect("the source was PostgreSQL"),
        };
        let counts = target.store.import_users(vec![import.clone()], false).unwrap();
        assert_eq!(counts.users_created, 1);
        assert_eq!(export(target.store.as_ref(), &ana), exported);
        // Again without merge is refused; with merge nothing is added.
        assert!(matches!(target.store.import_users(vec![import.clone()], false), Err(StoreError::Conflict(_))));
        let merged = target.store.import_users(vec![import.clone()], true).unwrap();
        assert_eq!((merged.users_created, merged.memories, merged.events), (0, 0, 0));
        assert_eq!(export(target.store.as_ref(), &ana), exported);
        // Imported memories are searchable like any other.
        assert_eq!(lexical(target.store.as_ref(), &ana, "violin", &SearchFilter::default()), lexical(store, &ana, "violin", &SearchFilter::default()));
        assert_eq!(dense(target.store.as_ref(), &ana, &unit(1), &audit()), dense(store, &ana, &unit(1), &audit()));
        assert_eq!(target.integrity(), Vec::<String>::new());
        // The same memories for another user are refused (ids are unique in a store).
        let mut stolen = import;
        stolen.state.user = UserId::new("mallory").unwrap();
        for (m, _) in &mut stolen.memories {
            m.scope.user = stolen.state.user.clone();
        }
        stolen.events.clear();
        assert!(matches!(target.store.import_users(vec![stolen], false), Err(StoreError::Conflict(_))));
        assert!(!export_exists(target.store.as_ref(), &scope("mallory")));
    }
}

/// A user's export as comparable rows (vectors included; the log's sequence numbers,
/// which are the database's, left out).
pub(crate) fn export(store: &dyn Store, scope: &Scope) -> Vec<String> {
    let mut rows = Vec::new();
    store
        .export_user(&scope.tenant, &scope.user, true, &mut |row| {
            rows.push(match row {
                ExportRow::Event(mut event) => {
                    event.seq = 0;
                    format!("{:?}", ExportRow::Event(event))
                }
                other => format!("{other:?}"),
            });
            Ok(())
        })
        .unwrap();
    rows
}

fn export_exists(store: &dyn Store, scope: &Scope) -> bool {
    store.export_user(&scope.tenant, &scope.user, false, &mut |_| Ok(())).unwrap()
}

/// A user's export, as an import.
pub(crate) fn import_of(store: &dyn Store, scope: &Scope) -> UserImport {
    let mut import = UserImport {
        state: UserState {
            tenant: scope.tenant.clone(),
            user: scope.user.clone(),
            time_zone: String::new(),
            created_at: t0(),
            maintained_at: None,
            resummarize_due: false,
        },
        memories: Vec::new(),
        events: Vec::new(),
        queries: Vec::new(),
    };
    store
        .export_user(&scope.tenant, &scope.user, true, &mut |row| {
            match row {
                ExportRow::User(state) => import.state = state,
                ExportRow::Memory(m, v) => import.memories.push((*m, v)),
                ExportRow::Event(e) => import.events.push(e),
                ExportRow::Query(at, v) => import.queries.push((at, v)),
            }
            Ok(())
        })
        .unwrap();
    import
}

/// Fills a user with a little of everything: turns with metadata, a note without a vector,
/// a pin, an archive, an erasure, a summary superseding a memory, a strengthening recall
/// with a query vector, a maintenance cycle.
pub(crate) fn populate(store: &dyn Store, ana: &Scope) {
    let policy = ForgettingPolicy::default();
    let mut ids = Vec::new();
    for i in 0..6 {
        let mut turn =
            memory(ana, Kind::Turn, &format!("User: violin lesson {i}\nAssistant: nice"), t0() + Duration::hours(i));
        turn.user_text = Some(format!("violin lesson {i}"));
        turn.assistant_text = Some("nice".into());
        turn.metadata.insert("import_key".into(), format!("t{i}"));
        ids.push(store.insert(NewMemory { memory: turn, embedding: Some((model(), unit(i as u64))) }).unwrap().id);
    }
    let plain_note = plain(store, memory(ana, Kind::Note, "a note without a vector", t0()));
    store.set_pinned(ana, ids[0], true, t0()).unwrap();
    store.archive(ana, ids[1], "x", t0()).unwrap();
    store.erase(ana, ids[2], t0()).unwrap();
    let mut summary = memory(ana, Kind::DailySummary, "violin all day", t0() + Duration::hours(7));
    summary.derived_from = vec![ids[3], ids[4]];
    store
        .insert_superseding(
            NewMemory { memory: summary, embedding: Some((model(), unit(20))) },
            &[plain_note],
            t0() + Duration::hours(7),
        )
        .unwrap();
    let record = RecallRecord {
        query_id: "q".into(),
        now: t0() + Duration::days(1),
        results: vec![(ids[3], 0.9), (ids[0], 0.5)],
        query_vector: Some(unit(30)),
        include_archived: false,
        reminisced: Vec::new(),
    };
    store.record_recall(ana, &record, Some(&policy)).unwrap();
    let mut p = plan(t0() + Duration::days(2));
    p.updates.push(StateUpdate::new(ids[5], 0.7, Layer::Long));
    store.apply_maintenance(ana, p).unwrap();
}

fn plan(now: Timestamp) -> MaintenancePlan {
    MaintenancePlan {
        now,
        updates: Vec::new(),
        archive: Vec::new(),
        insert: Vec::new(),
        supersede: Vec::new(),
        summary: json!({}),
        maintained_through: None,
    }
}

fn maintenance_setup(store: &dyn Store, ana: &Scope) -> Vec<MemoryId> {
    ensure(store, ana);
    (0..3)
        .map(|i| {
            store
                .insert(NewMemory {
                    memory: memory(ana, Kind::Note, &format!("note {i}"), t0() + Duration::minutes(i)),
                    embedding: Some((model(), vec![0.5; DIM])),
                })
                .unwrap()
                .id
        })
        .collect()
}

conformance! {
    fn api_keys_move_to_another_store_with_their_hashes(fx: Fixture) {
        let keys = fx.keys.as_ref();
        let tenant = TenantId::default_tenant();
        let new = |id: &str, hash: &str, user: Option<&str>, admin: bool, label: Option<&str>| NewApiKey {
            key_id: id.into(),
            hash: hash.into(),
            tenant: tenant.clone(),
            user: user.map(|u| UserId::new(u).unwrap()),
            admin,
            label: label.map(Into::into),
            created_at: t0() + Duration::milliseconds(123),
        };
        keys.create_key(new("ka", "hash-a", None, true, Some("ops"))).unwrap();
        keys.create_key(new("kb", "hash-b", Some("ana"), false, None)).unwrap();
        keys.revoke_key("kb", t0() + Duration::days(1)).unwrap();
        let exported = keys.export_keys().unwrap();
        assert_eq!(exported.iter().map(|(k, h)| (k.key_id.as_str(), h.as_str())).collect::<Vec<_>>(), [("ka", "hash-a"), ("kb", "hash-b")]);
        assert_eq!(exported.iter().map(|(k, _)| k.clone()).collect::<Vec<_>>(), keys.list_keys().unwrap(), "the same records as the list, in its order");

        // Into a fresh store of each backend: the same records, the same hashes, a revoked
        // key still revoked, a live one found by its hash.
        let mut targets = vec![Fixture::sqlite()];
        targets.extend(Fixture::postgres("keys_target"));
        for target in &targets {
            let to = target.keys.as_ref();
            to.create_key(new("kz", "hash-z", None, false, Some("the target's own"))).unwrap();
            for (record, hash) in &exported {
                assert!(to.import_key(record, hash).unwrap(), "{} into {}", record.key_id, target.backend);
            }
            let copied: Vec<_> = to.export_keys().unwrap().into_iter().filter(|(k, _)| k.key_id != "kz").collect();
            assert_eq!(copied, exported, "into {}", target.backend);
            assert_eq!(to.find_key_by_hash("hash-a").unwrap().map(|k| k.key_id), Some("ka".to_string()));
            assert_eq!(to.find_key_by_hash("hash-b").unwrap(), None, "revoked stays revoked");
            assert_eq!(to.live_key_count().unwrap(), 2);
            // Again: nothing changes.
            for (record, hash) in &exported {
                assert!(!to.import_key(record, hash).unwrap());
            }
            assert_eq!(to.export_keys().unwrap().len(), 3);
            // Another key under a stored id, or a stored hash under another id: refused.
            let (a, hash_a) = &exported[0];
            assert!(matches!(to.import_key(a, "hash-other"), Err(StoreError::Conflict(_))));
            assert!(matches!(to.import_key(&membank_store::ApiKeyRecord { label: Some("changed".into()), ..a.clone() }, hash_a), Err(StoreError::Conflict(_))));
            assert!(matches!(to.import_key(&membank_store::ApiKeyRecord { revoked_at: Some(t0()), ..a.clone() }, hash_a), Err(StoreError::Conflict(_))));
            assert!(matches!(to.import_key(&membank_store::ApiKeyRecord { key_id: "kq".into(), ..a.clone() }, hash_a), Err(StoreError::Conflict(_))));
            assert_eq!(to.export_keys().unwrap().len(), 3, "a refused key stores nothing");
        }
    }

    fn a_bulk_import_keeps_order_skips_present_rows_and_refuses_other_users_ids(fx: Fixture) {
        let store = fx.store.as_ref();
        let ana = scope("ana");
        ensure(store, &ana);
        // More rows than one statement of the bulk import writes, of every status.
        let mut rows = Vec::new();
        for i in 0..2500u64 {
            let mut m = memory(&ana, Kind::Note, &format!("note {i} about violin {}", i % 7), t0() + Duration::seconds(i as i64));
            m.status = match i % 10 {
                0 => Status::Archived,
                1 => Status::Erased,
                2 => Status::Superseded,
                _ => Status::Active,
            };
            if m.status == Status::Erased {
                m.content = None;
            }
            // An erased memory has no vector left, as a store exports it.
            let embedding = (i % 4 != 0 && m.status != Status::Erased).then(|| (model(), unit(i)));
            rows.push(NewMemory { memory: m, embedding });
        }
        store.insert_many(rows).unwrap();
        let exported = export(store, &ana);
        let import = import_of(store, &ana);
        let target = match fx.backend {
            "sqlite" => Fixture::sqlite(),
            _ => Fixture::postgres("bulk_target").expect("the source was PostgreSQL"),
        };
        let to = target.store.as_ref();
        // Half first, then all with merge: the first half is skipped, the rest added in order.
        let half = UserImport { memories: import.memories[..1300].to_vec(), events: import.events[..1000].to_vec(), queries: Vec::new(), ..import.clone() };
        let first = to.import_users(vec![half], false).unwrap();
        assert_eq!((first.users_created, first.memories, first.events), (1, 1300, 1000));
        let rest = to.import_users(vec![import.clone()], true).unwrap();
        assert_eq!((rest.memories, rest.events, rest.skipped), (1200, import.events.len() - 1000, 2300));
        assert_eq!(export(to, &ana), exported);
        assert_eq!(to.counts(&ana).unwrap(), store.counts(&ana).unwrap());
        assert_eq!(lexical(to, &ana, "violin 3", &audit()), lexical(store, &ana, "violin 3", &audit()));
        assert_eq!(dense(to, &ana, &unit(5), &audit()), dense(store, &ana, &unit(5), &audit()));
        assert_eq!(target.integrity(), Vec::<String>::new());
        // One id of another user anywhere in the import refuses all of it.
        let ben = scope("ben");
        let mut theirs = UserImport { state: UserState { user: ben.user.clone(), ..import.state.clone() }, memories: Vec::new(), events: Vec::new(), queries: Vec::new() };
        for i in 0..2100 {
            let m = if i == 2050 { Memory { scope: ben.clone(), ..import.memories[7].0.clone() } } else { memory(&ben, Kind::Note, &format!("ben {i}"), t0()) };
            theirs.memories.push((m, None));
        }
        assert!(matches!(to.import_users(vec![theirs], false), Err(StoreError::Conflict(_))));
        assert_eq!(to.find_user(&ben.tenant, &ben.user).unwrap(), None, "nothing of ben was stored");
        // Users are created in the import's order (the order they are listed in), whatever
        // their names.
        let empty = |name: &str| UserImport { state: UserState { user: UserId::new(name).unwrap(), ..import.state.clone() }, memories: Vec::new(), events: Vec::new(), queries: Vec::new() };
        to.import_users(vec![empty("zed"), empty("bea"), empty("max")], false).unwrap();
        let order: Vec<String> = to.all_users().unwrap().into_iter().map(|(_, u)| u.as_str().to_string()).collect();
        assert_eq!(order, ["ana", "zed", "bea", "max"]);
    }
}

// ---------------------------------------------------------------------------------------
// Reminiscence: a recall that found archived memories in the archive
// ---------------------------------------------------------------------------------------

/// A recall of `results` at `now` naming `reminisced` as found in the archive.
fn reminiscing(query_id: &str, now: Timestamp, results: &[(MemoryId, f64)], reminisced: &[MemoryId]) -> RecallRecord {
    RecallRecord {
        query_id: query_id.into(),
        now,
        results: results.to_vec(),
        query_vector: None,
        include_archived: false,
        reminisced: reminisced.to_vec(),
    }
}

conformance! {
    fn a_reminisced_memory_comes_back_with_savings_and_its_event(fx: Fixture) {
        let store = fx.store.as_ref();
        let ana = scope("ana");
        ensure(store, &ana);
        let policy = ForgettingPolicy::default();
        let active = note(store, &ana, "still active", t0(), 1);
        let old = note(store, &ana, "the dog is called Rex", t0(), 2);
        // Recalled twice (S = 3), then archived on day 20.
        for day in [1, 2] {
            let record = reminiscing(&format!("early{day}"), t0() + Duration::days(day), &[(old, 0.5)], &[]);
            store.record_recall(&ana, &record, Some(&policy)).unwrap();
        }
        let archived_at = t0() + Duration::days(20);
        store.archive(&ana, old, "test", archived_at).unwrap();
        let before = store.get(&ana, old).unwrap().forgetting;
        assert_eq!(before.strength.get(), 3.0);

        let now = t0() + Duration::days(60);
        let record = reminiscing("q-rem", now, &[(active, 0.9), (old, 0.8)], &[old]);
        let returned = store.record_recall(&ana, &record, Some(&policy)).unwrap();
        assert_eq!(returned.iter().map(|m| m.id).collect::<Vec<_>>(), [active, old]);
        let back = &returned[1];
        assert_eq!(back.status, Status::Active);
        assert_eq!(back.forgetting, policy.reminisce(&before, Some(archived_at), now));
        assert_eq!(back.forgetting.strength.get(), 4.0, "S at archive (3) plus one");
        assert_eq!(back.forgetting.recall_count, 3);
        assert_eq!(back.forgetting.last_recalled_at, now);
        assert_eq!(store.get(&ana, old).unwrap(), *back);
        assert_eq!(store.counts(&ana).unwrap().archived, 0);
        // Searches see it as active again.
        assert!(dense(store, &ana, &unit(2), &SearchFilter::default()).contains(&old));
        assert_eq!(lexical(store, &ana, "Rex", &SearchFilter::default()), [old]);

        let log = store.events(&ana, &EventQuery { memory_id: Some(old), ..Default::default() }).unwrap();
        let last: Vec<EventKind> = log.iter().rev().take(2).rev().map(|e| e.kind).collect();
        assert_eq!(last, [EventKind::Recalled, EventKind::Reminisced], "no plain strengthening, no separate restore");
        let event = log.last().unwrap();
        assert_eq!(event.at, now);
        assert_eq!(event.data["query_id"], "q-rem");
        assert_eq!(event.data["rank"], 2);
        assert_eq!(event.data["score"], 0.8);
        assert_eq!(event.data["strength_before"], 3.0);
        assert_eq!(event.data["strength_at_archive"], 3.0);
        assert_eq!(event.data["strength_after"], 4.0);
        assert_eq!(event.data["previous_status"], "archived");
        let at = chrono::DateTime::parse_from_rfc3339(event.data["archived_at"].as_str().unwrap()).unwrap();
        assert_eq!(at.with_timezone(&Utc), archived_at);
        // The active one was strengthened as usual.
        let strengthened: Vec<Option<MemoryId>> = store.events(&ana, &EventQuery::default()).unwrap().iter().filter(|e| e.kind == EventKind::Strengthened && e.data["query_id"] == "q-rem").map(|e| e.memory_id).collect();
        assert_eq!(strengthened, [Some(active)]);
        assert!(fx.integrity().is_empty(), "{:?}", fx.integrity());
    }

    fn fademem_reminiscence_reinforces_as_from_the_archive(fx: Fixture) {
        let store = fx.store.as_ref();
        let ana = scope("ana");
        ensure(store, &ana);
        let policy = ForgettingPolicy { kind: membank_core::PolicyKind::FadeMem, ..ForgettingPolicy::default() };
        let old = note(store, &ana, "an old fact", t0(), 3);
        let plan = store.sweep(&ana, &policy, t0() + Duration::days(400), false).unwrap();
        assert_eq!(plan.archived.iter().map(|a| a.id).collect::<Vec<_>>(), [old]);
        let before = store.get(&ana, old).unwrap().forgetting;
        let now = t0() + Duration::days(700);
        let returned = store.record_recall(&ana, &reminiscing("q", now, &[(old, 0.4)], &[old]), Some(&policy)).unwrap();
        let after = returned[0].forgetting;
        assert_eq!(after, policy.reminisce(&before, Some(t0() + Duration::days(400)), now));
        let v = policy.fademem.decay(&after, now).strength;
        assert!(v > policy.fademem.epsilon && v >= policy.fademem.decay(&policy.strengthen(&before, now), now).strength, "v = {v}");
        let event = store.events(&ana, &EventQuery { memory_id: Some(old), ..Default::default() }).unwrap().pop().unwrap();
        assert_eq!(event.kind, EventKind::Reminisced);
        assert!(event.data["v_after"].as_f64().unwrap() > event.data["v_before"].as_f64().unwrap());
    }

    fn reminiscence_never_brings_back_erased_superseded_unnamed_or_foreign_memories(fx: Fixture) {
        let store = fx.store.as_ref();
        let (ana, ben) = (scope("ana"), scope("ben"));
        ensure(store, &ana);
        ensure(store, &ben);
        let policy = ForgettingPolicy::default();
        let erased = note(store, &ana, "erased", t0(), 1);
        let superseded = note(store, &ana, "superseded", t0(), 2);
        let unnamed = note(store, &ana, "archived, not found in the archive by this recall", t0(), 3);
        let foreign = note(store, &ben, "ben's archived memory", t0(), 4);
        store.archive(&ana, erased, "x", t0()).unwrap();
        store.erase(&ana, erased, t0()).unwrap();
        let mut fused = memory(&ana, Kind::DailySummary, "the summary", t0());
        fused.derived_from = vec![superseded];
        store.insert_superseding(NewMemory { memory: fused, embedding: None }, &[superseded], t0()).unwrap();
        store.archive(&ana, unnamed, "x", t0()).unwrap();
        store.archive(&ben, foreign, "x", t0()).unwrap();
        let now = t0() + Duration::days(5);
        let results = [(erased, 0.9), (superseded, 0.8), (unnamed, 0.7), (foreign, 0.6)];
        let named = [erased, superseded, foreign];
        let returned = store.record_recall(&ana, &reminiscing("q", now, &results, &named), Some(&policy)).unwrap();
        assert!(returned.is_empty(), "{returned:?}");
        assert_eq!(store.get(&ana, superseded).unwrap().status, Status::Superseded);
        assert_eq!(store.get(&ana, unnamed).unwrap().status, Status::Archived);
        assert_eq!(store.get(&ana, erased).unwrap().status, Status::Erased);
        assert_eq!(store.get(&ben, foreign).unwrap().status, Status::Archived);
        assert!(store.events(&ben, &EventQuery::default()).unwrap().iter().all(|e| e.kind != EventKind::Reminisced && e.kind != EventKind::Recalled));
        assert!(store.events(&ana, &EventQuery::default()).unwrap().iter().all(|e| e.kind != EventKind::Reminisced && e.kind != EventKind::Recalled));
    }

    fn reminiscence_in_audits_and_inspections_restores_nothing(fx: Fixture) {
        let store = fx.store.as_ref();
        let ana = scope("ana");
        ensure(store, &ana);
        let policy = ForgettingPolicy::default();
        let old = note(store, &ana, "archived", t0(), 1);
        store.archive(&ana, old, "x", t0()).unwrap();
        let now = t0() + Duration::days(5);
        // A recall that does not strengthen logs it as returned, and it stays archived.
        let returned = store.record_recall(&ana, &reminiscing("look", now, &[(old, 0.5)], &[old]), None).unwrap();
        assert_eq!(returned.iter().map(|m| (m.id, m.status)).collect::<Vec<_>>(), [(old, Status::Archived)]);
        // An audit never restores, even when told the memory came from the archive.
        let audit = RecallRecord { include_archived: true, ..reminiscing("audit", now, &[(old, 0.5)], &[old]) };
        let returned = store.record_recall(&ana, &audit, Some(&policy)).unwrap();
        assert_eq!(returned.iter().map(|m| (m.id, m.status)).collect::<Vec<_>>(), [(old, Status::Archived)]);
        assert_eq!(returned[0].forgetting.strength.get(), 1.0);
        let kinds: Vec<EventKind> = store.events(&ana, &EventQuery { memory_id: Some(old), ..Default::default() }).unwrap().iter().map(|e| e.kind).collect();
        assert_eq!(kinds, [EventKind::Created, EventKind::Archived, EventKind::Recalled, EventKind::Recalled]);
    }

    fn a_memory_twice_in_one_reminiscing_recall_comes_back_once_then_strengthens(fx: Fixture) {
        let store = fx.store.as_ref();
        let ana = scope("ana");
        ensure(store, &ana);
        // Every recall strengthens here; under spaced strengthening the second occurrence,
        // the same moment as the restoration, would add nothing (tested below).
        let policy = ForgettingPolicy { spaced_recall: false, ..Default::default() };
        let old = note(store, &ana, "archived", t0(), 1);
        store.archive(&ana, old, "x", t0()).unwrap();
        let now = t0() + Duration::days(5);
        let returned = store.record_recall(&ana, &reminiscing("q", now, &[(old, 0.5), (old, 0.4)], &[old]), Some(&policy)).unwrap();
        assert!(returned.iter().all(|m| m.id == old && m.status == Status::Active));
        assert_eq!(store.get(&ana, old).unwrap().forgetting.strength.get(), 3.0);
        let kinds: Vec<EventKind> = store.events(&ana, &EventQuery { memory_id: Some(old), ..Default::default() }).unwrap().iter().map(|e| e.kind).collect();
        assert_eq!(kinds, [EventKind::Created, EventKind::Archived, EventKind::Recalled, EventKind::Recalled, EventKind::Reminisced, EventKind::Strengthened]);
    }

    fn spaced_strengthening_counts_days_not_recalls(fx: Fixture) {
        let store = fx.store.as_ref();
        let ana = scope("ana");
        ensure(store, &ana);
        let policy = ForgettingPolicy::default();
        assert!(policy.spaced_recall);
        let id = note(store, &ana, "recalled all day", t0(), 1);
        let recall = |query: &str, at: Timestamp, results: Vec<(MemoryId, f64)>| {
            let record = RecallRecord { query_id: query.into(), now: at, results, query_vector: None, include_archived: false, reminisced: Vec::new() };
            store.record_recall(&ana, &record, Some(&policy)).unwrap()
        };
        // The day it was made (t0 is 09:00 UTC): twice, no stronger; its clock restarts.
        recall("a", t0() + Duration::hours(1), vec![(id, 0.9)]);
        let m = recall("b", t0() + Duration::hours(5), vec![(id, 0.9)]).remove(0);
        assert_eq!((m.forgetting.strength.get(), m.forgetting.recall_count), (1.0, 2));
        assert_eq!(m.forgetting.last_recalled_at, t0() + Duration::hours(5));
        // The next day, twice in one recall: one stronger, once.
        let next = t0() + Duration::days(1);
        recall("c", next, vec![(id, 0.9), (id, 0.8)]);
        // Confirmed use the day after, twice: one more.
        let used = store.confirm_used(&ana, &[id, id], Some("d"), &policy, next + Duration::days(1)).unwrap();
        assert_eq!((used[0].forgetting.strength.get(), used[0].forgetting.recall_count), (3.0, 6));
        assert_eq!(store.get(&ana, id).unwrap().forgetting, used[0].forgetting);
        // Every recall is logged as a strengthening with the strength before and after,
        // each seeing the one before it (a same-day one changes FadeMem's numbers and the clock).
        let steps: Vec<(f64, f64)> = store
            .events(&ana, &EventQuery { memory_id: Some(id), ..Default::default() })
            .unwrap()
            .iter()
            .filter(|e| e.kind == EventKind::Strengthened)
            .map(|e| (e.data["strength_before"].as_f64().unwrap(), e.data["strength_after"].as_f64().unwrap()))
            .collect();
        assert_eq!(steps, [(1.0, 1.0), (1.0, 1.0), (1.0, 2.0), (2.0, 2.0), (2.0, 3.0), (3.0, 3.0)]);
        // A memory brought back from the archive gets its savings (+1), and a second
        // occurrence in the same recall adds nothing more that day.
        let old = note(store, &ana, "archived", t0(), 2);
        store.archive(&ana, old, "x", t0()).unwrap();
        let later = t0() + Duration::days(5);
        store.record_recall(&ana, &reminiscing("e", later, &[(old, 0.5), (old, 0.4)], &[old]), Some(&policy)).unwrap();
        assert_eq!(store.get(&ana, old).unwrap().forgetting.strength.get(), 2.0);
    }
}
