//! `simulate` on small synthetic benchmarks written here, with the hashing embedder: what
//! each policy keeps, the baselines at equal storage, evidence found through a merged
//! near-duplicate, the report's shape, the plot, and bad input.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use membank_embed::HashEmbedder;
use membank_engine::core::DecisionMode;
use membank_engine::{Embedder, EngineConfig};
use membank_eval::EvalError;
use membank_eval::memorybank::Lang;
use membank_eval::simulate::{self, Benchmark, SimPolicy, SimulateReport, SimulateRun};

fn quiet(_: &str, _: usize, _: usize) {}

fn embedder() -> Arc<dyn Embedder> {
    Arc::new(HashEmbedder::new(256))
}

/// Two users over five calendar days (Ann is quiet on 04-29). Ann says the same thing on
/// 04-27 and 04-30 (a near-duplicate the maintenance merges); every other turn has words of
/// its own, so each question matches exactly one turn.
const BANK: &str = r#"{
  " Ann ": {"name": "Ann", "history": {
    "2023-04-27": [{"query": "zebra violin harbor", "response": "noted"}, {"query": "quartz meadow lantern", "response": "fine"}],
    "2023-04-28": [{"query": "copper tulip glacier", "response": "sure"}, {"query": "saffron kettle orbit", "response": "right"}],
    "2023-04-30": [{"query": "zebra violin harbor", "response": "noted"}, {"query": "amber falcon ridge", "response": "okay"}],
    "2023-05-01": [{"query": "cobalt pepper tundra", "response": "yes"}, {"query": "walnut comet bridge", "response": "good"}]}},
  "Bo": {"name": "Bo", "history": {
    "2023-04-27": [{"query": "marble falcon prism", "response": "hm"}],
    "2023-04-28": [{"query": "velvet canyon drum", "response": "hm"}],
    "2023-04-29": [{"query": "ivory spruce beacon", "response": "hm"}],
    "2023-04-30": [{"query": "onyx lagoon whistle", "response": "hm"}],
    "2023-05-01": [{"query": "scarlet mosaic harvest", "response": "hm"}]}}
}"#;

const QUESTIONS: &str = "{\"Ann\": [\"zebra violin harbor?\", \"quartz meadow lantern?\", \"walnut comet bridge?\"]}\n{\"Bo\": [\"marble falcon prism?\", \"scarlet mosaic harvest?\"]}\n";

const GOLD: &str = r#"{"user": " Ann ", "qid": "en-Ann-0", "evidence": [{"date": "2023-04-27", "turn": 0}], "kind": "fact"}
{"user": " Ann ", "qid": "en-Ann-1", "evidence": [{"date": "2023-04-27", "turn": 1}], "kind": "fact"}
{"user": " Ann ", "qid": "en-Ann-2", "evidence": [{"date": "2023-05-01", "turn": 1}], "kind": "recent"}
{"user": "Bo", "qid": "en-Bo-0", "evidence": [{"date": "2023-04-27", "turn": 0}], "kind": "fact"}
{"user": "Bo", "qid": "en-Bo-1", "evidence": [{"date": "2023-05-01", "turn": 0}], "kind": "recent"}
"#;

const LOCOMO: &str = r#"[{"sample_id": "conv-1", "conversation": {"speaker_a": "Ann", "speaker_b": "Bo",
  "session_1_date_time": "1:56 pm on 8 May, 2023",
  "session_1": [{"speaker": "Ann", "dia_id": "D1:1", "text": "zebra violin harbor"}, {"speaker": "Bo", "dia_id": "D1:2", "text": "quartz meadow lantern"}],
  "session_2_date_time": "10:00 am on 12 May, 2023",
  "session_2": [{"speaker": "Ann", "dia_id": "D2:1", "text": "copper tulip glacier"}, {"speaker": "Bo", "dia_id": "D2:2", "text": "saffron kettle orbit", "blip_caption": "a photo of a kettle"}]},
  "qa": [
    {"question": "zebra violin harbor?", "answer": "x", "evidence": ["D1:1"], "category": 4},
    {"question": "quartz meadow lantern and copper tulip glacier?", "answer": "x", "evidence": ["D1:2; D2:1"], "category": 1},
    {"question": "nothing?", "answer": "x", "evidence": [], "category": 3}
  ]}]"#;

