//! The shipped importance probe on the local embedding models, on the cases the lexical
//! estimator got wrong: negation, Chinese, questions to the assistant, and thanks. Needs the
//! models under `membank_embed::fetch::default_model_dir()`'s parent; skips without them.

use membank_core::salience::{PROBE_VERSION, estimate_importance_with, probe_layer, probe_text};
use membank_embed::{Embedder, LocalEmbedder, LocalOptions};

fn embedder(dir: &str) -> Option<LocalEmbedder> {
    let root = membank_embed::fetch::default_model_dir().parent()?.to_path_buf();
    match LocalEmbedder::open(&root.join(dir), LocalOptions::default()) {
        Ok(embedder) => Some(embedder),
        Err(err) => {
            eprintln!("skipping: {dir} is not installed ({err})");
            None
        }
    }
}

fn scores(embedder: &LocalEmbedder, texts: &[&str]) -> Vec<f64> {
    // The probe reads the person's words at its layer, as the engine passes them.
    let words: Vec<&str> = texts.iter().map(|t| probe_text(t)).collect();
    let layer = probe_layer(embedder.model_id()).expect("a probe for the local model");
    let vectors = embedder.layer_means(&words, layer).unwrap().expect("the local model shows its layers");
    texts
        .iter()
        .zip(&vectors)
        .map(|(text, v)| {
            let (p, version) = estimate_importance_with(text, embedder.model_id(), Some(v));
            // The probe's reading, or that raised by a request to remember ("+asked").
            assert!(version.starts_with(PROBE_VERSION), "{version} {}", embedder.model_id());
            assert!((0.0..=1.0).contains(&p));
            eprintln!("{p:.3}  {text:?}");
            p
        })
        .collect()
}

#[test]
fn english_probe_keeps_facts_and_drops_thanks_and_generic_questions() {
    let Some(embedder) = embedder("all-MiniLM-L6-v2") else { return };
    let high = scores(
        &embedder,
        &[
            "User: I don't have any siblings, I grew up as an only child.\nAssistant: That must have shaped you.",
            "I don't have any siblings.",
            "I'm allergic to peanuts, so please keep that in mind.",
            "My daughter Emma starts school in Boston next September.",
        ],
    );
    let low = scores(
        &embedder,
        &[
            "User: Can you recommend some books?\nAssistant: Sure, here are a few classics.",
            "User: Great. Thank you very much for your help. I will study them.\nAssistant: You're welcome!",
            "User: Hello! How are you today?\nAssistant: I'm fine, thanks.",
        ],
    );
    let lowest_high = high.iter().copied().fold(f64::INFINITY, f64::min);
    let highest_low = low.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    assert!(lowest_high > highest_low, "high {high:?} vs low {low:?}");
    // Thanks, greetings and generic requests far below the labels' base rate (about .3).
    assert!(highest_low < 0.1, "high {high:?} vs low {low:?}");
    // A fact said plainly in the first person, well above it. (A bare negation and a note in
    // the third person score lower, .1 to .3, with this model: a known weakness, in the README;
    // multilingual-e5-small reads them at .85 and .45. A fact followed by "please keep that in
    // mind" read as low too, until a request to remember raised it: see the next test.)
    let plain = scores(
        &embedder,
        &["I'm allergic to peanuts.", "I work as a nurse at the city hospital.", "I quit smoking last year."],
    );
    assert!(plain.iter().all(|&p| p > 0.6), "plain facts {plain:?}");
}

