//! Incremental summaries and portraits against the stub LLM: exactly the expected calls,
//! superseding rather than deleting, chunking of long days, and profile.

use membank_engine::core::{Kind, Status};
use membank_engine::{DerivedOutcome, EngineConfig, EngineError, ListRequest, ProfileRequest, SummarizeRequest};
use membank_llm::stub::{Recorded, Reply, StubServer};
use membank_store::ListQuery;

use crate::llm_world::{at, llm_world, llm_world_sized};
use crate::{scope, world};

/// Answers like a model would, naming which prompt it answered, so tests can tell calls apart.
fn echo_stub() -> StubServer {
    StubServer::with(|request: &Recorded| {
        let system = request.system();
        let what = if system.contains("cut into parts") {
            "merged"
        } else if system.contains("summarise one day") {
            "daily summary"
        } else if system.contains("personality from one day") {
            "daily portrait"
        } else if system.contains("daily summaries") {
            "global summary"
        } else if system.contains("daily personality descriptions") {
            "global portrait"
        } else {
            "other"
        };
        Reply::text(&format!("{what} written by the stub"))
    })
}

fn kinds_of(requests: &[Recorded]) -> Vec<String> {
    requests
        .iter()
        .map(|r| {
            let s = r.system();
            if s.contains("cut into parts") {
                "merge"
            } else if s.contains("summarise one day") {
                "daily_summary"
            } else if s.contains("personality from one day") {
                "daily_portrait"
            } else if s.contains("daily summaries") {
                "global_summary"
            } else if s.contains("daily personality descriptions") {
                "global_portrait"
            } else {
                "merge"
            }
            .to_string()
        })
        .collect()
}

fn active(w: &crate::World, user: &str, kind: Kind) -> Vec<membank_engine::core::Memory> {
    let query =
        ListQuery { kinds: vec![kind], statuses: vec![Status::Active], oldest_first: true, ..ListQuery::default() };
    w.engine.list(ListRequest { scope: scope(user), query }).unwrap().memories.into_iter().map(|(m, _)| m).collect()
}

fn run(w: &crate::World) -> membank_engine::SummarizeResponse {
    w.engine.summarize(SummarizeRequest { scope: scope("alice"), force: false }).unwrap()
}

