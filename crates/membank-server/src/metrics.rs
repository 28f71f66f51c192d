//! Prometheus metrics, kept in process and rendered in the text exposition format at
//! `/metrics`: requests and latency histograms per route, and domain counters (memories
//! stored, recalls, memories strengthened, sweeps, memories archived) and maintenance
//! counters (cycles, failures, and what cycles archived, merged, fused and decided), with
//! the engine-clock time of the last cycle, and the store's search caches (bytes kept
//! against their budget, hits, loads, evictions; read from the store when rendered, by
//! [`render_cache`]). Labels come from fixed sets only, never from
//! what a client sends: methods outside the standard ones are `other`, routes are the
//! router's templates (never raw paths, so never user ids) and every unknown path is
//! `unmatched`. Requests are counted before authentication, so anything a client could
//! choose freely would let an anonymous client grow this process's memory.
//!
//! Hand-written rather than a metrics crate: a few counters and one histogram family do
//! not justify a registry dependency, and the format is small and stable.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::sync::Mutex;
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};
use std::time::Duration;

use membank_engine::MaintainReport;
use membank_engine::core::Timestamp;
use membank_store::{CacheCounters, CacheKind, CacheStats};

/// Latency bucket bounds in seconds.
const BUCKETS: [f64; 12] = [0.001, 0.0025, 0.005, 0.01, 0.015, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 5.0];

#[derive(Debug, Default)]
struct Histogram {
    counts: [u64; BUCKETS.len()],
    sum: f64,
    count: u64,
}

