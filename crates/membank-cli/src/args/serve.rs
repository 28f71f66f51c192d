//! Flags of the server commands: `serve`, `mcp` and `keys …`.

use std::net::SocketAddr;

use clap::{Args, Subcommand};

/// `serve`.
#[derive(Debug, Args)]
pub struct ServeArgs {
    /// Address to listen on. Without API keys only loopback addresses are allowed.
    #[arg(long, env = "MEMBANK_ADDR", default_value = "127.0.0.1:8787")]
    pub addr: SocketAddr,
    /// Requests per second per API key (0: unlimited).
    #[arg(long, env = "MEMBANK_RATE_LIMIT", default_value_t = 50.0)]
    pub rate_limit: f64,
    /// Burst size per API key.
    #[arg(long, env = "MEMBANK_RATE_BURST", default_value_t = 100.0)]
    pub rate_burst: f64,
    /// Failed authentications one client address may make in a row before it is answered
    /// 429 without its key being looked up.
    #[arg(long, env = "MEMBANK_AUTH_FAILURE_BURST", default_value_t = 20.0)]
    pub auth_failure_burst: f64,
    /// Failed authentications forgiven per minute per client address (0: no limit).
    #[arg(long, env = "MEMBANK_AUTH_FAILURE_RATE", default_value_t = 10.0)]
    pub auth_failure_rate: f64,
    /// Largest request body in bytes.
    #[arg(long, env = "MEMBANK_BODY_LIMIT", default_value_t = 1024 * 1024)]
    pub body_limit: usize,
    /// Largest text field in bytes (at most 32768).
    #[arg(long, env = "MEMBANK_TEXT_LIMIT", default_value_t = 32 * 1024)]
    pub text_limit: usize,
    /// Largest recall k (at most 200).
    #[arg(long, env = "MEMBANK_MAX_K", default_value_t = 200)]
    pub max_k: usize,
    /// Largest list page (at most 1000).
    #[arg(long, env = "MEMBANK_MAX_PAGE", default_value_t = 1000)]
    pub max_page: usize,
    /// Most items per batch request.
    #[arg(long, env = "MEMBANK_MAX_BATCH", default_value_t = 100)]
    pub max_batch: usize,
    /// Run no maintenance in the background (overrides `[maintenance] enabled`);
    /// `POST /v1/users/{user}/maintain` still works.
    #[arg(long)]
    pub no_maintenance: bool,
    /// Most recall queries embedded together in one forward pass (micro-batching: queries
    /// that arrive while a pass runs share the next one, so the model's weights are read
    /// once per batch); the same bound holds for the texts of memories stored one request
    /// at a time (turns, notes), batched the same way after any waiting queries. 1 embeds
    /// each text alone. From 1 to 256.
    #[arg(long, env = "MEMBANK_QUERY_BATCH", default_value_t = 32, value_parser = clap::value_parser!(u16).range(1..=256))]
    pub query_batch: u16,
    /// Microseconds the batcher waits for more queries after the first of a batch (0: none;
    /// batches form only from queries that queue during a pass). At most 100000.
    #[arg(long, env = "MEMBANK_QUERY_BATCH_WAIT_US", default_value_t = 0, value_parser = clap::value_parser!(u32).range(0..=100_000))]
    pub query_batch_wait_us: u32,
    /// MiB of recent query vectors kept, so a repeated query (chat and a tool recalling the
    /// same message, a retry) skips the model; 0 keeps none. Overrides `[embedding]
    /// query_cache_mb`; default 4.
    #[arg(long, env = "MEMBANK_QUERY_CACHE_MB", value_name = "MB", value_parser = super::parse_query_cache_mb)]
    pub query_cache_mb: Option<u64>,
}

/// `mcp`.
#[derive(Debug, Args)]
pub struct McpArgs {
    /// The person the tools act for (the model cannot choose another).
    #[arg(long, env = "MEMBANK_USER")]
    pub user: String,
}

/// `keys …`.
#[derive(Debug, Subcommand)]
pub enum KeysCommand {
    /// Create a key for the tenant given by --tenant; prints the key once.
    Create {
        /// Bind the key to one user of the tenant.
        #[arg(long)]
        user: Option<String>,
        /// An operations key: may act for any tenant (header X-Membank-Tenant) and call /v1/admin.
        #[arg(long)]
        admin: bool,
        /// A label to recognise the key by.
        #[arg(long)]
        label: Option<String>,
    },
    /// List keys (never their secrets).
    List,
    /// Revoke a key by its id (the hex between `mbk_` and the second `_`).
    Revoke {
        /// Key id.
        id: String,
    },
}
