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
use membank_engine::core::FadeMemParams;
use membank_engine::core::forgetting::{DecisionMode, DecisionModeName, ForgettingPolicy, PolicyKind, RecallMode};
use membank_engine::{EngineConfig, RecallConfig};
use serde::Deserialize;

use crate::args::{CACHE_BUDGET, DEFAULT_QUERY_CACHE_MB, MibBudget, QUERY_CACHE_BUDGET};

/// The configuration file's shape. Every field is optional.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FileConfig {
    /// Database: a SQLite file or a `postgres://` URL.
    pub db: Option<String>,
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
    /// Background maintenance of `membank serve`.
    #[serde(default)]
    pub maintenance: MaintenanceFile,
    /// The in-process search caches.
    #[serde(default)]
    pub cache: CacheFile,
    /// `membank serve`'s connections: timeouts and trusted proxies.
    #[serde(default)]
    pub server: ServerFile,
}

/// `[server]`: how `membank serve` treats its connections.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ServerFile {
    /// Reverse proxies whose `X-Forwarded-For` names the client (addresses or CIDR blocks;
    /// default none: the header is ignored).
    pub trusted_proxies: Option<Vec<String>>,
    /// A request head must arrive within this long, also the idle keep-alive bound (`10s`).
    pub header_timeout: Option<toml::Value>,
    /// A request body must arrive within this long after its head (`30s`).
    pub body_timeout: Option<toml::Value>,
    /// The longest one write may wait on a client that does not read (`30s`).
    pub write_timeout: Option<toml::Value>,
    /// After SIGTERM, connections still open after this long are dropped (`10s`).
    pub shutdown_timeout: Option<toml::Value>,
}

/// `[server]` resolved against the server's defaults.
pub fn server(file: &FileConfig) -> Result<(membank_server::TrustedProxies, membank_server::Timeouts)> {
    let f = &file.server;
    let proxies = membank_server::TrustedProxies::parse(f.trusted_proxies.as_deref().unwrap_or_default())
        .map_err(|reason| crate::errors::UsageError(format!("server.trusted_proxies in the config file: {reason}")))?;
    let mut t = membank_server::Timeouts::default();
    for (field, value, slot) in [
        ("server.header_timeout", &f.header_timeout, &mut t.header),
        ("server.body_timeout", &f.body_timeout, &mut t.body),
        ("server.write_timeout", &f.write_timeout, &mut t.write),
        ("server.shutdown_timeout", &f.shutdown_timeout, &mut t.shutdown),
    ] {
        if let Some(value) = value {
            *slot = parse_interval(field, value)?;
        }
    }
    Ok((proxies, t))
}

/// `[maintenance]`: the cycles `membank serve` runs by itself.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MaintenanceFile {
    /// Run maintenance in the background (default true).
    pub enabled: Option<bool>,
    /// How long after a user's last cycle the next is due: seconds, or a number with a unit
    /// (`90s`, `30m`, `12h`, `1d`). Default `1d`.
    pub interval: Option<toml::Value>,
    /// Also run a user's cycle after this many new turns (default: off).
    pub every_turns: Option<u64>,
    /// Most users visited per background pass (default 100).
    pub per_pass: Option<usize>,
}

/// The background maintenance settings, resolved.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Maintenance {
    /// Whether `serve` runs cycles by itself.
    pub enabled: bool,
    /// A user's cycle is due this long after the last one.
    pub interval: std::time::Duration,
    /// Also due after this many new turns.
    pub every_turns: Option<u64>,
    /// Most users per pass.
    pub per_pass: usize,
}

