//! The PostgreSQL copies of benchmark datasets: a database of the `--db` server that holds
//! a copy of the SQLite dataset between runs, made and found again through a record file,
//! and the resumable, verified copy into it.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::{Context as _, Result};
use membank_engine::core::{MemoryId, Scope};
use membank_store::postgres::testing::{TestDatabase, with_database};
use membank_store::{ExportRow, ListQuery, PgStore, Store, StoreError, UserImport};

use crate::progress::Bar;

/// A PostgreSQL database that holds one benchmark dataset between runs.
pub(crate) struct PgDataset {
    /// The store on it.
    pub store: Arc<PgStore>,
    /// Its URL without a password, for messages and reports.
    pub location: String,
    /// Its URL as given (a password included: never printed).
    pub url: String,
}

/// Most memories [`copy_users`] writes in one transaction: big enough that a transaction's
/// overhead does not count, small enough that an interruption loses little and the batch
/// in hand stays a few MiB.
const COPY_BATCH: usize = 5000;

/// The file in `dir` that records which database of the server `server_url` holds the
/// dataset `key`, and of which build of it.
fn pg_record(server_url: &str, dir: &Path, key: &str) -> PathBuf {
    // The server named without its database (user, host and port); a password in the URL
    // is hashed with them, never written.
    use sha2::Digest as _;
    let server: String = sha2::Sha256::digest(with_database(server_url, "").as_bytes())
        .iter()
        .take(6)
        .map(|b| format!("{b:02x}"))
        .collect();
    dir.join(format!("{key}.postgres-{server}"))
}

/// The database on the server of `server_url` that holds the dataset `key` copied from the
/// source build `identity` (the id of its first memory: a rebuilt source has another):
/// the one recorded in `dir` if it still opens and holds that build, else a new one,
/// recorded there. The CLI has no PostgreSQL client of its own (only the store crate talks
/// to the server), so a new database is made by the store's [`TestDatabase`] and kept by not
/// dropping its handle; its name is generated, hence the record. Where the server refuses
/// to create a database, the dataset goes into the database of `--db` itself.
pub(crate) fn pg_dataset(server_url: &str, dir: &Path, key: &str, identity: &str) -> Result<PgDataset> {
    let record = pg_record(server_url, dir, key);
    if let Ok(text) = std::fs::read_to_string(&record) {
        let text = text.trim();
        let (name, recorded) = text.split_once(' ').unwrap_or((text, ""));
        let url = with_database(server_url, name);
        if recorded == identity {
            match PgStore::open(&url) {
                Ok(store) => {
                    return Ok(PgDataset { store: Arc::new(store), location: membank_store::redact(&url), url });
                }
                Err(err) => eprintln!("the recorded database {name} does not open ({err}); making a new one"),
            }
        } else {
            eprintln!(
                "the database {name} holds a copy of an earlier build of {key}; making a new one (DROP DATABASE {name} on the server reclaims its space)"
            );
        }
    }
    match TestDatabase::try_create(server_url, &format!("bench_{key}")) {
        Ok(database) => {
            // Opened before it is recorded: a database that does not open is dropped with
            // its handle.
            let store = PgStore::open(&database.url)
                .with_context(|| format!("cannot open the new database {}", database.name))?;
            std::fs::write(&record, format!("{} {identity}\n", database.name))
                .with_context(|| format!("cannot write {}", record.display()))?;
            let location = membank_store::redact(&database.url);
            eprintln!("made the database {location} for {key}");
            let url = database.url.clone();
            // Kept for the next run: dropping the handle would drop the database.
            database.keep();
            Ok(PgDataset { store: Arc::new(store), location, url })
        }
        Err(err) => {
            eprintln!(
                "cannot create a database on {} ({err}); the dataset goes into the database of --db itself",
                membank_store::redact(server_url)
            );
            Ok(PgDataset {
                store: Arc::new(PgStore::open(server_url)?),
                location: membank_store::redact(server_url),
                url: server_url.to_string(),
            })
        }
    }
}

