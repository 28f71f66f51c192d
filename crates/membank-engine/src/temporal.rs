//! Time expressions in a query ("on May 4th", "yesterday", "last week", "5月4日", "上周",
//! "前几天", "our first conversation"), resolved against the query's own day.
//!
//! [`parse`] finds at most one expression and says which days it means and how sure that
//! is: a named date or "yesterday" is *exact*; "a few days ago" or "last week" is *fuzzy*.
//! The recall pipeline turns an exact range into a strong boost (memories of those days
//! rank first, others still follow) and a fuzzy range into a mild one; it never filters
//! hard, because people misremember dates. Pure functions of `(query, today)`: no clock,
//! no store.
//!
//! `today` may be any day chrono's calendar holds (a client can send a `now` far in the
//! past): every step from it is checked arithmetic ([`shift`]), and an expression whose
//! days would fall off either end of the calendar is simply not found, never a panic.

use chrono::{Datelike, Duration, NaiveDate, Weekday};

/// What a time expression refers to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TimeReference {
    /// Days from `from` to `to`, both included.
    Days {
        /// First day.
        from: NaiveDate,
        /// Last day.
        to: NaiveDate,
    },
    /// The first day of the person's history ("our first conversation").
    FirstDay,
}

/// A time expression found in a query.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TimeExpression {
    /// The days it refers to.
    pub reference: TimeReference,
    /// True for named dates and single relative days; false for vague spans.
    pub exact: bool,
    /// The byte range of the expression in the query, so it can be left out of the search text.
    pub span: (usize, usize),
    /// Month and day of a date named without a year ("May 4th", "5月4日"). `reference` then
    /// holds the most recent such day not after `today`; a caller that knows on which days
    /// the person has memories may choose another year ([`yearless_candidates`]).
    pub month_day: Option<(u32, u32)>,
}

impl TimeExpression {
    /// The expression as written in `query` ("May 4th").
    pub fn text<'a>(&self, query: &'a str) -> &'a str {
        query.get(self.span.0..self.span.1).unwrap_or("").trim()
    }

    /// The query without the expression.
    pub fn strip(&self, query: &str) -> String {
        let (start, end) = self.span;
        match (query.get(..start), query.get(end..)) {
            (Some(before), Some(after)) => format!("{before} {after}"),
            _ => query.to_string(),
        }
    }
}

const MONTHS: &[(&str, u32)] = &[
    ("january", 1),
    ("february", 2),
    ("march", 3),
    ("april", 4),
    ("may", 5),
    ("june", 6),
    ("july", 7),
    ("august", 8),
    ("september", 9),
    ("october", 10),
    ("november", 11),
    ("december", 12),
    ("jan", 1),
    ("feb", 2),
    ("mar", 3),
    ("apr", 4),
    ("jun", 6),
    ("jul", 7),
    ("aug", 8),
    ("sept", 9),
    ("sep", 9),
    ("oct", 10),
    ("nov", 11),
    ("dec", 12),
];

const WEEKDAYS: &[(&str, Weekday)] = &[
    ("monday", Weekday::Mon),
    ("tuesday", Weekday::Tue),
    ("wednesday", Weekday::Wed),
    ("thursday", Weekday::Thu),
    ("friday", Weekday::Fri),
    ("saturday", Weekday::Sat),
    ("sunday", Weekday::Sun),
];

const SMALL_NUMBERS: &[(&str, i64)] = &[
    ("one", 1),
    ("two", 2),
    ("three", 3),
    ("four", 4),
    ("five", 5),
    ("six", 6),
    ("seven", 7),
    ("eight", 8),
    ("nine", 9),
    ("ten", 10),
];

/// A word of the lowercased query with its byte range.
#[derive(Debug, Clone, Copy)]
struct Word<'a> {
    text: &'a str,
    start: usize,
    end: usize,
}

