//! Neighbour lookups and the lexical index's per-user statistics, on a real SQLite file.

use chrono::{Duration, TimeZone, Utc};
use membank_core::{Kind, Memory, MemoryId, Scope, TenantId, UserId};
use membank_store::{Adjacent, NewMemory, SearchFilter, SqliteStore, Store};

use crate::memory;

fn scope(user: &str) -> Scope {
    Scope::user(TenantId::default_tenant(), UserId::new(user).unwrap())
}

fn store() -> (tempfile::TempDir, SqliteStore) {
    let dir = tempfile::tempdir().unwrap();
    let store = SqliteStore::open(dir.path().join("m.db")).unwrap();
    (dir, store)
}

fn insert(store: &SqliteStore, m: Memory) -> MemoryId {
    store.insert(NewMemory { memory: m, embedding: None }).unwrap().id
}

#[test]
fn neighbours_are_the_adjacent_admitted_memories_of_the_same_day() {
    let (_dir, store) = store();
    let ana = scope("ana");
    let day1 = Utc.with_ymd_and_hms(2024, 5, 4, 9, 0, 0).unwrap();
    let day2 = day1 + Duration::days(1);
    store.ensure_user(&ana.tenant, &ana.user, day1).unwrap();
    // Inserted out of time order: neighbours follow occurred_at, not insertion.
    let c = insert(&store, memory(&ana, Kind::Note, "third", day1 + Duration::minutes(20)));
    let a = insert(&store, memory(&ana, Kind::Note, "first", day1));
    let summary = insert(&store, memory(&ana, Kind::DailySummary, "a summary", day1 + Duration::minutes(5)));
    let b = insert(&store, memory(&ana, Kind::Note, "second", day1 + Duration::minutes(10)));
    let next_day = insert(&store, memory(&ana, Kind::Note, "next day", day2));
    // Two memories at the same instant are ordered by insertion.
    let same1 = insert(&store, memory(&ana, Kind::Note, "same one", day2 + Duration::hours(1)));
    let same2 = insert(&store, memory(&ana, Kind::Note, "same two", day2 + Duration::hours(1)));

    let lines = SearchFilter { kinds: vec![Kind::Turn, Kind::Note], ..Default::default() };
    let got = store.adjacent(&ana, &[b, a, c, next_day, same1, same2], &lines).unwrap();
    assert_eq!(
        got,
        [
            Adjacent { id: b, before: Some(a), after: Some(c) },
            Adjacent { id: a, before: None, after: Some(b) },
            Adjacent { id: c, before: Some(b), after: None },
            Adjacent { id: next_day, before: None, after: Some(same1) },
            Adjacent { id: same1, before: Some(next_day), after: Some(same2) },
            Adjacent { id: same2, before: Some(same1), after: None },
        ]
    );
    // Kinds outside the filter are skipped as neighbours, admitted ones are not.
    let all = SearchFilter::default();
    assert_eq!(store.adjacent(&ana, &[a], &all).unwrap(), [Adjacent { id: a, before: None, after: Some(summary) }]);

    // An archived memory is no neighbour unless archived ones are asked for.
    store.archive(&ana, b, "test", day2).unwrap();
    assert_eq!(store.adjacent(&ana, &[a], &lines).unwrap(), [Adjacent { id: a, before: None, after: Some(c) }]);
    let audit = SearchFilter { include_archived: true, ..lines.clone() };
    assert_eq!(store.adjacent(&ana, &[a], &audit).unwrap(), [Adjacent { id: a, before: None, after: Some(b) }]);
    // ... and has no neighbours itself in an ordinary lookup.
    assert!(store.adjacent(&ana, &[b], &lines).unwrap().is_empty());

    // Another user's ids are not found, and no neighbour ever crosses users.
    let ben = scope("ben");
    store.ensure_user(&ben.tenant, &ben.user, day1).unwrap();
    let bens = insert(&store, memory(&ben, Kind::Note, "ben's", day1 + Duration::minutes(1)));
    assert!(store.adjacent(&ben, &[a, c], &lines).unwrap().is_empty());
    assert_eq!(store.adjacent(&ben, &[bens], &lines).unwrap(), [Adjacent { id: bens, before: None, after: None }]);
    assert!(store.adjacent(&ana, &[], &lines).unwrap().is_empty());

    // get_many (one statement over the id list): in the order asked, another user's ids
    // and unknown ids skipped, nothing for nothing.
    let unknown = MemoryId::generate(day1);
    let got: Vec<MemoryId> =
        store.get_many(&ana, &[c, bens, a, unknown, b]).unwrap().into_iter().map(|m| m.id).collect();
    assert_eq!(got, [c, a, b]);
    assert_eq!(store.get_many(&ben, &[a, bens]).unwrap().into_iter().map(|m| m.id).collect::<Vec<_>>(), [bens]);
    assert!(store.get_many(&ana, &[]).unwrap().is_empty());
}

