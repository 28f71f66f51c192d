//! Background maintenance: the scheduler `serve` starts, which runs the engine's
//! maintenance cycle ([`membank_engine::Engine::maintain`]) for each user whose last cycle
//! is older than the configured interval (or who stored enough new turns since), one user
//! at a time, and the one place a cycle's outcome becomes metrics and a log line, for the
//! background and for `POST /v1/users/{user}/maintain` alike.
//!
//! Time comes from the engine's clock, never the system's: a test with a manual clock
//! runs a year of days in a moment, and a replay is exact. The poll period (`tick`) is real
//! time, since it only says how often to *ask* who is due. A cycle runs on the blocking
//! pool and holds no lock a request needs; the store applies it in one transaction. On
//! shutdown the scheduler lets the cycle in progress finish (a half-planned cycle changes
//! nothing, but waiting keeps the stop orderly), visits no further user, and exits.
//!
//! It deliberately decides nothing about *what* a cycle does (that is the engine's) and
//! offers no way for a model to trigger one: MCP has no maintenance tool.

use std::collections::HashMap;

use membank_engine::core::{Scope, TenantId, Timestamp, UserId};
use membank_engine::{EngineError, MaintainReport, MaintainRequest};
use tokio_util::sync::CancellationToken;

pub use crate::schedule::MaintenanceConfig;
use crate::state::AppState;

/// Who asked for a cycle; a log field, never a metric label.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Trigger {
    /// The scheduler.
    Background,
    /// `POST /v1/users/{user}/maintain`.
    Request,
}

impl Trigger {
    fn as_str(self) -> &'static str {
        match self {
            Trigger::Background => "background",
            Trigger::Request => "request",
        }
    }
}

/// Why a cycle produced no report.
#[derive(Debug)]
pub(crate) enum CycleError {
    /// The engine refused or failed.
    Engine(EngineError),
    /// The blocking task panicked or was cancelled.
    Task(tokio::task::JoinError),
    /// A cycle for this user is running already.
    Busy,
}

/// Runs one cycle on the blocking pool and records it: metrics for both triggers, a log
/// line for a cycle done. Failures are counted here but logged by the caller, once: the
/// scheduler logs them, the REST handler turns them into its error answer.
pub(crate) async fn run_cycle(
    state: &AppState,
    request: MaintainRequest,
    trigger: Trigger,
) -> Result<MaintainReport, CycleError> {
    let engine = state.engine().clone();
    let dry_run = request.dry_run;
    let scope = request.scope.clone();
    // One cycle per user at a time, and a bounded number over all users (waited for). Both
    // are held by the blocking task itself, so a request that goes away meanwhile does not
    // free them while its cycle still runs.
    let Some(guard) = state.begin_maintenance(&scope) else { return Err(CycleError::Busy) };
    let Ok(slot) = state.inner.cycle_slots.clone().acquire_owned().await else { return Err(CycleError::Busy) };
    let outcome = tokio::task::spawn_blocking(move || {
        let _held = (guard, slot);
        let report = engine.maintain(request)?;
        // The gauge reads the engine's clock when the cycle ended, not the cycle's own
        // `now`, which an on-demand request may set to any time.
        Ok::<_, EngineError>((report, engine.now()))
    })
    .await;
    let (report, finished_at) = match outcome {
        Ok(Ok(done)) => done,
        Ok(Err(err)) => {
            state.metrics().maintenance_failed();
            return Err(CycleError::Engine(err));
        }
        Err(err) => {
            state.metrics().maintenance_failed();
            return Err(CycleError::Task(err));
        }
    };
    // A dry run is no cycle: it changes nothing and leaves no `maintained` event.
    if !dry_run {
        state.metrics().maintenance_cycle(&report, finished_at);
    }
    tracing::info!(
        trigger = trigger.as_str(), tenant = %scope.tenant, user = %scope.user, dry_run, policy = report.policy.as_str(),
        examined = report.examined, promoted = report.promoted, demoted = report.demoted, archived = report.archived.len(),
        deferred = report.deferred, merged = report.merged.len(), fused = report.fused.len(), conflicts = report.conflicts,
        rated = report.rated, skipped = report.skipped.len(),
        "maintenance cycle done"
    );
    Ok(report)
}

/// Starts the scheduler when maintenance is enabled; it runs until `stop` is cancelled.
/// The handle resolves once the task has exited (after the cycle in progress, if any).
pub fn spawn(state: AppState, stop: CancellationToken) -> Option<tokio::task::JoinHandle<()>> {
    let config = state.config().maintenance;
    if !config.enabled {
        return None;
    }
    Some(tokio::spawn(run(state, config, stop)))
}

