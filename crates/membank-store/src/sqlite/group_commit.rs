//! Group commit: writes that wait for the writer connection at the same moment share one
//! transaction, so one `fsync` acknowledges all of them.
//!
//! With `synchronous = FULL` each commit waits for the disk (a few milliseconds). Every
//! recall that logs and strengthens what it returned writes, so under concurrent clients
//! the writer's commits, one at a time, capped the server: a strengthening recall ran at
//! half the rate of an inspection under 32 clients.
//!
//! How it works. Each write runs its own closure, on its own thread, in turn on the writer
//! connection (its lock orders them, as before), inside a `SAVEPOINT` of the open
//! transaction, which the first of them begins (`BEGIN IMMEDIATE`). After its closure, a
//! write looks whether others are queued for the connection: if so (and the transaction
//! holds fewer than [`MOST`] writes and is younger than [`LONGEST`]), it leaves the
//! transaction open for them and waits; otherwise it commits, for everyone in it, and
//! wakes them.
//!
//! What a caller sees is what a transaction of its own gave it:
//! - Its result is returned only after the `COMMIT` of its transaction succeeded, so an
//!   acknowledged write is on disk, as before.
//! - A closure that returns an error (or panics) has its savepoint rolled back and returns
//!   at once; the other writes of the transaction commit. A panic resumes after that.
//! - If the `COMMIT` fails, every write of the transaction gets that error (a copy: the
//!   same SQLite code and message), and none of them is stored.
//! - If a statement's error made SQLite roll the whole transaction back (a full disk, an
//!   I/O error), the writes that ran before it get an error saying so.
//! - A write sees the effects of those before it in the transaction, as it would have
//!   seen them committed one at a time in the same order.
//!
//! No closure runs on another thread than its caller's, so nothing here is `unsafe`.

use std::collections::HashMap;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::{Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use rusqlite::Connection;

use crate::StoreError;

/// The most writes one transaction takes.
const MOST: usize = 32;
/// The longest a transaction stays open for writes still queued.
const LONGEST: Duration = Duration::from_millis(5);

/// A write transaction in progress on the writer connection: the statements of one write
/// run on it, inside the write's own savepoint. (It dereferences to the connection.)
pub(crate) struct Tx<'c>(&'c Connection);

impl std::ops::Deref for Tx<'_> {
    type Target = Connection;

    fn deref(&self) -> &Connection {
        self.0
    }
}

/// The writes waiting for, or sharing, the writer's transaction.
pub(super) struct GroupCommit {
    state: Mutex<State>,
    /// Signalled when a transaction ended (committed, failed, or rolled back).
    ended: Condvar,
    /// [`LONGEST`], longer in tests that must not depend on how fast threads start.
    longest: Duration,
}

impl Default for GroupCommit {
    fn default() -> Self {
        Self { state: Mutex::default(), ended: Condvar::new(), longest: LONGEST }
    }
}

#[derive(Default)]
struct State {
    /// Writes waiting for the writer connection.
    queued: usize,
    /// The open transaction, if any.
    open: Option<Open>,
    /// Transactions begun so far (numbers them).
    begun: u64,
    /// How each ended transaction ended (`None`: committed), with how many of its writes
    /// still have to read that.
    ended: HashMap<u64, (Option<rusqlite::Error>, usize)>,
}

struct Open {
    number: u64,
    since: Instant,
    /// Writes of it whose closures succeeded, waiting for its end.
    waiting: usize,
    /// Writes run in it (succeeded or not).
    writes: usize,
}