/// All metrics of one server.
#[derive(Debug, Default)]
pub struct Metrics {
    requests: Mutex<BTreeMap<(&'static str, String, u16), u64>>,
    latency: Mutex<BTreeMap<(&'static str, String), Histogram>>,
    /// Memories stored (turns, notes, edits).
    pub memories_created: AtomicU64,
    /// Recalls answered.
    pub recalls: AtomicU64,
    /// Memories strengthened by recalls.
    pub strengthened: AtomicU64,
    /// Sweeps run (dry runs included).
    pub sweeps: AtomicU64,
    /// Memories archived by sweeps and forget requests.
    pub archived: AtomicU64,
    /// MCP tool calls.
    pub mcp_tool_calls: AtomicU64,
    /// Maintenance cycles run, in the background or on request (dry runs are not cycles).
    pub maintenance_cycles: AtomicU64,
    /// Maintenance cycles that failed.
    pub maintenance_failures: AtomicU64,
    /// Memories archived by maintenance cycles.
    pub maintenance_archived: AtomicU64,
    /// Near-duplicates merged by maintenance cycles.
    pub maintenance_merged: AtomicU64,
    /// Fused memories made by maintenance cycles.
    pub maintenance_fused: AtomicU64,
    /// Conflicts decided by maintenance cycles.
    pub maintenance_conflicts: AtomicU64,
    /// When the last cycle ended, in Unix milliseconds by the engine's clock (0: never).
    maintenance_last_cycle_millis: AtomicI64,
}

impl Metrics {
    /// Records one answered request. `route` must come from a fixed set (a route
    /// template, or `unmatched`); `method` may be anything: it is labelled by
    /// [`method_label`].
    pub fn observe(&self, method: &str, route: &str, status: u16, elapsed: Duration) {
        let method = method_label(method);
        *self
            .requests
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .entry((method, route.to_string(), status))
            .or_default() += 1;
        let mut latency = self.latency.lock().unwrap_or_else(|e| e.into_inner());
        let histogram = latency.entry((method, route.to_string())).or_default();
        let secs = elapsed.as_secs_f64();
        for (i, bound) in BUCKETS.iter().enumerate() {
            if secs <= *bound {
                histogram.counts[i] += 1;
            }
        }
        histogram.sum += secs;
        histogram.count += 1;
    }

    /// Adds to a counter.
    pub fn add(counter: &AtomicU64, n: u64) {
        counter.fetch_add(n, Ordering::Relaxed);
    }

    /// Records one maintenance cycle (not a dry run) that ended at `finished_at` (engine clock).
    pub fn maintenance_cycle(&self, report: &MaintainReport, finished_at: Timestamp) {
        Self::add(&self.maintenance_cycles, 1);
        Self::add(&self.maintenance_archived, report.archived.len() as u64);
        Self::add(&self.maintenance_merged, report.merged.len() as u64);
        Self::add(&self.maintenance_fused, report.fused.len() as u64);
        Self::add(&self.maintenance_conflicts, report.conflicts as u64);
        // `fetch_max`: with cycles ending on several threads, the gauge never goes back.
        self.maintenance_last_cycle_millis.fetch_max(finished_at.timestamp_millis(), Ordering::Relaxed);
    }

    /// Records one failed maintenance cycle.
    pub fn maintenance_failed(&self) {
        Self::add(&self.maintenance_failures, 1);
    }

    /// The text exposition format.
    pub fn render(&self) -> String {
        let mut out = String::new();
        let _ =
            writeln!(out, "# HELP membank_http_requests_total HTTP requests answered, by method, route and status.");
        let _ = writeln!(out, "# TYPE membank_http_requests_total counter");
        for ((method, route, status), n) in self.requests.lock().unwrap_or_else(|e| e.into_inner()).iter() {
            let _ = writeln!(
                out,
                "membank_http_requests_total{{method=\"{method}\",route=\"{}\",status=\"{status}\"}} {n}",
                escape(route)
            );
        }
        let _ = writeln!(
            out,
            "# HELP membank_http_request_duration_seconds Time to answer a request, by method and route."
        );
        let _ = writeln!(out, "# TYPE membank_http_request_duration_seconds histogram");
        for ((method, route), h) in self.latency.lock().unwrap_or_else(|e| e.into_inner()).iter() {
            let labels = format!("method=\"{method}\",route=\"{}\"", escape(route));
            for (bound, count) in BUCKETS.iter().zip(h.counts) {
                let _ =
                    writeln!(out, "membank_http_request_duration_seconds_bucket{{{labels},le=\"{bound}\"}} {count}");
            }
            let _ = writeln!(out, "membank_http_request_duration_seconds_bucket{{{labels},le=\"+Inf\"}} {}", h.count);
            let _ = writeln!(out, "membank_http_request_duration_seconds_sum{{{labels}}} {}", h.sum);
            let _ = writeln!(out, "membank_http_request_duration_seconds_count{{{labels}}} {}", h.count);
        }
        for (name, help, counter) in [
            ("membank_memories_created_total", "Memories stored (turns, notes, edits).", &self.memories_created),
            ("membank_recalls_total", "Recalls answered.", &self.recalls),
            ("membank_memories_strengthened_total", "Memories strengthened by recalls.", &self.strengthened),
            ("membank_sweeps_total", "Forgetting sweeps run (dry runs included).", &self.sweeps),
            ("membank_memories_archived_total", "Memories archived by sweeps and forget requests.", &self.archived),
            ("membank_mcp_tool_calls_total", "MCP tool calls.", &self.mcp_tool_calls),
            (
                "membank_maintenance_cycles_total",
                "Maintenance cycles run, in the background or on request (dry runs excluded).",
                &self.maintenance_cycles,
            ),
            ("membank_maintenance_failures_total", "Maintenance cycles that failed.", &self.maintenance_failures),
            (
                "membank_maintenance_archived_total",
                "Memories archived by maintenance cycles.",
                &self.maintenance_archived,
            ),
            (
                "membank_maintenance_merged_total",
                "Near-duplicate memories merged by maintenance cycles.",
                &self.maintenance_merged,
            ),
            ("membank_maintenance_fused_total", "Fused memories made by maintenance cycles.", &self.maintenance_fused),
            (
                "membank_maintenance_conflicts_total",
                "Conflicts decided by maintenance cycles.",
                &self.maintenance_conflicts,
            ),
        ] {
            let _ = writeln!(
                out,
                "# HELP {name} {help}\n# TYPE {name} counter\n{name} {}",
                counter.load(Ordering::Relaxed)
            );
        }
        let name = "membank_maintenance_last_cycle_timestamp_seconds";
        let seconds = self.maintenance_last_cycle_millis.load(Ordering::Relaxed) as f64 / 1000.0;
        let _ = writeln!(
            out,
            "# HELP {name} When the last maintenance cycle ended, by the engine's clock, in Unix seconds (0: none yet).\n# TYPE {name} gauge\n{name} {seconds}"
        );
        out
    }
}

/// Appends the store's cache numbers to a rendering: the budget, and per cache (`vectors`,
/// `terms`: a fixed set) the bytes and users kept, hits, misses (whole loads) and evictions.
pub fn render_cache(out: &mut String, stats: &CacheStats) {
    let name = "membank_cache_budget_bytes";
    let budget = stats.budget_bytes.map_or_else(|| "+Inf".to_string(), |b| b.to_string());
    let _ = writeln!(
        out,
        "# HELP {name} Bytes the per-user search caches may keep together (+Inf: no limit).\n# TYPE {name} gauge\n{name} {budget}"
    );
    // Name, type, help, and the number of one cache it shows.
    type Family = (&'static str, &'static str, &'static str, fn(&CacheCounters) -> u64);
    let families: [Family; 5] = [
        ("membank_cache_bytes", "gauge", "Bytes a per-user search cache keeps now, by cache.", |c| c.bytes),
        ("membank_cache_users", "gauge", "Users a search cache holds now, by cache.", |c| c.entries),
        ("membank_cache_hits_total", "counter", "Searches served from a cached user, by cache.", |c| c.hits),
        (
            "membank_cache_misses_total",
            "counter",
            "Searches that loaded a user whole (first use, after an eviction or an erasure), by cache.",
            |c| c.misses,
        ),
        (
            "membank_cache_evictions_total",
            "counter",
            "Users dropped from a search cache to stay within the budget, by cache.",
            |c| c.evictions,
        ),
    ];
    for (name, kind, help, value) in families {
        let _ = writeln!(out, "# HELP {name} {help}\n# TYPE {name} {kind}");
        for cache in CacheKind::ALL {
            let _ = writeln!(out, "{name}{{cache=\"{}\"}} {}", cache.as_str(), value(stats.of(cache)));
        }
    }
}

/// Appends the query cache's numbers (`serve --query-cache-mb`): budget, bytes and queries
/// kept, hits, misses (queries the model embedded) and evictions.
pub fn render_query_cache(out: &mut String, stats: &membank_embed::QueryCacheStats) {
    let families: [(&str, &str, &str, u64); 6] = [
        ("membank_query_cache_budget_bytes", "gauge", "Bytes the query cache may keep.", stats.budget_bytes),
        ("membank_query_cache_bytes", "gauge", "Bytes the query cache keeps now.", stats.bytes),
        ("membank_query_cache_entries", "gauge", "Query vectors the query cache keeps now.", stats.entries),
        ("membank_query_cache_hits_total", "counter", "Queries answered from the query cache.", stats.hits),
        (
            "membank_query_cache_misses_total",
            "counter",
            "Queries the embedding model embedded (not in the query cache).",
            stats.misses,
        ),
        (
            "membank_query_cache_evictions_total",
            "counter",
            "Query vectors dropped to stay within the budget.",
            stats.evictions,
        ),
    ];
    for (name, kind, help, value) in families {
        let _ = writeln!(out, "# HELP {name} {help}\n# TYPE {name} {kind}\n{name} {value}");
    }
}

/// The label of a request method: one of the standard methods, else `other`.
pub fn method_label(method: &str) -> &'static str {
    const KNOWN: [&str; 9] = ["GET", "HEAD", "POST", "PUT", "DELETE", "PATCH", "OPTIONS", "CONNECT", "TRACE"];
    KNOWN.into_iter().find(|known| *known == method).unwrap_or("other")
}

fn escape(label: &str) -> String {
    label.replace('\\', "\\\\").replace('"', "\\\"").replace('\n', "\\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renders_counters_and_cumulative_buckets() {
        let m = Metrics::default();
        m.observe("POST", "/v1/users/{user}/recall", 200, Duration::from_millis(3));
        m.observe("POST", "/v1/users/{user}/recall", 200, Duration::from_millis(30));
        Metrics::add(&m.recalls, 2);
        let text = m.render();
        assert!(text.contains(
            "membank_http_requests_total{method=\"POST\",route=\"/v1/users/{user}/recall\",status=\"200\"} 2"
        ));
        assert!(text.contains("le=\"0.005\"} 1"));
        assert!(text.contains("le=\"0.05\"} 2"));
        assert!(text.contains("le=\"+Inf\"} 2"));
        assert!(text.contains("membank_recalls_total 2"));
        assert!(text.contains("membank_maintenance_cycles_total 0"));
        assert!(text.contains("# TYPE membank_maintenance_last_cycle_timestamp_seconds gauge\nmembank_maintenance_last_cycle_timestamp_seconds 0\n"));
    }

    #[test]
    fn cache_numbers_are_rendered_per_cache() {
        let mut stats =
            CacheStats { budget_bytes: Some(1 << 30), vectors: Default::default(), terms: Default::default() };
        stats.vectors.bytes = 1234;
        stats.terms.evictions = 5;
        let mut text = String::new();
        render_cache(&mut text, &stats);
        assert!(
            text.contains("# TYPE membank_cache_budget_bytes gauge\nmembank_cache_budget_bytes 1073741824\n"),
            "{text}"
        );
        assert!(
            text.contains("membank_cache_bytes{cache=\"vectors\"} 1234\nmembank_cache_bytes{cache=\"terms\"} 0\n"),
            "{text}"
        );
        assert!(text.contains("# TYPE membank_cache_evictions_total counter\n"), "{text}");
        assert!(text.contains("membank_cache_evictions_total{cache=\"terms\"} 5\n"), "{text}");
        stats.budget_bytes = None;
        let mut text = String::new();
        render_cache(&mut text, &stats);
        assert!(text.contains("membank_cache_budget_bytes +Inf\n"), "{text}");
    }

    #[test]
    fn unknown_methods_share_one_label() {
        let m = Metrics::default();
        for i in 0..100 {
            m.observe(&format!("X{i}{}", "A".repeat(2048)), "unmatched", 405, Duration::from_millis(1));
        }
        m.observe("GET", "unmatched", 404, Duration::from_millis(1));
        let text = m.render();
        assert!(
            text.contains("membank_http_requests_total{method=\"other\",route=\"unmatched\",status=\"405\"} 100"),
            "{text}"
        );
        assert!(!text.contains("X1"), "{text}");
        assert!(text.len() < 8 * 1024, "{} bytes", text.len());
    }

    #[test]
    fn the_last_cycle_gauge_never_goes_back() {
        let m = Metrics::default();
        m.maintenance_last_cycle_millis.fetch_max(1_700_000_000_500, Ordering::Relaxed);
        m.maintenance_last_cycle_millis.fetch_max(1_600_000_000_000, Ordering::Relaxed);
        assert!(m.render().contains("membank_maintenance_last_cycle_timestamp_seconds 1700000000.5\n"));
    }
}