fn words(lower: &str) -> Vec<Word<'_>> {
    let mut out = Vec::new();
    let mut start = None;
    for (i, c) in lower.char_indices() {
        if c.is_alphanumeric() {
            start.get_or_insert(i);
        } else if let Some(s) = start.take() {
            out.push(Word { text: &lower[s..i], start: s, end: i });
        }
    }
    if let Some(s) = start {
        out.push(Word { text: &lower[s..], start: s, end: lower.len() });
    }
    out
}

/// "4", "4th", "27th", "1st", "22nd", "3rd" → the day number.
fn day_number(word: &str) -> Option<u32> {
    let digits = word.trim_end_matches(|c: char| c.is_ascii_alphabetic());
    let suffix = &word[digits.len()..];
    if !matches!(suffix, "" | "st" | "nd" | "rd" | "th") || digits.is_empty() || digits.len() > 2 {
        return None;
    }
    digits.parse().ok().filter(|d| (1..=31).contains(d))
}

fn month(word: &str) -> Option<u32> {
    MONTHS.iter().find(|(name, _)| *name == word).map(|(_, m)| *m)
}

/// The latest date with this month and day that is not after `today` (a year may be given).
fn resolve(month: u32, day: u32, year: Option<i32>, today: NaiveDate) -> Option<NaiveDate> {
    if let Some(year) = year {
        return NaiveDate::from_ymd_opt(year, month, day);
    }
    let this_year = NaiveDate::from_ymd_opt(today.year(), month, day);
    match this_year {
        Some(date) if date <= today => Some(date),
        _ => NaiveDate::from_ymd_opt(today.year() - 1, month, day),
    }
}

fn days(from: NaiveDate, to: NaiveDate, exact: bool, span: (usize, usize)) -> TimeExpression {
    TimeExpression { reference: TimeReference::Days { from, to }, exact, span, month_day: None }
}

/// A named date: one exact day, remembering its month and day when no year was given.
fn named_day(date: NaiveDate, year: Option<i32>, span: (usize, usize)) -> TimeExpression {
    TimeExpression { month_day: year.is_none().then(|| (date.month(), date.day())), ..days(date, date, true, span) }
}

/// How many years back [`yearless_candidates`] looks at most.
const MAX_CANDIDATE_YEARS: usize = 200;

/// The days a date without a year may mean, most recent first: `month`/`day` in each year,
/// from the latest one not after `today` back to the first on or after `earliest` (the
/// person's first memory), at most [`MAX_CANDIDATE_YEARS`] of them. February 29th only in
/// leap years. Empty when no such day lies between `earliest` and `today`.
pub fn yearless_candidates(month: u32, day: u32, today: NaiveDate, earliest: NaiveDate) -> Vec<NaiveDate> {
    let mut out = Vec::new();
    let mut year = today.year();
    while year >= earliest.year() && out.len() < MAX_CANDIDATE_YEARS {
        if let Some(date) = NaiveDate::from_ymd_opt(year, month, day).filter(|d| *d <= today && *d >= earliest) {
            out.push(date);
        }
        let Some(previous) = year.checked_sub(1) else { break };
        year = previous;
    }
    out
}

/// `date` moved by `days` (negative: back in time); `None` past either end of the calendar.
fn shift(date: NaiveDate, days: i64) -> Option<NaiveDate> {
    date.checked_add_signed(Duration::try_days(days)?)
}

fn monday_of(date: NaiveDate) -> Option<NaiveDate> {
    shift(date, -i64::from(date.weekday().num_days_from_monday()))
}

/// Days `first..=last` before `today`: both ends, or `None` off the calendar.
fn span_before(today: NaiveDate, first: i64, last: i64) -> Option<(NaiveDate, NaiveDate)> {
    Some((shift(today, -first)?, shift(today, -last)?))
}

