//! A small pool of synchronous PostgreSQL connections, each with its own prepared
//! statements, and the transaction wrapper every query of the backend goes through.
//!
//! Why our own pool: the `Store` trait is synchronous, so the synchronous `postgres`
//! client fits it, and what a pool must do here is little (hand out an idle connection,
//! open one more up to a bound, drop broken ones); `r2d2` would add a crate and a thread
//! for that. Each connection keeps the statements it has prepared, keyed by their SQL:
//! without them every query would cost a second round trip (parse and describe) and the
//! server would plan it afresh each time.
//!
//! It deliberately does no retrying: a statement that fails because the server went away
//! fails the operation (the connection is dropped, the next operation opens a new one), so
//! a write is never applied twice behind the caller's back.
//!
//! What a fault leaves behind is cleared without restarting the process: a connection the
//! server closed, or whose session a FATAL error ended, is dropped rather than returned;
//! and when an idle connection turns out dead at BEGIN, every other idle one (opened
//! before the same restart, most likely) is dropped with it, so the operations after a
//! coordinator's restart open fresh connections instead of each failing on a stale one.
//! While a server is down, opening a connection fails within the URL's `connect_timeout`
//! (`PgStore::open_with` sets 5 s when the URL names none).

use std::collections::HashMap;
use std::sync::{Condvar, Mutex};
use std::time::Duration;

use postgres::error::SqlState;
use postgres::types::ToSql;
use postgres::{Client, IsolationLevel, Row, RowIter, Statement};

use super::error::PgError;
use crate::StoreError;

/// How long an operation waits for a connection when all are busy.
const WAIT: Duration = Duration::from_secs(30);

/// The connections of one store handle.
pub(super) struct Pool {
    config: postgres::Config,
    /// TLS as the URL's `sslmode` asked (`tls.rs`).
    tls: tokio_postgres_rustls::MakeRustlsConnect,
    max: usize,
    state: Mutex<State>,
    freed: Condvar,
}

struct State {
    idle: Vec<Conn>,
    open: usize,
}

/// One connection and the statements prepared on it.
pub(super) struct Conn {
    client: Client,
    statements: HashMap<String, Statement>,
}

impl Pool {
    /// A pool of at most `max` connections (at least one) to the server `config` names.
    /// Nothing is opened yet.
    pub(super) fn new(config: postgres::Config, max: usize, tls: tokio_postgres_rustls::MakeRustlsConnect) -> Self {
        Self {
            config,
            tls,
            max: max.max(1),
            state: Mutex::new(State { idle: Vec::new(), open: 0 }),
            freed: Condvar::new(),
        }
    }

    fn take(&self) -> Result<Conn, StoreError> {
        let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        let deadline = std::time::Instant::now() + WAIT;
        loop {
            while let Some(conn) = state.idle.pop() {
                if !conn.client.is_closed() {
                    return Ok(conn);
                }
                state.open -= 1;
            }
            if state.open < self.max {
                state.open += 1;
                drop(state);
                return match self.config.connect(self.tls.clone()) {
                    Ok(client) => Ok(Conn { client, statements: HashMap::new() }),
                    Err(err) => {
                        self.state.lock().unwrap_or_else(|e| e.into_inner()).open -= 1;
                        self.freed.notify_one();
                        Err(PgError::Client(err).into())
                    }
                };
            }
            let left = deadline.saturating_duration_since(std::time::Instant::now());
            if left.is_zero() {
                return Err(PgError::PoolExhausted { waited: WAIT, open: state.open }.into());
            }
            state = self.freed.wait_timeout(state, left).unwrap_or_else(|e| e.into_inner()).0;
        }
    }

    /// Drops a connection known to be dead (never handed out again) and frees its place.
    fn discard(&self, conn: Conn) {
        drop(conn);
        self.state.lock().unwrap_or_else(|e| e.into_inner()).open -= 1;
        self.freed.notify_one();
    }

