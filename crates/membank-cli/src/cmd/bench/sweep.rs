//! `bench sweep`: the time to sweep U users of M memories each, dry run and real.

use std::path::Path;
use std::sync::Arc;
use std::time::Instant;

use anyhow::{Context as _, Result};
use membank_engine::core::{Kind, ManualClock, Scope, TenantId, UserId};
use membank_engine::{Engine, SweepRequest};
use membank_store::{NewMemory, SqliteStore, Store};
use serde::Serialize;

use super::dataset::synthetic_memory;
use crate::context::Context;
use crate::progress::Bar;

/// `bench sweep --json`.
#[derive(Debug, Serialize)]
pub struct SweepReport {
    /// Always `"sweep"`.
    pub benchmark: &'static str,
    /// Users swept.
    pub users: usize,
    /// Memories per user.
    pub per_user: usize,
    /// Whether this run built the database (else it was reused from `--dir`).
    pub built: bool,
    /// The dry run, then the real sweep (each on the same copy of the data).
    pub results: Vec<SweepResult>,
}

/// One sweep over every user.
#[derive(Debug, Serialize)]
pub struct SweepResult {
    /// A dry run decides and counts but archives nothing.
    pub dry_run: bool,
    /// Memories examined.
    pub examined: usize,
    /// Memories archived (would be, in a dry run).
    pub archived: usize,
    /// Wall time of the whole sweep.
    pub seconds: f64,
    /// Memories examined per second.
    pub memories_per_second: f64,
    /// Milliseconds per user.
    pub ms_per_user: f64,
}

/// Runs `bench sweep`: builds the users once (kept in `dir`), then sweeps a copy.
pub fn sweep(ctx: &Context, users: usize, per_user: usize, dir: &Path) -> Result<SweepReport> {
    std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    let path = dir.join(format!("sweep-v2-{users}x{per_user}.db"));
    let build = !path.exists();
    let store = Arc::new(SqliteStore::open_with(&path, ctx.store_options())?);
    let t0 = chrono::DateTime::parse_from_rfc3339("2024-01-01T00:00:00Z")?.to_utc();
    let tenant = TenantId::default_tenant();
    if build {
        let start = Instant::now();
        let bar = Bar::new();
        for u in 0..users {
            let scope = Scope::user(tenant.clone(), UserId::new(&format!("user-{u}"))?);
            store.ensure_user(&scope.tenant, &scope.user, t0)?;
            // Memories spread over 30 days with strengths 1–8 (as if recalled 0–7 times), so
            // a sweep at day 40 archives some and keeps others; vectors are not needed to sweep.
            let batch = (0..per_user)
                .map(|i| {
                    let mut memory = synthetic_memory(
                        &scope,
                        Kind::Note,
                        format!("note {i} of user {u}"),
                        t0 + chrono::Duration::minutes((i * 43) as i64),
                    );
                    memory.forgetting.strength =
                        membank_engine::core::Strength::new(1.0 + ((i * 7 + u) % 8) as f64).expect("positive");
                    memory.forgetting.recall_count = ((i * 7 + u) % 8) as u32;
                    NewMemory { memory, embedding: None }
                })
                .collect();
            store.insert_many(batch)?;
            bar.update("building users", u + 1, users);
        }
        bar.finish();
        eprintln!("built {} memories in {:.1}s", users * per_user, start.elapsed().as_secs_f64());
    }
    // Sweep as of day 40 on a copy so the benchmark can be repeated on the same data.
    let copy = dir.join(format!("sweep-{users}x{per_user}-run.db"));
    for suffix in ["", "-wal", "-shm"] {
        let _ = std::fs::remove_file(format!("{}{suffix}", copy.display()));
    }
    store.backup(&copy)?;
    let store: Arc<dyn Store> = Arc::new(SqliteStore::open_with(&copy, ctx.store_options())?);
    let clock = Arc::new(ManualClock::new(t0 + chrono::Duration::days(40)));
    let engine = Engine::new(store.clone(), Arc::new(NoEmbedder), clock, Default::default())?;
    let mut report = SweepReport { benchmark: "sweep", users, per_user, built: build, results: Vec::new() };
    for dry_run in [true, false] {
        let start = Instant::now();
        let (mut examined, mut archived) = (0, 0);
        for u in 0..users {
            let scope = Scope::user(tenant.clone(), UserId::new(&format!("user-{u}"))?);
            let report = engine.sweep(SweepRequest { scope, now: None, dry_run, max_archive_fraction: None })?;
            examined += report.examined;
            archived += report.archived.len();
        }
        let secs = start.elapsed().as_secs_f64();
        let row = SweepResult {
            dry_run,
            examined,
            archived,
            seconds: secs,
            memories_per_second: examined as f64 / secs,
            ms_per_user: secs * 1000.0 / users as f64,
        };
        if !ctx.cli_json {
            println!(
                "sweep{} of {} users x {} memories: examined {}, archived {}, {:.2}s ({:.0} memories/s, {:.2} ms per user)",
                if dry_run { " (dry run)" } else { "" },
                users,
                per_user,
                row.examined,
                row.archived,
                row.seconds,
                row.memories_per_second,
                row.ms_per_user
            );
        }
        report.results.push(row);
    }
    Ok(report)
}

/// Sweeps never embed; this makes that explicit.
struct NoEmbedder;

impl membank_embed::Embedder for NoEmbedder {
    fn model_id(&self) -> &str {
        "none"
    }
    fn dim(&self) -> usize {
        0
    }
    fn embed(&self, _: &[&str]) -> Result<Vec<Vec<f32>>, membank_embed::EmbedError> {
        Err(membank_embed::EmbedError::Remote("the sweep benchmark does not embed".into()))
    }
}
