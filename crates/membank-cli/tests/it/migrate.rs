//! `membank migrate` between SQLite and PostgreSQL, both ways: a round trip that changes
//! nothing (memories, vectors, events, recent queries and API keys), a second run that copies
//! only what is new, a copy killed half way and run again, a target that conflicts, and bad
//! input. The PostgreSQL halves skip (saying so) without `MEMBANK_TEST_PG_URL`.

use std::os::unix::process::CommandExt;
use std::process::{Command, Stdio};

use chrono::{Duration, TimeZone, Utc};
use membank_core::{Kind, Memory, Scope, TenantId, UserId};
use membank_store::{ApiKeyStore, EmbeddingModel, NewMemory, SqliteStore, Store};

use crate::Bank;

/// A store with two users: turns, a note, a recall (events, a recent query, strength), an
/// erasure, an archive, a pin, a time zone; a live key bound to alice and a revoked one.
fn filled() -> (Bank, String) {
    let bank = Bank::new();
    bank.remember("alice", "I adopted a grey cat named Miso", "2024-05-04T10:00:00Z");
    bank.remember("alice", "我的猫叫咪咪", "2024-05-05T10:00:00Z");
    let secret = bank.remember("alice", "my locker code is 4512", "2024-05-05T11:00:00Z");
    let tea = bank.ok(&["note", "--user", "bob", "--text", "Bob prefers tea"]).trim().to_string();
    let coffee = bank.ok(&["note", "--user", "bob", "--text", "Bob stopped drinking coffee"]).trim().to_string();
    bank.ok(&["users", "--user", "bob", "--time-zone", "Asia/Shanghai"]);
    bank.ok(&["recall", "--user", "alice", "--query", "cat"]);
    bank.ok(&["erase", "--yes", "--user", "alice", &secret]);
    bank.ok(&["forget", "--user", "bob", &coffee]);
    bank.ok(&["pin", "--user", "bob", &tea]);
    let key = bank.ok(&["keys", "create", "--user", "alice", "--label", "alice's app"]).trim().to_string();
    let revoked = bank.json(&["keys", "create", "--label", "old"]);
    bank.ok(&["keys", "revoke", revoked["id"].as_str().unwrap()]);
    (bank, key)
}

/// Runs `membank [--json] migrate --from FROM --to TO EXTRA…` with `bank`'s environment.
fn migrate(
    bank: &Bank,
    from: impl AsRef<std::ffi::OsStr>,
    to: impl AsRef<std::ffi::OsStr>,
    extra: &[&str],
) -> std::process::Output {
    bank.command_without_db()
        .args(["--json", "migrate", "--from"])
        .arg(from)
        .arg("--to")
        .arg(to)
        .args(extra)
        .output()
        .unwrap()
}

/// [`migrate`] that must succeed; its JSON report.
fn migrated(
    bank: &Bank,
    from: impl AsRef<std::ffi::OsStr>,
    to: impl AsRef<std::ffi::OsStr>,
    extra: &[&str],
) -> serde_json::Value {
    let out = migrate(bank, from, to, extra);
    assert!(
        out.status.success(),
        "migrate failed with {:?}:\n{}",
        out.status.code(),
        String::from_utf8_lossy(&out.stderr)
    );
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["verified"], true, "{report}");
    report
}

/// Every user's lossless export, vectors included.
fn export(bank: &Bank) -> String {
    bank.ok(&["export", "--all-users", "--vectors"])
}

fn keys(bank: &Bank) -> serde_json::Value {
    bank.json(&["keys", "list"])
}

