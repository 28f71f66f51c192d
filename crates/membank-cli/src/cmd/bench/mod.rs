//! `membank bench …`: speed measurements. Not tests: they print medians and percentiles
//! and assert nothing. Each builds what it needs in a scratch directory unless told where.
//!
//! - `embed`: sentences/s of the configured embedder on N sentences from the public data
//!   or from a sentence file (`bench/embed/compare.sh` puts it beside PyTorch).
//! - `recall`: recall latency p50/p95 for one user with 1k/10k/100k memories, with and
//!   without query embedding (real vectors from the configured model).
//! - `http`: the same over real HTTP on loopback (`http.rs`).
//! - `sweep`: time to sweep U users × M memories each.
//! - `erase`: one erasure's time on a large SQLite store, and another user's write
//!   latency meanwhile (`erase.rs`).
//! - `maintain`: one maintenance cycle's time and peak memory on many long memories and
//!   on many near-identical turns (`maintain.rs`).
//! - `cache`: memory of the search caches over U users × M memories under the cache
//!   budget (`cache.rs`).
//! - `scale`: recall and ingestion over HTTP for U users × M memories on SQLite,
//!   PostgreSQL and Citus side by side, and `migrate`'s rate into each (`scale.rs`).
//!
//! With `--json` each prints one report object (the `*Report` structs of each module, documented
//! field by field) instead of its table; progress of database builds goes to standard
//! error either way. The report structs are this command's output, not domain types.
//!
//! With a `postgres://` `--db`, `http` and `cache` measure the PostgreSQL store next to the
//! SQLite one in the same run, on a copy of the same SQLite dataset ([`pg_dataset::copy_users`]) kept
//! in a database of that server between runs ([`pg_dataset::pg_dataset`]).

mod cache;
mod dataset;
mod embed;
mod erase;
mod http;
mod maintain;
mod paths;
mod pg_dataset;
mod recall;
mod scale;
mod stats;
mod sweep;

use anyhow::Result;
use serde::Serialize;

use crate::args::bench::BenchCommand;
use crate::context::Context;
use crate::output::print_json;

/// Runs a benchmark.
pub fn run(ctx: &Context, command: BenchCommand) -> Result<()> {
    match command {
        BenchCommand::Embed { n, threads, runs, data, sentences } => {
            finish(ctx, &embed::run(ctx, n, &threads, runs, &data, sentences.as_deref())?)
        }
        BenchCommand::Recall { sizes, queries, dir, data } => {
            finish(ctx, &recall::recall(ctx, &sizes, queries, &dir, &data)?)
        }
        BenchCommand::Sweep { users, per_user, dir } => finish(ctx, &sweep::sweep(ctx, users, per_user, &dir)?),
        BenchCommand::Http(args) => finish(ctx, &http::run(ctx, args)?),
        BenchCommand::Cache(args) => finish(ctx, &cache::run(ctx, args)?),
        BenchCommand::Scale(args) => finish(ctx, &scale::run(ctx, args)?),
        BenchCommand::Maintain { long, long_bytes, similar, short, only, dir, data } => {
            let shapes = maintain::Shapes { long, long_bytes, similar, short, only };
            finish(ctx, &maintain::run(ctx, &shapes, &dir, &data)?)
        }
        BenchCommand::Erase { sizes, users, erases, dir, data } => {
            finish(ctx, &erase::run(ctx, &sizes, users, erases, &dir, &data)?)
        }
    }
}

/// The embedding kernel paths this CPU runs (`membank_embed::kernel_paths`), as the bench
/// reports carry them: `int8` for the integer matrix products, `f32` for the rest.
#[derive(Debug, Clone, Serialize)]
pub struct EmbedKernels {
    /// `amx-int8`, `avx512-vnni`, `avx-vnni`, `avx2` or `portable`.
    pub int8: &'static str,
    /// `avx512+fma`, `avx2+fma` or `portable`.
    pub f32: &'static str,
}

/// The embedding kernel paths this CPU runs.
pub(crate) fn embed_kernels() -> EmbedKernels {
    let paths = membank_embed::kernel_paths();
    EmbedKernels { int8: paths.int8, f32: paths.f32 }
}

impl std::fmt::Display for EmbedKernels {
    /// The line the text reports print: `embedding kernels: int8 …, f32 …`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "embedding kernels: int8 {}, f32 {}", self.int8, self.f32)
    }
}

/// Prints the report with `--json`; the text tables were printed as the rows came.
fn finish(ctx: &Context, report: &impl Serialize) -> Result<()> {
    if ctx.cli_json { print_json(report) } else { Ok(()) }
}
