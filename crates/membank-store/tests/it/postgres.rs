//! What only the PostgreSQL store can be asked, beyond the conformance suite: its
//! migrations (a newer schema and a foreign database refused, two processes opening a new
//! database at once), a connection the server dropped, both backends ranking alike on the
//! same data, moving a user from SQLite to PostgreSQL and back, and erased text absent from
//! every live row. Each test has a database of its own on the server `MEMBANK_TEST_PG_URL`
//! names and skips (or fails, with `MEMBANK_REQUIRE_PG=1`) without one.

use std::sync::Arc;

use chrono::Duration;
use membank_core::{Kind, Memory};
use membank_store::{NewMemory, PgStore, SearchFilter, Store, StoreError};

use crate::conformance::pg::TestDatabase;
use crate::conformance::{DIM, Fixture, ensure, export, import_of, model, note, plain, populate, scope, t0, unit};
use crate::memory;

fn server(test: &str) -> Option<String> {
    Fixture::postgres_url(test)
}

fn admin(database: &TestDatabase) -> postgres::Client {
    postgres::Client::connect(&database.url, postgres::NoTls).unwrap()
}

#[test]
fn a_newer_schema_is_refused() {
    let Some(url) = server("a_newer_schema_is_refused") else { return };
    let database = TestDatabase::create(&url, "newer_schema");
    let store = PgStore::open(&database.url).unwrap();
    assert_eq!(store.schema_version().unwrap(), membank_store::postgres::CURRENT_VERSION);
    drop(store);
    // Opening again migrates nothing and changes nothing.
    PgStore::open(&database.url).unwrap();
    admin(&database).batch_execute("UPDATE schema_version SET version = 99").unwrap();
    match PgStore::open(&database.url) {
        Err(StoreError::NewerSchema { found: 99, supported }) => {
            assert_eq!(supported, membank_store::postgres::CURRENT_VERSION)
        }
        other => panic!("expected NewerSchema, got {other:?}"),
    }
}

/// On a Citus coordinator (`scripts/citus-dev.sh`), the schema is created distributed: the
/// user tables by `uid`, colocated, with shards on both workers, the tenant-wide tables as
/// reference tables; and a schema one of whose tables was undistributed is refused, naming
/// it. On plain PostgreSQL it checks that nothing Citus-specific was done.
#[test]
fn on_citus_the_schema_is_distributed_by_user_and_a_half_distributed_one_is_refused() {
    let Some(url) = server("on_citus_the_schema_is_distributed_by_user_and_a_half_distributed_one_is_refused") else {
        return;
    };
    let database = TestDatabase::create(&url, "citus_layout");
    crate::conformance::pg::require_citus(&database);
    let store = PgStore::open(&database.url).unwrap();
    drop(store);
    let mut client = admin(&database);
    let citus: bool =
        client.query_one("SELECT EXISTS (SELECT 1 FROM pg_extension WHERE extname = 'citus')", &[]).unwrap().get(0);
    assert_eq!(citus, database.citus);
    if !citus {
        return;
    }
    let layout: Vec<(String, String, Option<String>)> = client
        .query(
            "SELECT logicalrelid::regclass::text, partmethod::text,
                    CASE WHEN partmethod = 'h' THEN column_to_column_name(logicalrelid, partkey) END
               FROM pg_dist_partition ORDER BY 1",
            &[],
        )
        .unwrap()
        .iter()
        .map(|r| (r.get(0), r.get(1), r.get(2)))
        .collect();
    let hashed = |t: &str| (t.to_string(), "h".to_string(), Some("uid".to_string()));
    let reference = |t: &str| (t.to_string(), "n".to_string(), None);
    assert_eq!(
        layout,
        vec![
            reference("api_keys"),
            hashed("embeddings"),
            hashed("events"),
            hashed("idempotency_keys"),
            hashed("memories"),
            hashed("recent_queries"),
            reference("schema_version"),
            reference("store_meta"),
            hashed("users"),
        ]
    );
    let colocations: i64 = client
        .query_one("SELECT count(DISTINCT colocationid) FROM pg_dist_partition WHERE partmethod = 'h'", &[])
        .unwrap()
        .get(0);
    assert_eq!(colocations, 1, "the user tables are colocated");
    // The users' shards are on every worker.
    let (workers, placed): (i64, i64) = {
        let row = client
            .query_one(
                "SELECT (SELECT count(*) FROM pg_dist_node WHERE groupid <> 0 AND isactive),
                        (SELECT count(DISTINCT nodeport) FROM citus_shards WHERE table_name = 'users'::regclass)",
                &[],
            )
            .unwrap();
        (row.get(0), row.get(1))
    };
    assert!(workers >= 2, "a coordinator with at least two workers, found {workers}");
    assert_eq!(placed, workers, "the users' shards are on every worker");
    // One table undistributed: the schema is half distributed and refused.
    client.batch_execute("SELECT undistribute_table('store_meta')").unwrap();
    match PgStore::open(&database.url) {
        Err(StoreError::Corrupt(message)) => {
            assert!(message.contains("half distributed") && message.contains("store_meta"), "{message}")
        }
        other => panic!("expected a half-distributed schema to be refused, got {other:?}"),
    }
}

