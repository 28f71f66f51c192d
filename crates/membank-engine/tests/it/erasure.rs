//! Erasure that really erases: the memories made from an erased one (summaries,
//! portraits, their older versions) go too, the database files keep none of its text, and
//! the summaries are made again from what remains.

use membank_engine::core::{Kind, Status};
use membank_engine::{EngineConfig, ListRequest, RecallRequest, SummarizeRequest};
use membank_llm::stub::{Recorded, Reply, StubServer};
use membank_store::{EventQuery, ListQuery, Store};

use crate::llm_world::{at, llm_world};
use crate::scope;

const SECRET: &str = "zebrapin9931";

/// A model that quotes what it is given, as real ones do: every summary and portrait
/// carries the lines of its input that mention a secret or the cello.
fn quoting_stub() -> StubServer {
    StubServer::with(|request: &Recorded| {
        let quoted: Vec<String> = request
            .prompt_text()
            .lines()
            .filter(|l| l.contains("zebrapin") || l.contains("cello"))
            .map(str::to_string)
            .collect();
        Reply::text(&format!("made from: {}", quoted.join(" | ")))
    })
}

fn all_memories(w: &crate::World) -> Vec<membank_engine::core::Memory> {
    let query = ListQuery { statuses: Status::ALL.to_vec(), limit: 1000, oldest_first: true, ..ListQuery::default() };
    w.engine.list(ListRequest { scope: scope("alice"), query }).unwrap().memories.into_iter().map(|(m, _)| m).collect()
}

fn file_bytes_contain(dir: &std::path::Path, needle: &str) -> Vec<String> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        let bytes = std::fs::read(&path).unwrap();
        if bytes.windows(needle.len()).any(|w| w == needle.as_bytes()) {
            found.push(path.display().to_string());
        }
    }
    found
}

#[test]
fn erasing_a_turn_erases_what_was_made_from_it_and_leaves_no_bytes() {
    let lw = llm_world(quoting_stub(), EngineConfig::default());
    let w = &lw.world;
    w.clock.set(at(10, 9));
    let secret = w.turn_at("alice", &format!("my bank PIN is {SECRET}"), Some("I will keep it safe"), at(1, 10));
    w.turn_at("alice", "I started learning the cello", None, at(1, 18));
    w.engine.summarize(SummarizeRequest { scope: scope("alice"), force: false }).unwrap();
    // A second day makes new globals: the first ones become superseded copies of the secret.
    w.turn_at("alice", "The cello teacher is strict", None, at(2, 9));
    w.engine.summarize(SummarizeRequest { scope: scope("alice"), force: false }).unwrap();
    let holding: Vec<_> =
        all_memories(w).into_iter().filter(|m| m.content.as_deref().is_some_and(|c| c.contains(SECRET))).collect();
    assert!(
        holding.len() >= 5,
        "the turn, the day's summary and portrait, current and superseded globals: {}",
        holding.len()
    );
    assert!(holding.iter().any(|m| m.status == Status::Superseded));
    // Checkpointed, so the secret sits in the main file (not only the WAL) before erasure.
    w.store.backup(&w._dir.path().join("before.db")).unwrap();
    assert!(!file_bytes_contain(w._dir.path(), SECRET).is_empty());
    std::fs::remove_file(w._dir.path().join("before.db")).unwrap();

    let tombstone = w.engine.erase(&scope("alice"), secret.id).unwrap();
    assert_eq!(tombstone.status, Status::Erased);

    // No memory holds it, whatever its status; an audit recall does not find it.
    let after = all_memories(w);
    for memory in &holding {
        let now = after.iter().find(|m| m.id == memory.id).unwrap();
        assert_eq!(now.status, Status::Erased, "{} ({}) was reached by the erasure", now.id, now.kind);
        assert!(now.content.is_none() && now.metadata.is_empty());
    }
    assert!(after.iter().all(|m| !m.content.as_deref().unwrap_or("").contains(SECRET)));
    let audit = w
        .engine
        .recall(RecallRequest {
            include_archived: true,
            strengthen: Some(false),
            ..RecallRequest::new(scope("alice"), format!("PIN {SECRET}"), 20)
        })
        .unwrap();
    assert!(audit.results.iter().all(|h| !h.memory.content.as_deref().unwrap_or("").contains(SECRET)));
    // The day's other turn is untouched.
    assert!(after.iter().any(|m| m.kind == Kind::Turn
        && m.status == Status::Active
        && m.content.as_deref().is_some_and(|c| c.contains("cello"))));

    // The log says what the erasure reached; the bytes are gone from every file.
    let events = w
        .store
        .events(&scope("alice"), &EventQuery { memory_id: Some(secret.id), after_seq: None, limit: 100 })
        .unwrap();
    let erased = events.iter().find(|e| e.kind.as_str() == "erased").unwrap();
    assert_eq!(erased.data["cascaded"].as_array().unwrap().len(), holding.len() - 1);
    assert_eq!(
        file_bytes_contain(w._dir.path(), SECRET),
        Vec::<String>::new(),
        "the erased text is still in the database files"
    );
    assert_eq!(w.store.integrity_check().unwrap(), Vec::<String>::new());

    // Due to be made again, and made again from what remains.
    assert!(w.store.maintenance_state(&scope("alice")).unwrap().resummarize_due);
    w.engine.summarize(SummarizeRequest { scope: scope("alice"), force: false }).unwrap();
    assert!(!w.store.maintenance_state(&scope("alice")).unwrap().resummarize_due);
    let remade: Vec<_> =
        all_memories(w).into_iter().filter(|m| m.status == Status::Active && m.kind != Kind::Turn).collect();
    assert!(remade.iter().any(|m| m.kind == Kind::DailySummary && m.day.to_string() == "2024-05-01"));
    assert!(remade.iter().any(|m| m.kind == Kind::GlobalSummary));
    assert!(remade.iter().all(|m| !m.content.as_deref().unwrap_or("").contains(SECRET)));
}

#[test]
fn erasing_an_edited_memory_erases_the_text_before_the_edit() {
    let w = crate::world();
    let original = w.turn("alice", &format!("the alarm code is {SECRET}"));
    let edited = w
        .engine
        .edit(membank_engine::EditRequest {
            scope: scope("alice"),
            id: original.id,
            text: None,
            user_text: Some("the alarm code changed".into()),
            assistant_text: None,
        })
        .unwrap();
    w.engine.erase(&scope("alice"), edited.id).unwrap();
    let old = w.store.get(&scope("alice"), original.id).unwrap();
    assert_eq!(old.status, Status::Erased);
    assert_eq!(file_bytes_contain(w._dir.path(), SECRET), Vec::<String>::new());
}
