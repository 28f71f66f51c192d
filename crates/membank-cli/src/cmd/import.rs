//! `membank import memorybank|locomo|longmemeval FILE`: parses the file with the engine's
//! format parser, then imports it (validated first, nothing stored if any record is bad;
//! records already present are skipped, so re-importing adds nothing).

use std::io::Read;

use anyhow::{Context as _, Result};
use membank_engine::core::{ClockFrom, Scope};
use membank_engine::import::{self, MAX_IMPORT_BYTES};
use membank_engine::{EngineError, ImportRequest, SweepRequest};
use serde_json::json;

use crate::args::transfer::{Format, ImportArgs};
use crate::context::Context;
use crate::errors::UsageError;
use crate::progress::Bar;

/// Reads at most [`MAX_IMPORT_BYTES`] (+1, to tell "too big" apart).
pub fn read_limited(path: &std::path::Path) -> Result<Vec<u8>> {
    let file = std::fs::File::open(path).with_context(|| format!("cannot read {}", path.display()))?;
    let mut bytes = Vec::new();
    file.take(MAX_IMPORT_BYTES + 1)
        .read_to_end(&mut bytes)
        .with_context(|| format!("cannot read {}", path.display()))?;
    Ok(bytes)
}

/// Runs `import`.
pub fn run(ctx: &Context, args: ImportArgs) -> Result<()> {
    let parse = match args.format {
        Format::MembankExport => {
            if args.clock_from.is_some() {
                anyhow::bail!(UsageError("--clock-from does not apply to membank-export files, which keep each memory's own forgetting state".into()));
            }
            return crate::cmd::transfer::import(ctx, &args.file, args.merge);
        }
        Format::Memorybank => import::memorybank::parse,
        Format::Locomo => import::locomo::parse,
        Format::Longmemeval => import::longmemeval::parse,
    };
    if args.merge {
        anyhow::bail!(UsageError(
            "--merge applies to membank-export files only (the other formats skip records already present)".into()
        ));
    }
    let clock_from = args.clock_from.unwrap_or_default();
    let bytes = read_limited(&args.file)?;
    let set = parse(&bytes).map_err(|e| {
        let err = anyhow::Error::new(EngineError::Invalid(e)).context(format!("cannot import {}", args.file.display()));
        with_format_hint(err, &bytes, args.format.name(), &args.file)
    })?;
    drop(bytes);
    let users: Vec<_> = set.users.iter().map(|u| u.user.clone()).collect();
    let engine = ctx.engine()?;
    let bar = Bar::new();
    let report = engine.import(ImportRequest { tenant: ctx.tenant.clone(), set, clock_from }, &|done, total| {
        bar.update("embedding", done, total)
    })?;
    bar.finish();
    // What the next sweep would archive right away: with the clock from each event's date,
    // most of an old history is already past the threshold, and the person should know.
    let mut past_threshold = 0;
    for user in users.iter().collect::<std::collections::BTreeSet<_>>() {
        let scope = Scope::user(ctx.tenant.clone(), user.clone());
        past_threshold += engine
            .sweep(SweepRequest { scope, now: None, dry_run: true, max_archive_fraction: Some(1.0) })?
            .archived
            .len();
    }
    if ctx.cli_json {
        println!(
            "{}",
            serde_json::to_string_pretty(
                &json!({ "users": report.users, "records": report.records, "imported": report.imported, "skipped": report.skipped, "clock_from": clock_from.as_str(), "past_threshold": past_threshold })
            )?
        );
    } else {
        let users = if report.users == 1 { "1 user".to_string() } else { format!("{} users", report.users) };
        println!(
            "imported {} of {} records for {users} ({} already present)",
            report.imported, report.records, report.skipped
        );
        match clock_from {
            ClockFrom::Import => {
                println!("forgetting clocks start now (--clock-from import): the imported memories fade from today on")
            }
            ClockFrom::Event => println!("forgetting clocks start at each record's date (--clock-from event)"),
        }
        if past_threshold > 0 {
            println!(
                "{past_threshold} memories are already past the archive threshold: the next sweep archives them (see `membank sweep --dry-run --all-users`)"
            );
        }
    }
    Ok(())
}

/// The import format `bytes` look like, judged from their shape alone: a membank-export
/// header line, LongMemEval's or LoCoMo's list of samples, MemoryBank's users with a
/// `history`. `None` when none fits.
pub fn sniff(bytes: &[u8]) -> Option<&'static str> {
    let text = std::str::from_utf8(bytes).ok()?.trim_start();
    let first_line = text.lines().next()?;
    if let Ok(serde_json::Value::Object(header)) = serde_json::from_str::<serde_json::Value>(first_line)
        && header.get("format").and_then(|f| f.as_str()) == Some("membank-export")
    {
        return Some("membank-export");
    }
    match serde_json::from_str::<serde_json::Value>(text).ok()? {
        serde_json::Value::Array(items) => {
            let first = items.first()?.as_object()?;
            if first.contains_key("haystack_sessions") {
                Some("longmemeval")
            } else if first.contains_key("conversation") {
                Some("locomo")
            } else {
                None
            }
        }
        serde_json::Value::Object(users) => {
            users.values().any(|u| u.get("history").is_some_and(|h| h.is_object())).then_some("memorybank")
        }
        _ => None,
    }
}

/// Adds a hint naming the right subcommand when a file that `format` could not read looks
/// like another known format.
pub fn with_format_hint(err: anyhow::Error, bytes: &[u8], format: &str, file: &std::path::Path) -> anyhow::Error {
    match sniff(bytes) {
        Some(other) if other != format => err.context(crate::errors::Hint(format!(
            "this looks like a {other} file: membank import {other} {}",
            crate::output::shell_word(&file.to_string_lossy())
        ))),
        _ => err,
    }
}
