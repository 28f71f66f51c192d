//! The runners on tiny fixtures written here, with the hashing test embedder: the scoring
//! arithmetic is checked exactly. Each fixture is built so the ranks that matter are
//! certain (a question shares words with exactly one memory; other gold items are found
//! only because every memory of a small user is returned).

#![allow(missing_docs)]

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use chrono::{TimeZone, Utc};
use membank_embed::HashEmbedder;
use membank_engine::core::ManualClock;
use membank_engine::{Engine, EngineConfig};
use membank_eval::memorybank::{Lang, MemoryBankRun};
use membank_eval::{CachingEmbedder, locomo, longmemeval, memorybank};
use membank_store::SqliteStore;

mod importance;
mod simulate;

struct Fixture {
    engine: Engine,
    dir: tempfile::TempDir,
}

fn fixture() -> Fixture {
    let dir = tempfile::tempdir().unwrap();
    let store = Arc::new(SqliteStore::open(dir.path().join("eval.db")).unwrap());
    let clock = Arc::new(ManualClock::new(Utc.with_ymd_and_hms(2024, 1, 1, 0, 0, 0).unwrap()));
    let embedder = Arc::new(CachingEmbedder::new(Arc::new(HashEmbedder::new(256))));
    let engine = Engine::new(store, embedder, clock, EngineConfig::default()).unwrap();
    Fixture { engine, dir }
}

impl Fixture {
    fn write(&self, name: &str, text: &str) -> PathBuf {
        let path = self.dir.path().join(name);
        std::fs::write(&path, text).unwrap();
        path
    }
}

fn close(metrics: &BTreeMap<String, f64>, name: &str, expect: f64) {
    let got = metrics.get(name).copied().unwrap_or(f64::NAN);
    assert!((got - expect).abs() < 1e-12, "{name}: got {got}, expected {expect} in {metrics:?}");
}

fn quiet(_: &str, _: usize, _: usize) {}

const BANK: &str = r#"{
  " Ann ": {"name": "Ann", "history": {
    "2023-04-27": [{"query": "zebra violin harbor", "response": "ok"}, {"query": "quartz meadow lantern", "response": "ok"}],
    "2023-04-28": [{"query": "copper tulip glacier", "response": "ok"}, {"query": "saffron kettle orbit", "response": "ok"}]}},
  "Bo": {"name": "Bo", "history": {
    "2023-05-01": [{"query": "marble falcon prism", "response": "ok"}, {"query": "velvet canyon drum", "response": "ok"}]}}
}"#;

const QUESTIONS: &str = "{\"Ann\": [\"zebra violin harbor?\", \"quartz meadow lantern?\", \"anything at all\"]}\n{\"Bo\": [\"marble falcon prism?\"]}\n";

const GOLD: &str = r#"{"user": " Ann ", "qid": "en-Ann-0", "evidence": [{"date": "2023-04-27", "turn": 0}], "kind": "fact"}
{"user": " Ann ", "qid": "en-Ann-1", "evidence": [{"date": "2023-04-27", "turn": 1}, {"date": "2023-04-28", "turn": 1}], "kind": "multi"}
{"user": " Ann ", "qid": "en-Ann-2", "evidence": [], "kind": "unanswerable"}
{"user": "Bo", "qid": "en-Bo-0", "evidence": [{"date": "2023-05-01", "turn": 1}], "kind": "fact"}
"#;

