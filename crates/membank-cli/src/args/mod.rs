//! The command line as clap types: the global options and every subcommand's flags, with
//! their help text. Parsing only: nothing here opens a store or runs a command, and no
//! module of this crate is imported here, so the flags are read in one place, apart from
//! what the commands do with them (ripgrep keeps its `flags/` the same way).

pub mod bench;
pub mod companion;
pub mod eval;
pub mod memories;
pub mod models;
pub mod serve;
pub mod simulate;
pub mod transfer;

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};

/// Long-term memory for LLM agents and AI companions.
#[derive(Debug, Parser)]
#[command(name = "membank", version, about, propagate_version = true)]
pub struct Cli {
    /// Database: a SQLite file (default: <data dir>/membank/membank.db) or a PostgreSQL
    /// URL, postgres://USER@HOST:PORT/DB (PostgreSQL 15 or newer with pgvector).
    #[arg(long, global = true, env = "MEMBANK_DB", help_heading = "Global options")]
    pub db: Option<String>,
    /// Configuration file (TOML).
    #[arg(long, global = true, env = "MEMBANK_CONFIG", help_heading = "Global options")]
    pub config: Option<PathBuf>,
    /// Tenant the users belong to.
    #[arg(long, global = true, env = "MEMBANK_TENANT", help_heading = "Global options")]
    pub tenant: Option<String>,
    /// Most memory, in MiB, that the search caches of all users together keep (each user's
    /// vectors and BM25 index; the least recently used users are dropped and loaded again
    /// when next searched). A user with 10k memories of the default model takes about
    /// 23 MiB, one with 100k about 228 MiB. From 1 to 1048576; default 1024.
    #[arg(long, global = true, env = "MEMBANK_CACHE_MB", value_name = "MB", value_parser = parse_cache_mb, help_heading = "Global options")]
    pub cache_mb: Option<u64>,
    /// Print machine-readable JSON instead of text.
    #[arg(long, global = true, help_heading = "Global options")]
    pub json: bool,
    /// Embedding settings.
    #[command(flatten)]
    pub embedding: EmbeddingArgs,
    /// Forgetting settings.
    #[command(flatten)]
    pub forgetting: ForgettingArgs,
    /// Chat model settings.
    #[command(flatten)]
    pub llm: LlmArgs,
    /// What to do.
    #[command(subcommand)]
    pub command: Command,
}

/// Where vectors come from.
#[derive(Debug, Args)]
#[command(next_help_heading = "Global options: embedding")]
pub struct EmbeddingArgs {
    /// `local` (in-process all-MiniLM-L6-v2 or multilingual-e5-small) or `openai` (any OpenAI-compatible /v1/embeddings).
    #[arg(long, global = true, env = "MEMBANK_EMBEDDER")]
    pub embedder: Option<String>,
    /// Local model directory (default: <data dir>/membank/models/<local model>).
    #[arg(long, global = true, env = "MEMBANK_MODEL_DIR")]
    pub model_dir: Option<PathBuf>,
    /// Local model: all-MiniLM-L6-v2 (English) or multilingual-e5-small (Chinese and about
    /// 100 other languages). Default: a store keeps the model of its vectors; a new store
    /// gets multilingual-e5-small when its first memories are written mostly in scripts
    /// other than Latin (Chinese, Japanese, Korean, Cyrillic, Arabic, …), else
    /// all-MiniLM-L6-v2. Latin-script languages other than English (French, Spanish, …)
    /// cannot be told apart by script: name multilingual-e5-small for them.
    #[arg(long, global = true, env = "MEMBANK_LOCAL_MODEL")]
    pub local_model: Option<String>,
    /// Threads for the local model.
    #[arg(long, global = true, env = "MEMBANK_THREADS")]
    pub threads: Option<usize>,
    /// Weights the local model embeds search queries with: int8 (default; a quarter of the
    /// bytes, cosine ≥ 0.999 to f32) or f32 (the reference). Stored memories always use f32.
    #[arg(long, global = true, env = "MEMBANK_QUERY_PRECISION")]
    pub query_precision: Option<String>,
    /// Base URL of an OpenAI-compatible embeddings endpoint, e.g. http://localhost:11434/v1.
    #[arg(long, global = true, env = "MEMBANK_EMBED_BASE_URL")]
    pub embed_base_url: Option<String>,
    /// Model name at that endpoint.
    #[arg(long, global = true, env = "MEMBANK_EMBED_MODEL")]
    pub embed_model: Option<String>,
    /// API key for that endpoint.
    #[arg(long, global = true, env = "MEMBANK_EMBED_API_KEY", hide_env_values = true)]
    pub embed_api_key: Option<String>,
}

