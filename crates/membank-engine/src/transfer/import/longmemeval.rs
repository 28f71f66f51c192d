//! LongMemEval records (`longmemeval_oracle.json`, `longmemeval_s_cleaned.json`): a list
//! of questions, each with its own haystack of timestamped chat sessions.
//!
//! Each question becomes one user (its `question_id`), because each question has its own
//! history. Following the benchmark's official retrieval protocol, only the person's
//! messages are memories: each non-empty `user` message is a turn (kind `turn`, no reply)
//! with key `<session_id>_<turn index + 1>` (the index counts every message of the
//! session, as the official code does), and metadata `session_id`, `turn_id`,
//! `has_answer` and `session_date`. Message `i` happened at its session's time plus `i`
//! seconds. A message longer than membank's text limit keeps its first 32 KiB and is
//! marked `truncated` (four messages of the S file are pasted documents that long). Questions and answers are not memories; the evaluation runner reads them.

use chrono::{Duration, NaiveDateTime};
use membank_core::{InvalidInput, Timestamp};
use serde_json::Value;

use super::{ImportRecord, ImportSet, ImportUser, bad, parse_json, required_str, type_name, user_id};

/// Parses a LongMemEval file.
pub fn parse(bytes: &[u8]) -> Result<ImportSet, InvalidInput> {
    let root = parse_json(bytes)?;
    let questions =
        root.as_array().ok_or_else(|| bad("$", format!("expected a list of questions, found {}", type_name(&root))))?;
    let users =
        questions.iter().enumerate().map(|(i, q)| parse_question(q, &format!("$[{i}]"))).collect::<Result<_, _>>()?;
    Ok(ImportSet { format: "longmemeval", users })
}

/// Parses LongMemEval's time format, e.g. `2023/05/30 (Tue) 23:40` (taken as UTC).
pub fn parse_time(text: &str) -> Option<Timestamp> {
    // Drop the weekday in parentheses: it is redundant and chrono would check it.
    let without_weekday: String = match (text.find('('), text.find(')')) {
        (Some(open), Some(close)) if open < close => format!("{}{}", &text[..open], &text[close + 1..]),
        _ => text.to_string(),
    };
    let compact = without_weekday.split_whitespace().collect::<Vec<_>>().join(" ");
    ["%Y/%m/%d %H:%M", "%Y/%m/%d %H:%M:%S", "%Y-%m-%d %H:%M"]
        .iter()
        .find_map(|f| NaiveDateTime::parse_from_str(&compact, f).ok())
        .map(|t| t.and_utc())
}

/// Parses one question's haystack into a user with its turns.
pub fn parse_question(question: &Value, path: &str) -> Result<ImportUser, InvalidInput> {
    if !question.is_object() {
        return Err(bad(path, format!("expected a question object, found {}", type_name(question))));
    }
    let question_id = required_str(question, "question_id", path)?;
    let user = user_id(question_id, &format!("{path}.question_id"))?;
    let array = |field: &str| -> Result<&Vec<Value>, InvalidInput> {
        match question.get(field) {
            Some(Value::Array(items)) => Ok(items),
            Some(other) => Err(bad(&format!("{path}.{field}"), format!("expected a list, found {}", type_name(other)))),
            None => Err(bad(path, format!("missing field {field:?}"))),
        }
    };
    let ids = array("haystack_session_ids")?;
    let dates = array("haystack_dates")?;
    let sessions = array("haystack_sessions")?;
    if ids.len() != sessions.len() || dates.len() != sessions.len() {
        return Err(bad(
            path,
            format!(
                "{} session ids, {} dates and {} sessions: they must match",
                ids.len(),
                dates.len(),
                sessions.len()
            ),
        ));
    }
    let mut records = Vec::new();
    for (s, ((id, date), session)) in ids.iter().zip(dates).zip(sessions).enumerate() {
        let session_path = format!("{path}.haystack_sessions[{s}]");
        let session_id = id.as_str().ok_or_else(|| {
            bad(&format!("{path}.haystack_session_ids[{s}]"), format!("expected a string, found {}", type_name(id)))
        })?;
        let date_path = format!("{path}.haystack_dates[{s}]");
        let date_text =
            date.as_str().ok_or_else(|| bad(&date_path, format!("expected a string, found {}", type_name(date))))?;
        let time = parse_time(date_text).ok_or_else(|| {
            bad(&date_path, format!("{date_text:?} is not a time such as \"2023/05/30 (Tue) 23:40\""))
        })?;
        let turns = session
            .as_array()
            .ok_or_else(|| bad(&session_path, format!("expected a list of messages, found {}", type_name(session))))?;
        for (index, turn) in turns.iter().enumerate() {
            let turn_path = format!("{session_path}[{index}]");
            if !turn.is_object() {
                return Err(bad(&turn_path, format!("expected a message object, found {}", type_name(turn))));
            }
            let role = required_str(turn, "role", &turn_path)?;
            let content = required_str(turn, "content", &turn_path)?;
            let has_answer = match turn.get("has_answer") {
                None | Some(Value::Null) => false,
                Some(Value::Bool(b)) => *b,
                Some(other) => {
                    return Err(bad(
                        &format!("{turn_path}.has_answer"),
                        format!("expected a boolean, found {}", type_name(other)),
                    ));
                }
            };
            if role != "user" || content.trim().is_empty() {
                continue;
            }
            let turn_id = format!("{session_id}_{}", index + 1);
            // A handful of pasted documents exceed membank's text limit; the benchmark is
            // about finding the message, so its first 32 KiB stand for it (marked as such).
            let (content, truncated) = truncate(content, membank_core::limits::MAX_TEXT_BYTES);
            let occurred_at = i64::try_from(index)
                .ok()
                .and_then(Duration::try_seconds)
                .and_then(|offset| time.checked_add_signed(offset));
            let occurred_at =
                occurred_at.ok_or_else(|| bad(&turn_path, "its time would fall past the end of the calendar"))?;
            let mut record = ImportRecord::turn(turn_id.clone(), turn_path, content.to_string(), None, occurred_at);
            if truncated {
                record.metadata.insert("truncated".into(), "true".into());
            }
            record.metadata.insert("session_id".into(), session_id.to_string());
            record.metadata.insert("turn_id".into(), turn_id);
            record.metadata.insert("has_answer".into(), has_answer.to_string());
            record.metadata.insert("session_date".into(), date_text.to_string());
            records.push(record);
        }
    }
    Ok(ImportUser { user, path: path.to_string(), records })
}

/// The longest prefix of `text` within `limit` bytes that ends on a character boundary.
fn truncate(text: &str, limit: usize) -> (&str, bool) {
    if text.len() <= limit {
        return (text, false);
    }
    let mut end = limit;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    (&text[..end], true)
}
