//! The server's state and configuration: the engine, the key store, limits, the rate
//! limiters (per key, and failed authentications per client address), metrics and the
//! background maintenance settings. The router is a function of this state, so tests build one with
//! a temporary database and a test embedder and call it without a socket.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use membank_engine::Engine;
use membank_engine::core::TenantId;
use membank_engine::core::limits::{MAX_PAGE_SIZE, MAX_RECALL_K, MAX_TEXT_BYTES};
use membank_store::Backend;

use crate::error::ApiError;
use crate::metrics::Metrics;
use crate::ratelimit::{AuthFailureLimit, FailureLimiter, RateLimit, RateLimiter, TrustedProxies};
use crate::schedule::MaintenanceConfig;

/// Whether requests must carry an API key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AuthMode {
    /// Every `/v1` and `/mcp` request needs `Authorization: Bearer KEY`.
    Keys,
    /// No keys exist: anyone who can reach the socket acts for the configured tenant.
    /// Only allowed on loopback addresses (checked by [`crate::serve::check_bind`]), and
    /// only requests addressed to a loopback name (`Host`) from no other web origin
    /// (`Origin`) are answered, so a web page cannot reach it by DNS rebinding.
    LoopbackOpen,
}

/// Input limits, documented in the README. Each is at most the engine's own limit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Largest request body, in bytes.
    pub body_bytes: usize,
    /// Largest text field, in bytes.
    pub text_bytes: usize,
    /// Largest `k` of a recall.
    pub k: usize,
    /// Largest page of a list or event query.
    pub page_size: usize,
    /// Most items in one batch request (turns batch, ids of `used`).
    pub batch: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            body_bytes: 1024 * 1024,
            text_bytes: MAX_TEXT_BYTES,
            k: MAX_RECALL_K,
            page_size: MAX_PAGE_SIZE,
            batch: 100,
        }
    }
}

/// Settings of the server, built by the binary from its configuration.
#[derive(Debug, Clone)]
pub struct ServerConfig {
    /// Tenant of the no-auth mode, and the default tenant of admin keys.
    pub tenant: TenantId,
    /// Keys required or loopback-open.
    pub auth: AuthMode,
    /// Input limits.
    pub limits: Limits,
    /// Per-key request rate.
    pub rate_limit: RateLimit,
    /// Failed authentications allowed per client address.
    pub auth_failures: AuthFailureLimit,
    /// Reverse proxies whose `X-Forwarded-For` names the client (none by default).
    pub trusted_proxies: TrustedProxies,
    /// How long a connection may wait on its client.
    pub timeouts: crate::serve::Timeouts,
    /// Background maintenance (started by [`crate::serve::serve`] when enabled).
    pub maintenance: MaintenanceConfig,
    /// The query cache the engine's embedder answers repeated queries from, if any: its
    /// counters are in `/metrics`.
    pub query_cache: Option<Arc<membank_embed::QueryCache>>,
}

impl ServerConfig {
    /// Defaults for `tenant` and `auth` (background maintenance on, once a day per user).
    pub fn new(tenant: TenantId, auth: AuthMode) -> Self {
        Self {
            tenant,
            auth,
            limits: Limits::default(),
            rate_limit: RateLimit::default(),
            auth_failures: AuthFailureLimit::default(),
            trusted_proxies: TrustedProxies::default(),
            timeouts: crate::serve::Timeouts::default(),
            maintenance: MaintenanceConfig::default(),
            query_cache: None,
        }
    }
}

pub(crate) struct Inner {
    pub engine: Arc<Engine>,
    pub store: Arc<dyn Backend>,
    pub config: ServerConfig,
    pub metrics: Metrics,
    pub limiter: RateLimiter,
    pub auth_failures: FailureLimiter,
    pub ready: AtomicBool,
    /// The users a maintenance cycle is running for: one at a time per user.
    pub maintaining: std::sync::Mutex<std::collections::HashSet<(String, String)>>,
    /// Cycles that may run at once over all users (half the cores, at least one), so
    /// maintenance never takes every core from the requests.
    pub cycle_slots: Arc<tokio::sync::Semaphore>,
}

