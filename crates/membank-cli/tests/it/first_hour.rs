//! What a newcomer meets in the first hour (issue 11): where the database is, backdated
//! history that is not forgotten on arrival, questions before erasing or archiving most of
//! someone's memories, dates, help and usage errors, and hints that keep the flags given.
//!
//! Questions are only asked at a terminal; these tests get one from util-linux `script`,
//! which runs the command on a pseudo-terminal and forwards our standard input to it.

use std::io::Read as _;
use std::path::Path;
use std::process::{Command, Stdio};

use crate::Bank;

/// Runs `membank ARGS` on a pseudo-terminal with `input` typed in; returns what the
/// terminal showed (standard output and error together) and the exit code.
fn at_terminal(bank: &Bank, args: &[&str], input: &str, db: Option<&Path>) -> (String, Option<i32>) {
    let mut line = vec![shell(env!("CARGO_BIN_EXE_membank"))];
    if let Some(db) = db {
        line.push("--db".into());
        line.push(shell(db.to_str().unwrap()));
    }
    line.extend(args.iter().map(|a| shell(a)));
    let mut child = Command::new("script")
        .args(["-qec", &line.join(" "), "/dev/null"])
        .env("MEMBANK_MODEL_DIR", crate::model_dir())
        .env_remove("MEMBANK_CONFIG")
        .env_remove("MEMBANK_DB")
        .env("HOME", bank.dir.path())
        .env("XDG_DATA_HOME", bank.dir.path().join("data"))
        .env("XDG_CONFIG_HOME", bank.dir.path().join("config"))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("util-linux `script` runs commands on a terminal (Debian: bsdutils)");
    std::io::Write::write_all(&mut child.stdin.take().unwrap(), input.as_bytes()).unwrap();
    let mut shown = String::new();
    child.stdout.take().unwrap().read_to_string(&mut shown).unwrap();
    let status = child.wait().unwrap();
    (shown, status.code())
}

fn shell(word: &str) -> String {
    format!("'{}'", word.replace('\'', "'\\''"))
}

fn status_of(bank: &Bank, user: &str, id: &str) -> String {
    let shown = bank.json(&["show", "--user", user, id]);
    shown["memories"][0]["status"].as_str().unwrap().to_string()
}

#[test]
fn the_default_database_is_named_once_on_a_terminal() {
    let bank = Bank::new();
    let (first, code) = at_terminal(&bank, &["remember", "--user", "ana", "--user-text", "I adopted a cat"], "", None);
    assert_eq!(code, Some(0), "{first}");
    let db = bank.dir.path().join("data").join("membank").join("membank.db");
    assert!(db.exists());
    assert!(
        first.contains(&format!("created the database {}", db.display())) && first.contains("--db or MEMBANK_DB"),
        "{first}"
    );
    let (second, code) = at_terminal(&bank, &["remember", "--user", "ana", "--user-text", "It is grey"], "", None);
    assert_eq!(code, Some(0), "{second}");
    assert!(!second.contains("created the database"), "said once: {second}");
    // Scripts (no terminal) and a chosen --db are never told.
    let out = bank
        .command_without_db()
        .env("XDG_DATA_HOME", bank.dir.path().join("other"))
        .args(["remember", "--user", "ana", "--user-text", "hi"])
        .output()
        .unwrap();
    assert!(out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).trim().is_empty(), "{}", String::from_utf8_lossy(&out.stderr));
    let (chosen, _) =
        at_terminal(&bank, &["remember", "--user", "ana", "--user-text", "hi"], "", Some(&bank.path("chosen.db")));
    assert!(!chosen.contains("created the database"), "{chosen}");
}