/// Citus moves a shard to another worker, and copies a reference table to a worker added
/// later, by logical replication, which refuses a table with no replica identity (the
/// default `citus_rebalance_start()` fails on it): every table of the schema has a primary
/// key. A database of schema version 2, whose `schema_version` had none, gets one on open.
#[test]
fn every_table_has_a_primary_key_so_citus_can_move_it() {
    let Some(url) = server("every_table_has_a_primary_key_so_citus_can_move_it") else { return };
    let database = TestDatabase::create(&url, "primary_keys");
    // The schema's tables by name (on a Citus coordinator, pg_class also lists its own
    // copies of the reference tables' shards).
    let tables = [
        "schema_version",
        "store_meta",
        "api_keys",
        "users",
        "memories",
        "embeddings",
        "events",
        "recent_queries",
        "idempotency_keys",
    ];
    let without_key = |client: &mut postgres::Client| -> Vec<String> {
        client
            .query(
                "SELECT c.relname::text FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
                  WHERE n.nspname = 'public' AND c.relkind = 'r' AND c.relname = ANY($1) AND c.relreplident <> 'f'
                    AND NOT EXISTS (SELECT 1 FROM pg_index i WHERE i.indrelid = c.oid AND (i.indisprimary OR i.indisreplident))
                  ORDER BY 1",
                &[&&tables[..]],
            )
            .unwrap()
            .iter()
            .map(|row| row.get(0))
            .collect()
    };
    drop(PgStore::open(&database.url).unwrap());
    let mut client = admin(&database);
    assert_eq!(without_key(&mut client), Vec::<String>::new());
    // As version 2 left it.
    client
        .batch_execute(
            "ALTER TABLE schema_version DROP CONSTRAINT schema_version_pkey; UPDATE schema_version SET version = 2",
        )
        .unwrap();
    assert_eq!(without_key(&mut client), ["schema_version"]);
    let store = PgStore::open(&database.url).unwrap();
    assert_eq!(store.schema_version().unwrap(), membank_store::postgres::CURRENT_VERSION);
    assert_eq!(without_key(&mut client), Vec::<String>::new());
}

#[test]
fn a_database_with_tables_of_its_own_is_refused() {
    let Some(url) = server("a_database_with_tables_of_its_own_is_refused") else { return };
    let database = TestDatabase::create(&url, "foreign");
    admin(&database).batch_execute("CREATE TABLE memories (x integer)").unwrap();
    assert!(matches!(PgStore::open(&database.url), Err(StoreError::Corrupt(_))));
}

