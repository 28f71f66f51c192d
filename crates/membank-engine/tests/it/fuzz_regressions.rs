//! Inputs that once panicked (found by hand or by the `fuzz/` targets), each kept as a
//! regression test: crafted import files must fail with an invalid-input error naming the
//! JSON path, and the temporal parser must answer (or find nothing) for any `today` the
//! calendar holds, never panic on date arithmetic.
//!
//! It deliberately holds no behaviour tests of its own; those live beside their feature.

use chrono::NaiveDate;
use membank_engine::core::InvalidInput;
use membank_engine::import;
use membank_engine::temporal;

fn memorybank_error(file: &str) -> String {
    import::memorybank::parse(file.as_bytes())
        .map(|set| format!("parsed {} records", set.len()))
        .unwrap_or_else(|e: InvalidInput| e.to_string())
}

/// A MemoryBank file of one user with `turns` turns on `date`.
fn memorybank_day(date: &str, turns: usize) -> String {
    let turns: Vec<String> = (0..turns).map(|i| format!(r#"{{"query": "turn {i}"}}"#)).collect();
    format!(r#"{{"ann": {{"history": {{"{date}": [{}]}}}}}}"#, turns.join(","))
}

#[test]
fn a_full_width_digit_in_last_recall_date_is_an_error_with_its_path() {
    // "2023-04-2８" is 12 bytes; cutting it at byte 10 once split the full-width digit.
    let file = r#"{"ann": {"history": {"2023-04-28": [{"query": "hi", "last_recall_date": "2023-04-2８"}]}}}"#;
    let err = memorybank_error(file);
    assert!(err.starts_with("invalid import file: "), "{err}");
    assert!(err.contains(r#"$["ann"].history["2023-04-28"][0].last_recall_date"#), "{err}");
    // Other non-ASCII around the cut, and the reference file's long form, still behave.
    for value in ["２０２３-04-28", "2023-04-28é", "é", "2023-04-28 10:00:00"] {
        let file = file.replace("2023-04-2８", value);
        let _ = memorybank_error(&file);
    }
    let long_form = file.replace("2023-04-2８", "2023-04-29 10:11:12");
    assert!(import::memorybank::parse(long_form.as_bytes()).is_ok());
}

#[test]
fn turns_past_the_end_of_the_calendar_are_an_error_with_their_path() {
    // Past the years 1 to 9999 a day is refused at its key, before any arithmetic.
    let last = NaiveDate::MAX.format("%Y-%m-%d").to_string();
    let err = memorybank_error(&memorybank_day(&last, 721));
    assert!(err.starts_with("invalid import file: "), "{err}");
    assert!(err.contains(&format!(r#"$["ann"].history["{last}"]: {last} is outside the years 1 to 9999"#)), "{err}");
    // Summaries and global summaries sit 11 hours after noon: also past the end on the last day.
    let first = NaiveDate::MIN.format("%Y-%m-%d").to_string();
    for date in [&last, &first] {
        let file = format!(
            r#"{{"ann": {{"history": {{"{date}": [{{"query": "hi"}}]}}, "summary": {{"{date}": "s"}}, "overall_history": "o", "meta_information": {{"a": "b"}}}}}}"#
        );
        let _ = memorybank_error(&file);
    }
}

#[test]
fn locomo_and_longmemeval_turns_past_the_end_of_the_calendar_are_errors() {
    let turns: Vec<String> =
        (0..120).map(|i| format!(r#"{{"speaker": "A", "dia_id": "D1:{i}", "text": "t"}}"#)).collect();
    let locomo = format!(
        r#"[{{"sample_id": "s", "conversation": {{"session_1": [{}], "session_1_date_time": "11:59 pm on 31 December, +262142"}}}}]"#,
        turns.join(",")
    );
    let err = import::locomo::parse(locomo.as_bytes())
        .map(|s| format!("parsed {}", s.len()))
        .unwrap_or_else(|e| e.to_string());
    assert!(err.contains("$[0].conversation[\"session_1\"]"), "{err}");

    let messages: Vec<String> = (0..120).map(|_| r#"{"role": "user", "content": "c"}"#.to_string()).collect();
    let longmemeval = format!(
        r#"[{{"question_id": "q", "haystack_session_ids": ["a"], "haystack_dates": ["+262142/12/31 (Fri) 23:59"], "haystack_sessions": [[{}]]}}]"#,
        messages.join(",")
    );
    let err = import::longmemeval::parse(longmemeval.as_bytes())
        .map(|s| format!("parsed {}", s.len()))
        .unwrap_or_else(|e| e.to_string());
    assert!(err.contains("$[0].haystack_sessions[0]"), "{err}");
}

#[test]
fn the_temporal_parser_never_panics_at_the_ends_of_the_calendar() {
    let queries = [
        "yesterday",
        "the day before yesterday",
        "today",
        "last week",
        "this week",
        "past week",
        "last weekend",
        "last month",
        "this month",
        "last friday",
        "a few days ago",
        "a couple of days ago",
        "3 days ago",
        "400 months ago",
        "2 weeks ago",
        "on May 4th",
        "4th of May",
        "December 31",
        "our first conversation",
        "2023-05-04",
        "昨天",
        "前天",
        "大前天",
        "今天",
        "前几天",
        "三天前",
        "四百天前",
        "上周",
        "上周三",
        "这周",
        "上个月",
        "5月4日",
        "十二月三十一日",
        "2023年5月4日",
        "第一次聊天",
    ];
    let near_min = NaiveDate::MIN + chrono::Duration::days(3);
    let near_max = NaiveDate::MAX - chrono::Duration::days(3);
    for today in [NaiveDate::MIN, near_min, near_max, NaiveDate::MAX] {
        for query in queries {
            if let Some(expression) = temporal::parse(query, today) {
                let _ = expression.strip(query);
                if let temporal::TimeReference::Days { from, to } = expression.reference {
                    assert!(from <= to, "{query} on {today}: {from} > {to}");
                }
            }
        }
    }
    // Far in the past but well inside the calendar: still resolved normally.
    let past = NaiveDate::from_ymd_opt(-262_000, 3, 10).unwrap();
    assert_eq!(
        temporal::parse("yesterday", past).map(|e| e.reference),
        Some(temporal::TimeReference::Days { from: past.pred_opt().unwrap(), to: past.pred_opt().unwrap() })
    );
}

#[test]
fn spans_stay_on_the_query_when_lowercasing_shifts_characters() {
    // İ grows by a byte when lowercased and ẞ shrinks by one: the same total length, but
    // every span between them was shifted by a byte (here into the full-width comma).
    let query = "İ yesterday，ẞ";
    let today = NaiveDate::from_ymd_opt(2023, 5, 7).unwrap();
    let expression = temporal::parse(query, today).expect("yesterday is found");
    let (start, end) = expression.span;
    assert_eq!(query.get(start..end), Some("yesterday"));
    assert_eq!(expression.strip(query), "İ  ，ẞ");
}
