//! Which questions of a benchmark a run scores: a range of LoCoMo conversations, or one
//! half of LongMemEval's questions.
//!
//! A recall stage tuned on the questions it is then scored on measures the tuning, not the
//! stage. The benchmarks are small (10 LoCoMo conversations, 500 LongMemEval questions), so
//! each is split in two fixed halves by position in the released file: LoCoMo
//! conversations 0–4 and LongMemEval's first half for tuning, conversations 5–9 and the
//! second half held apart to report. The split is by position, never by content, so it is
//! the same on every machine and cannot be chosen after seeing results.
//!
//! A selection only chooses what is *asked and scored*: every history is still imported,
//! so the cached database (and BM25's statistics over it) is the same whichever half runs.
//! Parsing is strict (`FromStr`, for the CLI's argument parser); a range that the data
//! file does not have is found when the file is read ([`crate::EvalError::Selection`]).

use std::fmt;
use std::str::FromStr;

/// LoCoMo conversations by position in the file, from 0, both ends included (`5-9`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Conversations {
    /// First conversation scored.
    pub first: usize,
    /// Last conversation scored.
    pub last: usize,
}

impl Conversations {
    /// The tuning half of LoCoMo's ten conversations.
    pub const TUNE: Conversations = Conversations { first: 0, last: 4 };
    /// The held-apart half.
    pub const HELD_APART: Conversations = Conversations { first: 5, last: 9 };

    /// Whether the conversation at `index` is scored.
    pub fn contains(&self, index: usize) -> bool {
        (self.first..=self.last).contains(&index)
    }
}

impl fmt::Display for Conversations {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.first == self.last { write!(f, "{}", self.first) } else { write!(f, "{}-{}", self.first, self.last) }
    }
}

impl FromStr for Conversations {
    type Err = String;

    /// `N` or `FIRST-LAST` (positions from 0, `FIRST ≤ LAST`).
    fn from_str(text: &str) -> Result<Self, String> {
        let text = text.trim();
        let usage = || {
            format!(
                "{text:?} is not a conversation range: give positions from 0 such as 0-4 (tune), 5-9 (held apart) or 3"
            )
        };
        if text.is_empty() {
            return Err(
                "the conversation range is empty: give positions from 0 such as 0-4 (tune), 5-9 (held apart) or 3"
                    .into(),
            );
        }
        let number = |part: &str| -> Result<usize, String> {
            let part = part.trim();
            // `usize::from_str` takes a leading '+'; a range is plain digits only.
            if part.is_empty() || !part.bytes().all(|b| b.is_ascii_digit()) {
                return Err(usage());
            }
            part.parse::<usize>().map_err(|_| usage())
        };
        let (first, last) = match text.split_once('-') {
            Some((first, last)) => (number(first)?, number(last)?),
            None => {
                let only = number(text)?;
                (only, only)
            }
        };
        if first > last {
            return Err(format!("the conversation range {text:?} starts after it ends"));
        }
        Ok(Conversations { first, last })
    }
}

/// One half of a list of questions by position: the first `⌈n/2⌉` or the rest.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Half {
    /// The first half (tune).
    First,
    /// The second half (held apart).
    Second,
}

impl Half {
    /// The positions of this half among `n` questions.
    pub fn range(self, n: usize) -> std::ops::Range<usize> {
        let middle = n.div_ceil(2);
        match self {
            Half::First => 0..middle,
            Half::Second => middle..n,
        }
    }

    /// 1 or 2.
    pub fn number(self) -> u8 {
        match self {
            Half::First => 1,
            Half::Second => 2,
        }
    }
}

impl FromStr for Half {
    type Err = String;

    /// `1` or `2`.
    fn from_str(text: &str) -> Result<Self, String> {
        match text.trim() {
            "1" => Ok(Half::First),
            "2" => Ok(Half::Second),
            "" => Err(
                "the half is empty: give 1 (the first half of the questions, to tune) or 2 (the second, held apart)"
                    .into(),
            ),
            other => Err(format!(
                "{other:?} is not a half: give 1 (the first half of the questions, to tune) or 2 (the second, held apart)"
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges_parse_strictly() {
        assert_eq!("5-9".parse(), Ok(Conversations::HELD_APART));
        assert_eq!(" 0 - 4 ".parse(), Ok(Conversations::TUNE));
        assert_eq!("3".parse(), Ok(Conversations { first: 3, last: 3 }));
        for bad in ["", " ", "-", "5-", "-9", "a-b", "5..9", "5-9-11", "+5-9", "-1", "9-5", "99999999999999999999999"] {
            assert!(bad.parse::<Conversations>().is_err(), "{bad:?} was accepted");
        }
        assert!("9-5".parse::<Conversations>().unwrap_err().contains("starts after it ends"));
        assert_eq!(Conversations::HELD_APART.to_string(), "5-9");
        assert!(
            Conversations::HELD_APART.contains(5)
                && Conversations::HELD_APART.contains(9)
                && !Conversations::HELD_APART.contains(4)
        );
    }

    #[test]
    fn halves_cover_every_question_once() {
        assert_eq!(("1".parse(), "2".parse()), (Ok(Half::First), Ok(Half::Second)));
        for bad in ["", "0", "3", "first", "1.0", "-1"] {
            assert!(bad.parse::<Half>().is_err(), "{bad:?} was accepted");
        }
        for n in [0, 1, 2, 5, 500] {
            let (first, second) = (Half::First.range(n), Half::Second.range(n));
            assert_eq!((first.start, first.end, second.end), (0, second.start, n), "n = {n}");
            assert!(first.len() >= second.len() && first.len() - second.len() <= 1);
        }
        assert_eq!(Half::Second.range(500), 250..500);
    }
}
