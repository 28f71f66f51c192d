//! Time: the injected clock, instants, and the day bucket of a memory.
//!
//! Engine logic never reads the system clock; it asks a [`Clock`]. Production uses
//! [`SystemClock`]; tests and simulations use [`ManualClock`] and move it by hand.

use std::sync::Mutex;

pub use chrono::SecondsFormat;
use chrono::{DateTime, Datelike, NaiveDate, Utc};

use crate::error::InvalidInput;

/// An instant, in UTC. Stored with millisecond precision.
pub type Timestamp = DateTime<Utc>;

/// Where "now" comes from.
pub trait Clock: Send + Sync {
    /// The current instant.
    fn now(&self) -> Timestamp;
}

/// The machine's clock.
#[derive(Debug, Default, Clone, Copy)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now(&self) -> Timestamp {
        truncate_to_millis(Utc::now())
    }
}

/// A clock that only moves when told to; for tests and simulations.
#[derive(Debug)]
pub struct ManualClock(Mutex<Timestamp>);

impl ManualClock {
    /// A clock standing at `start`.
    pub fn new(start: Timestamp) -> Self {
        Self(Mutex::new(truncate_to_millis(start)))
    }
    /// Moves the clock to `to`.
    pub fn set(&self, to: Timestamp) {
        *self.0.lock().unwrap_or_else(|e| e.into_inner()) = truncate_to_millis(to);
    }
    /// Moves the clock forward by `by`.
    pub fn advance(&self, by: chrono::Duration) {
        let mut guard = self.0.lock().unwrap_or_else(|e| e.into_inner());
        *guard += by;
    }
}

