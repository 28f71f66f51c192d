//! `membank eval importance` through the real binary on a labelled set in miniature:
//! AUC per set and half from the lexical rules, the local probe and a chat model (a stub
//! server on a loopback port that rates by the prompt it is sent), unusable replies asked
//! again and then counted as unrated, a failing model ending the run, the scores file, and
//! bad flags, labels and data refused with a clear error.

use std::path::{Path, PathBuf};

use membank_llm::stub::{Recorded, Reply, StubServer};
use serde_json::Value;

use crate::{Bank, write};

/// Data and labels: one MemoryBank user (a tuning user: the first eight are) with four
/// labelled turns, two critical, an empty Chinese bank's labels, and one LoCoMo
/// conversation (position 0: tuning) with three labelled lines, one critical.
fn labelled(bank: &Bank) -> (PathBuf, PathBuf) {
    let data = bank.path("data");
    let labels = bank.path("labels");
    for dir in [data.join("memorybank"), data.join("locomo"), labels.clone()] {
        std::fs::create_dir_all(dir).unwrap();
    }
    write(
        &data.join("memorybank/memory_bank_en.json"),
        br#"{"Ann": {"history": {"2023-04-27": [
            {"query": "I adopted a grey cat named Miso", "response": "What a lovely name for a cat."},
            {"query": "Thanks, that was helpful!", "response": "You're welcome."},
            {"query": "My sister is getting married in June", "response": "Congratulations to her!"},
            {"query": "Hi there, how are you?", "response": "Fine, thank you."}]}}}"#,
    );
    write(
        &data.join("memorybank/memory_bank_cn.json"),
        r#"{"安": {"history": {"2023-04-27": [{"query": "我养了一只猫", "response": "真好。"}]}}}"#.as_bytes(),
    );
    write(
        &data.join("locomo/locomo10.json"),
        br#"[{"sample_id": "conv-1", "conversation": {"speaker_a": "A", "speaker_b": "B",
            "session_1_date_time": "1:56 pm on 8 May, 2023",
            "session_1": [{"speaker": "A", "dia_id": "D1:1", "text": "I started learning the piano this spring"},
                          {"speaker": "B", "dia_id": "D1:2", "text": "Nice weather today"},
                          {"speaker": "A", "dia_id": "D1:3", "text": "Haha, good one"}]}}]"#,
    );
    let en: String = [(0, 1), (1, 0), (2, 1), (3, 0)]
        .iter()
        .map(|(turn, critical)| {
            format!("{{\"user\": \"Ann\", \"date\": \"2023-04-27\", \"turn\": {turn}, \"critical\": {critical}}}\n")
        })
        .collect();
    write(&labels.join("memorybank_en.jsonl"), en.as_bytes());
    write(&labels.join("memorybank_cn.jsonl"), b"");
    write(
        &labels.join("locomo.jsonl"),
        br#"{"sample": "conv-1", "dia_id": "D1:1", "critical": 1}
{"sample": "conv-1", "dia_id": "D1:2", "critical": 0}
{"sample": "conv-1", "dia_id": "D1:3", "critical": 0}
"#,
    );
    (data, labels)
}

fn args<'a>(data: &'a Path, labels: &'a Path, rest: &[&'a str]) -> Vec<&'a str> {
    let mut all = vec!["eval", "importance", "--data", data.to_str().unwrap(), "--labels", labels.to_str().unwrap()];
    all.extend_from_slice(rest);
    all
}

fn with_llm(bank: &Bank, stub: &StubServer, args: &[&str]) -> std::process::Output {
    bank.command()
        .env("MEMBANK_LLM_BASE_URL", stub.base_url())
        .env("MEMBANK_LLM_MODEL", "stub-model")
        .args(args)
        .output()
        .unwrap()
}

/// Rates each quoted memory of the request by its words: .9 for a cat, a sister or a
/// piano, .1 for anything else.
fn rating_reply(request: &Recorded) -> Reply {
    let prompt = request.prompt_text();
    let ratings: Vec<String> = prompt
        .split("<memory id=\"M")
        .skip(1)
        .map(|block| {
            let id: String = block.chars().take_while(char::is_ascii_digit).collect();
            let text = block.split("</memory>").next().unwrap_or("");
            let importance = if ["cat", "sister", "piano"].iter().any(|w| text.contains(w)) { 0.9 } else { 0.1 };
            format!("{{\"id\": \"M{id}\", \"importance\": {importance}}}")
        })
        .collect();
    Reply::text(&format!("{{\"ratings\": [{}]}}", ratings.join(", ")))
}

fn row<'a>(report: &'a Value, set: &str) -> &'a Value {
    report["rows"].as_array().unwrap().iter().find(|r| r["set"] == set).unwrap_or_else(|| panic!("no {set}: {report}"))
}

