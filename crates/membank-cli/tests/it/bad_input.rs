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
        let mut args = vec![cmd, "--user", "bob", &alice];
        if cmd == "erase" {
            args.push("--yes");
        }
        let stderr = bank.fails(&args, 4);
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
    let out =
        bank.command_without_db().args(["--db", not_db.to_str().unwrap(), "list", "--user", "a"]).output().unwrap();
    assert_eq!(out.status.code(), Some(6), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(std::fs::read(&not_db).unwrap(), foreign, "the foreign file was changed");
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("not an SQLite database"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );

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
    let out = bank
        .command()
        .env("MEMBANK_MODEL_DIR", &partial)
        .args(["remember", "--user", "alice", "--user-text", "hello"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(7), "{stderr}");
    assert!(stderr.contains("membank models fetch") && stderr.contains("missing"), "{stderr}");
    // Commands that do not embed still work without a model.
    let out = bank.command().env("MEMBANK_MODEL_DIR", &partial).args(["list", "--user", "alice"]).output().unwrap();
    assert!(out.status.success());
}

#[test]
fn an_unknown_local_model_is_a_usage_error_naming_the_known_ones() {
    let bank = Bank::new();
    let out = bank
        .command()
        .args(["--local-model", "bert-base-chinese", "recall", "--user", "alice", "--query", "hello"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("bert-base-chinese") && stderr.contains("multilingual-e5-small"), "{stderr}");
    let out = bank.command().args(["models", "fetch", "--model", "nope"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", String::from_utf8_lossy(&out.stderr));
}

#[test]
fn query_precision_and_batching_flags_refuse_bad_values() {
    let bank = Bank::new();
    for bad in ["bf16", "", "INT4", "int8; rm -rf /"] {
        let out = bank
            .command()
            .args(["--query-precision", bad, "recall", "--user", "alice", "--query", "hello"])
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{bad:?}: {stderr}");
        assert!(stderr.contains("int8") && stderr.contains("f32"), "{stderr}");
    }
    let out = bank
        .command()
        .env("MEMBANK_QUERY_PRECISION", "fp16")
        .args(["recall", "--user", "alice", "--query", "hello"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", String::from_utf8_lossy(&out.stderr));
    for args in [
        ["--query-batch", "0"],
        ["--query-batch", "257"],
        ["--query-batch", "-1"],
        ["--query-batch", "many"],
        ["--query-batch-wait-us", "100001"],
        ["--query-batch-wait-us", "-5"],
    ] {
        let out = bank.command().args(["serve", "--addr", "127.0.0.1:0"]).args(args).output().unwrap();
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", String::from_utf8_lossy(&out.stderr));
    }
    // None of them got as far as creating the database.
    assert!(!bank.db().exists());
}

/// multilingual-e5-small's directory, or `None` (saying why) when it is absent and
/// `MEMBANK_REQUIRE_E5` is unset.
fn e5_dir() -> Option<std::path::PathBuf> {
    let dir = std::env::var_os("MEMBANK_E5_MODEL_DIR")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| membank_embed::fetch::default_dir_for(membank_embed::KnownModel::MultilingualE5Small));
    if dir.join("model.safetensors").exists() {
        return Some(dir);
    }
    let message = format!(
        "multilingual-e5-small is not in {}; run `membank models fetch --model multilingual-e5-small`",
        dir.display()
    );
    assert!(std::env::var_os("MEMBANK_REQUIRE_E5").is_none(), "{message}");
    eprintln!("SKIPPED: {message}");
    None
}

#[test]
fn a_store_keeps_its_model_and_chinese_recall_works_with_e5() {
    let Some(e5) = e5_dir() else { return };
    let bank = Bank::new();
    let with_e5 = |args: &[&str]| bank.command().env("MEMBANK_MODEL_DIR", &e5).args(args).output().unwrap();
    for (user, assistant) in [
        ("我昨天去了绿禾公园，看到了一朵很美的樱花。", "真好，樱花季很短。"),
        ("我最近在学做清蒸鲈鱼。", "听起来很健康。"),
        ("我的猫叫小白，它很喜欢晒太阳。", "小白真可爱。"),
    ] {
        let out = with_e5(&["remember", "--user", "li", "--user-text", user, "--assistant-text", assistant]);
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    }
    let out = with_e5(&[
        "--json",
        "recall",
        "--user",
        "li",
        "--k",
        "1",
        "--no-strengthen",
        "--query",
        "我在公园看到了什么花？",
    ]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(stdout.contains("樱花"), "{stdout}");
    // The store now holds e5 vectors: the English model is refused, not mixed in.
    let out = bank.command().args(["recall", "--user", "li", "--query", "公园"]).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(6), "{stderr}");
    assert!(stderr.contains("multilingual-e5-small"), "{stderr}");
}

#[test]
fn a_now_far_ahead_is_refused_for_writes_and_far_behind_never_panics() {
    let bank = crate::Bank::new();
    bank.remember("alice", "I keep bees", "2024-05-04T10:00:00Z");
    for args in [
        vec!["recall", "--user", "alice", "--query", "bees", "--now", "9999-12-31T00:00:00Z"],
        vec!["sweep", "--user", "alice", "--now", "9999-12-31T00:00:00Z"],
        vec!["maintain", "--user", "alice", "--now", "9999-12-31T00:00:00Z"],
    ] {
        let err = bank.fails(&args, 3);
        assert!(err.contains("now") && err.contains("ahead"), "{args:?}: {err}");
    }
    // A look ahead that writes nothing is allowed; the far past is answered, not a panic.
    bank.ok(&["recall", "--user", "alice", "--query", "bees", "--now", "9999-12-31T00:00:00Z", "--no-strengthen"]);
    bank.ok(&["sweep", "--user", "alice", "--now", "9999-12-31T00:00:00Z", "--dry-run"]);
    let out = bank.output(&["recall", "--user", "alice", "--query", "bees last week", "--now", "0001-01-01T00:00:00Z"]);
    assert_ne!(out.status.code(), Some(101), "{}", String::from_utf8_lossy(&out.stderr));
    let listed = bank.json(&["list", "--user", "alice"]);
    assert!(listed["memories"][0]["last_recalled_at"].as_str().unwrap() < "2100");
}

/// A database location that cannot be used is refused before anything is written, with
/// no password in the message: an empty one is a usage error (2), a PostgreSQL URL with a
/// bad setting invalid input (3), a server that does not answer an error naming it.
#[test]
fn unusable_database_locations_are_refused_without_leaking_a_password() {
    let bank = Bank::new();
    for empty in ["", "   "] {
        let err = bank.command_without_db().args(["--db", empty, "list", "--user", "u"]).output().unwrap();
        assert_eq!(err.status.code(), Some(2), "{}", String::from_utf8_lossy(&err.stderr));
        assert!(String::from_utf8_lossy(&err.stderr).contains("--db is empty"));
    }
    let run = |db: &str| {
        bank.command_without_db()
            .args(["--db", db, "remember", "--user", "u", "--user-text", "hello"])
            .output()
            .unwrap()
    };
    let bad = run("postgres://me:hunter2secret@127.0.0.1:1/x?sslmode=sometimes");
    assert_eq!(bad.status.code(), Some(3));
    let refused = run("postgres://me:hunter2secret@127.0.0.1:1/x?sslmode=disable");
    assert!(!refused.status.success());
    for out in [&bad, &refused] {
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!stderr.contains("hunter2secret") && stderr.contains("postgres://me:***@127.0.0.1:1/x"), "{stderr}");
    }
    let hostless = run("postgres://");
    assert!(!hostless.status.success());
    assert!(
        std::fs::read_dir(bank.dir.path()).unwrap().all(|e| !e.unwrap().file_name().to_string_lossy().ends_with(".db")),
        "a database file was created"
    );
}

#[test]
fn reminisce_takes_three_values_and_anything_else_is_a_usage_error() {
    let bank = Bank::new();
    bank.remember("alice", "I adopted a grey cat named Miso", "2024-05-04T10:00:00Z");
    let long = "a".repeat(10_000);
    for bad in ["", "AUTO", " auto", "sometimes", "auto;never", "<script>", long.as_str()] {
        let stderr = bank.fails(&["recall", "--user", "alice", "--query", "cat", "--reminisce", bad], 2);
        assert!(stderr.contains("auto") && stderr.contains("never") && stderr.contains("always"), "{bad:?}: {stderr}");
    }
    for good in ["auto", "never", "always"] {
        let out = bank.json(&["recall", "--user", "alice", "--query", "cat", "--reminisce", good, "--no-strengthen"]);
        assert_eq!(out["reminiscence"]["mode"], good, "{out}");
        assert_eq!(out["results"][0]["reminisced"], false, "{out}");
    }
    assert_eq!(memory_count(&bank, "alice"), 1);
}

#[test]
fn simulate_longmemeval_refuses_bad_data_and_flags_and_runs_a_small_file() {
    let bank = Bank::new();
    let lme = |args: &[&str]| {
        let mut all = vec!["simulate", "longmemeval"];
        all.extend_from_slice(args);
        all.into_iter().map(String::from).collect::<Vec<_>>()
    };
    let fails = |args: &[&str], code| {
        let owned = lme(args);
        bank.fails(&owned.iter().map(String::as_str).collect::<Vec<_>>(), code)
    };
    // Only the compressed file in the folder, or the compressed file itself.
    let folder = bank.path("lme");
    std::fs::create_dir_all(&folder).unwrap();
    write(&folder.join("longmemeval_s_cleaned.json.xz"), b"\xfd7zXZ\0");
    let stderr = fails(&["--data", folder.to_str().unwrap()], 3);
    assert!(stderr.contains("xz -dk"), "{stderr}");
    let stderr = fails(&["--data", folder.join("longmemeval_s_cleaned.json.xz").to_str().unwrap()], 3);
    assert!(stderr.contains("compressed"), "{stderr}");
    // Missing, empty, not JSON, hostile JSON.
    let stderr = fails(&["--data", bank.path("nowhere.json").to_str().unwrap()], 3);
    assert!(stderr.contains("does not exist"), "{stderr}");
    let file = bank.path("lme.json");
    for (bytes, needle) in [
        (&b""[..], "JSON"),
        (b"[{\"question_id\": ", "JSON"),
        (b"{\"a\": 1}", "list of questions"),
        (b"[{\"question_id\": \"../../etc\", \"question_type\": \"t\", \"question\": \"?\", \"question_date\": \"<script>\"}]", "<script>"),
    ] {
        write(&file, bytes);
        let stderr = fails(&["--data", file.to_str().unwrap()], 3);
        assert!(stderr.contains(needle), "{needle}: {stderr}");
    }
    let good = br#"[{"question_id": "q1", "question_type": "single-session-user", "question": "Where did I adopt my cat?",
      "answer": "x", "question_date": "2023/05/22 (Mon) 12:00", "haystack_session_ids": ["s_a", "answer_x_1"],
      "haystack_dates": ["2023/05/20 (Sat) 10:00", "2023/05/22 (Mon) 09:00"],
      "haystack_sessions": [[{"role": "user", "content": "Can you recommend a pasta recipe?"}, {"role": "assistant", "content": "Sure."}],
       [{"role": "user", "content": "I adopted my cat Miso from the shelter on Elm Street.", "has_answer": true}]]}]"#;
    write(&file, good);
    let data = file.to_str().unwrap();
    let stderr = fails(&["--data", data, "--gold", data], 3);
    assert!(stderr.contains("gold"), "{stderr}");
    let stderr = fails(&["--data", data, "--samples", "1"], 3);
    assert!(stderr.contains("no question 1"), "{stderr}");
    let stderr = fails(&["--data", data, "--samples", "two"], 3);
    assert!(stderr.contains("samples"), "{stderr}");
    let labels = bank.path("labels.jsonl");
    write(&labels, b"{\"sample\": \"conv-26\", \"dia_id\": \"D1:3\", \"critical\": 1}\n");
    let stderr = fails(&["--data", data, "--critical", labels.to_str().unwrap()], 3);
    assert!(stderr.contains("labels.jsonl:1") && stderr.contains("question_id"), "{stderr}");

    // The real model on the small file: two messages stored, the question asked and found.
    write(&labels, b"{\"question_id\": \"q1\", \"session_id\": \"answer_x_1\", \"turn\": 0, \"critical\": 1}\n");
    let mut args = vec!["--json".to_string()];
    args.extend(lme(&["--data", data, "--gap-days", "30", "--critical", labels.to_str().unwrap()]));
    let out: serde_json::Value =
        serde_json::from_str(&bank.ok(&args.iter().map(String::as_str).collect::<Vec<_>>())).unwrap();
    assert_eq!(out["benchmark"], "longmemeval", "{out}");
    assert_eq!(out["storage"]["stored"], 2, "{out}");
    assert_eq!(out["questions"]["scored"], 1, "{out}");
    assert_eq!(out["quality"]["no_forgetting"]["recall@10"], 1.0, "{out}");
    assert_eq!(out["critical"]["labelled"], 1, "{out}");
    assert!(out["breakdown"]["forgetting"]["by_type"]["single-session-user"]["n"] == 1.0, "{out}");
    // Nothing was written to the configured database.
    assert!(
        !std::fs::read_dir(bank.dir.path()).unwrap().any(|e| e.unwrap().file_name().to_string_lossy().ends_with(".db"))
    );
}