#[test]
fn incremental_summarisation_makes_exactly_the_expected_calls() {
    // The curve `S + 14·I` (the previous default), under which the sweep on day 30 below
    // archives the summaries and keeps every turn: what this test counts is calls.
    let forgetting = membank_engine::core::ForgettingPolicy {
        importance_form: membank_engine::core::ImportanceForm::Linear,
        importance_weight: 14.0,
        ..Default::default()
    };
    let lw = llm_world(echo_stub(), EngineConfig { forgetting, ..EngineConfig::default() });
    let w = &lw.world;
    w.clock.set(at(10, 9));
    let miso = w.turn_at("alice", "I adopted a grey cat named Miso", Some("What a lovely name!"), at(1, 10));
    w.turn_at("alice", "Miso sleeps on my keyboard", None, at(1, 18));
    let cello = w.turn_at("alice", "I started learning the cello", Some("Wonderful!"), at(2, 9));
    w.turn_at("bob", "My dog Pixel chewed my shoes", None, at(1, 11));

    // First run: two days × (summary + portrait) + the two globals.
    let first = run(w);
    assert_eq!(first.llm_calls, 6);
    assert_eq!(lw.stub.count(), 6);
    assert_eq!(
        kinds_of(&lw.stub.requests()),
        ["daily_summary", "daily_portrait", "daily_summary", "daily_portrait", "global_summary", "global_portrait"]
    );
    let day1 = &lw.stub.requests()[0];
    let text = day1.prompt_text();
    assert!(
        text.contains("I adopted a grey cat named Miso")
            && text.contains("Miso sleeps on my keyboard")
            && text.contains("What a lovely name!"),
        "{text}"
    );
    assert!(text.contains("2024-05-01"), "the day is named: {text}");
    assert!(!text.contains("cello") && !text.contains("Pixel"), "only that day's and that user's turns: {text}");
    assert!(
        lw.stub.requests()[4].prompt_text().contains("[2024-05-02] daily summary written by the stub"),
        "globals are made from the dailies, dated"
    );

    let summaries = active(w, "alice", Kind::DailySummary);
    assert_eq!(summaries.len(), 2);
    let s1 = &summaries[0];
    assert_eq!(s1.day.to_string(), "2024-05-01");
    assert_eq!(s1.content.as_deref(), Some("daily summary written by the stub"));
    assert_eq!(s1.derived_from.len(), 2);
    assert!(s1.derived_from.contains(&miso.id));
    assert_eq!(s1.metadata["prompt"], "daily_summary@v1");
    assert_eq!(s1.metadata["model"], "stub-model");
    assert_eq!(s1.metadata["fingerprint"].len(), 64);
    assert_eq!(active(w, "alice", Kind::DailyPortrait).len(), 2);
    let global = active(w, "alice", Kind::GlobalSummary);
    assert_eq!(global.len(), 1);
    assert_eq!(global[0].derived_from.len(), 2);
    assert_eq!(active(w, "alice", Kind::GlobalPortrait).len(), 1);
    assert!(active(w, "bob", Kind::DailySummary).is_empty(), "another user's summaries are not made");
    // Each derived memory has its own vector: a recall restricted to summaries finds them.
    let mut recall = membank_engine::RecallRequest::new(scope("alice"), "daily summary", 5);
    recall.kinds = vec![Kind::DailySummary];
    recall.strengthen = Some(false);
    assert_eq!(w.engine.recall(recall).unwrap().results.len(), 2);

    // Nothing new: no call at all.
    let again = run(w);
    assert_eq!(again.llm_calls, 0);
    assert_eq!(lw.stub.count(), 6);
    assert!(again.days.iter().all(
        |d| matches!(d.summary, DerivedOutcome::Unchanged(_)) && matches!(d.portrait, DerivedOutcome::Unchanged(_))
    ));
    assert!(matches!(again.global_summary, DerivedOutcome::Unchanged(_)));

    // A new turn on day 2: day 2 and the globals are redone, day 1 is not.
    w.turn_at("alice", "My cello teacher is called Ines", None, at(2, 20));
    let third = run(w);
    assert_eq!(third.llm_calls, 4);
    assert_eq!(
        kinds_of(&lw.stub.requests()[6..]),
        ["daily_summary", "daily_portrait", "global_summary", "global_portrait"]
    );
    assert!(lw.stub.requests()[6].prompt_text().contains("Ines"));
    let DerivedOutcome::Made { id: new_day2, replaced: Some(old_day2) } = third.days[1].summary else {
        panic!("{:?}", third.days[1])
    };
    // The old summary is superseded by the new one, not deleted.
    let old = w.engine.show(&scope("alice"), old_day2).unwrap().0;
    assert_eq!(old.status, Status::Superseded);
    assert_eq!(old.superseded_by, Some(new_day2));
    assert!(matches!(third.days[0].summary, DerivedOutcome::Unchanged(_)));

    // Archiving a turn changes its day; restoring it changes it back.
    w.engine.forget(&scope("alice"), cello.id, None).unwrap();
    assert_eq!(run(w).llm_calls, 4);
    w.engine.restore(&scope("alice"), cello.id).unwrap();
    assert_eq!(run(w).llm_calls, 4);
    assert_eq!(run(w).llm_calls, 0);

    // A day whose turns are all gone loses its summary (archived, with the reason) and the globals are redone.
    for m in w
        .engine
        .list(ListRequest {
            scope: scope("alice"),
            query: ListQuery { kinds: vec![Kind::Turn], ..ListQuery::default() },
        })
        .unwrap()
        .memories
    {
        if m.0.day.to_string() == "2024-05-02" {
            w.engine.forget(&scope("alice"), m.0.id, None).unwrap();
        }
    }
    let last = run(w);
    assert_eq!(last.llm_calls, 2, "only the globals");
    assert!(matches!(last.days[1].summary, DerivedOutcome::Archived(_)), "{:?}", last.days[1]);
    assert_eq!(active(w, "alice", Kind::DailySummary).len(), 1);
    assert_eq!(run(w).llm_calls, 0);

    // A sweep that archives summaries does not make the next run pay for them again.
    w.clock.set(at(30, 0));
    w.engine
        .sweep(membank_engine::SweepRequest {
            scope: scope("alice"),
            now: None,
            dry_run: false,
            max_archive_fraction: None,
        })
        .unwrap();
    assert_eq!(run(w).llm_calls, 0);

    // The profile shows the globals and the days they were made from.
    let profile = w.engine.profile(ProfileRequest { scope: scope("alice") }).unwrap();
    assert!(profile.global_summary.is_some() && profile.global_portrait.is_some());
    assert_eq!(profile.days.len(), 1);
    assert_eq!(profile.days[0].day.to_string(), "2024-05-01");
    assert!(profile.days[0].summary.is_some() && profile.days[0].portrait.is_some());
}