#[test]
fn sqlite_to_postgres_and_back_changes_nothing() {
    let Some(pg) = Bank::postgres("migrate_round_trip") else { return };
    let (sqlite, key) = filled();
    let original = export(&sqlite);
    assert!(original.contains("\"type\":\"query\""), "the fixture has a recent query");

    let there = migrated(&sqlite, sqlite.db(), pg.db_arg(), &[]);
    assert_eq!(
        (there["users"].as_u64(), there["memories"].as_u64(), there["keys"].as_u64(), there["skipped_users"].as_u64()),
        (Some(2), Some(5), Some(2), Some(0)),
        "{there}"
    );
    assert!(there["events"].as_u64().unwrap() > 5);
    assert_eq!(export(&pg), original, "PostgreSQL holds what SQLite held");
    assert_eq!(keys(&pg), keys(&sqlite));

    let back = Bank::new();
    migrated(&back, pg.db_arg(), back.db(), &[]);
    assert_eq!(export(&back), original, "SQLite -> PostgreSQL -> SQLite changed the export");
    assert_eq!(keys(&back), keys(&sqlite));
    back.ok(&["check"]);
    pg.ok(&["check"]);

    // The copy works: recall finds the cat on PostgreSQL, and the key made on SQLite
    // authenticates there as alice's (the revoked one does not).
    let found = pg.json(&["recall", "--user", "alice", "--query", "grey cat", "--no-strengthen"]);
    assert!(found["results"][0]["content"].as_str().unwrap().contains("Miso"), "{found}");
    let url = pg.pg.as_ref().unwrap().url.clone();
    let store = membank_store::PgStore::open(&url).unwrap();
    let principal =
        membank_server::keys::authenticate(&store, &key).unwrap().expect("the key authenticates on PostgreSQL");
    assert_eq!(principal.user.as_ref().map(|u| u.as_str()), Some("alice"));
    assert_eq!(
        Some(principal),
        membank_server::keys::authenticate(&SqliteStore::open(sqlite.db()).unwrap(), &key).unwrap()
    );
    assert_eq!(store.live_key_count().unwrap(), 1);
    // The source was only read.
    assert_eq!(export(&sqlite), original);
}