struct Data {
    dir: tempfile::TempDir,
}

impl Data {
    fn new() -> Self {
        let data = Data { dir: tempfile::tempdir().unwrap() };
        data.write("memory_bank_en.json", BANK);
        data.write("probing_questions_en.jsonl", QUESTIONS);
        data.write("gold.jsonl", GOLD);
        data.write("locomo10.json", LOCOMO);
        data
    }

    fn write(&self, name: &str, text: &str) -> PathBuf {
        let path = self.dir.path().join(name);
        std::fs::write(&path, text).unwrap();
        path
    }

    fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    fn memorybank(&self, policy: SimPolicy, threshold: Option<f64>, gap_days: u32) -> SimulateRun {
        SimulateRun {
            benchmark: Benchmark::MemoryBank {
                bank: self.path("memory_bank_en.json"),
                questions: self.path("probing_questions_en.jsonl"),
                gold: Some(self.path("gold.jsonl")),
                lang: Lang::En,
                users: None,
            },
            policy,
            base: base(),
            threshold,
            gap_days,
            ks: vec![1, 5],
        }
    }
}

/// The forgetting numbers these tests are computed for, set here rather than taken from
/// the defaults: a one-day unit and θ = ε = 0.05 (a fresh memory goes after about 3 days).
fn base() -> EngineConfig {
    let mut config = EngineConfig::default();
    config.forgetting.unit = chrono::Duration::days(1);
    config.forgetting.mode = DecisionMode::Threshold { theta: 0.05 };
    config.forgetting.fademem.epsilon = 0.05;
    config
}

fn run(run: &SimulateRun) -> SimulateReport {
    simulate::run(embedder(), run, &quiet).unwrap()
}

fn error(run: &SimulateRun) -> String {
    simulate::run(embedder(), run, &quiet).unwrap_err().to_string()
}

#[test]
fn policy_none_keeps_everything_and_equals_no_forgetting() {
    let data = Data::new();
    let report = run(&data.memorybank(SimPolicy::None, None, 0));
    assert_eq!(
        (report.storage.stored, report.storage.active, report.storage.archived, report.storage.superseded),
        (13, 13, 0, 0)
    );
    assert_eq!(report.storage.reduction, 0.0);
    assert_eq!(report.no_forgetting_active, 13);
    assert_eq!(report.questions.scored, 5);
    assert!(!report.quality.forgetting.is_empty());
    assert_eq!(report.quality.forgetting, report.quality.no_forgetting);
    assert_eq!(report.quality.fifo, report.quality.no_forgetting);
    assert_eq!(report.quality.lru, report.quality.no_forgetting);
    // Every question matches its turn's words exactly.
    assert_eq!(report.quality.no_forgetting["hit@5"], 1.0);
    // Five calendar days per user, quiet 04-29 of Ann's included; the timeline only grows.
    assert_eq!(report.timeline.len(), 5);
    assert_eq!(report.timeline.iter().map(|d| d.active).collect::<Vec<_>>(), [3, 6, 7, 10, 13]);
    assert!(report.timeline.iter().all(|d| d.active == d.no_forgetting_active && d.archived == 0));
}

#[test]
fn memorybank_policy_with_a_month_gap_archives_most_memories() {
    let data = Data::new();
    let report = run(&data.memorybank(SimPolicy::MemoryBank, None, 30));
    assert_eq!(report.storage.stored, 13);
    // Fewer than half still active (the rest archived, one merged into its near-duplicate).
    assert!(report.storage.reduction > 0.5, "{:?}", report.storage);
    assert!(report.storage.archived >= report.storage.active, "{:?}", report.storage);
    // Without forgetting everything is still there, and still found.
    assert_eq!(report.no_forgetting_active, 13);
    assert_eq!(report.quality.no_forgetting["hit@5"], 1.0);
    assert!(report.quality.forgetting["hit@5"] < 1.0, "{:?}", report.quality.forgetting);
    // 5 conversation days and 30 quiet ones; the gap starts after the longest conversation.
    assert_eq!(report.timeline.len(), 35);
    assert_eq!(report.gap_from_day, 5);
    assert_eq!(report.timeline.last().unwrap().conversing, 0);
    let breakdown = &report.breakdown["forgetting"];
    assert!(breakdown.evidence_held < breakdown.evidence, "{breakdown:?}");
}

