//! `membank export`, `membank backup` and `membank check [FILE]`: getting people's
//! memories out whole, and copies of the database that can be trusted.
//!
//! `export` writes the lossless `membank-export` format (the engine's `export` module) as
//! it reads, to a file (written beside it and renamed into place once complete, so a
//! failed export never leaves a file that looks whole) or to stdout. `backup` copies a
//! live database with `VACUUM INTO` from one snapshot, then checks the copy. `check`
//! verifies a database file without migrating or changing it.

use std::io::Write;

use anyhow::{Context as _, Result, bail};
use membank_engine::core::{Scope, UserId};
use membank_engine::export::ExportRequest;
use membank_store::SqliteStore;
use serde_json::json;

use crate::args::transfer::{BackupArgs, CheckArgs, ExportArgs};
use crate::context::Context;
use crate::output::print_json;

/// Runs `export`.
pub fn export(ctx: &Context, args: ExportArgs) -> Result<()> {
    let users = match (&args.user, args.all_users) {
        (Some(user), false) => vec![Scope::user(
            ctx.tenant.clone(),
            UserId::new(user).map_err(|e| anyhow::Error::new(membank_engine::EngineError::Invalid(e)))?,
        )],
        (None, true) => Vec::new(),
        _ => {
            return Err(anyhow::Error::new(membank_engine::EngineError::Invalid(
                membank_engine::core::InvalidInput::new("export", "say which users: --user U or --all-users"),
            )));
        }
    };
    let request = ExportRequest { users, vectors: args.vectors, skip_missing: false };
    // Exporting needs no model: the store alone.
    let store = ctx.open_store_to_read()?;
    match &args.output {
        Some(path) => {
            if path.exists() {
                bail!("{} exists already; export never overwrites a file", path.display());
            }
            let partial = path.with_extension("partial");
            let file =
                std::fs::File::create(&partial).with_context(|| format!("cannot create {}", partial.display()))?;
            let mut out = std::io::BufWriter::new(file);
            let counts = match membank_engine::export::export(store.as_ref(), &request, &mut out) {
                Ok(counts) => counts,
                Err(err) => {
                    drop(out);
                    let _ = std::fs::remove_file(&partial);
                    return Err(err.into());
                }
            };
            let file = out
                .into_inner()
                .map_err(|e| e.into_error())
                .with_context(|| format!("cannot write {}", partial.display()))?;
            file.sync_all().with_context(|| format!("cannot write {}", partial.display()))?;
            std::fs::rename(&partial, path)
                .with_context(|| format!("cannot rename {} to {}", partial.display(), path.display()))?;
            if ctx.cli_json {
                print_json(
                    &json!({ "file": path, "users": counts.users, "memories": counts.memories, "events": counts.events }),
                )?;
            } else {
                eprintln!(
                    "exported {} users, {} memories, {} events to {}",
                    counts.users,
                    counts.memories,
                    counts.events,
                    path.display()
                );
            }
        }
        None => {
            let stdout = std::io::stdout();
            let mut out = std::io::BufWriter::new(stdout.lock());
            membank_engine::export::export(store.as_ref(), &request, &mut out)?;
        }
    }
    Ok(())
}

/// Runs `backup`.
pub fn backup(ctx: &Context, args: BackupArgs) -> Result<()> {
    let db = ctx.sqlite_path("backup")?;
    let store = ctx.open_store_to_read()?;
    let sqlite = store.as_sqlite().ok_or_else(|| anyhow::anyhow!("backup works on a SQLite file"))?;
    let exists = || {
        membank_store::StoreError::Conflict(format!(
            "{} exists already; a backup never overwrites a file",
            args.file.display()
        ))
    };
    if args.file.exists() {
        return Err(exists().into());
    }
    // Written and checked under a temporary name beside the target, and given the final
    // name only then, so a killed or failed backup never leaves a file under that name.
    let partial = partial_name(&args.file);
    let _ = std::fs::remove_file(&partial);
    let written = sqlite
        .backup(&partial)
        .with_context(|| format!("cannot back up {} to {}", db.display(), partial.display()))
        .and_then(|()| Ok(SqliteStore::check_file(&partial)?))
        .and_then(|(version, problems)| {
            if !problems.is_empty() {
                problems.iter().for_each(|p| eprintln!("problem: {p}"));
                bail!("the backup {} failed its check ({} problems)", args.file.display(), problems.len());
            }
            std::fs::File::open(&partial)
                .and_then(|f| f.sync_all())
                .with_context(|| format!("cannot write {}", partial.display()))?;
            // A hard link refuses an existing name, so a file made meanwhile is not replaced.
            match std::fs::hard_link(&partial, &args.file) {
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => return Err(exists().into()),
                other => other.with_context(|| format!("cannot name the backup {}", args.file.display()))?,
            }
            Ok(version)
        });
    let _ = std::fs::remove_file(&partial);
    let version = written?;
    let bytes = std::fs::metadata(&args.file).map(|m| m.len()).unwrap_or(0);
    if ctx.cli_json {
        print_json(&json!({ "file": args.file, "bytes": bytes, "schema_version": version, "ok": true }))?;
    } else {
        println!(
            "backed up {} to {} ({bytes} bytes, schema version {version}, check ok)",
            db.display(),
            args.file.display()
        );
    }
    Ok(())
}

