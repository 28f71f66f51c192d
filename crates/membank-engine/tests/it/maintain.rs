//! Maintenance cycles at the engine's boundary: importance and layers, archiving under
//! either policy, near-duplicate merging without an LLM, fusion and conflict resolution
//! against the scripted stub LLM, dry runs, failures that change nothing, a synthetic
//! year on the injected clock, and isolation between users.

use chrono::Duration;
use membank_engine::core::forgetting::PolicyKind;
use membank_engine::core::{
    EventKind, FadeMemParams, ForgettingPolicy, Kind, Layer, Memory, MemoryId, Status, Timestamp,
};
use membank_engine::{EngineConfig, MaintainRequest, RecallRequest, RememberNote};
use membank_llm::stub::{Recorded, Reply, StubServer};
use membank_store::{EventQuery, Store};

use crate::llm_world::{LlmWorld, llm_world};
use crate::{World, scope, t0, world_with};

fn fademem() -> EngineConfig {
    EngineConfig {
        forgetting: ForgettingPolicy { kind: PolicyKind::FadeMem, ..ForgettingPolicy::default() },
        ..EngineConfig::default()
    }
}

/// Stores a note at `when`, moving the clock there first if it is later.
fn note(w: &World, user: &str, text: &str, when: Timestamp, importance: f64) -> Memory {
    if when > w.engine.now() {
        w.clock.set(when);
    }
    w.engine
        .remember_note(RememberNote {
            scope: scope(user),
            text: text.into(),
            source: membank_engine::core::Source::User,
            occurred_at: Some(when),
            metadata: Default::default(),
            importance: Some(importance),
            clock_from: membank_engine::core::ClockFrom::Event,
        })
        .unwrap()
}

/// One cycle at `now`, with the clock moved there (so later writes are not in its past).
fn maintain(w: &World, user: &str, now: Timestamp) -> membank_engine::MaintainReport {
    if now > w.engine.now() {
        w.clock.set(now);
    }
    w.engine.maintain(MaintainRequest { scope: scope(user), now: Some(now), dry_run: false }).unwrap()
}

fn status(w: &World, user: &str, id: MemoryId) -> Memory {
    w.engine.show(&scope(user), id).unwrap().0
}

fn events_of(w: &World, user: &str, id: MemoryId) -> Vec<(EventKind, serde_json::Value)> {
    w.engine
        .events(&scope(user), &EventQuery { memory_id: Some(id), ..Default::default() })
        .unwrap()
        .into_iter()
        .map(|e| (e.kind, e.data))
        .collect()
}

