//! The library half of the `membank` binary: the parts a command's setting-up needs (the
//! clap types, the configuration file, the [`context::Context`] that resolves them into a
//! database, an embedder and an engine), so that another front end over the same engine
//! resolves its settings exactly as the command line does. `membank-python` is one: its
//! `membank.Memory(db=…)` opens what `membank --db …` opens. The commands themselves
//! (`cmd/`), and what only they use, stay in the binary (`main.rs`).
//!
//! These modules were written as the binary's, and their items are documented for a
//! reader of the binary, not as a published API.
#![allow(missing_docs)] // the modules below are the binary's internals, shared, not a public API

pub mod args;
pub mod config;
pub mod context;
pub mod embedder;
pub mod errors;
pub mod language;
pub mod llm_config;
pub mod output;
