//! Erased bytes leave the WAL even when a reader held an older snapshot during the erasure.
//!
//! After an erasure commits, the WAL still holds page images from before it, and SQLite
//! cannot checkpoint past a reader's snapshot: while a slow export (in this process or in
//! another) reads, `wal_checkpoint(TRUNCATE)` reports busy and the old text stays in
//! `-wal`. So an erasure is recorded as due a purge, durably, in the same transaction that
//! erases (`wal_purge.due`, counted up), and the purge is finished later by whoever gets
//! there first:
//! - the erasure itself, when no reader is in the way (a short wait, the writer held);
//! - else this thread, which every open store runs: it retries a few times a second while
//!   a purge is due in this process, and otherwise looks at the mark every few seconds, so
//!   a purge that another process (a `membank erase` beside a running `serve`) or a crash
//!   left due is finished too, at the latest when the store next opens.
//!
//! A purge is finished by a checkpoint that copies the whole WAL into the database and
//! truncates it to zero bytes (the database runs with `secure_delete`, so the pages it
//! copies hold no erased text), and only then is the mark cleared, with a compare on the
//! count, so an erasure that committed meanwhile stays due.

use std::path::Path;
use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

use rusqlite::{Connection, OpenFlags, OptionalExtension};

use crate::StoreError;

/// How soon a purge known to be due in this process is tried again.
const RETRY: Duration = Duration::from_millis(200);
/// How often the durable mark is looked at otherwise (another process's erasure).
const POLL: Duration = Duration::from_secs(5);
/// How long one try waits for readers and writers (SQLite's busy handler) before it gives
/// up until the next: short, because while a checkpoint waits, writers wait behind it.
const TRY_WAIT: Duration = Duration::from_millis(50);

#[derive(Default)]
struct State {
    /// This process erased and could not purge: retry soon.
    requested: bool,
    /// The store is being dropped.
    closed: bool,
}

#[derive(Default)]
struct Shared {
    state: Mutex<State>,
    wake: Condvar,
}

/// The thread that finishes due purges (see the module documentation); stopped and
/// joined when dropped.
pub(super) struct WalPurger {
    shared: Arc<Shared>,
    thread: Option<JoinHandle<()>>,
}

impl WalPurger {
    /// Starts the thread for the database at `path`. It looks at the mark at once, so a
    /// purge a crash left due is finished as the store opens.
    pub(super) fn start(path: &Path) -> Result<Self, StoreError> {
        let shared = Arc::new(Shared::default());
        let thread = std::thread::Builder::new()
            .name("membank-wal-purge".into())
            .spawn({
                let shared = Arc::clone(&shared);
                let path = path.to_path_buf();
                move || run(&path, &shared)
            })
            .map_err(|e| StoreError::Corrupt(format!("cannot start the WAL purge thread: {e}")))?;
        Ok(Self { shared, thread: Some(thread) })
    }

    /// An erasure in this process could not purge: try again soon, until it can.
    pub(super) fn request(&self) {
        self.shared.state.lock().unwrap_or_else(|e| e.into_inner()).requested = true;
        self.shared.wake.notify_all();
    }
}

impl Drop for WalPurger {
    fn drop(&mut self) {
        self.shared.state.lock().unwrap_or_else(|e| e.into_inner()).closed = true;
        self.shared.wake.notify_all();
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

fn run(path: &Path, shared: &Shared) {
    let mut conn: Option<Connection> = None;
    let mut retrying = false;
    loop {
        {
            let mut state = shared.state.lock().unwrap_or_else(|e| e.into_inner());
            if state.closed {
                return;
            }
            retrying |= std::mem::take(&mut state.requested);
        }
        let due = match try_purge(path, &mut conn) {
            Ok(due) => due,
            Err(err) => {
                // The file may be gone or locked for long (a restore); the next try opens it again.
                tracing::debug!(error = %err, "the WAL purge could not look at the database; it tries again");
                conn = None;
                retrying
            }
        };
        if retrying && !due {
            tracing::info!("the reader that held an older snapshot finished: the erased text is gone from -wal");
        }
        retrying = due;
        let state = shared.state.lock().unwrap_or_else(|e| e.into_inner());
        if state.closed || state.requested {
            continue;
        }
        let wait = if retrying { RETRY } else { POLL };
        let _ = shared.wake.wait_timeout(state, wait);
    }
}

/// Finishes a due purge if it can; returns whether one is still due.
fn try_purge(path: &Path, conn: &mut Option<Connection>) -> Result<bool, StoreError> {
    if conn.is_none() {
        let opened = Connection::open_with_flags(
            path,
            OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX | OpenFlags::SQLITE_OPEN_URI,
        )?;
        opened.busy_timeout(TRY_WAIT)?;
        *conn = Some(opened);
    }
    let conn = conn.as_ref().expect("opened above");
    let Some(due) = due(conn)? else { return Ok(false) };
    if !checkpoint(conn)? {
        return Ok(true);
    }
    clear(conn, due)?;
    Ok(false)
}

/// The count of erasures not yet purged, when there are any.
pub(super) fn due(conn: &Connection) -> Result<Option<i64>, StoreError> {
    let due: Option<i64> = conn.query_row("SELECT due FROM wal_purge WHERE id = 1", [], |r| r.get(0)).optional()?;
    Ok(due.filter(|&d| d > 0))
}

/// Marks one more erasure due a purge, in the erasing transaction; returns the new count.
pub(super) fn mark(tx: &super::group_commit::Tx<'_>) -> Result<i64, StoreError> {
    Ok(tx.query_row(
        "INSERT INTO wal_purge (id, due) VALUES (1, 1) ON CONFLICT (id) DO UPDATE SET due = due + 1 RETURNING due",
        [],
        |r| r.get(0),
    )?)
}

/// Copies the whole WAL into the database and truncates it; false when a reader or a
/// writer was in the way (nothing is lost: the WAL stays as it was, valid).
pub(super) fn checkpoint(conn: &Connection) -> Result<bool, StoreError> {
    let (busy, _, _): (i64, i64, i64) =
        conn.query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))?;
    Ok(busy == 0)
}

/// Clears the mark after a purge that covered `due` erasures. An erasure that committed
/// since counted it up, so the compare leaves it due.
pub(super) fn clear(conn: &Connection, due: i64) -> Result<(), StoreError> {
    conn.execute("UPDATE wal_purge SET due = 0 WHERE id = 1 AND due = ?1", [due])?;
    Ok(())
}
