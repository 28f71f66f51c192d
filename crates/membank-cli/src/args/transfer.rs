//! Flags of the commands that move data in and out of a store: `export`, `backup`,
//! `check`, `import` and `migrate`.

use std::path::PathBuf;

use clap::{Args, ValueEnum};
use membank_engine::core::ClockFrom;

use super::memories::parse_clock_from;

/// `export`.
#[derive(Debug, Args)]
pub struct ExportArgs {
    /// Export this user (of the tenant given by --tenant).
    #[arg(long, conflicts_with = "all_users")]
    pub user: Option<String>,
    /// Export every user of every tenant.
    #[arg(long)]
    pub all_users: bool,
    /// Write here instead of stdout (refused if it exists).
    #[arg(long, short)]
    pub output: Option<PathBuf>,
    /// Include each memory's vector and the model that made it, and recent recall queries.
    #[arg(long)]
    pub vectors: bool,
}

/// `backup`.
#[derive(Debug, Args)]
pub struct BackupArgs {
    /// Where to write the copy (must not exist).
    pub file: PathBuf,
}

/// `check`.
#[derive(Debug, Args)]
pub struct CheckArgs {
    /// A database file to check instead of --db (a backup, say); it is not changed.
    pub file: Option<PathBuf>,
}

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

impl Format {
    /// The subcommand's name, as typed.
    pub fn name(self) -> &'static str {
        match self {
            Format::Memorybank => "memorybank",
            Format::Locomo => "locomo",
            Format::Longmemeval => "longmemeval",
            Format::MembankExport => "membank-export",
        }
    }
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
    /// Where the imported memories' forgetting clocks start: `import` (now: a migrated
    /// history starts as fresh as new memories and fades from here on) or `event` (each
    /// record's own date, as the MemoryBank paper replays it: old exchanges are old at
    /// once, and the next sweep archives those past the threshold). Not for
    /// membank-export, which keeps every memory's own state.
    #[arg(long, value_parser = parse_clock_from)]
    pub clock_from: Option<ClockFrom>,
}

/// `migrate`.
#[derive(Debug, Args)]
pub struct MigrateArgs {
    /// The store to copy from: a SQLite file (it must exist) or a postgres:// URL. Nothing
    /// in it is changed.
    #[arg(long, value_name = "PATH|URL")]
    pub from: String,
    /// The store to copy into: a SQLite file (created when missing) or a postgres:// URL (its
    /// schema created when empty). It may hold other users; the source's users must be new
    /// to it, or hold exactly what they hold in the source (a run that was interrupted).
    #[arg(long, value_name = "PATH|URL")]
    pub to: String,
    /// Most memories and events written in one transaction (several small users go in one;
    /// a larger user is written in chunks of this many). Memory use grows with it.
    #[arg(long, value_name = "ROWS", default_value_t = 10_000, value_parser = clap::value_parser!(u64).range(1..=1_000_000))]
    pub batch: u64,
    /// Transactions written at once (default: 2 into PostgreSQL, whose server then works on
    /// two cores; 1 into SQLite, which has one writer). Each batch creates its users as it
    /// starts, so the target lists users in the source's order; with 1 that is certain,
    /// with more only nearly (a batch started late could list its users after the next's).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..=16))]
    pub jobs: Option<u64>,
}
