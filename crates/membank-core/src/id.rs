//! Stable random identifiers. A memory's id is a UUIDv7 (time-ordered, 74 random bits),
//! chosen once when it is stored and never derived from position, so removing one
//! memory never repoints another (the reference implementation's `user_date_i` did).

use std::fmt;
use std::str::FromStr;

use crate::error::{InvalidInput, truncate};
use crate::time::Timestamp;

macro_rules! uuid_id {
    ($name:ident, $what:literal) => {
        #[doc = concat!("Identifier of ", $what, ": a UUIDv7, never reused.")]
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub struct $name(uuid::Uuid);

        impl $name {
            /// A fresh id whose time prefix is `now` and whose remaining bits are random.
            pub fn generate(now: Timestamp) -> Self {
                let millis = now.timestamp_millis().max(0) as u64;
                let ts =
                    uuid::Timestamp::from_unix(uuid::NoContext, millis / 1000, ((millis % 1000) * 1_000_000) as u32);
                Self(uuid::Uuid::new_v7(ts))
            }
            /// The id as a UUID.
            pub fn as_uuid(&self) -> uuid::Uuid {
                self.0
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                self.0.hyphenated().fmt(f)
            }
        }

        impl FromStr for $name {
            type Err = InvalidInput;
            fn from_str(s: &str) -> Result<Self, Self::Err> {
                uuid::Uuid::parse_str(s.trim()).map(Self).map_err(|_| {
                    InvalidInput::new(
                        "id",
                        format!(
                            "{:?} is not a memory id (expected a UUID such as 0192f1c4-7c1e-7d3a-9b5e-2f1a3c4d5e6f)",
                            truncate(s, 80)
                        ),
                    )
                })
            }
        }
    };
}

uuid_id!(MemoryId, "a memory");
uuid_id!(EventId, "an event in the log");

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeZone;

    #[test]
    fn ids_are_unique_and_round_trip() {
        let now = chrono::Utc.with_ymd_and_hms(2024, 5, 4, 10, 0, 0).unwrap();
        let a = MemoryId::generate(now);
        let b = MemoryId::generate(now);
        assert_ne!(a, b);
        assert_eq!(a.to_string().parse::<MemoryId>().unwrap(), a);
        assert!("user_2023-05-04_1".parse::<MemoryId>().is_err());
        assert!("".parse::<MemoryId>().is_err());
    }
}