#[test]
fn near_duplicates_merge_into_the_newest_without_an_llm() {
    let w = world_with(EngineConfig::default());
    let old = note(&w, "ana", "My sister Lena lives in Porto and works as a nurse", t0(), 0.9);
    let other = note(&w, "ana", "I started learning the cello this spring", t0() + Duration::hours(1), 0.5);
    // The old copy is recalled twice before the new one arrives.
    for _ in 0..2 {
        let mut recall = RecallRequest::new(scope("ana"), "Where does Lena live?", 1);
        recall.now = Some(t0() + Duration::hours(2));
        assert_eq!(w.engine.recall(recall).unwrap().results[0].memory.id, old.id);
    }
    let new = note(&w, "ana", "My sister Lena lives in Porto and works as a nurse.", t0() + Duration::days(1), 0.4);

    let report = maintain(&w, "ana", t0() + Duration::days(1) + Duration::hours(1));
    assert_eq!(report.merged.len(), 1, "{report:?}");
    assert_eq!(report.merged[0].old, old.id);
    assert_eq!(report.merged[0].by, new.id);
    assert!(report.merged[0].similarity >= 0.95 && report.merged[0].overlap >= 0.8);
    assert!(report.skipped.iter().any(|s| s.contains("no LLM")), "{:?}", report.skipped);

    let old_now = status(&w, "ana", old.id);
    assert_eq!(old_now.status, Status::Superseded);
    assert_eq!(old_now.superseded_by, Some(new.id));
    let survivor = status(&w, "ana", new.id);
    assert_eq!(survivor.status, Status::Active);
    assert_eq!(survivor.forgetting.recall_count, 2, "the survivor carries the duplicate's recalls");
    assert!(survivor.forgetting.importance >= old_now.forgetting.importance - 1e-9, "and the highest importance");
    assert_eq!(status(&w, "ana", other.id).status, Status::Active);
    // The chain is told by the events.
    let superseded = events_of(&w, "ana", old.id).into_iter().find(|(k, _)| *k == EventKind::Superseded).unwrap().1;
    assert_eq!(superseded["rule"], "near_duplicate");
    assert_eq!(superseded["by"], new.id.to_string());
    let merged = events_of(&w, "ana", new.id).into_iter().find(|(k, _)| *k == EventKind::Merged).unwrap().1;
    assert_eq!(merged["absorbed"][0]["id"], old.id.to_string());
    // Recall no longer returns the superseded copy unless archived ones are asked for.
    let hits = w
        .engine
        .recall(RecallRequest { strengthen: Some(false), ..RecallRequest::new(scope("ana"), "Lena Porto nurse", 5) })
        .unwrap();
    assert!(hits.results.iter().all(|h| h.memory.id != old.id));
    let audit = w
        .engine
        .recall(RecallRequest {
            strengthen: Some(false),
            include_archived: true,
            ..RecallRequest::new(scope("ana"), "Lena Porto nurse", 5)
        })
        .unwrap();
    assert!(audit.results.iter().any(|h| h.memory.id == old.id));
    // It is restorable.
    assert_eq!(w.engine.restore(&scope("ana"), old.id).unwrap().status, Status::Active);
    // A maintained event closes the cycle.
    let log = w.engine.events(&scope("ana"), &EventQuery::default()).unwrap();
    let cycle = log.iter().find(|e| e.kind == EventKind::Maintained).unwrap();
    assert_eq!(cycle.data["merged"], 1);
}

#[test]
fn hundreds_of_near_identical_turns_merge_into_one_in_a_single_cycle() {
    let w = world_with(EngineConfig::default());
    let prefix = "Today I walked along the river past the old mill, the bakery, the bridge and the \
                  park where the children play football every evening after school";
    let notes: Vec<Memory> =
        (0..240).map(|n| note(&w, "ana", &format!("{prefix} {n}"), t0() + Duration::minutes(n), 0.3)).collect();
    note(&w, "ana", "My brother Tomas is a pilot in Lisbon", t0() + Duration::hours(5), 0.8);
    let report = maintain(&w, "ana", t0() + Duration::hours(6));
    let newest = notes.last().unwrap().id;
    assert_eq!(report.merged.len(), notes.len() - 1, "{:?}", report.skipped);
    assert!(report.merged.iter().all(|m| m.by == newest));
    assert!(report.skipped.iter().all(|s| !s.contains("comparisons")), "{:?}", report.skipped);
    // Without an LLM, fusion and conflicts are not even looked for; the report says why.
    assert!(report.skipped.contains(&"fusion and conflict resolution: no LLM is configured".to_string()));
    assert_eq!(status(&w, "ana", newest).status, Status::Active);
    assert_eq!(status(&w, "ana", notes[0].id).superseded_by, Some(newest));
}

#[test]
fn new_memories_past_a_cycles_bound_are_compared_by_the_next_cycle() {
    let w = world_with(EngineConfig::default());
    // 510 unrelated notes, then a near-identical pair: both of the pair are past the 500
    // new memories one cycle compares.
    for n in 0..510 {
        note(&w, "ana", &format!("w{n}a w{n}b w{n}c w{n}d"), t0() + Duration::minutes(n), 0.5);
    }
    let text = "Today I walked along the river past the old mill and the bakery to the bridge";
    let first = note(&w, "ana", &format!("{text} 1"), t0() + Duration::hours(9), 0.5);
    let second = note(&w, "ana", &format!("{text} 2"), t0() + Duration::hours(10), 0.5);
    let report = maintain(&w, "ana", t0() + Duration::hours(11));
    assert!(report.merged.is_empty(), "{report:?}");
    assert!(
        report.skipped.iter().any(|s| s.contains("12 newer memories, deferred to the next cycle")),
        "{:?}",
        report.skipped
    );
    // The next cycle takes them up, though nothing was stored since.
    let report = maintain(&w, "ana", t0() + Duration::hours(12));
    assert_eq!(report.merged.len(), 1, "{report:?}");
    assert_eq!((report.merged[0].old, report.merged[0].by), (first.id, second.id));
    assert!(report.skipped.iter().all(|s| !s.contains("deferred")), "{:?}", report.skipped);
    // And then nothing is left to compare: a third cycle merges nothing and defers nothing.
    let report = maintain(&w, "ana", t0() + Duration::hours(13));
    assert!(report.merged.is_empty() && report.skipped.iter().all(|s| !s.contains("deferred")), "{report:?}");
    assert_eq!(w.store.unmaintained(&scope("ana")).unwrap().memories, Vec::new());
}