#[test]
fn memorybank_scores_hit_all_and_mrr_exactly() {
    let f = fixture();
    let run = MemoryBankRun {
        bank: f.write("memory_bank_en.json", BANK),
        questions: f.write("probing_questions_en.jsonl", QUESTIONS),
        gold: Some(f.write("gold.jsonl", GOLD)),
        lang: Lang::En,
        ks: vec![1, 4],
        now: None,
    };
    let report = memorybank::run(&f.engine, &run, &quiet).unwrap();
    // Ann-0: gold at rank 1. Ann-1: one of two gold at rank 1, the other among Ann's 4 turns.
    // Bo-0: the question matches Bo's other turn, so the gold turn is rank 2 of 2.
    assert_eq!(report.n, 3);
    close(&report.metrics, "hit@1", 2.0 / 3.0);
    close(&report.metrics, "all@1", 1.0 / 3.0);
    close(&report.metrics, "hit@4", 1.0);
    close(&report.metrics, "all@4", 1.0);
    close(&report.metrics, "mrr", (1.0 + 1.0 + 0.5) / 3.0);
    assert_eq!(report.metrics.len(), 5, "one key per k for hit and all, and mrr: {:?}", report.metrics);
    close(&report.by_kind["fact"], "hit@1", 0.5);
    close(&report.by_kind["fact"], "n", 2.0);
    close(&report.by_kind["multi"], "all@1", 0.0);
    let unanswerable = report.questions.iter().find(|q| q.qid == "en-Ann-2").unwrap();
    assert!(!unanswerable.scored);
    let bo = report.questions.iter().find(|q| q.qid == "en-Bo-0").unwrap();
    assert_eq!(bo.first_rank, Some(2));
    assert_eq!(bo.user, "Bo");
    // The JSON shape acceptance relies on.
    let json = serde_json::to_value(&report).unwrap();
    assert!(
        json["metrics"]["hit@4"].is_number() && json["by_kind"]["fact"].is_object() && json["questions"].is_array()
    );

    // A second run reuses the imported bank.
    let again = memorybank::run(&f.engine, &run, &quiet).unwrap();
    assert_eq!((again.import.imported, again.import.skipped), (0, 6));
    assert_eq!(again.metrics, report.metrics);
}

#[test]
fn memorybank_gold_errors_name_the_line() {
    let f = fixture();
    let mut run = MemoryBankRun {
        bank: f.write("memory_bank_en.json", BANK),
        questions: f.write("probing_questions_en.jsonl", QUESTIONS),
        gold: Some(f.write("gold.jsonl", "{\"user\": \"Bo\", \"qid\": \"en-Bo-9\", \"evidence\": []}\n")),
        lang: Lang::En,
        ks: vec![1],
        now: None,
    };
    let err = memorybank::run(&f.engine, &run, &quiet).unwrap_err().to_string();
    assert!(err.contains("gold.jsonl:1") && err.contains("en-Bo-9"), "{err}");
    run.gold = Some(f.write("gold2.jsonl", "\n{not json\n"));
    let err = memorybank::run(&f.engine, &run, &quiet).unwrap_err().to_string();
    assert!(err.contains("gold2.jsonl:2"), "{err}");
    // Without gold the questions run and nothing is scored.
    run.gold = None;
    let report = memorybank::run(&f.engine, &run, &quiet).unwrap();
    assert_eq!((report.n, report.questions.len()), (0, 4));
    assert!(report.metrics.is_empty());
}

const LOCOMO: &str = r#"[{"sample_id": "conv-1", "conversation": {"speaker_a": "Ann", "speaker_b": "Bo",
  "session_1_date_time": "1:56 pm on 8 May, 2023",
  "session_1": [{"speaker": "Ann", "dia_id": "D1:1", "text": "zebra violin harbor"}, {"speaker": "Bo", "dia_id": "D1:2", "text": "quartz meadow lantern"}],
  "session_2_date_time": "10:00 am on 9 June, 2023",
  "session_2": [{"speaker": "Ann", "dia_id": "D2:1", "text": "copper tulip glacier"}, {"speaker": "Bo", "dia_id": "D2:2", "text": "saffron kettle orbit"}]},
  "qa": [
    {"question": "zebra violin harbor?", "answer": "x", "evidence": ["D1:1"], "category": 4},
    {"question": "quartz meadow lantern?", "answer": "x", "evidence": ["D1:2; D2:1"], "category": 1},
    {"question": "anything?", "adversarial_answer": "x", "evidence": ["D9:9"], "category": 5},
    {"question": "nothing?", "answer": "x", "evidence": [], "category": 3}
  ]}]"#;

