//! `text_enum!`: a fieldless enum with a stable text form.
//!
//! Each value has one spelling used in storage, JSON, configuration and flags. The macro
//! writes `ALL`, `as_str`, `Display` and a `FromStr` whose error names the field and lists
//! the accepted spellings.

/// Declares `enum $name` with `ALL`, `as_str`, `Display` and `FromStr` (errors name `$field`).
macro_rules! text_enum {
    ($(#[$meta:meta])* $name:ident, $field:literal { $($(#[$vmeta:meta])* $variant:ident = $text:literal),+ $(,)? }) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub enum $name { $($(#[$vmeta])* $variant),+ }

        impl $name {
            /// Every value, in declaration order.
            pub const ALL: &'static [$name] = &[$($name::$variant),+];
            /// The stable text form used in storage, JSON and flags.
            pub fn as_str(self) -> &'static str {
                match self { $($name::$variant => $text),+ }
            }
        }

        impl ::std::fmt::Display for $name {
            fn fmt(&self, f: &mut ::std::fmt::Formatter<'_>) -> ::std::fmt::Result {
                f.write_str(self.as_str())
            }
        }

        impl ::std::str::FromStr for $name {
            type Err = $crate::error::InvalidInput;
            fn from_str(s: &str) -> Result<Self, Self::Err> {
                match s.trim() {
                    $($text => Ok($name::$variant),)+
                    other => Err($crate::error::InvalidInput::new($field, format!(
                        "{:?} is not one of: {}", $crate::error::truncate(other, 40),
                        [$($text),+].join(", ")))),
                }
            }
        }
    };
}

pub(crate) use text_enum;