#[test]
fn backdated_history_starts_fresh_unless_the_clock_runs_from_the_event() {
    let bank = Bank::new();
    // Default: the clock starts when membank stores it.
    let fresh =
        bank.json(&["remember", "--user", "ana", "--user-text", "We met in Lisbon", "--at", "2024-05-04T10:00:00Z"]);
    assert_eq!(fresh["occurred_at"], "2024-05-04T10:00:00.000Z");
    assert_ne!(fresh["last_recalled_at"], fresh["occurred_at"], "{fresh}");
    let old = bank.json(&[
        "remember",
        "--user",
        "ana",
        "--user-text",
        "We flew home",
        "--at",
        "2024-05-04T11:00:00Z",
        "--clock-from",
        "event",
    ]);
    assert_eq!(old["last_recalled_at"], "2024-05-04T11:00:00.000Z");
    let listed = bank.json(&["list", "--user", "ana"]);
    let retention = |id: &serde_json::Value| {
        listed["memories"].as_array().unwrap().iter().find(|m| m["id"] == *id).unwrap()["retention"].as_f64().unwrap()
    };
    assert!(retention(&fresh["id"]) > 0.99, "{listed}");
    assert!(retention(&old["id"]) < 0.01, "{listed}");
    // The log keeps where each clock started, so a curve can be replayed from it.
    let created = |id: &serde_json::Value| {
        let events = bank.json(&["events", "--user", "ana", "--memory", id.as_str().unwrap()]);
        events["events"].as_array().unwrap().iter().find(|e| e["kind"] == "created").unwrap()["data"].clone()
    };
    assert_eq!(created(&old["id"])["clock_started_at"], "2024-05-04T11:00:00+00:00");
    assert_ne!(created(&fresh["id"])["clock_started_at"], "2024-05-04T10:00:00+00:00");
    assert_eq!(created(&fresh["id"])["strength"], 1.0);
    // list and show say plainly what the next sweep archives.
    assert_eq!(
        (listed["archive_below"].as_f64(), listed["past_threshold"].as_u64()),
        (Some(0.05), Some(1)),
        "{listed}"
    );
    let marked: Vec<_> = listed["memories"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["past_threshold"] == true)
        .map(|m| m["id"].clone())
        .collect();
    assert_eq!(marked, vec![old["id"].clone()]);
    let text = bank.ok(&["list", "--user", "ana"]);
    let line = text.lines().find(|l| l.contains("We flew home")).unwrap();
    assert!(line.contains("(past threshold: the next sweep archives it)"), "{text}");
    assert!(!text.lines().find(|l| l.contains("We met in Lisbon")).unwrap().contains("past threshold"), "{text}");
    assert!(
        text.contains("1 memory listed is past the archive threshold (R < 0.05): the next sweep archives it"),
        "{text}"
    );
    let shown = bank.ok(&["show", "--user", "ana", old["id"].as_str().unwrap()]);
    assert!(shown.contains("past the archive threshold (0.05): the next sweep archives it"), "{shown}");
    assert_eq!(
        bank.json(&["show", "--user", "ana", old["id"].as_str().unwrap()])["memories"][0]["past_threshold"],
        true
    );
    bank.ok(&["pin", "--user", "ana", old["id"].as_str().unwrap()]);
    assert_eq!(bank.json(&["list", "--user", "ana"])["past_threshold"], 0, "a pinned memory never decays");
    bank.ok(&["unpin", "--user", "ana", old["id"].as_str().unwrap()]);
    let sweep = bank.json(&["sweep", "--user", "ana", "--dry-run", "--max-fraction", "1"]);
    let archived: Vec<_> = sweep["archived"].as_array().unwrap().iter().map(|a| a["id"].clone()).collect();
    assert_eq!(archived, vec![old["id"].clone()], "{sweep}");
    // Bad values are usage errors that store nothing.
    for bad in ["", "events", "EVENT; rm -rf /", "\u{202e}import"] {
        let err = bank.fails(&["remember", "--user", "ana", "--user-text", "x", "--clock-from", bad], 2);
        assert!(err.contains("event, import"), "{bad:?}: {err}");
    }
    assert_eq!(bank.json(&["list", "--user", "ana"])["memories"].as_array().unwrap().len(), 2);
}

