//! Who said a memory, and which of the candidates' speakers a query names.

use std::collections::HashSet;

use membank_core::{Memory, text};

/// The metadata key naming who said a memory (a participant of a group conversation).
pub const SPEAKER: &str = membank_core::SPEAKER_KEY;

/// A memory's speaker as lowercase index terms (`"Mary Ann"` → `"mary ann"`), if it has one.
pub(super) fn speaker_of(memory: &Memory) -> Option<String> {
    speaker_name(memory.metadata.get(SPEAKER)?)
}

/// A speaker metadata value as lowercase index terms, if it has any.
pub(super) fn speaker_name(value: &str) -> Option<String> {
    let name = text::terms(value).join(" ");
    (!name.is_empty()).then_some(name)
}

/// The speakers among `candidates` that the query names, every word of the name present
/// ("What did Caroline say…", "Melanie's kids"). In a conversation among several people a
/// question about one of them is mostly answered by what that person said; a speaker is
/// only ever boosted, never required, because the answer may be in what another said.
pub fn named_speakers<'a>(query: &str, candidates: impl IntoIterator<Item = &'a Memory>) -> HashSet<String> {
    named_among(query, candidates.into_iter().filter_map(|m| m.metadata.get(SPEAKER)).map(String::as_str))
}

/// The speakers among speaker metadata `values` that the query names, as
/// [`named_speakers`] finds them among memories.
pub(super) fn named_among<'a>(query: &str, values: impl IntoIterator<Item = &'a str>) -> HashSet<String> {
    let words: HashSet<String> = text::terms(query).into_iter().collect();
    values.into_iter().filter_map(speaker_name).filter(|name| name.split(' ').all(|w| words.contains(w))).collect()
}