#[test]
fn a_second_run_copies_only_new_users_and_a_conflicting_user_is_refused() {
    let source = Bank::new();
    source.remember("alice", "I adopted a grey cat named Miso", "2024-05-04T10:00:00Z");
    let target = Bank::new();
    // The target may hold users of its own.
    target.remember("carol", "Carol collects stamps", "2024-05-01T10:00:00Z");
    let first = migrated(&source, source.db(), target.db(), &[]);
    assert_eq!((first["users"].as_u64(), first["skipped_users"].as_u64()), (Some(1), Some(0)));

    source.remember("bob", "Bob prefers tea", "2024-05-06T10:00:00Z");
    source.ok(&["keys", "create", "--label", "new"]);
    let second = migrated(&source, source.db(), target.db(), &[]);
    assert_eq!(
        (
            second["users"].as_u64(),
            second["memories"].as_u64(),
            second["skipped_users"].as_u64(),
            second["keys"].as_u64()
        ),
        (Some(1), Some(1), Some(1), Some(1)),
        "{second}"
    );
    let nothing = migrated(&source, source.db(), target.db(), &[]);
    assert_eq!(
        (
            nothing["users"].as_u64(),
            nothing["memories"].as_u64(),
            nothing["events"].as_u64(),
            nothing["keys"].as_u64(),
            nothing["skipped_users"].as_u64()
        ),
        (Some(0), Some(0), Some(0), Some(0), Some(2))
    );
    assert!(target.ok(&["list", "--user", "carol"]).contains("stamps"), "the target's own user is untouched");

    // The target's alice changes: never merged or overwritten, and nothing else is copied.
    target.remember("alice", "something only the target knows", "2024-05-07T10:00:00Z");
    source.remember("dave", "Dave runs marathons", "2024-05-06T10:00:00Z");
    let out = migrate(&source, source.db(), target.db(), &[]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(5), "{err}");
    assert!(
        err.contains("default/alice") && err.contains("other content") && err.contains("nothing was copied"),
        "{err}"
    );
    assert!(!err.contains("default/bob"), "{err}");
    assert_eq!(target.json(&["users"])["users"].as_array().unwrap().len(), 3, "dave was not copied");

    // So is a revoked key in the source whose copy is live in the target.
    let source = Bank::new();
    source.remember("erin", "Erin plays chess", "2024-05-06T10:00:00Z");
    let key = source.json(&["keys", "create"]);
    let target = Bank::new();
    migrated(&source, source.db(), target.db(), &[]);
    source.ok(&["keys", "revoke", key["id"].as_str().unwrap()]);
    let out = migrate(&source, source.db(), target.db(), &[]);
    assert_eq!(out.status.code(), Some(5), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(String::from_utf8_lossy(&out.stderr).contains(key["id"].as_str().unwrap()));
}

/// A SQLite store of `users` users with `per_user` memories each (vectors of the default
/// model's size, a `created` event each), written through the store.
fn generated(bank: &Bank, users: usize, per_user: usize) {
    let store = SqliteStore::open(bank.db()).unwrap();
    let model = EmbeddingModel { id: "sentence-transformers/all-MiniLM-L6-v2".into(), dim: 384 };
    let t0 = Utc.with_ymd_and_hms(2024, 5, 4, 9, 0, 0).unwrap();
    for u in 0..users {
        let scope = Scope::user(TenantId::default_tenant(), UserId::new(&format!("user-{u}")).unwrap());
        store.ensure_user(&scope.tenant, &scope.user, t0).unwrap();
        let batch = (0..per_user)
            .map(|i| {
                let at = t0 + Duration::minutes(i as i64);
                let mut vector: Vec<f32> = (0..384).map(|d| ((d * 7 + i * 13 + u) % 23) as f32 - 11.0).collect();
                let norm = vector.iter().map(|x| x * x).sum::<f32>().sqrt();
                vector.iter_mut().for_each(|x| *x /= norm);
                let memory = Memory::fixture(
                    &scope,
                    Kind::Note,
                    format!("note {i} of user {u} about the garden and the violin"),
                    at,
                );
                NewMemory { memory, embedding: Some((model.clone(), vector)) }
            })
            .collect();
        store.insert_many(batch).unwrap();
    }
}

#[test]
fn a_copy_killed_half_way_completes_when_run_again() {
    let source = Bank::new();
    generated(&source, 4, 300);
    let original = export(&source);
    let target = Bank::new();
    // Small batches: user-0..3 are written in chunks of 50 rows, so a kill lands inside a
    // user as often as between users.
    let mut child = source
        .command_without_db()
        .args(["migrate", "--from"])
        .arg(source.db())
        .arg("--to")
        .arg(target.db())
        .args(["--batch", "50"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .process_group(0)
        .spawn()
        .unwrap();
    // Killed once a few transactions are in the target (its files hold some memories; it is
    // not opened meanwhile, which would race with its creation).
    let started = std::time::Instant::now();
    let written = || {
        ["bank.db", "bank.db-wal"]
            .iter()
            .filter_map(|f| std::fs::metadata(target.path(f)).ok())
            .map(|m| m.len())
            .sum::<u64>()
    };
    while written() < 600_000 {
        assert!(started.elapsed() < std::time::Duration::from_secs(60), "nothing was written in a minute");
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    Command::new("kill").args(["-9", &child.id().to_string()]).status().unwrap();
    child.wait().unwrap();
    let left = SqliteStore::open(target.db()).unwrap();
    let partial: u64 = left
        .all_users()
        .unwrap()
        .iter()
        .map(|(tenant, user)| left.counts(&Scope::user(tenant.clone(), user.clone())).unwrap().active)
        .sum();
    eprintln!("killed with {partial} of 1200 memories copied");
    let report = migrated(&source, source.db(), target.db(), &["--batch", "50"]);
    assert_eq!(report["source"]["memories"].as_u64(), Some(1200), "{report}");
    assert_eq!(export(&target), original);
    target.ok(&["check"]);
}

#[test]
fn an_interrupted_large_user_is_completed_and_a_whole_one_skipped() {
    // What an interrupted run leaves, made by hand: the target holds alice's settings and
    // recent queries with the first of her memories (a first chunk), and all of bob.
    let (source, _) = filled();
    let full = export(&source);
    let lines: Vec<&str> = full.lines().collect();
    let mut partial: Vec<String> = vec![lines[0].to_string()];
    let mut user = "";
    let (mut memories, mut events, mut users) = (0, 0, 0);
    for line in &lines[1..lines.len() - 1] {
        let row: serde_json::Value = serde_json::from_str(line).unwrap();
        match row["type"].as_str().unwrap() {
            "user" => {
                user = if row["user"] == "alice" { "alice" } else { "bob" };
                users += 1;
                partial.push(line.to_string());
            }
            "memory" if user == "alice" && memories > 0 => continue,
            "event" if user == "alice" => continue,
            "memory" => {
                memories += 1;
                partial.push(line.to_string());
            }
            "event" => {
                events += 1;
                partial.push(line.to_string());
            }
            _ => partial.push(line.to_string()),
        }
    }
    partial
        .push(serde_json::json!({ "type": "end", "users": users, "memories": memories, "events": events }).to_string());
    let target = Bank::new();
    let file = target.path("partial.jsonl");
    std::fs::write(&file, partial.join("\n") + "\n").unwrap();
    target.ok(&["import", "membank-export", file.to_str().unwrap()]);

    let report = migrated(&source, source.db(), target.db(), &["--batch", "2"]);
    assert_eq!(
        (report["users"].as_u64(), report["skipped_users"].as_u64(), report["memories"].as_u64()),
        (Some(0), Some(1), Some(2)),
        "{report}"
    );
    assert_eq!(export(&target), full);
}

#[test]
fn bad_locations_are_refused_before_anything_is_written() {
    let (bank, _) = filled();
    let db = bank.db();
    let missing = bank.path("missing.db");
    for (from, to, code, says) in [
        (db.clone().into_os_string(), db.clone().into_os_string(), 2, "the same store"),
        (bank.path("sub/../bank.db").into_os_string(), db.clone().into_os_string(), 2, "the same store"),
        (missing.clone().into_os_string(), bank.path("out.db").into_os_string(), 4, "does not exist"),
        (bank.dir.path().as_os_str().to_os_string(), bank.path("out.db").into_os_string(), 4, "is not a file"),
        ("".into(), db.clone().into_os_string(), 2, "--from is empty"),
        (db.clone().into_os_string(), " ".into(), 2, "--to is empty"),
    ] {
        std::fs::create_dir_all(bank.path("sub")).unwrap();
        let out = migrate(&bank, &from, &to, &[]);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(code), "{from:?} -> {to:?}: {err}");
        assert!(err.contains(says), "{from:?} -> {to:?}: {err}");
    }
    assert!(!missing.exists() && !bank.path("out.db").exists(), "nothing was created");

    // An unreachable server: a clear error that never shows the password, and the exit code
    // of a database that cannot be reached (10), as every command gives it.
    let out = migrate(&bank, db.as_os_str(), "postgres://someone:s3cret-pw@127.0.0.1:1/membank", &[]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(10), "{err}");
    assert!(err.contains("cannot open the target database postgres://someone:***@127.0.0.1:1/membank"), "{err}");
    assert!(!err.contains("s3cret"), "{err}");
    let out = migrate(&bank, "postgres://someone:s3cret-pw@127.0.0.1:1/membank", bank.path("out.db").as_os_str(), &[]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("cannot open the source database") && !err.contains("s3cret"), "{err}");
    assert_eq!(out.status.code(), Some(10), "{err}");
    let out = migrate(&bank, db.as_os_str(), "postgres://[bad", &[]);
    assert!(!out.status.success());
}

#[test]
fn a_target_with_another_models_vectors_is_refused() {
    let (source, _) = filled();
    let target = Bank::new();
    let store = SqliteStore::open(target.db()).unwrap();
    let scope = Scope::user(TenantId::default_tenant(), UserId::new("zoe").unwrap());
    let t0 = Utc.with_ymd_and_hms(2024, 5, 4, 9, 0, 0).unwrap();
    store.ensure_user(&scope.tenant, &scope.user, t0).unwrap();
    let mut memory = Memory::fixture(&scope, Kind::Note, "made by another model", t0);
    memory.metadata.insert("k".into(), "v".into());
    store
        .insert(NewMemory {
            memory,
            embedding: Some((EmbeddingModel { id: "other/model".into(), dim: 4 }, vec![0.5; 4])),
        })
        .unwrap();
    drop(store);
    let before = export(&target);
    let out = migrate(&source, source.db(), target.db(), &[]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(6), "{err}");
    assert!(err.contains("other/model") && err.contains("nothing was copied"), "{err}");
    assert_eq!(export(&target), before);
    assert_eq!(target.json(&["keys", "list"])["keys"].as_array().unwrap().len(), 0);
}