    /// Drops every idle connection: one of them was found dead, and the others were opened
    /// before whatever killed it. Busy ones are judged when they come back.
    fn discard_idle(&self) {
        let idle = {
            let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
            let idle = std::mem::take(&mut state.idle);
            state.open -= idle.len();
            idle
        };
        if !idle.is_empty() {
            tracing::debug!(dropped = idle.len(), "dropped the idle PostgreSQL connections after one was found dead");
            drop(idle);
            self.freed.notify_all();
        }
    }

    fn give_back(&self, conn: Conn) {
        let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        if conn.client.is_closed() {
            state.open -= 1;
        } else {
            state.idle.push(conn);
        }
        drop(state);
        self.freed.notify_one();
    }

    /// Runs `f` in one read-only REPEATABLE READ transaction: one consistent snapshot, and
    /// the server refuses any write in it (the counterpart of SQLite's `query_only`).
    pub(super) fn read<T>(&self, f: impl FnOnce(&mut Tx<'_>) -> Result<T, StoreError>) -> Result<T, StoreError> {
        self.run(true, f)
    }

    /// Runs `f` in one READ COMMITTED transaction and commits it if `f` succeeds; an error
    /// (or a panic) rolls everything back.
    pub(super) fn write<T>(&self, f: impl FnOnce(&mut Tx<'_>) -> Result<T, StoreError>) -> Result<T, StoreError> {
        self.run(false, f)
    }

    fn run<T>(&self, read_only: bool, f: impl FnOnce(&mut Tx<'_>) -> Result<T, StoreError>) -> Result<T, StoreError> {
        let mut conn = self.take()?;
        let mut replaced = false;
        let result = loop {
            let error = {
                let Conn { client, statements } = &mut conn;
                let begun = if read_only {
                    client.build_transaction().isolation_level(IsolationLevel::RepeatableRead).read_only(true).start()
                } else {
                    client.transaction()
                };
                match begun {
                    Ok(inner) => {
                        let mut tx = Tx { inner, statements };
                        break f(&mut tx).and_then(|value| {
                            tx.inner.commit().map_err(PgError::from)?;
                            Ok(value)
                        });
                    }
                    Err(err) => err,
                }
            };
            // A connection the server closed while it sat idle (a restart, an idle timeout,
            // a failover) fails at BEGIN, before anything of the operation was sent: it is
            // replaced once. A failure later is the operation's and is never retried.
            // The server's FATAL "terminating connection" can arrive as BEGIN's error before
            // the client has marked itself closed: that connection is as dead.
            let shut_down = [SqlState::ADMIN_SHUTDOWN, SqlState::CRASH_SHUTDOWN, SqlState::CANNOT_CONNECT_NOW];
            let dead = conn.client.is_closed()
                || ends_session(&error)
                || error.code().is_some_and(|code| shut_down.contains(code));
            if replaced || !dead {
                if dead {
                    self.discard(conn);
                    return Err(PgError::from(error).into());
                }
                break Err(PgError::from(error).into());
            }
            replaced = true;
            // The other idle connections were most likely cut off by the same restart.
            self.discard_idle();
            let fresh = match self.take() {
                Ok(fresh) => fresh,
                Err(err) => {
                    self.discard(conn);
                    return Err(err);
                }
            };
            self.discard(std::mem::replace(&mut conn, fresh));
        };
        // A FATAL error during the operation (the server shutting down or crashing) ended
        // this connection's session even if the client has not yet seen the socket close:
        // it must not go back to the pool.
        if result.as_ref().is_err_and(session_ended) {
            self.discard(conn);
        } else {
            self.give_back(conn);
        }
        result
    }

    /// Runs plain SQL outside any transaction of ours (migrations take their own).
    pub(super) fn with_client<T>(&self, f: impl FnOnce(&mut Client) -> Result<T, StoreError>) -> Result<T, StoreError> {
        let mut conn = self.take()?;
        let result = f(&mut conn.client);
        // Statements prepared before a schema change may describe old tables.
        conn.statements.clear();
        self.give_back(conn);
        result
    }
}

/// Whether `err` ended the connection's session: the client saw it close, or the server
/// sent a FATAL or PANIC error (after which it closes the connection). Citus passes a
/// worker's FATAL on as an ERROR of the coordinator's, which leaves our session intact.
fn ends_session(err: &postgres::Error) -> bool {
    use postgres::error::Severity;
    err.is_closed()
        || err.as_db_error().is_some_and(|db| matches!(db.parsed_severity(), Some(Severity::Fatal | Severity::Panic)))
}

/// [`ends_session`] for an operation's error, which carries the client's error inside.
fn session_ended(err: &StoreError) -> bool {
    let pg = match err {
        StoreError::Postgres(pg) => Some(pg),
        StoreError::Unavailable(source) => source.downcast_ref::<PgError>(),
        _ => None,
    };
    matches!(pg, Some(PgError::Client(client)) if ends_session(client))
}

/// One transaction on a pooled connection, with that connection's prepared statements.
pub(super) struct Tx<'a> {
    pub(super) inner: postgres::Transaction<'a>,
    statements: &'a mut HashMap<String, Statement>,
}

/// Positional parameters of a statement.
pub(super) type Params<'p> = [&'p (dyn ToSql + Sync)];

impl Tx<'_> {
    /// The prepared statement for `sql`, preparing it on first use on this connection.
    pub(super) fn statement(&mut self, sql: &str) -> Result<Statement, StoreError> {
        if let Some(statement) = self.statements.get(sql) {
            return Ok(statement.clone());
        }
        let statement = self.inner.prepare(sql).map_err(PgError::from)?;
        self.statements.insert(sql.to_owned(), statement.clone());
        Ok(statement)
    }

