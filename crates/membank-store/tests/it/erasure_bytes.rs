//! SQLite erasure leaves no bytes: not in the full-text index's pages without a merge of the
//! whole index, and not in `-wal` even when a reader held an older snapshot while the
//! erasure ran (a slow export, here a second connection as another process would hold).

use std::path::Path;
use std::time::{Duration, Instant};

use membank_core::{Kind, MemoryId, Scope, TenantId, UserId};
use membank_store::{NewMemory, SqliteStore, Store};
use rusqlite::Connection;

use crate::conformance::{ensure, model, t0, unit};
use crate::memory;

/// Files of the database (`db`, `-wal`, `-shm`) whose bytes hold `needle`.
fn files_holding(db: &Path, needle: &str) -> Vec<String> {
    let name = db.file_name().unwrap().to_str().unwrap();
    std::fs::read_dir(db.parent().unwrap())
        .unwrap()
        .filter_map(|e| {
            let path = e.unwrap().path();
            let file = path.file_name()?.to_str()?.to_string();
            (file.starts_with(name) && std::fs::read(&path).ok()?.windows(needle.len()).any(|w| w == needle.as_bytes()))
                .then_some(file)
        })
        .collect()
}

fn scope(user: &str) -> Scope {
    Scope::user(TenantId::default_tenant(), UserId::new(user).unwrap())
}

/// A user of `n` notes with distinct everyday words, and `secret` in the middle of them:
/// its terms land inside a large segment of the index, between other terms.
fn fill(store: &SqliteStore, scope: &Scope, n: usize, secret: &str) -> MemoryId {
    ensure(store, scope);
    let words = ["garden", "train", "sister", "coffee", "piano", "river", "office", "winter", "lunch", "market"];
    let batch = (0..n)
        .map(|i| {
            let text = if i == n / 2 {
                secret.to_string()
            } else {
                format!(
                    "{} {} note {i} about {} and topic{} place{}",
                    words[i % 10],
                    words[(i / 10) % 10],
                    words[(i / 100) % 10],
                    i % 997,
                    i % 1009
                )
            };
            let at = t0() + chrono::Duration::minutes(i as i64);
            NewMemory { memory: memory(scope, Kind::Note, &text, at), embedding: Some((model(), unit(i as u64))) }
        })
        .collect();
    store.insert_many(batch).unwrap();
    let hits = store.lexical_search(scope, &membank_core::text::query_terms(secret), &Default::default(), 5).unwrap();
    hits[0].id
}

fn purge_due(db: &Path) -> i64 {
    let conn = Connection::open(db).unwrap();
    conn.query_row("SELECT coalesce((SELECT due FROM wal_purge WHERE id = 1), 0)", [], |r| r.get(0)).unwrap()
}

#[test]
fn erasing_removes_the_terms_from_the_index_pages_at_a_cost_that_follows_the_row() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("m.db");
    let store = SqliteStore::open(&db).unwrap();
    let alice = scope("alice");
    let n = 20_000;
    let id = fill(&store, &alice, n, "the wombatcipher vault opens with quixotrombone");
    // Another note later, in a segment of its own.
    ensure(&store, &scope("bob"));
    let bob = crate::conformance::note(&store, &scope("bob"), "bob hums zanzibarquokka", t0(), 7);
    let index_bytes: i64 = Connection::open(&db)
        .unwrap()
        .query_row("SELECT sum(length(block)) FROM memory_fts_data", [], |r| r.get(0))
        .unwrap();

    // What the erasure writes, counted in WAL frames while a reader keeps them from being
    // checkpointed: a few pages for the row's terms, not the whole index again (the merge
    // of the whole index that erasure used to run rewrote all of it under the writer lock).
    let probe = Connection::open(&db).unwrap();
    let frames = || -> i64 { probe.query_row("PRAGMA wal_checkpoint(PASSIVE)", [], |r| r.get(1)).unwrap() };
    let _: i64 = probe.query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |r| r.get(0)).unwrap();
    assert_eq!(frames(), 0);
    let reader = Connection::open(&db).unwrap();
    reader.execute_batch("BEGIN").unwrap();
    let _: i64 = reader.query_row("SELECT count(*) FROM memories", [], |r| r.get(0)).unwrap();
    store.erase(&alice, id, t0()).unwrap();
    let page: i64 = probe.query_row("PRAGMA page_size", [], |r| r.get(0)).unwrap();
    let written = frames() * page;
    assert!(index_bytes > 400_000, "the index is too small to tell: {index_bytes} bytes");
    assert!(written < index_bytes / 8, "one erasure wrote {written} bytes of WAL for an index of {index_bytes}");
    reader.execute_batch("COMMIT").unwrap();
    drop((reader, probe));

    store.erase(&scope("bob"), bob, t0()).unwrap();
    let deadline = Instant::now() + Duration::from_secs(60);
    while !files_holding(&db, "wombatcipher").is_empty() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(50));
    }
    for word in ["wombatcipher", "quixotrombone", "zanzibarquokka"] {
        assert_eq!(files_holding(&db, word), Vec::<String>::new(), "{word} survived the erasure");
    }
    // The rest of the index still answers.
    assert_eq!(store.integrity_check().unwrap(), Vec::<String>::new());
    let piano = store.lexical_search(&alice, &["piano".into()], &Default::default(), n).unwrap();
    let expected = (0..n).filter(|&i| i != n / 2 && [i % 10, (i / 10) % 10, (i / 100) % 10].contains(&4)).count();
    assert_eq!(piano.len(), expected);
}

