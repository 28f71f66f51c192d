//! Database files of every released schema version open, upgrade and read correctly.
//! `fixtures/schema-v1.db` was written by the first release's CLI with the real model:
//! alice has a pinned turn (recalled once), an archived Chinese turn and the time zone
//! Asia/Shanghai; bob has one note. A new migration must keep this test passing, and the
//! release that adds it commits a `schema-vN.db` of its own.

use membank_core::{Kind, MemoryId, Scope, Status, TenantId, UserId};
use membank_store::sqlite::CURRENT_VERSION;
use membank_store::{EmbeddingModel, EventQuery, ListQuery, SearchFilter, SqliteStore, Store};

fn open_copy(name: &str) -> (tempfile::TempDir, SqliteStore) {
    let dir = tempfile::tempdir().unwrap();
    let copy = dir.path().join(name);
    std::fs::copy(std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures").join(name), &copy).unwrap();
    let store = SqliteStore::open(&copy).unwrap();
    (dir, store)
}

fn scope(user: &str) -> Scope {
    Scope::user(TenantId::default_tenant(), UserId::new(user).unwrap())
}

#[test]
fn schema_v1_opens_upgrades_and_reads() {
    let (_dir, store) = open_copy("schema-v1.db");
    assert_eq!(store.schema_version().unwrap(), CURRENT_VERSION);
    assert!(store.integrity_check().unwrap().is_empty());

    let all = ListQuery { statuses: Status::ALL.to_vec(), oldest_first: true, ..Default::default() };
    let alice = store.list(&scope("alice"), &all).unwrap();
    assert_eq!(alice.len(), 2);
    let cat = &alice[0];
    assert_eq!(cat.id, "01a22b41-fa51-7d45-8540-8898b938cd1f".parse::<MemoryId>().unwrap());
    assert_eq!(cat.kind, Kind::Turn);
    assert_eq!(cat.user_text.as_deref(), Some("I adopted a grey cat named Miso"));
    assert_eq!(cat.assistant_text.as_deref(), Some("Lovely name!"));
    assert_eq!(cat.day.to_string(), "2024-05-04");
    assert!(cat.forgetting.pinned);
    assert_eq!(cat.forgetting.strength.get(), 2.0);
    assert_eq!(alice[1].status, Status::Archived);
    assert_eq!(alice[1].content.as_deref(), Some("User: 我的猫叫咪咪"));
    assert_eq!(
        store.find_user(&TenantId::default_tenant(), &UserId::new("alice").unwrap()).unwrap().unwrap().time_zone,
        "Asia/Shanghai"
    );

    let bob = store.list(&scope("bob"), &all).unwrap();
    assert_eq!(bob.len(), 1);
    assert_eq!(bob[0].kind, Kind::Note);

    // Vectors and the full-text index survive too.
    let model = EmbeddingModel { id: "sentence-transformers/all-MiniLM-L6-v2".into(), dim: 384 };
    let query = vec![1.0 / (384f32).sqrt(); 384];
    let dense = store.dense_search(&scope("alice"), &model, &query, &SearchFilter::default(), 10).unwrap();
    assert_eq!(dense.iter().map(|h| h.id).collect::<Vec<_>>(), [cat.id]);
    let lexical = store.lexical_search(&scope("bob"), &["tea".to_string()], &SearchFilter::default(), 10).unwrap();
    assert_eq!(lexical.len(), 1);
    let events = store.events(&scope("alice"), &EventQuery::default()).unwrap();
    let kinds: Vec<&str> = events.iter().map(|e| e.kind.as_str()).collect();
    assert_eq!(kinds, ["created", "created", "pinned", "archived", "recalled", "strengthened"]);
}

/// `fixtures/schema-v3.db` was written by the v3 release's CLI with the real model: alice
/// has a turn (recalled once, S = 2) and a pinned note; bob's note was archived by a sweep.
/// Upgrading to v4 adds FadeMem's columns with their neutral defaults and the maintenance
/// schedule, and changes no memory.
#[test]
fn schema_v3_opens_upgrades_and_reads() {
    let (_dir, store) = open_copy("schema-v3.db");
    assert_eq!(store.schema_version().unwrap(), CURRENT_VERSION);
    assert!(store.integrity_check().unwrap().is_empty());
    let all = ListQuery { statuses: Status::ALL.to_vec(), oldest_first: true, ..Default::default() };
    let alice = store.list(&scope("alice"), &all).unwrap();
    assert_eq!(alice.len(), 2);
    let cat = &alice[0];
    assert_eq!(cat.id, "01a23036-a26b-7bc7-843e-0077210d6089".parse::<MemoryId>().unwrap());
    assert_eq!(cat.user_text.as_deref(), Some("I adopted a grey cat named Miso"));
    assert_eq!(cat.forgetting.strength.get(), 2.0);
    assert_eq!(cat.forgetting.recall_count, 1);
    // FadeMem's numbers start neutral: a kept age of 0, no decayed recalls yet (v3 did not
    // track them), base importance 0.5, decay factor 1, short-term layer.
    assert_eq!(cat.forgetting.fade_age, 0.0);
    assert_eq!(cat.forgetting.access_frequency, 0.0);
    assert_eq!(cat.forgetting.base_importance, 0.5);
    assert_eq!(cat.forgetting.importance, 0.5);
    assert_eq!(cat.forgetting.decay_factor, 1.0);
    assert_eq!(cat.forgetting.layer, membank_core::Layer::Short);
    assert!(alice[1].forgetting.pinned);
    let bob = store.list(&scope("bob"), &all).unwrap();
    assert_eq!(bob[0].status, Status::Archived);
    // Never maintained; nothing counted as new before the upgrade is lost from the schedule.
    let state = store.maintenance_state(&scope("alice")).unwrap();
    assert_eq!(state.maintained_at, None);
    assert_eq!(state.new_turns, 1);
    assert!(store.recent_queries(&scope("alice"), 10).unwrap().is_empty());
    let model = EmbeddingModel { id: "sentence-transformers/all-MiniLM-L6-v2".into(), dim: 384 };
    assert_eq!(store.vectors(&scope("alice"), &[cat.id]).unwrap()[0].1.len(), model.dim);
}

/// `fixtures/schema-v4.db` is the v3 file above brought to v4 by the v4 migration's own
/// SQL (the v4 release's), with v4-only state set: alice's turn has FadeMem numbers, alice
/// was maintained, and has one recent query. Upgrading to v5 adds idempotency keys and
/// the `resummarize_due` mark, and changes none of it.
#[test]
fn schema_v4_opens_upgrades_and_reads() {
    let (_dir, store) = open_copy("schema-v4.db");
    assert_eq!(store.schema_version().unwrap(), CURRENT_VERSION);
    assert_eq!(store.integrity_check().unwrap(), Vec::<String>::new());
    let all = ListQuery { statuses: Status::ALL.to_vec(), oldest_first: true, ..Default::default() };
    let alice = store.list(&scope("alice"), &all).unwrap();
    let cat = &alice[0];
    assert_eq!(cat.user_text.as_deref(), Some("I adopted a grey cat named Miso"));
    assert_eq!(cat.forgetting.fade_age, 2.5);
    assert_eq!(cat.forgetting.access_frequency, 0.75);
    assert_eq!(cat.forgetting.base_importance, 0.8);
    assert_eq!(cat.forgetting.layer, membank_core::Layer::Long);
    let state = store.maintenance_state(&scope("alice")).unwrap();
    assert!(state.maintained_at.is_some());
    assert_eq!(state.new_turns, 0);
    assert!(!state.resummarize_due);
    assert_eq!(store.recent_queries(&scope("alice"), 10).unwrap().len(), 1);
    assert_eq!(store.idempotency_record(&scope("alice"), "k1", chrono::DateTime::UNIX_EPOCH).unwrap(), None);
}

/// `fixtures/schema-v5.db` is the v4 file above opened by the v5 release's CLI, which
/// migrated it, with one more note for bob written at v5. Upgrading to v6 rebuilds the
/// full-text index (with FTS5's `secure-delete` on) and adds the WAL purge mark: every
/// memory is still found by its words, and erasing one then removes its words.
#[test]
fn schema_v5_opens_upgrades_and_reads() {
    let (dir, store) = open_copy("schema-v5.db");
    assert_eq!(store.schema_version().unwrap(), CURRENT_VERSION);
    assert_eq!(store.integrity_check().unwrap(), Vec::<String>::new());
    let terms = |q: &str| membank_core::text::query_terms(q);
    let shed = store.lexical_search(&scope("bob"), &terms("bicycle shed"), &SearchFilter::default(), 5).unwrap();
    assert_eq!(shed.len(), 1);
    let cat = store.lexical_search(&scope("alice"), &terms("grey cat Miso"), &SearchFilter::default(), 5).unwrap();
    assert_eq!(cat.len(), 1);
    let secure: i64 = rusqlite::Connection::open(dir.path().join("schema-v5.db"))
        .unwrap()
        .query_row("SELECT v FROM memory_fts_config WHERE k = 'secure-delete'", [], |r| r.get(0))
        .unwrap();
    assert_eq!(secure, 1);
    store.erase(&scope("bob"), shed[0].id, chrono::Utc::now()).unwrap();
    assert!(
        store.lexical_search(&scope("bob"), &terms("bicycle shed"), &SearchFilter::default(), 5).unwrap().is_empty()
    );
    assert_eq!(store.integrity_check().unwrap(), Vec::<String>::new());
    drop(store);
    for file in std::fs::read_dir(dir.path()).unwrap() {
        let bytes = std::fs::read(file.unwrap().path()).unwrap();
        assert!(!bytes.windows(7).any(|w| w == b"bicycle"));
    }
}
