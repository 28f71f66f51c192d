//! Running the HTTP server: `serve(listener, state, shutdown)` serves until `shutdown`
//! resolves, then stops accepting, lets in-flight requests finish (for up to
//! [`Timeouts::shutdown`]), and returns, after
//! which the caller drops the state and with it the database connections. With
//! maintenance enabled it also runs the background scheduler ([`crate::maintenance`]),
//! which the same shutdown stops: `serve` returns only once the scheduler has exited, so
//! no cycle outlives it. Binding rules live here too: without keys only loopback addresses
//! may be bound.

use std::future::Future;
use std::io;
use std::net::SocketAddr;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

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

/// How long the server waits on a client, each bound in `[server]` of the configuration.
/// A client that sends nothing, trickles its request, or stops reading a response loses
/// its connection instead of holding it (and shutdown) forever.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Timeouts {
    /// A request's head (request line and headers) must arrive whole within this long from
    /// when the server starts waiting for it: when the connection opens, and after each
    /// response on a kept-alive connection, so this is the idle keep-alive bound too.
    pub header: Duration,
    /// A request's body must arrive whole within this long after its head (answered 400,
    /// then the connection is closed).
    pub body: Duration,
    /// The longest one write to the client may wait, for any response, streamed exports
    /// included: a client that stops reading for this long loses the connection.
    pub write: Duration,
    /// After a shutdown signal, connections still open after this long are dropped, so a
    /// client cannot keep the process from exiting.
    pub shutdown: Duration,
}

impl Default for Timeouts {
    fn default() -> Self {
        Self {
            header: Duration::from_secs(10),
            body: Duration::from_secs(30),
            write: Duration::from_secs(30),
            shutdown: Duration::from_secs(10),
        }
    }
}

/// The text of a body that did not arrive in time (it reaches the client in the 400).
const BODY_TIMEOUT: &str = "the request body did not arrive in time";

pin_project_lite::pin_project! {
    /// A request body that fails once its deadline passes.
    struct DeadlineBody<B> {
        #[pin]
        inner: B,
        #[pin]
        deadline: tokio::time::Sleep,
    }
}

impl<B> http_body::Body for DeadlineBody<B>
where
    B: http_body::Body,
    B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    type Data = B::Data;
    type Error = Box<dyn std::error::Error + Send + Sync>;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<http_body::Frame<Self::Data>, Self::Error>>> {
        let this = self.project();
        if let Poll::Ready(frame) = this.inner.poll_frame(cx) {
            return Poll::Ready(frame.map(|f| f.map_err(Into::into)));
        }
        match this.deadline.poll(cx) {
            Poll::Ready(()) => Poll::Ready(Some(Err(BODY_TIMEOUT.into()))),
            Poll::Pending => Poll::Pending,
        }
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> http_body::SizeHint {
        self.inner.size_hint()
    }
}

pin_project_lite::pin_project! {
    /// A connection whose writes fail once one has waited `limit` on the client.
    struct StallGuard<IO> {
        #[pin]
        io: IO,
        limit: Duration,
        stalled: Option<Pin<Box<tokio::time::Sleep>>>,
    }
}

impl<IO> StallGuard<IO> {
    /// `Pending` from a write: starts (or polls) the stall clock; an error once it ran out.
    fn stalled(
        stalled: &mut Option<Pin<Box<tokio::time::Sleep>>>,
        limit: Duration,
        cx: &mut Context<'_>,
    ) -> io::Result<()> {
        let sleep = stalled.get_or_insert_with(|| Box::pin(tokio::time::sleep(limit)));
        match sleep.as_mut().poll(cx) {
            Poll::Ready(()) => Err(io::Error::new(io::ErrorKind::TimedOut, "the client stopped reading")),
            Poll::Pending => Ok(()),
        }
    }
}

impl<IO: tokio::io::AsyncRead> tokio::io::AsyncRead for StallGuard<IO> {
    fn poll_read(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut tokio::io::ReadBuf<'_>) -> Poll<io::Result<()>> {
        self.project().io.poll_read(cx, buf)
    }
}

