//! `membank import` and `membank eval` through the real binary: a small bank imports, a
//! re-import adds nothing, a bad file exits 3 naming the record, and the MemoryBank
//! runner prints the documented JSON shape.

use crate::Bank;

const BANK: &str = r#"{" Ann ": {"name": "Ann", "history": {
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