/// The database [`pg_dataset`] recorded for `key` on this server, or the database of
/// `--db` itself when none is recorded (the server refused to create one).
pub(crate) fn recorded_pg_dataset(
    server_url: &str,
    dir: &Path,
    key: &str,
    options: membank_store::StoreOptions,
) -> Result<PgDataset> {
    let url = match std::fs::read_to_string(pg_record(server_url, dir, key)) {
        Ok(text) => with_database(server_url, text.split_whitespace().next().unwrap_or_default()),
        Err(_) => server_url.to_string(),
    };
    let store =
        PgStore::open_with(&url, membank_store::PgOptions { cache_budget: options.cache_budget, ..Default::default() })
            .with_context(|| format!("cannot open {}", membank_store::redact(&url)))?;
    Ok(PgDataset { store: Arc::new(store), location: membank_store::redact(&url), url })
}

/// The id of the scope's first memory (the oldest), which names a build of a dataset: ids
/// are UUIDv7 with random bits, so a rebuild never repeats it. `None` for no memory.
pub(crate) fn first_memory(store: &dyn Store, scope: &Scope) -> Result<Option<MemoryId>> {
    Ok(store.list(scope, &ListQuery { limit: 1, oldest_first: true, ..Default::default() })?.first().map(|m| m.id))
}

/// All of a scope's memories, whatever their status.
fn total_memories(store: &dyn Store, scope: &Scope) -> Result<u64> {
    let counts = store.counts(scope)?;
    Ok(counts.active + counts.archived + counts.superseded + counts.erased)
}

/// Copies the users of `scopes` from `source` into `target`: each user's settings and
/// memories with all of their state and vectors, ids kept, through `export_user` and
/// `import_users` (merging), in transactions of at most [`COPY_BATCH`] memories. Not the
/// event logs nor the recent recall queries: no search reads them. A user whose count and
/// first memory already match is skipped, and the import skips memories already present, so
/// an interrupted copy resumes where it stopped. Afterwards every user must match its
/// source (count and first memory), or this fails saying which does not. Returns the
/// memories copied.
pub(crate) fn copy_users(source: &dyn Store, target: &dyn Store, scopes: &[Scope]) -> Result<usize> {
    let matches = |scope: &Scope| -> Result<bool> {
        Ok(total_memories(source, scope)? == total_memories(target, scope)?
            && first_memory(source, scope)? == first_memory(target, scope)?)
    };
    let todo: Vec<&Scope> = scopes
        .iter()
        .filter_map(|scope| matches(scope).map(|ok| (!ok).then_some(scope)).transpose())
        .collect::<Result<_>>()?;
    if todo.is_empty() {
        return Ok(0);
    }
    let mut expected = 0;
    for scope in &todo {
        expected += total_memories(source, scope)? as usize;
    }
    let bar = Bar::new();
    let mut batch: Vec<UserImport> = Vec::new();
    let mut in_batch = 0;
    let mut seen = 0;
    let mut copied = 0;
    let mut flush = |batch: &mut Vec<UserImport>, in_batch: &mut usize| -> Result<(), StoreError> {
        if !batch.is_empty() {
            copied += target.import_users(std::mem::take(batch), true)?.memories;
        }
        *in_batch = 0;
        Ok(())
    };
    for scope in &todo {
        source.export_user(&scope.tenant, &scope.user, true, &mut |row| {
            match row {
                ExportRow::User(state) => {
                    batch.push(UserImport { state, memories: Vec::new(), events: Vec::new(), queries: Vec::new() })
                }
                ExportRow::Memory(memory, vector) => {
                    let Some(user) = batch.last_mut() else {
                        return Err(StoreError::Corrupt("an export gave a memory before its user".into()));
                    };
                    user.memories.push((*memory, vector));
                    in_batch += 1;
                    seen += 1;
                    if in_batch >= COPY_BATCH {
                        // The user's further memories go in the next transaction (merged).
                        let state = user.state.clone();
                        flush(&mut batch, &mut in_batch)?;
                        batch.push(UserImport { state, memories: Vec::new(), events: Vec::new(), queries: Vec::new() });
                        bar.update("copying to PostgreSQL", seen, expected);
                    }
                }
                ExportRow::Event(_) | ExportRow::Query(..) => {}
            }
            Ok(())
        })?;
    }
    flush(&mut batch, &mut in_batch)?;
    bar.update("copying to PostgreSQL", seen, expected);
    bar.finish();
    for scope in &todo {
        anyhow::ensure!(
            matches(scope)?,
            "after the copy, user {} has {} memories in PostgreSQL and {} in SQLite (or another first memory): the PostgreSQL database held another user of that name",
            scope.user,
            total_memories(target, scope)?,
            total_memories(source, scope)?
        );
    }
    Ok(copied)
}
