//! What both temporal targets check: `temporal::parse` never panics for any query and any
//! day the calendar holds; a range runs forwards; the span lies on the query's character
//! boundaries, so stripping it is exact.

use chrono::{Datelike, NaiveDate};
use membank_engine::temporal::{self, TimeReference};

/// A day anywhere in chrono's calendar from four bytes, biased towards both ends and the
/// present (where the arithmetic and the real queries are).
pub fn today(bytes: [u8; 4]) -> NaiveDate {
    let raw = i32::from_le_bytes(bytes);
    let min = NaiveDate::MIN.num_days_from_ce();
    let max = NaiveDate::MAX.num_days_from_ce();
    let days = match raw & 3 {
        0 => min + (raw >> 2).rem_euclid(64),
        1 => max - (raw >> 2).rem_euclid(64),
        2 => 738_000 + (raw >> 2).rem_euclid(4_000),
        _ => min + (raw >> 2).rem_euclid(max - min + 1),
    };
    NaiveDate::from_num_days_from_ce_opt(days).expect("inside the calendar")
}

/// Parses and checks one query.
pub fn check(query: &str, today: NaiveDate) {
    let Some(expression) = temporal::parse(query, today) else { return };
    let (start, end) = expression.span;
    assert!(start <= end && query.get(start..end).is_some(), "span {:?} of {query:?}", expression.span);
    let _ = expression.strip(query);
    if let TimeReference::Days { from, to } = expression.reference {
        assert!(from <= to, "{query:?} on {today}: {from} > {to}");
    }
}
