//! Reminiscence end to end: archived memories are a cold tier that a recall consults when
//! the active memories do not answer well, and a strengthening recall brings what it found
//! there back with savings.

use chrono::Duration;
use membank_engine::core::forgetting::ForgettingPolicy;
use membank_engine::core::{Clock, EventKind, Memory, Status};
use membank_engine::{ChatRequest, EngineConfig, RecallRequest, RecallResponse, Reminisce, SweepRequest};
use membank_llm::stub::{Reply, StubServer};
use membank_store::EventQuery;

use crate::llm_world::llm_world;
use crate::{scope, world, world_with};

fn recall(w: &crate::World, user: &str, query: &str, mode: Reminisce, strengthen: Option<bool>) -> RecallResponse {
    let request = RecallRequest { reminisce: mode, strengthen, ..RecallRequest::new(scope(user), query, 5) };
    w.engine.recall(request).unwrap()
}

fn ids(response: &RecallResponse) -> Vec<membank_engine::core::MemoryId> {
    response.results.iter().map(|h| h.memory.id).collect()
}

/// Ana's day: a fact about her sister, archived, and six active turns about other things
/// (more than a recall's k = 5, so the bar `a_k` is an active memory's cosine).
fn ana_with_an_archived_fact(w: &crate::World) -> (Memory, Vec<Memory>) {
    let fact = w.turn("ana", "my sister Lena lives in Porto and works as a nurse");
    let others = vec![
        w.turn("ana", "I had pasta for lunch"),
        w.turn("ana", "the weather is grey"),
        w.turn("ana", "my bike has a flat tyre"),
        w.turn("ana", "the train was late again"),
        w.turn("ana", "I watched a film about whales"),
        w.turn("ana", "our kitchen tap drips"),
    ];
    w.engine.forget(&scope("ana"), fact.id, Some("test")).unwrap();
    w.advance_days(1);
    (fact, others)
}

#[test]
fn the_archive_is_consulted_for_a_question_about_an_archived_fact() {
    let w = world();
    let (fact, _) = ana_with_an_archived_fact(&w);
    let response = recall(&w, "ana", "where does my sister Lena live", Reminisce::Auto, Some(false));
    let r = response.reminiscence;
    assert!(r.probed && r.consulted, "{r:?}");
    let (a, b) = (r.active_bar.expect("six active memories, k = 5"), r.archived_best.unwrap());
    assert!(b > a + r.margin, "b = {b} should lead a_k = {a} by more than {}", r.margin);
    assert!(r.active_best.is_some_and(|best| best >= a), "{r:?}");
    let hit = response.results.iter().find(|h| h.memory.id == fact.id).expect("the archived fact is recalled");
    assert!(hit.reminisced);
    assert_eq!(response.results[0].memory.id, fact.id, "it answers best");
    assert!(response.results.iter().filter(|h| h.memory.id != fact.id).all(|h| !h.reminisced));
    assert_eq!(r.archived_hits, 1);
    // An inspection wrote nothing: the fact is still archived.
    assert_eq!(w.engine.show(&scope("ana"), fact.id).unwrap().0.status, Status::Archived);
}

#[test]
fn the_archive_stays_closed_when_the_active_memories_answer() {
    let w = world();
    // Five active memories about Lena (a recall's k), each a better match than the archived
    // umbrella: the archive has nothing that would enter the top five.
    let answer = w.turn("ana", "my sister Lena lives in Porto");
    w.turn("ana", "Lena is my older sister and she lives by the sea");
    w.turn("ana", "my sister Lena moved to Porto last year");
    w.turn("ana", "I visit my sister Lena in Porto every summer");
    w.turn("ana", "Lena says Porto is where she will live for good");
    let old = w.turn("ana", "I bought a new umbrella");
    w.engine.forget(&scope("ana"), old.id, None).unwrap();
    w.advance_days(1);
    let auto = recall(&w, "ana", "where does my sister Lena live", Reminisce::Auto, Some(false));
    let never = recall(&w, "ana", "where does my sister Lena live", Reminisce::Never, Some(false));
    let r = auto.reminiscence;
    assert!(r.probed && !r.consulted, "{r:?}");
    assert!(r.archived_best.is_none_or(|b| b <= r.active_bar.expect("five active") + r.margin), "{r:?}");
    assert_eq!(auto.results[0].memory.id, answer.id);
    // Exactly the active recall's hits, scores and parts.
    assert_eq!(ids(&auto), ids(&never));
    for (x, y) in auto.results.iter().zip(&never.results) {
        assert_eq!((x.score, x.dense, x.lexical, x.parts), (y.score, y.dense, y.lexical, y.parts));
        assert!(!x.reminisced && !y.reminisced);
    }
    assert_eq!(auto.reminiscence.archived_hits, 0);
}