#[test]
fn an_erasure_past_a_slow_reader_leaves_no_bytes_once_the_reader_is_done() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("m.db");
    let store = SqliteStore::open(&db).unwrap();
    fill(&store, &scope("big"), 2000, "a plain note");
    ensure(&store, &scope("alice"));
    let secret = crate::conformance::note(&store, &scope("alice"), "my locker code is okapiwaltz", t0(), 3);

    // A reader (an export streaming slowly, another process) holds a snapshot from before.
    let reader = Connection::open(&db).unwrap();
    reader.execute_batch("BEGIN").unwrap();
    let _: i64 = reader.query_row("SELECT count(*) FROM memories", [], |r| r.get(0)).unwrap();

    store.erase(&scope("alice"), secret, t0()).unwrap();
    // The reader's snapshot kept the checkpoint from finishing: the old page images are
    // still in the files, and the erasure is durably due a purge.
    assert!(!files_holding(&db, "okapiwaltz").is_empty(), "the reader did not hold the checkpoint back");
    assert_eq!(purge_due(&db), 1);

    // The reader finishes (the erasure was still reported done meanwhile); the purge
    // follows without another erasure.
    reader.execute_batch("COMMIT").unwrap();
    let deadline = Instant::now() + Duration::from_secs(60);
    while !files_holding(&db, "okapiwaltz").is_empty() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(50));
    }
    assert_eq!(files_holding(&db, "okapiwaltz"), Vec::<String>::new());
    assert_eq!(purge_due(&db), 0);
    assert_eq!(store.integrity_check().unwrap(), Vec::<String>::new());
    drop(reader);
}

#[test]
fn a_purge_left_due_by_a_process_that_stopped_is_finished_when_the_store_opens_again() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("m.db");
    // Keeps the WAL from being checkpointed and removed when the stores close, as another
    // process with the file open would.
    let other = Connection::open(&db).unwrap();
    {
        let store = SqliteStore::open(&db).unwrap();
        ensure(&store, &scope("alice"));
        let secret = crate::conformance::note(&store, &scope("alice"), "my pin is velociraptorjazz", t0(), 3);
        other.execute_batch("BEGIN").unwrap();
        let _: i64 = other.query_row("SELECT count(*) FROM memories", [], |r| r.get(0)).unwrap();
        store.erase(&scope("alice"), secret, t0()).unwrap();
        // It stops before its reader is done (as if killed).
    }
    other.execute_batch("COMMIT").unwrap();
    assert!(!files_holding(&db, "velociraptorjazz").is_empty());
    assert_eq!(purge_due(&db), 1);

    let store = SqliteStore::open(&db).unwrap();
    let deadline = Instant::now() + Duration::from_secs(60);
    while purge_due(&db) != 0 && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(50));
    }
    assert_eq!(files_holding(&db, "velociraptorjazz"), Vec::<String>::new());
    assert_eq!(purge_due(&db), 0);
    drop(store);
    drop(other);
}
