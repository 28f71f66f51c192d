//! What can go wrong when calling a model, one variant per thing the person must do
//! differently: start the server, fix the key, fix the model name, send less, wait.

/// Why a call to the model failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum LlmError {
    /// Caller's configuration: the base URL is not an http(s) URL.
    #[error("LLM base URL {url:?} must start with http:// or https:// (e.g. http://localhost:11434/v1)")]
    BadUrl {
        /// The URL given.
        url: String,
    },
    /// The machine's or the operator's: nothing answers at the URL (connection refused,
    /// unknown host, TLS failure).
    #[error("the LLM endpoint {url} is unreachable: {reason} (is the server running, and is the base URL right?)")]
    Unreachable {
        /// The endpoint.
        url: String,
        /// The transport's words.
        reason: String,
    },
    /// The endpoint did not answer in time, even after retries.
    #[error("the LLM endpoint {url} did not answer within {seconds} s (tried {attempts} times)")]
    Timeout {
        /// The endpoint.
        url: String,
        /// The per-request limit.
        seconds: u64,
        /// How many requests were made.
        attempts: u32,
    },
    /// Caller's configuration: the API key is missing or refused (HTTP 401/403).
    #[error(
        "the LLM endpoint {url} refused the API key (HTTP {status}): set MEMBANK_LLM_API_KEY or [llm] api_key ({message})"
    )]
    Unauthorized {
        /// The endpoint.
        url: String,
        /// 401 or 403.
        status: u16,
        /// The server's message.
        message: String,
    },
    /// Caller's configuration: the model is unknown there, or the URL names no
    /// chat-completions endpoint (HTTP 404).
    #[error(
        "model {model:?} is not available at {url}: {message} (check MEMBANK_LLM_MODEL, and that the base URL ends with the API version, e.g. /v1)"
    )]
    ModelMissing {
        /// The model asked for.
        model: String,
        /// The endpoint.
        url: String,
        /// The server's message.
        message: String,
    },
    /// The prompt does not fit the model's context window: refused by us before sending
    /// (`estimated` set) or by the server.
    #[error("the prompt is too long for the model's context window: {message}")]
    ContextTooLong {
        /// What was measured.
        message: String,
        /// Our token estimate of the prompt, when we refused it ourselves.
        estimated: Option<usize>,
    },
    /// The endpoint kept answering 429 after all retries.
    #[error("the LLM endpoint {url} is rate limiting (HTTP 429 after {attempts} attempts): {message}")]
    RateLimited {
        /// The endpoint.
        url: String,
        /// Requests made.
        attempts: u32,
        /// The server's message.
        message: String,
    },
    /// The endpoint answered with another error status (5xx after all retries, or a 4xx
    /// we have no better name for).
    #[error("the LLM endpoint {url} answered HTTP {status}: {message}")]
    Status {
        /// The endpoint.
        url: String,
        /// The HTTP status.
        status: u16,
        /// The server's message.
        message: String,
    },
    /// The endpoint answered 2xx with something that is not a chat completion.
    #[error("the LLM endpoint {url} sent a malformed answer: {reason}")]
    Malformed {
        /// The endpoint.
        url: String,
        /// What was wrong.
        reason: String,
    },
}

impl LlmError {
    /// A stable, machine-readable code for this error class.
    pub fn code(&self) -> &'static str {
        match self {
            LlmError::BadUrl { .. } => "llm_bad_url",
            LlmError::Unreachable { .. } => "llm_unreachable",
            LlmError::Timeout { .. } => "llm_timeout",
            LlmError::Unauthorized { .. } => "llm_unauthorized",
            LlmError::ModelMissing { .. } => "llm_model_missing",
            LlmError::ContextTooLong { .. } => "llm_context_too_long",
            LlmError::RateLimited { .. } => "llm_rate_limited",
            LlmError::Status { .. } => "llm_failed",
            LlmError::Malformed { .. } => "llm_malformed",
        }
    }
}
