//! What the second review and newcomer found in the binary: stored control characters
//! printed raw, a failed write to stdout that panicked, read-only commands that created an
//! empty database at a mistyped `--db`, and an unknown user that looked like an empty one.

use std::process::Stdio;

use crate::Bank;

fn ids(bank: &Bank, user: &str) -> Vec<String> {
    bank.json(&["list", "--user", user])["memories"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["id"].as_str().unwrap().to_string())
        .collect()
}

#[test]
fn stored_control_characters_are_shown_escaped_in_text_and_exact_in_json() {
    let bank = Bank::new();
    let hostile = "clear \u{1b}[2J then \u{1b}]0;owned\u{7} and \u{202e}reversed";
    bank.remember("ana", hostile, "2024-05-04T10:00:00Z");
    let id = ids(&bank, "ana").remove(0);
    for args in [
        vec!["list", "--user", "ana"],
        vec!["show", "--user", "ana", &id],
        vec!["recall", "--user", "ana", "--query", "clear then", "--no-strengthen"],
    ] {
        let text = bank.ok(&args);
        assert!(!text.chars().any(|c| c == '\u{1b}' || c == '\u{7}' || c == '\u{202e}'), "{args:?}: {text:?}");
        assert!(text.contains(r"clear \u{1b}[2J then \u{1b}]0;owned\u{7} and \u{202e}reversed"), "{args:?}: {text}");
    }
    let json = bank.json(&["show", "--user", "ana", &id]);
    assert_eq!(json["memories"][0]["user_text"], hostile);
}

#[test]
fn a_failed_write_to_stdout_is_an_error_with_exit_1_not_a_panic() {
    let bank = Bank::new();
    bank.remember("ana", "I keep bees on the roof", "2024-05-04T10:00:00Z");
    bank.ok(&["keys", "create", "--tenant", "default"]);
    let id = ids(&bank, "ana").remove(0);
    for args in [
        vec!["users"],
        vec!["list", "--user", "ana"],
        vec!["show", "--user", "ana", &id],
        vec!["recall", "--user", "ana", "--query", "bees"],
        vec!["--json", "recall", "--user", "ana", "--query", "bees"],
        vec!["events", "--user", "ana"],
        vec!["check"],
        vec!["keys", "list"],
        vec!["models", "status"],
        vec!["profile", "--user", "ana"],
    ] {
        let full = std::fs::OpenOptions::new().write(true).open("/dev/full").unwrap();
        let out = bank.command().args(&args).stdout(full).stderr(Stdio::piped()).output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{args:?}: {stderr}");
        assert!(!stderr.contains("panicked"), "{args:?}: {stderr}");
        assert!(stderr.contains("cannot write to standard output"), "{args:?}: {stderr}");
    }
}

