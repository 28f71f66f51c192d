//! `membank migrate --from SRC --to DST`: copies a whole store into another, SQLite to
//! PostgreSQL or back (or between two of a kind): every user of every tenant with its
//! settings, every memory with all of its state and its vector, every event with its id,
//! the recent recall queries, and the API keys (hashes, bindings, times, revocations).
//!
//! How it goes, and why:
//! - **Everything that can refuse is asked first**, before anything is written: the
//!   locations (not the same store, a source file that exists), the embedding model (the
//!   target's must be the source's), the keys (a key of the same id must be the same key),
//!   and every user the target already has (it must hold exactly what the source holds).
//! - **Copying goes through the stores' lossless export and import**
//!   (`Store::export_user`, `Store::import_users`), so it knows no SQL and works between any
//!   two backends. A user is streamed from one read snapshot of the source; users are
//!   written a batch at a time (a few users, or at most `--batch` memories and events, in
//!   one transaction), so memory use is bounded by a batch, not by the store. Into
//!   PostgreSQL two writers take batches in turn while the next is read (its server is the
//!   bottleneck, and then works on two cores).
//! - **Resumable.** A user that fits in a batch is written whole or not at all. A larger
//!   one is written in chunks, in the order of its export (its settings and recent queries
//!   with the first chunk), each chunk one transaction; run again, a user whose rows in the
//!   target are exactly a beginning of its rows in the source is completed, and a user
//!   already whole is skipped. A user the target holds with anything else is refused by
//!   name: migrate never merges into, overwrites or deletes a user, and never writes to the
//!   source.
//! - **Verified at the end**: each user's memories by status, vectors, events and recent
//!   queries are counted in both stores and a fingerprint of every row is compared, and
//!   every key of the source must be in the target unchanged. A mismatch is an error.
//!
//! It deliberately does not re-embed (a model change is another operation), copy
//! idempotency keys (they expire within a day and only guard retries against the old
//! store), or stop writers of the source: migrate a store no one is writing to, or the
//! verification will say what moved.

use std::collections::{HashMap, HashSet};
use std::hash::{DefaultHasher, Hash, Hasher};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use anyhow::{Context as _, Result, bail};
use membank_core::{Scope, Status, TenantId, UserId};
use membank_store::{
    ApiKeyRecord, Backend, EmbeddingModel, ExportRow, Location, SearchFilter, StoreError, StoreOptions, UserImport,
};
use serde_json::json;

use crate::args::transfer::MigrateArgs;
use crate::context::Context;
use crate::errors::UsageError;
use crate::output::print_json;
use crate::progress::Bar;

/// Most users written in one transaction.
const USERS_PER_BATCH: usize = 500;

/// What a user holds: its rows counted, and a fingerprint of all of them.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
struct Tally {
    active: u64,
    archived: u64,
    superseded: u64,
    erased: u64,
    vectors: u64,
    events: u64,
    queries: u64,
    /// A hash of every row in export order (the settings, each memory with all of its state
    /// and its vector's bits, each event but its store-local sequence number, each query).
    digest: u64,
}

impl Tally {
    fn memories(&self) -> u64 {
        self.active + self.archived + self.superseded + self.erased
    }

    fn describe(&self) -> String {
        format!(
            "{} memories ({} active, {} archived, {} superseded, {} erased), {} vectors, {} events, {} recent queries",
            self.memories(),
            self.active,
            self.archived,
            self.superseded,
            self.erased,
            self.vectors,
            self.events,
            self.queries
        )
    }
}

/// Counts and fingerprints a user's rows as they stream by. Each row is hashed on its own
/// ([`row_hash`]); the digest chains them, so order counts too.
#[derive(Default)]
struct Counter {
    tally: Tally,
    chain: DefaultHasher,
}

impl Counter {
    fn add(&mut self, row: &ExportRow) {
        match row {
            ExportRow::Memory(memory, vector) => {
                match memory.status {
                    Status::Active => self.tally.active += 1,
                    Status::Archived => self.tally.archived += 1,
                    Status::Superseded => self.tally.superseded += 1,
                    Status::Erased => self.tally.erased += 1,
                }
                self.tally.vectors += u64::from(vector.is_some());
            }
            ExportRow::Event(_) => self.tally.events += 1,
            ExportRow::Query(..) => self.tally.queries += 1,
            ExportRow::User(_) => {}
        }
        self.chain.write_u64(row_hash(row));
    }

