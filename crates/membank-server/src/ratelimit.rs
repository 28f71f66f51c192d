//! Per-key request rate limiting: a token bucket per key id (one shared bucket for the
//! unauthenticated loopback mode). Buckets refill continuously at `per_second` up to
//! `burst`. Time is passed in, so the arithmetic is tested without sleeping.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// Requests per second and burst size of each key's bucket.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RateLimit {
    /// Sustained requests per second (0 disables limiting).
    pub per_second: f64,
    /// Bucket size: requests allowed at once after a quiet period.
    pub burst: f64,
}

impl Default for RateLimit {
    fn default() -> Self {
        Self { per_second: 50.0, burst: 100.0 }
    }
}

#[derive(Debug)]
struct Bucket {
    tokens: f64,
    at: Instant,
}

/// The buckets of all keys seen.
#[derive(Debug)]
pub struct RateLimiter {
    limit: RateLimit,
    buckets: Mutex<HashMap<String, Bucket>>,
}

impl RateLimiter {
    /// A limiter with one limit for every key.
    pub fn new(limit: RateLimit) -> Self {
        Self { limit, buckets: Mutex::new(HashMap::new()) }
    }

    /// Takes one token from `key`'s bucket at `now`; on refusal, how long until one is available.
    pub fn check(&self, key: &str, now: Instant) -> Result<(), Duration> {
        if self.limit.per_second <= 0.0 {
            return Ok(());
        }
        let mut buckets = self.buckets.lock().unwrap_or_else(|e| e.into_inner());
        let burst = self.limit.burst.max(1.0);
        let bucket = buckets.entry(key.to_string()).or_insert(Bucket { tokens: burst, at: now });
        let elapsed = now.saturating_duration_since(bucket.at).as_secs_f64();
        bucket.tokens = (bucket.tokens + elapsed * self.limit.per_second).min(burst);
        bucket.at = now;
        if bucket.tokens >= 1.0 {
            bucket.tokens -= 1.0;
            Ok(())
        } else {
            Err(Duration::from_secs_f64((1.0 - bucket.tokens) / self.limit.per_second))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bucket_allows_burst_then_refuses_then_refills() {
        let limiter = RateLimiter::new(RateLimit { per_second: 2.0, burst: 3.0 });
        let t0 = Instant::now();
        for _ in 0..3 {
            assert!(limiter.check("k", t0).is_ok());
        }
        let wait = limiter.check("k", t0).unwrap_err();
        assert!(wait > Duration::ZERO && wait <= Duration::from_millis(500));
        // Another key has its own bucket.
        assert!(limiter.check("other", t0).is_ok());
        assert!(limiter.check("k", t0 + Duration::from_millis(500)).is_ok());
        assert!(limiter.check("k", t0 + Duration::from_millis(500)).is_err());
    }

    #[test]
    fn zero_rate_disables_limiting() {
        let limiter = RateLimiter::new(RateLimit { per_second: 0.0, burst: 0.0 });
        let t0 = Instant::now();
        for _ in 0..1000 {
            assert!(limiter.check("k", t0).is_ok());
        }
    }
}