/// Parses `90`, `"90s"`, `"30m"`, `"12h"`, `"1d"` into a duration of at least one second.
pub fn parse_interval(field: &str, value: &toml::Value) -> Result<std::time::Duration> {
    let seconds = match value {
        toml::Value::Integer(n) => *n,
        toml::Value::String(text) => {
            let text = text.trim();
            let (number, unit) = text.split_at(text.find(|c: char| !c.is_ascii_digit()).unwrap_or(text.len()));
            let n: i64 = number
                .parse()
                .map_err(|_| anyhow::anyhow!("{field} {text:?} is not a duration such as 90s, 30m, 12h or 1d"))?;
            let scale = match unit.trim() {
                "" | "s" => 1,
                "m" => 60,
                "h" => 3600,
                "d" => 86_400,
                other => bail!("{field} unit {other:?} is not one of: s, m, h, d"),
            };
            n.checked_mul(scale).ok_or_else(|| anyhow::anyhow!("{field} {text:?} is too long"))?
        }
        other => bail!("{field} must be a number of seconds or a string such as \"1d\", not {other}"),
    };
    if !(1..=366 * 86_400).contains(&seconds) {
        bail!("{field} must be between 1 second and 366 days");
    }
    Ok(std::time::Duration::from_secs(seconds as u64))
}

/// `[maintenance]` resolved against its defaults.
pub fn maintenance(file: &FileConfig) -> Result<Maintenance> {
    let m = &file.maintenance;
    let interval = match &m.interval {
        Some(value) => parse_interval("maintenance.interval", value)?,
        None => std::time::Duration::from_secs(86_400),
    };
    if m.every_turns == Some(0) {
        bail!("maintenance.every_turns must be at least 1 (leave it out to turn it off)");
    }
    let per_pass = m.per_pass.unwrap_or(100);
    if !(1..=100_000).contains(&per_pass) {
        bail!("maintenance.per_pass must be between 1 and 100000");
    }
    Ok(Maintenance { enabled: m.enabled.unwrap_or(true), interval, every_turns: m.every_turns, per_pass })
}

/// `[cache]`: how much memory the per-user search caches may keep.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CacheFile {
    /// The budget in MiB, shared by every user's vectors and BM25 index (read as any TOML
    /// value so that a wrong one gets the same message as a wrong flag).
    pub max_mb: Option<toml::Value>,
}

/// The cache budget in MiB: the flag or environment, else `[cache] max_mb`, else
/// [`membank_store::DEFAULT_CACHE_MB`]. A bad file value is a usage error (exit 2), as a
/// bad flag is.
pub fn cache_mb(file: &FileConfig, flag: Option<u64>) -> Result<u64> {
    budget(flag, file.cache.max_mb.as_ref(), membank_store::DEFAULT_CACHE_MB, &CACHE_BUDGET, "cache.max_mb")
}

/// The query cache's budget in MiB: the flag or environment, else `[embedding]
/// query_cache_mb`, else [`DEFAULT_QUERY_CACHE_MB`]; checked as [`cache_mb`] is.
pub fn query_cache_mb(file: &FileConfig, flag: Option<u64>) -> Result<u64> {
    let value = file.embedding.query_cache_mb.as_ref();
    budget(flag, value, DEFAULT_QUERY_CACHE_MB, &QUERY_CACHE_BUDGET, "embedding.query_cache_mb")
}

/// A budget from a (checked) flag, else the file's value at `key` (read as any TOML value,
/// so a wrong one gets the same message as a wrong flag), else `default`.
fn budget(flag: Option<u64>, value: Option<&toml::Value>, default: u64, range: &MibBudget, key: &str) -> Result<u64> {
    if let Some(mb) = flag {
        return Ok(mb);
    }
    let checked = match value {
        None => return Ok(default),
        Some(toml::Value::Integer(mb)) => range.in_range(i128::from(*mb)),
        Some(other) => Err(range.not_whole(&other.to_string())),
    };
    checked.map_err(|reason| crate::errors::UsageError(format!("{key} in the config file: {reason}")).into())
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
    /// Weights of the local model for search queries: `int8` (default) or `f32`.
    pub query_precision: Option<String>,
    /// OpenAI-compatible base URL, e.g. `http://localhost:11434/v1`.
    pub base_url: Option<String>,
    /// Remote model name.
    pub model: Option<String>,
    /// Remote API key (prefer the environment variable).
    pub api_key: Option<String>,
    /// MiB of recent query vectors `serve` keeps, so a repeated query skips the model (0:
    /// none; read as any TOML value so that a wrong one gets the flag's message).
    pub query_cache_mb: Option<toml::Value>,
}