    fn finish(mut self) -> Tally {
        self.tally.digest = self.chain.finish();
        self.tally
    }
}

/// A hash of one exported row that two stores holding the same row agree on: the row's
/// values (the `Debug` text of the domain types, which prints every field), vectors by
/// their bits, and an event without its sequence number, which each store numbers itself.
fn row_hash(row: &ExportRow) -> u64 {
    // SipHash with fixed keys: the same in both passes of one run, which is all it needs.
    let mut hasher = DefaultHasher::new();
    let vector_bits = |hasher: &mut DefaultHasher, vector: &[f32]| {
        hasher.write_usize(vector.len());
        vector.iter().for_each(|x| hasher.write_u32(x.to_bits()));
    };
    match row {
        ExportRow::User(state) => ("user", format!("{state:?}")).hash(&mut hasher),
        ExportRow::Memory(memory, vector) => {
            ("memory", format!("{memory:?}")).hash(&mut hasher);
            if let Some((model, vector)) = vector {
                (&model.id, model.dim).hash(&mut hasher);
                vector_bits(&mut hasher, vector);
            }
        }
        ExportRow::Event(event) => (
            "event",
            event.id.to_string(),
            event.memory_id.map(|id| id.to_string()),
            event.kind.as_str(),
            event.at.timestamp_millis(),
            event.data.to_string(),
        )
            .hash(&mut hasher),
        ExportRow::Query(at, vector) => {
            ("query", at.timestamp_millis()).hash(&mut hasher);
            vector_bits(&mut hasher, vector);
        }
    }
    hasher.finish()
}

/// A user's rows in the target, one hash each, by kind: what a resumed copy compares with
/// the beginning of the source's.
#[derive(Default)]
struct Rows {
    user: Option<u64>,
    memories: Vec<u64>,
    events: Vec<u64>,
    queries: Vec<u64>,
}

impl Rows {
    fn of(store: &dyn Backend, tenant: &TenantId, user: &UserId) -> Result<Rows, StoreError> {
        let mut rows = Rows::default();
        store.export_user(tenant, user, true, &mut |row| {
            let hash = row_hash(&row);
            match row {
                ExportRow::User(_) => rows.user = Some(hash),
                ExportRow::Memory(..) => rows.memories.push(hash),
                ExportRow::Event(_) => rows.events.push(hash),
                ExportRow::Query(..) => rows.queries.push(hash),
            }
            Ok(())
        })?;
        Ok(rows)
    }

    /// Whether these rows are what an interrupted copy of `source` leaves: the same
    /// settings and recent queries (written with the first chunk), a beginning of its
    /// memories, and events only once every memory is there, a beginning of its events.
    fn begin(&self, source: &Rows) -> bool {
        self.user == source.user
            && self.queries == source.queries
            && source.memories.starts_with(&self.memories)
            && source.events.starts_with(&self.events)
            && (self.events.is_empty() || self.memories.len() == source.memories.len())
    }
}

/// What to do with one user of the source.
enum Plan {
    /// Not in the target: copy it.
    Copy,
    /// In the target with a beginning of its rows: copy the rest.
    Resume,
    /// In the target whole: nothing to do (its tally, for the verification).
    Skip(Tally),
}

/// What was written.
#[derive(Debug, Default)]
struct Copied {
    users: u64,
    memories: u64,
    events: u64,
}

