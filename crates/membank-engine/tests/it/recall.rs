//! Recall: immediate visibility, scores of their own, strengthening, lexical CJK.

use membank_engine::RecallRequest;
use membank_engine::core::{EventKind, Kind};
use membank_store::{EventQuery, Store};

use crate::{scope, world};

#[test]
fn a_turn_is_recallable_as_soon_as_remember_returns() {
    let w = world();
    w.turn("ana", "I went hiking on Mount Tam with my sister");
    let cat = w.turn("ana", "My cat is called Miso and she loves tuna");
    let response = w.engine.recall(RecallRequest::new(scope("ana"), "what is the name of my cat", 1)).unwrap();
    assert_eq!(response.results.len(), 1);
    let hit = &response.results[0];
    assert_eq!(hit.memory.id, cat.id);
    assert_eq!(hit.memory.day.to_string(), "2024-05-01");
    assert!(hit.lexical.is_some() && hit.dense.is_some());
    assert!(hit.score > 0.0);
}

/// A recall under load (every core counted as running a search, so the lexical search
/// runs after the dense one instead of beside it, and no scan splits) answers exactly as
/// one alone; the archive's probe too.
#[test]
fn a_recall_without_a_spare_core_answers_as_one_with_it() {
    let w = world();
    for text in ["tea with lemon", "coffee with milk", "tea and biscuits at noon", "my cat Miso likes tea"] {
        w.turn("ana", text);
    }
    let ask = |reminisce: membank_engine::Reminisce| {
        let mut request = RecallRequest::new(scope("ana"), "tea with my cat", 3);
        request.strengthen = Some(false);
        request.reminisce = reminisce;
        let response = w.engine.recall(request).unwrap();
        response.results.iter().map(|h| (h.memory.id, h.score.to_bits())).collect::<Vec<_>>()
    };
    let alone = (ask(membank_engine::Reminisce::Never), ask(membank_engine::Reminisce::Auto));
    let guards: Vec<_> = (0..membank_store::parallel::cores()).map(|_| membank_store::parallel::working()).collect();
    assert!(!membank_store::parallel::spare_core());
    let loaded = (ask(membank_engine::Reminisce::Never), ask(membank_engine::Reminisce::Auto));
    drop(guards);
    assert_eq!(alone, loaded);
    assert_eq!(alone.0.len(), 3);
}

#[test]
fn every_hit_carries_its_own_scores() {
    let w = world();
    for text in ["tea with lemon", "coffee with milk", "tea and biscuits at noon", "green tea ceremony"] {
        w.turn("ana", text);
    }
    let response = w.engine.recall(RecallRequest::new(scope("ana"), "tea", 3)).unwrap();
    let scores: Vec<f64> = response.results.iter().map(|h| h.score).collect();
    assert!(scores.windows(2).all(|p| p[0] >= p[1]), "{scores:?}");
    let distinct: std::collections::HashSet<u64> = scores.iter().map(|s| s.to_bits()).collect();
    assert!(distinct.len() > 1, "all hits carry the same score: {scores:?}");
}

#[test]
fn recall_strengthens_what_it_returns_and_logs_it() {
    let w = world();
    let m = w.turn("ana", "I am allergic to peanuts");
    w.advance_days(2);
    let response = w.engine.recall(RecallRequest::new(scope("ana"), "peanuts allergy", 5)).unwrap();
    assert!(response.strengthened);
    let after = &response.results[0].memory;
    assert_eq!(after.forgetting.strength.get(), 2.0);
    assert_eq!(after.forgetting.recall_count, 1);
    assert_eq!(after.forgetting.last_recalled_at, w.engine.now());
    let events = w.store.events(&scope("ana"), &EventQuery { memory_id: Some(m.id), ..Default::default() }).unwrap();
    let kinds: Vec<EventKind> = events.iter().map(|e| e.kind).collect();
    assert_eq!(kinds, [EventKind::Created, EventKind::Recalled, EventKind::Strengthened]);
    assert_eq!(events[2].data["strength_after"], 2.0);
    assert_eq!(events[1].data["query_id"], response.query_id.as_str());
}