/// `[forgetting]`.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ForgettingFile {
    /// `memorybank` (default) or `fademem`.
    pub policy: Option<String>,
    /// FadeMem's parameters (`[forgetting.fademem]`).
    #[serde(default)]
    pub fademem: FadeMemFile,
    /// `threshold` (default), `stochastic` or `rank`.
    pub mode: Option<String>,
    /// Threshold θ.
    pub threshold: Option<f64>,
    /// Seed of stochastic draws.
    pub seed: Option<u64>,
    /// Unit of t in seconds (default 86400, one day; see `DEFAULT_UNIT_DAYS`).
    pub unit_seconds: Option<i64>,
    /// `retrieved` (default) or `used`.
    pub recall_mode: Option<String>,
    /// Largest fraction one sweep may archive.
    pub max_archive_fraction: Option<f64>,
    /// How much importance weighs on MemoryBank's curve (`w`).
    pub importance_weight: Option<f64>,
    /// How importance enters: `linear` (`S + w·I`), `odds` (`S + w·I/(1−I)`) or `scaled`
    /// (`S·(1 + w·I/(1−I))^k`).
    pub importance_form: Option<String>,
    /// The scaled form's exponent `k`, in [1, 4].
    pub importance_exponent: Option<f64>,
    /// Spaced strengthening: only a memory's first recall in a unit of time adds to `S`.
    pub spaced_recall: Option<bool>,
}

/// `[forgetting.fademem]`: every FadeMem parameter, each optional. The defaults and where
/// they come from are documented on `membank_core::fademem::FadeMemParams`.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FadeMemFile {
    pub base_weight: Option<f64>,
    pub relevance_weight: Option<f64>,
    pub frequency_weight: Option<f64>,
    pub recency_weight: Option<f64>,
    pub recency_rate: Option<f64>,
    pub frequency_half_life_days: Option<f64>,
    pub promote: Option<f64>,
    pub demote: Option<f64>,
    pub lambda_base: Option<f64>,
    pub importance_modulation: Option<f64>,
    pub beta_long: Option<f64>,
    pub beta_short: Option<f64>,
    pub epsilon: Option<f64>,
    pub reinforcement: Option<f64>,
    pub reinforcement_saturation: Option<f64>,
    pub duplicate_similarity: Option<f64>,
    pub duplicate_overlap: Option<f64>,
    pub fusion_similarity: Option<f64>,
    pub fusion_window_days: Option<f64>,
    pub consolidation_threshold: Option<f64>,
    pub conflict_similarity: Option<f64>,
    pub conflict_decay_factor: Option<f64>,
    pub recent_queries: Option<usize>,
}

