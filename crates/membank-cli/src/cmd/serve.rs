//! `membank serve` and `membank mcp`: the binary's side of the server.
//! Opens the store, decides the auth mode (keys exist ⇒ keys required; none ⇒ loopback
//! only, said loudly), builds the engine, and hands a listener and a shutdown signal to
//! `membank_server::serve`. No HTTP logic lives here.

use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context as _, Result, bail};
use membank_engine::Engine;
use membank_engine::core::SystemClock;
use membank_server::{AppState, AuthFailureLimit, AuthMode, Limits, MaintenanceConfig, RateLimit, ServerConfig};

use crate::args::serve::{McpArgs, ServeArgs};
use crate::context::Context;
use crate::embedder::LazyEmbedder;
use crate::errors::UsageError;

fn limits(args: &ServeArgs) -> Result<Limits> {
    let engine = Limits::default();
    let check = |name: &str, value: usize, max: usize| {
        if value == 0 || value > max { bail!("{name} must be between 1 and {max}") } else { Ok(value) }
    };
    Ok(Limits {
        body_bytes: check("--body-limit", args.body_limit, 64 * 1024 * 1024)?,
        text_bytes: check("--text-limit", args.text_limit, engine.text_bytes)?,
        k: check("--max-k", args.max_k, engine.k)?,
        page_size: check("--max-page", args.max_page, engine.page_size)?,
        batch: check("--max-batch", args.max_batch, 10_000)?,
    })
}

/// `[maintenance]` as the server takes it; `--no-maintenance` wins over the file. The poll
/// period stays the server's default (at most the interval).
fn maintenance(ctx: &Context, args: &ServeArgs) -> MaintenanceConfig {
    let m = ctx.maintenance;
    MaintenanceConfig {
        enabled: m.enabled && !args.no_maintenance,
        interval: m.interval,
        every_turns: m.every_turns,
        per_pass: m.per_pass,
        ..MaintenanceConfig::default()
    }
}

/// The start-up line about background maintenance.
fn describe_maintenance(m: &MaintenanceConfig) -> String {
    if !m.enabled {
        return "background maintenance is off (POST /v1/users/{user}/maintain runs a cycle on demand)".into();
    }
    let turns = m.every_turns.map(|n| format!("; after {n} new turns")).unwrap_or_default();
    format!(
        "maintenance runs in the background for each user due (every {}{turns}; at most {} users per pass)",
        human_duration(m.interval),
        m.per_pass
    )
}

/// `86400s` → `1d`, `5400s` → `90m`: the largest unit that divides the duration.
fn human_duration(d: std::time::Duration) -> String {
    let secs = d.as_secs();
    match secs {
        0 => format!("{}ms", d.as_millis()),
        s if s % 86_400 == 0 => format!("{}d", s / 86_400),
        s if s % 3_600 == 0 => format!("{}h", s / 3_600),
        s if s % 60 == 0 => format!("{}m", s / 60),
        s => format!("{s}s"),
    }
}

fn runtime() -> Result<tokio::runtime::Runtime> {
    Ok(tokio::runtime::Builder::new_multi_thread().enable_all().build()?)
}