#[test]
fn an_inspection_recall_writes_nothing() {
    let w = world();
    w.turn("ana", "I am allergic to peanuts");
    let before = w.store.events(&scope("ana"), &EventQuery::default()).unwrap();
    let mut request = RecallRequest::new(scope("ana"), "peanuts", 5);
    request.strengthen = Some(false);
    let response = w.engine.recall(request).unwrap();
    assert!(!response.strengthened);
    assert_eq!(response.results[0].memory.forgetting.strength.get(), 1.0);
    assert_eq!(w.store.events(&scope("ana"), &EventQuery::default()).unwrap(), before);
}

#[test]
fn chinese_text_is_found_by_a_chinese_query() {
    let w = world();
    w.turn("wang", "今天我去公园散步了");
    let cat = w.turn("wang", "我的猫叫咪咪，它很喜欢吃鱼");
    let mut request = RecallRequest::new(scope("wang"), "我的猫叫什么名字", 1);
    request.strengthen = Some(false);
    let response = w.engine.recall(request).unwrap();
    assert_eq!(response.results[0].memory.id, cat.id);
    assert!(response.results[0].lexical.is_some());
}

#[test]
fn filters_by_kind_and_day() {
    let w = world();
    let first = w.turn("ana", "We talked about the garden");
    w.advance_days(3);
    let note = w.agent_note("ana", "Ana's garden has tomatoes");
    let mut request = RecallRequest::new(scope("ana"), "garden", 10);
    request.kinds = vec![Kind::Note];
    let ids: Vec<_> = w.engine.recall(request).unwrap().results.into_iter().map(|h| h.memory.id).collect();
    assert_eq!(ids, [note.id]);
    let mut request = RecallRequest::new(scope("ana"), "garden", 10);
    request.day_to = Some(first.day);
    let ids: Vec<_> = w.engine.recall(request).unwrap().results.into_iter().map(|h| h.memory.id).collect();
    assert_eq!(ids, [first.id]);
}

#[test]
fn the_day_follows_the_users_time_zone() {
    let w = world();
    w.engine.set_time_zone(&scope("wang"), "Asia/Shanghai").unwrap();
    w.clock.set(chrono::DateTime::parse_from_rfc3339("2024-05-04T20:00:00Z").unwrap().into());
    let m = w.turn("wang", "深夜还在加班");
    assert_eq!(m.day.to_string(), "2024-05-05");
    let utc = w.turn("ana", "late night");
    assert_eq!(utc.day.to_string(), "2024-05-04");
}

fn note_by(w: &crate::World, user: &str, speaker: &str, text: &str) -> membank_engine::core::Memory {
    let metadata = [("speaker".to_string(), speaker.to_string())].into_iter().collect();
    w.engine
        .remember_note(membank_engine::RememberNote {
            scope: scope(user),
            text: text.into(),
            source: membank_engine::core::Source::User,
            occurred_at: None,
            metadata,
            importance: None,
            clock_from: membank_engine::core::ClockFrom::Event,
        })
        .unwrap()
}

fn scores(w: &crate::World, query: &str) -> std::collections::HashMap<membank_engine::core::MemoryId, f64> {
    let mut request = RecallRequest::new(scope("conv"), query, 10);
    request.strengthen = Some(false);
    w.engine.recall(request).unwrap().results.into_iter().map(|h| (h.memory.id, h.score)).collect()
}