#[test]
fn an_import_says_where_the_clocks_start_and_what_is_already_past_the_threshold() {
    // The history is dated 90 days before today, not on a fixed date: the test must not
    // change its verdict as the calendar moves on (a fixed 2023 date once put the cat, then
    // rated .87 and so kept about 3.6 years, past the threshold in late 2026; the probe now
    // rates it .85, kept about two and a half years).
    let day = (chrono::Utc::now() - chrono::Duration::days(90)).format("%Y-%m-%d");
    let history = format!(
        r#"{{" Ann ": {{"name": "Ann", "history": {{"{day}": [{{"query": "I adopted a grey cat named Miso", "response": "Lovely!"}}, {{"query": "Thanks, bye for now!", "response": "Bye!"}}]}}}}}}"#
    );
    let bank = Bank::new();
    let file = bank.path("bank.json");
    std::fs::write(&file, &history).unwrap();
    let said = bank.ok(&["import", "memorybank", file.to_str().unwrap()]);
    assert!(said.contains("imported 2 of 2 records for 1 user (0 already present)"), "{said}");
    assert!(said.contains("forgetting clocks start now (--clock-from import)"), "{said}");
    assert!(!said.contains("past the archive threshold"), "{said}");
    let sweep = bank.json(&["sweep", "--user", "Ann", "--dry-run"]);
    assert_eq!(sweep["archived"].as_array().unwrap().len(), 0, "{sweep}");

    let other = Bank::new();
    std::fs::write(other.path("bank.json"), &history).unwrap();
    let report =
        other.json(&["import", "memorybank", other.path("bank.json").to_str().unwrap(), "--clock-from", "event"]);
    // Ninety days after the event: the goodbye (rated near 0, a few days' life) is past the
    // threshold; the adopted cat, a durable fact the estimator rates high, is not.
    assert_eq!(
        (report["clock_from"].as_str(), report["past_threshold"].as_u64()),
        (Some("event"), Some(1)),
        "{report}"
    );
    let listed = other.json(&["list", "--user", "Ann"]);
    let kept: Vec<&str> = listed["memories"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["retention"].as_f64().is_some_and(|r| r >= 0.05))
        .filter_map(|m| m["content"].as_str())
        .collect();
    assert!(kept.len() == 1 && kept[0].contains("Miso"), "{listed}");
    let err = other
        .fails(&["import", "membank-export", other.path("bank.json").to_str().unwrap(), "--clock-from", "event"], 2);
    assert!(err.contains("--clock-from does not apply"), "{err}");
}

#[test]
fn a_bare_date_is_the_persons_local_midnight() {
    let bank = Bank::new();
    bank.ok(&["remember", "--user", "li", "--user-text", "hello"]);
    bank.ok(&["users", "--user", "li", "--time-zone", "Asia/Shanghai"]);
    let memory =
        bank.json(&["remember", "--user", "li", "--user-text", "We climbed the Great Wall", "--at", "2024-05-04"]);
    assert_eq!(memory["occurred_at"], "2024-05-03T16:00:00.000Z");
    assert_eq!(memory["day"], "2024-05-04");
    // A user membank has not met yet counts days in UTC.
    let new = bank.json(&["note", "--user", "sam", "--text", "Sam likes tea", "--at", "2024-05-04"]);
    assert_eq!(new["occurred_at"], "2024-05-04T00:00:00.000Z");
    for bad in ["2024-5-4", "May 4th", "2024-02-30", "2024-05-04T25:00:00Z", ""] {
        let err = bank.fails(&["remember", "--user", "li", "--user-text", "x", "--at", bad], 3);
        assert!(err.contains("RFC 3339") && err.contains("local midnight"), "{bad:?}: {err}");
    }
}