fn month_bounds(year: i32, month: u32) -> Option<(NaiveDate, NaiveDate)> {
    let first = NaiveDate::from_ymd_opt(year, month, 1)?;
    // December's last day directly: the first of next January may lie past the calendar.
    let last = if month == 12 {
        NaiveDate::from_ymd_opt(year, 12, 31)?
    } else {
        NaiveDate::from_ymd_opt(year, month + 1, 1)?.pred_opt()?
    };
    Some((first, last))
}

/// The month before `today`'s, as (year, month).
fn previous_month(today: NaiveDate) -> (i32, u32) {
    if today.month() == 1 { (today.year() - 1, 12) } else { (today.year(), today.month() - 1) }
}

/// Finds the first time expression in `query`, resolved against `today` (the query's day).
pub fn parse(query: &str, today: NaiveDate) -> Option<TimeExpression> {
    // Lowercasing can change byte lengths for a few scripts (İ grows, ẞ shrinks); then spans
    // found in the lowercased text would not lie on the query's character boundaries, so fall
    // back to the original text (ASCII patterns still match case-sensitively). Comparing the
    // total length is not enough: one character may grow as another shrinks.
    let same_lengths = query.chars().all(|c| c.to_lowercase().map(char::len_utf8).sum::<usize>() == c.len_utf8());
    let lower = if same_lengths { query.to_lowercase() } else { query.to_string() };
    parse_english(&lower, today).or_else(|| parse_chinese(query, today))
}