impl FadeMemFile {
    /// The defaults with this table's values over them.
    pub fn apply(&self, mut p: FadeMemParams) -> FadeMemParams {
        macro_rules! set {
            ($($field:ident),+) => { $( if let Some(value) = self.$field { p.$field = value; } )+ };
        }
        set!(
            base_weight,
            relevance_weight,
            frequency_weight,
            recency_weight,
            recency_rate,
            frequency_half_life_days,
            promote,
            demote,
            lambda_base,
            importance_modulation,
            beta_long,
            beta_short,
            epsilon,
            reinforcement,
            reinforcement_saturation,
            duplicate_similarity,
            duplicate_overlap,
            fusion_similarity,
            fusion_window_days,
            consolidation_threshold,
            conflict_similarity,
            conflict_decay_factor,
            recent_queries
        );
        p
    }
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
    /// Fusion weight of the feedback ranking (the query moved towards its first
    /// results' vectors and searched again; 0: off).
    pub feedback_weight: Option<f64>,
    /// How many first results the feedback learns from (1 to 50).
    pub feedback_depth: Option<usize>,
    /// How far the feedback moves the query towards their mean vector.
    pub feedback_alpha: Option<f64>,
    /// Score factor `1 − day_diversity` per hit of the same day ranked above (0: off; below 1).
    pub day_diversity: Option<f64>,
    /// Put the summary of a day the query names first.
    pub day_summaries: Option<bool>,
    /// Search without the names of the participants a query names.
    pub speaker_query: Option<bool>,
    /// With an LLM configured: fusion weight of the question rewritten by the model into
    /// search queries (0: off).
    pub query_rewrite_weight: Option<f64>,
    /// How much closer to the query than the k-th best active memory an archived one must be
    /// for a recall (`reminisce = auto`) to consult the archive, in cosine (default 0).
    pub reminisce_margin: Option<f64>,
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
    let text =
        String::from_utf8(bytes).map_err(|_| anyhow::anyhow!("config file {} is not valid UTF-8", path.display()))?;
    toml::from_str(&text).with_context(|| format!("config file {} is invalid", path.display()))
}

