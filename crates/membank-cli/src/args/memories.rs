//! Flags of the commands on one user's memories: writing (`remember`, `note`), reading
//! (`recall`, `list`, `show`, `events`), changing state (`forget`, `restore`, `pin`,
//! `unpin`, `erase`), forgetting runs (`sweep`, `maintain`) and `users`.

use std::path::PathBuf;

use clap::Args;
use membank_engine::core::ClockFrom;

/// `remember`.
#[derive(Debug, Args)]
#[command(group(clap::ArgGroup::new("said").required(true).multiple(false)))]
pub struct RememberArgs {
    /// The person the memory is about.
    #[arg(long)]
    pub user: String,
    /// What the person said (or --user-text-file).
    #[arg(long, group = "said")]
    pub user_text: Option<String>,
    /// Read what the person said from a file (`-` for standard input).
    #[arg(long, group = "said")]
    pub user_text_file: Option<PathBuf>,
    /// The assistant's reply.
    #[arg(long, conflicts_with = "assistant_text_file")]
    pub assistant_text: Option<String>,
    /// Read the assistant's reply from a file.
    #[arg(long)]
    pub assistant_text_file: Option<PathBuf>,
    /// When it was said: an RFC 3339 time (2024-05-04T18:30:00+02:00) or a date
    /// (2024-05-04, the person's local midnight); default now.
    #[arg(long)]
    pub at: Option<String>,
    /// Where the forgetting clock of a backdated memory starts: `import` (when it is
    /// stored; it starts as fresh as a new memory) or `event` (at --at: an exchange a
    /// year old is a year old at once, and usually past the archive threshold).
    #[arg(long, default_value = "import", value_parser = parse_clock_from)]
    pub clock_from: ClockFrom,
    /// How much it matters, 0 to 1 (FadeMem's base importance; default: estimated from the text).
    #[arg(long)]
    pub importance: Option<f64>,
    /// Agent label.
    #[arg(long)]
    pub agent: Option<String>,
    /// Session label.
    #[arg(long)]
    pub session: Option<String>,
}

/// `note`.
#[derive(Debug, Args)]
#[command(group(clap::ArgGroup::new("said").required(true).multiple(false)))]
pub struct NoteArgs {
    /// The person the note is about.
    #[arg(long)]
    pub user: String,
    /// The note (or --text-file).
    #[arg(long, group = "said")]
    pub text: Option<String>,
    /// Read the note from a file (`-` for standard input).
    #[arg(long, group = "said")]
    pub text_file: Option<PathBuf>,
    /// Who said it: agent (default), user or assistant.
    #[arg(long, default_value = "agent")]
    pub source: String,
    /// When it happened: an RFC 3339 time or a date (the person's local midnight); default now.
    #[arg(long)]
    pub at: Option<String>,
    /// Where the forgetting clock of a backdated note starts: `import` (when it is stored)
    /// or `event` (at --at).
    #[arg(long, default_value = "import", value_parser = parse_clock_from)]
    pub clock_from: ClockFrom,
    /// How much it matters, 0 to 1 (FadeMem's base importance; default: estimated from the text).
    #[arg(long)]
    pub importance: Option<f64>,
    /// Agent label.
    #[arg(long)]
    pub agent: Option<String>,
    /// Session label.
    #[arg(long)]
    pub session: Option<String>,
}

/// `recall`.
#[derive(Debug, Args)]
pub struct RecallArgs {
    /// Whose memories.
    #[arg(long)]
    pub user: String,
    /// The query.
    #[arg(long)]
    pub query: String,
    /// How many results.
    #[arg(long, default_value_t = 5)]
    pub k: usize,
    /// The query's time: RFC 3339, or a date (the person's local midnight); default now.
    #[arg(long)]
    pub now: Option<String>,
    /// Only these kinds (repeatable).
    #[arg(long = "kind")]
    pub kinds: Vec<String>,
    /// Only memories on or after this day (YYYY-MM-DD).
    #[arg(long)]
    pub from: Option<String>,
    /// Only memories on or before this day (YYYY-MM-DD).
    #[arg(long)]
    pub to: Option<String>,
    /// Include archived memories (audit).
    #[arg(long)]
    pub include_archived: bool,
    /// Inspect only: do not strengthen or log.
    #[arg(long)]
    pub no_strengthen: bool,
    /// Rank fading memories lower.
    #[arg(long)]
    pub weight_by_retention: bool,
    /// Consult the archived memories: auto (when the active ones do not answer well: an
    /// archived memory closer to the query than the best active one by the margin), never,
    /// or always. A strengthening recall brings back what it returns from the archive.
    #[arg(long, default_value = "auto", value_parser = ["auto", "never", "always"])]
    pub reminisce: String,
    /// Agent label to narrow to.
    #[arg(long)]
    pub agent: Option<String>,
    /// Session label to narrow to.
    #[arg(long)]
    pub session: Option<String>,
}