    pub(super) fn query(&mut self, sql: &str, params: &Params<'_>) -> Result<Vec<Row>, StoreError> {
        let statement = self.statement(sql)?;
        Ok(self.inner.query(&statement, params).map_err(PgError::from)?)
    }

    pub(super) fn query_opt(&mut self, sql: &str, params: &Params<'_>) -> Result<Option<Row>, StoreError> {
        let statement = self.statement(sql)?;
        Ok(self.inner.query_opt(&statement, params).map_err(PgError::from)?)
    }

    pub(super) fn query_one(&mut self, sql: &str, params: &Params<'_>) -> Result<Row, StoreError> {
        let statement = self.statement(sql)?;
        Ok(self.inner.query_one(&statement, params).map_err(PgError::from)?)
    }

    pub(super) fn execute(&mut self, sql: &str, params: &Params<'_>) -> Result<u64, StoreError> {
        let statement = self.statement(sql)?;
        Ok(self.inner.execute(&statement, params).map_err(PgError::from)?)
    }

    /// Rows one at a time, as the server sends them (exports stream in constant memory).
    pub(super) fn query_iter<'s>(&'s mut self, sql: &str, params: &'s Params<'s>) -> Result<RowIter<'s>, StoreError> {
        let statement = self.statement(sql)?;
        Ok(self.inner.query_raw(&statement, params.iter().copied()).map_err(PgError::from)?)
    }
}

impl Drop for Pool {
    /// Closes the idle connections on a thread of its own: a synchronous `postgres::Client`
    /// drives its connection with a runtime of its own, which cannot run on a thread of an
    /// async runtime, and the last handle of a store is often dropped on one (a server's
    /// state at shutdown). Dropped there, each client would panic.
    fn drop(&mut self) {
        let idle = std::mem::take(&mut self.state.get_mut().unwrap_or_else(|e| e.into_inner()).idle);
        if idle.is_empty() {
            return;
        }
        let closing = std::thread::spawn(move || {
            for conn in idle {
                if let Err(err) = conn.client.close() {
                    tracing::debug!(error = %err, "closing a PostgreSQL connection failed");
                }
            }
        });
        if closing.join().is_err() {
            tracing::warn!("closing the PostgreSQL connections panicked");
        }
    }
}