/// Runs `migrate`.
pub fn run(ctx: &Context, args: MigrateArgs) -> Result<()> {
    let started = Instant::now();
    let (from, to) = locations(&args)?;
    let source = open(&from, "source")?;
    let target = open(&to, "target")?;
    let bar = Bar::new();

    // Everything that could refuse, before anything is written.
    if let Some(model) = source_model(source.as_ref())? {
        check_target_model(target.as_ref(), &model).with_context(|| {
            format!("the target {} cannot take the source's vectors; nothing was copied", to.display())
        })?;
    }
    let (keys, present_keys) = keys_to_copy(source.as_ref(), target.as_ref())?;
    let users = source.all_users()?;
    let in_target: HashSet<(TenantId, UserId)> = target.all_users()?.into_iter().collect();
    let mut total_memories = 0u64;
    let mut sizes = Vec::with_capacity(users.len());
    for (tenant, user) in &users {
        let counts = source.counts(&Scope::user(tenant.clone(), user.clone()))?;
        let size = counts.active + counts.archived + counts.superseded + counts.erased;
        total_memories += size;
        sizes.push(size);
    }
    let there: Vec<usize> = (0..users.len()).filter(|&i| in_target.contains(&users[i])).collect();
    let mut plans: Vec<Plan> = (0..users.len()).map(|_| Plan::Copy).collect();
    let mut conflicts = Vec::new();
    for (done, &i) in there.iter().enumerate() {
        bar.update("checking", done, there.len());
        let (tenant, user) = &users[i];
        match compare(source.as_ref(), target.as_ref(), tenant, user)? {
            Ok(plan) => plans[i] = plan,
            Err(why) => conflicts.push(format!("{tenant}/{user}: {why}")),
        }
    }
    bar.update("checking", there.len(), there.len());
    bar.finish();
    if !conflicts.is_empty() {
        let shown = conflicts.iter().take(10).map(|c| format!("\n  {c}")).collect::<String>();
        let more =
            if conflicts.len() > 10 { format!("\n  … and {} more", conflicts.len() - 10) } else { String::new() };
        return Err(anyhow::Error::new(StoreError::Conflict(format!(
            "{} of the source's users are in the target {} with other content; migrate never merges into or overwrites a user (remove them from the target, or migrate into another database); nothing was copied:{shown}{more}",
            conflicts.len(),
            to.display()
        ))));
    }

    // Copy: users, then keys (a key names its user; the user should be there first).
    let copy_started = Instant::now();
    let shared = Shared {
        copied: Mutex::new(Copied::default()),
        done: AtomicU64::new(0),
        total: total_memories,
        failure: Mutex::new(None),
        failed: AtomicBool::new(false),
        bar: &bar,
    };
    let writers = args.jobs.map_or(if to.kind() == "postgres" { 2 } else { 1 }, |n| usize::try_from(n).unwrap_or(1));
    let batch = usize::try_from(args.batch).unwrap_or(usize::MAX);
    let copying = std::thread::scope(|scope| -> Result<Vec<Tally>> {
        let mut queues = Vec::with_capacity(writers);
        for _ in 0..writers {
            // A rendezvous: a batch is handed over only to a writer that is free, so at most
            // one batch per writer and the one being read are in memory.
            let (sender, jobs) = std::sync::mpsc::sync_channel::<Job>(0);
            let (target, shared) = (target.as_ref(), &shared);
            scope.spawn(move || write_jobs(target, jobs, shared));
            queues.push(sender);
        }
        let mut copier = Copier {
            source: source.as_ref(),
            batch,
            pending: Vec::new(),
            pending_rows: 0,
            pending_memories: 0,
            queues,
            next: 0,
            shared: &shared,
        };
        let mut tallies: Vec<Tally> = Vec::with_capacity(users.len());
        for (i, (tenant, user)) in users.iter().enumerate() {
            let tally = match &plans[i] {
                Plan::Skip(tally) => {
                    shared.done.fetch_add(sizes[i], Ordering::Relaxed);
                    shared.progress();
                    *tally
                }
                Plan::Copy => copier.user(tenant, user, false)?,
                Plan::Resume => copier.user(tenant, user, true)?,
            };
            tallies.push(tally);
        }
        copier.flush()?;
        Ok(tallies)
    });
    // The writers are done (the scope joined them): a failure of theirs is the error to tell.
    if let Some(failure) = shared.failure.lock().unwrap_or_else(|e| e.into_inner()).take() {
        return Err(anyhow::Error::new(failure).context(format!("copying into {} failed; what was written is whole users (or the beginning of a large one): run the same migrate again to go on", to.display())));
    }
    let tallies = copying?;
    shared.progress();
    bar.finish();
    let copied = shared.copied.into_inner().unwrap_or_else(|e| e.into_inner());
    let mut keys_copied = 0u64;
    for (record, hash) in &keys {
        if target.import_key(record, hash).with_context(|| format!("cannot copy API key {}", record.key_id))? {
            keys_copied += 1;
        }
    }

    let copy_seconds = copy_started.elapsed().as_secs_f64();

    // Verify: every user and key of the source, as the target holds it now.
    let verify_started = Instant::now();
    let mut mismatches = Vec::new();
    let mut checked = 0u64;
    for (i, (tenant, user)) in users.iter().enumerate() {
        bar.update(
            "verifying",
            usize::try_from(checked).unwrap_or(usize::MAX),
            usize::try_from(total_memories).unwrap_or(usize::MAX),
        );
        let found = tally(target.as_ref(), tenant, user)?;
        if found.as_ref() != Some(&tallies[i]) {
            let counts_only = |t: &Tally| Tally { digest: 0, ..*t };
            let target_holds = match found {
                None => "nothing".to_string(),
                Some(t) if counts_only(&t) == counts_only(&tallies[i]) => {
                    format!("as many, but with other content ({})", t.describe())
                }
                Some(t) => t.describe(),
            };
            mismatches
                .push(format!("{tenant}/{user}: the source has {}, the target {target_holds}", tallies[i].describe()));
        }
        checked += sizes[i];
    }
    bar.update(
        "verifying",
        usize::try_from(total_memories).unwrap_or(usize::MAX),
        usize::try_from(total_memories).unwrap_or(usize::MAX),
    );
    bar.finish();
    let target_keys: HashMap<String, (ApiKeyRecord, String)> =
        target.export_keys()?.into_iter().map(|(record, hash)| (record.key_id.clone(), (record, hash))).collect();
    let source_keys = source.export_keys()?;
    for (record, hash) in &source_keys {
        if target_keys.get(&record.key_id) != Some(&(record.clone(), hash.clone())) {
            mismatches.push(format!("API key {}: not in the target as it is in the source", record.key_id));
        }
    }
    let verified = mismatches.is_empty();
    let verify_seconds = verify_started.elapsed().as_secs_f64();
    let seconds = started.elapsed().as_secs_f64();
    let round = |s: f64| (s * 1000.0).round() / 1000.0;
    let totals: (u64, u64) = tallies.iter().fold((0, 0), |(m, e), t| (m + t.memories(), e + t.events));
    if ctx.cli_json {
        print_json(&json!({
            "from": from.display(),
            "to": to.display(),
            "users": copied.users,
            "memories": copied.memories,
            "events": copied.events,
            "keys": keys_copied,
            "skipped_users": plans.iter().filter(|p| matches!(p, Plan::Skip(_))).count(),
            "skipped_keys": present_keys,
            "source": { "users": users.len(), "memories": totals.0, "events": totals.1, "keys": source_keys.len() },
            "verified": verified,
            "seconds": round(seconds),
            "copy_seconds": round(copy_seconds),
            "verify_seconds": round(verify_seconds),
        }))?;
    } else {
        let skipped = plans.iter().filter(|p| matches!(p, Plan::Skip(_))).count();
        let rate = if copy_seconds > 0.0 { copied.memories as f64 / copy_seconds } else { 0.0 };
        println!(
            "migrated {} users ({} memories, {} events) and {keys_copied} API keys from {} to {} in {seconds:.1}s (copied in {copy_seconds:.1}s, {rate:.0} memories/s; verified in {verify_seconds:.1}s)",
            copied.users,
            copied.memories,
            copied.events,
            from.display(),
            to.display()
        );
        if skipped > 0 || present_keys > 0 {
            println!("already in the target, left as they are: {skipped} users, {present_keys} API keys");
        }
        if verified {
            println!(
                "verified: the target holds all {} users of the source ({} memories, {} events) with the same memories by status, vectors, events and content, and all {} API keys",
                users.len(),
                totals.0,
                totals.1,
                source_keys.len()
            );
        }
    }
    if !verified {
        mismatches.iter().take(20).for_each(|m| eprintln!("mismatch: {m}"));
        bail!(
            "verification failed: {} users or keys differ between {} and {} (run migrate again to see whether they still do)",
            mismatches.len(),
            from.display(),
            to.display()
        );
    }
    Ok(())
}