#[test]
fn fifo_and_lru_keep_exactly_what_the_policy_ends_with() {
    let data = Data::new();
    // A short gap: some memories are archived, not all.
    let report = run(&data.memorybank(SimPolicy::MemoryBank, None, 3));
    let mut partial = false;
    for user in &report.users {
        assert_eq!(user.fifo_active, user.active, "{user:?}");
        assert_eq!(user.lru_active, user.active, "{user:?}");
        assert_eq!(user.no_forgetting_active, user.turns as u64, "{user:?}");
        partial |= user.active > 0 && user.active < user.turns as u64;
    }
    assert!(partial, "some user should keep part of its memories: {:?}", report.users);
    // fifo keeps the newest: the 05-01 turns, asked about in the "recent" questions.
    assert_eq!(report.breakdown["fifo"].by_kind.as_ref().unwrap()["recent"]["hit@1"], 1.0);
}

#[test]
fn a_merged_near_duplicate_is_found_through_its_survivor() {
    let data = Data::new();
    // θ = 0.001 archives nothing within five days: only the merge changes anything.
    let report = run(&data.memorybank(SimPolicy::MemoryBank, Some(0.001), 0));
    assert_eq!(
        (report.storage.stored, report.storage.archived, report.storage.superseded, report.storage.active),
        (13, 0, 1, 12)
    );
    // Ann-0's gold turn (04-27) was merged into its 04-30 copy: still held, still found.
    let breakdown = &report.breakdown["forgetting"];
    assert_eq!((breakdown.evidence, breakdown.evidence_held), (5, 5));
    assert_eq!(report.quality.forgetting["hit@1"], 1.0);
    assert_eq!(report.quality.forgetting["mrr"], 1.0);
    // Day 3 (04-30) is when the copy arrives and the merge happens.
    assert_eq!(report.timeline[3].superseded, 1);
    assert_eq!(report.timeline[2].superseded, 0);
}

#[test]
fn the_report_has_every_key_of_the_contract() {
    let data = Data::new();
    let report = run(&data.memorybank(SimPolicy::FadeMem, None, 2));
    let json = serde_json::to_value(&report).unwrap();
    assert_eq!(json["benchmark"], "memorybank");
    assert_eq!(json["policy"], "fademem");
    for key in ["stored", "active", "reduction"] {
        assert!(json["storage"][key].is_number(), "storage.{key} in {json}");
    }
    for key in ["forgetting", "no_forgetting", "fifo", "lru"] {
        assert!(
            json["quality"][key]["hit@5"].is_number() && json["quality"][key]["all@1"].is_number(),
            "quality.{key} in {json}"
        );
    }
    let timeline = json["timeline"].as_array().unwrap();
    assert_eq!(timeline.len(), 7);
    for day in timeline {
        for key in ["day", "active", "archived", "superseded"] {
            assert!(day[key].is_number(), "timeline {key} in {day}");
        }
    }
    assert_eq!(json["parameters"]["epsilon"], 0.05);
    assert_eq!(json["parameters"]["replay_k"], 5);
    assert!(json["users"][0]["fifo_active"].is_number());
}

#[test]
fn locomo_is_replayed_and_scored_by_recall() {
    let data = Data::new();
    let run_locomo = |samples: Option<Vec<usize>>| SimulateRun {
        benchmark: Benchmark::Locomo { data: data.path("locomo10.json"), samples },
        policy: SimPolicy::FadeMem,
        base: base(),
        threshold: Some(0.1),
        gap_days: 0,
        ks: vec![1, 10],
    };
    let report = run(&run_locomo(None));
    assert_eq!(report.benchmark, "locomo");
    assert_eq!(report.storage.stored, 4);
    // 8 May to 12 May, five calendar days.
    assert_eq!(report.timeline.len(), 5);
    assert_eq!(report.questions.scored, 3);
    assert_eq!(report.questions.main_metric, "recall@10");
    // Every memory is among the top 10 of a four-memory conversation; no evidence counts 1.
    assert_eq!(report.quality.no_forgetting["recall@10"], 1.0);
    let categories = report.breakdown["no_forgetting"].by_category.as_ref().unwrap();
    assert_eq!(categories["1"]["n"], 1.0);
    assert_eq!(report.parameters.epsilon, Some(0.1));

    let err = error(&run_locomo(Some(vec![0, 3])));
    assert!(err.contains("no conversation 3") && err.contains("holds 1"), "{err}");
}