#[test]
fn a_speaker_named_in_the_query_is_boosted_by_exactly_its_weight() {
    let mut plain = membank_engine::EngineConfig::default();
    plain.recall.speaker_weight = 0.0;
    plain.recall.neighbour_weight = 0.0;
    let mut boosted = plain.clone();
    boosted.recall.speaker_weight = 0.5;
    let (a, b) = (crate::world_with(plain), crate::world_with(boosted));
    let mut ids = Vec::new();
    for w in [&a, &b] {
        let ann = note_by(w, "conv", "Ann", "I adopted a puppy last spring");
        let bo = note_by(w, "conv", "Mary Jo", "we adopted a kitten from the shelter");
        ids.push((ann.id, bo.id));
    }
    // Same data, same query: only the boost differs. "Mary Jo" is named word by word.
    let before = scores(&a, "What did Mary Jo adopt?");
    let after = scores(&b, "What did Mary Jo adopt?");
    let ((ann_a, bo_a), (ann_b, bo_b)) = (ids[0], ids[1]);
    assert_eq!(after[&ann_b], before[&ann_a]);
    assert!((after[&bo_b] - 1.5 * before[&bo_a]).abs() < 1e-15, "{} vs 1.5 × {}", after[&bo_b], before[&bo_a]);
    // A name only partly in the query ("Mary" without "Jo") boosts nobody.
    assert_eq!(scores(&b, "What did Mary adopt?")[&bo_b], scores(&a, "What did Mary adopt?")[&bo_a]);
}

#[test]
fn a_whole_exchange_lends_only_to_the_next_one() {
    let mut config = membank_engine::EngineConfig::default();
    config.recall.neighbour_weight = 0.0;
    config.recall.exchange_neighbour_weight = 0.3;
    let w = crate::world_with(config);
    let exchange = |text: &str| {
        w.engine
            .remember_turn(membank_engine::RememberTurn {
                scope: scope("conv"),
                user_text: text.into(),
                assistant_text: Some("I see.".into()),
                occurred_at: None,
                metadata: Default::default(),
                importance: None,
                clock_from: membank_engine::core::ClockFrom::Event,
            })
            .unwrap()
    };
    let before = exchange("Morning! The weather is grey");
    let topic = exchange("Today I want to talk about my travel plans");
    let details = exchange("I want to go to Spain and see Madrid");
    let mut request = RecallRequest::new(scope("conv"), "travel plans", 10);
    request.strengthen = Some(false);
    let response = w.engine.recall(request).unwrap();
    let hit = |id| response.results.iter().find(|h| h.memory.id == id);
    // What the topic lends is a share of its own fused score, before any score it borrowed.
    let topic_hit = hit(topic.id).unwrap();
    let topic_score = topic_hit.score - topic_hit.neighbour.unwrap_or(0.0);
    let lent = hit(details.id).and_then(|h| h.neighbour).expect("the next exchange borrows");
    assert!((lent - 0.3 * topic_score).abs() < 1e-15, "{lent} vs 0.3 × {topic_score}");
    assert_eq!(hit(before.id).and_then(|h| h.neighbour), None, "nothing is lent backwards");
}

#[test]
fn by_default_turns_lend_nothing_and_transcript_lines_lend_both_ways() {
    let w = world();
    for text in ["Good morning", "I planted tomatoes in the garden", "Nice weather today"] {
        w.turn("ana", text);
    }
    let mut request = RecallRequest::new(scope("ana"), "tomatoes garden", 10);
    request.strengthen = Some(false);
    let lent: Vec<Option<f64>> = w.engine.recall(request).unwrap().results.iter().map(|h| h.neighbour).collect();
    assert!(lent.iter().all(Option::is_none), "{lent:?}");

    let lines: Vec<_> = ["Good morning", "I planted tomatoes in the garden", "Nice weather today"]
        .iter()
        .map(|t| note_by(&w, "conv", "Ann", t))
        .collect();
    let mut request = RecallRequest::new(scope("conv"), "tomatoes garden", 10);
    request.strengthen = Some(false);
    let response = w.engine.recall(request).unwrap();
    let lent = |id| response.results.iter().find(|h| h.memory.id == id).and_then(|h| h.neighbour);
    assert!(lent(lines[0].id).is_some() && lent(lines[2].id).is_some(), "both neighbours of the matching line borrow");
}

fn at(text: &str) -> membank_engine::core::Timestamp {
    chrono::DateTime::parse_from_rfc3339(text).unwrap().into()
}