/// Both locations, refused when empty, the same, or a source file that does not exist.
fn locations(args: &MigrateArgs) -> Result<(Location, Location)> {
    for (flag, value) in [("--from", &args.from), ("--to", &args.to)] {
        if value.trim().is_empty() {
            return Err(UsageError(format!("{flag} is empty: give a SQLite file or a postgres:// URL")).into());
        }
    }
    let (from, to) = (Location::parse(args.from.trim()), Location::parse(args.to.trim()));
    if let Location::Sqlite(path) = &from
        && !path.is_file()
    {
        let what = if path.exists() { "is not a file" } else { "does not exist" };
        return Err(anyhow::Error::new(StoreError::NotFound { what: format!("source database {}", path.display()) })
            .context(format!(
                "{} {what}: --from must name an existing SQLite file or a postgres:// URL",
                path.display()
            )));
    }
    if same_store(&from, &to) {
        return Err(UsageError(format!(
            "--from and --to are the same store ({}): migrate copies into another one",
            from.display()
        ))
        .into());
    }
    Ok((from, to))
}

/// Whether two locations name one store: the same file (after resolving links and `..`), or
/// the same URL but for the scheme's spelling. Two URLs naming one database another way
/// (`localhost` for `127.0.0.1`) are not caught here; copying a store onto itself then finds
/// every user whole and writes nothing.
fn same_store(from: &Location, to: &Location) -> bool {
    match (from, to) {
        (Location::Sqlite(a), Location::Sqlite(b)) => resolved(a) == resolved(b),
        (Location::Postgres(a), Location::Postgres(b)) => {
            let plain = |url: &str| {
                let (scheme, rest) = url.split_once("://").unwrap_or(("", url));
                format!(
                    "{}://{}",
                    if scheme.eq_ignore_ascii_case("postgresql") { "postgres" } else { scheme },
                    rest.trim_end_matches('/')
                )
            };
            plain(a) == plain(b)
        }
        _ => false,
    }
}