fn parse_english(lower: &str, today: NaiveDate) -> Option<TimeExpression> {
    let w = words(lower);
    let at = |i: usize| w.get(i).map(|x| x.text);
    for i in 0..w.len() {
        let start = w[i].start;
        // Month name + day ("May 4th", "April 27", "May 4, 2023").
        if let (Some(m), Some(d)) = (month(w[i].text), at(i + 1).and_then(day_number)) {
            // "may" is also a verb: only a month when a day number follows.
            let year = at(i + 2).and_then(|y| y.parse::<i32>().ok()).filter(|y| (1900..=2200).contains(y));
            let end = if year.is_some() { w[i + 2].end } else { w[i + 1].end };
            if let Some(date) = resolve(m, d, year, today) {
                return Some(named_day(date, year, (start, end)));
            }
        }
        // Day + (of) + month ("4th of May", "4 May 2023").
        if let Some(d) = day_number(w[i].text) {
            let (month_index, of) = if at(i + 1) == Some("of") { (i + 2, true) } else { (i + 1, false) };
            if let Some(m) = at(month_index).and_then(month)
                && (of || w[i].text.len() <= 4)
            {
                let year =
                    at(month_index + 1).and_then(|y| y.parse::<i32>().ok()).filter(|y| (1900..=2200).contains(y));
                let end = if year.is_some() { w[month_index + 1].end } else { w[month_index].end };
                if let Some(date) = resolve(m, d, year, today) {
                    return Some(named_day(date, year, (start, end)));
                }
            }
        }
        // ISO dates: 2023-05-04 or 2023/05/04 (digits split by the separator).
        if w[i].text.len() == 4
            && w.len() > i + 2
            && let (Ok(y), Ok(m), Ok(d)) =
                (w[i].text.parse::<i32>(), w[i + 1].text.parse::<u32>(), w[i + 2].text.parse::<u32>())
        {
            let separators_ok =
                lower[w[i].end..w[i + 1].start].len() == 1 && lower[w[i + 1].end..w[i + 2].start].len() == 1;
            if separators_ok && let Some(date) = NaiveDate::from_ymd_opt(y, m, d) {
                return Some(days(date, date, true, (start, w[i + 2].end)));
            }
        }
        match w[i].text {
            "today" | "tonight" => return Some(days(today, today, true, (start, w[i].end))),
            "yesterday" => {
                // "the day before yesterday"
                if i >= 3 && at(i - 1) == Some("before") && at(i - 2) == Some("day") {
                    let date = shift(today, -2)?;
                    return Some(days(date, date, true, (w[i - 2].start, w[i].end)));
                }
                let date = shift(today, -1)?;
                return Some(days(date, date, true, (start, w[i].end)));
            }
            "last" | "this" | "past" => {
                let next = at(i + 1);
                let end = w.get(i + 1).map(|x| x.end).unwrap_or(w[i].end);
                match (w[i].text, next) {
                    ("last", Some("week")) => {
                        let from = shift(monday_of(today)?, -7)?;
                        return Some(days(from, shift(from, 6)?, false, (start, end)));
                    }
                    ("this", Some("week")) => return Some(days(monday_of(today)?, today, false, (start, end))),
                    ("past", Some("week")) => return Some(days(shift(today, -7)?, today, false, (start, end))),
                    ("last", Some("weekend")) => {
                        let saturday = shift(monday_of(today)?, -2)?;
                        return Some(days(saturday, shift(saturday, 1)?, false, (start, end)));
                    }
                    ("last", Some("month")) => {
                        let (year, month) = previous_month(today);
                        let (from, to) = month_bounds(year, month)?;
                        return Some(days(from, to, false, (start, end)));
                    }
                    ("this", Some("month")) => {
                        let (from, _) = month_bounds(today.year(), today.month())?;
                        return Some(days(from, today, false, (start, end)));
                    }
                    ("last", Some(day)) => {
                        if let Some((_, weekday)) = WEEKDAYS.iter().find(|(name, _)| *name == day) {
                            let mut date = shift(today, -1)?;
                            while date.weekday() != *weekday {
                                date = shift(date, -1)?;
                            }
                            return Some(days(date, date, true, (start, end)));
                        }
                    }
                    _ => {}
                }
            }
            "ago" if i >= 2 => {
                let unit = w[i - 1].text;
                // "a couple of days ago": the amount sits before "of".
                let amount_index = if w[i - 2].text == "of" && i >= 3 { i - 3 } else { i - 2 };
                let amount_word = w[amount_index].text;
                let unit_days = match unit {
                    "day" | "days" => 1,
                    "week" | "weeks" => 7,
                    "month" | "months" => 30,
                    _ => 0,
                };
                if unit_days > 0 {
                    let amount = amount_word
                        .parse::<i64>()
                        .ok()
                        .or_else(|| SMALL_NUMBERS.iter().find(|(n, _)| *n == amount_word).map(|(_, v)| *v));
                    let (amount_start, vague) = match amount_word {
                        "few" | "several" | "couple" => {
                            // "a few days ago", "a couple of days ago": include the article.
                            let article =
                                amount_index.checked_sub(1).filter(|a| matches!(w[*a].text, "a" | "few" | "several"));
                            (article.map(|a| w[a].start).unwrap_or(w[amount_index].start), true)
                        }
                        _ => (w[amount_index].start, false),
                    };
                    if vague {
                        let most = if amount_word == "couple" { 4 } else { 10 } * unit_days;
                        let (from, to) = span_before(today, most, 1)?;
                        return Some(days(from, to, false, (amount_start, w[i].end)));
                    }
                    if let Some(amount) = amount.filter(|a| (1..=400).contains(a)) {
                        let center = shift(today, -amount * unit_days)?;
                        let slack = if unit_days == 1 { 0 } else { unit_days / 2 };
                        let exact = unit_days == 1;
                        return Some(days(
                            shift(center, -slack)?,
                            shift(center, slack)?,
                            exact,
                            (amount_start, w[i].end),
                        ));
                    }
                }
            }
            "first" => {
                // "our first conversation", "the first time we talked", "when we first met".
                let after: Vec<&str> = (1..=3).filter_map(|k| at(i + k)).collect();
                let talk = |x: &&str| {
                    matches!(
                        *x,
                        "conversation"
                            | "conversations"
                            | "chat"
                            | "talk"
                            | "talked"
                            | "spoke"
                            | "met"
                            | "chatted"
                            | "meeting"
                    )
                };
                if after.first().is_some_and(talk) || (after.first() == Some(&"time") && after.iter().skip(1).any(talk))
                {
                    let end = w[(i + after.len()).min(w.len() - 1)].end;
                    return Some(TimeExpression {
                        reference: TimeReference::FirstDay,
                        exact: true,
                        span: (start, end),
                        month_day: None,
                    });
                }
            }
            _ => {}
        }
    }
    None
}

