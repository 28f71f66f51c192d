//! Who a memory belongs to. Every read and write names a [`Scope`]; there is no way to
//! build a store query without one.
//!
//! Labels are opaque text, trimmed and validated: the reference data has user keys like
//! `" Jason "`, which must name the same person as `"Jason"`.

use std::fmt;

use crate::error::InvalidInput;
use crate::limits::MAX_LABEL_BYTES;

fn validate_label(field: &'static str, raw: &str) -> Result<String, InvalidInput> {
    let trimmed = raw.trim();
    if trimmed.is_empty() {
        return Err(InvalidInput::new(field, "must not be empty or only white space"));
    }
    if trimmed.len() > MAX_LABEL_BYTES {
        return Err(InvalidInput::new(
            field,
            format!("is {} bytes long; the limit is {MAX_LABEL_BYTES}", trimmed.len()),
        ));
    }
    if trimmed.chars().any(char::is_control) {
        return Err(InvalidInput::new(field, "must not contain control characters"));
    }
    Ok(trimmed.to_string())
}

macro_rules! label {
    ($name:ident, $field:literal, $doc:literal) => {
        #[doc = $doc]
        #[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub struct $name(String);

        impl $name {
            /// Validates and trims a label: not empty, no control characters, at most
            /// [`MAX_LABEL_BYTES`] bytes.
            pub fn new(raw: &str) -> Result<Self, InvalidInput> {
                validate_label($field, raw).map(Self)
            }
            /// The label's text.
            pub fn as_str(&self) -> &str {
                &self.0
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(&self.0)
            }
        }
    };
}

label!(TenantId, "tenant", "An application or API key owner; users are partitioned by tenant.");
label!(UserId, "user", "The person the memories are about, unique within a tenant.");
label!(AgentLabel, "label", "An optional agent or session label that narrows a scope.");

impl TenantId {
    /// The tenant used when none is configured (local, single-tenant use).
    pub fn default_tenant() -> Self {
        Self("default".to_string())
    }
}

/// One person's memory space, optionally narrowed to an agent and a session.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Scope {
    /// The owning tenant.
    pub tenant: TenantId,
    /// The person.
    pub user: UserId,
    /// Narrows reads to memories written by this agent, and labels writes.
    pub agent: Option<AgentLabel>,
    /// Narrows reads to memories of this session, and labels writes.
    pub session: Option<AgentLabel>,
}

impl Scope {
    /// The scope of `user` in `tenant`, not narrowed.
    pub fn user(tenant: TenantId, user: UserId) -> Self {
        Self { tenant, user, agent: None, session: None }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn user_ids_are_trimmed_and_validated() {
        assert_eq!(UserId::new(" Jason ").unwrap(), UserId::new("Jason").unwrap());
        assert_eq!(UserId::new("  ").unwrap_err().field, "user");
        assert!(UserId::new("").is_err());
        assert!(UserId::new("a\u{0}b").is_err());
        assert!(UserId::new(&"x".repeat(MAX_LABEL_BYTES + 1)).is_err());
        assert!(UserId::new(&"x".repeat(MAX_LABEL_BYTES)).is_ok());
        assert_eq!(UserId::new("王小明").unwrap().as_str(), "王小明");
    }
}