/// `path` made absolute with links resolved, as far as it exists.
fn resolved(path: &Path) -> PathBuf {
    if let Ok(path) = path.canonicalize() {
        return path;
    }
    let parent = path.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
    match (parent.canonicalize(), path.file_name()) {
        (Ok(parent), Some(name)) => parent.join(name),
        _ => path.to_path_buf(),
    }
}

/// Opens one side. A target SQLite file is created with its directory; the source exists.
fn open(location: &Location, side: &str) -> Result<Arc<dyn Backend>> {
    if let Location::Sqlite(path) = location
        && let Some(parent) = path.parent()
        && !parent.as_os_str().is_empty()
        && !parent.exists()
    {
        std::fs::create_dir_all(parent).with_context(|| format!("cannot create {}", parent.display()))?;
    }
    membank_store::open(location, StoreOptions::default())
        .with_context(|| format!("cannot open the {side} database {}", location.display()))
}

/// The model of the source's vectors: that of the first vector found, user by user (a
/// store holds one model's vectors). `None` when it holds none.
fn source_model(source: &dyn Backend) -> Result<Option<EmbeddingModel>> {
    for (tenant, user) in source.all_users()? {
        let mut found = None;
        let result = source.export_user(&tenant, &user, true, &mut |row| {
            if let ExportRow::Memory(_, Some((model, _))) = row {
                found = Some(model);
                // Stop reading: one vector says the model.
                return Err(StoreError::Output(std::io::Error::other("found the model")));
            }
            Ok(())
        });
        match (found, result) {
            (Some(model), _) => return Ok(Some(model)),
            (None, Err(err)) => return Err(err.into()),
            (None, Ok(_)) => {}
        }
    }
    Ok(None)
}

