//! Why talking to PostgreSQL failed, and which of those failures mean "the database cannot
//! be reached now" rather than "the database refused this".
//!
//! A distributed deployment meets the first kind as a matter of course: a Citus worker
//! stops, the coordinator restarts, a shard moves. Those are told apart here, once, so the
//! store answers them as [`StoreError::Unavailable`] (the server's 503
//! `storage_unavailable`, a client's cue to retry) instead of as an internal error. The
//! rule reads only the error's kind, its SQLSTATE and, for the one code Citus uses for
//! every error a worker's connection gave without one (`XX000`), its message; it never
//! retries anything (see `pool.rs`).

use crate::StoreError;

/// Why talking to PostgreSQL failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum PgError {
    /// The server refused a statement, failed, or could not be reached (its message says
    /// which; the SQLSTATE is in the source).
    #[error(transparent)]
    Client(#[from] postgres::Error),
    /// Every connection of the pool stayed busy for the whole wait: the server is
    /// overloaded or the pool is too small for the load (`PgOptions::max_connections`).
    #[error("no database connection became free within {waited:?} ({open} open)")]
    PoolExhausted {
        /// How long the operation waited.
        waited: std::time::Duration,
        /// Connections open meanwhile.
        open: usize,
    },
}

impl PgError {
    /// True when the failure is the connection's, not the statement's: the server (or a
    /// Citus node behind it) could not be reached, went away, is starting or stopping, has
    /// no connection slot left, or no pooled connection became free in time. Retrying the
    /// operation later can succeed; nothing about the request was wrong.
    pub fn is_connection_failure(&self) -> bool {
        match self {
            PgError::PoolExhausted { .. } => true,
            PgError::Client(err) => client_connection_failure(err),
        }
    }
}

/// The client's side of [`PgError::is_connection_failure`].
fn client_connection_failure(err: &postgres::Error) -> bool {
    if err.is_closed() {
        return true;
    }
    if let Some(db) = err.as_db_error() {
        return connection_failure_state(db.code().code(), db.message());
    }
    // The client library's own failures carry no SQLSTATE; its kinds are told apart by
    // their (fixed) descriptions: connecting (refused, timed out, no route), reading or
    // writing the socket, and waiting for the server. Parse, encode and conversion
    // errors are not the connection's.
    const CONNECTION_KINDS: [&str; 3] =
        ["error connecting to server", "error communicating with the server", "timeout waiting for server"];
    if CONNECTION_KINDS.contains(&err.to_string().as_str()) {
        return true;
    }
    // A TLS handshake the server broke off (it went away mid-handshake) is the
    // connection's too; a certificate refused is configuration, and stays an error.
    let mut cause = std::error::Error::source(err);
    while let Some(inner) = cause {
        if let Some(io) = inner.downcast_ref::<std::io::Error>() {
            use std::io::ErrorKind::*;
            if matches!(
                io.kind(),
                ConnectionRefused
                    | ConnectionReset
                    | ConnectionAborted
                    | NotConnected
                    | BrokenPipe
                    | UnexpectedEof
                    | TimedOut
            ) {
                return true;
            }
        }
        cause = inner.source();
    }
    false
}

/// What Citus says, under SQLSTATE `XX000`, when a worker's connection failed without a
/// code of its own: libpq's messages for a connection that broke (Citus passes them on
/// as the error's text), Citus's own for one it could not open, and its two for a commit
/// a worker's connection failed under: the node went away after the transaction's
/// statements and before its `COMMIT` was answered (the worker's warning, "failed to
/// commit transaction on …", goes to the client as a notice; the error is the shard's, or
/// the critical connection's). Citus would say the first of those also for a deferred
/// constraint failing at commit; membank's schema defers none. Lower case.
const REMOTE_CONNECTION_FAILURES: [&str; 14] = [
    "connection to the remote node",
    "could not establish any connections to the node",
    "connection establishment for node",
    "server closed the connection unexpectedly",
    "connection not open",
    "no connection to the server",
    "could not receive data from server",
    "could not send data to server",
    "ssl syscall error",
    "ssl connection has been closed unexpectedly",
    "terminating connection",
    "connection refused",
    "could not commit transaction for shard",
    "failure on connection marked as essential",
];

/// Whether a server error with SQLSTATE `code` and `message` is a connection's failure:
/// class 08 (connection exception: Citus reports a worker it cannot reach as 08006),
/// `admin_shutdown`, `crash_shutdown` and `cannot_connect_now` (57P01-57P03: a node
/// stopping, crashed, or still starting; Citus passes a worker's on as they are),
/// `too_many_connections` (53300), and Citus's `XX000` whose text says a worker's
/// connection failed ([`REMOTE_CONNECTION_FAILURES`]).
pub(crate) fn connection_failure_state(code: &str, message: &str) -> bool {
    if code.starts_with("08") || matches!(code, "57P01" | "57P02" | "57P03" | "53300") {
        return true;
    }
    if code == "XX000" {
        let message = message.to_lowercase();
        return REMOTE_CONNECTION_FAILURES.iter().any(|phrase| message.contains(phrase));
    }
    false
}

impl From<postgres::Error> for StoreError {
    fn from(err: postgres::Error) -> Self {
        PgError::Client(err).into()
    }
}

impl From<PgError> for StoreError {
    /// The one place a PostgreSQL failure becomes a store error: a connection's failure is
    /// [`StoreError::Unavailable`], anything else [`StoreError::Postgres`].
    fn from(err: PgError) -> Self {
        if err.is_connection_failure() { StoreError::Unavailable(Box::new(err)) } else { StoreError::Postgres(err) }
    }
}

