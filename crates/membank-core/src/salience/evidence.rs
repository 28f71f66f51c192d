//! How a text's cues are counted (both languages' cues add to one [`Evidence`]) and how
//! the counts become a logit.

use super::chinese::chinese_cues;
use super::counts::Evidence;
use super::english::{english_cues, words};
use super::weights::{
    DATE_OR_TIME, FILLER_SHARE, IDENTITY, LIFE_TOPIC, MOMENTARY, NAMED_ENTITY, NUMBER, PLAN, PREFERENCE,
    QUESTION_DAMPING, QUESTION_WITHOUT_DISCLOSURE, SELF_DISCLOSURE, SHORT, VERY_SHORT,
};
use crate::text::is_cjk;

impl Evidence {
    pub(super) fn of(text: &str) -> Evidence {
        let mut evidence = Evidence::default();
        let words = words(text);
        english_cues(&words, &mut evidence);
        let chars: Vec<char> = text.chars().collect();
        chinese_cues(&chars, &mut evidence);
        let cjk_chars = chars.iter().filter(|c| is_cjk(**c)).count();
        evidence.all_units = words.len() + cjk_chars;
        evidence.length_in_words = words.len() + cjk_chars.div_ceil(2);
        evidence.question_or_request |= ends_with_question_mark(text);
        evidence
    }

    pub(super) fn logit(&self) -> f64 {
        let mut positive = saturating(SELF_DISCLOSURE, self.self_disclosure)
            + saturating(IDENTITY, self.identity)
            + saturating(PREFERENCE, self.preference)
            + saturating(PLAN, self.plan)
            + saturating(NAMED_ENTITY, self.named_entity)
            + saturating(NUMBER, self.number)
            + saturating(DATE_OR_TIME, self.date_or_time)
            + saturating(LIFE_TOPIC, self.life_topic);
        let mut negative = saturating(MOMENTARY, self.momentary);
        if self.question_or_request && self.self_disclosure == 0 {
            positive *= QUESTION_DAMPING;
            negative += QUESTION_WITHOUT_DISCLOSURE;
        }
        if self.all_units > 0 {
            negative += FILLER_SHARE * (self.filler_units.min(self.all_units) as f64 / self.all_units as f64);
        }
        negative += match self.length_in_words {
            0..=2 => VERY_SHORT,
            3..=4 => SHORT,
            _ => 0.0,
        };
        positive + negative
    }
}

/// True if the last punctuation or letter of `text` is a question mark: "Favourite
/// colour? Definitely green." answers its own question and is a statement.
pub(super) fn ends_with_question_mark(text: &str) -> bool {
    text.chars()
        .rev()
        .find(|c| c.is_alphanumeric() || matches!(c, '.' | '!' | '?' | '。' | '！' | '？'))
        .is_some_and(|c| matches!(c, '?' | '？'))
}

/// A cue's contribution after `count` hits: the first hit is worth `weight`, each next
/// one half the previous, approaching `2 × weight`. Repetition adds little, and the total
/// is bounded whatever the text's length.
fn saturating(weight: f64, count: u32) -> f64 {
    2.0 * weight * (1.0 - 0.5f64.powi(count.min(60) as i32))
}
