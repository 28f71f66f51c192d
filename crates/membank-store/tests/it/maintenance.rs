//! Applying a maintenance plan: one transaction per user (all or nothing), items whose
//! memory stopped being active are skipped, the schedule moves, and nothing crosses users.

use chrono::{Duration, TimeZone, Utc};
use membank_core::{EventKind, Kind, Layer, Memory, MemoryId, Scope, Status, TenantId, Timestamp, UserId};
use membank_store::{
    EmbeddingModel, EventQuery, MaintenancePlan, NewMemory, Replacement, SqliteStore, StateUpdate, Store, Supersession,
};
use serde_json::json;

use crate::memory;

fn scope(user: &str) -> Scope {
    Scope::user(TenantId::default_tenant(), UserId::new(user).unwrap())
}

fn t0() -> Timestamp {
    Utc.with_ymd_and_hms(2024, 5, 4, 9, 0, 0).unwrap()
}

fn model() -> EmbeddingModel {
    EmbeddingModel { id: "test/model".into(), dim: 4 }
}

fn insert(store: &SqliteStore, m: Memory) -> MemoryId {
    store.insert(NewMemory { memory: m, embedding: Some((model(), vec![0.5, 0.5, 0.5, 0.5])) }).unwrap().id
}

fn plan(now: Timestamp) -> MaintenancePlan {
    MaintenancePlan {
        now,
        updates: Vec::new(),
        archive: Vec::new(),
        insert: Vec::new(),
        supersede: Vec::new(),
        summary: json!({}),
        maintained_through: None,
    }
}

fn setup() -> (tempfile::TempDir, SqliteStore, Vec<MemoryId>) {
    let dir = tempfile::tempdir().unwrap();
    let store = SqliteStore::open(dir.path().join("m.db")).unwrap();
    let ana = scope("ana");
    store.ensure_user(&ana.tenant, &ana.user, t0()).unwrap();
    let ids = (0..3)
        .map(|i| insert(&store, memory(&ana, Kind::Note, &format!("note {i}"), t0() + Duration::minutes(i))))
        .collect();
    (dir, store, ids)
}

#[test]
fn a_plan_is_applied_whole_or_not_at_all() {
    let (_dir, store, ids) = setup();
    let ana = scope("ana");
    let before = store.events(&ana, &EventQuery::default()).unwrap().len();
    let mut p = plan(t0() + Duration::days(1));
    p.archive.push((ids[0], json!({ "policy": "test" })));
    p.updates.push(StateUpdate::new(ids[1], 0.9, Layer::Long));
    // A fused memory whose vector has the wrong length fails inside the transaction,
    // after the archive and the update were written.
    let mut fused = memory(&ana, Kind::Fused, "fused", t0());
    fused.derived_from = vec![ids[2]];
    p.insert.push((NewMemory { memory: fused, embedding: Some((model(), vec![1.0; 3])) }, EventKind::Fused, json!({})));
    assert!(store.apply_maintenance(&ana, p).is_err());
    for id in &ids {
        let m = store.get(&ana, *id).unwrap();
        assert_eq!(m.status, Status::Active);
        assert_eq!(m.forgetting.layer, Layer::Short);
    }
    assert_eq!(store.events(&ana, &EventQuery::default()).unwrap().len(), before);
    assert_eq!(store.maintenance_state(&ana).unwrap().maintained_at, None);
}

#[test]
fn items_whose_memory_changed_meanwhile_are_skipped() {
    let (_dir, store, ids) = setup();
    let ana = scope("ana");
    let now = t0() + Duration::days(1);
    // The person erased one memory and forgot another while the plan was being made.
    store.erase(&ana, ids[0], now).unwrap();
    store.archive(&ana, ids[1], "requested", now).unwrap();
    let mut p = plan(now);
    p.archive.push((ids[0], json!({})));
    p.supersede.push(Supersession {
        old: ids[1],
        by: Replacement::Existing(ids[2]),
        data: json!({ "rule": "near_duplicate" }),
    });
    p.updates.push(StateUpdate::new(ids[0], 0.9, Layer::Long));
    let applied = store.apply_maintenance(&ana, p).unwrap();
    assert_eq!(applied.skipped, 3);
    assert_eq!(applied.archived + applied.superseded, 0);
    assert_eq!(store.get(&ana, ids[0]).unwrap().status, Status::Erased);
    assert_eq!(store.get(&ana, ids[1]).unwrap().status, Status::Archived);
    assert_eq!(store.get(&ana, ids[1]).unwrap().superseded_by, None);
    // The cycle is still recorded.
    assert_eq!(store.maintenance_state(&ana).unwrap().maintained_at, Some(now));
}

#[test]
fn supersessions_point_at_inserted_memories_and_the_schedule_moves() {
    let (_dir, store, ids) = setup();
    let ana = scope("ana");
    let bob = scope("bob");
    store.ensure_user(&bob.tenant, &bob.user, t0()).unwrap();
    let bobs = insert(&store, memory(&bob, Kind::Turn, "bob's turn", t0()));
    assert_eq!(store.maintenance_state(&ana).unwrap().new_turns, 0);
    assert_eq!(store.maintenance_state(&bob).unwrap().new_turns, 1);
    let now = t0() + Duration::days(2);
    let mut fused = memory(&ana, Kind::Fused, "notes 0 and 1, fused", now);
    fused.derived_from = vec![ids[0], ids[1]];
    let fused_id = fused.id;
    let mut p = plan(now);
    p.insert.push((
        NewMemory { memory: fused, embedding: Some((model(), vec![0.5, 0.5, 0.5, 0.5])) },
        EventKind::Fused,
        json!({ "sources": 2 }),
    ));
    for id in &ids[..2] {
        p.supersede.push(Supersession { old: *id, by: Replacement::Inserted(0), data: json!({ "rule": "fusion" }) });
    }
    let applied = store.apply_maintenance(&ana, p).unwrap();
    assert_eq!((applied.inserted, applied.superseded, applied.skipped), (1, 2, 0));
    for id in &ids[..2] {
        let m = store.get(&ana, *id).unwrap();
        assert_eq!(m.status, Status::Superseded);
        assert_eq!(m.superseded_by, Some(fused_id));
    }
    assert_eq!(store.get(&ana, fused_id).unwrap().derived_from, vec![ids[0], ids[1]]);
    // Bob is due (never maintained, created before the cutoff); Ana is not, until a day later.
    let due = store.users_due_for_maintenance(now, None, 10).unwrap();
    assert_eq!(due.iter().map(|(_, u)| u.as_str()).collect::<Vec<_>>(), ["bob"]);
    let due = store.users_due_for_maintenance(now + Duration::seconds(1), None, 10).unwrap();
    assert_eq!(due.len(), 2);
    // Turn counts: Bob has one new turn.
    let due = store.users_due_for_maintenance(t0() - Duration::days(1), Some(1), 10).unwrap();
    assert_eq!(due.iter().map(|(_, u)| u.as_str()).collect::<Vec<_>>(), ["bob"]);
    assert_eq!(store.get(&bob, bobs).unwrap().status, Status::Active);
    assert!(store.events(&bob, &EventQuery::default()).unwrap().iter().all(|e| e.kind != EventKind::Maintained));
}
