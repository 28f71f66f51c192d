//! [`OpenAiEmbedder`]: embeddings from any OpenAI-compatible `/v1/embeddings` endpoint
//! (OpenAI, Ollama, vLLM, llama.cpp server, LM Studio).
//!
//! A call POSTs `{"model", "input": [...]}` to `<base_url>/embeddings` in chunks of
//! [`MAX_TEXTS_PER_REQUEST`] texts, puts the answers back in input order by their `index`,
//! checks their dimension, and L2-normalises them so that they behave like the local model's
//! vectors. Failures come back as distinct errors: unreachable endpoint, HTTP status (401
//! with a hint about the API key, 404 with a hint about the model name and base URL),
//! malformed answer, wrong dimension.
//!
//! It deliberately does not retry, cache, or read the API key from the environment: the
//! caller's configuration passes it in.

use std::time::Duration;

use serde::Deserialize;

use crate::kernels::l2_normalize;
use crate::{EmbedError, Embedder};

/// Most texts sent in one request (OpenAI accepts up to 2048; smaller requests keep
/// self-hosted servers responsive).
pub const MAX_TEXTS_PER_REQUEST: usize = 256;
/// Upper bound on one response body.
const MAX_RESPONSE_BYTES: u64 = 512 << 20;

/// How to reach an OpenAI-compatible embeddings endpoint.
#[derive(Clone, PartialEq, Eq)]
pub struct OpenAiConfig {
    /// Base URL up to and including the API version, e.g. `https://api.openai.com/v1` or
    /// `http://localhost:11434/v1` (Ollama); `/embeddings` is appended.
    pub base_url: String,
    /// Model name as the endpoint knows it, e.g. `text-embedding-3-small` or `nomic-embed-text`.
    pub model: String,
    /// Sent as `Authorization: Bearer <key>` when present.
    pub api_key: Option<String>,
    /// Limit for one whole request, connection included.
    pub timeout: Duration,
    /// The vector length the model is expected to return. When `None`,
    /// [`OpenAiEmbedder::new`] asks the endpoint once to learn it.
    pub dim: Option<usize>,
}

impl std::fmt::Debug for OpenAiConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OpenAiConfig")
            .field("base_url", &self.base_url)
            .field("model", &self.model)
            .field("api_key", &self.api_key.as_ref().map(|_| "<redacted>"))
            .field("timeout", &self.timeout)
            .field("dim", &self.dim)
            .finish()
    }
}

/// Embeddings from an OpenAI-compatible endpoint. See the module docs.
#[derive(Debug)]
pub struct OpenAiEmbedder {
    config: OpenAiConfig,
    url: String,
    model_id: String,
    dim: usize,
    agent: ureq::Agent,
}

#[derive(Deserialize)]
struct EmbeddingsResponse {
    data: Vec<EmbeddingItem>,
}

#[derive(Deserialize)]
struct EmbeddingItem {
    embedding: Vec<f32>,
    index: usize,
}

impl OpenAiEmbedder {
    /// An embedder for `config`. With `config.dim` set this does no network access; without
    /// it, one short request learns the dimension (and so checks the endpoint, key and model).
    ///
    /// Errors: those of [`Embedder::embed`] when probing; [`EmbedError::Remote`] for a base
    /// URL that is not http(s).
    pub fn new(config: OpenAiConfig) -> Result<Self, EmbedError> {
        let base = config.base_url.trim_end_matches('/');
        if !(base.starts_with("http://") || base.starts_with("https://")) {
            return Err(EmbedError::Remote(format!(
                "base URL {base:?} must start with http:// or https:// (e.g. http://localhost:11434/v1)"
            )));
        }
        let agent: ureq::Agent = ureq::Agent::config_builder()
            .timeout_global(Some(config.timeout))
            .http_status_as_error(false)
            .user_agent(concat!("membank/", env!("CARGO_PKG_VERSION")))
            .build()
            .into();
        let mut embedder = Self {
            url: format!("{base}/embeddings"),
            model_id: format!("openai-compat/{}", config.model),
            dim: config.dim.unwrap_or(0),
            config,
            agent,
        };
        if embedder.config.dim.is_none() {
            let probe = embedder.request(&["dimension probe"])?;
            embedder.dim = probe.first().map_or(0, Vec::len);
            tracing::debug!(model = %embedder.config.model, dim = embedder.dim, "probed embedding dimension");
        }
        Ok(embedder)
    }

    /// The configuration this embedder was made with.
    pub fn config(&self) -> &OpenAiConfig {
        &self.config
    }