#[test]
fn the_lexical_rules_are_scored_per_set_and_half_and_the_scores_file_has_every_turn() {
    let bank = Bank::new();
    let (data, labels) = labelled(&bank);
    let scores = bank.path("scores.jsonl");
    // A longer file from an earlier run is replaced whole.
    write(&scores, "{\"stale\": true}\n".repeat(50).as_bytes());
    let report = bank.json(&args(&data, &labels, &["--estimator", "lexical", "--scores", scores.to_str().unwrap()]));
    assert_eq!(report["scored"], 7, "{report}");
    assert_eq!(report["estimators"], serde_json::json!(["lexical"]));
    let en = row(&report, "memorybank_en");
    assert_eq!((en["half"].as_str(), en["turns"].as_u64(), en["critical"].as_u64()), (Some("tune"), Some(4), Some(2)));
    let auc = en["auc"]["lexical"].as_f64().unwrap();
    assert!((0.0..=1.0).contains(&auc), "{en}");
    assert_eq!(en["unrated"]["lexical"], 0);
    // No Chinese labels, no LongMemEval file: no rows for them, and no LLM section.
    assert_eq!(report["rows"].as_array().unwrap().len(), 2, "{report}");
    assert!(report["llm"].is_null());
    let lines: Vec<Value> =
        std::fs::read_to_string(&scores).unwrap().lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(lines.len(), 7);
    assert!(lines.iter().all(|l| l["lexical"].as_f64().is_some() && l["half"] == "tune"), "{lines:?}");
    assert_eq!(lines.iter().filter(|l| l["critical"] == 1).count(), 3);

    // The text table names the columns.
    let text = bank.ok(&args(&data, &labels, &["--estimator", "lexical"]));
    assert!(text.contains("memorybank_en") && text.contains("lexical") && text.contains("7 turns"), "{text}");
}

#[test]
fn the_probe_reads_every_turn_with_the_local_model() {
    let bank = Bank::new();
    let (data, labels) = labelled(&bank);
    let report = bank.json(&args(&data, &labels, &["--estimator", "probe,lexical,probe"]));
    assert_eq!(report["estimators"], serde_json::json!(["probe", "lexical"]), "named once each, in the order given");
    for set in ["memorybank_en", "locomo"] {
        let r = row(&report, set);
        assert_eq!(r["unrated"]["probe"], 0, "{r}");
        assert!(r["auc"]["probe"].as_f64().is_some(), "{r}");
    }
    // The cat and the sister are the English user's facts; the probe ranks them above the
    // thanks and the greeting (as the shipped probe's own tests demand of such texts).
    assert_eq!(row(&report, "memorybank_en")["auc"]["probe"], 1.0, "{report}");
}

#[test]
fn a_chat_model_rates_one_persons_turns_per_call_with_the_engines_prompt() {
    let bank = Bank::new();
    let (data, labels) = labelled(&bank);
    let stub = StubServer::with(rating_reply);
    let out = with_llm(&bank, &stub, &args(&data, &labels, &["--json", "--estimator", "llm"]));
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(row(&report, "memorybank_en")["auc"]["llm"], 1.0, "{report}");
    assert_eq!(row(&report, "locomo")["auc"]["llm"], 1.0, "{report}");
    assert_eq!(report["llm"]["model"], "stub-model");
    assert_eq!(report["llm"]["prompt"], "importance@v1");
    assert_eq!((report["llm"]["calls"].as_u64(), report["llm"]["unrated"].as_u64()), (Some(2), Some(0)));
    let requests = stub.requests();
    assert_eq!(requests.len(), 2);
    // One person per call: Ann's four turns, named; then the conversation's three lines.
    assert!(requests[0].system().contains("Ann") && requests[0].prompt_text().contains("Miso"));
    assert!(!requests[0].prompt_text().contains("piano"));
    assert!(requests[1].prompt_text().contains("piano") && !requests[1].prompt_text().contains("Miso"));
}

#[test]
fn an_unusable_reply_is_asked_again_then_counted_as_unrated() {
    let bank = Bank::new();
    let (data, labels) = labelled(&bank);
    // The first call of each batch gets prose, the second a rating.
    let mut calls = 0;
    let stub = StubServer::with(move |request| {
        calls += 1;
        if calls % 2 == 1 { Reply::text("I think these are all quite important!") } else { rating_reply(request) }
    });
    let out = with_llm(&bank, &stub, &args(&data, &labels, &["--json", "--estimator", "llm,lexical"]));
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!((report["llm"]["calls"].as_u64(), report["llm"]["unrated"].as_u64()), (Some(4), Some(0)), "{report}");
    assert_eq!(row(&report, "memorybank_en")["auc"]["llm"], 1.0);

    // Never usable: every turn unrated, no AUC, the other estimator still scored.
    let stub = StubServer::with(|_| Reply::text("{\"ratings\": [{\"id\": \"M99\", \"importance\": 2}]}"));
    let out = with_llm(&bank, &stub, &args(&data, &labels, &["--json", "--estimator", "llm,lexical"]));
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!((report["llm"]["calls"].as_u64(), report["llm"]["unrated"].as_u64()), (Some(4), Some(7)), "{report}");
    let en = row(&report, "memorybank_en");
    assert!(en["auc"]["llm"].is_null() && en["auc"]["lexical"].is_number(), "{en}");
    assert_eq!(en["unrated"]["llm"], 4);
}

