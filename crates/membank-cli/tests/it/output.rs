//! What the text and JSON output say (issue 11, "Reading the output"): a recall shows one
//! moment and explains its scores and days, a dry run says what it would do, the event
//! log reads in the order things happened.
//!
//! Memories are backdated with `--clock-from event` and every `--now` lies before 2024, so
//! nothing depends on the machine's clock beyond it being later than that.

use serde_json::Value;

use crate::Bank;

/// Stores a turn said at `at`, its forgetting clock starting then; returns its id.
fn said(bank: &Bank, user: &str, text: &str, at: &str) -> String {
    bank.ok(&["remember", "--user", user, "--user-text", text, "--at", at, "--clock-from", "event"]).trim().to_string()
}

fn line_with<'a>(text: &'a str, needle: &str) -> &'a str {
    text.lines().find(|l| l.contains(needle)).unwrap_or_else(|| panic!("no line with {needle:?} in:\n{text}"))
}

#[test]
fn a_recall_shows_one_moment_its_score_terms_and_the_day_it_used() {
    let bank = Bank::new();
    let lake = said(&bank, "ana", "we went to the lake with the kids", "2021-05-04T10:00:00Z");
    said(&bank, "ana", "a quiet day at home reading", "2021-08-01T10:00:00Z");

    // 2022-05-04 is the latest May 4th, but nothing was said then: 2021's is used, and said.
    let text = bank.ok(&[
        "recall",
        "--user",
        "ana",
        "--query",
        "what did we do on May 4th?",
        "--now",
        "2023-03-01T10:00:00Z",
        "--k",
        "2",
    ]);
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(
        lines[0],
        r#"dates: 2021-05-04, from "May 4th" in the query; no year given: the most recent "May 4th" with memories; memories of these days rank first, others follow"#,
        "{text}"
    );
    let first = lines[1];
    assert!(first.starts_with(&format!(" 1. [2021-05-04] turn {lake}  score ")), "{text}");
    // Strength and retention of one moment (after the recall), the value before it named.
    assert!(first.ends_with("R 1.00 (0.00 before this recall)  S 2"), "{text}");
    let parts = lines[2].trim();
    assert!(parts.starts_with("= dense 0.0164 (#1, cosine ") && parts.contains(" + date 0."), "{text}");
    assert_eq!(lines[3].trim(), "User: we went to the lake with the kids");
    assert!(
        text.contains(
            "score: rank fusion: each ranking a memory is in adds 1/(60 + its place), so first place adds 0.0164;"
        ),
        "{text}"
    );

    // JSON: the same moment; a later strengthening recall names the retention before it.
    let json =
        bank.json(&["recall", "--user", "ana", "--query", "lake kids", "--now", "2023-03-20T10:00:00Z", "--k", "1"]);
    let hit = &json["results"][0];
    assert_eq!(hit["id"], lake.as_str());
    assert_eq!(
        (hit["strength"].as_f64(), hit["last_recalled_at"].as_str(), hit["retention"].as_f64()),
        (Some(3.0), Some("2023-03-20T10:00:00.000Z"), Some(1.0))
    );
    let before = hit["retention_before"].as_f64().unwrap();
    // 19 days at S = 2 on the default one-day unit, S scaled by the importance's odds.
    let importance = hit["base_importance"].as_f64().unwrap();
    let policy = membank_core::ForgettingPolicy::default();
    let odds = importance.min(0.99) / (1.0 - importance.min(0.99));
    let scale = (1.0 + policy.importance_weight * odds).powf(policy.importance_exponent);
    let expected = (-19.0f64 / (2.0 * scale)).exp();
    assert!((before - expected).abs() < 1e-9, "19 days at S = 2·(1 + w·odds({importance}))^k: {before} vs {expected}");
    assert_eq!(hit["score_parts"]["dense"], hit["score_parts"]["lexical"], "first in both rankings: {hit}");
    assert!(json["date_filter"].is_null() && json["time_range"].is_null(), "no date in the query: {json}");

    // An inspection recall strengthens nothing: one state, before and after alike.
    let json = bank.json(&[
        "recall",
        "--user",
        "ana",
        "--query",
        "lake",
        "--now",
        "2023-04-20T10:00:00Z",
        "--k",
        "1",
        "--no-strengthen",
        "--from",
        "2021-01-01",
    ]);
    let hit = &json["results"][0];
    assert_eq!(hit["retention"], hit["retention_before"]);
    assert_eq!(hit["strength"], 3.0);
    assert_eq!(
        json["date_filter"],
        serde_json::json!({ "from": "2021-01-01", "to": null, "mode": "filter", "exact": true })
    );
    let text = bank.ok(&[
        "recall",
        "--user",
        "ana",
        "--query",
        "lake",
        "--now",
        "2023-04-20T10:00:00Z",
        "--k",
        "1",
        "--no-strengthen",
        "--from",
        "2021-01-01",
    ]);
    assert!(text.starts_with("dates: from 2021-01-01 (only these days)\n"), "{text}");
    assert!(!text.contains("before this recall"), "{text}");
}

