//! `export`, `import membank-export`, `backup`, `check FILE` and a closed stdout, with the
//! real binary, model and SQLite files.

use std::io::Read;
use std::os::unix::process::CommandExt;
use std::process::{Command, Stdio};

use crate::Bank;

fn filled() -> Bank {
    let bank = Bank::new();
    bank.remember("alice", "I adopted a grey cat named Miso", "2024-05-04T10:00:00Z");
    bank.remember("alice", "我的猫叫咪咪", "2024-05-05T10:00:00Z");
    let secret = bank.remember("alice", "my locker code is 4512", "2024-05-05T11:00:00Z");
    bank.ok(&["note", "--user", "bob", "--text", "Bob prefers tea"]);
    bank.ok(&["recall", "--user", "alice", "--query", "cat"]);
    bank.ok(&["erase", "--yes", "--user", "alice", &secret]);
    bank
}

#[test]
fn export_import_export_is_byte_identical_and_keeps_ids() {
    let bank = filled();
    let first = bank.path("first.jsonl");
    bank.ok(&["export", "--all-users", "--output", first.to_str().unwrap()]);
    let text = std::fs::read_to_string(&first).unwrap();
    assert!(text.starts_with("{\"format\":\"membank-export\",\"version\":1,"));
    // The erased text is gone: its words, not its digits, which a random id or a time in
    // the file may hold by chance (it did, about one run in a hundred).
    assert!(!text.contains("locker code"), "{text}");
    // Refuses to overwrite; says which users when none is given.
    bank.fails(&["export", "--all-users", "--output", first.to_str().unwrap()], 1);
    bank.fails(&["export"], 3);

    let copy = Bank::new();
    copy.ok(&["import", "membank-export", first.to_str().unwrap()]);
    let second = copy.path("second.jsonl");
    copy.ok(&["export", "--all-users", "--output", second.to_str().unwrap()]);
    assert!(
        std::fs::read(&first).unwrap() == std::fs::read(&second).unwrap(),
        "export -> import -> export changed the bytes"
    );
    // The copy recalls like the original, and a second import is refused without --merge.
    let found = copy.json(&["recall", "--user", "alice", "--query", "grey cat", "--no-strengthen"]);
    assert!(found["results"][0]["content"].as_str().unwrap().contains("Miso"));
    let err = copy.fails(&["import", "membank-export", first.to_str().unwrap()], 5);
    assert!(err.contains("already exist"), "{err}");
    copy.ok(&["import", "membank-export", first.to_str().unwrap(), "--merge"]);
    // One user to stdout, with vectors.
    let one = copy.ok(&["export", "--user", "bob", "--vectors"]);
    assert_eq!(one.lines().filter(|l| l.contains("\"type\":\"memory\"")).count(), 1);
    assert!(one.contains("\"vector\":["));
    copy.fails(&["export", "--user", "nobody"], 4);
}

#[test]
fn a_damaged_or_hostile_export_is_refused_and_stores_nothing() {
    let bank = filled();
    let good = bank.ok(&["export", "--all-users"]);
    let cut = good.lines().take(4).collect::<Vec<_>>().join("\n");
    for (name, content) in [
        ("empty", String::new()),
        ("cut", cut),
        ("garbage", "\u{0}\u{1}binary".into()),
        ("other", "{\"format\":\"x\",\"version\":1,\"vectors\":false}\n".into()),
    ] {
        let copy = Bank::new();
        let file = copy.path(name);
        std::fs::write(&file, &content).unwrap();
        let err = copy.fails(&["import", "membank-export", file.to_str().unwrap()], 3);
        assert!(err.contains("cannot import"), "{name}: {err}");
        let users = copy.json(&["users"]);
        assert_eq!(users["users"].as_array().map_or(0, Vec::len), 0, "{name}: nothing stored");
    }
}

#[test]
fn backup_of_a_database_in_use_is_consistent_and_checks() {
    let bank = filled();
    // A writer keeps writing while the backup runs.
    let script = format!(
        "i=0; while true; do MEMBANK_MODEL_DIR='{model}' '{bin}' --db '{db}' remember --user carol --user-text \"turn $i\" >/dev/null || exit 1; i=$((i+1)); done",
        model = crate::model_dir().display(),
        bin = env!("CARGO_BIN_EXE_membank"),
        db = bank.db().display()
    );
    let mut writer = Command::new("bash")
        .arg("-c")
        .arg(&script)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .process_group(0)
        .spawn()
        .unwrap();
    std::thread::sleep(std::time::Duration::from_millis(800));
    let copy = bank.path("copy.db");
    let out = bank.json(&["backup", copy.to_str().unwrap()]);
    // Stop the shell and the write it may be in the middle of: its process group.
    Command::new("kill").args(["-9", "--", &format!("-{}", writer.id())]).status().unwrap();
    writer.wait().unwrap();
    assert_eq!(out["ok"], true);
    bank.ok(&["check", copy.to_str().unwrap()]);
    // The copy opens as a database of its own with alice's memories.
    let restored = bank
        .command_without_db()
        .args([
            "--db",
            copy.to_str().unwrap(),
            "--json",
            "recall",
            "--user",
            "alice",
            "--query",
            "cat",
            "--no-strengthen",
        ])
        .output()
        .unwrap();
    assert!(restored.status.success());
    assert!(String::from_utf8_lossy(&restored.stdout).contains("Miso"));
    // Never over an existing file; a missing or foreign file fails the check.
    bank.fails(&["backup", copy.to_str().unwrap()], 5);
    bank.fails(&["check", bank.path("missing.db").to_str().unwrap()], 4);
    std::fs::write(bank.path("text.db"), "not a database at all, just text").unwrap();
    bank.fails(&["check", bank.path("text.db").to_str().unwrap()], 6);
}

#[test]
fn a_closed_stdout_ends_a_command_quietly() {
    let bank = filled();
    for args in [
        vec!["--json", "sweep", "--user", "alice"],
        vec!["export", "--all-users", "--vectors"],
        vec!["--json", "list", "--user", "alice"],
        vec!["list", "--user", "alice"],
        vec!["events", "--user", "alice"],
    ] {
        let mut child = bank.command().args(&args).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap();
        // Close our end of the pipe before the command writes (it opens the database and
        // reads first), as `head -c 0` would: its first write meets a closed pipe.
        drop(child.stdout.take());
        let mut stderr = String::new();
        child.stderr.take().unwrap().read_to_string(&mut stderr).unwrap();
        let status = child.wait().unwrap();
        assert!(stderr.trim().is_empty(), "{args:?} should end quietly: {stderr}");
        assert!(status.success(), "{args:?}: {status:?} {stderr}");
    }
}
