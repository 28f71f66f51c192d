//! What every command shares: the [`Context`] resolved from flags, environment and the
//! configuration file, and the store, embedder and engine it opens on demand. It imports
//! no command: commands import it, and only the dispatcher (`cmd/mod.rs`) imports the
//! commands.

use std::path::PathBuf;
use std::sync::Arc;

use anyhow::{Context as _, Result, anyhow, bail};
use membank_engine::core::{Scope, SystemClock, TenantId, UserId};
use membank_engine::{Engine, EngineError};
use membank_store::{Backend, Location, StoreOptions};

use crate::args::Cli;
use crate::config;
use crate::embedder::{EmbedderChoice, LazyEmbedder};
use crate::errors::{Missing, UsageError};
use crate::language::{self, SwitchFlags};
use crate::llm_config::LlmSettings;
use crate::output::shell_word;

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
    pub llm: LlmSettings,
    /// `[maintenance]`: background cycles of `serve`.
    pub maintenance: config::Maintenance,
    /// The search caches' budget in MiB (`--cache-mb`, `[cache] max_mb`).
    pub cache_mb: u64,
    /// `[embedding] query_cache_mb` (`serve --query-cache-mb` overrides it).
    pub query_cache_mb: u64,
    /// `[server] trusted_proxies`.
    pub trusted_proxies: membank_server::TrustedProxies,
    /// `[server]` timeouts.
    pub timeouts: membank_server::Timeouts,
}

impl Context {
    /// Resolves the global options: defaults < configuration file < environment < flags.
    pub fn new(cli: &Cli) -> Result<Self> {
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
        let llm = LlmSettings::resolve(&cli.llm, &file.llm);
        let model_dir_configured = e.model_dir.is_some() || file.embedding.model_dir.is_some();
        let maintenance = config::maintenance(&file)?;
        let (trusted_proxies, timeouts) = config::server(&file)?;
        let local_model_given = e.local_model.clone().or_else(|| file.embedding.local_model.clone());
        let cache_mb = config::cache_mb(&file, cli.cache_mb)?;
        let query_cache_mb = config::query_cache_mb(&file, None)?;
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
            query_cache_mb,
            trusted_proxies,
            timeouts,
        })
    }

    /// How every store this command opens is opened (its cache budget).
    pub fn store_options(&self) -> StoreOptions {
        StoreOptions { cache_budget: Some(self.cache_mb << 20), ..Default::default() }
    }

    /// Opens the configured database for a command that writes: a SQLite file (created
    /// when missing; its directory too, but only at the default location, so a mistyped
    /// `--db nodir/x.db` is an error rather than a new empty database) or a PostgreSQL
    /// database (its schema created when empty).
    pub fn open_store(&self) -> Result<Arc<dyn Backend>> {
        let new = match &self.db {
            Location::Sqlite(path) => {
                if let Some(parent) = path.parent()
                    && !parent.as_os_str().is_empty()
                    && !parent.is_dir()
                {
                    if self.db_given && default_db().ok().as_deref() != Some(path.as_path()) {
                        return Err(Missing(format!(
                            "no directory {} for the database {}: membank creates a new database only in an existing directory (or at the default location); create it first, or check --db",
                            parent.display(),
                            path.display()
                        ))
                        .into());
                    }
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

    /// Opens the configured database for a command that only reads (`list`, `show`,
    /// `recall`, `events`, `users`, `export`, `profile`): a SQLite file that does not exist
    /// is an error, and nothing is created.
    pub fn open_store_to_read(&self) -> Result<Arc<dyn Backend>> {
        if let Location::Sqlite(path) = &self.db
            && !path.exists()
        {
            let start = if self.db_given {
                "check --db (or MEMBANK_DB, or the configuration file's db)"
            } else {
                "nothing has been stored yet: `membank remember` or `membank note` creates it"
            };
            return Err(Missing(format!(
                "no database {}: a command that only reads does not create one; {start}",
                path.display()
            ))
            .into());
        }
        self.open_store()
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

    /// The embedder for a command that reads data files (`eval`, `simulate`): the configured
    /// one, or with no model named the one the files' writing calls for.
    pub fn embedder_for_files(&self, files: &[&std::path::Path]) -> EmbedderChoice {
        language::choice_for_files(&self.embedder, self.auto_model, files)
    }

    /// What a suggested switch to another model repeats of this command's flags.
    pub fn switch_flags(&self) -> SwitchFlags<'_> {
        SwitchFlags { config: self.config_path.as_deref(), model_dir_configured: self.model_dir_configured }
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

    /// The engine over the database, for a command that writes ([`Self::open_store`]).
    pub fn engine(&self) -> Result<Engine> {
        self.engine_on(self.open_store()?)
    }

    /// The engine for a command that only reads ([`Self::open_store_to_read`]).
    pub fn engine_to_read(&self) -> Result<Engine> {
        self.engine_on(self.open_store_to_read()?)
    }

    /// The engine over a store this context opened (for a caller that also keeps the store).
    pub fn engine_on(&self, store: Arc<dyn Backend>) -> Result<Engine> {
        let embedder = Arc::new(self.lazy_embedder(store.clone(), true));
        Ok(Engine::new(store, embedder, Arc::new(SystemClock), self.engine_config.clone())?
            .with_switch_advice(language::switch_advice(self.switch_flags(), &self.db)))
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
        self.with_configured_llm(self.engine()?)
    }

    /// `engine` with the configured LLM if there is one (see [`Self::engine_with_llm`]).
    pub fn with_configured_llm(&self, engine: Engine) -> Result<Engine> {
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

/// The named local model, if a name was given. Errors on an unknown name.
pub fn local_model(name: Option<&str>) -> Result<Option<membank_embed::KnownModel>> {
    name.map(membank_embed::KnownModel::from_name).transpose().map_err(Into::into)
}