#[test]
fn a_plot_is_written_as_svg() {
    let data = Data::new();
    let report = run(&data.memorybank(SimPolicy::MemoryBank, None, 4));
    let path = data.path("plots/sim.svg");
    simulate::plot(&report, &path).unwrap();
    let svg = std::fs::read_to_string(&path).unwrap();
    assert!(svg.starts_with("<svg") || svg.starts_with("<?xml"), "{}", &svg[..svg.len().min(200)]);
    assert!(svg.trim_end().ends_with("</svg>"));
    // Drawn, not empty: the lines of both runs and the axis and bar labels.
    assert!(
        svg.contains("<polyline") && svg.contains("<text") && svg.contains("no forgetting") && svg.contains("lru"),
        "{svg}"
    );

    // A path that cannot be written is a clear error naming it.
    let blocked = data.write("file", "x").join("sim.svg");
    let err = simulate::plot(&report, &blocked).unwrap_err().to_string();
    assert!(err.contains("sim.svg") && err.contains("cannot write the plot"), "{err}");
}

#[test]
fn without_gold_nothing_is_scored_and_the_report_says_so() {
    let data = Data::new();
    let mut sim = data.memorybank(SimPolicy::MemoryBank, None, 0);
    if let Benchmark::MemoryBank { gold, .. } = &mut sim.benchmark {
        *gold = None;
    }
    let report = run(&sim);
    assert_eq!(report.questions.scored, 0);
    assert!(report.quality.forgetting.is_empty() && report.quality.lru.is_empty());
    assert!(report.questions.note.as_deref().unwrap().contains("gold"), "{:?}", report.questions);
    assert_eq!(report.storage.stored, 13);
}

fn assert_invalid(result: Result<SimulateReport, EvalError>, needle: &str) {
    match result {
        Err(err @ EvalError::Engine(membank_engine::EngineError::Invalid(_))) => {
            assert!(err.to_string().contains(needle), "{err}")
        }
        Err(other) => panic!("expected invalid input about {needle}, got {other}"),
        Ok(_) => panic!("expected invalid input about {needle}"),
    }
}