/// The cores' share maintenance may use at once: half of them, at least one.
fn cycle_slots() -> usize {
    std::thread::available_parallelism().map_or(1, |n| (n.get() / 2).max(1))
}

/// A user's maintenance reservation ([`AppState::begin_maintenance`]): while it lives, no
/// other cycle runs for that user; dropping it frees the user.
pub struct MaintenanceGuard {
    state: AppState,
    key: (String, String),
}

impl Drop for MaintenanceGuard {
    fn drop(&mut self) {
        self.state.inner.maintaining.lock().unwrap_or_else(|e| e.into_inner()).remove(&self.key);
    }
}

/// Shared state of all handlers (cheap to clone).
#[derive(Clone)]
pub struct AppState {
    pub(crate) inner: Arc<Inner>,
}

impl std::fmt::Debug for AppState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AppState").field("config", &self.inner.config).finish_non_exhaustive()
    }
}

impl AppState {
    /// Reserves `scope`'s user for one maintenance cycle; `None` while another cycle runs
    /// for the user (the REST answer is then 409, the scheduler skips the user this pass).
    /// An embedding application may hold one to keep maintenance off a user meanwhile.
    pub fn begin_maintenance(&self, scope: &membank_engine::core::Scope) -> Option<MaintenanceGuard> {
        let key = (scope.tenant.as_str().to_string(), scope.user.as_str().to_string());
        let mut running = self.inner.maintaining.lock().unwrap_or_else(|e| e.into_inner());
        running.insert(key.clone()).then(|| MaintenanceGuard { state: self.clone(), key })
    }

    /// State over an engine and the store it uses (for keys, integrity checks and cache
    /// metrics): a SQLite file or PostgreSQL.
    /// It starts ready; call [`AppState::set_ready`] to hold `/readyz` back during warm-up.
    pub fn new(engine: Arc<Engine>, store: Arc<dyn Backend>, config: ServerConfig) -> Self {
        let limiter = RateLimiter::new(config.rate_limit);
        let auth_failures = FailureLimiter::new(config.auth_failures);
        Self {
            inner: Arc::new(Inner {
                engine,
                store,
                config,
                metrics: Metrics::default(),
                limiter,
                auth_failures,
                ready: AtomicBool::new(true),
                maintaining: Default::default(),
                cycle_slots: Arc::new(tokio::sync::Semaphore::new(cycle_slots())),
            }),
        }
    }

    /// Marks the server ready (or not) for `/readyz`.
    pub fn set_ready(&self, ready: bool) {
        self.inner.ready.store(ready, Ordering::SeqCst);
    }

    /// Whether the server said it is ready.
    pub fn is_ready(&self) -> bool {
        self.inner.ready.load(Ordering::SeqCst)
    }

    /// The configuration in force.
    pub fn config(&self) -> &ServerConfig {
        &self.inner.config
    }

    /// The metrics.
    pub fn metrics(&self) -> &Metrics {
        &self.inner.metrics
    }

    /// The engine.
    pub fn engine(&self) -> &Arc<Engine> {
        &self.inner.engine
    }

    /// The store (keys, integrity check).
    pub fn store(&self) -> &Arc<dyn Backend> {
        &self.inner.store
    }

    /// Runs a synchronous engine call on the blocking pool. A panic inside becomes a 500,
    /// never a dead server.
    pub async fn run<T, F>(&self, f: F) -> Result<T, ApiError>
    where
        T: Send + 'static,
        F: FnOnce(&Engine) -> Result<T, ApiError> + Send + 'static,
    {
        let engine = self.inner.engine.clone();
        match tokio::task::spawn_blocking(move || f(&engine)).await {
            Ok(result) => result,
            Err(err) => {
                tracing::error!(error = %err, "engine task failed");
                Err(ApiError::Internal)
            }
        }
    }
}