impl GroupCommit {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Runs `f` in a write transaction on `writer`, shared with the other writes queued
    /// at the moment (see the module docs); returns once it is committed.
    pub(super) fn write<T>(
        &self,
        writer: &Mutex<Connection>,
        f: impl FnOnce(&Tx<'_>) -> Result<T, StoreError>,
    ) -> Result<T, StoreError> {
        self.lock().queued += 1;
        let conn = writer.lock().unwrap_or_else(|e| e.into_inner());
        let mut state = self.lock();
        state.queued -= 1;
        let number = match &mut state.open {
            Some(open) => open.number,
            None => {
                drop(state);
                conn.execute_batch("BEGIN IMMEDIATE")?;
                state = self.lock();
                state.begun += 1;
                let number = state.begun;
                state.open = Some(Open { number, since: Instant::now(), waiting: 0, writes: 0 });
                number
            }
        };
        drop(state);

        // The write itself, in its savepoint.
        let ran = conn
            .execute_batch("SAVEPOINT membank_write")
            .map_err(StoreError::from)
            .map(|()| catch_unwind(AssertUnwindSafe(|| f(&Tx(&conn)))));
        let ok = matches!(ran, Ok(Ok(Ok(_))));
        let mut state = self.lock();
        if conn.is_autocommit() {
            // SQLite rolled the transaction back (or it never took the savepoint): the
            // earlier writes of it are void.
            let waiting = state.open.take().map_or(0, |open| open.waiting);
            if waiting > 0 {
                state.ended.insert(number, (Some(rolled_back_by_another()), waiting));
            }
            self.ended.notify_all();
            drop(state);
            drop(conn);
            return settle(ran, ok.then(|| StoreError::Database(rolled_back_by_another())));
        }
        let settled = if ran.is_ok() {
            conn.execute_batch(if ok {
                "RELEASE membank_write"
            } else {
                "ROLLBACK TO membank_write; RELEASE membank_write"
            })
        } else {
            Ok(())
        };
        let queued = state.queued;
        let open = state.open.as_mut().expect("a transaction is open while its writes run");
        open.writes += 1;
        let stays_open = settled.is_ok() && queued > 0 && open.writes < MOST && open.since.elapsed() < self.longest;
        if stays_open {
            if ok {
                open.waiting += 1;
            }
            drop(conn);
            if !ok {
                drop(state);
                return settle(ran, None);
            }
            // Wait for whoever commits the transaction.
            loop {
                if let Some((result, left)) = state.ended.get_mut(&number) {
                    let failure = result.as_ref().map(copy);
                    *left -= 1;
                    if *left == 0 {
                        state.ended.remove(&number);
                    }
                    drop(state);
                    return settle(ran, failure.map(StoreError::Database));
                }
                state = self.ended.wait(state).unwrap_or_else(|e| e.into_inner());
            }
        }
        // This write ends the transaction, for everyone in it. The queue's lock is not
        // held while the commit waits for the disk (the connection's is).
        let waiting = state.open.take().map_or(0, |open| open.waiting);
        drop(state);
        let result = settled.and_then(|()| conn.execute_batch("COMMIT"));
        if result.is_err() && !conn.is_autocommit() {
            let _ = conn.execute_batch("ROLLBACK");
        }
        drop(conn);
        let failure = result.err();
        let mut state = self.lock();
        if waiting > 0 {
            state.ended.insert(number, (failure.as_ref().map(copy), waiting));
        }
        self.ended.notify_all();
        drop(state);
        settle(ran, if ok { failure.map(StoreError::Database) } else { None })
    }

    /// Ends an open transaction before the writer connection is used outside a write (a
    /// WAL checkpoint): commits it for the writes waiting in it. Call with the writer's
    /// lock held; writes queued meanwhile begin a new transaction.
    pub(super) fn end_open(&self, conn: &Connection) {
        let Some(open) = self.lock().open.take() else { return };
        let result = conn.execute_batch("COMMIT");
        if result.is_err() && !conn.is_autocommit() {
            let _ = conn.execute_batch("ROLLBACK");
        }
        let mut state = self.lock();
        if open.waiting > 0 {
            state.ended.insert(open.number, (result.err(), open.waiting));
        }
        self.ended.notify_all();
    }
}

/// A write's result: its closure's, unless its transaction failed (`failure`) or the
/// closure panicked (resumed here, after the transaction was settled).
fn settle<T>(
    ran: Result<std::thread::Result<Result<T, StoreError>>, StoreError>,
    failure: Option<StoreError>,
) -> Result<T, StoreError> {
    match ran {
        Err(err) => Err(err),
        Ok(Err(panic)) => std::panic::resume_unwind(panic),
        Ok(Ok(result)) => match failure {
            Some(err) => Err(err),
            None => result,
        },
    }
}

/// The error of a write whose transaction another write's error rolled back.
fn rolled_back_by_another() -> rusqlite::Error {
    rusqlite::Error::SqliteFailure(
        rusqlite::ffi::Error::new(rusqlite::ffi::SQLITE_ABORT),
        Some("the transaction was rolled back by an error of another write committed with it; nothing of this write was stored".into()),
    )
}

/// The same error again, for each write of a transaction that one error failed: SQLite's
/// code and message (`rusqlite::Error` is not `Clone`).
fn copy(err: &rusqlite::Error) -> rusqlite::Error {
    match err {
        rusqlite::Error::SqliteFailure(code, message) => rusqlite::Error::SqliteFailure(*code, message.clone()),
        other => rusqlite::Error::SqliteFailure(
            rusqlite::ffi::Error::new(rusqlite::ffi::SQLITE_ERROR),
            Some(other.to_string()),
        ),
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};

    use super::*;

    fn writer(dir: &tempfile::TempDir) -> Mutex<Connection> {
        let conn = Connection::open(dir.path().join("g.db")).unwrap();
        conn.execute_batch(
            "PRAGMA journal_mode = WAL; PRAGMA synchronous = FULL; CREATE TABLE t (thread INTEGER, n INTEGER)",
        )
        .unwrap();
        Mutex::new(conn)
    }

    /// Eight threads write at once; every third write fails after inserting and every
    /// seventh panics after inserting. What is stored is exactly the writes that returned
    /// Ok, each caller got its own result or panic, and some transactions held several
    /// writes.
    #[test]
    fn concurrent_writes_share_transactions_and_fail_alone() {
        let dir = tempfile::tempdir().unwrap();
        let writer = writer(&dir);
        // Grouping then depends on writes being queued, not on how fast threads start.
        let group = GroupCommit { longest: Duration::from_secs(3600), ..GroupCommit::default() };
        let succeeded = AtomicUsize::new(0);
        std::thread::scope(|scope| {
            for thread in 0..8i64 {
                let (writer, group, succeeded) = (&writer, &group, &succeeded);
                scope.spawn(move || {
                    for n in 0..40i64 {
                        let outcome = catch_unwind(AssertUnwindSafe(|| {
                            group.write(writer, |tx| {
                                tx.execute("INSERT INTO t VALUES (?1, ?2)", [thread, n])?;
                                // Hold the connection a little, so others queue.
                                std::thread::sleep(Duration::from_micros(200));
                                if n % 7 == 3 {
                                    panic!("write {thread}/{n} panics");
                                }
                                if n % 3 == 1 {
                                    return Err(StoreError::Conflict(format!("write {thread}/{n} fails")));
                                }
                                Ok((thread, n))
                            })
                        }));
                        match outcome {
                            Ok(Ok(value)) => {
                                assert_eq!(value, (thread, n));
                                assert!(n % 7 != 3 && n % 3 != 1);
                                succeeded.fetch_add(1, Ordering::Relaxed);
                            }
                            Ok(Err(StoreError::Conflict(message))) => {
                                assert_eq!(message, format!("write {thread}/{n} fails"));
                            }
                            Ok(Err(other)) => panic!("write {thread}/{n}: unexpected {other}"),
                            Err(panic) => {
                                assert_eq!(n % 7, 3, "only the panicking writes panic");
                                let message = panic.downcast_ref::<String>().cloned().unwrap_or_default();
                                assert_eq!(message, format!("write {thread}/{n} panics"));
                            }
                        }
                    }
                });
            }
        });
        let conn = writer.lock().unwrap();
        assert!(conn.is_autocommit(), "no transaction is left open");
        let stored: Vec<(i64, i64)> = conn
            .prepare("SELECT thread, n FROM t ORDER BY thread, n")
            .unwrap()
            .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap();
        let expected: Vec<(i64, i64)> =
            (0..8).flat_map(|t| (0..40).filter(|n| n % 7 != 3 && n % 3 != 1).map(move |n| (t, n))).collect();
        assert_eq!(stored, expected);
        assert_eq!(succeeded.load(Ordering::Relaxed), expected.len());
        let begun = group.lock().begun as usize;
        assert!(begun < 8 * 40, "every write had a transaction of its own ({begun})");
        assert!(group.lock().ended.is_empty(), "every ending was read");
    }

    /// When a write's statements end the shared transaction (as SQLite does itself after
    /// some errors: a full disk, an I/O error), the write that waited in it gets an error
    /// and nothing of either is stored; the writer goes on with a new transaction.
    #[test]
    fn a_transaction_rolled_back_under_a_waiting_write_fails_it_too() {
        let dir = tempfile::tempdir().unwrap();
        let writer = writer(&dir);
        let group = GroupCommit { longest: Duration::from_secs(3600), ..GroupCommit::default() };
        let rolling_back = Mutex::new(None);
        let (first, second) = std::thread::scope(|scope| {
            let (writer, group, rolling_back) = (&writer, &group, &rolling_back);
            let first = scope.spawn(move || {
                group.write(writer, |tx| {
                    tx.execute("INSERT INTO t VALUES (1, 1)", [])?;
                    // Wait until the second write is queued, so this one leaves the
                    // transaction open for it.
                    scope.spawn(move || {
                        let result = group.write(writer, |tx| {
                            tx.execute("INSERT INTO t VALUES (2, 2)", [])?;
                            tx.execute_batch("ROLLBACK")?;
                            Ok(())
                        });
                        *rolling_back.lock().unwrap() = Some(result);
                    });
                    while group.lock().queued == 0 {
                        std::thread::yield_now();
                    }
                    Ok(())
                })
            });
            let first = first.join().unwrap();
            // The second write ran after the first one left the transaction open.
            let second =
                group.write(writer, |tx| Ok(tx.query_row("SELECT count(*) FROM t", [], |r| r.get::<_, i64>(0))?));
            (first, second)
        });
        let aborted = |result: &Result<(), StoreError>| matches!(result, Err(StoreError::Database(rusqlite::Error::SqliteFailure(e, _))) if e.extended_code == rusqlite::ffi::SQLITE_ABORT);
        assert!(aborted(&first), "{first:?}");
        let rolling_back = rolling_back.lock().unwrap().take().expect("the second write ran");
        assert!(aborted(&rolling_back), "{rolling_back:?}");
        assert_eq!(second.unwrap(), 0, "nothing of the rolled-back transaction is stored");
        assert!(writer.lock().unwrap().is_autocommit());
        assert!(group.lock().ended.is_empty());
    }

    /// A lone write commits at once; a write sees the earlier ones of its transaction;
    /// and a checkpoint's `end_open` leaves nothing open.
    #[test]
    fn a_lone_write_commits_and_ending_an_idle_writer_is_harmless() {
        let dir = tempfile::tempdir().unwrap();
        let writer = writer(&dir);
        let group = GroupCommit::default();
        let n = group
            .write(&writer, |tx| {
                tx.execute("INSERT INTO t VALUES (1, 1)", [])?;
                Ok(tx.query_row("SELECT count(*) FROM t", [], |r| r.get::<_, i64>(0))?)
            })
            .unwrap();
        assert_eq!(n, 1);
        let conn = writer.lock().unwrap();
        assert!(conn.is_autocommit());
        group.end_open(&conn);
        assert!(conn.is_autocommit());
        drop(conn);
        // An error before any statement stores nothing and leaves the writer usable.
        let err = group.write(&writer, |_| Err::<(), _>(StoreError::Conflict("no".into()))).unwrap_err();
        assert!(matches!(err, StoreError::Conflict(_)));
        let count: i64 = writer.lock().unwrap().query_row("SELECT count(*) FROM t", [], |r| r.get(0)).unwrap();
        assert_eq!(count, 1);
    }
}
