//! The reference MemoryBank JSON (SiliconFriend's memory file): users → `history` → date →
//! turns of `query` / `response`, with optional `summary` and `personality` per date,
//! `overall_history`, `overall_personality`, `meta_information`, and the forgetting
//! fields `memory_strength` / `last_recall_date` the reference code writes into turns.
//!
//! User keys are trimmed (the public file has `" Jason "`); the original key is kept in
//! each record's metadata as `source_user_key`. Turn `i` of a date gets `occurred_at` =
//! that date at 12:00 UTC plus `i` minutes, so turns keep their order within the day.
//! Keys are `memorybank:<date>:<i>` (turns), `memorybank:summary:<date>`,
//! `memorybank:personality:<date>`, `memorybank:overall_history`,
//! `memorybank:overall_personality`, `memorybank:meta_information`.
//!
//! Dates may be anywhere in chrono's calendar; a record whose time would fall past its end
//! (e.g. the 721st turn of its last day) is an error naming the record, never a panic.

use chrono::{DateTime, Duration, NaiveDate};
use membank_core::{InvalidInput, Kind, Source, Timestamp};
use serde_json::Value;

use super::{ImportRecord, ImportSet, ImportUser, bad, member, parse_json, type_name, user_id};

/// The metadata key holding the user's key exactly as the file spelled it.
pub const SOURCE_USER_KEY: &str = "source_user_key";

/// When turn `index` of `date` is taken to have happened. Saturates at the end of the
/// calendar; the parser itself uses [`checked_turn_time`] and refuses such a turn.
pub fn turn_time(date: NaiveDate, index: usize) -> Timestamp {
    checked_turn_time(date, index).unwrap_or(DateTime::<chrono::Utc>::MAX_UTC)
}

/// When turn `index` of `date` is taken to have happened, or `None` past the end of the calendar.
pub fn checked_turn_time(date: NaiveDate, index: usize) -> Option<Timestamp> {
    let minutes = Duration::try_minutes(i64::try_from(index).ok()?)?;
    noon(date).checked_add_signed(minutes)
}

/// `noon(date)` plus `offset`, or an error at `path` past the end of the calendar.
fn after_noon(date: NaiveDate, offset: Duration, path: &str) -> Result<Timestamp, InvalidInput> {
    noon(date)
        .checked_add_signed(offset)
        .ok_or_else(|| bad(path, format!("{date} is too close to the end of the calendar")))
}

fn noon(date: NaiveDate) -> Timestamp {
    date.and_hms_opt(12, 0, 0).unwrap_or_default().and_utc()
}

/// Parses a MemoryBank file.
pub fn parse(bytes: &[u8]) -> Result<ImportSet, InvalidInput> {
    let root = parse_json(bytes)?;
    let users =
        root.as_object().ok_or_else(|| bad("$", format!("expected an object of users, found {}", type_name(&root))))?;
    let mut out = Vec::with_capacity(users.len());
    for (raw_key, value) in users {
        let path = format!("${}", member(raw_key));
        let user = user_id(raw_key, &path)?;
        let records = parse_user(raw_key, value, &path)?;
        out.push(ImportUser { user, path, records });
    }
    Ok(ImportSet { format: "memorybank", users: out })
}

fn date_key(key: &str, path: &str) -> Result<NaiveDate, InvalidInput> {
    NaiveDate::parse_from_str(key.trim(), "%Y-%m-%d")
        .map_err(|_| bad(path, format!("{key:?} is not a date such as 2023-04-27")))
        .and_then(|day| membank_core::time::check_day_year("date", day).map_err(|e| bad(path, e.reason)))
}

fn object<'a>(value: &'a Value, path: &str) -> Result<&'a serde_json::Map<String, Value>, InvalidInput> {
    value.as_object().ok_or_else(|| bad(path, format!("expected an object, found {}", type_name(value))))
}

