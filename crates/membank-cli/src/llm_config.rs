//! The `[llm]` part of the configuration: which OpenAI-compatible chat endpoint serves
//! summaries, portraits and the companion, resolved as defaults < file < environment <
//! flags like the rest of the configuration.
//!
//! Having no LLM is a normal state, not an error: only `summarize` and `chat` need one,
//! and they say how to configure it (exit code 8). A half configuration (a base URL but
//! no model, say) is refused when an LLM is needed, naming what is missing.

use std::sync::Arc;
use std::time::Duration;

use anyhow::{Result, bail};
use membank_engine::{EngineError, Llm};
use membank_llm::{OpenAiChat, OpenAiChatConfig};
use serde::Deserialize;

use crate::args::LlmArgs;

/// `[llm]` in the configuration file.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LlmFile {
    /// Base URL up to the API version, e.g. `http://localhost:11434/v1`.
    pub base_url: Option<String>,
    /// Model name at that endpoint.
    pub model: Option<String>,
    /// API key (prefer the environment variable).
    pub api_key: Option<String>,
    /// Seconds one request may take.
    pub timeout_seconds: Option<u64>,
    /// Retries on 429/5xx/timeouts.
    pub max_retries: Option<u32>,
    /// The model's context window in tokens.
    pub context_tokens: Option<usize>,
    /// Most tokens in one reply.
    pub reply_tokens: Option<usize>,
    /// Sampling temperature.
    pub temperature: Option<f32>,
    /// Whether maintenance asks the model to rate memories' base importance (default true;
    /// `false` keeps the importance estimator's values).
    pub rate_importance: Option<bool>,
}

/// The chat model's settings, resolved; `None` parts mean "not configured".
#[derive(Debug, Clone, Default)]
pub struct LlmSettings {
    base_url: Option<String>,
    model: Option<String>,
    config: Option<OpenAiChatConfig>,
}

impl LlmSettings {
    /// Resolves flags/env over the file over defaults. Never fails: problems surface when
    /// an LLM is needed.
    pub fn resolve(args: &LlmArgs, file: &LlmFile) -> Self {
        let base_url = args.llm_base_url.clone().or_else(|| file.base_url.clone()).filter(|s| !s.trim().is_empty());
        let model = args.llm_model.clone().or_else(|| file.model.clone()).filter(|s| !s.trim().is_empty());
        let config = base_url.as_ref().zip(model.as_ref()).map(|(base_url, model)| {
            let mut config = OpenAiChatConfig::new(base_url.trim(), model.trim());
            config.api_key = args.llm_api_key.clone().or_else(|| file.api_key.clone()).filter(|k| !k.is_empty());
            if let Some(seconds) = file.timeout_seconds {
                config.timeout = Duration::from_secs(seconds.clamp(1, 3600));
            }
            if let Some(retries) = file.max_retries {
                config.max_retries = retries.min(10);
            }
            if let Some(tokens) = args.llm_context_tokens.or(file.context_tokens) {
                config.context_tokens = tokens.max(256);
            }
            if let Some(tokens) = file.reply_tokens {
                config.reply_tokens = tokens.clamp(16, config.context_tokens / 2);
            }
            if file.temperature.is_some() {
                config.temperature = file.temperature;
            }
            config
        });
        Self { base_url, model, config }
    }

    /// The client, or why there is none: `LlmNotConfigured` (exit 8) when nothing is set,
    /// a usage error naming the missing half otherwise.
    pub fn client(&self) -> Result<Arc<dyn Llm>> {
        match (&self.config, &self.base_url, &self.model) {
            (Some(config), _, _) => Ok(Arc::new(OpenAiChat::new(config.clone()).map_err(EngineError::Llm)?)),
            (None, None, None) => Err(EngineError::LlmNotConfigured.into()),
            (None, Some(_), None) => {
                bail!("an LLM base URL is set but no model: set MEMBANK_LLM_MODEL (or [llm] model)")
            }
            (None, _, _) => bail!(
                "an LLM model is set but no base URL: set MEMBANK_LLM_BASE_URL (or [llm] base_url), e.g. http://localhost:11434/v1"
            ),
        }
    }
}
