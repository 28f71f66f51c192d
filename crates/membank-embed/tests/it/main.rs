//! The one integration-test binary of membank-embed (one binary keeps link times down).
//!
//! Tests that need the real all-MiniLM-L6-v2 find it through `MEMBANK_MODEL_DIR` or else at
//! `membank_embed::fetch::default_model_dir()`, and fail (never skip) when it is absent,
//! saying how to fetch it. Nothing here touches the network: the OpenAI-compatible client is
//! tested against a stub server on 127.0.0.1, fetching against a wheel built locally.

mod e5;
mod errors;
mod fetch;
mod local;
mod openai;
mod reference;
mod support;
