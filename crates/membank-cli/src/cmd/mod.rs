//! The subcommands, one module per command or command family.

pub mod bench;
pub mod companion;
pub mod eval;
pub mod import;
pub mod migrate;
pub mod serve;
pub mod simulate;
pub mod transfer;