#[test]
fn chinese_probe_keeps_facts_and_drops_small_talk() {
    let Some(embedder) = embedder("multilingual-e5-small") else { return };
    let high = scores(
        &embedder,
        &[
            "User: 我对花生过敏，一吃就会呼吸困难。\nAssistant: 好的，我会记住的。",
            "User: 我没有兄弟姐妹，我是独生子。\nAssistant: 明白了。",
            "User: 我女儿下个月在上海结婚。\nAssistant: 恭喜你！",
        ],
    );
    let low = scores(
        &embedder,
        &[
            "User: 你好！\nAssistant: 你好，有什么可以帮你的吗？",
            "User: 非常感谢你的帮助，我会好好学习的。\nAssistant: 不客气！",
            "User: 你能推荐几本书吗？\nAssistant: 当然，这里有几本经典作品。",
        ],
    );
    let lowest_high = high.iter().copied().fold(f64::INFINITY, f64::min);
    let highest_low = low.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    assert!(lowest_high > highest_low, "high {high:?} vs low {low:?}");
    assert!(lowest_high > 0.5 && highest_low < 0.1, "high {high:?} vs low {low:?}");
    // English read by the multilingual model: a negation and a request to remember read as
    // facts; a note in the third person above the labels' base rate (about .3), where
    // all-MiniLM-L6-v2's probe reads it as chatter (.14).
    let english =
        scores(&embedder, &["I don't have any siblings.", "I'm allergic to peanuts, so please keep that in mind."]);
    assert!(english.iter().all(|&p| p > 0.5), "english facts {english:?}");
    let third_person = scores(&embedder, &["Ana is allergic to peanuts."]);
    assert!(third_person[0] > 0.3, "a note in the third person {third_person:?}");
}

/// A request to remember lowered the probes' reading of the fact it carries (they learned
/// "keep that in mind" as the polite close "I'll keep that in mind"); the rules call it
/// critical, so it is rated at least `ASKED_TO_REMEMBER` and recorded as `…+asked`. The same
/// words as a promise, advice or a question keep the probe's own reading.
#[test]
fn a_request_to_remember_is_rated_critical_by_either_probe() {
    use membank_core::salience::{ASKED_TO_REMEMBER, PROBE_ASKED_VERSION};
    let requests = [
        "Keep in mind that I'm diabetic.",
        "My daughter starts school on Monday, please keep that in mind.",
        "User: Please remember that my anniversary is on June 3rd.\nAssistant: I will!",
        "请记住我对花生过敏。",
        "User: 帮我记一下，我女儿的生日是五月二号。\nAssistant: 好的。",
    ];
    let others = [
        "User: Okay, I will keep that in mind. Thanks again for your help.\nAssistant: You're welcome!",
        "Don't forget to take breaks when you need to destress!",
        "Do you remember my dog's name?",
        "你还记得我吗？",
    ];
    for dir in ["all-MiniLM-L6-v2", "multilingual-e5-small"] {
        let Some(embedder) = embedder(dir) else { return };
        let layer = probe_layer(embedder.model_id()).expect("a probe for the local model");
        let read = |texts: &[&str]| {
            let words: Vec<&str> = texts.iter().map(|t| probe_text(t)).collect();
            let means = embedder.layer_means(&words, layer).unwrap().expect("layers");
            texts
                .iter()
                .zip(means)
                .map(|(t, v)| estimate_importance_with(t, embedder.model_id(), Some(&v)))
                .collect::<Vec<_>>()
        };
        let mut raised = 0;
        for (text, (p, version)) in requests.iter().zip(read(&requests)) {
            eprintln!("{dir} {p:.3} {version} {text:?}");
            assert!(p >= ASKED_TO_REMEMBER, "{dir}: {text:?} rated {p}");
            // Raised to the floor exactly, or the probe's own reading when it was higher.
            match version {
                PROBE_ASKED_VERSION => {
                    assert_eq!(p, ASKED_TO_REMEMBER);
                    raised += 1;
                }
                v => assert_eq!(v, PROBE_VERSION, "{dir}: {text:?}"),
            }
        }
        // The probes read most of these requests below the floor (that is the weakness).
        assert!(raised >= 2, "{dir}: only {raised} requests needed the floor");
        for (text, (p, version)) in others.iter().zip(read(&others)) {
            eprintln!("{dir} {p:.3} {version} {text:?}");
            assert_eq!(version, PROBE_VERSION, "{dir}: {text:?}");
        }
    }
}

