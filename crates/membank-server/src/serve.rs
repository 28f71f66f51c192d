//! Running the HTTP server: `serve(listener, state, shutdown)` serves until `shutdown`
//! resolves, then stops accepting, lets in-flight requests finish, and returns, after
//! which the caller drops the state and with it the database connections. With
//! maintenance enabled it also runs the background scheduler ([`crate::maintenance`]),
//! which the same shutdown stops: `serve` returns only once the scheduler has exited, so
//! no cycle outlives it. Binding rules live here too: without keys only loopback addresses
//! may be bound.

use std::future::Future;
use std::net::SocketAddr;

use tokio_util::sync::CancellationToken;

use crate::state::AppState;

/// Why the server could not start or stopped abnormally.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ServeError {
    /// Caller's: no API keys exist and the address is not loopback.
    #[error(
        "refusing to listen on {0} without API keys: anyone who can reach it could read and change every memory. Create a key first (membank keys create --tenant T), or bind to 127.0.0.1"
    )]
    OpenNonLoopback(SocketAddr),
    /// The socket failed.
    #[error("server I/O failed: {0}")]
    Io(#[from] std::io::Error),
}

/// Checks that `addr` may be bound given whether keys exist.
pub fn check_bind(addr: SocketAddr, keys_exist: bool) -> Result<(), ServeError> {
    if keys_exist || addr.ip().is_loopback() { Ok(()) } else { Err(ServeError::OpenNonLoopback(addr)) }
}

/// Serves the router over `listener` until `shutdown` completes, then drains in-flight
/// requests (graceful shutdown). Background maintenance, when enabled, runs alongside and
/// stops on the same signal: the cycle in progress finishes, no further user is visited.
pub async fn serve(
    listener: tokio::net::TcpListener,
    state: AppState,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> Result<(), ServeError> {
    // One token for both: the signal cancels it, and so does a server that fails, so the
    // scheduler never runs on without the server.
    let stop = CancellationToken::new();
    let scheduler = crate::maintenance::spawn(state.clone(), stop.clone());
    let app = crate::rest::router(state);
    let signalled = stop.clone();
    // With each connection's peer address, so failed authentications count per client.
    let served = axum::serve(listener, app.into_make_service_with_connect_info::<SocketAddr>())
        .with_graceful_shutdown(async move {
            shutdown.await;
            signalled.cancel();
        })
        .await;
    stop.cancel();
    if let Some(scheduler) = scheduler
        && let Err(err) = scheduler.await
    {
        tracing::error!(error = %err, "the maintenance scheduler failed");
    }
    served?;
    Ok(())
}

/// Resolves on Ctrl-C or SIGTERM.
pub async fn shutdown_signal() {
    let ctrl_c = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    #[cfg(unix)]
    let terminate = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut signal) => {
                signal.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    #[cfg(not(unix))]
    let terminate = std::future::pending::<()>();
    tokio::select! {
        _ = ctrl_c => {},
        _ = terminate => {},
    }
    tracing::info!("shutting down: draining in-flight requests");
}