#[test]
fn locomo_recall_is_averaged_per_question_and_category() {
    let f = fixture();
    let run = locomo::LocomoRun { data: f.write("locomo.json", LOCOMO), ks: vec![1, 4], conversations: None };
    let report = locomo::run(&f.engine, &run, &quiet).unwrap();
    assert_eq!(report.n, 4);
    // 1 + 0.5 + 1 (unresolvable evidence dropped: no evidence counts 1) + 1 (no evidence).
    close(&report.metrics, "recall@1", 3.5 / 4.0);
    close(&report.metrics, "recall@4", 1.0);
    close(&report.by_category["1"], "recall@1", 0.5);
    close(&report.by_category["4"], "recall@1", 1.0);
    close(&report.by_category["5"], "n", 1.0);
    assert_eq!(report.questions[1].evidence, ["D1:2", "D2:1"]);
    let json = serde_json::to_value(&report).unwrap();
    assert!(json["metrics"]["recall@1"].is_number() && json["by_category"]["1"]["recall@4"].is_number());
}

fn lme_question(id: &str, sessions: &[(&str, &str, bool)], question: &str) -> serde_json::Value {
    serde_json::json!({
        "question_id": id, "question_type": "multi-session", "question": question, "answer": "x",
        "question_date": "2023/05/30 (Tue) 23:40",
        "haystack_session_ids": sessions.iter().map(|s| s.0).collect::<Vec<_>>(),
        "haystack_dates": sessions.iter().enumerate().map(|(i, _)| format!("2023/05/{:02} (Sat) 10:00", 20 + i)).collect::<Vec<_>>(),
        "haystack_sessions": sessions.iter().map(|s| serde_json::json!([
            {"role": "user", "content": s.1, "has_answer": s.2}, {"role": "assistant", "content": "sure"}])).collect::<Vec<_>>(),
        "answer_session_ids": sessions.iter().filter(|s| s.0.starts_with("answer")).map(|s| s.0).collect::<Vec<_>>(),
    })
}

#[test]
fn longmemeval_follows_the_official_protocol() {
    let f = fixture();
    let data = serde_json::json!([
        // Gold session ranked first.
        lme_question(
            "q1",
            &[
                ("answer_a", "zebra violin harbor", true),
                ("f1", "quartz meadow lantern", false),
                ("f2", "copper tulip glacier", false)
            ],
            "zebra violin harbor?"
        ),
        // Two gold sessions; the question finds one of them.
        lme_question(
            "q2",
            &[
                ("answer_b", "marble falcon prism", true),
                ("answer_c", "velvet canyon drum", true),
                ("f3", "saffron kettle orbit", false)
            ],
            "marble falcon prism?"
        ),
        // Abstention: skipped.
        lme_question("q3_abs", &[("answer_d", "zebra", true)], "zebra?"),
        // No user-side gold turn: skipped.
        lme_question("q4", &[("answer_e", "zebra", false)], "zebra?"),
    ]);
    let run = longmemeval::LongMemEvalRun { data: f.write("lme.json", &data.to_string()), limit: None, half: None };
    let report = longmemeval::run(&f.engine, &run, &quiet).unwrap();
    assert_eq!((report.n, report.skipped), (2, 2));
    let session = &report.metrics.session;
    close(session, "recall_any@1", 1.0);
    close(session, "recall_all@1", 0.5);
    close(session, "recall_all@3", 1.0);
    close(session, "ndcg_any@1", 1.0);
    close(&report.metrics.turn, "recall_all@1", 0.5);
    close(&report.by_type["multi-session"].session, "n", 2.0);
    assert_eq!(report.questions[0].top_sessions[0], "answer_a");
    let json = serde_json::to_value(&report).unwrap();
    assert!(
        json["metrics"]["session"]["recall_all@5"].is_number() && json["metrics"]["turn"]["ndcg_any@5"].is_number()
    );
}

#[test]
fn missing_files_are_named() {
    let f = fixture();
    let run = locomo::LocomoRun {
        data: Path::new("/nonexistent/locomo.json").to_path_buf(),
        ks: vec![5],
        conversations: None,
    };
    let err = locomo::run(&f.engine, &run, &quiet).unwrap_err().to_string();
    assert!(err.contains("/nonexistent/locomo.json"), "{err}");
}

