//! Bad input gets a clear error and changes nothing.

use membank_engine::core::limits::MAX_TEXT_BYTES;
use membank_engine::{EngineError, RecallRequest, RememberTurn};
use membank_store::{EventQuery, Store};

use crate::{scope, world};

fn turn(user_text: &str, assistant: Option<&str>) -> RememberTurn {
    RememberTurn {
        scope: scope("ana"),
        user_text: user_text.into(),
        assistant_text: assistant.map(Into::into),
        occurred_at: None,
        metadata: Default::default(),
        importance: None,
        clock_from: membank_engine::core::ClockFrom::Event,
    }
}

#[test]
fn empty_blank_oversized_and_nul_texts_are_refused_without_writing() {
    let w = world();
    let cases = [
        turn("", None),
        turn("   \n\t", None),
        turn(&"x".repeat(MAX_TEXT_BYTES + 1), None),
        turn("hello", Some("  ")),
        turn("a\0b", None),
    ];
    for case in cases {
        let err = w.engine.remember_turn(case).unwrap_err();
        assert!(matches!(err, EngineError::Invalid(_)), "{err:?}");
        assert_eq!(err.code(), "invalid_input");
    }
    assert!(w.engine.remember_turn(turn(&"x".repeat(MAX_TEXT_BYTES), None)).is_ok());
    assert_eq!(w.store.counts(&scope("ana")).unwrap().active, 1);
    assert_eq!(w.store.events(&scope("ana"), &EventQuery::default()).unwrap().len(), 1);
}

#[test]
fn bad_recall_arguments_are_refused() {
    let w = world();
    w.turn("ana", "hello");
    for k in [0, 201] {
        assert!(matches!(w.engine.recall(RecallRequest::new(scope("ana"), "hello", k)), Err(EngineError::Invalid(_))));
    }
    assert!(matches!(w.engine.recall(RecallRequest::new(scope("ana"), " ", 5)), Err(EngineError::Invalid(_))));
    // Query syntax of the full-text engine is data, not syntax.
    for hostile in ["\"", "NEAR(a b)", "body: x OR scope_tag: u1", "*", "a AND", "'; DROP TABLE memories; --"] {
        w.engine.recall(RecallRequest::new(scope("ana"), hostile, 5)).unwrap();
    }
    assert!(w.store.integrity_check().unwrap().is_empty());
}

#[test]
fn a_far_future_time_is_refused() {
    let w = world();
    let mut request = turn("from the future", None);
    request.occurred_at = Some(w.engine.now() + chrono::Duration::days(3));
    assert!(matches!(w.engine.remember_turn(request), Err(EngineError::Invalid(_))));
}

#[test]
fn unknown_ids_and_users_are_not_found() {
    let w = world();
    let m = w.turn("ana", "hello");
    let unknown = membank_engine::core::MemoryId::generate(w.engine.now());
    assert!(matches!(w.engine.show(&scope("ana"), unknown), Err(EngineError::NotFound(_))));
    assert!(matches!(w.engine.show(&scope("nobody"), m.id), Err(EngineError::NotFound(_))));
    assert!(matches!(w.engine.forget(&scope("nobody"), m.id, None), Err(EngineError::NotFound(_))));
    assert!(w.engine.recall(RecallRequest::new(scope("nobody"), "hello", 5)).unwrap().results.is_empty());
}

#[test]
fn a_store_of_another_model_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("m.db");
    let clock = std::sync::Arc::new(membank_engine::core::ManualClock::new(crate::t0()));
    let store = std::sync::Arc::new(membank_store::SqliteStore::open(&path).unwrap());
    let a = membank_engine::Engine::new(
        store.clone(),
        std::sync::Arc::new(membank_embed::HashEmbedder::new(64)),
        clock.clone(),
        Default::default(),
    )
    .unwrap();
    a.remember_turn(turn("hello", None)).unwrap();
    let b = membank_engine::Engine::new(
        store,
        std::sync::Arc::new(membank_embed::HashEmbedder::new(32)),
        clock,
        Default::default(),
    )
    .unwrap();
    let err = b.remember_turn(turn("again", None)).unwrap_err();
    assert_eq!(err.code(), "incompatible", "{err}");
    let err = b.recall(RecallRequest::new(scope("ana"), "hello", 5)).unwrap_err();
    assert_eq!(err.code(), "incompatible", "{err}");
}

/// A turn or a note in which the person asks to have something remembered is rated at least
/// `ASKED_TO_REMEMBER` (the rules call it critical) and says so (`…+asked`); the same words
/// as a promise keep the estimate; an explicit importance still wins.
#[test]
fn a_request_to_remember_is_rated_at_least_the_floor_and_says_so() {
    use membank_engine::core::salience::{ASKED_TO_REMEMBER, LEXICAL_ASKED_VERSION, estimate_importance};
    let w = world();
    let asked = w.turn("u", "Please keep in mind that I work night shifts.");
    assert!(estimate_importance("User: Please keep in mind that I work night shifts.") < ASKED_TO_REMEMBER);
    assert_eq!(asked.forgetting.base_importance, ASKED_TO_REMEMBER);
    assert_eq!(asked.forgetting.importance, ASKED_TO_REMEMBER);
    assert_eq!(asked.metadata.get("importance_estimator").map(String::as_str), Some(LEXICAL_ASKED_VERSION));
    let note = w.agent_note("u", "请记住我对花生过敏。");
    assert_eq!(note.forgetting.base_importance, ASKED_TO_REMEMBER);
    assert_eq!(note.metadata.get("importance_estimator").map(String::as_str), Some(LEXICAL_ASKED_VERSION));
    let promise = w.turn("u", "Okay, I will keep that in mind.");
    assert_eq!(promise.forgetting.base_importance, estimate_importance("User: Okay, I will keep that in mind."));
    assert_eq!(promise.metadata.get("importance_estimator").map(String::as_str), Some("salience-v1"));
    let explicit = w
        .engine
        .remember_turn(RememberTurn {
            importance: Some(0.2),
            ..turn("Please keep in mind that I work night shifts.", None)
        })
        .unwrap();
    assert_eq!(explicit.forgetting.base_importance, 0.2);
}

#[test]
fn an_estimated_importance_records_its_estimator_and_an_explicit_one_does_not() {
    // The hashing embedder's model has no probe weights: the lexical estimate, unchanged.
    let w = world();
    let text = "My sister Anna lives in Berlin and works as a nurse.";
    let estimated = w.turn("u", text);
    let expected = membank_engine::core::salience::estimate_importance(&format!("User: {text}"));
    assert_eq!(estimated.forgetting.base_importance, expected);
    assert_eq!(estimated.metadata.get("importance_source").map(String::as_str), Some("estimator"));
    assert_eq!(estimated.metadata.get("importance_estimator").map(String::as_str), Some("salience-v1"));
    let explicit = w.engine.remember_turn(RememberTurn { importance: Some(0.3), ..turn(text, None) }).unwrap();
    assert_eq!(explicit.forgetting.base_importance, 0.3);
    assert_eq!(explicit.metadata.get("importance_estimator"), None);
}