#[test]
fn processes_opening_a_new_database_at_once_migrate_it_once() {
    let Some(url) = server("processes_opening_a_new_database_at_once_migrate_it_once") else { return };
    let database = TestDatabase::create(&url, "concurrent_open");
    let stores: Vec<PgStore> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..4).map(|_| s.spawn(|| PgStore::open(&database.url))).collect();
        handles.into_iter().map(|h| h.join().unwrap().unwrap()).collect()
    });
    for store in &stores {
        assert_eq!(store.schema_version().unwrap(), membank_store::postgres::CURRENT_VERSION);
    }
}

#[test]
fn a_connection_the_server_dropped_is_replaced() {
    let Some(url) = server("a_connection_the_server_dropped_is_replaced") else { return };
    let database = TestDatabase::create(&url, "dropped");
    let store = PgStore::open(&database.url).unwrap();
    let ana = scope("ana");
    ensure(&store, &ana);
    let id = note(&store, &ana, "before the restart", t0(), 1);
    let terminated: i64 = admin(&database)
        .query_one("SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()", &[])
        .unwrap()
        .get(0);
    assert!(terminated >= 1);
    // The pool's idle connection is dead; the next operation gets a new one.
    assert_eq!(store.get(&ana, id).unwrap().content.as_deref(), Some("before the restart"));
    note(&store, &ana, "after the restart", t0(), 2);
    assert_eq!(store.counts(&ana).unwrap().active, 2);
}

/// The same memories in both backends rank the same: lexical scores to the last bit (the
/// same BM25 arithmetic in the same order), dense ids in the same order with cosines
/// within float rounding.
#[test]
fn both_backends_rank_alike() {
    let Some(fx) = Fixture::postgres("both_backends_rank_alike") else { return };
    let sqlite = Fixture::sqlite();
    let ana = scope("ana");
    let words = [
        "violin", "river", "garden", "cat", "music", "lesson", "walk", "dinner", "sister", "train", "rain", "猫咪",
        "寿司", "下雨",
    ];
    let stores: [&dyn Store; 2] = [sqlite.store.as_ref(), fx.store.as_ref()];
    let mut x: u64 = 7;
    let memories: Vec<Memory> = (0..300u64)
        .map(|i| {
            let mut text = String::new();
            for _ in 0..(3 + i % 9) {
                x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
                // Skewed: the first words are the common ones.
                let pick = ((x >> 33) % 100) as usize;
                text.push_str(words[(pick * pick / 700).min(words.len() - 1)]);
                text.push(' ');
            }
            memory(&ana, if i % 3 == 0 { Kind::Turn } else { Kind::Note }, &text, t0() + Duration::minutes(i as i64))
        })
        .collect();
    for store in stores {
        ensure(store, &ana);
        let batch = memories
            .iter()
            .enumerate()
            .map(|(i, m)| NewMemory { memory: m.clone(), embedding: Some((model(), unit(i as u64))) })
            .collect();
        store.insert_many(batch).unwrap();
        store.archive(&ana, memories[5].id, "x", t0()).unwrap();
        store.erase(&ana, memories[6].id, t0()).unwrap();
    }
    for query in [
        "violin",
        "violin river",
        "cat music lesson",
        "寿司",
        "rain on the train",
        "dinner with my sister",
        "猫咪 and 寿司",
    ] {
        let terms = membank_core::text::query_terms(query);
        for filter in [
            SearchFilter::default(),
            SearchFilter { kinds: vec![Kind::Turn], include_archived: true, ..Default::default() },
        ] {
            let [a, b] = stores.map(|s| s.lexical_search(&ana, &terms, &filter, 20).unwrap());
            assert!(!a.is_empty(), "{query:?}");
            assert_eq!(a, b, "lexical {query:?}");
        }
    }
    for seed in 1000..1010 {
        let [a, b] = stores.map(|s| s.dense_search(&ana, &model(), &unit(seed), &SearchFilter::default(), 20).unwrap());
        assert_eq!(
            a.iter().map(|h| h.id).collect::<Vec<_>>(),
            b.iter().map(|h| h.id).collect::<Vec<_>>(),
            "dense {seed}"
        );
        for (x, y) in a.iter().zip(&b) {
            assert!((x.score - y.score).abs() < 1e-6, "dense {seed}: {} vs {}", x.score, y.score);
        }
    }
}