#[test]
fn a_long_day_is_chunked_and_merged_never_truncated() {
    // A small window: a few turns per chunk.
    let lw = llm_world_sized(echo_stub(), EngineConfig::default(), 1200, 100);
    let w = &lw.world;
    w.clock.set(at(10, 9));
    for i in 0..40 {
        w.turn_at(
            "alice",
            &format!("Today I visited place marker{i:02} and it was a long story about trains, rivers and old friends"),
            None,
            at(3, 8),
        );
    }
    let response = run(w);
    let requests = lw.stub.requests();
    let daily_summary_calls: Vec<&Recorded> =
        requests.iter().filter(|r| r.system().starts_with("You summarise one day")).collect();
    assert!(daily_summary_calls.len() > 1, "the day is cut into chunks");
    for i in 0..40 {
        let marker = format!("marker{i:02}");
        assert!(daily_summary_calls.iter().any(|r| r.prompt_text().contains(&marker)), "{marker} reached the model");
    }
    assert!(requests.iter().any(|r| r.system().contains("cut into parts")), "partial summaries are merged");
    let summary = &active(w, "alice", Kind::DailySummary)[0];
    assert_eq!(summary.content.as_deref(), Some("merged written by the stub"));
    assert!(summary.metadata["chunks"].parse::<usize>().unwrap() > 1);
    assert_eq!(summary.derived_from.len(), 40);
    assert_eq!(response.llm_calls, requests.len());
    for r in &requests {
        assert!(
            membank_llm::estimate_messages(
                &r.messages().into_iter().map(|(_, c)| membank_llm::Message::user(c)).collect::<Vec<_>>()
            ) + 100
                <= 1200,
            "every call fits the window"
        );
    }
}

#[test]
fn without_an_llm_memory_works_and_summarize_and_chat_say_none_is_configured() {
    let w = world();
    w.turn("alice", "I adopted a grey cat named Miso");
    assert_eq!(w.engine.recall(membank_engine::RecallRequest::new(scope("alice"), "cat", 3)).unwrap().results.len(), 1);
    let err = w.engine.summarize(SummarizeRequest { scope: scope("alice"), force: false }).unwrap_err();
    assert!(matches!(err, EngineError::LlmNotConfigured), "{err:?}");
    assert!(err.to_string().contains("MEMBANK_LLM_BASE_URL"), "{err}");
    assert_eq!(err.code(), "llm_not_configured");
    let err = w.engine.chat(membank_engine::ChatRequest::new(scope("alice"), "hi")).unwrap_err();
    assert!(matches!(err, EngineError::LlmNotConfigured), "{err:?}");
    // The profile is a read: it works (empty) without a model.
    let profile = w.engine.profile(ProfileRequest { scope: scope("alice") }).unwrap();
    assert!(profile.global_summary.is_none() && profile.days.is_empty());
}

#[test]
fn a_failing_model_stops_the_run_with_its_error() {
    let lw = llm_world(StubServer::with(|_| Reply::error(401, "bad key")), EngineConfig::default());
    lw.world.clock.set(at(10, 9));
    lw.world.turn_at("alice", "hello there", None, at(1, 9));
    let err = run_err(&lw.world);
    assert_eq!(err.code(), "llm_unauthorized", "{err}");
    assert!(active(&lw.world, "alice", Kind::DailySummary).is_empty());
}

fn run_err(w: &crate::World) -> EngineError {
    w.engine.summarize(SummarizeRequest { scope: scope("alice"), force: false }).unwrap_err()
}

#[test]
fn summarising_an_unknown_user_is_not_found_and_creates_nobody() {
    let lw = llm_world(echo_stub(), EngineConfig::default());
    let err = lw.world.engine.summarize(SummarizeRequest { scope: scope("nobody"), force: false }).unwrap_err();
    assert!(matches!(err, EngineError::NotFound(_)), "{err:?}");
    assert!(
        membank_store::Store::list_users(lw.world.store.as_ref(), &membank_engine::core::TenantId::default_tenant())
            .unwrap()
            .is_empty()
    );
    assert_eq!(lw.stub.count(), 0);
}