#[test]
fn a_hit_shows_the_memory_after_the_recall_and_names_the_retention_before_it() {
    let w = crate::paper_world();
    let m = w.turn("ana", "I am allergic to peanuts");
    w.advance_days(6);
    let policy = w.engine.config().forgetting;
    let expected_before = policy.retention_of(&m.forgetting, w.engine.now());
    assert!(expected_before < 0.5);

    // An inspection: one state, before and after are the same.
    let mut request = RecallRequest::new(scope("ana"), "peanuts", 5);
    request.strengthen = Some(false);
    let hit = w.engine.recall(request).unwrap().results.remove(0);
    assert_eq!(hit.memory.forgetting.strength.get(), 1.0);
    assert_eq!(hit.retention, expected_before);
    assert_eq!(hit.retention_before, expected_before);

    // A strengthening recall: strength, last recall and retention all after it.
    let hit = w.engine.recall(RecallRequest::new(scope("ana"), "peanuts", 5)).unwrap().results.remove(0);
    assert_eq!(hit.memory.forgetting.strength.get(), 2.0);
    assert_eq!(hit.memory.forgetting.last_recalled_at, w.engine.now());
    assert_eq!(hit.retention, 1.0, "just recalled");
    assert_eq!(hit.retention, policy.retention_of(&hit.memory.forgetting, w.engine.now()));
    assert_eq!(hit.retention_before, expected_before);
}

#[test]
fn retention_weighting_ranks_by_the_retention_before_the_recall() {
    let w = crate::paper_world();
    w.turn("ana", "my bicycle has a flat tyre");
    w.advance_days(9);
    w.turn("ana", "my bicycle needs a new bell");
    let mut request = RecallRequest::new(scope("ana"), "bicycle", 5);
    request.weight_by_retention = Some(true);
    let response = w.engine.recall(request).unwrap();
    assert!(response.strengthened);
    let old = response.results.iter().find(|h| h.memory.content.as_deref().unwrap().contains("tyre")).unwrap();
    assert!(old.retention_before < 0.1 && old.retention == 1.0, "{} / {}", old.retention_before, old.retention);
    assert_eq!(old.parts.retention, old.retention_before, "the factor is the retention before the recall");
    assert_eq!(
        response.results[0].memory.content.as_deref(),
        Some("User: my bicycle needs a new bell"),
        "the fading memory ranks lower"
    );
}

/// `score = (dense + lexical + date + feedback + neighbour) × speaker × retention ×
/// diversity`, term by term (a day's summary put first is the one exception).
fn assert_parts_add_up(response: &membank_engine::RecallResponse) {
    for hit in response.results.iter().filter(|h| !h.parts.day_summary) {
        let p = &hit.parts;
        let sum = (p.dense + p.lexical + p.date + p.feedback + p.neighbour) * p.speaker * p.retention * p.diversity;
        assert!((sum - hit.score).abs() < 1e-12, "{} vs parts {p:?}", hit.score);
        assert_eq!(p.dense_rank.is_some(), hit.dense.is_some());
        assert_eq!(p.lexical_rank.is_some(), hit.lexical.is_some());
        if let Some(rank) = p.dense_rank {
            assert_eq!(p.dense, 1.0 / (response.rrf_k + rank as f64));
        }
        assert_eq!(p.neighbour, hit.neighbour.unwrap_or(0.0));
    }
}

#[test]
fn the_parts_of_a_score_add_up_to_it() {
    let w = world();
    w.clock.set(at("2024-05-04T09:00:00Z"));
    note_by(&w, "conv", "Ann", "Good morning");
    note_by(&w, "conv", "Ann", "I planted tomatoes in the garden");
    note_by(&w, "conv", "Bo", "the tomatoes need water");
    w.clock.set(at("2024-05-09T09:00:00Z"));
    note_by(&w, "conv", "Bo", "the garden is full of weeds");
    for (query, weight) in [
        ("tomatoes garden", false),
        ("What did Ann plant on May 4th?", false),
        ("garden", true),
        ("weeds yesterday", true),
    ] {
        let mut request = RecallRequest::new(scope("conv"), query, 10);
        request.strengthen = Some(false);
        request.weight_by_retention = Some(weight);
        let response = w.engine.recall(request).unwrap();
        assert!(!response.results.is_empty(), "{query}");
        assert_parts_add_up(&response);
    }
    let mut request = RecallRequest::new(scope("conv"), "What did Ann plant on May 4th?", 10);
    request.strengthen = Some(false);
    let response = w.engine.recall(request).unwrap();
    let first = &response.results[0];
    assert!(first.parts.date > 0.0 && first.parts.speaker == 1.5, "{:?}", first.parts);
    assert!(response.results.iter().any(|h| h.parts.neighbour > 0.0));
}