#[test]
fn bad_input_is_refused_with_a_reason() {
    let data = Data::new();
    let go = |sim: &SimulateRun| simulate::run(embedder(), sim, &quiet);
    assert_invalid(go(&data.memorybank(SimPolicy::MemoryBank, Some(1.5), 0)), "strictly between 0 and 1");
    assert_invalid(go(&data.memorybank(SimPolicy::FadeMem, Some(0.0), 0)), "strictly between 0 and 1");
    assert_invalid(go(&data.memorybank(SimPolicy::None, Some(0.1), 0)), "policy none");
    assert_invalid(go(&data.memorybank(SimPolicy::MemoryBank, None, 3651)), "3650");
    let mut no_ks = data.memorybank(SimPolicy::MemoryBank, None, 0);
    no_ks.ks.clear();
    assert_invalid(go(&no_ks), "cut-offs");
    assert_eq!(
        "forget-all".parse::<SimPolicy>().unwrap_err().reason,
        "\"forget-all\" is not one of: memorybank, fademem, none"
    );

    // Files: missing, malformed, or a gold file for another bank; each error names the file.
    let mut sim = data.memorybank(SimPolicy::MemoryBank, None, 0);
    let Benchmark::MemoryBank { bank, .. } = &mut sim.benchmark else { unreachable!() };
    *bank = Path::new("/nonexistent/memory_bank_en.json").to_path_buf();
    let err = error(&sim);
    assert!(err.contains("/nonexistent/memory_bank_en.json"), "{err}");

    let mut sim = data.memorybank(SimPolicy::MemoryBank, None, 0);
    let Benchmark::MemoryBank { bank, .. } = &mut sim.benchmark else { unreachable!() };
    *bank = data.write("broken_bank.json", "{\"Ann\": {\"history\": ");
    let err = error(&sim);
    assert!(err.contains("broken_bank.json") && err.contains("JSON"), "{err}");

    let mut sim = data.memorybank(SimPolicy::MemoryBank, None, 0);
    let Benchmark::MemoryBank { gold: g, .. } = &mut sim.benchmark else { unreachable!() };
    *g = Some(data.write("other_gold.jsonl", "{\"user\": \"Cy\", \"qid\": \"en-Cy-0\", \"evidence\": []}\n"));
    let err = error(&sim);
    assert!(err.contains("other_gold.jsonl:1") && err.contains("en-Cy-0"), "{err}");

    let mut sim = data.memorybank(SimPolicy::MemoryBank, None, 0);
    let Benchmark::MemoryBank { gold: g, .. } = &mut sim.benchmark else { unreachable!() };
    *g = Some(data.write(
        "far_gold.jsonl",
        "{\"user\": \"Bo\", \"qid\": \"en-Bo-0\", \"evidence\": [{\"date\": \"2023-06-01\", \"turn\": 0}]}\n",
    ));
    let err = error(&sim);
    assert!(err.contains("far_gold.jsonl:1") && err.contains("2023-06-01#0"), "{err}");

    let mut sim = data.memorybank(SimPolicy::MemoryBank, None, 0);
    let Benchmark::MemoryBank { gold: g, .. } = &mut sim.benchmark else { unreachable!() };
    *g = Some(data.write("bad_gold.jsonl", "\n{not json\n"));
    let err = error(&sim);
    assert!(err.contains("bad_gold.jsonl:2"), "{err}");

    let sim = SimulateRun {
        benchmark: Benchmark::Locomo { data: data.write("broken_locomo.json", "[{\"sample_id\": 3}]"), samples: None },
        policy: SimPolicy::FadeMem,
        base: base(),
        threshold: None,
        gap_days: 0,
        ks: vec![10],
    };
    let err = error(&sim);
    assert!(err.contains("broken_locomo.json") && err.contains("sample_id"), "{err}");
}

/// Ann's four turns of 04-27 and 04-28 labelled, two critical; a line about a turn the bank
/// does not have is ignored.
const CRITICAL: &str = r#"{"user": " Ann ", "date": "2023-04-27", "turn": 0, "critical": 1}
{"user": " Ann ", "date": "2023-04-27", "turn": 1, "critical": 0}
{"user": " Ann ", "date": "2023-04-28", "turn": 0, "critical": 1}
{"user": " Ann ", "date": "2023-04-28", "turn": 1, "critical": 0}
{"user": "Nobody", "date": "2023-04-28", "turn": 1, "critical": 1}
"#;

fn labelled(run: &SimulateRun, text: &str) -> Result<SimulateReport, EvalError> {
    let labels = membank_eval::critical::parse(text, "critical.jsonl", membank_eval::critical::LabelShape::MemoryBank)?;
    simulate::run_with_labels(embedder(), run, Some(&labels), &quiet)
}