#[test]
fn erase_asks_at_a_terminal_and_needs_yes_elsewhere() {
    let bank = Bank::new();
    let id = bank.remember("ana", "My passport number is X123", "2024-05-04T10:00:00Z");
    let err = bank.fails(&["erase", "--user", "ana", &id], 2);
    assert!(err.contains("cannot be undone") && err.contains("--yes"), "{err}");
    assert_eq!(status_of(&bank, "ana", &id), "active");
    let db = bank.db();
    let (shown, code) = at_terminal(&bank, &["erase", "--user", "ana", &id], "n\n", Some(&db));
    assert_eq!(code, Some(0), "{shown}");
    assert!(shown.contains("cannot be restored") && shown.contains("nothing erased"), "{shown}");
    assert_eq!(status_of(&bank, "ana", &id), "active");
    let (shown, code) = at_terminal(&bank, &["erase", "--user", "ana", &id], "y\n", Some(&db));
    assert_eq!(code, Some(0), "{shown}");
    assert_eq!(status_of(&bank, "ana", &id), "erased");
    let other = bank.remember("ana", "Another secret", "2024-05-04T10:00:00Z");
    bank.ok(&["erase", "--user", "ana", "--yes", &other]);
    assert_eq!(status_of(&bank, "ana", &other), "erased");
}

#[test]
fn a_sweep_that_would_archive_most_memories_asks_first_at_a_terminal() {
    let bank = Bank::new();
    let old: Vec<String> =
        (0..3).map(|i| bank.remember("ana", &format!("old thing {i}"), "2024-05-04T10:00:00Z")).collect();
    bank.ok(&["remember", "--user", "ana", "--user-text", "new thing"]);
    let db = bank.db();
    let (shown, code) = at_terminal(&bank, &["sweep", "--user", "ana", "--max-fraction", "1"], "n\n", Some(&db));
    assert_eq!(code, Some(0), "{shown}");
    assert!(
        shown.contains("would archive 3 of ana's 4 active memories") && shown.contains("nothing archived"),
        "{shown}"
    );
    assert!(old.iter().all(|id| status_of(&bank, "ana", id) == "active"));
    // --yes does not ask; scripts are never asked.
    let (shown, code) = at_terminal(&bank, &["sweep", "--user", "ana", "--max-fraction", "1", "--yes"], "", Some(&db));
    assert_eq!(code, Some(0), "{shown}");
    assert!(!shown.contains("[y/N]"), "{shown}");
    assert!(old.iter().all(|id| status_of(&bank, "ana", id) == "archived"));
    let other = Bank::new();
    other.remember("bo", "old thing", "2024-05-04T10:00:00Z");
    let report = other.json(&["sweep", "--user", "bo"]);
    assert_eq!(report["archived"].as_array().unwrap().len(), 1, "{report}");
}

#[test]
fn help_puts_the_commands_own_flags_first_and_usage_errors_name_the_alternatives() {
    let bank = Bank::new();
    let help = bank.ok(&["remember", "--help"]);
    let global = help.find("Global options:").expect("a heading for the global flags");
    for own in ["--user <USER>", "--user-text <USER_TEXT>", "--user-text-file", "--at <AT>", "--clock-from"] {
        assert!(help.find(own).is_some_and(|at| at < global), "{own} before the global flags:\n{help}");
    }
    for global_flag in ["--db <DB>", "--json", "--embedder", "--forgetting-policy", "--llm-base-url"] {
        assert!(help.find(global_flag).is_some_and(|at| at > global), "{global_flag} under a global heading:\n{help}");
    }
    let recall = bank.ok(&["recall", "--help"]);
    assert!(
        recall.contains("rank fusion") && recall.contains("1/(60 + its place)") && recall.contains("after this recall"),
        "{recall}"
    );
    let err = bank.fails(&["sweep"], 2);
    assert!(err.contains("--user <USER>|--all-users"), "{err}");
    let err = bank.fails(&["sweep", "--user", "a", "--all-users"], 2);
    assert!(err.contains("cannot be used with"), "{err}");
    let err = bank.fails(&["remember", "--user", "a"], 2);
    assert!(err.contains("--user-text-file"), "{err}");
    let err = bank.fails(&["note", "--user", "a"], 2);
    assert!(err.contains("--text-file"), "{err}");
}