/// Chinese numerals up to 99 (一, 十二, 二十七) or ASCII/full-width digits.
fn chinese_number(text: &str) -> Option<u32> {
    if text.is_empty() {
        return None;
    }
    let ascii: String = text
        .chars()
        .map(|c| {
            if ('０'..='９').contains(&c) {
                char::from_u32(c as u32 - '０' as u32 + '0' as u32).unwrap_or(c)
            } else {
                c
            }
        })
        .collect();
    if let Ok(n) = ascii.parse::<u32>() {
        return Some(n);
    }
    let digit = |c: char| {
        "零一二三四五六七八九".chars().position(|d| d == c).map(|p| p as u32).or(if c == '两' {
            Some(2)
        } else {
            None
        })
    };
    let chars: Vec<char> = text.chars().collect();
    match chars.as_slice() {
        [c] if *c == '十' => Some(10),
        [c] => digit(*c),
        ['十', u] => digit(*u).map(|u| 10 + u),
        [t, '十'] => digit(*t).map(|t| t * 10),
        [t, '十', u] => Some(digit(*t)? * 10 + digit(*u)?),
        _ => None,
    }
}

fn is_numeral(c: char) -> bool {
    c.is_ascii_digit() || ('０'..='９').contains(&c) || "零一二三四五六七八九十两".contains(c)
}

