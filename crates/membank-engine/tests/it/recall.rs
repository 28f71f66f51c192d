//! Recall: immediate visibility, scores of their own, strengthening, lexical CJK.

use membank_engine::core::{EventKind, Kind};
use membank_engine::RecallRequest;
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
    let note = w
        .engine
        .remember_note(membank_engine::RememberNote {
            scope: scope("ana"),
            text: "Ana's garden has tomatoes".into(),
            source: membank_engine::core::Source::Agent,
            occurred_at: None,
            metadata: Default::default(),
            importance: None,
        })
        .unwrap();
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
        .remember_note(membank_engine::RememberNote { scope: scope(user), text: text.into(), source: membank_engine::core::Source::User, occurred_at: None, metadata, importance: None })
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
            .remember_turn(membank_engine::RememberTurn { scope: scope("conv"), user_text: text.into(), assistant_text: Some("I see.".into()), occurred_at: None, metadata: Default::default(), importance: None })
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

    let lines: Vec<_> = ["Good morning", "I planted tomatoes in the garden", "Nice weather today"].iter().map(|t| note_by(&w, "conv", "Ann", t)).collect();
    let mut request = RecallRequest::new(scope("conv"), "tomatoes garden", 10);
    request.strengthen = Some(false);
    let response = w.engine.recall(request).unwrap();
    let lent = |id| response.results.iter().find(|h| h.memory.id == id).and_then(|h| h.neighbour);
    assert!(lent(lines[0].id).is_some() && lent(lines[2].id).is_some(), "both neighbours of the matching line borrow");
}
