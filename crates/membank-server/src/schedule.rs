//! When `serve`'s background maintenance runs ([`MaintenanceConfig`]): a value the server's
//! state holds and the scheduler in [`crate::maintenance`] reads, kept apart from both so
//! neither imports the other.

use std::time::Duration;

/// How often and for whom `serve` runs maintenance by itself.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MaintenanceConfig {
    /// Whether the scheduler runs at all (the on-demand route works either way).
    pub enabled: bool,
    /// A user is due when its last cycle (or, never maintained, its creation) is older
    /// than this, by the engine's clock.
    pub interval: Duration,
    /// Also due after this many new turns since the last cycle.
    pub every_turns: Option<u64>,
    /// Most users visited per pass.
    pub per_pass: usize,
    /// How often, in real time, the scheduler asks who is due; the period in force is the
    /// shorter of this and `interval`. Tests shorten it to milliseconds.
    pub tick: Duration,
}

impl Default for MaintenanceConfig {
    fn default() -> Self {
        Self {
            enabled: true,
            interval: Duration::from_secs(86_400),
            every_turns: None,
            per_pass: 100,
            tick: Duration::from_secs(60),
        }
    }
}

impl MaintenanceConfig {
    /// The poll period in force: `tick`, at most `interval`, at least a millisecond (a
    /// zero period would spin).
    pub fn tick_period(&self) -> Duration {
        self.tick.min(self.interval).max(Duration::from_millis(1))
    }
}