#[test]
fn critical_labels_are_reported_per_way_of_keeping_with_the_estimator_auc() {
    let data = Data::new();
    let report = labelled(&data.memorybank(SimPolicy::MemoryBank, None, 30), CRITICAL).unwrap();
    let json = serde_json::to_value(&report).unwrap();
    let critical = &json["critical"];
    assert_eq!(critical["labelled"], 4, "{critical}");
    assert_eq!(critical["critical"], 2);
    for way in ["forgetting", "fifo", "lru", "no_forgetting"] {
        let kept = critical["kept"][way].as_f64().unwrap_or_else(|| panic!("kept.{way} in {critical}"));
        assert!((0.0..=1.0).contains(&kept), "{way}: {kept}");
    }
    assert_eq!(critical["kept"]["no_forgetting"], 1.0);
    // A month of silence archives Ann's unrecalled turns of April under the paper's curve.
    assert!(critical["kept"]["forgetting"].as_f64().unwrap() < 1.0, "{critical}");
    let auc = critical["importance_auc"].as_f64().unwrap();
    assert!((0.0..=1.0).contains(&auc));
    // Each timeline day says how much of what was critical so far is still held.
    assert!(json["timeline"].as_array().unwrap().iter().any(|d| d.get("critical_kept").is_some()));
    // The plot draws critical retention over time on its own scale.
    let path = data.path("critical.svg");
    simulate::plot(&report, &path).unwrap();
    let svg = std::fs::read_to_string(&path).unwrap();
    assert!(svg.contains("critical kept") && svg.contains("critical turns still active"), "{svg}");
    // Without labels the block is absent.
    let plain = serde_json::to_value(run(&data.memorybank(SimPolicy::MemoryBank, None, 30))).unwrap();
    assert!(plain.get("critical").is_none_or(|c| c.is_null()), "{plain}");
}

#[test]
fn labels_that_match_no_replayed_turn_are_refused() {
    let data = Data::new();
    let only_strangers = "{\"user\": \"Nobody\", \"date\": \"2023-04-28\", \"turn\": 1, \"critical\": 1}\n";
    let err = labelled(&data.memorybank(SimPolicy::MemoryBank, None, 0), only_strangers).unwrap_err().to_string();
    assert!(err.contains("label"), "{err}");
}

#[test]
fn memorybank_users_are_chosen_by_their_position_in_the_bank() {
    let data = Data::new();
    let choose = |positions: Vec<usize>| {
        let mut sim = data.memorybank(SimPolicy::None, None, 0);
        let Benchmark::MemoryBank { users, .. } = &mut sim.benchmark else { unreachable!() };
        *users = Some(positions);
        sim
    };
    let report = serde_json::to_value(run(&choose(vec![1]))).unwrap();
    let names: Vec<&str> = report["users"].as_array().unwrap().iter().map(|u| u["user"].as_str().unwrap()).collect();
    assert_eq!(names, ["Bo"], "{report}");
    assert!(error(&choose(vec![2])).contains("past the bank's last user"));
}

/// Two LongMemEval questions. `q1` has a distractor session and an evidence session whose
/// first message carries `has_answer`; `q2_abs` is an abstention question, replayed but not
/// asked. Times are LongMemEval's own format.
const LONGMEMEVAL: &str = r#"[
 {"question_id": "q1", "question_type": "single-session-user", "question": "copper tulip glacier?",
  "answer": "x", "question_date": "2023/05/22 (Mon) 12:00",
  "haystack_session_ids": ["s_a", "answer_x_1"],
  "haystack_dates": ["2023/05/20 (Sat) 10:00", "2023/05/22 (Mon) 09:00"],
  "haystack_sessions": [
   [{"role": "user", "content": "zebra violin harbor"}, {"role": "assistant", "content": "ok"},
    {"role": "user", "content": "quartz meadow lantern"}, {"role": "assistant", "content": "fine"}],
   [{"role": "user", "content": "copper tulip glacier", "has_answer": true}, {"role": "assistant", "content": "noted"}]],
  "answer_session_ids": ["answer_x_1"]},
 {"question_id": "q2_abs", "question_type": "single-session-user", "question": "amber falcon?",
  "answer": "x", "question_date": "2023/05/21 (Sun) 12:00",
  "haystack_session_ids": ["answer_y_1"], "haystack_dates": ["2023/05/21 (Sun) 08:00"],
  "haystack_sessions": [[{"role": "user", "content": "saffron kettle orbit", "has_answer": true}]],
  "answer_session_ids": ["answer_y_1"]}
]"#;

fn longmemeval(data: &Data, samples: Option<Vec<usize>>, gap_days: u32) -> SimulateRun {
    SimulateRun {
        benchmark: Benchmark::LongMemEval { data: data.write("longmemeval_s_cleaned.json", LONGMEMEVAL), samples },
        policy: SimPolicy::MemoryBank,
        base: base(),
        threshold: None,
        gap_days,
        ks: vec![1, 10],
    }
}