#[test]
fn a_failing_or_missing_chat_model_ends_the_run_with_its_exit_code() {
    let bank = Bank::new();
    let (data, labels) = labelled(&bank);
    // An earlier run's scores survive a run that fails.
    let scores = bank.path("scores.jsonl");
    let earlier = "{\"set\": \"memorybank_en\", \"llm\": 0.5}\n{\"set\": \"locomo\", \"llm\": 0.25}\n";
    write(&scores, earlier.as_bytes());
    let stub = StubServer::with(|_| Reply::error(401, "bad key"));
    let out =
        with_llm(&bank, &stub, &args(&data, &labels, &["--estimator", "llm", "--scores", scores.to_str().unwrap()]));
    assert_eq!(out.status.code(), Some(9), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(stub.requests().len(), 1, "a refused key is not asked again for every batch");
    assert_eq!(std::fs::read_to_string(&scores).unwrap(), earlier);

    // A scores file that cannot be written fails before the first call.
    let stub = StubServer::with(rating_reply);
    let nowhere = bank.path("no-such-dir/scores.jsonl");
    let out =
        with_llm(&bank, &stub, &args(&data, &labels, &["--estimator", "llm", "--scores", nowhere.to_str().unwrap()]));
    assert_eq!(out.status.code(), Some(1), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(String::from_utf8_lossy(&out.stderr).contains("cannot write"));
    assert!(stub.requests().is_empty(), "no model call before the scores file is open");

    let out = bank
        .command()
        .env_remove("MEMBANK_LLM_BASE_URL")
        .env_remove("MEMBANK_LLM_MODEL")
        .args(args(&data, &labels, &["--estimator", "llm"]))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(8), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(String::from_utf8_lossy(&out.stderr).contains("MEMBANK_LLM_BASE_URL"));
}

#[test]
fn bad_flags_labels_and_data_are_refused_with_a_clear_error() {
    let bank = Bank::new();
    let (data, labels) = labelled(&bank);
    let fails = |extra: &[&str], code: Option<i32>, says: &str| {
        let out = bank.output(&args(&data, &labels, extra));
        let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
        assert_eq!(out.status.code(), code, "{extra:?}: {stderr}");
        assert!(stderr.contains(says), "{extra:?} should say {says:?}: {stderr}");
    };
    // Flags.
    fails(&["--estimator", "oracle"], Some(2), "oracle");
    fails(&["--estimator", ""], Some(2), "estimator");
    fails(&["--half", "both"], Some(2), "both");
    fails(&["--sample", "0"], Some(2), "sample");
    fails(&["--sample=-3"], Some(2), "sample");
    fails(&["--sample", "100001"], Some(2), "sample");
    // The chosen half has no labelled turn (every user here is a tuning user).
    fails(&["--estimator", "lexical", "--half", "report"], Some(2), "no labelled turn");
    // Labels: malformed, naming a turn the data lacks, hostile keys, or missing.
    let en = labels.join("memorybank_en.jsonl");
    let good = std::fs::read(&en).unwrap();
    write(&en, b"{\"user\": \"Ann\", \"date\": \"2023-04-27\", \"turn\": 0, \"critical\": 1}\n{not json\n");
    fails(&["--estimator", "lexical"], Some(3), "line 2");
    write(&en, b"{\"user\": \"Ann\", \"date\": \"2023-04-27\", \"turn\": 9, \"critical\": 1}\n");
    fails(&["--estimator", "lexical"], Some(3), "no turn");
    write(&en, b"{\"user\": \"../../etc/passwd\", \"date\": \"'; DROP TABLE memories; --\", \"turn\": 0}\n");
    fails(&["--estimator", "lexical"], Some(3), "no turn");
    write(&en, &[0xff, 0xfe, 0x00, b'\n']);
    fails(&["--estimator", "lexical"], Some(3), "memorybank_en.jsonl");
    std::fs::remove_file(&en).unwrap();
    fails(&["--estimator", "lexical"], Some(4), "cannot read");
    write(&en, &good);
    // Empty labels everywhere: nothing to score.
    for file in ["memorybank_en.jsonl", "locomo.jsonl"] {
        write(&labels.join(file), b"");
    }
    fails(&["--estimator", "lexical"], Some(2), "no labelled turn");
    // Data: a LongMemEval file that is not there, then a bank that is not JSON.
    write(&labels.join("locomo.jsonl"), b"");
    write(
        &labels.join("longmemeval.jsonl"),
        b"{\"question_id\": \"q1\", \"session_id\": \"s1\", \"turn\": 0, \"critical\": 1}\n",
    );
    let missing = bank.path("nowhere.json");
    fails(&["--estimator", "lexical", "--longmemeval", missing.to_str().unwrap()], Some(4), "nowhere.json");
    write(&data.join("memorybank/memory_bank_en.json"), b"[1, 2");
    fails(&["--estimator", "lexical"], Some(3), "memory_bank_en.json");
}
