//! Imports: the reference MemoryBank file, LoCoMo and LongMemEval shapes; idempotent
//! re-import; malformed, empty, oversized and hostile files fail with the path of the
//! first bad record and store nothing.

use membank_engine::core::{Kind, TenantId};
use membank_engine::import::{self, IMPORT_KEY};
use membank_engine::{ImportRequest, ImportSet, RecallRequest};
use membank_store::{ListQuery, Store};

use crate::{World, scope, world};

const TWO_USERS: &str = r#"{
  " Jason ": {
    "name": "Jason",
    "summary": {"2023-04-28": {"content": "Jason talked about hiking.", "memory_strength": 2, "last_recall_date": "2023-04-29"}},
    "personality": {"2023-04-28": "adventurous"},
    "overall_history": "Jason likes the outdoors.",
    "history": {
      "2023-04-27": [{"query": "I adopted a grey cat named Miso", "response": "Lovely name!"}],
      "2023-04-28": [
        {"query": "I went hiking on Mount Tam", "response": "Sounds fun.", "memory_strength": 3, "last_recall_date": "2023-04-30"},
        {"query": "It was windy at the top", "response": ""}
      ]
    },
    "meta_information": {"name": "Jason", "hobbies": "hiking"}
  },
  "Emily": {"name": "Emily", "summary": {}, "personality": {}, "overall_history": "",
    "history": {"2023-05-01": [{"query": "I painted a lake today", "response": "Show me!"}]}}
}"#;

fn set(text: &str) -> ImportSet {
    import::memorybank::parse(text.as_bytes()).unwrap()
}

fn run(w: &World, set: ImportSet) -> membank_engine::ImportReport {
    w.engine
        .import(
            ImportRequest {
                tenant: TenantId::default_tenant(),
                set,
                clock_from: membank_engine::core::ClockFrom::Event,
            },
            &|_, _| {},
        )
        .unwrap()
}

fn all(w: &World, user: &str) -> Vec<membank_engine::core::Memory> {
    let mut memories =
        w.store.list(&scope(user), &ListQuery { limit: 1000, oldest_first: true, ..Default::default() }).unwrap();
    memories.sort_by_key(|m| m.metadata.get(IMPORT_KEY).cloned());
    memories
}

fn error(bytes: &[u8], parse: fn(&[u8]) -> Result<ImportSet, membank_engine::core::InvalidInput>) -> String {
    parse(bytes).unwrap_err().to_string()
}

#[test]
fn a_memorybank_file_becomes_turns_summaries_and_portraits_with_their_dates() {
    let w = world();
    let report = run(&w, set(TWO_USERS));
    assert_eq!((report.users, report.records, report.imported, report.skipped), (2, 8, 8, 0));
    let jason = all(&w, "Jason");
    let kinds: Vec<(String, Kind)> = jason.iter().map(|m| (m.metadata[IMPORT_KEY].clone(), m.kind)).collect();
    assert_eq!(
        kinds,
        [
            ("memorybank:2023-04-27:0".into(), Kind::Turn),
            ("memorybank:2023-04-28:0".into(), Kind::Turn),
            ("memorybank:2023-04-28:1".into(), Kind::Turn),
            ("memorybank:meta_information".into(), Kind::GlobalPortrait),
            ("memorybank:overall_history".into(), Kind::GlobalSummary),
            ("memorybank:personality:2023-04-28".into(), Kind::DailyPortrait),
            ("memorybank:summary:2023-04-28".into(), Kind::DailySummary),
        ]
    );
    let hiking = &jason[1];
    assert_eq!(hiking.day.to_string(), "2023-04-28");
    assert_eq!(hiking.occurred_at.to_rfc3339(), "2023-04-28T12:00:00+00:00");
    assert_eq!(jason[2].occurred_at.to_rfc3339(), "2023-04-28T12:01:00+00:00");
    assert_eq!(hiking.forgetting.strength.get(), 3.0);
    assert_eq!(hiking.forgetting.last_recalled_at.to_rfc3339(), "2023-04-30T12:00:00+00:00");
    assert_eq!(hiking.metadata["source_user_key"], " Jason ");
    assert_eq!(jason[2].assistant_text, None, "an empty reply is no reply");
    let summary = &jason[6];
    assert_eq!(summary.derived_from, [jason[1].id, jason[2].id]);
    assert_eq!(summary.forgetting.strength.get(), 2.0);
    assert_eq!(jason[4].derived_from, [summary.id]);
    assert_eq!(all(&w, "Emily").len(), 1, "empty summaries and overall history are not memories");
    // Recallable at once, for the trimmed user.
    let hits = w.engine.recall(RecallRequest::new(scope("Jason"), "what is my cat called", 1)).unwrap();
    assert!(hits.results[0].memory.content.as_deref().unwrap().contains("Miso"));
}