#[test]
fn lexical_scores_depend_on_the_users_own_memories_only() {
    let (_dir, store) = store();
    let (ana, ben) = (scope("ana"), scope("ben"));
    let t = Utc.with_ymd_and_hms(2024, 5, 4, 9, 0, 0).unwrap();
    store.ensure_user(&ana.tenant, &ana.user, t).unwrap();
    for (i, text) in [
        "my violin lesson went well",
        "the garden needs water",
        "violin strings are expensive",
        "we walked by the river",
    ]
    .iter()
    .enumerate()
    {
        insert(&store, memory(&ana, Kind::Note, text, t + Duration::minutes(i as i64)));
    }
    // Filler, so that both query terms are rare.
    for i in 0..12 {
        insert(&store, memory(&ana, Kind::Note, &format!("an ordinary day number {i}"), t + Duration::minutes(10 + i)));
    }
    let terms = vec!["violin".to_string(), "river".to_string()];
    let before = store.lexical_search(&ana, &terms, &SearchFilter::default(), 10).unwrap();
    assert_eq!(before.len(), 3);
    assert!(before.iter().all(|h| h.score > 0.0));

    // Ben writes a lot about violins: Ana's ranking and scores must not move.
    store.ensure_user(&ben.tenant, &ben.user, t).unwrap();
    let batch = (0..200)
        .map(|i| NewMemory {
            memory: memory(&ben, Kind::Note, &format!("violin practice number {i}"), t + Duration::seconds(i)),
            embedding: None,
        })
        .collect();
    store.insert_many(batch).unwrap();
    let after = store.lexical_search(&ana, &terms, &SearchFilter::default(), 10).unwrap();
    assert_eq!(before, after);
    // Ben finds his own, never Ana's.
    let bens = store.lexical_search(&ben, &terms, &SearchFilter::default(), 500).unwrap();
    assert_eq!(bens.len(), 200);
    assert!(bens.iter().all(|h| !after.iter().any(|a| a.id == h.id)));

    // A memory added afterwards (through a second handle, as another process would) is
    // found, and an erased one is gone.
    let other = SqliteStore::open(store.path()).unwrap();
    let late = insert(&other, memory(&ana, Kind::Note, "a violin concert on the river", t + Duration::hours(1)));
    let found = store.lexical_search(&ana, &terms, &SearchFilter::default(), 10).unwrap();
    assert_eq!(found[0].id, late, "both terms rank first");
    other.erase(&ana, late, t + Duration::hours(2)).unwrap();
    let found = store.lexical_search(&ana, &terms, &SearchFilter::default(), 10).unwrap();
    assert!(found.iter().all(|h| h.id != late));
    assert_eq!(found.len(), 3);
}