#[test]
fn a_date_without_a_year_is_the_latest_such_day_with_memories() {
    let w = world();
    w.clock.set(at("2022-05-04T10:00:00Z"));
    let old = w.turn("ana", "we went to the lake");
    w.clock.set(at("2023-05-04T10:00:00Z"));
    let last_year = w.turn("ana", "we went to the mountains");
    w.clock.set(at("2023-08-01T10:00:00Z"));
    w.turn("ana", "a quiet day at home");
    w.clock.set(at("2025-03-01T10:00:00Z"));
    let recall = |query: &str| {
        let mut request = RecallRequest::new(scope("ana"), query, 3);
        request.strengthen = Some(false);
        w.engine.recall(request).unwrap()
    };

    // 2024-05-04 is the latest May 4th, but nothing was said then: 2023's is used.
    let response = recall("what did we do on May 4th?");
    let dates = response.date_filter.clone().unwrap();
    assert_eq!((dates.from, dates.to), (Some(last_year.day), Some(last_year.day)));
    assert_eq!(dates.from_query.as_deref(), Some("May 4th"));
    assert!(dates.boost && dates.exact);
    assert_eq!(dates.year_inferred.map(|y| y.as_str()), Some("latest_with_memories"));
    assert_eq!(response.time_range, Some((last_year.day, last_year.day)));
    assert_eq!(response.results[0].memory.id, last_year.id);

    // A day no year has memories on: the latest one not after now.
    let response = recall("what did we do on June 2nd?");
    let dates = response.date_filter.unwrap();
    assert_eq!(dates.from.unwrap().to_string(), "2024-06-02");
    assert_eq!(dates.year_inferred.map(|y| y.as_str()), Some("latest"));

    // A year given is kept, whatever the memories.
    let response = recall("what did we do on May 4, 2022?");
    let dates = response.date_filter.unwrap();
    assert_eq!(dates.from, Some(old.day));
    assert_eq!(dates.year_inferred, None);

    // Archived memories do not count unless the recall includes them.
    w.engine.forget(&scope("ana"), last_year.id, None).unwrap();
    assert_eq!(recall("what did we do on May 4th?").date_filter.unwrap().from, Some(old.day));
    let mut audit = RecallRequest::new(scope("ana"), "what did we do on May 4th?", 3);
    audit.strengthen = Some(false);
    audit.include_archived = true;
    assert_eq!(w.engine.recall(audit).unwrap().date_filter.unwrap().from, Some(last_year.day));

    // Another user's memories never choose the year.
    assert_eq!(
        w.engine
            .recall({
                let mut r = RecallRequest::new(scope("ben"), "May 4th", 3);
                r.strengthen = Some(false);
                r
            })
            .unwrap()
            .date_filter
            .map(|d| d.from),
        None,
        "a user membank has not met has no time zone, hence no boost"
    );
    w.turn("ben", "nothing special");
    let mut request = RecallRequest::new(scope("ben"), "what did we do on May 4th?", 3);
    request.strengthen = Some(false);
    let dates = w.engine.recall(request).unwrap().date_filter.unwrap();
    assert_eq!(dates.from.unwrap().to_string(), "2024-05-04");
    assert_eq!(dates.year_inferred.map(|y| y.as_str()), Some("latest"));
}

#[test]
fn the_callers_days_are_reported_as_a_filter() {
    let w = world();
    let m = w.turn("ana", "We talked about the garden");
    let mut request = RecallRequest::new(scope("ana"), "garden", 5);
    request.day_from = Some(m.day);
    request.strengthen = Some(false);
    let dates = w.engine.recall(request).unwrap().date_filter.unwrap();
    assert_eq!((dates.from, dates.to, dates.from_query, dates.boost), (Some(m.day), None, None, false));
    let mut request = RecallRequest::new(scope("ana"), "garden", 5);
    request.strengthen = Some(false);
    assert!(w.engine.recall(request).unwrap().date_filter.is_none());
}