impl Clock for ManualClock {
    fn now(&self) -> Timestamp {
        *self.0.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// The years membank stores, in UTC and in the person's time zone alike: 1 to 9999. Every
/// path that takes a time or a day (REST, MCP, the CLI, every import) refuses others, so
/// whatever is stored can be exported as RFC 3339 and read back.
pub const YEARS: std::ops::RangeInclusive<i32> = 1..=9999;

/// `t` when its year (UTC) is in [`YEARS`], else an error naming `field`.
pub fn check_year(field: &'static str, t: Timestamp) -> Result<Timestamp, InvalidInput> {
    if YEARS.contains(&t.year()) {
        Ok(t)
    } else {
        Err(InvalidInput::new(
            field,
            format!("{} is outside the years 1 to 9999 (UTC) that membank stores", t.to_rfc3339()),
        ))
    }
}

/// `day` when its year is in [`YEARS`], else an error naming `field`.
pub fn check_day_year(field: &'static str, day: NaiveDate) -> Result<NaiveDate, InvalidInput> {
    if YEARS.contains(&day.year()) {
        Ok(day)
    } else {
        Err(InvalidInput::new(field, format!("{day} is outside the years 1 to 9999 that membank stores")))
    }
}

/// Drops sub-millisecond precision, which the store does not keep, so a value read back
/// equals the value written.
pub fn truncate_to_millis(t: Timestamp) -> Timestamp {
    DateTime::from_timestamp_millis(t.timestamp_millis()).unwrap_or(t)
}

/// Parses an RFC 3339 instant (`2024-05-04T18:30:00+08:00`, `2024-05-04T10:30:00Z`) or a
/// bare date (`2024-05-04`, taken as midnight UTC; see [`parse_instant_in`] for a person's
/// local midnight).
pub fn parse_instant(field: &'static str, text: &str) -> Result<Timestamp, InvalidInput> {
    parse_instant_in(field, text, UserTimeZone::UTC)
}

/// Parses an RFC 3339 instant, or a bare date (`2024-05-04`) as the first instant of that
/// day in `zone`: the person's local midnight (or, on a day whose midnight a daylight
/// saving change skips, the first local time that exists).
pub fn parse_instant_in(field: &'static str, text: &str, zone: UserTimeZone) -> Result<Timestamp, InvalidInput> {
    let text = text.trim();
    if let Ok(t) = DateTime::parse_from_rfc3339(text) {
        return check_year(field, truncate_to_millis(t.with_timezone(&Utc)));
    }
    if let Some(day) = bare_date(text) {
        let day = check_day_year(field, day)?;
        return zone
            .start_of(day)
            .ok_or_else(|| InvalidInput::new(field, format!("{day} has no start in {}", zone.name())))
            .and_then(|t| check_year(field, t));
    }
    Err(InvalidInput::new(
        field,
        format!(
            "{:?} is not an RFC 3339 time such as 2024-05-04T18:30:00Z, or a date such as 2024-05-04 (the person's local midnight)",
            crate::error::truncate(text, 80)
        ),
    ))
}

/// Parses a calendar day written `YYYY-MM-DD` (surrounding space ignored), such as a
/// memory's `day` or the ends of a day range. The error names `field`; its reason quotes
/// the value (shortened past 60 characters) and shows the expected form, so a caller that
/// frames errors its own way (a line number, a prefix) can reuse the reason as it is.
pub fn parse_day(field: &'static str, value: &str) -> Result<NaiveDate, InvalidInput> {
    let day = NaiveDate::parse_from_str(value.trim(), "%Y-%m-%d").map_err(|_| {
        InvalidInput::new(field, format!("{:?} is not a date such as 2024-05-04", crate::error::truncate(value, 60)))
    })?;
    check_day_year(field, day)
}

/// The date, when `text` is a bare `YYYY-MM-DD` date rather than an instant.
pub fn bare_date(text: &str) -> Option<NaiveDate> {
    let text = text.trim();
    if text.len() != 10 {
        return None;
    }
    NaiveDate::parse_from_str(text, "%Y-%m-%d").ok()
}

/// A validated IANA time zone (e.g. `Asia/Shanghai`), used to find a memory's local day.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct UserTimeZone(chrono_tz::Tz);

impl UserTimeZone {
    /// Coordinated Universal Time, the default for a new user.
    pub const UTC: Self = Self(chrono_tz::UTC);

    /// Parses an IANA zone name.
    pub fn parse(name: &str) -> Result<Self, InvalidInput> {
        name.trim().parse::<chrono_tz::Tz>().map(Self).map_err(|_| {
            InvalidInput::new(
                "time_zone",
                format!(
                    "{:?} is not an IANA time zone such as Europe/Berlin or Asia/Shanghai",
                    crate::error::truncate(name, 60)
                ),
            )
        })
    }
    /// The zone's IANA name.
    pub fn name(&self) -> &'static str {
        self.0.name()
    }
    /// The local calendar date of `at` in this zone: the day a memory belongs to.
    pub fn day_of(&self, at: Timestamp) -> NaiveDate {
        at.with_timezone(&self.0).date_naive()
    }
    /// The first instant of the local calendar date `day` in this zone: midnight, or when
    /// a daylight saving change skips midnight, the first local time of the day that exists.
    pub fn start_of(&self, day: NaiveDate) -> Option<Timestamp> {
        use chrono::TimeZone as _;
        (0..24 * 4).find_map(|quarter| {
            let local = day.and_hms_opt(quarter / 4, (quarter % 4) * 15, 0)?;
            self.0.from_local_datetime(&local).earliest().map(|t| t.with_timezone(&Utc))
        })
    }
}

impl Default for UserTimeZone {
    fn default() -> Self {
        Self::UTC
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn day_bucket_follows_the_users_zone() {
        let at = parse_instant("at", "2024-05-04T20:00:00Z").unwrap();
        assert_eq!(UserTimeZone::UTC.day_of(at).to_string(), "2024-05-04");
        let shanghai = UserTimeZone::parse("Asia/Shanghai").unwrap();
        assert_eq!(shanghai.day_of(at).to_string(), "2024-05-05");
        let la = UserTimeZone::parse("America/Los_Angeles").unwrap();
        assert_eq!(la.day_of(parse_instant("at", "2024-05-05T03:00:00Z").unwrap()).to_string(), "2024-05-04");
    }

    #[test]
    fn instants_parse_or_explain() {
        assert_eq!(parse_instant("at", "2024-05-04").unwrap().to_rfc3339(), "2024-05-04T00:00:00+00:00");
        assert_eq!(parse_instant("at", "2024-05-04T18:30:00+08:00").unwrap().to_rfc3339(), "2024-05-04T10:30:00+00:00");
        for bad in ["", "yesterday", "2024-13-01", "2024-05-04T25:00:00Z", "\u{0}"] {
            let err = parse_instant("at", bad).unwrap_err();
            assert_eq!(err.field, "at");
        }
        assert!(UserTimeZone::parse("Mars/Olympus").is_err());
    }

    #[test]
    fn days_parse_or_explain() {
        assert_eq!(parse_day("from", " 2024-05-04 ").unwrap().to_string(), "2024-05-04");
        let err = parse_day("from", "May 4").unwrap_err();
        assert_eq!((err.field, err.reason.as_str()), ("from", "\"May 4\" is not a date such as 2024-05-04"));
        assert!(parse_day("day", &"9".repeat(500)).unwrap_err().reason.len() < 100);
    }

    #[test]
    fn a_bare_date_is_the_persons_local_midnight() {
        let shanghai = UserTimeZone::parse("Asia/Shanghai").unwrap();
        assert_eq!(parse_instant_in("at", "2024-05-04", shanghai).unwrap().to_rfc3339(), "2024-05-03T16:00:00+00:00");
        assert_eq!(shanghai.day_of(parse_instant_in("at", "2024-05-04", shanghai).unwrap()).to_string(), "2024-05-04");
        // An instant with an offset means that instant, whatever the zone.
        assert_eq!(
            parse_instant_in("at", "2024-05-04T18:30:00+08:00", shanghai).unwrap().to_rfc3339(),
            "2024-05-04T10:30:00+00:00"
        );
        // Santiago skipped midnight on 2022-09-11 (clocks went from 00:00 to 01:00).
        let santiago = UserTimeZone::parse("America/Santiago").unwrap();
        let start = parse_instant_in("at", "2022-09-11", santiago).unwrap();
        assert_eq!(santiago.day_of(start).to_string(), "2022-09-11");
        assert_eq!(start.to_rfc3339(), "2022-09-11T04:00:00+00:00");
        assert_eq!(bare_date(" 2024-05-04 ").map(|d| d.to_string()).as_deref(), Some("2024-05-04"));
        for not_a_date in ["2024-5-4", "2024-05-04T00:00:00Z", "20240504", "2024-02-30"] {
            assert_eq!(bare_date(not_a_date), None, "{not_a_date}");
        }
    }
}