async fn run(state: AppState, config: MaintenanceConfig, stop: CancellationToken) {
    let tick = config.tick_period();
    tracing::info!(
        interval_secs = config.interval.as_secs_f64(),
        every_turns = config.every_turns,
        per_pass = config.per_pass,
        tick_ms = tick.as_millis() as u64,
        "background maintenance started"
    );
    let mut backoff = Backoff::default();
    loop {
        // The first pass waits one tick too, so a starting server answers its first
        // requests (and warms its model) before any cycle competes for the database.
        tokio::select! {
            biased;
            () = stop.cancelled() => break,
            () = tokio::time::sleep(tick) => {}
        }
        pass(&state, &config, &stop, &mut backoff).await;
        if stop.is_cancelled() {
            break;
        }
    }
    tracing::info!("background maintenance stopped");
}

/// Users whose last cycle failed, and when (by the engine's clock) they may be tried
/// again. Without it a user whose cycle fails every time would be due at every tick and,
/// first in the oldest-cycle-first order, take a per-pass slot from users who are fine.
#[derive(Debug, Default)]
struct Backoff(HashMap<(TenantId, UserId), Timestamp>);

impl Backoff {
    fn waiting(&mut self, now: Timestamp) -> usize {
        self.0.retain(|_, until| *until > now);
        self.0.len()
    }

    fn holds(&self, key: &(TenantId, UserId)) -> bool {
        self.0.contains_key(key)
    }
}

/// One pass: ask who is due, then one cycle per user, in order, until the list or the
/// server ends.
async fn pass(state: &AppState, config: &MaintenanceConfig, stop: &CancellationToken, backoff: &mut Backoff) {
    let now = state.engine().now();
    let interval = chrono::Duration::from_std(config.interval).unwrap_or(chrono::Duration::MAX);
    let before = now.checked_sub_signed(interval).unwrap_or(Timestamp::MIN_UTC);
    let per_pass = config.per_pass.max(1);
    // Ask for as many more as are backing off, so they cannot crowd out the rest.
    let limit = per_pass.saturating_add(backoff.waiting(now));
    let store = state.engine().store().clone();
    let every_turns = config.every_turns;
    let due =
        match tokio::task::spawn_blocking(move || store.users_due_for_maintenance(before, every_turns, limit)).await {
            Ok(Ok(due)) => due,
            Ok(Err(err)) => {
                tracing::error!(error = %err, "cannot list the users due for maintenance; trying again next tick");
                return;
            }
            Err(err) => {
                tracing::error!(error = %err, "the maintenance listing task failed; trying again next tick");
                return;
            }
        };
    let due: Vec<(TenantId, UserId)> = due.into_iter().filter(|key| !backoff.holds(key)).take(per_pass).collect();
    for key in due {
        if stop.is_cancelled() {
            return;
        }
        let scope = Scope::user(key.0.clone(), key.1.clone());
        let request = MaintainRequest { scope, now: None, dry_run: false };
        if let Err(err) = run_cycle(state, request, Trigger::Background).await {
            match &err {
                CycleError::Engine(err) => {
                    tracing::error!(tenant = %key.0, user = %key.1, error = %err, code = err.code(), "maintenance cycle failed; the next user goes on")
                }
                CycleError::Task(err) => {
                    tracing::error!(tenant = %key.0, user = %key.1, error = %err, "maintenance cycle panicked; the next user goes on")
                }
                // An on-demand cycle is running for the user: it is maintained meanwhile.
                CycleError::Busy => continue,
            }
            // Tried again once an interval has passed, as if the cycle had run.
            let retry_at = state.engine().now().checked_add_signed(interval).unwrap_or(Timestamp::MAX_UTC);
            backoff.0.insert(key, retry_at);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn the_tick_never_exceeds_the_interval_nor_reaches_zero() {
        let default = MaintenanceConfig::default();
        assert_eq!(default.tick_period(), Duration::from_secs(60));
        let short = MaintenanceConfig { interval: Duration::from_secs(5), ..default };
        assert_eq!(short.tick_period(), Duration::from_secs(5));
        let zero = MaintenanceConfig { tick: Duration::ZERO, ..default };
        assert_eq!(zero.tick_period(), Duration::from_millis(1));
    }

    #[test]
    fn backoff_forgets_users_whose_wait_is_over() {
        let mut backoff = Backoff::default();
        let key = (TenantId::new("t").unwrap(), UserId::new("u").unwrap());
        let t0 = chrono::DateTime::from_timestamp(1_700_000_000, 0).unwrap();
        backoff.0.insert(key.clone(), t0 + chrono::Duration::hours(1));
        assert_eq!(backoff.waiting(t0), 1);
        assert!(backoff.holds(&key));
        assert_eq!(backoff.waiting(t0 + chrono::Duration::hours(1)), 0);
        assert!(!backoff.holds(&key));
    }
}
