//! The cue counts of one text, before weighting: what the English and Chinese cue finders
//! add to and the evidence module weighs.

/// Cue counts of one text, before weighting.
#[derive(Debug, Default)]
pub(super) struct Evidence {
    pub(super) self_disclosure: u32,
    pub(super) identity: u32,
    pub(super) preference: u32,
    pub(super) plan: u32,
    pub(super) named_entity: u32,
    pub(super) number: u32,
    pub(super) date_or_time: u32,
    pub(super) life_topic: u32,
    pub(super) momentary: u32,
    /// Words plus Chinese characters that are filler.
    pub(super) filler_units: usize,
    /// Words plus Chinese characters.
    pub(super) all_units: usize,
    /// Length in words, a Chinese run counted as one word per two characters.
    pub(super) length_in_words: usize,
    pub(super) question_or_request: bool,
}