/// A daily summary of `turn`'s day, stored as `summarize` would (no vector needed here).
fn summary_of(w: &crate::World, turn: &membank_engine::core::Memory, text: &str) -> membank_engine::core::Memory {
    let mut summary = turn.clone();
    summary.id = membank_engine::core::MemoryId::generate(w.engine.now());
    summary.kind = Kind::DailySummary;
    summary.source = membank_engine::core::Source::Derived;
    summary.content = Some(text.into());
    summary.user_text = None;
    summary.assistant_text = None;
    summary.derived_from = vec![turn.id];
    w.store.insert(membank_store::NewMemory { memory: summary, embedding: None }).unwrap()
}

fn inspect(w: &crate::World, user: &str, query: &str, k: usize) -> membank_engine::RecallResponse {
    let mut request = RecallRequest::new(scope(user), query, k);
    request.strengthen = Some(false);
    w.engine.recall(request).unwrap()
}

#[test]
fn a_question_about_a_day_gets_that_days_summary_first_then_its_turns() {
    let w = world();
    let mut may_4 = Vec::new();
    for user in ["ana", "ben"] {
        w.clock.set(at("2024-05-04T10:00:00Z"));
        let planted = w.turn(user, "I planted tomatoes in the garden");
        let watered = w.turn(user, "the roses needed water after lunch");
        w.clock.set(at("2024-05-05T10:00:00Z"));
        let swim = w.turn(user, "I went swimming in the lake and talked about tomatoes");
        may_4.push((planted, watered, swim));
    }
    // Ana has summaries of both days; Ben has none.
    let (planted, watered, swim) = may_4[0].clone();
    let summary = summary_of(&w, &planted, "Ana planted tomatoes and watered the roses.");
    let other_day = summary_of(&w, &swim, "Ana swam in the lake and talked about what we talked about.");
    w.clock.set(at("2024-05-10T10:00:00Z"));

    let response = inspect(&w, "ana", "What did we talk about on May 4th?", 4);
    let ids: Vec<_> = response.results.iter().map(|h| h.memory.id).collect();
    assert_eq!(ids[0], summary.id, "the day's summary first");
    assert!(response.results[0].parts.day_summary);
    let mut turns = ids[1..3].to_vec();
    turns.sort_by_key(|id| id.to_string());
    let mut expect = vec![planted.id, watered.id];
    expect.sort_by_key(|id| id.to_string());
    assert_eq!(turns, expect, "then the day's turns");
    assert!(
        response.results.iter().filter(|h| h.memory.id == other_day.id).all(|h| !h.parts.day_summary),
        "another day's summary is not put first"
    );
    assert!(response.results.iter().skip(1).all(|h| !h.parts.day_summary));
    let scores: Vec<f64> = response.results.iter().map(|h| h.score).collect();
    assert!(scores.windows(2).all(|p| p[0] >= p[1]), "{scores:?}");
    assert_eq!(inspect(&w, "ana", "What did we talk about on May 5th?", 4).results[0].memory.id, other_day.id);

    // No summary of the day: its turns first, as before.
    let (ben_planted, ben_watered, _) = &may_4[1];
    let ben = inspect(&w, "ben", "What did we talk about on May 4th?", 4);
    let mut firsts: Vec<_> = ben.results.iter().take(2).map(|h| h.memory.id).collect();
    firsts.sort_by_key(|id| id.to_string());
    let mut expect = vec![ben_planted.id, ben_watered.id];
    expect.sort_by_key(|id| id.to_string());
    assert_eq!(firsts, expect);
    assert!(ben.results.iter().all(|h| !h.parts.day_summary));
    // Nor when the query names no day, or only turns are asked for.
    assert!(inspect(&w, "ana", "tomatoes", 4).results.iter().all(|h| !h.parts.day_summary));
    let mut turns_only = RecallRequest::new(scope("ana"), "What did we talk about on May 4th?", 4);
    turns_only.strengthen = Some(false);
    turns_only.kinds = vec![Kind::Turn];
    assert!(w.engine.recall(turns_only).unwrap().results.iter().all(|h| h.memory.kind == Kind::Turn));

    // An archived summary is not put first (the day's turns are).
    w.engine.forget(&scope("ana"), summary.id, None).unwrap();
    let response = inspect(&w, "ana", "What did we talk about on May 4th?", 4);
    assert!(response.results.iter().all(|h| h.memory.id != summary.id && !h.parts.day_summary));
    assert!([planted.id, watered.id].contains(&response.results[0].memory.id));
}

