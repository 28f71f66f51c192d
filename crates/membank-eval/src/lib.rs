//! Benchmark runners for membank: the MemoryBank paper's probing questions, LoCoMo and
//! LongMemEval.
//!
//! Each runner imports a benchmark's history through [`membank_engine::Engine::import`],
//! asks every question as an ordinary [`membank_engine::RecallRequest`] for the right user
//! at the question's own time (inspection recalls: nothing is strengthened or logged, so a
//! cached database stays as imported and runs are reproducible), and scores the ranked
//! results against the gold evidence with the benchmark's own definition ([`metrics`]).
//! It uses only the engine's public API: no private shortcut that a user's recall would
//! not take. It deliberately prints nothing; the CLI renders the reports.

mod cache;
pub mod critical;
mod error;
pub mod importance;
pub mod locomo;
pub mod longmemeval;
pub mod memorybank;
pub mod metrics;
pub mod selection;
pub mod simulate;

pub use cache::CachingEmbedder;
pub use error::EvalError;

/// Progress of a long run: `(done, total)` questions; `total` may grow as work is found.
pub type Progress<'a> = &'a (dyn Fn(&str, usize, usize) + Sync);

/// The tenant evaluation users live in, apart from any real users of the same file.
pub const EVAL_TENANT: &str = "eval";
