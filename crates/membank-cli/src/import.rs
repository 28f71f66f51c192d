//! `membank import memorybank|locomo|longmemeval FILE`: parses the file with the engine's
//! format parser, then imports it (validated first, nothing stored if any record is bad;
//! records already present are skipped, so re-importing adds nothing).

use std::io::Read;
use std::path::PathBuf;

use anyhow::{Context as _, Result};
use clap::{Args, ValueEnum};
use membank_engine::import::{self, MAX_IMPORT_BYTES};
use membank_engine::{EngineError, ImportRequest};
use serde_json::json;

use crate::commands::Context;
use crate::progress::Bar;

/// Which format.
#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum Format {
    /// The reference MemoryBank JSON (users → history → date → turns).
    Memorybank,
    /// LoCoMo's locomo10.json.
    Locomo,
    /// LongMemEval's oracle or S file.
    Longmemeval,
    /// membank's own lossless export (`membank export`): ids and all state kept.
    MembankExport,
}

/// `import`.
#[derive(Debug, Args)]
pub struct ImportArgs {
    /// The file's format.
    pub format: Format,
    /// The file.
    pub file: PathBuf,
    /// membank-export only: add to users that already exist (rows already present are
    /// skipped) instead of refusing them.
    #[arg(long)]
    pub merge: bool,
}

/// Reads at most [`MAX_IMPORT_BYTES`] (+1, to tell "too big" apart).
pub fn read_limited(path: &std::path::Path) -> Result<Vec<u8>> {
    let file = std::fs::File::open(path).with_context(|| format!("cannot read {}", path.display()))?;
    let mut bytes = Vec::new();
    file.take(MAX_IMPORT_BYTES + 1).read_to_end(&mut bytes).with_context(|| format!("cannot read {}", path.display()))?;
    Ok(bytes)
}

/// Runs `import`.
pub fn run(ctx: &Context, args: ImportArgs) -> Result<()> {
    if let Format::MembankExport = args.format {
        return crate::transfer::import(ctx, &args.file, args.merge);
    }
    if args.merge {
        anyhow::bail!("--merge applies to membank-export files only (the other formats skip records already present)");
    }
    let bytes = read_limited(&args.file)?;
    let parsed = match args.format {
        Format::Memorybank => import::memorybank::parse(&bytes),
        Format::Locomo => import::locomo::parse(&bytes),
        Format::Longmemeval => import::longmemeval::parse(&bytes),
        Format::MembankExport => unreachable!("handled above"),
    };
    let set = parsed.map_err(|e| anyhow::Error::new(EngineError::Invalid(e)).context(format!("cannot import {}", args.file.display())))?;
    drop(bytes);
    let engine = ctx.engine()?;
    let bar = Bar::new();
    let report = engine.import(ImportRequest { tenant: ctx.tenant.clone(), set }, &|done, total| bar.update("embedding", done, total))?;
    bar.finish();
    if ctx.cli_json {
        println!("{}", serde_json::to_string_pretty(&json!({ "users": report.users, "records": report.records, "imported": report.imported, "skipped": report.skipped }))?);
    } else {
        println!("imported {} of {} records for {} users ({} already present)", report.imported, report.records, report.users, report.skipped);
    }
    Ok(())
}