/// An exact word match must score clearly above nothing and rank first however small the
/// store: with FTS5's IDF a word in half of the memories (every word of a store of one or
/// two) scored 1e-6.
#[test]
fn an_exact_match_scores_clearly_and_ranks_first_in_tiny_stores() {
    let t = Utc.with_ymd_and_hms(2024, 5, 4, 9, 0, 0).unwrap();
    let others = [
        "the garden needs water",
        "we walked by the river",
        "a long day at work",
        "dinner with my sister",
        "the train was late",
        "rain all afternoon",
        "new shoes for running",
        "a quiet evening",
        "reading before bed",
    ];
    for size in [1usize, 2, 10] {
        let (_dir, store) = store();
        let ana = scope("ana");
        store.ensure_user(&ana.tenant, &ana.user, t).unwrap();
        let violin = insert(&store, memory(&ana, Kind::Note, "my violin lesson went well", t));
        for (i, text) in others.iter().take(size - 1).enumerate() {
            insert(&store, memory(&ana, Kind::Note, text, t + Duration::minutes(i as i64 + 1)));
        }
        let hits = store.lexical_search(&ana, &["violin".to_string()], &SearchFilter::default(), 10).unwrap();
        assert_eq!(hits.len(), 1, "store of {size}");
        assert_eq!(hits[0].id, violin);
        assert!(hits[0].score > 0.1, "store of {size}: an exact match scored {}", hits[0].score);

        // A word every memory shares still scores above zero, and the memory that also has
        // the rarer word ranks first.
        let hits = store
            .lexical_search(
                &ana,
                &["violin".to_string(), "the".to_string(), "my".to_string()],
                &SearchFilter::default(),
                10,
            )
            .unwrap();
        assert_eq!(hits[0].id, violin, "store of {size}");
        assert!(hits.iter().all(|h| h.score > 0.0));
    }
    // The rarer a term, the more its match is worth (IDF still falls with frequency).
    let (_dir, store) = store();
    let ana = scope("ana");
    store.ensure_user(&ana.tenant, &ana.user, t).unwrap();
    let rare = insert(&store, memory(&ana, Kind::Note, "violin", t));
    let common: Vec<MemoryId> =
        (0..9).map(|i| insert(&store, memory(&ana, Kind::Note, "garden", t + Duration::minutes(i + 1)))).collect();
    let score = |word: &str, id: MemoryId| {
        store
            .lexical_search(&ana, &[word.to_string()], &SearchFilter::default(), 10)
            .unwrap()
            .into_iter()
            .find(|h| h.id == id)
            .unwrap()
            .score
    };
    assert!(score("violin", rare) > score("garden", common[0]));
}

#[test]
fn days_with_memories_are_the_scopes_own_admitted_days() {
    let (_dir, store) = store();
    let (ana, ben) = (scope("ana"), scope("ben"));
    let t = Utc.with_ymd_and_hms(2023, 5, 4, 9, 0, 0).unwrap();
    store.ensure_user(&ana.tenant, &ana.user, t).unwrap();
    store.ensure_user(&ben.tenant, &ben.user, t).unwrap();
    let day = |s: &str| s.parse::<chrono::NaiveDate>().unwrap();
    insert(&store, memory(&ana, Kind::Turn, "lake", t));
    let archived = insert(&store, memory(&ana, Kind::Turn, "mountains", t + Duration::days(366)));
    insert(&store, memory(&ana, Kind::DailySummary, "a summary", t + Duration::days(731)));
    insert(&store, memory(&ben, Kind::Turn, "ben's", t + Duration::days(1096)));
    store.archive(&ana, archived, "test", t + Duration::days(400)).unwrap();
    let candidates = [day("2026-05-04"), day("2025-05-04"), day("2024-05-04"), day("2023-05-04")];
    let sorted = |mut days: Vec<chrono::NaiveDate>| {
        days.sort();
        days
    };

    let active = SearchFilter::default();
    assert_eq!(
        sorted(store.days_with_memories(&ana, &candidates, &active).unwrap()),
        [day("2023-05-04"), day("2025-05-04")]
    );
    let audit = SearchFilter { include_archived: true, ..Default::default() };
    assert_eq!(
        sorted(store.days_with_memories(&ana, &candidates, &audit).unwrap()),
        [day("2023-05-04"), day("2024-05-04"), day("2025-05-04")]
    );
    let turns = SearchFilter { kinds: vec![Kind::Turn], ..Default::default() };
    assert_eq!(store.days_with_memories(&ana, &candidates, &turns).unwrap(), [day("2023-05-04")]);
    // Ben's day is his only; an unknown user and no candidates give nothing.
    assert_eq!(store.days_with_memories(&ben, &candidates, &audit).unwrap(), [day("2026-05-04")]);
    assert!(store.days_with_memories(&scope("nobody"), &candidates, &audit).unwrap().is_empty());
    assert!(store.days_with_memories(&ana, &[], &audit).unwrap().is_empty());
}