#[test]
fn an_exact_word_is_a_clear_lexical_match_in_a_store_of_one() {
    let bank = Bank::new();
    said(&bank, "solo", "my violin lesson went well", "2022-05-04T10:00:00Z");
    let json = bank.json(&["recall", "--user", "solo", "--query", "violin", "--no-strengthen"]);
    let lexical = json["results"][0]["lexical_score"].as_f64().unwrap();
    assert!(lexical > 0.1, "{json}");
    let text = bank.ok(&["recall", "--user", "solo", "--query", "violin", "--no-strengthen"]);
    assert!(line_with(&text, "= dense").contains("+ lexical 0.0164 (#1, BM25 0."), "{text}");
}

#[test]
fn a_dry_run_says_what_it_would_do() {
    let bank = Bank::new();
    let old = said(&bank, "ana", "an old exchange about the weather", "2021-05-04T10:00:00Z");
    said(&bank, "ana", "another old exchange", "2021-05-05T10:00:00Z");
    let now = "2023-01-01T00:00:00Z";
    let text = bank.ok(&["sweep", "--user", "ana", "--dry-run", "--now", now]);
    assert!(
        text.starts_with(
            "dry run, nothing changed: examined 2, would archive 2, would keep 0, the per-pass cap would defer 0\n"
        ),
        "{text}"
    );
    assert!(text.contains(&format!("  would archive {old}  t ")), "{text}");
    assert!(!text.contains("archived"), "{text}");
    let json = bank.json(&["sweep", "--user", "ana", "--dry-run", "--now", now]);
    assert_eq!((json["dry_run"].as_bool(), json["archived"].as_array().map(Vec::len)), (Some(true), Some(2)));
    assert_eq!(bank.json(&["list", "--user", "ana"])["counts"]["active"], 2, "a dry run changes nothing");

    let text = bank.ok(&["sweep", "--user", "ana", "--now", now]);
    assert!(text.starts_with("examined 2, archived 2, kept 0, deferred by the per-pass cap 0\n"), "{text}");
    assert_eq!(bank.json(&["sweep", "--user", "ana", "--now", now])["dry_run"], false);
}

#[test]
fn events_read_in_the_order_things_happened_numbered_per_listing() {
    let bank = Bank::new();
    let lake = said(&bank, "ana", "we went to the lake", "2021-05-04T10:00:00Z");
    // Another user's events take log positions in between.
    said(&bank, "ben", "ben's own day", "2021-05-04T11:00:00Z");
    said(&bank, "ben", "ben's second day", "2021-05-05T11:00:00Z");
    // Recalls dated in the past: logged after the `created` event, happened before it.
    bank.ok(&["recall", "--user", "ana", "--query", "lake", "--now", "2022-06-01T10:00:00Z"]);
    bank.ok(&["recall", "--user", "ana", "--query", "lake", "--now", "2022-02-01T10:00:00Z"]);

    let log: Vec<Value> = bank.json(&["events", "--user", "ana"])["events"].as_array().unwrap().clone();
    let seqs: Vec<i64> = log.iter().map(|e| e["seq"].as_i64().unwrap()).collect();
    assert!(seqs.windows(2).all(|w| w[0] < w[1]), "JSON keeps log order: {seqs:?}");
    assert!(seqs.windows(2).any(|w| w[1] > w[0] + 1), "other users' events skip positions: {seqs:?}");
    assert_eq!(log.len(), 5, "created, then recalled and strengthened twice");

    let text = bank.ok(&["events", "--user", "ana"]);
    let rows: Vec<&str> = text.lines().skip(1).take(5).collect();
    let column = |row: &str, i: usize| row.split_whitespace().nth(i).unwrap().to_string();
    assert_eq!(rows.iter().map(|r| column(r, 0)).collect::<Vec<_>>(), ["1", "2", "3", "4", "5"], "{text}");
    assert_eq!(
        rows.iter().map(|r| format!("{} {}", &column(r, 1)[..10], column(r, 2))).collect::<Vec<_>>()[..4],
        ["2022-02-01 recalled", "2022-02-01 strengthened", "2022-06-01 recalled", "2022-06-01 strengthened"],
        "{text}"
    );
    assert_eq!(column(rows[4], 2), "created");
    assert_eq!(column(rows[4], 3), lake);
    // The log position is each row's fifth column and the cursor for the next page.
    let created_seq = seqs[0];
    assert_eq!(column(rows[4], 4), created_seq.to_string());
    let last = seqs[seqs.len() - 1];
    assert!(text.ends_with(&format!("later events: --after {last}\n")), "{text}");

    // Paging by the cursor still sees every event once.
    let page = bank.ok(&["events", "--user", "ana", "--limit", "2"]);
    let cursor = page.lines().last().unwrap().rsplit(' ').next().unwrap().to_string();
    let rest = bank.json(&["events", "--user", "ana", "--after", &cursor]);
    assert_eq!(rest["events"].as_array().unwrap().len(), 3, "{page}");
    assert!(bank.ok(&["events", "--user", "ana", "--after", &last.to_string()]).starts_with("no events"));
}
