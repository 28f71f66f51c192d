//! Engine behaviour at its public boundary, on a real SQLite file, with the hashing test
//! embedder and a manual clock (so months pass in microseconds).

#![allow(missing_docs)]

mod companion;
mod erasure;
mod forgetting;
mod fuzz_regressions;
mod import;
mod input;
mod isolation;
mod llm_world;
mod maintain;
mod recall;
mod reminisce;
mod summarize;
mod transfer;

use std::sync::Arc;

use chrono::{Duration, TimeZone, Utc};
use membank_embed::HashEmbedder;
use membank_engine::core::{ManualClock, Scope, TenantId, Timestamp, UserId};
use membank_engine::{Engine, EngineConfig, RememberTurn};
use membank_store::SqliteStore;

/// A test world: an engine on a fresh database, and the clock that drives it.
pub struct World {
    pub engine: Engine,
    pub clock: Arc<ManualClock>,
    pub store: Arc<SqliteStore>,
    pub _dir: tempfile::TempDir,
}

pub fn t0() -> Timestamp {
    Utc.with_ymd_and_hms(2024, 5, 1, 9, 0, 0).unwrap()
}

pub fn world() -> World {
    world_with(EngineConfig::default())
}

/// The paper's curve on a three-day unit (importance weight 0), for tests that pin its
/// arithmetic: the project's default before importance was weighed in.
pub fn paper_world() -> World {
    world_with(EngineConfig {
        forgetting: membank_engine::core::forgetting::ForgettingPolicy {
            unit: chrono::Duration::days(3),
            importance_weight: 0.0,
            ..Default::default()
        },
        ..EngineConfig::default()
    })
}

pub fn world_with(config: EngineConfig) -> World {
    let dir = tempfile::tempdir().unwrap();
    let store = Arc::new(SqliteStore::open(dir.path().join("memory.db")).unwrap());
    let clock = Arc::new(ManualClock::new(t0()));
    let engine = Engine::new(store.clone(), Arc::new(HashEmbedder::new(256)), clock.clone(), config).unwrap();
    World { engine, clock, store, _dir: dir }
}

pub fn scope(user: &str) -> Scope {
    Scope::user(TenantId::default_tenant(), UserId::new(user).unwrap())
}

impl World {
    pub fn turn(&self, user: &str, text: &str) -> membank_engine::core::Memory {
        self.engine
            .remember_turn(RememberTurn {
                scope: scope(user),
                user_text: text.into(),
                assistant_text: None,
                occurred_at: None,
                metadata: Default::default(),
                importance: None,
                clock_from: membank_engine::core::ClockFrom::Event,
            })
            .unwrap()
    }

    /// A note an agent saved for `user`, now, its importance left to the estimator.
    pub fn agent_note(&self, user: &str, text: &str) -> membank_engine::core::Memory {
        self.engine
            .remember_note(membank_engine::RememberNote {
                scope: scope(user),
                text: text.into(),
                source: membank_engine::core::Source::Agent,
                occurred_at: None,
                metadata: Default::default(),
                importance: None,
                clock_from: membank_engine::core::ClockFrom::Event,
            })
            .unwrap()
    }

    pub fn advance_days(&self, days: i64) {
        self.clock.advance(Duration::days(days));
    }
}
