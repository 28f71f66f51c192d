//! Flags of the LLM commands: `summarize`, `profile` and `chat`.

use clap::Args;

/// `summarize`.
#[derive(Debug, Args)]
pub struct SummarizeArgs {
    /// Whose memories.
    #[arg(long, required_unless_present = "all_users")]
    pub user: Option<String>,
    /// Every user of the tenant, one at a time.
    #[arg(long, conflicts_with = "user")]
    pub all_users: bool,
    /// Redo every day and the globals even if nothing changed.
    #[arg(long)]
    pub force: bool,
}

/// `profile`.
#[derive(Debug, Args)]
pub struct ProfileArgs {
    /// Whose profile.
    #[arg(long)]
    pub user: String,
}

/// `chat`.
#[derive(Debug, Args)]
pub struct ChatArgs {
    /// Who is talking.
    #[arg(long)]
    pub user: String,
    /// Send this one message and exit (default: an interactive session on standard input).
    #[arg(long)]
    pub message: Option<String>,
    /// Memories recalled for each message.
    #[arg(long, default_value_t = 8)]
    pub k: usize,
    /// Who the companion is.
    #[arg(long)]
    pub persona: Option<String>,
    /// The message's time: RFC 3339, or a date (the person's local midnight); default now.
    #[arg(long)]
    pub now: Option<String>,
}