#[test]
fn a_changed_fact_is_not_a_duplicate() {
    let w = world_with(EngineConfig::default());
    let paris = note(&w, "ana", "I live in Paris", t0(), 0.5);
    note(&w, "ana", "I live in Berlin", t0() + Duration::days(1), 0.5);
    let report = maintain(&w, "ana", t0() + Duration::days(1));
    assert!(report.merged.is_empty(), "{report:?}");
    assert_eq!(status(&w, "ana", paris.id).status, Status::Active);
}

#[test]
fn a_dry_run_changes_nothing() {
    let w = world_with(fademem());
    let a = note(&w, "ana", "We talked about the weather", t0(), 0.1);
    note(&w, "ana", "We talked about the weather", t0() + Duration::hours(1), 0.1);
    let before = w.engine.events(&scope("ana"), &EventQuery::default()).unwrap().len();
    let report = w
        .engine
        .maintain(MaintainRequest { scope: scope("ana"), now: Some(t0() + Duration::days(200)), dry_run: true })
        .unwrap();
    assert!(report.dry_run);
    assert_eq!(report.archived.len() + report.merged.len(), 2, "{report:?}");
    assert_eq!(w.engine.events(&scope("ana"), &EventQuery::default()).unwrap().len(), before);
    assert_eq!(status(&w, "ana", a.id).status, Status::Active);
}

#[test]
fn fademem_promotes_what_is_used_and_archives_what_fades() {
    let w = world_with(fademem());
    let used = note(&w, "ana", "Ana is allergic to penicillin", t0(), 0.9);
    let idle = note(&w, "ana", "nice weather today", t0(), 0.1);
    let mut archived_on = None;
    for day in 1..=60 {
        let now = t0() + Duration::days(day);
        if day % 3 == 0 {
            let mut recall = RecallRequest::new(scope("ana"), "is Ana allergic to penicillin", 1);
            recall.now = Some(now);
            recall.kinds = vec![Kind::Note];
            let hits = w.engine.recall(recall).unwrap();
            assert_eq!(hits.results[0].memory.id, used.id);
        }
        let report = maintain(&w, "ana", now + Duration::hours(12));
        if report.archived.iter().any(|a| a.id == idle.id) {
            archived_on.get_or_insert(day);
        }
    }
    let used_now = status(&w, "ana", used.id);
    assert_eq!(used_now.forgetting.layer, Layer::Long, "recalled every three days: {:?}", used_now.forgetting);
    assert_eq!(used_now.status, Status::Active);
    let promoted = events_of(&w, "ana", used.id).into_iter().find(|(k, _)| *k == EventKind::Promoted).unwrap().1;
    assert!(promoted["importance"].as_f64().unwrap() >= FadeMemParams::default().promote);
    let day = archived_on.expect("the idle memory fades below ε within 60 days");
    assert!(day > 3, "not at once: {day}");
    let archived = events_of(&w, "ana", idle.id).into_iter().find(|(k, _)| *k == EventKind::Archived).unwrap().1;
    assert_eq!(archived["policy"], "fademem");
    assert!(archived["v"].as_f64().unwrap() < archived["epsilon"].as_f64().unwrap());
    assert!(archived["lambda"].as_f64().unwrap() > 0.0);
    assert_eq!(archived["layer"], "short");
}