    /// One request for at most [`MAX_TEXTS_PER_REQUEST`] texts; vectors in input order,
    /// normalised, dimension checked against `self.dim` when known.
    fn request(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, EmbedError> {
        // OpenAI rejects empty strings; a single space embeds "nothing" just as well.
        let input: Vec<&str> = texts.iter().map(|t| if t.is_empty() { " " } else { *t }).collect();
        let body = serde_json::json!({ "model": self.config.model, "input": input }).to_string();
        let mut request = self.agent.post(&self.url).header("Content-Type", "application/json");
        if let Some(key) = &self.config.api_key {
            request = request.header("Authorization", format!("Bearer {key}"));
        }
        let mut response = request.send(body.as_bytes()).map_err(|e| self.transport_error(e))?;
        let status = response.status().as_u16();
        let bytes = response
            .body_mut()
            .with_config()
            .limit(MAX_RESPONSE_BYTES)
            .read_to_vec()
            .map_err(|e| self.transport_error(e))?;
        if !(200..300).contains(&status) {
            return Err(self.status_error(status, &bytes));
        }
        let malformed = |reason: String| EmbedError::RemoteMalformed { url: self.url.clone(), reason };
        let parsed: EmbeddingsResponse =
            serde_json::from_slice(&bytes).map_err(|e| malformed(format!("not an embeddings response: {e}")))?;
        if parsed.data.len() != texts.len() {
            return Err(malformed(format!("{} embeddings for {} inputs", parsed.data.len(), texts.len())));
        }
        let mut vectors: Vec<Option<Vec<f32>>> = vec![None; texts.len()];
        for item in parsed.data {
            match vectors.get_mut(item.index) {
                Some(slot @ None) => *slot = Some(item.embedding),
                Some(Some(_)) => {
                    return Err(malformed(format!("index {} appears twice", item.index)));
                }
                None => return Err(malformed(format!("index {} out of range", item.index))),
            }
        }
        let mut out = Vec::with_capacity(texts.len());
        for vector in vectors {
            let mut vector = vector.ok_or_else(|| malformed("an index is missing".to_owned()))?;
            let expected = if self.dim > 0 { self.dim } else { out.first().map_or(vector.len(), Vec::len) };
            if vector.len() != expected {
                return Err(EmbedError::DimensionMismatch {
                    model: self.config.model.clone(),
                    expected,
                    actual: vector.len(),
                });
            }
            if vector.is_empty() || vector.iter().any(|x| !x.is_finite()) {
                return Err(malformed("an embedding is empty or holds non-finite numbers".to_owned()));
            }
            l2_normalize(&mut vector);
            out.push(vector);
        }
        Ok(out)
    }

    fn transport_error(&self, error: ureq::Error) -> EmbedError {
        match error {
            ureq::Error::BodyExceedsLimit(limit) => EmbedError::RemoteMalformed {
                url: self.url.clone(),
                reason: format!("response larger than {limit} bytes"),
            },
            other => EmbedError::RemoteUnreachable { url: self.url.clone(), reason: other.to_string() },
        }
    }

    fn status_error(&self, status: u16, body: &[u8]) -> EmbedError {
        // OpenAI, vLLM and Ollama put a message in {"error": {"message"}} or {"error": "..."}.
        let detail = serde_json::from_slice::<serde_json::Value>(body)
            .ok()
            .and_then(|v| {
                let error = v.get("error")?;
                error.get("message").and_then(|m| m.as_str()).or_else(|| error.as_str()).map(str::to_owned)
            })
            .unwrap_or_else(|| String::from_utf8_lossy(&body[..body.len().min(300)]).trim().to_owned());
        let hint = match status {
            401 | 403 => "the API key is missing or not accepted".to_owned(),
            404 => format!(
                "model {:?} is unknown there, or the base URL is wrong (it should end with the API version, e.g. /v1)",
                self.config.model
            ),
            429 => "rate limited".to_owned(),
            _ => "request failed".to_owned(),
        };
        let message = if detail.is_empty() { hint } else { format!("{hint} ({detail})") };
        EmbedError::RemoteStatus { url: self.url.clone(), status, message }
    }
}

impl Embedder for OpenAiEmbedder {
    fn model_id(&self) -> &str {
        &self.model_id
    }

    fn dim(&self) -> usize {
        self.dim
    }

    fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, EmbedError> {
        let mut out = Vec::with_capacity(texts.len());
        for chunk in texts.chunks(MAX_TEXTS_PER_REQUEST) {
            out.extend(self.request(chunk)?);
        }
        Ok(out)
    }
}
