//! Rate limiting, with time passed in so the arithmetic is tested without sleeping.
//!
//! - [`RateLimiter`]: requests per authenticated key, a token bucket per key id (one
//!   shared bucket for the unauthenticated loopback mode). Buckets refill continuously at
//!   `per_second` up to `burst`. Its table grows only with keys that authenticated.
//! - [`FailureLimiter`]: failed authentications per client address, checked before a
//!   presented key is looked up, so guessing keys costs the guesser, not the database.
//!   Its table is bounded: an attacker with many addresses cannot grow it past
//!   [`AuthFailureLimit::max_addresses`]. An address over its limit still has a key it
//!   presents judged: a valid key goes through, so a stranger's guesses from a shared
//!   address (a NAT, a reverse proxy) never lock out the people with good keys; an invalid
//!   one is answered 429 and not counted again.
//! - [`TrustedProxies`]: the opt-in list of reverse proxies whose `X-Forwarded-For` names
//!   the client. Off by default, so a client cannot pick the address it is counted by.

use std::collections::HashMap;
use std::net::IpAddr;
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

/// How many failed authentications each client address may make.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct AuthFailureLimit {
    /// Failures allowed in a row from one address before it must wait.
    pub burst: f64,
    /// Failures forgiven per minute after that (0 disables the limit).
    pub per_minute: f64,
    /// Most addresses tracked at once. Beyond it, new addresses share one bucket, so
    /// memory stays bounded and a many-address attack is still limited as a whole.
    pub max_addresses: usize,
}

impl Default for AuthFailureLimit {
    fn default() -> Self {
        // A client with a wrong key learns it in one request; 20 in a row are a mistake
        // being retried or a guess, and 10 a minute after that is plenty for the first.
        Self { burst: 20.0, per_minute: 10.0, max_addresses: 10_000 }
    }
}

/// Where a request came from, as the failure limiter counts it. IPv6 addresses count by
/// their /64 prefix: one host usually holds a whole /64 and could otherwise take a fresh
/// burst from each of its addresses. `None` is a caller without a socket address (the
/// router called in-process); all such callers share one bucket.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ClientAddr(Option<IpAddr>);

impl ClientAddr {
    /// The counted form of a peer's address (the port is ignored: each new connection has
    /// another one).
    pub fn new(ip: Option<IpAddr>) -> Self {
        Self(ip.map(|ip| match ip {
            IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
                Some(v4) => IpAddr::V4(v4),
                None => IpAddr::V6(std::net::Ipv6Addr::from(u128::from(v6) & !((1u128 << 64) - 1))),
            },
            v4 => v4,
        }))
    }
}

/// Reverse proxies whose `X-Forwarded-For` header is believed: addresses or CIDR blocks
/// (`127.0.0.1`, `10.0.0.0/8`, `fd00::/8`). Empty (the default) believes no header: the
/// client is the socket's peer.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TrustedProxies(Vec<(IpAddr, u8)>);

impl TrustedProxies {
    /// Most entries: the list is scanned per request.
    pub const MAX: usize = 64;

    /// Parses `ADDR` or `ADDR/PREFIX` entries; a bad one is refused with the reason.
    pub fn parse<S: AsRef<str>>(entries: &[S]) -> Result<Self, String> {
        if entries.len() > Self::MAX {
            return Err(format!("at most {} trusted proxies (got {})", Self::MAX, entries.len()));
        }
        let mut nets = Vec::with_capacity(entries.len());
        for entry in entries {
            let entry = entry.as_ref().trim();
            let (addr, prefix) = match entry.split_once('/') {
                Some((addr, prefix)) => (addr, Some(prefix)),
                None => (entry, None),
            };
            let ip: IpAddr = addr
                .parse()
                .map_err(|_| format!("{entry:?} is not an IP address or CIDR block (e.g. 127.0.0.1 or 10.0.0.0/8)"))?;
            let max = if ip.is_ipv4() { 32 } else { 128 };
            let prefix = match prefix {
                None => max,
                Some(p) => match p.parse::<u8>() {
                    Ok(p) if p <= max => p,
                    _ => return Err(format!("{entry:?}: the prefix length must be a number from 0 to {max}")),
                },
            };
            nets.push((ip, prefix));
        }
        Ok(Self(nets))
    }

    /// Whether any proxy is trusted.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Whether `ip` is one of the trusted proxies.
    pub fn contains(&self, ip: IpAddr) -> bool {
        let ip = canonical(ip);
        self.0.iter().any(|&(net, prefix)| match (canonical(net), ip) {
            (IpAddr::V4(n), IpAddr::V4(a)) => {
                let mask = if prefix == 0 { 0 } else { u32::MAX << (32 - u32::from(prefix)) };
                u32::from(n) & mask == u32::from(a) & mask
            }
            (IpAddr::V6(n), IpAddr::V6(a)) => {
                let mask = if prefix == 0 { 0 } else { u128::MAX << (128 - u32::from(prefix)) };
                u128::from(n) & mask == u128::from(a) & mask
            }
            _ => false,
        })
    }