/// Through the engine, on a real SQLite file and the real model: a turn stored alone, turns
/// and a note stored in one batch, and a turn with an explicit importance. The estimator's
/// importance is the probe's reading of the person's words at its layer, recorded as
/// `importance-probe-v5` (a note an agent saved: `importance-probe-v5+agent-note`, the higher
/// of that and the lexical estimate); an explicit importance is left alone.
#[test]
fn the_engine_stores_the_probes_importance_for_turns_and_notes() {
    use std::sync::Arc;

    use membank_core::{ClockFrom, ManualClock, Scope, Source, TenantId, UserId};
    use membank_engine::{Engine, EngineConfig, Remember, RememberNote, RememberTurn};
    use membank_store::{Insertion, SqliteStore};

    let Some(local) = embedder("all-MiniLM-L6-v2") else { return };
    let dir = tempfile::tempdir().unwrap();
    let store = Arc::new(SqliteStore::open(dir.path().join("probe.db")).unwrap());
    let at = chrono::DateTime::parse_from_rfc3339("2026-01-05T10:00:00Z").unwrap().with_timezone(&chrono::Utc);
    let local = Arc::new(local);
    let model: Arc<dyn Embedder> = local.clone();
    let engine = Engine::new(store, model, Arc::new(ManualClock::new(at)), EngineConfig::default()).unwrap();
    let scope = Scope::user(TenantId::new("t").unwrap(), UserId::new("ana").unwrap());
    let turn = |user: &str, reply: &str, importance: Option<f64>| RememberTurn {
        scope: scope.clone(),
        user_text: user.into(),
        assistant_text: Some(reply.into()),
        occurred_at: None,
        metadata: Default::default(),
        importance,
        clock_from: ClockFrom::Import,
    };
    // A note an agent saved is rated by the higher of the probe and the lexical estimate.
    let expected = |content: &str, agent: bool| {
        let words = probe_text(content);
        let layer = probe_layer(local.model_id()).unwrap();
        let features = local.layer_means(&[words], layer).unwrap().unwrap();
        if agent {
            membank_core::salience::estimate_agent_note_importance_with(content, local.model_id(), Some(&features[0]))
        } else {
            estimate_importance_with(content, local.model_id(), Some(&features[0]))
        }
    };
    let check = |memory: &membank_core::Memory| {
        let content = memory.content.as_deref().unwrap();
        let (want, version) = expected(content, memory.source == Source::Agent);
        assert_eq!(memory.metadata.get("importance_estimator").map(String::as_str), Some(version), "{content}");
        assert!(version.starts_with(PROBE_VERSION));
        assert!(
            (memory.forgetting.base_importance - want).abs() < 1e-4,
            "{content}: {} vs {want}",
            memory.forgetting.base_importance
        );
        memory.forgetting.base_importance
    };

    let fact = engine
        .remember_turn(turn("My daughter Emma starts school in Boston in September.", "How exciting!", None))
        .unwrap();
    let high = check(&fact);
    let stored = engine
        .remember_all(
            vec![
                Remember::Turn(turn("Thanks, bye!", "Goodbye!", None)),
                Remember::Note(RememberNote {
                    scope: scope.clone(),
                    text: "Ana is allergic to peanuts.".into(),
                    source: Source::Agent,
                    occurred_at: None,
                    metadata: Default::default(),
                    importance: None,
                    clock_from: ClockFrom::Import,
                }),
                Remember::Turn(turn("Hello there", "Hi!", Some(0.7))),
            ],
            None,
        )
        .unwrap();
    let Insertion::Stored(batch) = stored else { panic!("stored, not replayed") };
    let thanks = check(&batch[0]);
    assert_eq!(
        batch[1].metadata.get("importance_estimator").map(String::as_str),
        Some("importance-probe-v5+agent-note")
    );
    assert!(check(&batch[1]) > 0.8, "the agent's note of an allergy is rated as a fact");
    assert!(high > thanks + 0.3, "a durable fact {high} above thanks {thanks}");
    assert_eq!(batch[2].forgetting.base_importance, 0.7);
    assert_eq!(batch[2].metadata.get("importance_source").map(String::as_str), Some("explicit"));
    assert_eq!(batch[2].metadata.get("importance_estimator"), None);
}

