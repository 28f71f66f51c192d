//! Critical-fact labels for `simulate --critical`: which replayed turns hold a durable fact
//! that should survive forgetting. JSON lines, one turn each:
//!
//! - MemoryBank: `{"user": <the bank's user key>, "date": "YYYY-MM-DD", "turn": <0-based
//!   index in that date's list>, "critical": 0|1}`;
//! - LoCoMo: `{"sample": "conv-26", "dia_id": "D1:3", "critical": 0|1}`;
//! - LongMemEval: `{"question_id": "9aaed6a3", "session_id": "answer_…_1", "turn": <0-based
//!   index in the session's list of messages>, "critical": 0|1}`.
//!
//! Blank lines are skipped. A line that is not such an object (bad JSON, a missing or
//! unknown field, `critical` other than 0 or 1, a line longer than [`MAX_LINE`]) is an
//! error naming its line number; so is a file with no label at all. Labels are keyed by the
//! replayed user's label and the turn's import key, the keys the simulation already uses.

use std::collections::HashMap;

use serde::Deserialize;

use crate::EvalError;

/// The longest line accepted (a label is a few dozen bytes).
pub const MAX_LINE: usize = 4096;

/// Which benchmark's line shape to read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LabelShape {
    /// `{"user","date","turn","critical"}`.
    MemoryBank,
    /// `{"sample","dia_id","critical"}`.
    Locomo,
    /// `{"question_id","session_id","turn","critical"}`.
    LongMemEval,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct MemoryBankLine {
    user: String,
    date: String,
    turn: u32,
    critical: u8,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct LocomoLine {
    sample: String,
    dia_id: String,
    critical: u8,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct LongMemEvalLine {
    question_id: String,
    session_id: String,
    turn: u32,
    critical: u8,
}

/// Labels by user label, then by import key: `true` when critical.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CriticalLabels {
    /// user label → import key → critical.
    pub by_user: HashMap<String, HashMap<String, bool>>,
}

impl CriticalLabels {
    /// The labels of one user (empty when the file names none of its turns).
    pub fn user(&self, label: &str) -> Option<&HashMap<String, bool>> {
        self.by_user.get(label)
    }

    /// How many lines were read.
    pub fn len(&self) -> usize {
        self.by_user.values().map(HashMap::len).sum()
    }

    /// Whether no label was read.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// Parses a label file's text; `path` names it in errors.
pub fn parse(text: &str, path: &str, shape: LabelShape) -> Result<CriticalLabels, EvalError> {
    let mut labels = CriticalLabels::default();
    for (index, line) in text.lines().enumerate() {
        let at = format!("{path}:{}", index + 1);
        if line.len() > MAX_LINE {
            return Err(EvalError::data(at, format!("line is {} bytes, longer than {MAX_LINE}", line.len())));
        }
        let line = line.trim();
        if line.is_empty() {
            continue;
        }
        let bad = |e: serde_json::Error| {
            let expected = match shape {
                LabelShape::MemoryBank => r#"{"user","date","turn","critical"}"#,
                LabelShape::Locomo => r#"{"sample","dia_id","critical"}"#,
                LabelShape::LongMemEval => r#"{"question_id","session_id","turn","critical"}"#,
            };
            EvalError::data(&at, format!("not a label line {expected}: {e}"))
        };
        let (user, key, critical) = match shape {
            LabelShape::MemoryBank => {
                let l: MemoryBankLine = serde_json::from_str(line).map_err(bad)?;
                let date = l.date.trim();
                if chrono::NaiveDate::parse_from_str(date, "%Y-%m-%d").is_err() {
                    return Err(EvalError::data(&at, format!("date {:?} is not YYYY-MM-DD", l.date)));
                }
                (l.user, format!("memorybank:{date}:{}", l.turn), l.critical)
            }
            LabelShape::Locomo => {
                let l: LocomoLine = serde_json::from_str(line).map_err(bad)?;
                (l.sample, format!("locomo:{}", l.dia_id.trim()), l.critical)
            }
            LabelShape::LongMemEval => {
                let l: LongMemEvalLine = serde_json::from_str(line).map_err(bad)?;
                let session = l.session_id.trim();
                if session.is_empty() {
                    return Err(EvalError::data(&at, "\"session_id\" is empty"));
                }
                // The import's key: the session id and the message's 1-based position.
                (l.question_id, format!("{session}_{}", u64::from(l.turn) + 1), l.critical)
            }
        };
        if critical > 1 {
            return Err(EvalError::data(&at, format!("\"critical\" is {critical}; it must be 0 or 1")));
        }
        labels.by_user.entry(user).or_default().insert(key, critical == 1);
    }
    if labels.is_empty() {
        return Err(EvalError::data(path, "holds no label line"));
    }
    Ok(labels)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_memorybank_and_locomo_lines() {
        let text = "{\"user\": \"Emily\", \"date\": \"2023-04-27\", \"turn\": 1, \"critical\": 1}\n\n\
                    {\"user\": \"Emily\", \"date\": \"2023-04-27\", \"turn\": 2, \"critical\": 0}\n";
        let labels = parse(text, "f", LabelShape::MemoryBank).unwrap();
        assert_eq!(labels.len(), 2);
        assert!(labels.user("Emily").unwrap()["memorybank:2023-04-27:1"]);
        assert!(!labels.user("Emily").unwrap()["memorybank:2023-04-27:2"]);
        let labels =
            parse("{\"sample\": \"conv-26\", \"dia_id\": \"D1:3\", \"critical\": 1}", "f", LabelShape::Locomo).unwrap();
        assert!(labels.user("conv-26").unwrap()["locomo:D1:3"]);
    }

    #[test]
    fn reads_longmemeval_lines_as_the_import_keys_its_messages() {
        let text = "{\"question_id\": \"9aaed6a3\", \"session_id\": \"answer_1\", \"turn\": 0, \"critical\": 1}\n\
                    {\"question_id\": \"9aaed6a3\", \"session_id\": \" s2 \", \"turn\": 4, \"critical\": 0}\n";
        let labels = parse(text, "f", LabelShape::LongMemEval).unwrap();
        let user = labels.user("9aaed6a3").unwrap();
        // Message i of a session is imported as `<session>_<i + 1>`.
        assert!(user["answer_1_1"]);
        assert!(!user["s2_5"]);
        assert_eq!(labels.len(), 2);
        let e = error(
            "{\"question_id\": \"q\", \"session_id\": \"  \", \"turn\": 0, \"critical\": 1}",
            LabelShape::LongMemEval,
        );
        assert!(e.contains(":1") && e.contains("session_id"), "{e}");
        let e = error(
            "{\"question_id\": \"q\", \"session_id\": \"s\", \"turn\": -1, \"critical\": 1}",
            LabelShape::LongMemEval,
        );
        assert!(e.contains(":1"), "{e}");
        // A LoCoMo line is not a LongMemEval line.
        let e = error("{\"sample\": \"conv-26\", \"dia_id\": \"D1:3\", \"critical\": 1}", LabelShape::LongMemEval);
        assert!(e.contains("question_id"), "{e}");
    }

    fn error(text: &str, shape: LabelShape) -> String {
        parse(text, "labels.jsonl", shape).unwrap_err().to_string()
    }

    #[test]
    fn malformed_lines_name_their_line() {
        let good = "{\"user\": \"A\", \"date\": \"2023-04-27\", \"turn\": 0, \"critical\": 1}\n";
        let e = error(&format!("{good}not json\n"), LabelShape::MemoryBank);
        assert!(e.contains("labels.jsonl:2"), "{e}");
        let e = error(
            &format!("{good}{{\"user\": \"A\", \"date\": \"27.4.2023\", \"turn\": 0, \"critical\": 1}}"),
            LabelShape::MemoryBank,
        );
        assert!(e.contains(":2") && e.contains("YYYY-MM-DD"), "{e}");
        let e =
            error("{\"user\": \"A\", \"date\": \"2023-04-27\", \"turn\": 0, \"critical\": 2}", LabelShape::MemoryBank);
        assert!(e.contains(":1") && e.contains("0 or 1"), "{e}");
        let e = error("{\"user\": \"A\", \"date\": \"2023-04-27\", \"critical\": 1}", LabelShape::MemoryBank);
        assert!(e.contains("turn"), "{e}");
        // A LoCoMo line is not a MemoryBank line.
        let e = error("{\"sample\": \"conv-26\", \"dia_id\": \"D1:3\", \"critical\": 1}", LabelShape::MemoryBank);
        assert!(e.contains(":1"), "{e}");
    }

    #[test]
    fn unknown_keys_are_refused() {
        let e = error(
            "{\"sample\": \"conv-26\", \"dia_id\": \"D1:3\", \"critical\": 1, \"why\": \"x\"}",
            LabelShape::Locomo,
        );
        assert!(e.contains(":1") && e.contains("why"), "{e}");
    }

    #[test]
    fn empty_and_oversized_files_are_refused() {
        assert!(error("", LabelShape::Locomo).contains("no label"));
        assert!(error("\n  \n", LabelShape::Locomo).contains("no label"));
        let long = format!("{{\"sample\": \"{}\", \"dia_id\": \"D1:3\", \"critical\": 1}}", "x".repeat(MAX_LINE));
        let e = error(&long, LabelShape::Locomo);
        assert!(e.contains(":1") && e.contains("longer"), "{e}");
    }
}