/// Optional forgetting fields of a turn or summary entry.
fn forgetting(entry: &Value, path: &str, record: &mut ImportRecord) -> Result<(), InvalidInput> {
    match entry.get("memory_strength") {
        None | Some(Value::Null) => {}
        Some(Value::Number(n)) => {
            record.strength =
                Some(n.as_f64().ok_or_else(|| bad(&format!("{path}.memory_strength"), "is not a finite number"))?)
        }
        Some(other) => {
            return Err(bad(
                &format!("{path}.memory_strength"),
                format!("expected a number, found {}", type_name(other)),
            ));
        }
    }
    match entry.get("last_recall_date") {
        None | Some(Value::Null) => {}
        Some(Value::String(s)) => {
            // The reference writes a date, sometimes followed by a time: its first ten
            // characters (not bytes: a non-ASCII character may straddle byte 10).
            let date = s.char_indices().nth(10).map_or(s.as_str(), |(end, _)| &s[..end]);
            let day = date_key(date, &format!("{path}.last_recall_date"))?;
            record.last_recalled_at = Some(noon(day));
        }
        Some(other) => {
            return Err(bad(
                &format!("{path}.last_recall_date"),
                format!("expected a date string, found {}", type_name(other)),
            ));
        }
    }
    Ok(())
}

/// A summary or personality entry: a string, or an object with `content`.
fn entry_text<'a>(entry: &'a Value, path: &str) -> Result<Option<&'a str>, InvalidInput> {
    let text = match entry {
        Value::String(s) => s.as_str(),
        Value::Object(map) => match map.get("content") {
            Some(Value::String(s)) => s.as_str(),
            Some(other) => {
                return Err(bad(&format!("{path}.content"), format!("expected a string, found {}", type_name(other))));
            }
            None => return Err(bad(path, "missing field \"content\"")),
        },
        Value::Null => return Ok(None),
        other => {
            return Err(bad(
                path,
                format!("expected a string or an object with \"content\", found {}", type_name(other)),
            ));
        }
    };
    Ok((!text.trim().is_empty()).then_some(text))
}