#[test]
fn hints_repeat_the_flags_that_choose_the_data() {
    let bank = Bank::new();
    let db = bank.path("open.db");
    // A keyless server may not listen beyond loopback; the key it suggests goes into this --db.
    let out = bank
        .command_without_db()
        .args(["--db", db.to_str().unwrap(), "serve", "--addr", "0.0.0.0:0"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(err.contains(&format!("membank keys create --tenant default --db {}", db.display())), "{err}");
    // A missing model: fetch it into the directory given.
    let missing = bank.path("no model here");
    let out = Command::new(env!("CARGO_BIN_EXE_membank"))
        .env_remove("MEMBANK_MODEL_DIR")
        .env("HOME", bank.dir.path())
        .args([
            "--db",
            db.to_str().unwrap(),
            "--model-dir",
            missing.to_str().unwrap(),
            "remember",
            "--user",
            "a",
            "--user-text",
            "hi",
        ])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(7), "{err}");
    assert!(
        err.contains(&format!("hint: with your flags: membank models fetch --model-dir '{}'", missing.display())),
        "{err}"
    );
    assert!(!err.contains("WARN"), "no log lines without MEMBANK_LOG: {err}");
}

#[test]
fn keys_list_has_a_header_and_models_status_lists_every_model() {
    let bank = Bank::new();
    assert!(bank.ok(&["keys", "list"]).contains("no API keys"));
    bank.ok(&["keys", "create", "--tenant", "acme", "--user", "ana", "--label", "ana's app"]);
    bank.ok(&["keys", "create", "--tenant", "acme"]);
    let listed = bank.ok(&["keys", "list"]);
    let lines: Vec<&str> = listed.lines().collect();
    assert_eq!(lines[0], "ID\tTENANT\tUSER\tROLE\tSTATE\tLABEL", "{listed}");
    assert!(lines.iter().any(|l| l.contains("\tacme\tana\tuser\tactive\tana's app")), "{listed}");
    assert!(lines.iter().any(|l| l.contains("\tacme\t(any user)\ttenant\tactive\t")), "{listed}");
    let status = bank.json(&["models", "status"]);
    let names: Vec<_> =
        status["models"].as_array().unwrap().iter().map(|m| m["name"].as_str().unwrap().to_string()).collect();
    assert_eq!(names, ["all-MiniLM-L6-v2", "multilingual-e5-small"]);
    assert_eq!(status["models"][0]["configured"], true);
    let text = bank.ok(&["models", "status"]);
    assert!(text.contains("multilingual-e5-small") && text.contains("in use"), "{text}");
}

#[test]
fn every_listing_command_ends_quietly_on_a_closed_pipe() {
    let bank = Bank::new();
    for i in 0..30 {
        bank.remember("ana", &format!("memory number {i} about gardening"), "2024-05-04T10:00:00Z");
    }
    bank.ok(&["keys", "create", "--tenant", "default"]);
    let commands: Vec<Vec<&str>> = vec![
        vec!["recall", "--user", "ana", "--query", "gardening", "--k", "20", "--no-strengthen"],
        vec!["--json", "recall", "--user", "ana", "--query", "gardening", "--k", "20", "--no-strengthen"],
        vec!["show", "--user", "ana"],
        vec!["users"],
        vec!["keys", "list"],
        vec!["models", "status"],
        vec!["sweep", "--user", "ana", "--dry-run"],
        vec!["maintain", "--user", "ana", "--dry-run"],
        vec!["check"],
        vec!["--help"],
        vec!["recall", "--help"],
    ];
    for mut args in commands {
        let ids;
        if args[0] == "show" {
            ids = bank.json(&["list", "--user", "ana"])["memories"]
                .as_array()
                .unwrap()
                .iter()
                .map(|m| m["id"].as_str().unwrap().to_string())
                .collect::<Vec<_>>();
            args.extend(ids.iter().map(String::as_str));
        }
        let mut child = bank.command().args(&args).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap();
        drop(child.stdout.take());
        let mut stderr = String::new();
        child.stderr.take().unwrap().read_to_string(&mut stderr).unwrap();
        let status = child.wait().unwrap();
        assert!(!stderr.contains("panicked"), "{args:?}: {stderr}");
        assert!(matches!(status.code(), Some(0) | Some(141)), "{args:?}: {status:?} {stderr}");
    }
}
