//! membank's domain: scopes, memories, events, time, forgetting policies, scoring and
//! fusion, and the text rules of the lexical index.
//!
//! This crate is pure: no I/O, no async, no SQL, no reading of the system clock inside
//! logic. Every function that depends on time takes `now` (or a [`Clock`]) as an
//! argument, so tests and simulations run months in microseconds. Randomness (ids,
//! stochastic forgetting draws) is either passed in or derived deterministically
//! from a seed.

pub mod curve;
pub mod error;
pub mod event;
pub mod event_payload;
pub mod fademem;
pub mod forgetting;
pub mod fusion;
pub mod id;
pub mod limits;
pub mod memory;
pub mod reminisce;
pub mod salience;
pub mod scope;
pub mod script;
pub mod state;
pub mod text;
mod text_enum;
pub mod time;

pub use error::InvalidInput;
pub use event::{Event, EventKind};
pub use fademem::FadeMemParams;
pub use forgetting::{
    DecisionMode, DecisionModeName, ForgettingPolicy, ImportanceForm, PolicyKind, RecallMode, retention,
};
pub use id::{EventId, MemoryId};
pub use memory::{Kind, Memory, SPEAKER_KEY, Source, Status};
pub use scope::{AgentLabel, Scope, TenantId, UserId};
pub use state::{ClockFrom, ForgettingState, Layer, Strength};
pub use time::{Clock, ManualClock, SystemClock, Timestamp};
