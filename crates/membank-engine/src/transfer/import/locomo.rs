//! LoCoMo conversations (`locomo10.json`): a list of samples, each a two-person
//! conversation in numbered sessions with their date and time.
//!
//! Each sample becomes one user (its `sample_id`); each dialogue turn becomes one memory
//! (kind `note`, source `user`) holding what was said, plus ` [shared an image: <blip_caption>]`
//! when an image was shared (the caption is what a captioner would tell a memory service
//! about the picture; the data's image search `query` is not used: it was written by the
//! data's generator with knowledge of the dialogue). The speaker is metadata, not text:
//! the LoCoMo paper's `<speaker> said, "<text>"` wording made every short line of a person
//! match any question naming them (BM25 favours short documents) and diluted the embedding;
//! recall boosts a speaker named in the query instead (`recall`, speaker boost).
//! The turn's `dia_id`, session number and speaker are kept as metadata so evidence can be
//! matched. Turn `i` of a session happened at the session's time plus `i` seconds.
//! Keys are `locomo:<dia_id>`. The QA annotations are not memories; the evaluation runner
//! reads them itself.

use chrono::{Duration, NaiveDateTime};
use membank_core::{InvalidInput, Kind, Source, Timestamp};
use serde_json::Value;

use super::{ImportRecord, ImportSet, ImportUser, bad, member, parse_json, required_str, type_name, user_id};

/// Parses a LoCoMo file.
pub fn parse(bytes: &[u8]) -> Result<ImportSet, InvalidInput> {
    let root = parse_json(bytes)?;
    parse_value(&root)
}

/// Parses an already-decoded LoCoMo document.
pub fn parse_value(root: &Value) -> Result<ImportSet, InvalidInput> {
    let samples =
        root.as_array().ok_or_else(|| bad("$", format!("expected a list of samples, found {}", type_name(root))))?;
    let users = samples
        .iter()
        .enumerate()
        .map(|(i, sample)| parse_sample(sample, &format!("$[{i}]")))
        .collect::<Result<_, _>>()?;
    Ok(ImportSet { format: "locomo", users })
}

/// Parses LoCoMo's session time, e.g. `1:56 pm on 8 May, 2023` (taken as UTC).
pub fn session_time(text: &str) -> Option<Timestamp> {
    let cleaned = text.trim().replace("  ", " ");
    ["%I:%M %p on %d %B, %Y", "%I:%M %p on %d %b, %Y", "%H:%M on %d %B, %Y"]
        .iter()
        .find_map(|format| NaiveDateTime::parse_from_str(&cleaned, format).ok())
        .map(|t| t.and_utc())
}

/// One session of a conversation: `(number, turns, time, path)`.
type Session<'a> = (u32, &'a Vec<Value>, Timestamp, String);

/// The sessions of a sample's conversation, in session-number order.
fn sessions<'a>(
    conversation: &'a serde_json::Map<String, Value>,
    path: &str,
) -> Result<Vec<Session<'a>>, InvalidInput> {
    let mut out = Vec::new();
    for (key, value) in conversation {
        let Some(number) = key.strip_prefix("session_").and_then(|n| n.parse::<u32>().ok()) else { continue };
        let session_path = format!("{path}{}", member(key));
        let turns = value
            .as_array()
            .ok_or_else(|| bad(&session_path, format!("expected a list of turns, found {}", type_name(value))))?;
        let time_key = format!("session_{number}_date_time");
        let time_text = match conversation.get(&time_key) {
            Some(Value::String(s)) => s,
            Some(other) => {
                return Err(bad(
                    &format!("{path}{}", member(&time_key)),
                    format!("expected a string, found {}", type_name(other)),
                ));
            }
            None => return Err(bad(path, format!("session {number} has no {time_key:?}"))),
        };
        let time = session_time(time_text).ok_or_else(|| {
            bad(
                &format!("{path}{}", member(&time_key)),
                format!("{time_text:?} is not a time such as \"1:56 pm on 8 May, 2023\""),
            )
        })?;
        out.push((number, turns, time, session_path));
    }
    out.sort_by_key(|s| s.0);
    Ok(out)
}

/// Parses one sample (one conversation) into a user with its turns.
pub fn parse_sample(sample: &Value, path: &str) -> Result<ImportUser, InvalidInput> {
    if !sample.is_object() {
        return Err(bad(path, format!("expected a sample object, found {}", type_name(sample))));
    }
    let sample_id = required_str(sample, "sample_id", path)?;
    let user = user_id(sample_id, &format!("{path}.sample_id"))?;
    let conversation_path = format!("{path}.conversation");
    let conversation = match sample.get("conversation") {
        Some(Value::Object(map)) => map,
        Some(other) => return Err(bad(&conversation_path, format!("expected an object, found {}", type_name(other)))),
        None => return Err(bad(path, "missing field \"conversation\"")),
    };
    let mut records = Vec::new();
    for (number, turns, time, session_path) in sessions(conversation, &conversation_path)? {
        for (index, turn) in turns.iter().enumerate() {
            let turn_path = format!("{session_path}[{index}]");
            if !turn.is_object() {
                return Err(bad(&turn_path, format!("expected a turn object, found {}", type_name(turn))));
            }
            let speaker = required_str(turn, "speaker", &turn_path)?;
            let dia_id = required_str(turn, "dia_id", &turn_path)?;
            let text = required_str(turn, "text", &turn_path)?;
            let mut content = text.trim().to_string();
            match turn.get("blip_caption") {
                Some(Value::String(caption)) if !caption.trim().is_empty() => {
                    if !content.is_empty() {
                        content.push(' ');
                    }
                    content.push_str(&format!("[shared an image: {}]", caption.trim()));
                }
                None | Some(Value::Null) | Some(Value::String(_)) => {}
                Some(other) => {
                    return Err(bad(
                        &format!("{turn_path}.blip_caption"),
                        format!("expected a string, found {}", type_name(other)),
                    ));
                }
            }
            let occurred_at = i64::try_from(index)
                .ok()
                .and_then(Duration::try_seconds)
                .and_then(|offset| time.checked_add_signed(offset));
            let occurred_at =
                occurred_at.ok_or_else(|| bad(&turn_path, "its time would fall past the end of the calendar"))?;
            let mut record = ImportRecord::other(
                format!("locomo:{}", dia_id.trim()),
                turn_path.clone(),
                Kind::Note,
                Source::User,
                content,
                occurred_at,
            );
            record.metadata.insert("dia_id".into(), dia_id.trim().to_string());
            record.metadata.insert("session".into(), number.to_string());
            record.metadata.insert("speaker".into(), speaker.trim().to_string());
            records.push(record);
        }
    }
    Ok(ImportUser { user, path: path.to_string(), records })
}