/// Forgetting policy overrides.
#[derive(Debug, Args)]
#[command(next_help_heading = "Global options: forgetting")]
pub struct ForgettingArgs {
    /// Forgetting policy: memorybank (default; R = exp(-t/S)) or fademem (importance, two
    /// layers, v = v0·exp(-λ·Δt^β); parameters in the config file's [forgetting.fademem]).
    #[arg(long, global = true, env = "MEMBANK_FORGETTING_POLICY")]
    pub forgetting_policy: Option<String>,
    /// Decision mode: threshold, stochastic or rank.
    #[arg(long, global = true, env = "MEMBANK_FORGETTING_MODE")]
    pub forgetting_mode: Option<String>,
    /// Retention threshold θ for threshold mode.
    #[arg(long, global = true, env = "MEMBANK_THRESHOLD")]
    pub threshold: Option<f64>,
    /// Seed for stochastic mode.
    #[arg(long, global = true, env = "MEMBANK_SEED")]
    pub seed: Option<u64>,
    /// What counts as a recall: retrieved or used.
    #[arg(long, global = true, env = "MEMBANK_RECALL_MODE")]
    pub recall_mode: Option<String>,
}

/// The subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Store one exchange; prints the new memory's id.
    Remember(memories::RememberArgs),
    /// Store a free-form note; prints the new memory's id.
    Note(memories::NoteArgs),
    /// Find the memories most relevant to a query (strengthens them by default).
    ///
    /// Each hit shows its `score`, which ranks by rank fusion (RRF) and is not a
    /// probability. Two rankings are made: dense (meaning: the cosine between the query's
    /// and the memory's embeddings) and lexical (shared words: BM25). Each ranking a memory
    /// is in adds 1/(60 + its place): first place adds 1/61 ≈ 0.0164, so ≈ 0.033 means
    /// first in both. A date in the query ("May 4th") adds twice that again from the
    /// rankings among that day's memories; a neighbouring line's share, a named speaker
    /// (×1.5) and --weight-by-retention (× R before this recall) come on top. The "=" line
    /// under each hit shows each part.
    ///
    /// R and S are the memory as it is after this recall: a recall that strengthens sets R
    /// to 1 and adds 1 to S; the retention before it is shown beside it ("before this
    /// recall"). --no-strengthen changes nothing.
    Recall(memories::RecallArgs),
    /// List a user's memories with their strength and retention.
    List(memories::ListArgs),
    /// Show memories by id.
    Show(memories::IdsArgs),
    /// Archive memories (forgotten, restorable).
    Forget(memories::ForgetArgs),
    /// Restore archived memories.
    Restore(memories::IdsArgs),
    /// Pin memories: they never decay.
    Pin(memories::IdsArgs),
    /// Unpin memories.
    Unpin(memories::IdsArgs),
    /// Erase memories for good (content, vector and index removed; a tombstone event stays).
    Erase(memories::EraseArgs),
    /// Run the forgetting curve over a user's memories (archiving only).
    Sweep(memories::SweepArgs),
    /// Run one maintenance cycle: importance and layers, archiving under the policy,
    /// near-duplicate merging, and with an LLM fusion and conflict resolution.
    Maintain(memories::MaintainArgs),
    /// Show a user's event log.
    Events(memories::EventsArgs),
    /// List users, or set a user's time zone.
    Users(memories::UsersArgs),
    /// Check a database's integrity (--db, or a FILE such as a backup), changing nothing.
    Check(transfer::CheckArgs),
    /// Write users' memories, with all of their state and events, in the lossless
    /// membank-export format (JSON Lines; `import membank-export` reads it back).
    Export(transfer::ExportArgs),
    /// Copy a whole store into another, SQLite to PostgreSQL or back: every user, memory,
    /// vector, event and API key, in batches, resumable, verified at the end.
    Migrate(transfer::MigrateArgs),
    /// Copy the database consistently while it is in use (a running serve may go on
    /// writing), then check the copy. Restore by stopping serve and putting the copy in
    /// place of the database file.
    Backup(transfer::BackupArgs),
    /// Manage the local embedding model.
    Models {
        /// What to do with the model.
        #[command(subcommand)]
        command: models::ModelsCommand,
    },
    /// Summarize each day's conversations and the whole history (needs an LLM; incremental).
    Summarize(companion::SummarizeArgs),
    /// Show a user's global portrait and summary with the days they draw on.
    Profile(companion::ProfileArgs),
    /// Talk with the memory-backed companion (needs an LLM).
    Chat(companion::ChatArgs),
    /// Import history: the reference MemoryBank JSON, or LoCoMo / LongMemEval conversations.
    Import(transfer::ImportArgs),
    /// Run a benchmark (MemoryBank probing questions, LoCoMo, LongMemEval) and score retrieval.
    Eval {
        /// Which benchmark.
        #[command(subcommand)]
        command: eval::EvalCommand,
    },
    /// Replay a benchmark day by day into a throw-away store under a forgetting policy and
    /// compare storage and quality with no forgetting and fifo/lru at equal storage.
    Simulate(simulate::SimulateArgs),
    /// Run the REST API (OpenAPI at /openapi.json), MCP at /mcp, health and metrics.
    Serve(serve::ServeArgs),
    /// Serve the MCP tools over stdio for one user (for MCP hosts such as Claude Desktop).
    Mcp(serve::McpArgs),
    /// Manage API keys of the server (stored hashed).
    Keys {
        /// What to do with keys.
        #[command(subcommand)]
        command: serve::KeysCommand,
    },
    /// Measure speed (embedding throughput, recall latency, sweep time).
    Bench {
        /// Which benchmark.
        #[command(subcommand)]
        command: bench::BenchCommand,
    },
}