/// A synthetic year: one memory recalled every week, one never; daily maintenance. The
/// recalled one must survive at least ten times longer, under both policies.
#[test]
fn a_weekly_recall_keeps_a_memory_ten_times_longer_under_both_policies() {
    for kind in [PolicyKind::MemoryBank, PolicyKind::FadeMem] {
        let config = EngineConfig {
            forgetting: ForgettingPolicy { kind, ..ForgettingPolicy::default() },
            ..EngineConfig::default()
        };
        let w = world_with(config);
        let weekly = note(&w, "ana", "Ana's passport expires in March 2027", t0(), 0.5);
        let never = note(&w, "ana", "Leo brought olives to the picnic", t0(), 0.5);
        let (mut weekly_gone, mut never_gone) = (None, None);
        for day in 1..=365i64 {
            let now = t0() + Duration::days(day);
            if day % 7 == 0 && weekly_gone.is_none() {
                let mut recall = RecallRequest::new(scope("ana"), "when does my passport expire", 1);
                recall.now = Some(now);
                assert_eq!(w.engine.recall(recall).unwrap().results[0].memory.id, weekly.id);
            }
            let report = maintain(&w, "ana", now + Duration::hours(14));
            for a in &report.archived {
                if a.id == weekly.id {
                    weekly_gone.get_or_insert(day);
                }
                if a.id == never.id {
                    never_gone.get_or_insert(day);
                }
            }
        }
        let never_days = never_gone.unwrap_or(365) as f64;
        let weekly_days = weekly_gone.unwrap_or(365) as f64;
        eprintln!(
            "{}: never recalled archived on day {never_days}, weekly recalled {}",
            kind.as_str(),
            weekly_gone.map_or("survived the year".to_string(), |d| format!("archived on day {d}"))
        );
        assert!(
            weekly_days >= 10.0 * never_days,
            "{}: weekly {weekly_days} days, never {never_days} days",
            kind.as_str()
        );
    }
}

#[test]
fn one_users_activity_never_changes_another_users_importance_or_layers() {
    let w = world_with(fademem());
    let bob = note(&w, "bob", "Bob's daughter is called Mia", t0(), 0.5);
    maintain(&w, "bob", t0() + Duration::hours(1));
    let before = status(&w, "bob", bob.id);
    // Ana's memories say the same words; she recalls them daily and is maintained daily.
    note(&w, "ana", "Bob's daughter is called Mia", t0(), 0.5);
    for day in 1..=20 {
        let now = t0() + Duration::days(day);
        let mut recall = RecallRequest::new(scope("ana"), "Bob's daughter Mia", 3);
        recall.now = Some(now);
        w.engine.recall(recall).unwrap();
        maintain(&w, "ana", now + Duration::hours(1));
    }
    let after = status(&w, "bob", bob.id);
    assert_eq!(before.forgetting, after.forgetting);
    assert!(w.store.recent_queries(&scope("bob"), 100).unwrap().is_empty());
    assert_eq!(w.store.recent_queries(&scope("ana"), 100).unwrap().len(), 16, "bounded per user");
}

// ---- with the scripted stub LLM ----

/// Answers by prompt: fusion, conflict and rating replies from the given functions.
fn stub(fuse: &'static str, conflict: &'static str) -> StubServer {
    StubServer::with(move |request: &Recorded| {
        let system = request.system();
        if system.contains("Write ONE memory statement") {
            Reply::text(fuse)
        } else if system.contains("Decide how B relates to A") {
            Reply::text(conflict)
        } else {
            Reply::error(500, "unexpected prompt")
        }
    })
}

fn fusion_config() -> EngineConfig {
    // The hashing embedder's cosines are coarse: cluster at 0.5 in this test.
    let mut config = fademem();
    config.forgetting.fademem.fusion_similarity = 0.5;
    config
}

