//! Bad input: a clear message, the documented exit code, nothing written.

use crate::{Bank, write};

fn memory_count(bank: &Bank, user: &str) -> u64 {
    let counts = &bank.json(&["list", "--user", user, "--all"])["counts"];
    ["active", "archived", "superseded", "erased"].iter().map(|k| counts[k].as_u64().unwrap()).sum()
}

#[test]
fn invalid_arguments_exit_3_and_write_nothing() {
    let bank = Bank::new();
    let id = bank.remember("alice", "hello there", "2024-05-04T10:00:00Z");
    let cases: &[&[&str]] = &[
        &["remember", "--user", "  ", "--user-text", "hi"],
        &["remember", "--user", "alice", "--user-text", ""],
        &["remember", "--user", "alice", "--user-text", " \t "],
        &["remember", "--user", "alice", "--user-text", "hi", "--at", "yesterday"],
        &["remember", "--user", "alice", "--user-text", "hi", "--at", "2024-02-30T00:00:00Z"],
        &["note", "--user", "alice", "--text", "x", "--source", "derived"],
        &["recall", "--user", "alice", "--query", "hello", "--k", "0"],
        &["recall", "--user", "alice", "--query", "hello", "--from", "May 4"],
        &["recall", "--user", "alice", "--query", "hello", "--kind", "memo"],
        &["show", "--user", "alice", "user_2023-05-04_1"],
        &["list", "--user", "alice", "--limit", "0"],
        &["sweep", "--user", "alice", "--max-fraction", "1.5"],
        &["users", "--user", "alice", "--time-zone", "Mars/Olympus"],
    ];
    for args in cases {
        let stderr = bank.fails(args, 3);
        assert!(stderr.starts_with("error: invalid"), "{args:?}: {stderr}");
    }
    let long = "x".repeat(32 * 1024 + 1);
    bank.fails(&["remember", "--user", "alice", "--user-text", &long], 3);
    assert_eq!(memory_count(&bank, "alice"), 1);
    bank.ok(&["show", "--user", "alice", &id]);
}

#[test]
fn text_files_must_be_utf8_and_within_the_limit() {
    let bank = Bank::new();
    let bad = bank.path("bad.txt");
    write(&bad, b"caf\xe9 au lait");
    let stderr = bank.fails(&["remember", "--user", "alice", "--user-text-file", bad.to_str().unwrap()], 3);
    assert!(stderr.contains("not valid UTF-8"), "{stderr}");
    let huge = bank.path("huge.txt");
    write(&huge, "y".repeat(1 << 20).as_bytes());
    bank.fails(&["remember", "--user", "alice", "--user-text-file", huge.to_str().unwrap()], 3);
    let good = bank.path("good.txt");
    write(&good, "Ich heiße Jürgen 🙂".as_bytes());
    bank.ok(&["remember", "--user", "alice", "--user-text-file", good.to_str().unwrap()]);
    assert_eq!(memory_count(&bank, "alice"), 1);
}

#[test]
fn unknown_ids_and_other_users_ids_exit_4() {
    let bank = Bank::new();
    let alice = bank.remember("alice", "my secret plan", "2024-05-04T10:00:00Z");
    bank.remember("bob", "bob's own memory", "2024-05-04T10:00:00Z");
    for cmd in ["show", "forget", "restore", "pin", "unpin", "erase"] {
        let stderr = bank.fails(&[cmd, "--user", "bob", &alice], 4);
        assert!(stderr.contains("not found"), "{cmd}: {stderr}");
    }
    // A batch with one bad id changes none of them.
    bank.fails(&["pin", "--user", "alice", &alice, "0192f1c4-7c1e-7d3a-9b5e-2f1a3c4d5e6f"], 4);
    assert_eq!(bank.json(&["show", "--user", "alice", &alice])["memories"][0]["pinned"], false);
    let recalled = bank.json(&["recall", "--user", "bob", "--query", "secret plan", "--k", "10"]);
    assert!(recalled["results"].as_array().unwrap().iter().all(|r| r["user"] == "bob"));
    // Conflicts with a memory's state exit 5.
    bank.fails(&["restore", "--user", "alice", &alice], 5);
}

#[test]
fn foreign_and_newer_databases_exit_6() {
    let bank = Bank::new();
    let not_db = bank.path("notes.txt");
    let foreign: &[u8] = b"this is not a database, just some text that is long enough to look like a header........";
    write(&not_db, foreign);
    let out = bank.command_without_db().args(["--db", not_db.to_str().unwrap(), "list", "--user", "a"]).output().unwrap();
    assert_eq!(out.status.code(), Some(6), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(std::fs::read(&not_db).unwrap(), foreign, "the foreign file was changed");
    assert!(String::from_utf8_lossy(&out.stderr).contains("not an SQLite database"), "{}", String::from_utf8_lossy(&out.stderr));

    bank.remember("alice", "hello", "2024-05-04T10:00:00Z");
    assert!(set_schema_version(&bank.db(), 99), "could not bump the schema version");
    let stderr = bank.fails(&["list", "--user", "alice"], 6);
    assert!(stderr.contains("newer than this membank supports"), "{stderr}");
}

/// Writes `version` into SQLite's `user_version` header field (offset 60), as a newer
/// membank would have, without linking SQLite into the test.
fn set_schema_version(db: &std::path::Path, version: u32) -> bool {
    // Each CLI process checkpoints on exit, so the main file's header is current.
    let mut bytes = std::fs::read(db).unwrap();
    if bytes.len() < 100 {
        return false;
    }
    bytes[60..64].copy_from_slice(&version.to_be_bytes());
    std::fs::write(db, bytes).unwrap();
    let _ = std::fs::remove_file(format!("{}-wal", db.display()));
    let _ = std::fs::remove_file(format!("{}-shm", db.display()));
    true
}

#[test]
fn a_missing_model_file_exits_7_and_says_how_to_fetch() {
    let bank = Bank::new();
    let partial = bank.path("model");
    std::fs::create_dir_all(&partial).unwrap();
    std::fs::copy(crate::model_dir().join("config.json"), partial.join("config.json")).unwrap();
    let out = bank.command().env("MEMBANK_MODEL_DIR", &partial).args(["remember", "--user", "alice", "--user-text", "hello"]).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(7), "{stderr}");
    assert!(stderr.contains("membank models fetch") && stderr.contains("missing"), "{stderr}");
    // Commands that do not embed still work without a model.
    let out = bank.command().env("MEMBANK_MODEL_DIR", &partial).args(["list", "--user", "alice"]).output().unwrap();
    assert!(out.status.success());
}