/// `membank serve`.
pub fn serve(ctx: &Context, args: ServeArgs) -> Result<()> {
    let store = ctx.open_store()?;
    let keys = store.live_key_count()?;
    // A usage mistake (exit 2), said once: why, and the two ways out with this command's flags.
    if membank_server::check_bind(args.addr, keys > 0).is_err() {
        return Err(UsageError(format!(
            "refusing to listen on {} without API keys: anyone who can reach it could read and change every memory. Create a key first with `membank keys create --tenant {}{}` (then serve with the same flags), or bind to 127.0.0.1",
            args.addr,
            crate::output::shell_word(ctx.tenant.as_str()),
            ctx.data_flags()
        ))
        .into());
    }
    let auth = if keys > 0 { AuthMode::Keys } else { AuthMode::LoopbackOpen };
    let mut config = ServerConfig::new(ctx.tenant.clone(), auth);
    config.limits = limits(&args)?;
    config.rate_limit = RateLimit { per_second: args.rate_limit.max(0.0), burst: args.rate_burst.max(1.0) };
    config.auth_failures = AuthFailureLimit {
        burst: args.auth_failure_burst.max(1.0),
        per_minute: args.auth_failure_rate.max(0.0),
        ..AuthFailureLimit::default()
    };
    config.maintenance = maintenance(ctx, &args);
    config.trusted_proxies = ctx.trusted_proxies.clone();
    config.timeouts = ctx.timeouts;
    // Repeated queries skip the model: each loaded model answers them from one cache.
    let query_cache_mb = args.query_cache_mb.unwrap_or(ctx.query_cache_mb);
    let query_cache = (query_cache_mb > 0).then(|| Arc::new(membank_embed::QueryCache::with_mb(query_cache_mb)));
    config.query_cache = query_cache.clone();
    let mut lazy = ctx.lazy_embedder(store.clone(), false);
    if let Some(cache) = query_cache {
        lazy = lazy.with_query_cache(cache);
    }
    let embedder: Arc<LazyEmbedder> = Arc::new(lazy);
    // Recall queries, and the texts of memories stored one request at a time (their vectors
    // and the importance probe's layer means), go through the micro-batcher.
    let queries = crate::embedder::micro_batched(embedder.clone(), args.query_batch, args.query_batch_wait_us)
        .context("cannot start the query batcher")?;
    let mut engine = Engine::new(store.clone(), queries, Arc::new(SystemClock), ctx.engine_config.clone())?
        .with_switch_advice(crate::language::switch_advice(ctx.switch_flags(), &ctx.db));
    // Chat and summarize need an LLM; without one the server still serves memory and
    // answers those routes 503 with how to configure one.
    let llm = match ctx.llm.client() {
        Ok(llm) => Some(llm),
        Err(err) if is_not_configured(&err) => None,
        Err(err) => return Err(err),
    };
    if let Some(llm) = llm {
        eprintln!("membank: companion chat and summaries use the LLM {}", llm.model());
        engine = engine.with_llm(llm);
    }
    let state = AppState::new(Arc::new(engine), store, config);
    state.set_ready(false);
    runtime()?.block_on(async move {
        let listener = tokio::net::TcpListener::bind(args.addr).await.with_context(|| format!("cannot listen on {}", args.addr))?;
        let local = listener.local_addr()?;
        if auth == AuthMode::LoopbackOpen {
            eprintln!("WARNING: no API keys exist, so membank runs WITHOUT AUTHENTICATION on {local} (loopback only).");
            eprintln!("WARNING: every local process can read and change every memory of tenant {:?}. Create a key with `membank keys create --tenant {}{}` and restart to require keys.", ctx.tenant.as_str(), crate::output::shell_word(ctx.tenant.as_str()), ctx.data_flags());
        } else {
            eprintln!("membank: {keys} API key(s) active; every /v1 and /mcp request needs Authorization: Bearer KEY");
        }
        eprintln!("membank: listening on http://{local} (REST /v1, MCP /mcp, OpenAPI /openapi.json, metrics /metrics)");
        eprintln!("membank: the web app is at http://{local}/{}", if auth == AuthMode::LoopbackOpen { "" } else { " (sign in with an API key)" });
        eprintln!("membank: {}", describe_maintenance(&state.config().maintenance));
        tokio::spawn(warm_up(embedder, state.clone()));
        membank_server::serve(listener, state, membank_server::serve::shutdown_signal()).await?;
        eprintln!("membank: stopped");
        anyhow::Ok(())
    })
}

/// Loads the model and embeds once as a document and once as a query (which makes the
/// int8 copy of the weights queries use), then marks the server ready. A model that fails to
/// load is retried by the embedder itself with backoff (requests that need it meanwhile
/// answer 503 "try again later"); this loop only asks every second whether it has loaded,
/// so `/readyz` turns 200 within a second of the load, whoever triggered it. A loaded model
/// that fails to embed (a remote endpoint down) is retried with its own doubling wait.
/// The task ends with the runtime, at shutdown.
async fn warm_up(embedder: Arc<LazyEmbedder>, state: AppState) {
    let mut failed_embeds = 0u32;
    loop {
        let lazy = embedder.clone();
        let warmed = tokio::task::spawn_blocking(move || {
            lazy.get()
                .and_then(|model| model.embed(&["warm up"]).and_then(|_| model.embed_query("warm up")))
                .map(|_| ())
        })
        .await;
        match warmed {
            Ok(Ok(())) => {
                state.set_ready(true);
                eprintln!("membank: the embedding model is loaded; ready");
                return;
            }
            Ok(Err(err)) if embedder.is_loaded() => {
                failed_embeds += 1;
                tracing::error!(error = %err, "the embedding model failed to embed; /readyz stays 503");
            }
            // A load failure: the embedder logged it and retries it on its own schedule.
            Ok(Err(_)) => {}
            Err(_) => return,
        }
        let wait = if embedder.is_loaded() {
            Duration::from_secs(1 << failed_embeds.min(6)).min(crate::embedder::MAX_RETRY)
        } else {
            Duration::from_secs(1)
        };
        tokio::time::sleep(wait).await;
    }
}

fn is_not_configured(err: &anyhow::Error) -> bool {
    matches!(err.downcast_ref::<membank_engine::EngineError>(), Some(membank_engine::EngineError::LlmNotConfigured))
}

/// `membank mcp`.
pub fn mcp(ctx: &Context, args: McpArgs) -> Result<()> {
    let scope = membank_server::mcp::stdio_scope(ctx.tenant.clone(), &args.user)?;
    let engine = Arc::new(ctx.engine()?);
    runtime()?.block_on(membank_server::mcp::serve_stdio(engine, scope))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_start_line_says_whether_and_how_often_maintenance_runs() {
        let on = MaintenanceConfig { every_turns: Some(50), ..MaintenanceConfig::default() };
        assert_eq!(
            describe_maintenance(&on),
            "maintenance runs in the background for each user due (every 1d; after 50 new turns; at most 100 users per pass)"
        );
        let hourly =
            MaintenanceConfig { interval: std::time::Duration::from_secs(5400), ..MaintenanceConfig::default() };
        assert!(describe_maintenance(&hourly).contains("(every 90m;"));
        let off = MaintenanceConfig { enabled: false, ..MaintenanceConfig::default() };
        assert!(describe_maintenance(&off).starts_with("background maintenance is off"));
    }
}