#[test]
fn locomo_scores_only_the_chosen_conversations_and_imports_them_all() {
    let f = fixture();
    // Two conversations: the second is the first under another id, with one question.
    let first: serde_json::Value = serde_json::from_str(LOCOMO).unwrap();
    let mut second = first[0].clone();
    second["sample_id"] = "conv-2".into();
    second["qa"] =
        serde_json::json!([{"question": "copper tulip glacier?", "answer": "x", "evidence": ["D2:1"], "category": 2}]);
    let data = f.write("locomo.json", &serde_json::json!([first[0], second]).to_string());
    let run = |conversations: Option<&str>| {
        locomo::run(
            &f.engine,
            &locomo::LocomoRun {
                data: data.clone(),
                ks: vec![1],
                conversations: conversations.map(|c| c.parse().unwrap()),
            },
            &quiet,
        )
    };

    let held = run(Some("1")).unwrap();
    assert_eq!(
        (held.n, held.import.users, held.conversations),
        (1, 2, Some([1, 1])),
        "both conversations imported, one scored"
    );
    assert!(held.questions.iter().all(|q| q.sample_id == "conv-2"));
    assert_eq!(held.by_category.keys().collect::<Vec<_>>(), ["2"]);
    let tune = run(Some("0-0")).unwrap();
    assert_eq!(tune.n, 4);
    assert!(tune.questions.iter().all(|q| q.sample_id == "conv-1"));
    let all = run(None).unwrap();
    assert_eq!((all.n, all.conversations), (5, None));
    assert_eq!(serde_json::to_value(&held).unwrap()["conversations"], serde_json::json!([1, 1]));

    for beyond in ["2", "1-5"] {
        match run(Some(beyond)) {
            Err(membank_eval::EvalError::Selection(reason)) => {
                assert!(reason.contains("it has 2, positions 0-1"), "{reason}")
            }
            other => panic!("{beyond}: expected a selection error, got {other:?}"),
        }
    }
}

#[test]
fn longmemeval_halves_split_the_questions_by_position() {
    let f = fixture();
    let data = serde_json::json!([
        lme_question(
            "q1",
            &[("answer_a", "zebra violin harbor", true), ("f1", "quartz meadow lantern", false)],
            "zebra violin harbor?"
        ),
        lme_question(
            "q2",
            &[("answer_b", "marble falcon prism", true), ("f2", "saffron kettle orbit", false)],
            "marble falcon prism?"
        ),
        lme_question("q3_abs", &[("answer_d", "zebra", true)], "zebra?"),
    ]);
    let path = f.write("lme.json", &data.to_string());
    let run = |limit: Option<usize>, half: Option<&str>| {
        longmemeval::run(
            &f.engine,
            &longmemeval::LongMemEvalRun { data: path.clone(), limit, half: half.map(|h| h.parse().unwrap()) },
            &quiet,
        )
    };
    // Three questions: the first half is q1 and q2, the second q3 (an abstention, skipped).
    let first = run(None, Some("1")).unwrap();
    assert_eq!((first.n, first.skipped, first.half), (2, 0, Some(1)));
    let second = run(None, Some("2")).unwrap();
    assert_eq!((second.n, second.skipped, second.half), (0, 1, Some(2)));
    assert_eq!(second.import.users, 2, "every haystack is imported whichever half is asked");
    let limited = run(Some(2), Some("2")).unwrap();
    assert_eq!(limited.questions.iter().map(|q| q.question_id.as_str()).collect::<Vec<_>>(), ["q2"]);
    match run(Some(1), Some("2")) {
        Err(membank_eval::EvalError::Selection(reason)) => {
            assert!(reason.contains("half 2") && reason.contains("there are 1 within the limit"), "{reason}")
        }
        other => panic!("expected a selection error, got {other:?}"),
    }
    assert_eq!(run(None, None).unwrap().half, None);
}
