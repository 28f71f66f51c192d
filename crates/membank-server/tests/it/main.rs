//! Integration tests of membank-server: the router called in-process with `oneshot`
//! (errors, limits, hostile input, randomised isolation over REST and MCP), and the real
//! server on 127.0.0.1:0 (concurrency, MCP with the rmcp client, graceful shutdown,
//! background maintenance on a manual clock). The engine runs on temporary SQLite files
//! with the hashing test embedder.

mod companion;
mod concurrency;
mod errors;
mod isolation;
mod maintain;
mod mcp;
mod reminisce;
mod security;
mod support;
mod timeouts;
mod web;
mod writes;