#[cfg(test)]
mod tests {
    use std::io::{Read, Write};
    use std::net::TcpListener;

    use super::*;

    #[test]
    fn connection_states_are_told_from_statement_errors() {
        for (code, message) in [
            (
                "08006",
                "connection to the remote node postgres@127.0.0.1:5433 failed with the following error: Connection refused",
            ),
            ("08001", "could not connect"),
            ("08003", "connection does not exist"),
            ("57P01", "terminating connection due to administrator command"),
            ("57P02", "terminating connection because of crash of another server process"),
            ("57P03", "the database system is starting up"),
            ("53300", "sorry, too many clients already"),
            (
                "XX000",
                "server closed the connection unexpectedly\n\tThis probably means the server terminated abnormally",
            ),
            ("XX000", "SSL SYSCALL error: EOF detected"),
            ("XX000", "connection not open"),
            ("XX000", "Connection to the remote node localhost:9701 failed"),
            // What a commit in flight gets when its worker stops (seen on Citus 12.1 with
            // `citus-dev.sh node-stop`; the fault tests reproduce it).
            ("XX000", "could not commit transaction for shard 102014 on at least one active node"),
            ("XX000", "failure on connection marked as essential: 127.0.0.1:25956"),
        ] {
            assert!(connection_failure_state(code, message), "{code} {message:?} should be a connection failure");
        }
        for (code, message) in [
            ("23505", "duplicate key value violates unique constraint"),
            ("40001", "could not serialize access due to concurrent update"),
            ("42P01", "relation \"memories\" does not exist"),
            ("53100", "could not extend file: No space left on device"),
            ("57014", "canceling statement due to statement timeout"),
            ("XX000", "cannot modify a distributed table's shard placement"),
            ("XX000", "could not find valid entry for shard 102008"),
            ("28P01", "password authentication failed for user \"membank\""),
        ] {
            assert!(
                !connection_failure_state(code, message),
                "{code} {message:?} is the statement's, not the connection's"
            );
        }
    }

    fn config(port: u16) -> postgres::Config {
        let mut config = postgres::Config::new();
        config.host("127.0.0.1").port(port).user("membank").dbname("membank");
        config.connect_timeout(std::time::Duration::from_secs(5));
        config
    }

    fn store_error(err: postgres::Error) -> StoreError {
        err.into()
    }

    /// Connecting must fail here; its error.
    fn connect_error(port: u16) -> postgres::Error {
        match config(port).connect(postgres::NoTls) {
            Ok(_) => panic!("connected to a server that should have refused"),
            Err(err) => err,
        }
    }

    #[test]
    fn a_refused_connection_is_unavailable() {
        // A port that was just free: nothing listens on it.
        let port = TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
        let err = connect_error(port);
        assert!(matches!(store_error(err), StoreError::Unavailable(_)));
    }

    #[test]
    fn a_server_that_hangs_up_is_unavailable() {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let server = std::thread::spawn(move || {
            let (mut stream, _) = listener.accept().unwrap();
            let mut startup = [0u8; 8];
            let _ = stream.read(&mut startup);
            // Gone without a word, as a node killed mid-handshake.
        });
        let err = connect_error(port);
        server.join().unwrap();
        assert!(matches!(store_error(err), StoreError::Unavailable(_)));
    }

    /// A server that answers the startup message with one `ErrorResponse` of `code`, as
    /// PostgreSQL does while it starts, stops or has no slot left.
    fn refusing_server(code: &'static str, message: &'static str) -> (u16, std::thread::JoinHandle<()>) {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let server = std::thread::spawn(move || {
            let (mut stream, _) = listener.accept().unwrap();
            let mut length = [0u8; 4];
            stream.read_exact(&mut length).unwrap();
            let mut startup = vec![0u8; u32::from_be_bytes(length) as usize - 4];
            stream.read_exact(&mut startup).unwrap();
            let mut fields = Vec::new();
            for (tag, value) in [(b'S', "FATAL"), (b'V', "FATAL"), (b'C', code), (b'M', message)] {
                fields.push(tag);
                fields.extend_from_slice(value.as_bytes());
                fields.push(0);
            }
            fields.push(0);
            let mut reply = vec![b'E'];
            reply.extend_from_slice(&(fields.len() as u32 + 4).to_be_bytes());
            reply.extend_from_slice(&fields);
            stream.write_all(&reply).unwrap();
        });
        (port, server)
    }

    #[test]
    fn a_server_starting_up_or_full_is_unavailable_and_a_refused_login_is_not() {
        for (code, message, unavailable) in [
            ("57P03", "the database system is starting up", true),
            ("53300", "sorry, too many clients already", true),
            ("28000", "no pg_hba.conf entry for host", false),
        ] {
            let (port, server) = refusing_server(code, message);
            let err = connect_error(port);
            server.join().unwrap();
            assert_eq!(err.code().map(|c| c.code()), Some(code), "{err:?}");
            let err = store_error(err);
            assert_eq!(matches!(err, StoreError::Unavailable(_)), unavailable, "{code}: {err:?}");
            assert_eq!(matches!(err, StoreError::Postgres(_)), !unavailable, "{code}: {err:?}");
        }
    }

    #[test]
    fn a_pool_that_stays_busy_is_unavailable() {
        let err: StoreError = PgError::PoolExhausted { waited: std::time::Duration::from_secs(30), open: 16 }.into();
        assert!(matches!(err, StoreError::Unavailable(_)));
    }
}