#[test]
fn re_importing_the_same_file_adds_nothing() {
    let w = world();
    run(&w, set(TWO_USERS));
    let before = all(&w, "Jason");
    let again = run(&w, set(TWO_USERS));
    assert_eq!((again.imported, again.skipped), (0, 8));
    assert_eq!(all(&w, "Jason"), before);
    // A file that grew imports only the new turn.
    let grown = TWO_USERS.replace(r#"{"query": "I painted a lake today", "response": "Show me!"}"#, r#"{"query": "I painted a lake today", "response": "Show me!"}, {"query": "Then I slept", "response": "Good night"}"#);
    let report = run(&w, set(&grown));
    assert_eq!((report.imported, report.skipped), (1, 8));
    assert_eq!(all(&w, "Emily").len(), 2);
}

#[test]
fn malformed_files_name_the_first_bad_record() {
    let parse = import::memorybank::parse;
    assert!(error(b"{\n  \"a\": [1,\n", parse).contains("line 3"), "{}", error(b"{\n  \"a\": [1,\n", parse));
    assert!(error(b"", parse).contains("line 1"));
    assert!(error(b"[1, 2]", parse).contains("expected an object of users"));
    let bad_turn = TWO_USERS.replace(r#""query": "It was windy at the top""#, r#""query": 42"#);
    assert_eq!(
        error(bad_turn.as_bytes(), parse),
        r#"invalid import file: $[" Jason "].history["2023-04-28"][1].query: expected a string, found a number"#
    );
    let bad_date = TWO_USERS.replace("2023-05-01", "May first");
    assert!(
        error(bad_date.as_bytes(), parse).contains(r#"$["Emily"].history["May first"]: "May first" is not a date"#)
    );
    let missing = TWO_USERS.replace(r#""query": "I painted a lake today", "#, "");
    assert!(error(missing.as_bytes(), parse).contains(r#"$["Emily"].history["2023-05-01"][0]: missing field "query""#));
    let blank_user = TWO_USERS.replace(r#""Emily": {"#, r#""   ": {"#);
    assert!(error(blank_user.as_bytes(), parse).contains("bad user key"));
    assert!(error(b"\xff\xfe", parse).contains("not valid UTF-8"));
}

#[test]
fn a_bad_record_anywhere_stores_nothing() {
    let w = world();
    // Parsed fine, but the second user's text is over the limit: validation fails before any write.
    let long = "x".repeat(membank_engine::core::limits::MAX_TEXT_BYTES + 1);
    let file = TWO_USERS.replace("I painted a lake today", &long);
    let err = w
        .engine
        .import(
            ImportRequest {
                tenant: TenantId::default_tenant(),
                set: set(&file),
                clock_from: membank_engine::core::ClockFrom::Event,
            },
            &|_, _| {},
        )
        .unwrap_err();
    assert!(err.to_string().contains(r#"$["Emily"].history["2023-05-01"][0]"#), "{err}");
    assert!(err.to_string().contains("bytes"), "{err}");
    assert!(all(&w, "Jason").is_empty());
    assert!(w.store.list_users(&TenantId::default_tenant()).unwrap().is_empty());
}

#[test]
fn hostile_files_are_refused_without_panics() {
    let w = world();
    let parse = import::memorybank::parse;
    // Deep nesting: serde_json's recursion limit, reported as a JSON error.
    let deep = format!("{}{}", "[".repeat(100_000), "]".repeat(100_000));
    assert!(error(deep.as_bytes(), parse).contains("not valid JSON"));
    // NUL characters, control characters in user keys, dates far in the future, bad strengths.
    for (from, to, expect) in [
        ("I painted a lake today", "I painted\\u0000", "NUL"),
        (r#""Emily": {"#, r#""Em\u0007ily": {"#, "bad user key"),
        ("2023-05-01", "2999-05-01", "future"),
        (r#""memory_strength": 3"#, r#""memory_strength": -1"#, "memory strength"),
        (r#""memory_strength": 3"#, r#""memory_strength": "high""#, "expected a number"),
    ] {
        let file = TWO_USERS.replace(from, to);
        let outcome = parse(file.as_bytes()).map_err(|e| e.to_string()).and_then(|set| {
            w.engine
                .import(
                    ImportRequest {
                        tenant: TenantId::default_tenant(),
                        set,
                        clock_from: membank_engine::core::ClockFrom::Event,
                    },
                    &|_, _| {},
                )
                .map_err(|e| e.to_string())
        });
        let err = outcome.expect_err(expect);
        assert!(err.contains(expect), "{expect}: {err}");
    }
    assert!(w.store.list_users(&TenantId::default_tenant()).unwrap().is_empty());
    // An empty object is an empty import, not an error.
    assert_eq!(run(&w, set("{}")).records, 0);
}

#[test]
fn locomo_and_longmemeval_shapes_keep_their_ids() {
    let w = world();
    let locomo = r#"[{"sample_id": "conv-1", "conversation": {"speaker_a": "Ann", "speaker_b": "Bo",
        "session_1_date_time": "1:56 pm on 8 May, 2023",
        "session_1": [{"speaker": "Ann", "dia_id": "D1:1", "text": "I ran a marathon"},
                      {"speaker": "Bo", "dia_id": "D1:2", "text": "Wow", "blip_caption": "a photo of a medal"}]},
        "qa": []}]"#;
    run(&w, import::locomo::parse(locomo.as_bytes()).unwrap());
    let turns = all(&w, "conv-1");
    assert_eq!(turns[0].content.as_deref(), Some("I ran a marathon"));
    assert_eq!(turns[1].content.as_deref(), Some("Wow [shared an image: a photo of a medal]"));
    assert_eq!(turns[1].metadata["speaker"], "Bo");
    assert_eq!(turns[1].metadata["dia_id"], "D1:2");
    assert_eq!(turns[1].occurred_at.to_rfc3339(), "2023-05-08T13:56:01+00:00");
    let bad = locomo.replace("1:56 pm on 8 May, 2023", "soon");
    assert!(error(bad.as_bytes(), import::locomo::parse).contains(r#"$[0].conversation["session_1_date_time"]"#));

    let lme = r#"[{"question_id": "q1", "question_type": "single-session-user", "question": "?", "answer": "", "question_date": "2023/05/30 (Tue) 23:40",
        "haystack_session_ids": ["answer_1", "filler"], "haystack_dates": ["2023/05/20 (Sat) 02:21", "2023/05/21 (Sun) 10:00"],
        "haystack_sessions": [[{"role": "user", "content": "I bought a red bike", "has_answer": true}, {"role": "assistant", "content": "Nice"}, {"role": "user", "content": "  "}],
                              [{"role": "user", "content": "Tell me about Rome"}]],
        "answer_session_ids": ["answer_1"]}]"#;
    run(&w, import::longmemeval::parse(lme.as_bytes()).unwrap());
    let turns = all(&w, "q1");
    let ids: Vec<(&str, &str)> =
        turns.iter().map(|m| (m.metadata["turn_id"].as_str(), m.metadata["has_answer"].as_str())).collect();
    assert_eq!(ids, [("answer_1_1", "true"), ("filler_1", "false")]);
    let bad = lme.replace(r#"["answer_1", "filler"]"#, r#"["answer_1"]"#);
    assert!(error(bad.as_bytes(), import::longmemeval::parse).contains("$[0]: 1 session ids, 2 dates and 2 sessions"));
}