#[test]
fn reminisce_never_behaves_like_before() {
    let w = world();
    let (fact, others) = ana_with_an_archived_fact(&w);
    let never = recall(&w, "ana", "where does my sister Lena live", Reminisce::Never, None);
    assert!(!ids(&never).contains(&fact.id));
    let r = never.reminiscence;
    assert!(!r.probed && !r.consulted && r.archived_hits == 0 && r.active_best.is_none() && r.archived_best.is_none());
    assert!(never.results.iter().all(|h| !h.reminisced && others.iter().any(|o| o.id == h.memory.id)));
    // It strengthened only active memories and left the archived one alone.
    assert_eq!(w.engine.show(&scope("ana"), fact.id).unwrap().0.status, Status::Archived);
    let events =
        w.engine.events(&scope("ana"), &EventQuery { memory_id: Some(fact.id), ..Default::default() }).unwrap();
    assert_eq!(events.iter().map(|e| e.kind).collect::<Vec<_>>(), [EventKind::Created, EventKind::Archived]);
}

#[test]
fn a_restored_memory_gets_its_savings_and_the_event() {
    // The paper's curve on a one-day unit, so the sweep archives within days.
    let policy = ForgettingPolicy { unit: Duration::days(1), importance_weight: 0.0, ..ForgettingPolicy::default() };
    let w = world_with(EngineConfig { forgetting: policy, ..EngineConfig::default() });
    let fact = w.turn("ana", "my sister Lena lives in Porto and works as a nurse");
    w.turn("ana", "I had pasta for lunch");
    for _ in 0..2 {
        w.advance_days(1);
        recall(&w, "ana", "sister Lena Porto nurse", Reminisce::Never, None);
    }
    assert_eq!(w.engine.show(&scope("ana"), fact.id).unwrap().0.forgetting.strength.get(), 3.0);
    w.advance_days(30);
    let swept = w
        .engine
        .sweep(SweepRequest { scope: scope("ana"), now: None, dry_run: false, max_archive_fraction: None })
        .unwrap();
    assert!(swept.archived.iter().any(|a| a.id == fact.id));
    let archived_at = w.clock.now();
    w.advance_days(40);
    let now = w.clock.now();
    let response = recall(&w, "ana", "where does my sister Lena live", Reminisce::Auto, None);
    assert!(response.strengthened && response.reminiscence.consulted);
    let hit = response.results.iter().find(|h| h.memory.id == fact.id).unwrap();
    assert!(hit.reminisced);
    assert_eq!(hit.memory.status, Status::Active, "the hit is the memory as it is now");
    assert_eq!(hit.memory.forgetting.strength.get(), 4.0, "S at archive (3) plus one, not a new memory's 2");
    assert_eq!(hit.memory.forgetting.last_recalled_at, now);
    assert_eq!(hit.retention, 1.0);
    let (stored, retention) = w.engine.show(&scope("ana"), fact.id).unwrap();
    assert_eq!((stored.status, retention), (Status::Active, 1.0));
    let events =
        w.engine.events(&scope("ana"), &EventQuery { memory_id: Some(fact.id), ..Default::default() }).unwrap();
    let event = events.iter().find(|e| e.kind == EventKind::Reminisced).expect("a reminisced event");
    assert_eq!(event.data["query_id"], response.query_id.as_str());
    assert_eq!(event.data["rank"], 1);
    assert_eq!((event.data["strength_before"].as_f64(), event.data["strength_after"].as_f64()), (Some(3.0), Some(4.0)));
    assert_eq!(event.data["strength_at_archive"].as_f64(), Some(3.0));
    assert_eq!(event.data["archived_at"], archived_at.to_rfc3339());
    assert!(events.iter().all(|e| e.kind != EventKind::Strengthened || e.at < archived_at), "no plain strengthening");
    // The curve replays it as a jump back to full retention, and the overview counts it active again.
    let curve = w.engine.curve(&scope("ana"), fact.id, Some(10)).unwrap();
    let jump = curve.events.iter().find(|(e, _)| e.kind == EventKind::Reminisced).and_then(|(_, jump)| *jump).unwrap();
    assert!(jump.0 < 0.05 && jump.1 == 1.0, "{jump:?}");
    let overview = w.engine.overview(&scope("ana")).unwrap();
    assert_eq!(overview.days.last().unwrap().counts, overview.current);
    // Both turns were archived; each hit from the archive came back (the pasta turn too
    // when it filled the top k).
    assert_eq!(overview.current.archived, 2 - response.reminiscence.archived_hits as u64);
    // Back in the active memories: the next recall finds it without the archive.
    let again = recall(&w, "ana", "where does my sister Lena live", Reminisce::Never, Some(false));
    assert_eq!(again.results[0].memory.id, fact.id);
}

