//! Shared set-up of the LLM tests: an engine whose model is the real OpenAI-compatible
//! client pointed at the scripted stub server on 127.0.0.1.

use std::sync::Arc;
use std::time::Duration;

use chrono::{TimeZone, Utc};
use membank_engine::core::{Memory, Timestamp};
use membank_engine::{Engine, EngineConfig, RememberNote, RememberTurn};
use membank_llm::stub::StubServer;
use membank_llm::{OpenAiChat, OpenAiChatConfig};

use crate::{World, scope, world_with};

pub struct LlmWorld {
    pub world: World,
    pub stub: StubServer,
}

pub fn client(stub: &StubServer, context_tokens: usize, reply_tokens: usize) -> Arc<OpenAiChat> {
    let mut config = OpenAiChatConfig::new(stub.base_url(), "stub-model");
    config.timeout = Duration::from_secs(20);
    config.backoff = Duration::from_millis(1);
    config.max_backoff = Duration::from_millis(2);
    config.context_tokens = context_tokens;
    config.reply_tokens = reply_tokens;
    Arc::new(OpenAiChat::new(config).unwrap())
}

pub fn llm_world(stub: StubServer, config: EngineConfig) -> LlmWorld {
    llm_world_sized(stub, config, 8192, 256)
}

pub fn llm_world_sized(stub: StubServer, config: EngineConfig, context_tokens: usize, reply_tokens: usize) -> LlmWorld {
    let World { engine, clock, store, _dir } = world_with(config);
    let llm = client(&stub, context_tokens, reply_tokens);
    let engine: Engine = engine.with_llm(llm);
    LlmWorld { world: World { engine, clock, store, _dir }, stub }
}

pub fn at(day: u32, hour: u32) -> Timestamp {
    Utc.with_ymd_and_hms(2024, 5, day, hour, 0, 0).unwrap()
}

impl World {
    pub fn turn_at(&self, user: &str, text: &str, reply: Option<&str>, when: Timestamp) -> Memory {
        self.engine
            .remember_turn(RememberTurn {
                scope: scope(user),
                user_text: text.into(),
                assistant_text: reply.map(Into::into),
                occurred_at: Some(when),
                metadata: Default::default(),
                importance: None,
                clock_from: membank_engine::core::ClockFrom::Event,
            })
            .unwrap()
    }

    pub fn note_at(&self, user: &str, text: &str, when: Timestamp) -> Memory {
        self.engine
            .remember_note(RememberNote {
                scope: scope(user),
                text: text.into(),
                source: membank_engine::core::Source::User,
                occurred_at: Some(when),
                metadata: Default::default(),
                importance: None,
                clock_from: membank_engine::core::ClockFrom::Event,
            })
            .unwrap()
    }
}