/// `list`.
#[derive(Debug, Args)]
pub struct ListArgs {
    /// Whose memories.
    #[arg(long)]
    pub user: String,
    /// Only these statuses (repeatable; default active).
    #[arg(long = "status")]
    pub statuses: Vec<String>,
    /// Every status but erased.
    #[arg(long, conflicts_with = "statuses")]
    pub all: bool,
    /// Only these kinds (repeatable).
    #[arg(long = "kind")]
    pub kinds: Vec<String>,
    /// Only pinned memories.
    #[arg(long)]
    pub pinned: bool,
    /// Only memories on or after this day.
    #[arg(long)]
    pub from: Option<String>,
    /// Only memories on or before this day.
    #[arg(long)]
    pub to: Option<String>,
    /// Page size.
    #[arg(long, default_value_t = 50)]
    pub limit: usize,
    /// Memories to skip.
    #[arg(long, default_value_t = 0)]
    pub offset: usize,
    /// Oldest first.
    #[arg(long)]
    pub oldest_first: bool,
}

/// Commands that take memory ids.
#[derive(Debug, Args)]
pub struct IdsArgs {
    /// Whose memories.
    #[arg(long)]
    pub user: String,
    /// Memory ids.
    #[arg(required = true)]
    pub ids: Vec<String>,
}

/// `forget`.
#[derive(Debug, Args)]
pub struct ForgetArgs {
    /// Whose memories, and which.
    #[command(flatten)]
    pub target: IdsArgs,
    /// Why (kept in the event log).
    #[arg(long)]
    pub reason: Option<String>,
}

/// `erase`.
#[derive(Debug, Args)]
pub struct EraseArgs {
    /// Whose memories, and which.
    #[command(flatten)]
    pub target: IdsArgs,
    /// Erase without asking. Needed when the input is not a terminal: erasure cannot be
    /// undone.
    #[arg(long)]
    pub yes: bool,
}

/// `--clock-from`: `event` or `import`.
pub fn parse_clock_from(value: &str) -> Result<ClockFrom, String> {
    value.parse::<ClockFrom>().map_err(|e| e.reason)
}

/// `sweep`.
#[derive(Debug, Args)]
#[command(group(clap::ArgGroup::new("who").required(true).multiple(false)))]
pub struct SweepArgs {
    /// Whose memories (or --all-users).
    #[arg(long, group = "who")]
    pub user: Option<String>,
    /// Sweep every user of the tenant, one at a time.
    #[arg(long, group = "who")]
    pub all_users: bool,
    /// The sweep's time: RFC 3339, or a date (the person's local midnight); default now.
    #[arg(long)]
    pub now: Option<String>,
    /// Report what would be archived; change nothing.
    #[arg(long)]
    pub dry_run: bool,
    /// Largest fraction of examined memories to archive in this pass.
    #[arg(long)]
    pub max_fraction: Option<f64>,
    /// Do not ask, on a terminal, before archiving more than half of a user's active
    /// memories (scripts, whose input is not a terminal, are never asked).
    #[arg(long)]
    pub yes: bool,
}

/// `maintain`.
#[derive(Debug, Args)]
#[command(group(clap::ArgGroup::new("who").required(true).multiple(false)))]
pub struct MaintainArgs {
    /// Whose memories (or --all-users).
    #[arg(long, group = "who")]
    pub user: Option<String>,
    /// Every user of the tenant, one at a time.
    #[arg(long, group = "who")]
    pub all_users: bool,
    /// The cycle's time: RFC 3339, or a date (the person's local midnight); default now.
    #[arg(long)]
    pub now: Option<String>,
    /// Report what the cycle would do; change nothing and make no LLM calls.
    #[arg(long)]
    pub dry_run: bool,
}

/// `events`.
#[derive(Debug, Args)]
pub struct EventsArgs {
    /// Whose log.
    #[arg(long)]
    pub user: String,
    /// Only events about this memory.
    #[arg(long)]
    pub memory: Option<String>,
    /// Only events after this log position.
    #[arg(long)]
    pub after: Option<i64>,
    /// Page size.
    #[arg(long, default_value_t = 1000)]
    pub limit: usize,
}

/// `users`.
#[derive(Debug, Args)]
pub struct UsersArgs {
    /// Set this user's time zone (with --time-zone).
    #[arg(long, requires = "time_zone")]
    pub user: Option<String>,
    /// IANA time zone such as Asia/Shanghai.
    #[arg(long, requires = "user")]
    pub time_zone: Option<String>,
}