/// A user moves from SQLite to PostgreSQL and back through export and import, and comes
/// back the same: every memory with its state and vector, every event, the settings and
/// the recent queries (the `membank migrate` of issue 13 will move whole stores this way).
#[test]
fn a_user_moves_from_sqlite_to_postgres_and_back_unchanged() {
    let Some(pg) = Fixture::postgres("a_user_moves_from_sqlite_to_postgres_and_back_unchanged") else { return };
    let source = Fixture::sqlite();
    let ana = scope("ana");
    ensure(source.store.as_ref(), &ana);
    source.store.set_time_zone(&ana.tenant, &ana.user, "Asia/Shanghai", t0()).unwrap();
    populate(source.store.as_ref(), &ana);
    let original = export(source.store.as_ref(), &ana);
    pg.store.import_users(vec![import_of(source.store.as_ref(), &ana)], false).unwrap();
    assert_eq!(export(pg.store.as_ref(), &ana), original);
    assert_eq!(pg.integrity(), Vec::<String>::new());
    let back = Fixture::sqlite();
    back.store.import_users(vec![import_of(pg.store.as_ref(), &ana)], false).unwrap();
    assert_eq!(export(back.store.as_ref(), &ana), original);
    assert_eq!(back.integrity(), Vec::<String>::new());
}

/// After an erasure no live row of any table holds the text (dead row versions are
/// VACUUM's; see the erasure module's documentation), and a search no longer finds it.
#[test]
fn erased_text_is_in_no_live_row() {
    let Some(url) = server("erased_text_is_in_no_live_row") else { return };
    let database = TestDatabase::create(&url, "erased_text");
    let store = Arc::new(PgStore::open(&database.url).unwrap());
    let ana = scope("ana");
    ensure(store.as_ref(), &ana);
    let mut m = memory(&ana, Kind::Turn, "User: the code is zanzibar42\nAssistant: noted", t0());
    m.user_text = Some("the code is zanzibar42".into());
    m.assistant_text = Some("noted".into());
    m.metadata.insert("hint".into(), "zanzibar42".into());
    let id = store.insert(NewMemory { memory: m, embedding: Some((model(), vec![0.25; DIM])) }).unwrap().id;
    plain(store.as_ref(), memory(&ana, Kind::Note, "something else entirely", t0()));
    let mut db = admin(&database);
    let count = |db: &mut postgres::Client, sql: &str| -> i64 { db.query_one(sql, &[]).unwrap().get(0) };
    let terms = vec!["zanzibar42".to_string()];
    assert_eq!(store.lexical_search(&ana, &terms, &SearchFilter::default(), 10).unwrap().len(), 1);
    store.erase(&ana, id, t0() + Duration::hours(1)).unwrap();
    assert!(store.lexical_search(&ana, &terms, &SearchFilter::default(), 10).unwrap().is_empty());
    for table in ["memories", "events", "idempotency_keys", "recent_queries", "users", "store_meta"] {
        let sql = format!("SELECT count(*) FROM {table} t WHERE row_to_json(t)::text LIKE '%zanzibar%'");
        assert_eq!(count(&mut db, &sql), 0, "{table}");
    }
    assert_eq!(count(&mut db, "SELECT count(*) FROM embeddings"), 0);
}