fn parse_user(raw_key: &str, value: &Value, path: &str) -> Result<Vec<ImportRecord>, InvalidInput> {
    let user = object(value, path)?;
    let mut records = Vec::new();
    let mut last_day: Option<NaiveDate> = None;
    let mut first_day: Option<NaiveDate> = None;
    let mut turn_keys_by_day: std::collections::BTreeMap<NaiveDate, Vec<String>> = Default::default();

    let history_path = format!("{path}.history");
    let history = match user.get("history") {
        Some(h) => object(h, &history_path)?,
        None => return Err(bad(path, "missing field \"history\"")),
    };
    for (date_text, turns) in history {
        let day_path = format!("{history_path}{}", member(date_text));
        let day = date_key(date_text, &day_path)?;
        let turns = turns
            .as_array()
            .ok_or_else(|| bad(&day_path, format!("expected an array of turns, found {}", type_name(turns))))?;
        first_day = Some(first_day.map_or(day, |d| d.min(day)));
        last_day = Some(last_day.map_or(day, |d| d.max(day)));
        for (index, turn) in turns.iter().enumerate() {
            let turn_path = format!("{day_path}[{index}]");
            object(turn, &turn_path)?;
            let query = match turn.get("query") {
                Some(Value::String(s)) => s.clone(),
                Some(other) => {
                    return Err(bad(
                        &format!("{turn_path}.query"),
                        format!("expected a string, found {}", type_name(other)),
                    ));
                }
                None => return Err(bad(&turn_path, "missing field \"query\"")),
            };
            let response = match turn.get("response") {
                None | Some(Value::Null) => None,
                Some(Value::String(s)) if s.trim().is_empty() => None,
                Some(Value::String(s)) => Some(s.clone()),
                Some(other) => {
                    return Err(bad(
                        &format!("{turn_path}.response"),
                        format!("expected a string, found {}", type_name(other)),
                    ));
                }
            };
            let key = format!("memorybank:{day}:{index}");
            let occurred_at = checked_turn_time(day, index).ok_or_else(|| {
                bad(&turn_path, format!("turn {index} of {day} would fall past the end of the calendar"))
            })?;
            let mut record = ImportRecord::turn(key.clone(), turn_path.clone(), query, response, occurred_at);
            forgetting(turn, &turn_path, &mut record)?;
            record.metadata.insert("date".into(), day.to_string());
            record.metadata.insert("turn".into(), index.to_string());
            record.metadata.insert(super::memorybank::SOURCE_USER_KEY.into(), raw_key.to_string());
            turn_keys_by_day.entry(day).or_default().push(key);
            records.push(record);
        }
    }

    let mut summary_keys = Vec::new();
    for (field, kind, label) in
        [("summary", Kind::DailySummary, "summary"), ("personality", Kind::DailyPortrait, "personality")]
    {
        let Some(value) = user.get(field) else { continue };
        let field_path = format!("{path}.{field}");
        if value.is_null() {
            continue;
        }
        for (date_text, entry) in object(value, &field_path)? {
            let entry_path = format!("{field_path}{}", member(date_text));
            let day = date_key(date_text, &entry_path)?;
            let Some(text) = entry_text(entry, &entry_path)? else { continue };
            let key = format!("memorybank:{label}:{day}");
            let occurred_at = after_noon(day, Duration::hours(11), &entry_path)?;
            let mut record = ImportRecord::other(
                key.clone(),
                entry_path.clone(),
                kind,
                Source::Derived,
                text.to_string(),
                occurred_at,
            );
            if entry.is_object() {
                forgetting(entry, &entry_path, &mut record)?;
            }
            record.derived_from = turn_keys_by_day.get(&day).cloned().unwrap_or_default();
            record.metadata.insert("date".into(), day.to_string());
            record.metadata.insert(SOURCE_USER_KEY.into(), raw_key.to_string());
            if kind == Kind::DailySummary {
                summary_keys.push(key);
            }
            records.push(record);
        }
    }

    for (field, kind, derived) in
        [("overall_history", Kind::GlobalSummary, true), ("overall_personality", Kind::GlobalPortrait, false)]
    {
        let field_path = format!("{path}.{field}");
        let Some(value) = user.get(field) else { continue };
        let Some(text) = entry_text(value, &field_path)? else { continue };
        let Some(last_day) = last_day else {
            return Err(bad(&field_path, "a global summary needs at least one history date"));
        };
        let end = after_noon(last_day, Duration::minutes(11 * 60 + 30), &field_path)?;
        let mut record = ImportRecord::other(
            format!("memorybank:{field}"),
            field_path.clone(),
            kind,
            Source::Derived,
            text.to_string(),
            end,
        );
        if derived {
            record.derived_from = summary_keys.clone();
        }
        record.metadata.insert(SOURCE_USER_KEY.into(), raw_key.to_string());
        records.push(record);
    }

    if let (Some(meta), Some(first)) = (user.get("meta_information"), first_day) {
        let meta_path = format!("{path}.meta_information");
        if !meta.is_null() {
            let mut lines = Vec::new();
            for (key, value) in object(meta, &meta_path)? {
                match value {
                    Value::String(s) if !s.trim().is_empty() => lines.push(format!("{key}: {s}")),
                    Value::String(_) | Value::Null => {}
                    other => {
                        return Err(bad(
                            &format!("{meta_path}{}", member(key)),
                            format!("expected a string, found {}", type_name(other)),
                        ));
                    }
                }
            }
            if !lines.is_empty() {
                // A profile the application supplied: kept, but as the agent's, not the person's words.
                let mut record = ImportRecord::other(
                    "memorybank:meta_information".into(),
                    meta_path,
                    Kind::GlobalPortrait,
                    Source::Agent,
                    lines.join("\n"),
                    noon(first),
                );
                record.metadata.insert(SOURCE_USER_KEY.into(), raw_key.to_string());
                records.push(record);
            }
        }
    }
    Ok(records)
}
