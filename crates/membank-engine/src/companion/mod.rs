//! The companion: what the chat model does with a person's memories. `summarize` writes
//! each day's summary and the person's portrait, `chat` answers a message from recalled
//! memories, and `insight` gives the read-only views (a memory's forgetting curve, a user's counts
//! over time).

mod chat;
mod insight;
mod summarize;

pub use chat::{ChatObserver, ChatRequest, ChatResponse, CitedMemory};
pub use insight::{CurveResponse, DayCounts, MAX_DAYS_AHEAD, Overview};
pub use summarize::{
    DayOutcome, DayProfile, DerivedOutcome, ProfileRequest, ProfileResponse, SummarizeRequest, SummarizeResponse,
};