/// PostgreSQL's text cannot hold U+0000 (SQLite's can): such text is refused as the
/// caller's (`Invalid`), before anything is written, never a database error.
#[test]
fn text_with_a_nul_character_is_refused_as_invalid() {
    let Some(fx) = Fixture::postgres("text_with_a_nul_character_is_refused_as_invalid") else { return };
    let store = fx.store.as_ref();
    let ana = scope("ana");
    ensure(store, &ana);
    let refused =
        store.insert(NewMemory { memory: memory(&ana, Kind::Note, "a\0b", t0()), embedding: Some((model(), unit(1))) });
    assert!(matches!(refused, Err(StoreError::Invalid(_))), "{refused:?}");
    let mut m = memory(&ana, Kind::Note, "fine", t0());
    m.metadata.insert("key".into(), "x\0y".into());
    assert!(matches!(store.insert(NewMemory { memory: m, embedding: None }), Err(StoreError::Invalid(_))));
    let id = note(store, &ana, "fine", t0(), 2);
    assert!(matches!(store.archive(&ana, id, "because\0", t0()), Err(StoreError::Invalid(_))));
    assert_eq!(
        store.get(&ana, id).unwrap().status,
        membank_core::Status::Active,
        "the refused archive changed nothing"
    );
    assert_eq!(store.counts(&ana).unwrap().active, 1);
}

/// TLS as libpq's `sslmode` says, against the test server when it has TLS on
/// (`scripts/postgres-dev.sh` turns it on with a private CA in its run directory): `require`
/// encrypts without a CA, `verify-full` with the server's CA connects, `verify-full` with
/// only the public roots refuses the private certificate, `disable` stays plain; the
/// server's own view (`pg_stat_ssl`) says which connections were encrypted.
#[test]
fn tls_follows_sslmode() {
    let Some(url) = server("tls_follows_sslmode") else { return };
    let database = TestDatabase::create(&url, "tls");
    let mut admin = admin(&database);
    if admin.query_one("SHOW ssl", &[]).unwrap().get::<_, String>(0) != "on" {
        eprintln!(
            "skipping tls_follows_sslmode: the test server has TLS off (scripts/postgres-dev.sh turns it on when openssl is installed)"
        );
        return;
    }
    let cert_file: String = admin.query_one("SHOW ssl_cert_file", &[]).unwrap().get(0);
    let ca = std::path::Path::new(&cert_file).with_file_name("ca.crt");
    if !ca.exists() {
        eprintln!("skipping tls_follows_sslmode: no ca.crt beside {cert_file}");
        return;
    }
    let with = |query: &str| format!("{}?{query}", database.url);
    let encrypted = |admin: &mut postgres::Client, name: &str| -> Vec<bool> {
        admin
            .query(
                "SELECT s.ssl FROM pg_stat_ssl s JOIN pg_stat_activity a USING (pid) WHERE a.application_name = $1",
                &[&name],
            )
            .unwrap()
            .iter()
            .map(|r| r.get(0))
            .collect()
    };
    let s = scope("tls");
    for (query, name, ssl) in [
        ("sslmode=require&application_name=tls_require".to_string(), "tls_require", true),
        (format!("sslmode=verify-full&sslrootcert={}&application_name=tls_full", ca.display()), "tls_full", true),
        (format!("sslmode=verify-ca&sslrootcert={}&application_name=tls_ca", ca.display()), "tls_ca", true),
        ("application_name=tls_prefer".to_string(), "tls_prefer", true),
        ("sslmode=disable&application_name=tls_plain".to_string(), "tls_plain", false),
    ] {
        let store = PgStore::open(&with(&query)).unwrap_or_else(|e| panic!("{query}: {e}"));
        ensure(&store, &s);
        note(&store, &s, &format!("stored over {name}"), t0(), 1);
        assert_eq!(encrypted(&mut admin, name), [ssl], "{query}");
    }
    match PgStore::open(&with("sslmode=verify-full")) {
        Err(err) => assert!(err.to_string().contains("TLS"), "{err}"),
        Ok(_) => panic!("verify-full accepted a certificate of a private CA without sslrootcert"),
    }
    assert!(matches!(
        PgStore::open(&with("sslmode=verify-full&sslrootcert=/nonexistent/ca.pem")),
        Err(StoreError::Invalid(_))
    ));
    let other = PgStore::open(&with("sslmode=disable")).unwrap();
    assert_eq!(other.list(&s, &Default::default()).unwrap().len(), 5);
}