#[test]
fn read_only_commands_refuse_a_missing_database_and_create_nothing() {
    let bank = Bank::new();
    let missing = bank.path("nodir/x.db");
    let absent_here = bank.path("absent.db");
    let id = "01a23bc0-960f-705a-a91b-0fa14d8d1b54";
    for db in [&missing, &absent_here] {
        for args in [
            vec!["list", "--user", "bob"],
            vec!["show", "--user", "bob", id],
            vec!["recall", "--user", "bob", "--query", "anything", "--no-strengthen"],
            vec!["recall", "--user", "bob", "--query", "anything"],
            vec!["events", "--user", "bob"],
            vec!["users"],
            vec!["export", "--all-users"],
            vec!["check"],
            vec!["profile", "--user", "bob"],
        ] {
            let out = bank.command_without_db().arg("--db").arg(db).args(&args).output().unwrap();
            let stderr = String::from_utf8_lossy(&out.stderr);
            assert_eq!(out.status.code(), Some(4), "{args:?} on {}: {stderr}", db.display());
            assert!(stderr.contains(&db.display().to_string()), "{args:?}: {stderr}");
            assert!(out.stdout.is_empty(), "{args:?}: {}", String::from_utf8_lossy(&out.stdout));
        }
    }
    assert!(!missing.parent().unwrap().exists(), "a read-only command created {}", missing.display());
    assert!(!absent_here.exists(), "a read-only command created {}", absent_here.display());

    // A write to a new file in a missing directory is refused too, and creates nothing.
    let out = bank
        .command_without_db()
        .arg("--db")
        .arg(&missing)
        .args(["remember", "--user", "bob", "--user-text", "hello"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(4), "{stderr}");
    assert!(stderr.contains("no directory") && stderr.contains("nodir"), "{stderr}");
    assert!(!missing.parent().unwrap().exists());
    // In an existing directory a write starts the database, and reads then work.
    let here = bank.path("here.db");
    let out = bank
        .command_without_db()
        .arg("--db")
        .arg(&here)
        .args(["remember", "--user", "bob", "--user-text", "hello"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let out = bank.command_without_db().arg("--db").arg(&here).args(["list", "--user", "bob"]).output().unwrap();
    assert!(out.status.success() && String::from_utf8_lossy(&out.stdout).contains("hello"));
}

#[test]
fn the_default_location_is_still_created_by_a_first_write() {
    let bank = Bank::new();
    let data = bank.path("data");
    let out = bank
        .command_without_db()
        .env("XDG_DATA_HOME", &data)
        .env_remove("MEMBANK_DB")
        .args(["remember", "--user", "bob", "--user-text", "hello"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(data.join("membank/membank.db").exists());
}

#[test]
fn an_unknown_user_is_said_to_be_unknown_not_shown_as_empty() {
    let bank = Bank::new();
    bank.remember("ana", "I keep bees on the roof", "2024-05-04T10:00:00Z");
    for args in [vec!["recall", "--user", "nobody", "--query", "bees"], vec!["list", "--user", "nobody"]] {
        let text = bank.ok(&args);
        assert!(text.contains("no such user") && text.contains("\"nobody\""), "{args:?}: {text}");
    }
    let unknown = bank.json(&["recall", "--user", "nobody", "--query", "bees"]);
    assert_eq!(unknown["user_known"], false);
    assert_eq!(unknown["results"].as_array().unwrap().len(), 0);
    let known = bank.json(&[
        "recall",
        "--user",
        "ana",
        "--query",
        "something else entirely",
        "--from",
        "1999-01-01",
        "--to",
        "1999-01-02",
    ]);
    assert_eq!(known["user_known"], true, "{known}");
    assert_eq!(bank.json(&["list", "--user", "nobody"])["user_known"], false);
    assert_eq!(bank.json(&["list", "--user", "ana"])["user_known"], true);
    // A user whose memories do not match is known, and the text says so differently.
    let text = bank.ok(&["recall", "--user", "ana", "--query", "bees", "--from", "1999-01-01", "--to", "1999-01-02"]);
    assert!(!text.contains("no such user"), "{text}");
}

#[test]
fn a_killed_backup_leaves_nothing_under_the_final_name() {
    let bank = Bank::new();
    bank.remember("ana", "I keep bees on the roof", "2024-05-04T10:00:00Z");
    // 48 MB of padding, so that a backup takes long enough to be killed in the middle.
    let conn = rusqlite::Connection::open(bank.db()).unwrap();
    conn.execute_batch(
        "CREATE TABLE test_padding(x BLOB);
         WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 48)
         INSERT INTO test_padding SELECT randomblob(1048576) FROM n;",
    )
    .unwrap();
    drop(conn);
    let mut cut_short = 0;
    for (trial, delay_ms) in [10u64, 30, 60, 100, 150, 200, 300, 450, 700, 1000].into_iter().enumerate() {
        let target = bank.path(&format!("backup-{trial}.db"));
        let mut child = bank
            .command()
            .args(["backup", target.to_str().unwrap()])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        std::thread::sleep(std::time::Duration::from_millis(delay_ms));
        let finished = child.try_wait().unwrap().is_some();
        let _ = child.kill();
        child.wait().unwrap();
        if !target.exists() {
            cut_short += usize::from(!finished);
            continue;
        }
        // Whatever is under the final name is a whole, checked backup.
        let check = bank.command_without_db().args(["check", target.to_str().unwrap()]).output().unwrap();
        assert!(
            check.status.success(),
            "a backup killed after {delay_ms} ms left {} behind: {}",
            target.display(),
            String::from_utf8_lossy(&check.stderr)
        );
    }
    assert!(cut_short > 0, "no backup was killed before it finished; the padding is too small to test anything");
    // And one left alone completes, checked, under its name.
    let target = bank.path("whole.db");
    bank.ok(&["backup", target.to_str().unwrap()]);
    let check = bank.command_without_db().args(["check", target.to_str().unwrap()]).output().unwrap();
    assert!(check.status.success(), "{}", String::from_utf8_lossy(&check.stderr));
}

#[test]
fn times_outside_the_years_1_to_9999_are_refused_on_every_path_and_what_is_stored_round_trips() {
    let bank = Bank::new();
    bank.remember("bob", "first words", "2024-05-04T10:00:00Z");
    // 0000-01-01 at +23:59 is -0001-12-31 in UTC; 0001-01-01 UTC is year 0 in New York.
    for at in ["0000-01-01T00:00:00+23:59", "0000-12-31", "10000-01-01T00:00:00Z"] {
        let at = format!("--at={at}");
        let err = bank.fails(&["remember", "--user", "bob", "--user-text", "old", &at], 3);
        assert!(err.contains("years 1 to 9999") || err.contains("not an RFC 3339"), "{at}: {err}");
    }
    bank.ok(&["users", "--user", "bob", "--time-zone", "America/New_York"]);
    let err = bank.fails(&["remember", "--user", "bob", "--user-text", "old", "--at", "0001-01-01T00:00:00Z"], 3);
    assert!(err.contains("years 1 to 9999"), "{err}");
    // The earliest a New Yorker can store is stored, exported and read back whole.
    bank.ok(&[
        "remember",
        "--user",
        "bob",
        "--user-text",
        "oldest",
        "--at",
        "0001-01-01T12:00:00Z",
        "--clock-from",
        "event",
    ]);
    let export = bank.path("bob.jsonl");
    bank.ok(&["export", "--user", "bob", "--output", export.to_str().unwrap()]);
    let other = Bank::new();
    other.ok(&["import", "membank-export", export.to_str().unwrap()]);
    let listed = other.json(&["list", "--user", "bob"]);
    assert!(listed["memories"].as_array().unwrap().iter().any(|m| m["day"] == "0001-01-01"), "{listed}");

    // Imports refuse the same.
    let bank_file = bank.path("mb.json");
    std::fs::write(
        &bank_file,
        r#"{"Ann": {"history": {"-0001-12-31": [{"query": "I adopted a cat", "response": "Lovely!"}]}}}"#,
    )
    .unwrap();
    let err = other.fails(&["import", "memorybank", bank_file.to_str().unwrap()], 3);
    assert!(err.contains("-0001-12-31") || err.contains("years 1 to 9999"), "{err}");
    let text = std::fs::read_to_string(&export).unwrap();
    let shifted = text.replace("0001-01-01T12:00:00.000Z", "0000-12-31T12:00:00.000Z");
    assert_ne!(shifted, text, "the export holds the oldest memory's time: {text}");
    let bad = bank.path("bad.jsonl");
    std::fs::write(&bad, shifted).unwrap();
    let err = Bank::new().fails(&["import", "membank-export", bad.to_str().unwrap()], 3);
    assert!(err.contains("years 1 to 9999"), "{err}");
}

#[test]
fn a_file_in_another_known_format_is_named_with_the_subcommand_that_reads_it() {
    let bank = Bank::new();
    bank.remember("bob", "I keep bees", "2024-05-04T10:00:00Z");
    let export = bank.path("bob.jsonl");
    bank.ok(&["export", "--user", "bob", "--output", export.to_str().unwrap()]);
    let export_arg = export.to_str().unwrap();
    for format in ["memorybank", "locomo", "longmemeval"] {
        let err = bank.fails(&["import", format, export_arg], 3);
        assert!(
            err.contains(&format!(
                "hint: this looks like a membank-export file: membank import membank-export {export_arg}"
            )),
            "{format}: {err}"
        );
    }
    let memorybank = bank.path("mb.json");
    std::fs::write(&memorybank, crate::import::BANK).unwrap();
    let err = bank.fails(&["import", "locomo", memorybank.to_str().unwrap()], 3);
    assert!(err.contains("hint: this looks like a memorybank file: membank import memorybank"), "{err}");
    let err = bank.fails(&["import", "membank-export", memorybank.to_str().unwrap()], 3);
    assert!(err.contains("hint: this looks like a memorybank file"), "{err}");
    // A file of no known shape gets no guess.
    let other = bank.path("other.json");
    std::fs::write(&other, r#"{"just": "an object"}"#).unwrap();
    let err = bank.fails(&["import", "memorybank", other.to_str().unwrap()], 3);
    assert!(!err.contains("hint:"), "{err}");
    // Importing users that exist names --merge.
    let err = bank.fails(&["import", "membank-export", export_arg], 5);
    assert!(err.contains(&format!("membank import membank-export {export_arg} --merge")), "{err}");
}

#[test]
fn remember_names_the_at_flag_in_its_errors() {
    let bank = Bank::new();
    let err = bank.fails(&["remember", "--user", "bob", "--user-text", "hi", "--at", "2999-01-01"], 3);
    assert!(err.contains("invalid --at:") && err.contains("in the future"), "{err}");
    let err = bank.fails(&["note", "--user", "bob", "--text", "hi", "--at", "yesterday"], 3);
    assert!(err.contains("invalid --at:"), "{err}");
}

/// The lines of `file`, each a JSON value.
fn json_lines(file: &std::path::Path) -> Vec<serde_json::Value> {
    std::fs::read_to_string(file).unwrap().lines().map(|l| serde_json::from_str(l).unwrap()).collect()
}

#[test]
fn import_of_an_export_refuses_what_the_live_paths_refuse() {
    let bank = Bank::new();
    bank.remember("bob", "I keep bees", "2024-05-04T10:00:00Z");
    bank.remember("bob", "I moved to Lisbon", "2024-05-05T10:00:00Z");
    let export = bank.path("bob.jsonl");
    bank.ok(&["export", "--user", "bob", "--vectors", "--output", export.to_str().unwrap()]);
    let lines = json_lines(&export);
    let memories: Vec<usize> = (0..lines.len()).filter(|&i| lines[i]["type"] == "memory").collect();
    assert_eq!(memories.len(), 2);
    let (a, b) = (lines[memories[0]]["id"].clone(), lines[memories[1]]["id"].clone());
    type Change = Box<dyn Fn(&mut [serde_json::Value])>;
    let (first, second) = (memories[0], memories[1]);
    let cases: Vec<(&str, Change)> = vec![
        (
            "vectors are normalised to length 1",
            Box::new(move |l| {
                let scaled: Vec<f64> =
                    l[first]["vector"].as_array().unwrap().iter().map(|x| x.as_f64().unwrap() * 1e6).collect();
                l[first]["vector"] = serde_json::json!(scaled);
            }),
        ),
        (
            "superseded in a cycle",
            Box::new(move |l| {
                l[first]["status"] = "superseded".into();
                l[first]["superseded_by"] = b.clone();
                l[second]["status"] = "superseded".into();
                l[second]["superseded_by"] = a.clone();
            }),
        ),
        ("in any time zone", Box::new(move |l| l[first]["day"] = "2024-05-09".into())),
        ("years 1 to 9999", Box::new(move |l| l[first]["occurred_at"] = "0000-06-01T00:00:00.000Z".into())),
    ];
    for (expected, change) in cases {
        let mut changed = lines.clone();
        change(&mut changed);
        let file = bank.path("changed.jsonl");
        std::fs::write(&file, changed.iter().map(|l| l.to_string() + "\n").collect::<String>()).unwrap();
        let fresh = Bank::new();
        let err = fresh.fails(&["import", "membank-export", file.to_str().unwrap()], 3);
        assert!(err.contains(expected), "{expected}: {err}");
        assert!(!fresh.db().exists() || fresh.json(&["users"])["users"].as_array().unwrap().is_empty());
    }
    // Unchanged, it imports.
    Bank::new().ok(&["import", "membank-export", export.to_str().unwrap()]);
}