/// Flags and environment variables for the chat model.
#[derive(Debug, Args)]
#[command(next_help_heading = "Global options: chat model")]
pub struct LlmArgs {
    /// Base URL of an OpenAI-compatible chat endpoint, e.g. http://localhost:11434/v1.
    #[arg(long, global = true, env = "MEMBANK_LLM_BASE_URL")]
    pub llm_base_url: Option<String>,
    /// Chat model name at that endpoint.
    #[arg(long, global = true, env = "MEMBANK_LLM_MODEL")]
    pub llm_model: Option<String>,
    /// API key for that endpoint.
    #[arg(long, global = true, env = "MEMBANK_LLM_API_KEY", hide_env_values = true)]
    pub llm_api_key: Option<String>,
    /// The model's context window in tokens (default 8192).
    #[arg(long, global = true, env = "MEMBANK_LLM_CONTEXT_TOKENS")]
    pub llm_context_tokens: Option<usize>,
}

/// A budget in whole MiB, from `min` to `max`: the search caches' and the query cache's.
#[derive(Debug, Clone, Copy)]
pub struct MibBudget {
    /// What it is, for messages ("the cache budget").
    pub what: &'static str,
    pub min: u64,
    pub max: u64,
}

impl MibBudget {
    /// A number read from a flag, the environment or a file, checked.
    pub fn in_range(&self, mb: i128) -> Result<u64, String> {
        match u64::try_from(mb) {
            Ok(mb) if (self.min..=self.max).contains(&mb) => Ok(mb),
            _ => Err(format!("{} must be from {} to {} MiB, not {mb}", self.what, self.min, self.max)),
        }
    }

    /// A flag's or the environment's text, checked.
    pub fn parse(&self, text: &str) -> Result<u64, String> {
        match text.trim().parse::<i128>() {
            Ok(mb) => self.in_range(mb),
            Err(_) => Err(self.not_whole(&format!("{text:?}"))),
        }
    }

    /// The message for a value that is no whole number.
    pub fn not_whole(&self, value: &str) -> String {
        format!("{value} is not a whole number of MiB (from {} to {})", self.min, self.max)
    }
}

/// The largest cache budget accepted, in MiB (1 TiB): far above any machine this runs on,
/// so a larger number is a typo, not a wish.
pub const MAX_CACHE_MB: u64 = 1 << 20;

/// `--cache-mb`, `MEMBANK_CACHE_MB`, `[cache] max_mb`: from 1 to [`MAX_CACHE_MB`]. 0 is
/// refused rather than read as "no limit" or "no cache": the first would undo the bound
/// without saying so, the second would reload every user on every search.
pub const CACHE_BUDGET: MibBudget = MibBudget { what: "the cache budget", min: 1, max: MAX_CACHE_MB };

/// `--cache-mb` and `MEMBANK_CACHE_MB` ([`CACHE_BUDGET`]).
pub fn parse_cache_mb(text: &str) -> Result<u64, String> {
    CACHE_BUDGET.parse(text)
}

/// The query cache's default budget: about 2,400 queries of a 384-dimension model.
pub const DEFAULT_QUERY_CACHE_MB: u64 = 4;

/// `serve --query-cache-mb`, `MEMBANK_QUERY_CACHE_MB`, `[embedding] query_cache_mb`: from
/// 0 (no query cache) to 1 GiB.
pub const QUERY_CACHE_BUDGET: MibBudget = MibBudget { what: "the query cache budget", min: 0, max: 1024 };

/// `serve --query-cache-mb` and `MEMBANK_QUERY_CACHE_MB` ([`QUERY_CACHE_BUDGET`]).
pub fn parse_query_cache_mb(text: &str) -> Result<u64, String> {
    QUERY_CACHE_BUDGET.parse(text)
}