    /// The client behind `peer`: the peer itself unless it is a trusted proxy; then the
    /// right-most address of the `X-Forwarded-For` values (in header order) that is not a
    /// trusted proxy. Entries a proxy could not have written (not an IP address) end the
    /// walk at the last address believed, so a forged or garbled header never names a
    /// client of the sender's choosing beyond the first untrusted hop.
    pub fn client<'a>(&self, peer: IpAddr, forwarded_for: impl Iterator<Item = &'a str>) -> IpAddr {
        if !self.contains(peer) {
            return peer;
        }
        let hops: Vec<&str> = forwarded_for.flat_map(|v| v.split(',')).map(str::trim).collect();
        let mut client = peer;
        for hop in hops.iter().rev() {
            let Ok(ip) = hop.trim_start_matches('[').trim_end_matches(']').parse::<IpAddr>() else { break };
            client = ip;
            if !self.contains(ip) {
                break;
            }
        }
        client
    }
}

fn canonical(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(IpAddr::V6(v6), IpAddr::V4),
        v4 => v4,
    }
}

#[derive(Debug)]
struct FailureTable {
    buckets: HashMap<ClientAddr, Bucket>,
    /// Shared by addresses that found the table full.
    overflow: Bucket,
    /// Pruning scans the table; at most once a second.
    next_prune: Option<Instant>,
}

/// Failed authentications per client address; see the module docs.
#[derive(Debug)]
pub struct FailureLimiter {
    limit: AuthFailureLimit,
    table: Mutex<FailureTable>,
}

impl FailureLimiter {
    /// A limiter with one limit for every address.
    pub fn new(limit: AuthFailureLimit) -> Self {
        let burst = limit.burst.max(1.0);
        let start = Instant::now();
        Self {
            limit,
            table: Mutex::new(FailureTable {
                buckets: HashMap::new(),
                overflow: Bucket { tokens: burst, at: start },
                next_prune: None,
            }),
        }
    }

    fn enabled(&self) -> bool {
        self.limit.per_minute > 0.0
    }

    fn refill(&self, bucket: &mut Bucket, now: Instant) {
        let elapsed = now.saturating_duration_since(bucket.at).as_secs_f64();
        bucket.tokens = (bucket.tokens + elapsed * self.limit.per_minute / 60.0).min(self.limit.burst.max(1.0));
        bucket.at = now;
    }

    fn wait(&self, bucket: &Bucket) -> Duration {
        Duration::from_secs_f64((1.0 - bucket.tokens).max(0.0) * 60.0 / self.limit.per_minute)
    }

    /// When `client` is new and the table full, drops the buckets that have refilled: they
    /// carry no information. The scan runs at most once a second, so a flood of new
    /// addresses does not make every request pay for it.
    fn make_room(&self, table: &mut FailureTable, client: ClientAddr, now: Instant) {
        if table.buckets.len() < self.limit.max_addresses
            || table.buckets.contains_key(&client)
            || table.next_prune.is_some_and(|at| now < at)
        {
            return;
        }
        let (burst, per_second) = (self.limit.burst.max(1.0), self.limit.per_minute / 60.0);
        table.buckets.retain(|_, b| b.tokens + now.saturating_duration_since(b.at).as_secs_f64() * per_second < burst);
        table.next_prune = Some(now + Duration::from_secs(1));
    }

    /// Whether `client` may try to authenticate at `now`; if not, how long until it may.
    /// Takes nothing: only failures count, so a client with a good key is never slowed.
    pub fn check(&self, client: ClientAddr, now: Instant) -> Result<(), Duration> {
        if !self.enabled() {
            return Ok(());
        }
        let mut table = self.table.lock().unwrap_or_else(|e| e.into_inner());
        let table = &mut *table;
        self.make_room(table, client, now);
        let full = table.buckets.len() >= self.limit.max_addresses;
        let bucket = match table.buckets.get_mut(&client) {
            Some(bucket) => bucket,
            None if full => &mut table.overflow,
            // Never seen and room to spare: a full bucket, which need not be stored.
            None => return Ok(()),
        };
        self.refill(bucket, now);
        if bucket.tokens >= 1.0 { Ok(()) } else { Err(self.wait(bucket)) }
    }

    /// Counts one failed authentication of `client` at `now`.
    pub fn failed(&self, client: ClientAddr, now: Instant) {
        if !self.enabled() {
            return;
        }
        let burst = self.limit.burst.max(1.0);
        let mut table = self.table.lock().unwrap_or_else(|e| e.into_inner());
        let table = &mut *table;
        self.make_room(table, client, now);
        let bucket = if let Some(bucket) = table.buckets.get_mut(&client) {
            bucket
        } else if table.buckets.len() < self.limit.max_addresses {
            table.buckets.entry(client).or_insert(Bucket { tokens: burst, at: now })
        } else {
            &mut table.overflow
        };
        self.refill(bucket, now);
        bucket.tokens = (bucket.tokens - 1.0).max(0.0);
    }