#[test]
fn day_summaries_can_be_turned_off() {
    let w = crate::world_with(membank_engine::EngineConfig {
        recall: membank_engine::RecallConfig { day_summaries: false, ..Default::default() },
        ..Default::default()
    });
    w.clock.set(at("2024-05-04T10:00:00Z"));
    let planted = w.turn("ana", "I planted tomatoes in the garden");
    let summary = summary_of(&w, &planted, "Ana planted tomatoes.");
    w.clock.set(at("2024-05-10T10:00:00Z"));
    let response = inspect(&w, "ana", "What did we talk about on May 4th?", 3);
    assert!(response.results.iter().all(|h| !h.parts.day_summary));
    assert_ne!(response.results[0].memory.id, summary.id);
}

#[test]
fn feedback_and_day_diversity_keep_the_parts_adding_up() {
    let config = membank_engine::RecallConfig { feedback_weight: 1.0, day_diversity: 0.5, ..Default::default() };
    let w = crate::world_with(membank_engine::EngineConfig { recall: config, ..Default::default() });
    w.clock.set(at("2024-05-04T09:00:00Z"));
    let a1 = note_by(&w, "conv", "Ann", "I planted tomatoes in the garden");
    let a2 = note_by(&w, "conv", "Bo", "the tomatoes in the garden need water");
    let a3 = note_by(&w, "conv", "Ann", "tomatoes garden tomatoes");
    w.clock.set(at("2024-05-09T09:00:00Z"));
    let b1 = note_by(&w, "conv", "Bo", "the garden is full of weeds and tomatoes");
    let response = inspect(&w, "conv", "tomatoes garden", 4);
    assert_parts_add_up(&response);
    assert!(response.results.iter().any(|h| h.parts.feedback > 0.0), "the feedback ranking took part");
    // The other day's only line is not left behind three lines of May 4th.
    let ids: Vec<_> = response.results.iter().map(|h| h.memory.id).collect();
    assert!(ids.iter().position(|id| *id == b1.id).unwrap() <= 2, "{ids:?}");
    assert!(
        response
            .results
            .iter()
            .filter(|h| [a1.id, a2.id, a3.id].contains(&h.memory.id))
            .skip(1)
            .all(|h| h.parts.diversity < 1.0)
    );
    let scores: Vec<f64> = response.results.iter().map(|h| h.score).collect();
    assert!(scores.windows(2).all(|p| p[0] >= p[1]), "{scores:?}");
}

#[test]
fn a_named_participant_is_boosted_not_searched_for() {
    for speaker_query in [true, false] {
        let w = crate::world_with(membank_engine::EngineConfig {
            recall: membank_engine::RecallConfig { speaker_query, ..Default::default() },
            ..Default::default()
        });
        let greeting = note_by(&w, "conv", "Melanie", "Hey Caroline! Missed you, Caroline.");
        let said = note_by(&w, "conv", "Caroline", "I called the adoption agencies today");
        let response = inspect(&w, "conv", "Which agencies did Caroline call?", 5);
        let hit = |id| response.results.iter().find(|h| h.memory.id == id).unwrap();
        // Searched for, the name matches the greeting's words; left out, only what she said matches.
        assert_eq!(hit(greeting.id).lexical.is_some(), !speaker_query, "speaker_query = {speaker_query}");
        assert_eq!(response.results[0].memory.id, said.id);
        assert_eq!(hit(said.id).parts.speaker, 1.5, "the boost still ties the question to her");
    }
}