/// The temporary name a backup is written under: beside the target (the same file system,
/// so naming it is a link, not a copy), hidden, and marked with this process.
fn partial_name(target: &std::path::Path) -> std::path::PathBuf {
    let name = target.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_else(|| "backup".into());
    target.with_file_name(format!(".{name}.partial-{}", std::process::id()))
}

/// Runs `check`.
pub fn check(ctx: &Context, args: CheckArgs) -> Result<()> {
    let (location, version, problems, census) = match (&args.file, &ctx.db) {
        (None, membank_store::Location::Postgres(_)) => {
            let store = ctx.open_store()?;
            (ctx.db.clone(), store.schema_version()?, store.integrity_check()?, store.script_census()?)
        }
        (file, _) => {
            let path = match file {
                Some(file) => file.clone(),
                None => ctx.sqlite_path("check")?.to_path_buf(),
            };
            let (version, problems) =
                SqliteStore::check_file(&path).with_context(|| format!("cannot check {}", path.display()))?;
            let census =
                SqliteStore::script_census_file(&path).with_context(|| format!("cannot check {}", path.display()))?;
            (membank_store::Location::Sqlite(path), version, problems, census)
        }
    };
    let path = location.display();
    // Not a problem of integrity, but worth saying: an English-only model given memories in
    // other scripts (the engine warns once as they are stored; this says how many).
    let language = crate::language::check_report(ctx.switch_flags(), &location, &census);
    if ctx.cli_json {
        print_json(&json!({
            "ok": problems.is_empty(),
            "problems": problems,
            "schema_version": version,
            "embedding_model": census.model.as_ref().map(|m| m.id.clone()),
            "active_memories": census.active,
            "other_script_memories": census.other_script,
            "switch_model": language.as_ref().map(|_| crate::language::switch_commands(ctx.switch_flags(), &location)),
        }))?;
    } else {
        if problems.is_empty() {
            println!("ok: {path} (schema version {version})");
        } else {
            problems.iter().for_each(|p| println!("problem: {p}"));
        }
        language.iter().flatten().for_each(|line| println!("{line}"));
    }
    if problems.is_empty() { Ok(()) } else { bail!("integrity check found {} problems", problems.len()) }
}

/// Runs `import membank-export FILE`.
pub fn import(ctx: &Context, file: &std::path::Path, merge: bool) -> Result<()> {
    let mut bytes = Vec::new();
    std::fs::File::open(file)
        .and_then(|f| {
            std::io::Read::read_to_end(
                &mut std::io::Read::take(f, membank_engine::export::MAX_EXPORT_BYTES + 1),
                &mut bytes,
            )
        })
        .with_context(|| format!("cannot read {}", file.display()))?;
    let engine = ctx.engine()?;
    let counts = engine.import_export(&bytes, merge).map_err(|e| {
        let taken = !merge && matches!(&e, membank_engine::EngineError::Conflict(m) if m.contains("already exist:"));
        let err = anyhow::Error::new(e).context(format!("cannot import {}", file.display()));
        if taken {
            return err.context(crate::errors::Hint(format!(
                "to add what is missing to those users, keeping what they have: membank import membank-export {} --merge",
                crate::output::shell_word(&file.to_string_lossy())
            )));
        }
        crate::cmd::import::with_format_hint(err, &bytes, "membank-export", file)
    })?;
    if ctx.cli_json {
        print_json(
            &json!({ "users_created": counts.users_created, "memories": counts.memories, "events": counts.events, "skipped": counts.skipped }),
        )?;
    } else {
        println!(
            "imported {} memories and {} events ({} users created, {} rows already present)",
            counts.memories, counts.events, counts.users_created, counts.skipped
        );
    }
    let _ = std::io::stdout().flush();
    Ok(())
}
