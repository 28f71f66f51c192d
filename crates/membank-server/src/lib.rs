//! membank's external interfaces: the REST API (with its OpenAPI document, API keys,
//! rate limits and Prometheus metrics), the MCP server (stdio and streamable HTTP), and
//! the wire types they and the CLI's `--json` share, so a recall looks the same everywhere.
//!
//! This is the one place engine types become wire types: domain types never derive
//! `Serialize` for the wire, so an internal rename never silently changes the API. The
//! engine is synchronous; every engine call here runs on Tokio's blocking pool.
//!
//! Entry points: [`rest::router`] (a function of [`AppState`], testable without a
//! socket), [`serve::serve`] (a listener and a shutdown signal; it also runs background
//! maintenance, [`maintenance`]), [`mcp::serve_stdio`].

pub mod error;
pub mod keys;
pub mod maintenance;
pub mod mcp;
pub mod metrics;
pub mod ratelimit;
pub mod rest;
mod schedule;
pub mod serve;
pub mod state;
pub mod web;
pub mod wire;

pub use error::ApiError;
pub use keys::Principal;
pub use maintenance::MaintenanceConfig;
pub use ratelimit::{AuthFailureLimit, RateLimit, TrustedProxies};
pub use rest::{openapi, router};
pub use serve::{ServeError, Timeouts, check_bind, serve};
pub use state::{AppState, AuthMode, Limits, ServerConfig};
pub mod wire_companion;
pub mod wire_insight;
