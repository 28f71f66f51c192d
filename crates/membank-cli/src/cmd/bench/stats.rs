//! The statistics the benchmarks report: latency percentiles, medians, and the process's
//! CPU time.

use std::time::Duration;

use serde::Serialize;

/// Latency percentiles of one series, in milliseconds.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct Latency {
    /// Median.
    pub p50_ms: f64,
    /// 95th percentile.
    pub p95_ms: f64,
    /// 99th percentile.
    pub p99_ms: f64,
}

impl Latency {
    /// Percentiles of `times`, which must not be empty.
    pub(crate) fn of(times: &mut [Duration]) -> Self {
        times.sort();
        let ms = |p| percentile(times, p).as_secs_f64() * 1000.0;
        Self { p50_ms: ms(0.5), p95_ms: ms(0.95), p99_ms: ms(0.99) }
    }
}

pub(crate) fn median(mut xs: Vec<f64>) -> f64 {
    xs.sort_by(f64::total_cmp);
    xs[xs.len() / 2]
}

pub(crate) fn percentile(sorted: &[Duration], p: f64) -> Duration {
    sorted[((sorted.len() as f64 - 1.0) * p).round() as usize]
}

/// CPU time (user + system, all threads) of this process so far, from `/proc/self/stat`
/// (Linux); `None` elsewhere. A second view of efficiency that other load on the machine
/// disturbs less than wall time.
pub(crate) fn cpu_seconds() -> Option<f64> {
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    // The fields after the parenthesised command name; utime and stime are fields 14 and
    // 15 of the line, 12 and 13 after the name (counted from 0).
    let (_, after) = stat.rsplit_once(')')?;
    let fields: Vec<&str> = after.split_whitespace().collect();
    let ticks = |i: usize| fields.get(i)?.parse::<f64>().ok();
    // /proc reports in USER_HZ, 100 per second on every Linux architecture in use.
    Some((ticks(11)? + ticks(12)?) / 100.0)
}