/// Refuses a target whose vectors are another model's. A search for nothing (`limit` 0)
/// checks the model and reads no vector; SQLite asks it only of a user it has, and a
/// SQLite store without users holds no vectors.
fn check_target_model(target: &dyn Backend, model: &EmbeddingModel) -> Result<()> {
    let scope = match target.kind() {
        "sqlite" => match target.all_users()?.into_iter().next() {
            Some((tenant, user)) => Scope::user(tenant, user),
            None => return Ok(()),
        },
        _ => Scope::user(TenantId::default_tenant(), UserId::new("membank-migrate-probe")?),
    };
    let mut query = vec![0.0f32; model.dim];
    if let Some(first) = query.first_mut() {
        *first = 1.0;
    }
    target.dense_search(&scope, model, &query, &SearchFilter::default(), 0)?;
    Ok(())
}

/// The source's keys the target lacks, and how many it has already; refuses (before
/// anything is written) when the target has another key of the same id or hash.
fn keys_to_copy(source: &dyn Backend, target: &dyn Backend) -> Result<(Vec<(ApiKeyRecord, String)>, u64)> {
    let there = target.export_keys()?;
    let mut missing = Vec::new();
    let mut present = 0;
    for (record, hash) in source.export_keys()? {
        let same = there.iter().find(|(r, h)| r.key_id == record.key_id || *h == hash);
        match same {
            None => missing.push((record, hash)),
            Some((r, h)) if *r == record && *h == hash => present += 1,
            Some((r, _)) => {
                let why = if r.key_id == record.key_id {
                    format!("key {} is in the target with another secret or other settings", record.key_id)
                } else {
                    format!("key {} of the source has the secret of key {} of the target", record.key_id, r.key_id)
                };
                return Err(anyhow::Error::new(StoreError::Conflict(format!(
                    "{why}; migrate never overwrites a key (revoke or remove one of them); nothing was copied"
                ))));
            }
        }
    }
    Ok((missing, present))
}

/// A user's tally in `store`, `None` if it has no such user.
fn tally(store: &dyn Backend, tenant: &TenantId, user: &UserId) -> Result<Option<Tally>, StoreError> {
    let mut counter = Counter::default();
    let found = store.export_user(tenant, user, true, &mut |row| {
        counter.add(&row);
        Ok(())
    })?;
    Ok(found.then(|| counter.finish()))
}

/// What to do with a user the target has already, or why it cannot be done.
fn compare(
    source: &dyn Backend,
    target: &dyn Backend,
    tenant: &TenantId,
    user: &UserId,
) -> Result<Result<Plan, String>> {
    let theirs = tally(target, tenant, user)?.unwrap_or_default();
    let ours = tally(source, tenant, user)?.unwrap_or_default();
    if theirs == ours {
        return Ok(Ok(Plan::Skip(ours)));
    }
    if Rows::of(target, tenant, user)?.begin(&Rows::of(source, tenant, user)?) {
        return Ok(Ok(Plan::Resume));
    }
    Ok(Err(format!("the source has {}, the target {}", ours.describe(), theirs.describe())))
}

/// What the writers share with the reader: totals, progress, the first failure.
struct Shared<'a> {
    copied: Mutex<Copied>,
    /// Memories of the source dealt with (copied, or found whole in the target).
    done: AtomicU64,
    total: u64,
    failure: Mutex<Option<StoreError>>,
    failed: AtomicBool,
    bar: &'a Bar,
}

impl Shared<'_> {
    fn progress(&self) {
        let done = usize::try_from(self.done.load(Ordering::Relaxed)).unwrap_or(usize::MAX);
        self.bar.update("copying", done, usize::try_from(self.total).unwrap_or(usize::MAX));
    }
}

/// One transaction for a writer: whole users, or one chunk of a large user.
struct Job {
    users: Vec<UserImport>,
    /// Whether rows already there are skipped (all but the first chunk of a new user).
    merge: bool,
    /// The source's memories it deals with, for the progress.
    memories: u64,
}

/// A writer: imports the jobs it is handed, each in its own transaction, until the reader
/// closes its queue; after a failure it takes no more.
fn write_jobs(target: &dyn Backend, jobs: std::sync::mpsc::Receiver<Job>, shared: &Shared<'_>) {
    for job in jobs {
        if shared.failed.load(Ordering::Relaxed) {
            continue;
        }
        match target.import_users(job.users, job.merge) {
            Ok(counts) => {
                let mut copied = shared.copied.lock().unwrap_or_else(|e| e.into_inner());
                copied.users += counts.users_created as u64;
                copied.memories += counts.memories as u64;
                copied.events += counts.events as u64;
                drop(copied);
                shared.done.fetch_add(job.memories, Ordering::Relaxed);
                shared.progress();
            }
            Err(err) => {
                shared.failure.lock().unwrap_or_else(|e| e.into_inner()).get_or_insert(err);
                shared.failed.store(true, Ordering::Relaxed);
            }
        }
    }
}

