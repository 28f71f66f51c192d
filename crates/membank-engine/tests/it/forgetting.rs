//! Forgetting end to end: the curve's direction through real sweeps, dry runs, caps,
//! pinning, restore, erase.

use chrono::Duration;
use membank_engine::core::forgetting::{DecisionMode, ForgettingPolicy};
use membank_engine::core::{EventKind, Status};
use membank_engine::{EngineConfig, EngineError, RecallRequest, Reminisce, SweepRequest};
use membank_store::{EventQuery, Store};

use crate::{scope, world_with};

/// These tests pin the paper's arithmetic in days: a one-day unit and no importance on the
/// curve (the default weighs importance in, `S·(1 + w·I/(1−I))`).
fn world() -> crate::World {
    world_with(EngineConfig {
        forgetting: ForgettingPolicy { unit: Duration::days(1), importance_weight: 0.0, ..ForgettingPolicy::default() },
        ..EngineConfig::default()
    })
}

fn sweep(w: &crate::World, dry_run: bool) -> membank_engine::SweepReport {
    w.engine.sweep(SweepRequest { scope: scope("ana"), now: None, dry_run, max_archive_fraction: None }).unwrap()
}

#[test]
fn recalled_memories_outlive_unrecalled_ones() {
    let w = world();
    let recalled = w.turn("ana", "my passport number ends in 42");
    let ignored = w.turn("ana", "the weather was grey");
    w.advance_days(2);
    w.engine.recall(RecallRequest::new(scope("ana"), "passport number", 1)).unwrap();
    // Day 4: the unrecalled memory is 4 days old with S = 1 (R = e^-4 < 0.05); the
    // recalled one was recalled 2 days ago and has S = 2 (R = e^-1).
    w.advance_days(2);
    let report = sweep(&w, false);
    assert_eq!(report.examined, 2);
    let archived: Vec<_> = report.archived.iter().map(|a| a.id).collect();
    assert_eq!(archived, [ignored.id]);
    let numbers = &report.archived[0];
    assert!((numbers.elapsed_units - 4.0).abs() < 1e-9);
    assert_eq!(numbers.strength, 1.0);
    assert!((numbers.retention - (-4.0f64).exp()).abs() < 1e-12);
    assert_eq!(w.engine.show(&scope("ana"), recalled.id).unwrap().0.status, Status::Active);
    // Archived memories are not recalled without reminiscence, and the log says why they went.
    let hits = w
        .engine
        .recall(RecallRequest { reminisce: Reminisce::Never, ..RecallRequest::new(scope("ana"), "weather grey", 5) })
        .unwrap();
    assert!(hits.results.iter().all(|h| h.memory.id != ignored.id));
    let events =
        w.store.events(&scope("ana"), &EventQuery { memory_id: Some(ignored.id), ..Default::default() }).unwrap();
    let archived_event = events.iter().find(|e| e.kind == EventKind::Archived).unwrap();
    assert_eq!(archived_event.data["mode"], "threshold");
    assert_eq!(archived_event.data["threshold"], 0.05);
    assert_eq!(archived_event.data["strength"], 1.0);
}

#[test]
fn a_dry_run_changes_nothing() {
    let w = world();
    w.turn("ana", "one");
    w.turn("ana", "two");
    w.advance_days(10);
    let before = w.store.events(&scope("ana"), &EventQuery::default()).unwrap();
    let report = sweep(&w, true);
    assert!(report.dry_run);
    assert_eq!(report.archived.len(), 2);
    assert_eq!(w.store.events(&scope("ana"), &EventQuery::default()).unwrap(), before);
    assert_eq!(w.store.counts(&scope("ana")).unwrap().active, 2);
}

#[test]
fn the_per_pass_cap_holds_back_the_rest() {
    let w = world();
    for i in 0..10 {
        w.turn("ana", &format!("memory number {i}"));
    }
    w.advance_days(30);
    let report = w
        .engine
        .sweep(SweepRequest { scope: scope("ana"), now: None, dry_run: false, max_archive_fraction: Some(0.3) })
        .unwrap();
    assert_eq!(report.archived.len(), 3);
    assert_eq!(report.deferred, 7);
    assert_eq!(report.kept, 7);
    assert_eq!(w.store.counts(&scope("ana")).unwrap().archived, 3);
}