#[test]
fn erased_memories_are_never_reminisced() {
    let w = world();
    let (fact, _) = ana_with_an_archived_fact(&w);
    w.engine.erase(&scope("ana"), fact.id).unwrap();
    for mode in [Reminisce::Auto, Reminisce::Always] {
        let response = recall(&w, "ana", "where does my sister Lena live", mode, None);
        assert!(!ids(&response).contains(&fact.id), "{mode}");
        assert_eq!(response.reminiscence.archived_hits, 0);
    }
    assert!(!recall(&w, "ana", "where does my sister Lena live", Reminisce::Auto, None).reminiscence.consulted);
    assert_eq!(w.engine.show(&scope("ana"), fact.id).unwrap().0.status, Status::Erased);
}

#[test]
fn superseded_memories_are_never_reminisced() {
    let w = world();
    let old = w.turn("ana", "my sister Lena lives in Porto and works as a nurse");
    w.turn("ana", "I had pasta for lunch");
    let edited = w
        .engine
        .edit(membank_engine::EditRequest {
            scope: scope("ana"),
            id: old.id,
            text: None,
            user_text: Some("my bike is blue".into()),
            assistant_text: None,
        })
        .unwrap();
    assert_eq!(w.engine.show(&scope("ana"), old.id).unwrap().0.status, Status::Superseded);
    let response = recall(&w, "ana", "where does my sister Lena live", Reminisce::Always, None);
    assert!(!ids(&response).contains(&old.id));
    assert!(ids(&response).contains(&edited.id) || response.results.iter().all(|h| !h.reminisced));
}

#[test]
fn another_users_archive_is_never_consulted() {
    let w = world();
    let bens = w.turn("ben", "my sister Lena lives in Porto and works as a nurse");
    w.engine.forget(&scope("ben"), bens.id, None).unwrap();
    w.turn("ana", "I had pasta for lunch");
    for mode in [Reminisce::Auto, Reminisce::Always] {
        let response = recall(&w, "ana", "where does my sister Lena live", mode, None);
        assert!(!ids(&response).contains(&bens.id), "{mode}");
        assert!(response.reminiscence.archived_best.is_none());
        assert_eq!(response.reminiscence.archived_hits, 0);
    }
    assert!(!recall(&w, "ana", "where does my sister Lena live", Reminisce::Auto, None).reminiscence.consulted);
    assert_eq!(w.engine.show(&scope("ben"), bens.id).unwrap().0.status, Status::Archived);
    // Ben's own recall does find it.
    let his = recall(&w, "ben", "where does my sister Lena live", Reminisce::Auto, Some(false));
    assert_eq!(ids(&his), [bens.id]);
    assert!(his.reminiscence.consulted && his.results[0].reminisced);
}

#[test]
fn always_ranks_over_the_archive_and_an_audit_never_reminisces() {
    let w = world();
    let (fact, _) = ana_with_an_archived_fact(&w);
    let always = recall(&w, "ana", "where does my sister Lena live", Reminisce::Always, Some(false));
    assert!(always.reminiscence.consulted && !always.reminiscence.probed);
    assert!(always.results.iter().any(|h| h.memory.id == fact.id && h.reminisced));
    // An audit sees the archive anyway: its archived hits are not reminisced and a
    // strengthening audit restores and strengthens nothing archived.
    let audit = RecallRequest {
        include_archived: true,
        reminisce: Reminisce::Always,
        ..RecallRequest::new(scope("ana"), "where does my sister Lena live", 5)
    };
    let audit = w.engine.recall(audit).unwrap();
    let hit = audit.results.iter().find(|h| h.memory.id == fact.id).unwrap();
    assert!(!hit.reminisced && !audit.reminiscence.consulted && !audit.reminiscence.probed);
    let stored = w.engine.show(&scope("ana"), fact.id).unwrap().0;
    assert_eq!((stored.status, stored.forgetting.strength.get()), (Status::Archived, 1.0));
}

