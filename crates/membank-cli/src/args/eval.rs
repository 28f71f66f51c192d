//! Flags of `eval …`, the retrieval benchmarks.

use std::path::PathBuf;

use clap::{Args, Subcommand, ValueEnum};
use membank_eval::selection::{Conversations, Half};

/// Where the evaluation database lives.
#[derive(Debug, Args)]
pub struct EvalDb {
    /// Use this database file (created if missing; reused if it holds the data already).
    #[arg(long)]
    pub eval_db: Option<PathBuf>,
    /// Build a fresh database in a scratch directory, removed afterwards.
    #[arg(long, conflicts_with = "eval_db")]
    pub fresh: bool,
}

/// `eval …`.
#[derive(Debug, Subcommand)]
pub enum EvalCommand {
    /// The MemoryBank paper's probing questions: hit@k, all@k, MRR.
    Memorybank {
        /// Folder with memory_bank_<lang>.json and probing_questions_<lang>.jsonl.
        #[arg(long, default_value = "../shared/data/memorybank")]
        data: PathBuf,
        /// en or cn.
        #[arg(long, default_value = "en")]
        lang: String,
        /// Gold evidence (JSON lines); without it the questions run unscored.
        #[arg(long)]
        gold: Option<PathBuf>,
        /// Cut-offs, comma-separated.
        #[arg(long, default_value = "1,3,5,10")]
        k: String,
        /// Ask at this time (RFC 3339) instead of the day after each user's last date.
        #[arg(long)]
        now: Option<String>,
        /// Database choice.
        #[command(flatten)]
        db: EvalDb,
    },
    /// LoCoMo: evidence recall@k per category.
    Locomo {
        /// locomo10.json.
        #[arg(long, default_value = "../shared/data/locomo/locomo10.json")]
        data: PathBuf,
        /// Cut-offs, comma-separated.
        #[arg(long, default_value = "5,10,25,50")]
        k: String,
        /// Score only these conversations, by position in the file from 0: `0-4` is the
        /// half to tune recall on, `5-9` the half held apart to report; one number scores
        /// one conversation. Every conversation is still imported.
        #[arg(long, value_name = "FIRST-LAST", value_parser = clap::value_parser!(Conversations))]
        conversations: Option<Conversations>,
        /// Database choice.
        #[command(flatten)]
        db: EvalDb,
    },
    /// LongMemEval: the official retrieval protocol (recall_all@k, ndcg_any@k; session and turn level).
    Longmemeval {
        /// longmemeval_s_cleaned.json (decompressed) or longmemeval_oracle.json.
        #[arg(long)]
        data: PathBuf,
        /// Only the first N questions.
        #[arg(long)]
        limit: Option<usize>,
        /// Score only half of the questions, by position in the file (after --limit):
        /// 1, the first half, to tune recall on; 2, the second, held apart to report.
        /// Every haystack is still imported. The halves differ in question types (most
        /// temporal-reasoning questions are in the second), so compare a half with itself.
        #[arg(long, value_name = "1|2", value_parser = clap::value_parser!(Half))]
        half: Option<Half>,
        /// Database choice.
        #[command(flatten)]
        db: EvalDb,
    },
    /// Importance estimators against the critical-turn labels (`bench/critical`): ROC AUC
    /// per data set and half. `llm` rates the turns with the configured chat model under the
    /// prompt the engine uses (`importance@v1`), a batch of one person's turns per call, to
    /// measure a model before it rates a deployment's memories.
    Importance {
        /// The labels: memorybank_en.jsonl, memorybank_cn.jsonl, locomo.jsonl, longmemeval.jsonl
        /// and their rules (RULES.md).
        #[arg(long, default_value = "bench/critical")]
        labels: PathBuf,
        /// Folder with memorybank/memory_bank_{en,cn}.json and locomo/locomo10.json.
        #[arg(long, default_value = "../shared/data")]
        data: PathBuf,
        /// longmemeval_s_cleaned.json, decompressed; without it LongMemEval's labels are left out.
        #[arg(long)]
        longmemeval: Option<PathBuf>,
        /// Which estimators, comma-separated: `lexical` (salience-v1), `probe` (the importance
        /// probe of the local models: all-MiniLM-L6-v2 for English, multilingual-e5-small for
        /// Chinese, as a store of that language reads its memories), `llm` (the configured
        /// chat model).
        #[arg(long, value_enum, value_delimiter = ',', default_value = "lexical,probe")]
        estimator: Vec<ImportanceEstimator>,
        /// Which halves (bench/critical/RULES.md): `tune`, the half estimators are fitted and
        /// chosen on; `report`, the half held apart; or `all`.
        #[arg(long, value_enum, default_value = "all")]
        half: LabelHalf,
        /// Score at most N turns of each set and half, spread evenly over it (an LLM's calls
        /// cost time and money: `--sample 100` rates 800 turns).
        #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=100_000))]
        sample: Option<u32>,
        /// Also write each scored turn as a JSON line: set, half, group, label and every
        /// estimator's score (null where the model gave none).
        #[arg(long, value_name = "FILE")]
        scores: Option<PathBuf>,
    },
}

/// An importance estimator `eval importance` can score.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ImportanceEstimator {
    /// The lexical rules (salience-v1).
    Lexical,
    /// The importance probe of the local embedding models.
    Probe,
    /// The configured chat model, prompt importance@v1.
    Llm,
}

/// Which halves of the labelled sets.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum LabelHalf {
    /// The tuning halves.
    Tune,
    /// The reporting halves.
    Report,
    /// Both.
    All,
}
