//! The one error type of the core: input that breaks a domain rule. It is always the
//! caller's fault, and its message says which rule and which value.

/// A value that violates a domain rule (empty user id, text over the limit, bad time zone…).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid {field}: {reason}")]
pub struct InvalidInput {
    /// Which field or argument was rejected (e.g. `user`, `user_text`).
    pub field: &'static str,
    /// Why, in words a user can act on.
    pub reason: String,
}

impl InvalidInput {
    /// Builds an error for `field` with a reason.
    pub fn new(field: &'static str, reason: impl Into<String>) -> Self {
        Self { field, reason: reason.into() }
    }
}

/// Shortens a string for an error message without splitting a character.
pub(crate) fn truncate(s: &str, max_chars: usize) -> String {
    if s.chars().count() <= max_chars {
        s.to_string()
    } else {
        let mut out: String = s.chars().take(max_chars).collect();
        out.push('…');
        out
    }
}