/// Reads users from the source and hands them to the writers in batches, and the chunks of
/// users larger than a batch.
struct Copier<'a> {
    source: &'a dyn Backend,
    /// Most memories and events in one transaction.
    batch: usize,
    /// Whole users waiting to be written together.
    pending: Vec<UserImport>,
    /// Their memories and events.
    pending_rows: usize,
    /// Their memories.
    pending_memories: u64,
    /// One queue per writer.
    queues: Vec<std::sync::mpsc::SyncSender<Job>>,
    /// The writer tried first next time.
    next: usize,
    shared: &'a Shared<'a>,
}

impl Copier<'_> {
    /// Stops reading once a writer failed (its error is the one reported).
    fn check(&self) -> Result<(), StoreError> {
        if self.shared.failed.load(Ordering::Relaxed) {
            return Err(StoreError::Conflict("a writer failed".into()));
        }
        Ok(())
    }

    /// Hands `job` to the first free writer, or waits for the next in turn.
    fn send_any(&mut self, job: Job) -> Result<(), StoreError> {
        self.check()?;
        let mut job = job;
        for k in 0..self.queues.len() {
            let i = (self.next + k) % self.queues.len();
            match self.queues[i].try_send(job) {
                Ok(()) => {
                    self.next = (i + 1) % self.queues.len();
                    return Ok(());
                }
                Err(std::sync::mpsc::TrySendError::Full(back) | std::sync::mpsc::TrySendError::Disconnected(back)) => {
                    job = back
                }
            }
        }
        let i = self.next;
        self.next = (i + 1) % self.queues.len();
        self.send_to(i, job)
    }

    /// Hands `job` to writer `i` (the chunks of one user go to one writer, in order).
    fn send_to(&self, i: usize, job: Job) -> Result<(), StoreError> {
        self.check()?;
        self.queues[i].send(job).map_err(|_| StoreError::Conflict("a writer stopped".into()))
    }

    /// Hands the waiting users to a writer, as one transaction.
    fn flush(&mut self) -> Result<(), StoreError> {
        if self.pending.is_empty() {
            return Ok(());
        }
        let job = Job { users: std::mem::take(&mut self.pending), merge: false, memories: self.pending_memories };
        self.pending_rows = 0;
        self.pending_memories = 0;
        self.send_any(job)
    }

    /// Copies one user (the rest of it, when `resume`), returning its tally in the source.
    fn user(&mut self, tenant: &TenantId, user: &UserId, resume: bool) -> Result<Tally> {
        let mut counter = Counter::default();
        let mut current: Option<UserImport> = None;
        let mut rows = 0usize;
        // The writer of a user larger than a batch, once it is written in chunks; and the
        // chunks handed over so far.
        let mut chunked: Option<usize> = None;
        let mut chunks = 0usize;
        let source = self.source;
        let found = source.export_user(tenant, user, true, &mut |row| {
            counter.add(&row);
            match row {
                ExportRow::User(state) => {
                    current = Some(UserImport { state, memories: Vec::new(), events: Vec::new(), queries: Vec::new() })
                }
                ExportRow::Memory(memory, vector) => {
                    if let Some(import) = current.as_mut() {
                        import.memories.push((*memory, vector));
                    }
                    rows += 1;
                }
                ExportRow::Event(event) => {
                    if let Some(import) = current.as_mut() {
                        import.events.push(event);
                    }
                    rows += 1;
                }
                ExportRow::Query(at, vector) => {
                    // Only a user written whole takes them here; a chunked one took them
                    // with its first chunk.
                    if let Some(import) = current.as_mut()
                        && chunked.is_none()
                    {
                        import.queries.push((at, vector));
                    }
                }
            }
            if rows >= self.batch
                && let Some(import) = current.as_mut()
            {
                let writer = match chunked {
                    Some(writer) => writer,
                    None => {
                        // Too large for one batch: the waiting users go first, then this one
                        // in chunks, all to one writer so they are written in order, its
                        // recent queries (the end of its export) with the first chunk, since
                        // a later chunk merges and a merge never adds queries.
                        self.flush()?;
                        if !resume {
                            import.queries = recent_queries(source, tenant, user)?;
                        }
                        let writer = self.next;
                        self.next = (writer + 1) % self.queues.len();
                        chunked = Some(writer);
                        writer
                    }
                };
                let memories = import.memories.len() as u64;
                let chunk = UserImport {
                    state: import.state.clone(),
                    memories: std::mem::take(&mut import.memories),
                    events: std::mem::take(&mut import.events),
                    queries: std::mem::take(&mut import.queries),
                };
                self.send_to(writer, Job { users: vec![chunk], merge: resume || chunks > 0, memories })?;
                chunks += 1;
                rows = 0;
            }
            Ok(())
        })?;
        let Some(import) = current.filter(|_| found) else {
            // Gone from the source since the list was read: the verification reports it.
            return Ok(counter.finish());
        };
        let memories = import.memories.len() as u64;
        match chunked {
            Some(writer) => self.send_to(writer, Job { users: vec![import], merge: true, memories })?,
            // A user written again from the start: alone, merging.
            None if resume => self.send_any(Job { users: vec![import], merge: true, memories })?,
            None => {
                if self.pending_rows + rows > self.batch || self.pending.len() >= USERS_PER_BATCH {
                    self.flush()?;
                }
                self.pending_rows += rows;
                self.pending_memories += memories;
                self.pending.push(import);
            }
        }
        Ok(counter.finish())
    }
}

