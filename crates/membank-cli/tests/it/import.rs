//! `membank import` and `membank eval` through the real binary: a small bank imports, a
//! re-import adds nothing, a bad file exits 3 naming the record, and the MemoryBank
//! runner prints the documented JSON shape.

use crate::Bank;

/// Two turns of one user, Ann (her key carries spaces, as in the released English file).
pub const BANK: &str = r#"{" Ann ": {"name": "Ann", "history": {
  "2023-04-27": [{"query": "I adopted a grey cat named Miso", "response": "Lovely!"}, {"query": "I went hiking on Mount Tam", "response": "Fun."}]}}}"#;

#[test]
fn import_is_idempotent_and_bad_files_name_the_record() {
    let bank = Bank::new();
    let file = bank.path("bank.json");
    std::fs::write(&file, BANK).unwrap();
    let first = bank.json(&["import", "memorybank", file.to_str().unwrap()]);
    assert_eq!((first["imported"].as_u64(), first["skipped"].as_u64()), (Some(2), Some(0)));
    let again = bank.json(&["import", "memorybank", file.to_str().unwrap()]);
    assert_eq!((again["imported"].as_u64(), again["skipped"].as_u64()), (Some(0), Some(2)));
    let listed = bank.json(&["list", "--user", "Ann"]);
    assert_eq!(listed["memories"].as_array().unwrap().len(), 2);

    let bad = bank.path("bad.json");
    std::fs::write(&bad, BANK.replace(r#""query": "I went hiking on Mount Tam""#, r#""query": null"#)).unwrap();
    let stderr = bank.fails(&["import", "memorybank", bad.to_str().unwrap()], 3);
    assert!(stderr.contains(r#"$[" Ann "].history["2023-04-27"][1].query"#), "{stderr}");

    let questions = bank.path("probing_questions_en.jsonl");
    std::fs::write(&questions, "{\"Ann\": [\"What is my cat called?\"]}\n").unwrap();
    std::fs::copy(&file, bank.path("memory_bank_en.json")).unwrap();
    let gold = bank.path("gold.jsonl");
    std::fs::write(&gold, "{\"user\": \" Ann \", \"qid\": \"en-Ann-0\", \"evidence\": [{\"date\": \"2023-04-27\", \"turn\": 0}], \"kind\": \"fact\"}\n").unwrap();
    let eval_db = bank.path("eval.db");
    let report = bank.json(&[
        "eval",
        "memorybank",
        "--data",
        bank.dir.path().to_str().unwrap(),
        "--gold",
        gold.to_str().unwrap(),
        "--k",
        "1,3",
        "--eval-db",
        eval_db.to_str().unwrap(),
    ]);
    assert_eq!(report["metrics"]["hit@1"].as_f64(), Some(1.0), "{report}");
    assert!(
        report["metrics"]["all@3"].is_number()
            && report["metrics"]["mrr"].is_number()
            && report["by_kind"]["fact"].is_object()
    );
}

/// Files crafted to reach the parsers' date arithmetic and byte slicing (each once a panic,
/// exit 101): every one is refused with exit 3, naming the JSON path of the bad record.
#[test]
fn crafted_files_exit_3_naming_the_record() {
    let bank = Bank::new();
    let turns = |n: usize| (0..n).map(|i| format!(r#"{{"query": "turn {i}"}}"#)).collect::<Vec<_>>().join(",");
    let cases = [
        (
            "memorybank",
            r#"{"Ann": {"history": {"2023-04-28": [{"query": "hi", "last_recall_date": "2023-04-2８"}]}}}"#.to_string(),
            r#"$["Ann"].history["2023-04-28"][0].last_recall_date"#.to_string(),
        ),
        (
            "memorybank",
            // A day outside the years 1 to 9999 is refused at its key, before any arithmetic.
            format!(r#"{{"Ann": {{"history": {{"+262142-12-31": [{}]}}}}}}"#, turns(721)),
            r#"$["Ann"].history["+262142-12-31"]: +262142-12-31 is outside the years 1 to 9999"#.to_string(),
        ),
        (
            "memorybank",
            r#"{"Ann": {"history": {"-0001-12-31": [{"query": "hi"}]}}}"#.to_string(),
            r#"$["Ann"].history["-0001-12-31"]: -0001-12-31 is outside the years 1 to 9999"#.to_string(),
        ),
        // Parsed, but in the future: refused by validation before anything is written.
        (
            "memorybank",
            r#"{"Ann": {"history": {"9999-12-31": [{"query": "hi"}]}}}"#.to_string(),
            r#"$["Ann"].history["9999-12-31"][0]"#.to_string(),
        ),
        (
            "memorybank",
            r#"{"Ann": {"history": {"2023-04-28": [{"query": "hi", "last_recall_date": "+262142-12-31"}]}}}"#
                .to_string(),
            r#"$["Ann"].history["2023-04-28"][0]"#.to_string(),
        ),
        (
            "locomo",
            format!(
                r#"[{{"sample_id": "s", "conversation": {{"session_1": [{}], "session_1_date_time": "11:59 pm on 31 December, +262142"}}}}]"#,
                (0..61)
                    .map(|i| format!(r#"{{"speaker": "A", "dia_id": "D1:{i}", "text": "t"}}"#))
                    .collect::<Vec<_>>()
                    .join(",")
            ),
            r#"$[0].conversation["session_1"][60]"#.to_string(),
        ),
        (
            "longmemeval",
            format!(
                r#"[{{"question_id": "q", "haystack_session_ids": ["a"], "haystack_dates": ["+262142/12/31 (Fri) 23:59"], "haystack_sessions": [[{}]]}}]"#,
                vec![r#"{"role": "user", "content": "c"}"#; 61].join(",")
            ),
            "$[0].haystack_sessions[0][60]".to_string(),
        ),
    ];
    for (index, (format, file, path)) in cases.iter().enumerate() {
        let name = bank.path(&format!("crafted-{index}.json"));
        std::fs::write(&name, file).unwrap();
        let stderr = bank.fails(&["import", format, name.to_str().unwrap()], 3);
        assert!(stderr.contains(path.as_str()), "case {index}: {stderr}");
    }
    assert_eq!(bank.json(&["users"])["users"].as_array().map(Vec::len), Some(0), "nothing was stored");
}

/// `eval locomo --conversations` and `eval longmemeval --half`: a malformed, empty or
/// reversed value is refused by the parser, and one the data file does not have is
/// refused before anything is imported, all with exit 2 and a message naming the flag.
#[test]
fn eval_selections_that_are_malformed_or_absent_exit_2() {
    let bank = Bank::new();
    let locomo = bank.path("locomo.json");
    std::fs::write(&locomo, r#"[{"sample_id": "conv-1", "conversation": {"speaker_a": "Ann", "speaker_b": "Bo", "session_1_date_time": "1:56 pm on 8 May, 2023",
      "session_1": [{"speaker": "Ann", "dia_id": "D1:1", "text": "I adopted a grey cat"}]}, "qa": []}]"#).unwrap();
    let lme = bank.path("lme.json");
    std::fs::write(&lme, r#"[{"question_id": "q1", "question_type": "multi-session", "question": "cat?", "answer": "x", "question_date": "2023/05/30 (Tue) 23:40",
      "haystack_session_ids": ["answer_a"], "haystack_dates": ["2023/05/20 (Sat) 10:00"], "haystack_sessions": [[{"role": "user", "content": "my cat", "has_answer": true}]], "answer_session_ids": ["answer_a"]}]"#).unwrap();
    let eval_db = bank.path("eval.db");
    let (locomo, lme, eval_db) = (locomo.to_str().unwrap(), lme.to_str().unwrap(), eval_db.to_str().unwrap());
    for (value, says) in [
        ("", "empty"),
        ("5-", "not a conversation range"),
        ("a-b", "not a conversation range"),
        ("9-5", "starts after it ends"),
        ("-1", ""),
    ] {
        let stderr = bank
            .fails(&["eval", "locomo", "--data", locomo, "--eval-db", eval_db, &format!("--conversations={value}")], 2);
        assert!(stderr.contains("--conversations") && stderr.contains(says), "{value:?}: {stderr}");
    }
    for (value, says) in [("", "empty"), ("3", "not a half"), ("first", "not a half")] {
        let stderr =
            bank.fails(&["eval", "longmemeval", "--data", lme, "--eval-db", eval_db, &format!("--half={value}")], 2);
        assert!(stderr.contains("--half") && stderr.contains(says), "{value:?}: {stderr}");
    }
    // Well formed, but beyond what the files hold: one conversation, one question.
    let stderr = bank.fails(&["eval", "locomo", "--data", locomo, "--eval-db", eval_db, "--conversations", "5-9"], 2);
    assert!(
        stderr.contains("--conversations: conversations 5-9") && stderr.contains("it has 1, positions 0-0"),
        "{stderr}"
    );
    let stderr = bank.fails(&["eval", "longmemeval", "--data", lme, "--eval-db", eval_db, "--half", "2"], 2);
    assert!(stderr.contains("--half: half 2") && stderr.contains("there are 1 in the file"), "{stderr}");
    let users =
        bank.command_without_db().args(["--db", eval_db, "--tenant", "eval", "--json", "users"]).output().unwrap();
    let users: serde_json::Value = serde_json::from_slice(&users.stdout).unwrap_or_default();
    assert_eq!(users["users"].as_array().map(Vec::len).unwrap_or(0), 0, "nothing was imported: {users}");
}