#[test]
fn pinned_memories_survive_any_sweep_and_restore_resets_the_clock() {
    let w = world();
    let pinned = w.turn("ana", "my daughter's birthday is March 3rd");
    let other = w.turn("ana", "I had toast");
    w.engine.set_pinned(&scope("ana"), pinned.id, true).unwrap();
    w.advance_days(3650);
    let report = sweep(&w, false);
    assert_eq!(report.archived.iter().map(|a| a.id).collect::<Vec<_>>(), [other.id]);
    let restored = w.engine.restore(&scope("ana"), other.id).unwrap();
    assert_eq!(restored.status, Status::Active);
    assert_eq!(restored.forgetting.last_recalled_at, w.engine.now());
    assert!(sweep(&w, false).archived.is_empty(), "a restored memory must not be archived by the next sweep");
    assert!(matches!(w.engine.restore(&scope("ana"), other.id), Err(EngineError::Conflict(_))));
}

#[test]
fn stochastic_sweeps_log_their_draws_and_rank_mode_never_archives() {
    let policy = ForgettingPolicy { mode: DecisionMode::Stochastic { seed: 11 }, ..Default::default() };
    let w = world_with(EngineConfig { forgetting: policy, ..Default::default() });
    // Each draw is keyed on the memory's id, which is new every run: enough memories, and
    // retentions near the middle, that "some but not all archived" cannot fail by chance
    // (after one day it did, about one run in ten).
    for i in 0..60 {
        w.turn("ana", &format!("note {i}"));
    }
    w.advance_days(3);
    let report = sweep(&w, false);
    assert!(!report.archived.is_empty() && report.archived.len() < 60, "{}", report.archived.len());
    let events = w.store.events(&scope("ana"), &EventQuery::default()).unwrap();
    let draws: Vec<_> = events.iter().filter(|e| e.kind == EventKind::Archived).collect();
    assert_eq!(draws.len(), report.archived.len());
    for event in draws {
        let draw = event.data["draw"].as_f64().unwrap();
        assert!(draw > event.data["retention"].as_f64().unwrap());
        assert_eq!(event.data["seed"], 11);
    }

    let rank = ForgettingPolicy { mode: DecisionMode::Rank, ..Default::default() };
    let w = world_with(EngineConfig { forgetting: rank, ..Default::default() });
    w.turn("ana", "kept forever");
    w.clock.advance(Duration::days(10_000));
    assert!(sweep(&w, false).archived.is_empty());
}

#[test]
fn erase_removes_content_everywhere_and_leaves_a_tombstone() {
    let w = world();
    // Words no id, time or score can spell (an earlier "9931" turned up inside a number).
    let secret = w.turn("ana", "my bank PIN is zebra quokka");
    w.turn("ana", "my favourite colour is blue");
    let erased = w.engine.erase(&scope("ana"), secret.id).unwrap();
    assert_eq!(erased.status, Status::Erased);
    assert_eq!(erased.content, None);
    assert_eq!(erased.user_text, None);
    let mut request = RecallRequest::new(scope("ana"), "bank PIN zebra quokka", 10);
    request.include_archived = true;
    assert!(w.engine.recall(request).unwrap().results.iter().all(|h| h.memory.id != secret.id));
    let events = w.store.events(&scope("ana"), &EventQuery::default()).unwrap();
    assert!(events.iter().any(|e| e.kind == EventKind::Erased && e.memory_id == Some(secret.id)));
    let log = format!("{events:?}");
    assert!(
        !log.contains("zebra") && !log.contains("quokka") && !log.contains("PIN"),
        "the event log holds erased content"
    );
    assert!(w.store.integrity_check().unwrap().is_empty());
    // Erasing twice is harmless; restoring an erased memory is refused.
    w.engine.erase(&scope("ana"), secret.id).unwrap();
    assert!(matches!(w.engine.restore(&scope("ana"), secret.id), Err(EngineError::Conflict(_))));
}