#[test]
fn a_date_question_searches_no_function_words() {
    // "what did I do on May 4th": with the date taken out, only function words are left,
    // and a line sharing "on" used to rank first in the lexical search.
    let w = world();
    let shelf = w.turn("ana", "I put the book on the shelf, on top of the others, on purpose");
    w.advance_days(3);
    let climbing = w.turn("ana", "Went climbing at the quarry with Tom");
    assert_eq!(climbing.day.to_string(), "2024-05-04");
    let mut request = RecallRequest::new(scope("ana"), "what did I do on May 4th", 5);
    request.strengthen = Some(false);
    let response = w.engine.recall(request).unwrap();
    assert!(
        response.results.iter().all(|h| h.lexical.is_none()),
        "{:?}",
        response.results.iter().map(|h| h.lexical).collect::<Vec<_>>()
    );
    assert_eq!(response.results[0].memory.id, climbing.id);
    // A word that carries a topic is still searched.
    let mut request = RecallRequest::new(scope("ana"), "what did I do with Tom on May 4th", 5);
    request.strengthen = Some(false);
    let response = w.engine.recall(request).unwrap();
    let hit = |id| response.results.iter().find(|h| h.memory.id == id).unwrap();
    assert!(hit(climbing.id).lexical.is_some());
    assert!(hit(shelf.id).lexical.is_none());
}

/// Selection reads only the candidates that can still reach the top k, bounding each
/// one's speaker factor by what its hit carried: a recall of k returns exactly what a
/// recall that reads every candidate returns (ids, scores and order), with speakers named
/// or not, a boost or a penalty (which the engine does not apply), and neighbours that no
/// search found (whose speakers are not known before their rows are read). The recall that
/// reads every candidate weighs by retention, which is exactly 1 for pinned memories.
#[test]
fn reading_only_the_rows_that_can_reach_the_top_k_returns_what_reading_all_returns() {
    let words = ["tea", "puppy", "violin", "garden", "lemon", "shelter", "marathon", "kitten", "noon", "river"];
    let speakers = [Some("Ann"), Some("Mary Jo"), Some("Bo"), None];
    for speaker_weight in [0.5, 3.0, -0.5] {
        let mut config = membank_engine::EngineConfig::default();
        config.recall.speaker_weight = speaker_weight;
        // Few first-stage candidates, so that neighbours no search found come in too.
        config.recall.candidates = 12;
        let w = crate::world_with(config);
        for i in 0..90usize {
            let text = format!("{} and {} with {}", words[i % 10], words[(i * 7 + 3) % 10], words[(i * 3 + 1) % 10]);
            let memory = match speakers[i % 4] {
                Some(speaker) => note_by(&w, "conv", speaker, &text),
                None => w.turn("conv", &text),
            };
            assert_eq!(memory.metadata.get("speaker").map(String::as_str), speakers[i % 4]);
            w.store.set_pinned(&scope("conv"), memory.id, true, memory.recorded_at).unwrap();
            if i % 9 == 8 {
                w.clock.advance(chrono::Duration::days(1));
            }
        }
        let ask = |query: &str, k: usize, every_row: bool| {
            let mut request = RecallRequest::new(scope("conv"), query, k);
            request.strengthen = Some(false);
            request.weight_by_retention = Some(every_row);
            let results = w.engine.recall(request).unwrap().results;
            results.into_iter().map(|h| (h.memory.id, h.score.to_bits())).collect::<Vec<_>>()
        };
        for query in [
            "tea with lemon",
            "What did Mary Jo say about the puppy?",
            "Did Ann play the violin at noon?",
            "Bo and Ann in the garden",
            "kitten shelter",
        ] {
            for k in [1, 3, 5, 10] {
                let all = ask(query, k, true);
                assert_eq!(all.len(), k, "{query}");
                assert_eq!(ask(query, k, false), all, "{query}, k = {k}, speaker weight {speaker_weight}");
            }
        }
    }
}