#[test]
fn longmemeval_replays_each_haystack_and_asks_its_question() {
    let data = Data::new();
    let report = run(&longmemeval(&data, None, 0));
    assert_eq!(report.benchmark, "longmemeval");
    // The person's messages only: three in q1's haystack, one in q2's.
    assert_eq!(report.storage.stored, 4);
    assert_eq!(report.users.len(), 2);
    assert_eq!(report.users[0].user, "q1");
    // The abstention question is replayed but not asked.
    assert_eq!(report.questions.scored, 1);
    assert_eq!(report.users[1].questions, 0);
    assert_eq!(report.questions.main_metric, "recall@10");
    assert_eq!(report.quality.no_forgetting["recall@10"], 1.0);
    assert_eq!(report.quality.no_forgetting["recall_any@1"], 1.0);
    assert_eq!(report.quality.no_forgetting["recall_all@10"], 1.0);
    let types = report.breakdown["no_forgetting"].by_type.as_ref().unwrap();
    assert_eq!(types["single-session-user"]["n"], 1.0);
    // 20 May to 22 May: three calendar days.
    assert_eq!(report.users[0].days, 3);

    // A month of silence under a one-day unit archives the evidence; the archive wins it back.
    let report = run(&longmemeval(&data, Some(vec![0]), 30));
    assert_eq!(report.users.len(), 1);
    assert_eq!(report.parameters.samples, Some(vec![0]));
    assert_eq!(report.storage.active, 0, "{:?}", report.storage);
    assert_eq!(report.quality.forgetting["recall@10"], 0.0);
    assert_eq!(report.quality.forgetting_reminiscence["recall@10"], 1.0);
    assert_eq!(report.reminiscence.answered_from_archive, 1);
}

#[test]
fn longmemeval_labels_and_bad_input() {
    let data = Data::new();
    let labels = "{\"question_id\": \"q1\", \"session_id\": \"answer_x_1\", \"turn\": 0, \"critical\": 1}\n\
                  {\"question_id\": \"q1\", \"session_id\": \"s_a\", \"turn\": 0, \"critical\": 0}\n\
                  {\"question_id\": \"q1\", \"session_id\": \"s_a\", \"turn\": 2, \"critical\": 0}\n";
    let labels =
        membank_eval::critical::parse(labels, "lme.jsonl", membank_eval::critical::LabelShape::LongMemEval).unwrap();
    let report = simulate::run_with_labels(embedder(), &longmemeval(&data, None, 0), Some(&labels), &quiet).unwrap();
    let critical = report.critical.unwrap();
    assert_eq!((critical.labelled, critical.critical), (3, 1));
    assert_eq!(critical.kept["no_forgetting"], 1.0);

    let err = error(&longmemeval(&data, Some(vec![0, 2]), 0));
    assert!(err.contains("no question 2") && err.contains("holds 2"), "{err}");
    let broken = |text: &str| SimulateRun {
        benchmark: Benchmark::LongMemEval { data: data.write("broken_lme.json", text), samples: None },
        ..longmemeval(&data, None, 0)
    };
    let err = error(&broken("[{\"question_id\": \"q\""));
    assert!(err.contains("broken_lme.json") && err.contains("JSON"), "{err}");
    let err = error(&broken("{\"question_id\": \"q\"}"));
    assert!(err.contains("list of questions"), "{err}");
    let err = error(&broken("[{\"question_id\": \"q\", \"question_type\": \"t\", \"question\": \"?\"}]"));
    assert!(err.contains("question_date"), "{err}");
    let err = error(&broken(
        "[{\"question_id\": \"q\", \"question_type\": \"t\", \"question\": \"?\", \"question_date\": \"yesterday\"}]",
    ));
    assert!(err.contains("yesterday"), "{err}");
    let err = error(&broken(
        "[{\"question_id\": \"q\", \"question_type\": \"t\", \"question\": \"?\", \"question_date\": \"2023/05/22 (Mon) 12:00\", \"haystack_session_ids\": [\"a\"], \"haystack_dates\": [], \"haystack_sessions\": [[]]}]",
    ));
    assert!(err.contains("must match"), "{err}");
}