#[test]
fn fusion_writes_one_fused_memory_from_a_fading_cluster() {
    let LlmWorld { world: w, stub } =
        llm_world(stub("Ana drinks green tea with honey every morning and evening.", "{}"), fusion_config());
    let a = note(&w, "ana", "Ana drinks green tea with honey in the morning", t0(), 0.2);
    let b = note(&w, "ana", "Ana drinks green tea with honey in the evening too", t0() + Duration::days(1), 0.2);
    maintain(&w, "ana", t0() + Duration::days(1) + Duration::hours(1));
    // Let them fade into the consolidation band (ε ≤ v < 0.35), then run a cycle.
    let policy = w.engine.config().forgetting;
    let mut day = 2;
    loop {
        let now = t0() + Duration::days(day);
        let v = policy.retention_of(&status(&w, "ana", a.id).forgetting, now);
        if v < policy.fademem.consolidation_threshold {
            break;
        }
        day += 1;
        assert!(day < 200);
    }
    let report = maintain(&w, "ana", t0() + Duration::days(day));
    assert_eq!(report.fused.len(), 1, "{report:?}");
    let fused = status(&w, "ana", report.fused[0]);
    assert_eq!(fused.kind, Kind::Fused);
    assert_eq!(fused.content.as_deref(), Some("Ana drinks green tea with honey every morning and evening."));
    let mut sources = fused.derived_from.clone();
    sources.sort();
    let mut expected = vec![a.id, b.id];
    expected.sort();
    assert_eq!(sources, expected);
    assert_eq!(fused.metadata.get("prompt").map(String::as_str), Some("fuse@v1"));
    assert_eq!(fused.metadata.get("model").map(String::as_str), Some("stub-model"));
    assert!(fused.forgetting.decay_factor < 1.0, "fused memories decay slower");
    for id in [a.id, b.id] {
        let source = status(&w, "ana", id);
        assert_eq!(source.status, Status::Superseded);
        assert_eq!(source.superseded_by, Some(fused.id));
    }
    // It has its own vector: a recall finds it.
    let hits = w
        .engine
        .recall(RecallRequest { strengthen: Some(false), ..RecallRequest::new(scope("ana"), "green tea honey", 1) })
        .unwrap();
    assert_eq!(hits.results[0].memory.id, fused.id);
    // The prompt quoted both sources.
    let prompts: Vec<String> = stub.requests().iter().map(|r| r.prompt_text()).collect();
    assert!(prompts.iter().any(|p| p.contains("in the morning") && p.contains("in the evening too")), "{prompts:?}");
    let created = events_of(&w, "ana", fused.id);
    assert!(created.iter().any(|(k, d)| *k == EventKind::Fused && d["prompt"] == "fuse@v1"));
}

fn conflict_pair(w: &World) -> (Memory, Memory) {
    let old = note(w, "ana", "My cat is called Miso and she is grey", t0(), 0.6);
    let new = note(w, "ana", "My cat is called Tofu and she is grey", t0() + Duration::days(3), 0.6);
    (old, new)
}

#[test]
fn a_conflict_supersedes_the_loser_and_logs_the_reason() {
    let reply =
        r#"{"relation": "contradictory", "current": "B", "merged": "", "reason": "the newer memory renames the cat"}"#;
    let LlmWorld { world: w, stub: _stub } = llm_world(stub("unused", reply), fademem());
    let (old, new) = conflict_pair(&w);
    let report = maintain(&w, "ana", t0() + Duration::days(3) + Duration::hours(1));
    assert_eq!(report.conflicts, 1, "{report:?}");
    let loser = status(&w, "ana", old.id);
    assert_eq!(loser.status, Status::Superseded);
    assert_eq!(loser.superseded_by, Some(new.id));
    assert_eq!(
        loser.forgetting.decay_factor,
        FadeMemParams::default().conflict_decay_factor,
        "the loser decays faster"
    );
    assert_eq!(status(&w, "ana", new.id).status, Status::Active);
    let decision = events_of(&w, "ana", new.id).into_iter().find(|(k, _)| *k == EventKind::Conflict).unwrap().1;
    assert_eq!(decision["relation"], "contradictory");
    assert_eq!(decision["reason"], "the newer memory renames the cat");
    assert_eq!(decision["prompt"], "conflict@v1");
    assert_eq!(decision["model"], "stub-model");
}

#[test]
fn a_malformed_answer_changes_nothing_and_is_reported() {
    for reply in [
        "sure, B is newer",
        r#"{"relation": "contradictory", "current": "both", "merged": "", "reason": "x"}"#,
        r#"{"relation": "maybe"}"#,
    ] {
        let LlmWorld { world: w, stub: _stub } = llm_world(stub("unused", reply), fademem());
        let (old, new) = conflict_pair(&w);
        let report = maintain(&w, "ana", t0() + Duration::days(3) + Duration::hours(1));
        assert_eq!(report.conflicts, 0);
        assert!(report.skipped.iter().any(|s| s.contains("conflict between")), "{reply}: {:?}", report.skipped);
        for id in [old.id, new.id] {
            let m = status(&w, "ana", id);
            assert_eq!(m.status, Status::Active);
            assert_eq!(m.forgetting.decay_factor, 1.0);
        }
        assert!(events_of(&w, "ana", new.id).iter().all(|(k, _)| *k != EventKind::Conflict));
    }
}