/// Engine settings from the file and the flag/env overrides.
pub fn engine_config(
    file: &FileConfig,
    policy_name: Option<&str>,
    mode: Option<&str>,
    threshold: Option<f64>,
    seed: Option<u64>,
    recall_mode: Option<&str>,
) -> Result<EngineConfig> {
    let f = &file.forgetting;
    let mut policy = ForgettingPolicy::default();
    policy.kind = policy_name.or(f.policy.as_deref()).unwrap_or("memorybank").parse::<PolicyKind>()?;
    policy.fademem = f.fademem.apply(FadeMemParams::default());
    if let Some(unit) = f.unit_seconds {
        if unit <= 0 {
            bail!("forgetting.unit_seconds must be positive");
        }
        policy.unit = chrono::Duration::seconds(unit);
    }
    let theta = threshold.or(f.threshold).unwrap_or(0.05);
    let mode_name = mode.or(f.mode.as_deref()).unwrap_or("threshold").parse::<DecisionModeName>()?;
    policy.mode = DecisionMode::from_name(mode_name, theta, seed.or(f.seed).unwrap_or(0));
    policy.recall_mode = recall_mode.or(f.recall_mode.as_deref()).unwrap_or("retrieved").parse::<RecallMode>()?;
    if let Some(fraction) = f.max_archive_fraction {
        policy.max_archive_fraction = fraction;
    }
    if let Some(weight) = f.importance_weight {
        policy.importance_weight = weight;
    }
    if let Some(form) = f.importance_form.as_deref() {
        policy.importance_form = form.parse::<membank_core::ImportanceForm>()?;
    }
    if let Some(exponent) = f.importance_exponent {
        policy.importance_exponent = exponent;
    }
    if let Some(spaced) = f.spaced_recall {
        policy.spaced_recall = spaced;
    }
    policy.validate()?;
    let mut recall = RecallConfig::default();
    if let Some(candidates) = file.recall.candidates {
        recall.candidates = candidates.clamp(1, 10_000);
    }
    if let Some(weight) = file.recall.weight_by_retention {
        recall.weight_by_retention = weight;
    }
    if let Some(on) = file.recall.day_summaries {
        recall.day_summaries = on;
    }
    if let Some(on) = file.recall.speaker_query {
        recall.speaker_query = on;
    }
    if let Some(depth) = file.recall.feedback_depth {
        if !(1..=50).contains(&depth) {
            bail!("recall.feedback_depth must be between 1 and 50");
        }
        recall.feedback_depth = depth;
    }
    if let Some(diversity) = file.recall.day_diversity {
        // 1 would zero every later hit of a day, and their order with it.
        if !(0.0..1.0).contains(&diversity) {
            bail!("recall.day_diversity must be at least 0 and below 1");
        }
        recall.day_diversity = diversity;
    }
    for (value, field, name) in [
        (file.recall.exact_time_weight, &mut recall.exact_time_weight, "exact_time_weight"),
        (file.recall.fuzzy_time_weight, &mut recall.fuzzy_time_weight, "fuzzy_time_weight"),
        (file.recall.neighbour_weight, &mut recall.neighbour_weight, "neighbour_weight"),
        (file.recall.exchange_neighbour_weight, &mut recall.exchange_neighbour_weight, "exchange_neighbour_weight"),
        (file.recall.speaker_weight, &mut recall.speaker_weight, "speaker_weight"),
        (file.recall.dense_weight, &mut recall.dense_weight, "dense_weight"),
        (file.recall.lexical_weight, &mut recall.lexical_weight, "lexical_weight"),
        (file.recall.feedback_weight, &mut recall.feedback_weight, "feedback_weight"),
        (file.recall.feedback_alpha, &mut recall.feedback_alpha, "feedback_alpha"),
        (file.recall.query_rewrite_weight, &mut recall.query_rewrite_weight, "query_rewrite_weight"),
    ] {
        if let Some(value) = value {
            if !(0.0..=100.0).contains(&value) {
                bail!("recall.{name} must be between 0 and 100");
            }
            *field = value;
        }
    }
    if let Some(margin) = file.recall.reminisce_margin {
        if !(margin.is_finite() && (-1.0..=1.0).contains(&margin)) {
            bail!("recall.reminisce_margin must be between -1 and 1");
        }
        recall.reminisce_margin = margin;
    }
    Ok(EngineConfig { forgetting: policy, recall, llm_rates_importance: file.llm.rate_importance.unwrap_or(true) })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file(text: &str) -> FileConfig {
        toml::from_str(text).unwrap()
    }

    #[test]
    fn the_chat_model_rates_importance_unless_the_llm_section_says_not_to() {
        let config = |text: &str| engine_config(&file(text), None, None, None, None, None).unwrap();
        assert!(config("").llm_rates_importance);
        assert!(config("[llm]\nrate_importance = true").llm_rates_importance);
        assert!(!config("[llm]\nrate_importance = false").llm_rates_importance);
        for bad in ["[llm]\nrate_importance = \"no\"", "[llm]\nrate_importance = 0", "[llm]\nrate_importances = false"]
        {
            assert!(toml::from_str::<FileConfig>(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn server_section_defaults_parses_and_refuses_bad_values() {
        let (proxies, timeouts) = server(&FileConfig::default()).unwrap();
        assert!(proxies.is_empty(), "no proxy is trusted by default");
        assert_eq!(timeouts, membank_server::Timeouts::default());
        let (proxies, timeouts) = server(&file(
            "[server]\ntrusted_proxies = [\"127.0.0.1\", \"10.0.0.0/8\"]\nheader_timeout = \"5s\"\nshutdown_timeout = 3",
        ))
        .unwrap();
        assert!(proxies.contains("10.1.2.3".parse().unwrap()));
        assert_eq!(timeouts.header, std::time::Duration::from_secs(5));
        assert_eq!(timeouts.shutdown, std::time::Duration::from_secs(3));
        for bad in [
            "[server]\ntrusted_proxies = [\"proxy.local\"]",
            "[server]\ntrusted_proxies = [\"10.0.0.0/40\"]",
            "[server]\nbody_timeout = \"0s\"",
            "[server]\nwrite_timeout = \"5 fortnights\"",
            "[server]\nheader_timeout = -1",
        ] {
            assert!(server(&file(bad)).is_err(), "{bad}");
        }
        assert!(toml::from_str::<FileConfig>("[server]\nidle = 3").is_err(), "unknown keys are refused");
    }
}
