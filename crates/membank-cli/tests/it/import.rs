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
    let report = bank.json(&["eval", "memorybank", "--data", bank.dir.path().to_str().unwrap(), "--gold", gold.to_str().unwrap(), "--k", "1,3", "--eval-db", eval_db.to_str().unwrap()]);
    assert_eq!(report["metrics"]["hit@1"].as_f64(), Some(1.0), "{report}");
    assert!(report["metrics"]["all@3"].is_number() && report["metrics"]["mrr"].is_number() && report["by_kind"]["fact"].is_object());
}

/// Files crafted to reach the parsers' date arithmetic and byte slicing (each once a panic,
/// exit 101): every one is refused with exit 3, naming the JSON path of the bad record.
#[test]
fn crafted_files_exit_3_naming_the_record() {
    let bank = Bank::new();
    let turns = |n: usize| (0..n).map(|i| format!(r#"{{"query": "turn {i}"}}"#)).collect::<Vec<_>>().join(",");
    let cases = [
        ("memorybank", r#"{"Ann": {"history": {"2023-04-28": [{"query": "hi", "last_recall_date": "2023-04-2８"}]}}}"#.to_string(), r#"$["Ann"].history["2023-04-28"][0].last_recall_date"#.to_string()),
        ("memorybank", format!(r#"{{"Ann": {{"history": {{"+262142-12-31": [{}]}}}}}}"#, turns(721)), r#"$["Ann"].history["+262142-12-31"][720]"#.to_string()),
        // Parsed, but in the future: refused by validation before anything is written.
        ("memorybank", r#"{"Ann": {"history": {"+262142-12-31": [{"query": "hi"}]}}}"#.to_string(), r#"$["Ann"].history["+262142-12-31"][0]"#.to_string()),
        ("memorybank", r#"{"Ann": {"history": {"2023-04-28": [{"query": "hi", "last_recall_date": "+262142-12-31"}]}}}"#.to_string(), r#"$["Ann"].history["2023-04-28"][0]"#.to_string()),
        (
            "locomo",
            format!(
                r#"[{{"sample_id": "s", "conversation": {{"session_1": [{}], "session_1_date_time": "11:59 pm on 31 December, +262142"}}}}]"#,
                (0..61).map(|i| format!(r#"{{"speaker": "A", "dia_id": "D1:{i}", "text": "t"}}"#)).collect::<Vec<_>>().join(",")
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