/// A user's recent recall queries, oldest first (a read of its export that keeps only them).
fn recent_queries(
    source: &dyn Backend,
    tenant: &TenantId,
    user: &UserId,
) -> Result<Vec<(membank_core::Timestamp, Vec<f32>)>, StoreError> {
    let mut queries = Vec::new();
    source.export_user(tenant, user, true, &mut |row| {
        if let ExportRow::Query(at, vector) = row {
            queries.push((at, vector));
        }
        Ok(())
    })?;
    Ok(queries)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_same_store_is_recognised_however_it_is_spelled() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("a.db");
        std::fs::write(&file, b"").unwrap();
        let dotted = dir.path().join("sub/../a.db");
        std::fs::create_dir(dir.path().join("sub")).unwrap();
        assert!(same_store(&Location::Sqlite(file.clone()), &Location::Sqlite(dotted)));
        assert!(!same_store(&Location::Sqlite(file.clone()), &Location::Sqlite(dir.path().join("b.db"))));
        assert!(same_store(&Location::parse("postgres://u@h/db"), &Location::parse("postgresql://u@h/db/")));
        assert!(!same_store(&Location::parse("postgres://u@h/db"), &Location::parse("postgres://u@h/other")));
        assert!(!same_store(&Location::Sqlite(file), &Location::parse("postgres://u@h/db")));
    }

    #[test]
    fn an_interrupted_copy_is_a_beginning_and_anything_else_is_not() {
        let source = Rows { user: Some(1), memories: vec![10, 11, 12], events: vec![20, 21], queries: vec![30] };
        let rows = |memories: &[u64], events: &[u64]| Rows {
            user: Some(1),
            memories: memories.to_vec(),
            events: events.to_vec(),
            queries: vec![30],
        };
        assert!(rows(&[10], &[]).begin(&source));
        assert!(rows(&[10, 11, 12], &[20]).begin(&source));
        assert!(!rows(&[10, 11], &[20]).begin(&source), "events come after every memory");
        assert!(!rows(&[11], &[]).begin(&source), "not a beginning");
        assert!(!rows(&[10, 11, 12, 13], &[]).begin(&source), "more than the source");
        assert!(!Rows { user: Some(2), ..rows(&[10], &[]) }.begin(&source), "other settings");
        assert!(!Rows { queries: vec![], ..rows(&[10], &[]) }.begin(&source), "queries come with the first chunk");
    }
}