#[test]
fn an_llm_that_fails_mid_cycle_leaves_its_memories_unchanged() {
    let LlmWorld { world: w, stub: _stub } =
        llm_world(StubServer::with(|_| Reply::error(500, "down")), fusion_config());
    let (old, new) = conflict_pair(&w);
    let report = maintain(&w, "ana", t0() + Duration::days(3) + Duration::hours(1));
    assert!(report.skipped.iter().any(|s| s.contains("conflict between")), "{:?}", report.skipped);
    for id in [old.id, new.id] {
        assert_eq!(status(&w, "ana", id).status, Status::Active);
    }
    // The cycle itself completed and was logged.
    assert!(
        w.engine.events(&scope("ana"), &EventQuery::default()).unwrap().iter().any(|e| e.kind == EventKind::Maintained)
    );
}

#[test]
fn a_dry_run_makes_no_llm_calls() {
    let LlmWorld { world: w, stub } = llm_world(stub("x", "{}"), fademem());
    conflict_pair(&w);
    let report = w
        .engine
        .maintain(MaintainRequest { scope: scope("ana"), now: Some(t0() + Duration::days(4)), dry_run: true })
        .unwrap();
    assert!(report.skipped.iter().any(|s| s.contains("dry run")), "{:?}", report.skipped);
    assert!(stub.requests().is_empty());
}

/// Rates every memory of an `importance@v1` request at `rating`; anything else is a 500.
fn rating_stub(rating: f64) -> StubServer {
    StubServer::with(move |request: &Recorded| {
        if !request.system().contains(r#""ratings""#) {
            return Reply::error(500, "unexpected prompt");
        }
        let ids: Vec<String> = request
            .prompt_text()
            .split("<memory id=\"M")
            .skip(1)
            .map(|block| block.chars().take_while(char::is_ascii_digit).collect())
            .collect();
        let ratings: Vec<String> =
            ids.iter().map(|id| format!(r#"{{"id": "M{id}", "importance": {rating}}}"#)).collect();
        Reply::text(&format!(r#"{{"ratings": [{}]}}"#, ratings.join(", ")))
    })
}

#[test]
fn the_chat_model_rates_estimated_importance_unless_told_not_to() {
    // By default a configured model's rating replaces the estimator's.
    let LlmWorld { world: w, stub } = llm_world(rating_stub(0.93), EngineConfig::default());
    let a = w.note_at("ana", "I adopted a grey cat named Miso", t0());
    let b = w.note_at("ana", "Thanks, that was helpful", t0());
    assert_eq!(a.metadata.get("importance_source").map(String::as_str), Some("estimator"));
    let report = maintain(&w, "ana", t0() + Duration::hours(1));
    assert_eq!(report.rated, 2, "{report:?}");
    assert_eq!(stub.requests().len(), 1);
    for id in [a.id, b.id] {
        let m = status(&w, "ana", id);
        assert_eq!(m.forgetting.base_importance, 0.93);
        assert_eq!(m.metadata.get("importance_source").map(String::as_str), Some("llm"));
    }

    // `llm_rates_importance = false`: no call, the estimator's values stand, and the report
    // says why.
    let config = EngineConfig { llm_rates_importance: false, ..EngineConfig::default() };
    let LlmWorld { world: w, stub } = llm_world(rating_stub(0.93), config);
    let a = w.note_at("ana", "I adopted a grey cat named Miso", t0());
    let report = maintain(&w, "ana", t0() + Duration::hours(1));
    assert_eq!(report.rated, 0);
    assert!(stub.requests().is_empty(), "{:?}", stub.requests());
    assert!(report.skipped.iter().any(|s| s.contains("rate_importance = false")), "{:?}", report.skipped);
    let m = status(&w, "ana", a.id);
    assert_eq!(m.forgetting.base_importance, a.forgetting.base_importance);
    assert_eq!(m.metadata.get("importance_source").map(String::as_str), Some("estimator"));
}