impl<IO: tokio::io::AsyncWrite> tokio::io::AsyncWrite for StallGuard<IO> {
    fn poll_write(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        let this = self.project();
        match this.io.poll_write(cx, buf) {
            Poll::Pending => match Self::stalled(this.stalled, *this.limit, cx) {
                Ok(()) => Poll::Pending,
                Err(err) => Poll::Ready(Err(err)),
            },
            ready => {
                *this.stalled = None;
                ready
            }
        }
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let this = self.project();
        match this.io.poll_write_vectored(cx, bufs) {
            Poll::Pending => match Self::stalled(this.stalled, *this.limit, cx) {
                Ok(()) => Poll::Pending,
                Err(err) => Poll::Ready(Err(err)),
            },
            ready => {
                *this.stalled = None;
                ready
            }
        }
    }

    fn is_write_vectored(&self) -> bool {
        self.io.is_write_vectored()
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = self.project();
        match this.io.poll_flush(cx) {
            Poll::Pending => match Self::stalled(this.stalled, *this.limit, cx) {
                Ok(()) => Poll::Pending,
                Err(err) => Poll::Ready(Err(err)),
            },
            ready => {
                *this.stalled = None;
                ready
            }
        }
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        self.project().io.poll_shutdown(cx)
    }
}

/// Whether an accept error concerns only the one connection (try the next at once) rather
/// than the listener or the process (back off briefly: the file-descriptor table is full).
fn is_connection_error(err: &io::Error) -> bool {
    matches!(
        err.kind(),
        io::ErrorKind::ConnectionRefused | io::ErrorKind::ConnectionAborted | io::ErrorKind::ConnectionReset
    )
}

/// Serves the router over `listener` until `shutdown` completes, then stops accepting,
/// lets in-flight requests finish for up to [`Timeouts::shutdown`], and drops what is still
/// open. Each connection is HTTP/1.1 under the configured [`Timeouts`]. Background
/// maintenance, when enabled, runs alongside and stops on the same signal: the cycle in
/// progress finishes, no further user is visited.
pub async fn serve(
    listener: tokio::net::TcpListener,
    state: AppState,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> Result<(), ServeError> {
    // One token for both: the signal cancels it, and so does a server that fails, so the
    // scheduler never runs on without the server.
    let stop = CancellationToken::new();
    let scheduler = crate::maintenance::spawn(state.clone(), stop.clone());
    let timeouts = state.config().timeouts;
    let app = crate::rest::router(state);
    let mut http = hyper::server::conn::http1::Builder::new();
    http.timer(hyper_util::rt::TokioTimer::new()).header_read_timeout(timeouts.header);
    let graceful = hyper_util::server::graceful::GracefulShutdown::new();
    let mut connections = tokio::task::JoinSet::new();
    let mut shutdown = std::pin::pin!(shutdown);
    let served: Result<(), ServeError> = loop {
        let (stream, peer) = tokio::select! {
            () = &mut shutdown => break Ok(()),
            () = stop.cancelled() => break Ok(()),
            accepted = listener.accept() => match accepted {
                Ok(accepted) => accepted,
                Err(err) if is_connection_error(&err) => continue,
                Err(err) => {
                    tracing::warn!(error = %err, "accepting a connection failed; retrying in 100 ms");
                    tokio::time::sleep(Duration::from_millis(100)).await;
                    continue;
                }
            },
        };
        while connections.try_join_next().is_some() {}
        let _ = stream.set_nodelay(true);
        let io = hyper_util::rt::TokioIo::new(StallGuard { io: stream, limit: timeouts.write, stalled: None });
        let app = app.clone();
        // With each connection's peer address, so failed authentications count per client.
        let service = hyper::service::service_fn(move |request: axum::http::Request<hyper::body::Incoming>| {
            let mut request = request.map(|body| {
                axum::body::Body::new(DeadlineBody { inner: body, deadline: tokio::time::sleep(timeouts.body) })
            });
            request.extensions_mut().insert(axum::extract::ConnectInfo(peer));
            tower::ServiceExt::oneshot(app.clone(), request)
        });
        let connection = graceful.watch(http.serve_connection(io, service));
        connections.spawn(async move {
            if let Err(err) = connection.await {
                tracing::debug!(error = %err, %peer, "connection ended with an error");
            }
        });
    };
    stop.cancel();
    drop(listener);
    tokio::select! {
        () = graceful.shutdown() => {}
        () = tokio::time::sleep(timeouts.shutdown) => {
            tracing::warn!(open = connections.len(), "shutdown deadline passed; dropping the connections still open");
        }
    }
    connections.shutdown().await;
    if let Some(scheduler) = scheduler
        && let Err(err) = scheduler.await
    {
        tracing::error!(error = %err, "the maintenance scheduler failed");
    }
    served
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
