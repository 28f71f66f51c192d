//! membank's external interfaces. For now: the wire types shared by the CLI's `--json`
//! output and (later) the REST and MCP servers, so a recall looks the same everywhere.
//!
//! This is the one place engine types become wire types: domain types never derive
//! `Serialize` for the wire, so an internal rename never silently changes the API.

pub mod wire;
pub mod wire_companion;