    /// How many addresses are tracked (for tests of the bound).
    pub fn tracked(&self) -> usize {
        self.table.lock().unwrap_or_else(|e| e.into_inner()).buckets.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(s: &str) -> ClientAddr {
        ClientAddr::new(Some(s.parse().unwrap()))
    }

    #[test]
    fn failures_are_limited_per_address_and_forgiven_over_time() {
        let limiter = FailureLimiter::new(AuthFailureLimit { burst: 3.0, per_minute: 6.0, max_addresses: 100 });
        let t0 = Instant::now();
        for _ in 0..3 {
            assert!(limiter.check(ip("203.0.113.7"), t0).is_ok());
            limiter.failed(ip("203.0.113.7"), t0);
        }
        let wait = limiter.check(ip("203.0.113.7"), t0).unwrap_err();
        assert_eq!(wait, Duration::from_secs(10));
        assert!(limiter.check(ip("203.0.113.8"), t0).is_ok(), "another address has its own bucket");
        assert!(limiter.check(ip("203.0.113.7"), t0 + Duration::from_secs(10)).is_ok());
        // Checking takes nothing: only failures count.
        for _ in 0..100 {
            assert!(limiter.check(ip("198.51.100.1"), t0).is_ok());
        }
        assert_eq!(limiter.tracked(), 1);
    }

    #[test]
    fn an_ipv6_host_counts_once_for_its_whole_64_and_mapped_v4_as_v4() {
        assert_eq!(ip("2001:db8:1:2::1"), ip("2001:db8:1:2:ffff::9"));
        assert_ne!(ip("2001:db8:1:2::1"), ip("2001:db8:1:3::1"));
        assert_eq!(ip("::ffff:203.0.113.7"), ip("203.0.113.7"));
    }

    #[test]
    fn the_table_is_bounded_and_overflowing_addresses_share_one_bucket() {
        let limiter = FailureLimiter::new(AuthFailureLimit { burst: 2.0, per_minute: 1.0, max_addresses: 4 });
        let t0 = Instant::now();
        for i in 0..10_000u32 {
            let client = ClientAddr::new(Some(IpAddr::from(i.to_be_bytes())));
            if limiter.check(client, t0).is_ok() {
                limiter.failed(client, t0);
            }
        }
        assert_eq!(limiter.tracked(), 4);
        // The shared bucket is spent: a new address is refused too.
        assert!(limiter.check(ip("192.0.2.200"), t0).is_err());
        // Once the tracked ones are forgiven, they make room again.
        let later = t0 + Duration::from_secs(600);
        limiter.failed(ip("192.0.2.201"), later);
        assert_eq!(limiter.tracked(), 1);
    }

    #[test]
    fn trusted_proxies_parse_match_and_name_the_client() {
        let none = TrustedProxies::default();
        let peer: IpAddr = "127.0.0.1".parse().unwrap();
        assert_eq!(none.client(peer, ["203.0.113.7"].into_iter()), peer, "off by default: the header is ignored");
        let proxies = TrustedProxies::parse(&["127.0.0.1", "10.0.0.0/8", "fd00::/8"]).unwrap();
        assert!(proxies.contains("10.9.8.7".parse().unwrap()));
        assert!(proxies.contains("::ffff:127.0.0.1".parse().unwrap()));
        assert!(proxies.contains("fd12::1".parse().unwrap()));
        assert!(!proxies.contains("11.0.0.1".parse().unwrap()));
        let client = |values: &[&str]| proxies.client(peer, values.iter().copied());
        assert_eq!(client(&["203.0.113.7"]), "203.0.113.7".parse::<IpAddr>().unwrap());
        // The right-most untrusted hop: what the client wrote itself further left is ignored.
        assert_eq!(client(&["6.6.6.6, 203.0.113.7, 10.1.1.1"]), "203.0.113.7".parse::<IpAddr>().unwrap());
        assert_eq!(client(&["6.6.6.6", "203.0.113.7"]), "203.0.113.7".parse::<IpAddr>().unwrap());
        assert_eq!(client(&[]), peer);
        assert_eq!(client(&["not-an-ip"]), peer);
        assert_eq!(client(&["203.0.113.7, garbage"]), peer);
        // An untrusted peer's header is never believed.
        let stranger: IpAddr = "198.51.100.9".parse().unwrap();
        assert_eq!(proxies.client(stranger, ["203.0.113.7"].into_iter()), stranger);
        for bad in ["", "10.0.0.0/33", "localhost", "10.0.0.0/x", "::1/129"] {
            assert!(TrustedProxies::parse(&[bad]).is_err(), "{bad:?}");
        }
        assert!(TrustedProxies::parse(&vec!["127.0.0.1"; TrustedProxies::MAX + 1]).is_err());
    }

    #[test]
    fn zero_rate_disables_the_failure_limit() {
        let limiter = FailureLimiter::new(AuthFailureLimit { burst: 1.0, per_minute: 0.0, max_addresses: 1 });
        let t0 = Instant::now();
        for _ in 0..100 {
            limiter.failed(ip("203.0.113.7"), t0);
            assert!(limiter.check(ip("203.0.113.7"), t0).is_ok());
        }
        assert_eq!(limiter.tracked(), 0);
    }

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