#[test]
fn an_agents_third_person_note_is_rated_by_whichever_estimator_sees_more() {
    use membank_core::salience::{AGENT_NOTE_VERSION, estimate_agent_note_importance_with, estimate_importance};
    for dir in ["all-MiniLM-L6-v2", "multilingual-e5-small"] {
        let Some(embedder) = embedder(dir) else { continue };
        let layer = probe_layer(embedder.model_id()).expect("a probe for the local model");
        let notes = [
            "Ana is allergic to peanuts.",
            "User prefers dark mode in every app.",
            "The user has a daughter named Mia who is 6.",
            "User is vegetarian.",
        ];
        let trivia = ["The user said hello.", "User asked what the weather is like today."];
        let all: Vec<&str> = notes.iter().chain(&trivia).copied().collect();
        let means = embedder.layer_means(&all, layer).unwrap().expect("the local model shows its layers");
        let rated: Vec<f64> = all
            .iter()
            .zip(&means)
            .map(|(text, v)| {
                let (probe, _) = estimate_importance_with(text, embedder.model_id(), Some(v));
                let (note, version) = estimate_agent_note_importance_with(text, embedder.model_id(), Some(v));
                assert_eq!(version, AGENT_NOTE_VERSION);
                assert_eq!(note, probe.max(estimate_importance(text)), "{text:?}");
                eprintln!("{dir}: probe {probe:.3}, as an agent's note {note:.3}  {text:?}");
                note
            })
            .collect();
        let (facts, saved_trivia) = rated.split_at(notes.len());
        assert!(facts.iter().all(|&p| p > 0.6), "{dir}: third-person facts {facts:?}");
        assert!(saved_trivia.iter().all(|&p| p < 0.4), "{dir}: saved trivia {saved_trivia:?}");
        // Without a probe for the model the note is the lexical estimate, as any memory.
        let (alone, version) = estimate_agent_note_importance_with(notes[0], "some/remote-model", None);
        assert_eq!((alone, version), (estimate_importance(notes[0]), membank_core::salience::ESTIMATOR_VERSION));
    }
}

/// An import rates what it stores as the live write paths do: the probe's reading of the
/// person's words of each turn at its layer, recorded as `importance-probe-v5`.
#[test]
fn an_import_stores_the_probes_importance_as_the_write_paths_do() {
    use std::sync::Arc;

    use membank_core::{ClockFrom, Kind, ManualClock, Scope, TenantId, UserId};
    use membank_engine::{Engine, EngineConfig, ImportRequest};
    use membank_store::{ListQuery, SqliteStore, Store};

    let Some(local) = embedder("all-MiniLM-L6-v2") else { return };
    let dir = tempfile::tempdir().unwrap();
    let store = Arc::new(SqliteStore::open(dir.path().join("import.db")).unwrap());
    let at = chrono::DateTime::parse_from_rfc3339("2026-01-05T10:00:00Z").unwrap().with_timezone(&chrono::Utc);
    let local = Arc::new(local);
    let model: Arc<dyn Embedder> = local.clone();
    let engine = Engine::new(store.clone(), model, Arc::new(ManualClock::new(at)), EngineConfig::default()).unwrap();
    let bank = r#"{"Ana": {"name": "Ana", "summary": {}, "personality": {}, "overall_history": "",
        "history": {"2025-12-01": [
            {"query": "My daughter Emma starts school in Boston in September.", "response": "How exciting!"},
            {"query": "Thanks, bye!", "response": "Goodbye!"}
        ]}}}"#;
    let set = membank_engine::import::memorybank::parse(bank.as_bytes()).unwrap();
    let request = ImportRequest { tenant: TenantId::new("t").unwrap(), set, clock_from: ClockFrom::Import };
    assert_eq!(engine.import(request, &|_, _| {}).unwrap().imported, 2);
    let scope = Scope::user(TenantId::new("t").unwrap(), UserId::new("Ana").unwrap());
    let stored = store.list(&scope, &ListQuery { limit: 10, ..Default::default() }).unwrap();
    let layer = probe_layer(local.model_id()).unwrap();
    let mut rated = Vec::new();
    for memory in stored.iter().filter(|m| m.kind == Kind::Turn) {
        let content = memory.content.as_deref().unwrap();
        let features = local.layer_means(&[probe_text(content)], layer).unwrap().unwrap();
        let (want, version) = estimate_importance_with(content, local.model_id(), Some(&features[0]));
        assert_eq!(version, PROBE_VERSION);
        assert_eq!(memory.metadata.get("importance_estimator").map(String::as_str), Some(PROBE_VERSION), "{content}");
        assert!((memory.forgetting.base_importance - want).abs() < 1e-4, "{content}");
        rated.push((content.contains("Emma"), memory.forgetting.base_importance));
    }
    assert_eq!(rated.len(), 2);
    let fact = rated.iter().find(|(emma, _)| *emma).unwrap().1;
    let thanks = rated.iter().find(|(emma, _)| !*emma).unwrap().1;
    assert!(fact > thanks + 0.3, "a durable fact {fact} above thanks {thanks}");
}