fn parse_chinese(query: &str, today: NaiveDate) -> Option<TimeExpression> {
    let chars: Vec<(usize, char)> = query.char_indices().collect();
    let byte_end = |index: usize| chars.get(index).map(|(b, _)| *b).unwrap_or(query.len());
    // N月N日 / N月N号
    for (i, (_, c)) in chars.iter().enumerate() {
        if *c != '月' {
            continue;
        }
        let mut m_start = i;
        while m_start > 0 && is_numeral(chars[m_start - 1].1) {
            m_start -= 1;
        }
        let mut d_end = i + 1;
        while d_end < chars.len() && is_numeral(chars[d_end].1) {
            d_end += 1;
        }
        if m_start == i || d_end == i + 1 || !matches!(chars.get(d_end).map(|x| x.1), Some('日' | '号' | '號')) {
            continue;
        }
        let month_text: String = chars[m_start..i].iter().map(|x| x.1).collect();
        let day_text: String = chars[i + 1..d_end].iter().map(|x| x.1).collect();
        // An optional year before: 2023年5月4日.
        let mut start = m_start;
        let mut year = None;
        if m_start > 0 && chars[m_start - 1].1 == '年' {
            let mut y_start = m_start - 1;
            while y_start > 0 && chars[y_start - 1].1.is_ascii_digit() {
                y_start -= 1;
            }
            let year_text: String = chars[y_start..m_start - 1].iter().map(|x| x.1).collect();
            if let Ok(y) = year_text.parse::<i32>() {
                year = Some(y);
                start = y_start;
            }
        }
        if let (Some(m), Some(d)) = (chinese_number(&month_text), chinese_number(&day_text))
            && let Some(date) = resolve(m, d, year, today)
        {
            return Some(named_day(date, year, (byte_end(start), byte_end(d_end + 1))));
        }
    }
    let find = |needle: &str| query.find(needle).map(|at| (at, at + needle.len()));
    let single = |offset: i64, span: (usize, usize)| {
        let date = shift(today, -offset)?;
        Some(days(date, date, true, span))
    };
    if let Some(span) = find("大前天") {
        return single(3, span);
    }
    if let Some(span) = find("前天") {
        return single(2, span);
    }
    if let Some(span) = find("昨天").or_else(|| find("昨日")).or_else(|| find("昨晚")) {
        return single(1, span);
    }
    if let Some(span) = find("今天").or_else(|| find("今日")).or_else(|| find("今晚")) {
        return single(0, span);
    }
    for needle in ["前几天", "几天前", "这几天", "最近几天", "前些天", "前段时间"] {
        if let Some(span) = find(needle) {
            let (from, to) = span_before(today, 10, 1)?;
            return Some(days(from, to, false, span));
        }
    }
    // N天前
    if let Some(at) = query.find("天前") {
        let before: Vec<(usize, char)> = query[..at].char_indices().collect();
        let mut k = before.len();
        while k > 0 && is_numeral(before[k - 1].1) {
            k -= 1;
        }
        if k < before.len() {
            let text: String = before[k..].iter().map(|x| x.1).collect();
            if let Some(n) = chinese_number(&text).filter(|n| (1..=400).contains(n)) {
                return single(i64::from(n), (before[k].0, at + "天前".len()));
            }
        }
    }
    for needle in ["上周", "上个星期", "上星期", "上礼拜", "上个礼拜", "上一周"] {
        if let Some((s, e)) = find(needle) {
            // 上周三: a weekday of last week.
            let monday = shift(monday_of(today)?, -7)?;
            let next = query[e..].chars().next();
            let weekday = next.and_then(|c| "一二三四五六日天".chars().position(|d| d == c)).map(|p| p.min(6) as i64);
            if let (Some(offset), Some(c)) = (weekday, next) {
                let date = shift(monday, offset)?;
                return Some(days(date, date, true, (s, e + c.len_utf8())));
            }
            return Some(days(monday, shift(monday, 6)?, false, (s, e)));
        }
    }
    for needle in ["这周", "本周", "这个星期", "这星期", "这礼拜"] {
        if let Some(span) = find(needle) {
            return Some(days(monday_of(today)?, today, false, span));
        }
    }
    if let Some(span) = find("上个月").or_else(|| find("上月")) {
        let (year, month) = previous_month(today);
        let (from, to) = month_bounds(year, month)?;
        return Some(days(from, to, false, span));
    }
    for needle in ["第一次聊天", "第一次对话", "第一次见面", "第一次交流", "第一次谈话", "第一次"]
    {
        if let Some(span) = find(needle)
            && (needle != "第一次" || query.contains("聊") || query.contains("谈"))
        {
            return Some(TimeExpression { reference: TimeReference::FirstDay, exact: true, span, month_day: None });
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn today() -> NaiveDate {
        NaiveDate::from_ymd_opt(2023, 5, 7).unwrap() // a Sunday
    }

    fn check(query: &str, expect: Option<(&str, &str, bool)>) {
        let got = parse(query, today()).map(|e| match e.reference {
            TimeReference::Days { from, to } => (from.to_string(), to.to_string(), e.exact),
            TimeReference::FirstDay => ("first".into(), "first".into(), e.exact),
        });
        let expect = expect.map(|(a, b, e)| (a.to_string(), b.to_string(), e));
        assert_eq!(got, expect, "{query}");
    }

    #[test]
    fn english_dates_and_relative_days() {
        check("On May 4th, I shared some problems", Some(("2023-05-04", "2023-05-04", true)));
        check("What did we talk about on April 27th?", Some(("2023-04-27", "2023-04-27", true)));
        check("on the 2nd of May", Some(("2023-05-02", "2023-05-02", true)));
        check("What happened on December 25?", Some(("2022-12-25", "2022-12-25", true)));
        check("May 4, 2021 was fun", Some(("2021-05-04", "2021-05-04", true)));
        check("see 2023-05-01", Some(("2023-05-01", "2023-05-01", true)));
        check("what did I eat yesterday", Some(("2023-05-06", "2023-05-06", true)));
        check("the day before yesterday", Some(("2023-05-05", "2023-05-05", true)));
        check("3 days ago I went out", Some(("2023-05-04", "2023-05-04", true)));
        check("A few days ago, I mentioned the park", Some(("2023-04-27", "2023-05-06", false)));
        check("a couple of days ago", Some(("2023-05-03", "2023-05-06", false)));
        check("last week we talked", Some(("2023-04-24", "2023-04-30", false)));
        check("last Friday", Some(("2023-05-05", "2023-05-05", true)));
        check("our first conversation", Some(("first", "first", true)));
        check("the first time we talked", Some(("first", "first", true)));
        check("You may like this", None);
        check("I have 3 cats", None);
    }

    #[test]
    fn chinese_dates_and_relative_days() {
        check("我曾经在5月2日提到过我去了博物馆", Some(("2023-05-02", "2023-05-02", true)));
        check("在4月27号这天，我跑了多久", Some(("2023-04-27", "2023-04-27", true)));
        check("五月四日那天", Some(("2023-05-04", "2023-05-04", true)));
        check("昨天我说了什么", Some(("2023-05-06", "2023-05-06", true)));
        check("前天", Some(("2023-05-05", "2023-05-05", true)));
        check("上周我们聊了什么", Some(("2023-04-24", "2023-04-30", false)));
        check("上周三", Some(("2023-04-26", "2023-04-26", true)));
        check("前几天我提到", Some(("2023-04-27", "2023-05-06", false)));
        check("三天前", Some(("2023-05-04", "2023-05-04", true)));
        check("我们第一次聊天的时候", Some(("first", "first", true)));
        check("我喜欢猫", None);
    }

    #[test]
    fn a_date_without_a_year_keeps_its_month_and_day() {
        let month_day = |query: &str| parse(query, today()).and_then(|e| e.month_day);
        assert_eq!(month_day("what did I do on May 4th?"), Some((5, 4)));
        assert_eq!(month_day("on the 2nd of May"), Some((5, 2)));
        assert_eq!(month_day("五月四日那天"), Some((5, 4)));
        assert_eq!(month_day("May 4, 2021 was fun"), None);
        assert_eq!(month_day("2023年5月4日"), None);
        assert_eq!(month_day("see 2023-05-01"), None);
        assert_eq!(month_day("yesterday"), None);
        let query = "what did I do on May 4th?";
        assert_eq!(parse(query, today()).unwrap().text(query), "May 4th");
    }

    #[test]
    fn candidates_of_a_date_without_a_year_run_back_to_the_first_memory() {
        let d = |s: &str| s.parse::<NaiveDate>().unwrap();
        let got = yearless_candidates(5, 4, d("2025-03-01"), d("2022-12-31"));
        assert_eq!(got, [d("2024-05-04"), d("2023-05-04")]);
        let got = yearless_candidates(5, 4, d("2025-05-04"), d("2025-01-01"));
        assert_eq!(got, [d("2025-05-04")]);
        assert!(yearless_candidates(5, 4, d("2025-05-03"), d("2025-01-01")).is_empty());
        assert_eq!(yearless_candidates(2, 29, d("2025-03-01"), d("2019-01-01")), [d("2024-02-29"), d("2020-02-29")]);
        assert_eq!(yearless_candidates(1, 1, d("2025-03-01"), d("1000-01-01")).len(), MAX_CANDIDATE_YEARS);
        // The ends of the calendar are no panic.
        assert!(!yearless_candidates(1, 1, NaiveDate::MAX, NaiveDate::MIN).is_empty());
        assert!(yearless_candidates(12, 31, NaiveDate::MIN, NaiveDate::MIN).is_empty());
    }

    #[test]
    fn stripping_leaves_the_rest_of_the_query() {
        let query = "On May 4th, I shared some problems";
        let e = parse(query, today()).unwrap();
        assert_eq!(e.strip(query), "On  , I shared some problems");
        let query = "我曾经在5月2日提到过";
        let e = parse(query, today()).unwrap();
        assert_eq!(e.strip(query), "我曾经在 提到过");
    }
}
