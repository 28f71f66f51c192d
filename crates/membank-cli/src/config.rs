//! Configuration at the edge: one typed struct, built as defaults < file < environment <
//! flags. Libraries never read files or environment variables; they get this struct's
//! parts.
//!
//! The file is TOML, from `--config`, else `$MEMBANK_CONFIG`, else
//! `<config dir>/membank/config.toml` if present. Environment variables and flags are
//! declared on the clap arguments (`env = …`), so clap applies "flag over env" and this
//! module applies "either over file over default".

use std::path::PathBuf;

use anyhow::{Context, Result, bail};
use membank_engine::core::forgetting::{DecisionMode, ForgettingPolicy, RecallMode};
use membank_engine::{EngineConfig, RecallConfig};
use serde::Deserialize;

/// The configuration file's shape. Every field is optional.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FileConfig {
    /// Database file.
    pub db: Option<PathBuf>,
    /// Tenant for CLI operations.
    pub tenant: Option<String>,
    /// Embedding settings.
    #[serde(default)]
    pub embedding: EmbeddingFile,
    /// Forgetting settings.
    #[serde(default)]
    pub forgetting: ForgettingFile,
    /// Recall settings.
    #[serde(default)]
    pub recall: RecallFile,
    /// Chat model settings (summaries, portraits, the companion).
    #[serde(default)]
    pub llm: crate::llm_config::LlmFile,
}

/// `[embedding]`.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EmbeddingFile {
    /// `local` (default) or `openai`.
    pub provider: Option<String>,
    /// Local model directory.
    pub model_dir: Option<PathBuf>,
    /// Local model by name (`all-MiniLM-L6-v2`, `multilingual-e5-small`): its default
    /// directory unless `model_dir` is set, and the model that directory must hold.
    pub local_model: Option<String>,
    /// Threads of the local model.
    pub threads: Option<usize>,
    /// OpenAI-compatible base URL, e.g. `http://localhost:11434/v1`.
    pub base_url: Option<String>,
    /// Remote model name.
    pub model: Option<String>,
    /// Remote API key (prefer the environment variable).
    pub api_key: Option<String>,
}

/// `[forgetting]`.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ForgettingFile {
    /// `threshold` (default), `stochastic` or `rank`.
    pub mode: Option<String>,
    /// Threshold θ.
    pub threshold: Option<f64>,
    /// Seed of stochastic draws.
    pub seed: Option<u64>,
    /// Unit of t in seconds (default 86400).
    pub unit_seconds: Option<i64>,
    /// `retrieved` (default) or `used`.
    pub recall_mode: Option<String>,
    /// Largest fraction one sweep may archive.
    pub max_archive_fraction: Option<f64>,
}

/// `[recall]`.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RecallFile {
    /// Candidates per retriever.
    pub candidates: Option<usize>,
    /// Weight results by retention.
    pub weight_by_retention: Option<bool>,
    /// Fusion weight of day-restricted lists for exact dates in a query (0: off).
    pub exact_time_weight: Option<f64>,
    /// The same for vague spans ("last week").
    pub fuzzy_time_weight: Option<f64>,
    /// Share of a candidate's score lent to its adjacent turns (0: off).
    pub neighbour_weight: Option<f64>,
    /// Share of a whole exchange's score lent to the next exchange of its day (0: off).
    pub exchange_neighbour_weight: Option<f64>,
    /// Boost of memories whose `speaker` the query names (0: off).
    pub speaker_weight: Option<f64>,
    /// Fusion weight of the dense (embedding) list.
    pub dense_weight: Option<f64>,
    /// Fusion weight of the lexical (BM25) list.
    pub lexical_weight: Option<f64>,
}

/// Reads the file named by `explicit` (must exist) or the default location (may be absent).
pub fn load_file(explicit: Option<&PathBuf>) -> Result<FileConfig> {
    let path = match explicit {
        Some(path) => path.clone(),
        None => match dirs::config_dir().map(|d| d.join("membank").join("config.toml")) {
            Some(path) if path.exists() => path,
            _ => return Ok(FileConfig::default()),
        },
    };
    let bytes = std::fs::read(&path).with_context(|| format!("cannot read config file {}", path.display()))?;
    let text = String::from_utf8(bytes).map_err(|_| anyhow::anyhow!("config file {} is not valid UTF-8", path.display()))?;
    toml::from_str(&text).with_context(|| format!("config file {} is invalid", path.display()))
}

/// Engine settings from the file and the flag/env overrides.
pub fn engine_config(file: &FileConfig, mode: Option<&str>, threshold: Option<f64>, seed: Option<u64>, recall_mode: Option<&str>) -> Result<EngineConfig> {
    let f = &file.forgetting;
    let mut policy = ForgettingPolicy::default();
    if let Some(unit) = f.unit_seconds {
        if unit <= 0 {
            bail!("forgetting.unit_seconds must be positive");
        }
        policy.unit = chrono::Duration::seconds(unit);
    }
    let theta = threshold.or(f.threshold).unwrap_or(0.05);
    policy.mode = match mode.or(f.mode.as_deref()).unwrap_or("threshold") {
        "threshold" => DecisionMode::Threshold { theta },
        "stochastic" => DecisionMode::Stochastic { seed: seed.or(f.seed).unwrap_or(0) },
        "rank" => DecisionMode::Rank,
        other => bail!("forgetting mode {other:?} is not one of: threshold, stochastic, rank"),
    };
    policy.recall_mode = match recall_mode.or(f.recall_mode.as_deref()).unwrap_or("retrieved") {
        "retrieved" => RecallMode::Retrieved,
        "used" => RecallMode::Used,
        other => bail!("recall mode {other:?} is not one of: retrieved, used"),
    };
    if let Some(fraction) = f.max_archive_fraction {
        policy.max_archive_fraction = fraction;
    }
    policy.validate()?;
    let mut recall = RecallConfig::default();
    if let Some(candidates) = file.recall.candidates {
        recall.candidates = candidates.clamp(1, 10_000);
    }
    if let Some(weight) = file.recall.weight_by_retention {
        recall.weight_by_retention = weight;
    }
    for (value, field, name) in [
        (file.recall.exact_time_weight, &mut recall.exact_time_weight, "exact_time_weight"),
        (file.recall.fuzzy_time_weight, &mut recall.fuzzy_time_weight, "fuzzy_time_weight"),
        (file.recall.neighbour_weight, &mut recall.neighbour_weight, "neighbour_weight"),
        (file.recall.exchange_neighbour_weight, &mut recall.exchange_neighbour_weight, "exchange_neighbour_weight"),
        (file.recall.speaker_weight, &mut recall.speaker_weight, "speaker_weight"),
        (file.recall.dense_weight, &mut recall.dense_weight, "dense_weight"),
        (file.recall.lexical_weight, &mut recall.lexical_weight, "lexical_weight"),
    ] {
        if let Some(value) = value {
            if !(0.0..=100.0).contains(&value) {
                bail!("recall.{name} must be between 0 and 100");
            }
            *field = value;
        }
    }
    Ok(EngineConfig { forgetting: policy, recall })
}
