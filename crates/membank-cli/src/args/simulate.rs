//! Flags of `simulate`, which replays a benchmark day by day under a forgetting policy.

use std::path::PathBuf;

use clap::{Args, ValueEnum};

/// Which benchmark to replay.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum BenchmarkName {
    /// The MemoryBank paper's 15 users over 10 days (hit@k, all@k, MRR with --gold).
    Memorybank,
    /// LoCoMo's conversations over months (evidence recall@k per category).
    Locomo,
    /// LongMemEval's questions, each replaying its own haystack (recall@k, recall_any@k,
    /// recall_all@k per question type).
    Longmemeval,
}

/// `simulate …`.
#[derive(Debug, Args)]
pub struct SimulateArgs {
    /// memorybank, locomo or longmemeval.
    #[arg(value_enum)]
    pub benchmark: BenchmarkName,
    /// The benchmark's folder (memorybank: memory_bank_<lang>.json and
    /// probing_questions_<lang>.jsonl; locomo: locomo10.json, or that file itself;
    /// longmemeval: longmemeval_s_cleaned.json or longmemeval_oracle.json, or a folder
    /// holding the first).
    #[arg(long)]
    pub data: PathBuf,
    /// Gold evidence for MemoryBank (JSON lines); without it nothing is scored.
    #[arg(long)]
    pub gold: Option<PathBuf>,
    /// The policy under test (default: the configured one).
    #[arg(long, value_parser = ["memorybank", "fademem", "none"])]
    pub policy: Option<String>,
    /// θ under memorybank, ε under fademem: archive below this retention, in (0, 1).
    #[arg(long)]
    pub threshold: Option<f64>,
    /// Days that pass, with daily maintenance, between the last conversation and the questions.
    #[arg(long, default_value_t = 0)]
    pub gap_days: u64,
    /// LoCoMo conversations, MemoryBank users or LongMemEval questions to replay: 0-based
    /// positions in the data file's order, e.g. 0-4 or 5,6,7 (default: all). The labelled
    /// halves are MemoryBank users 0-7 (tuning) and 8-14 (reporting), LoCoMo conversations
    /// 0-4 and 5-9, LongMemEval-S questions 0-249 and 250-498.
    #[arg(long)]
    pub samples: Option<String>,
    /// MemoryBank language: en or cn.
    #[arg(long, default_value = "en")]
    pub lang: String,
    /// Cut-offs, comma-separated (default: 1,3,5,10 for memorybank, 5,10,25,50 for locomo,
    /// 1,3,5,10,30,50 for longmemeval).
    #[arg(long)]
    pub k: Option<String>,
    /// Draw storage over time and each policy's quality into this SVG file.
    #[arg(long)]
    pub plot: Option<PathBuf>,
    /// Critical-fact labels (JSON lines; memorybank: {"user","date","turn","critical"},
    /// locomo: {"sample","dia_id","critical"}, longmemeval:
    /// {"question_id","session_id","turn","critical"}): report the share of critical turns each way
    /// of keeping still holds, and the importance estimator's ROC AUC against the labels.
    #[arg(long)]
    pub critical: Option<PathBuf>,
}