#[test]
fn reminisce_reads_its_three_values_and_names_them_when_refused() {
    for mode in Reminisce::ALL {
        assert_eq!(mode.as_str().parse::<Reminisce>().unwrap(), *mode);
    }
    assert_eq!(Reminisce::default(), Reminisce::Auto);
    for bad in ["", "Auto", "sometimes", " never", &"x".repeat(10_000)] {
        let err = bad.parse::<Reminisce>().unwrap_err();
        assert_eq!(err.field, "reminisce");
        assert!(err.reason.contains("auto, never, always"), "{err}");
        assert!(err.reason.len() < 120, "the value is cut: {}", err.reason.len());
    }
}

#[test]
fn chat_reminisces_and_says_so_in_what_it_recalled() {
    let lw = llm_world(StubServer::scripted(vec![Reply::text("Lena lives in Porto [M1].")]), EngineConfig::default());
    let w = &lw.world;
    let (fact, _) = ana_with_an_archived_fact(w);
    let response = w.engine.chat(ChatRequest::new(scope("ana"), "Where does my sister Lena live?")).unwrap();
    let hit = response.recalled.iter().find(|h| h.memory.id == fact.id).expect("recalled from the archive");
    assert!(hit.reminisced);
    assert_eq!(
        w.engine.show(&scope("ana"), fact.id).unwrap().0.status,
        Status::Active,
        "retrieved mode brought it back"
    );
}

#[test]
fn under_the_used_mode_a_confirmation_brings_an_archived_hit_back_with_savings() {
    use membank_engine::core::forgetting::RecallMode;
    let policy = ForgettingPolicy { recall_mode: RecallMode::Used, ..ForgettingPolicy::default() };
    let w = world_with(EngineConfig { forgetting: policy, ..EngineConfig::default() });
    let (fact, others) = ana_with_an_archived_fact(&w);
    // Under `used` a recall strengthens nothing, so it brings nothing back either.
    let response = recall(&w, "ana", "where does my sister Lena live", Reminisce::Auto, None);
    assert!(!response.strengthened);
    assert!(response.results.iter().any(|h| h.memory.id == fact.id && h.reminisced));
    assert_eq!(w.engine.show(&scope("ana"), fact.id).unwrap().0.status, Status::Archived);
    // The reply used it (twice over) and one active memory: the fact comes back with savings
    // (S when archived, 1, plus one); the repeat is an ordinary strengthening, which on the
    // day of its return adds nothing more (spaced strengthening), but is logged.
    w.advance_days(1);
    let now = w.clock.now();
    let used =
        w.engine.confirm_used(&scope("ana"), &[fact.id, others[0].id, fact.id], Some(&response.query_id)).unwrap();
    assert_eq!(used.len(), 3);
    let (stored, retention) = w.engine.show(&scope("ana"), fact.id).unwrap();
    assert_eq!((stored.status, retention), (Status::Active, 1.0));
    assert_eq!(stored.forgetting.strength.get(), 2.0, "savings (1 + 1), then a same-day strengthening");
    assert_eq!(stored.forgetting.last_recalled_at, now);
    assert_eq!(w.engine.show(&scope("ana"), others[0].id).unwrap().0.forgetting.strength.get(), 2.0);
    let events =
        w.engine.events(&scope("ana"), &EventQuery { memory_id: Some(fact.id), ..Default::default() }).unwrap();
    let kinds: Vec<EventKind> = events.iter().map(|e| e.kind).collect();
    assert_eq!(kinds.iter().filter(|k| **k == EventKind::Reminisced).count(), 1, "{kinds:?}");
    assert_eq!(kinds.iter().filter(|k| **k == EventKind::Strengthened).count(), 1, "{kinds:?}");
    let event = events.iter().find(|e| e.kind == EventKind::Reminisced).unwrap();
    assert_eq!(event.data["query_id"], response.query_id.as_str());
    assert_eq!(event.data["confirmed_used"], true);
    assert_eq!((event.data["strength_before"].as_f64(), event.data["strength_after"].as_f64()), (Some(1.0), Some(2.0)));
    // A confirmation of an erased memory brings nothing back.
    let gone = w.turn("ana", "my old phone number was 555 0199");
    w.engine.forget(&scope("ana"), gone.id, None).unwrap();
    w.engine.erase(&scope("ana"), gone.id).unwrap();
    let confirmed = w.engine.confirm_used(&scope("ana"), &[gone.id], None).unwrap();
    assert_eq!(confirmed.iter().map(|m| m.status).collect::<Vec<_>>(), [Status::Erased]);
    assert_eq!(w.engine.show(&scope("ana"), gone.id).unwrap().0.status, Status::Erased);
}
