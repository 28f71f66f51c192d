//! [`OpenAiChat`]: chat completions from any OpenAI-compatible endpoint.
//!
//! A call POSTs `{"model", "messages", "max_tokens", "temperature"}` to
//! `<base_url>/chat/completions`. Before sending, the prompt is measured with
//! [`crate::estimate_tokens`] against the configured context window, so an oversized
//! prompt fails fast with [`LlmError::ContextTooLong`] instead of being cut by the server.
//! HTTP 429 and 5xx answers and timeouts are retried with exponential backoff (honouring a
//! `Retry-After` of a few seconds); everything else fails at once with a variant that says
//! what to fix. A refused connection is not retried: nothing is listening, and waiting
//! will not change that within one call.

use std::time::Duration;

use serde::Deserialize;

use crate::{Completion, CompletionRequest, Llm, LlmError, TokenBudget, estimate_messages};

/// Upper bound on one response body.
const MAX_RESPONSE_BYTES: u64 = 16 << 20;

/// How to reach an OpenAI-compatible chat endpoint, and how hard to try.
#[derive(Clone, PartialEq)]
pub struct OpenAiChatConfig {
    /// Base URL up to and including the API version, e.g. `https://api.openai.com/v1`,
    /// `http://localhost:11434/v1` (Ollama) or `http://127.0.0.1:8080/v1` (llama.cpp);
    /// `/chat/completions` is appended.
    pub base_url: String,
    /// Model name as the endpoint knows it.
    pub model: String,
    /// Sent as `Authorization: Bearer <key>` when present.
    pub api_key: Option<String>,
    /// Limit for one whole request, connection included.
    pub timeout: Duration,
    /// Retries after the first attempt on 429, 5xx and timeouts.
    pub max_retries: u32,
    /// Wait before the first retry; doubled for each further one.
    pub backoff: Duration,
    /// Longest wait between two attempts (also caps `Retry-After`).
    pub max_backoff: Duration,
    /// The model's context window in tokens (prompt and reply).
    pub context_tokens: usize,
    /// Most tokens one reply may take.
    pub reply_tokens: usize,
    /// Sampling temperature sent when a request does not set one.
    pub temperature: Option<f32>,
}

impl OpenAiChatConfig {
    /// Defaults for everything but where and what: 120 s per request, 3 retries from
    /// 500 ms up to 10 s, an 8,192-token window and 512-token replies.
    pub fn new(base_url: impl Into<String>, model: impl Into<String>) -> Self {
        Self {
            base_url: base_url.into(),
            model: model.into(),
            api_key: None,
            timeout: Duration::from_secs(120),
            max_retries: 3,
            backoff: Duration::from_millis(500),
            max_backoff: Duration::from_secs(10),
            context_tokens: 8192,
            reply_tokens: 512,
            temperature: Some(0.3),
        }
    }
}

impl std::fmt::Debug for OpenAiChatConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OpenAiChatConfig")
            .field("base_url", &self.base_url)
            .field("model", &self.model)
            .field("api_key", &self.api_key.as_ref().map(|_| "<redacted>"))
            .field("timeout", &self.timeout)
            .field("max_retries", &self.max_retries)
            .field("context_tokens", &self.context_tokens)
            .field("reply_tokens", &self.reply_tokens)
            .finish_non_exhaustive()
    }
}

/// Chat completions from an OpenAI-compatible endpoint. See the module docs.
#[derive(Debug)]
pub struct OpenAiChat {
    config: OpenAiChatConfig,
    url: String,
    agent: ureq::Agent,
}

#[derive(Deserialize)]
struct ChatResponse {
    choices: Vec<Choice>,
    #[serde(default)]
    usage: Option<Usage>,
}

#[derive(Deserialize)]
struct Choice {
    message: ChoiceMessage,
    #[serde(default)]
    finish_reason: Option<String>,
}

#[derive(Deserialize)]
struct ChoiceMessage {
    #[serde(default)]
    content: Option<String>,
}

#[derive(Deserialize)]
struct StreamChunk {
    #[serde(default)]
    choices: Vec<StreamChoice>,
    #[serde(default)]
    usage: Option<Usage>,
}

#[derive(Deserialize)]
struct StreamChoice {
    #[serde(default)]
    delta: Option<ChoiceMessage>,
    #[serde(default)]
    finish_reason: Option<String>,
}

#[derive(Deserialize)]
struct Usage {
    #[serde(default)]
    prompt_tokens: Option<u64>,
    #[serde(default)]
    completion_tokens: Option<u64>,
}

/// One attempt's failure: retry it, or give up with this error.
enum Attempt {
    Retry { status: Option<u16>, message: String, wait: Option<Duration> },
    Fail(LlmError),
}

impl OpenAiChat {
    /// A client for `config`. Does no network access.
    ///
    /// Errors: [`LlmError::BadUrl`] for a base URL that is not http(s).
    pub fn new(config: OpenAiChatConfig) -> Result<Self, LlmError> {
        let base = config.base_url.trim_end_matches('/');
        if !(base.starts_with("http://") || base.starts_with("https://")) {
            return Err(LlmError::BadUrl { url: config.base_url.clone() });
        }
        let agent: ureq::Agent = ureq::Agent::config_builder()
            .timeout_global(Some(config.timeout))
            .http_status_as_error(false)
            .user_agent(concat!("membank/", env!("CARGO_PKG_VERSION")))
            .build()
            .into();
        Ok(Self { url: format!("{base}/chat/completions"), config, agent })
    }

    /// The configuration this client was made with.
    pub fn config(&self) -> &OpenAiChatConfig {
        &self.config
    }

    fn attempt(&self, body: &str) -> Result<Completion, Attempt> {
        let mut response = self.send(body)?;
        let bytes =
            response.body_mut().with_config().limit(MAX_RESPONSE_BYTES).read_to_vec().map_err(|e| self.transport(e))?;
        self.parse(&bytes).map_err(Attempt::Fail)
    }

    /// Sends one request; a 2xx answer is returned with its body unread, any other is
    /// read and turned into a retry or a failure.
    fn send(&self, body: &str) -> Result<ureq::http::Response<ureq::Body>, Attempt> {
        let mut request = self.agent.post(&self.url).header("Content-Type", "application/json");
        if let Some(key) = &self.config.api_key {
            request = request.header("Authorization", format!("Bearer {key}"));
        }
        let mut response = request.send(body.as_bytes()).map_err(|e| self.transport(e))?;
        let status = response.status().as_u16();
        if (200..300).contains(&status) {
            return Ok(response);
        }
        let retry_after = response
            .headers()
            .get("retry-after")
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.trim().parse::<u64>().ok())
            .map(Duration::from_secs);
        let bytes =
            response.body_mut().with_config().limit(MAX_RESPONSE_BYTES).read_to_vec().map_err(|e| self.transport(e))?;
        let message = server_message(&bytes);
        let url = self.url.clone();
        Err(match status {
            429 | 500..=599 => Attempt::Retry { status: Some(status), message, wait: retry_after },
            401 | 403 => Attempt::Fail(LlmError::Unauthorized { url, status, message }),
            404 => Attempt::Fail(LlmError::ModelMissing { model: self.config.model.clone(), url, message }),
            400 | 413 if mentions_context(&message) => {
                Attempt::Fail(LlmError::ContextTooLong { message, estimated: None })
            }
            _ => Attempt::Fail(LlmError::Status { url, status, message }),
        })
    }

    fn transport(&self, error: ureq::Error) -> Attempt {
        match error {
            ureq::Error::Timeout(_) => Attempt::Retry { status: None, message: "timed out".into(), wait: None },
            ureq::Error::BodyExceedsLimit(limit) => Attempt::Fail(LlmError::Malformed {
                url: self.url.clone(),
                reason: format!("response larger than {limit} bytes"),
            }),
            other => Attempt::Fail(LlmError::Unreachable { url: self.url.clone(), reason: other.to_string() }),
        }
    }

    fn parse(&self, bytes: &[u8]) -> Result<Completion, LlmError> {
        let malformed = |reason: String| LlmError::Malformed { url: self.url.clone(), reason };
        let parsed: ChatResponse =
            serde_json::from_slice(bytes).map_err(|e| malformed(format!("not a chat completion: {e}")))?;
        let usage = parsed.usage;
        let choice = parsed.choices.into_iter().next().ok_or_else(|| malformed("no choices".into()))?;
        let content = choice.message.content.ok_or_else(|| malformed("the first choice has no content".into()))?;
        Ok(Completion {
            content,
            finish_reason: choice.finish_reason,
            prompt_tokens: usage.as_ref().and_then(|u| u.prompt_tokens),
            completion_tokens: usage.as_ref().and_then(|u| u.completion_tokens),
        })
    }

    fn wait_before(&self, retry: u32, asked: Option<Duration>) -> Duration {
        let exponential = self.config.backoff.saturating_mul(1u32 << retry.min(16));
        asked.unwrap_or(exponential).min(self.config.max_backoff)
    }
}

impl Llm for OpenAiChat {
    fn model(&self) -> &str {
        &self.config.model
    }

    fn budget(&self) -> TokenBudget {
        TokenBudget { context_tokens: self.config.context_tokens, reply_tokens: self.config.reply_tokens }
    }

    fn complete(&self, request: &CompletionRequest) -> Result<Completion, LlmError> {
        let body = self.body(request, false)?;
        self.with_retries(|| self.attempt(&body))
    }

    /// Streams the reply (`"stream": true`, server-sent events): `on_delta` gets each piece
    /// as it arrives. Retries happen only before the first piece; a server that ignores
    /// `stream` and answers one JSON completion is handled too (one piece).
    fn complete_streaming(
        &self,
        request: &CompletionRequest,
        on_delta: &mut dyn FnMut(&str),
    ) -> Result<Completion, LlmError> {
        let body = self.body(request, true)?;
        let response = self.with_retries(|| self.send(&body))?;
        self.read_stream(response, on_delta)
    }
}

impl OpenAiChat {
    /// The request body, after checking the prompt against the window.
    fn body(&self, request: &CompletionRequest, stream: bool) -> Result<String, LlmError> {
        let reply_tokens = request.max_tokens.map_or(self.config.reply_tokens, |t| t as usize);
        let estimated = estimate_messages(&request.messages);
        if estimated + reply_tokens > self.config.context_tokens {
            return Err(LlmError::ContextTooLong {
                message: format!(
                    "about {estimated} prompt tokens + {reply_tokens} reply tokens exceed the configured window of {} tokens",
                    self.config.context_tokens
                ),
                estimated: Some(estimated),
            });
        }
        let messages: Vec<serde_json::Value> = request
            .messages
            .iter()
            .map(|m| serde_json::json!({ "role": m.role.as_str(), "content": m.content }))
            .collect();
        let mut body = serde_json::json!({ "model": self.config.model, "messages": messages, "max_tokens": reply_tokens, "stream": stream });
        if let Some(temperature) = request.temperature.or(self.config.temperature) {
            body["temperature"] = serde_json::json!(temperature);
        }
        Ok(body.to_string())
    }

    /// Runs `attempt` until it succeeds, fails for good, or the retries are spent.
    fn with_retries<T>(&self, mut attempt: impl FnMut() -> Result<T, Attempt>) -> Result<T, LlmError> {
        let attempts = self.config.max_retries + 1;
        let mut last = (None, String::new());
        for round in 0..attempts {
            match attempt() {
                Ok(done) => {
                    tracing::debug!(model = %self.config.model, attempt = round, "chat completion");
                    return Ok(done);
                }
                Err(Attempt::Fail(error)) => return Err(error),
                Err(Attempt::Retry { status, message, wait }) => {
                    tracing::warn!(url = %self.url, ?status, attempt = round, %message, "LLM call failed; retrying");
                    if round + 1 < attempts {
                        std::thread::sleep(self.wait_before(round, wait));
                    }
                    last = (status, message);
                }
            }
        }
        let url = self.url.clone();
        Err(match last {
            (Some(429), message) => LlmError::RateLimited { url, attempts, message },
            (Some(status), message) => LlmError::Status { url, status, message },
            (None, _) => LlmError::Timeout { url, seconds: self.config.timeout.as_secs(), attempts },
        })
    }

    /// Reads a streamed answer: `data: {chunk}` lines until `data: [DONE]` or the end.
    fn read_stream(
        &self,
        mut response: ureq::http::Response<ureq::Body>,
        on_delta: &mut dyn FnMut(&str),
    ) -> Result<Completion, LlmError> {
        use std::io::BufRead;
        let malformed = |reason: String| LlmError::Malformed { url: self.url.clone(), reason };
        let is_stream = response
            .headers()
            .get("content-type")
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| v.starts_with("text/event-stream"));
        let failed = |e: std::io::Error| match e.kind() {
            std::io::ErrorKind::TimedOut => {
                LlmError::Timeout { url: self.url.clone(), seconds: self.config.timeout.as_secs(), attempts: 1 }
            }
            _ => LlmError::Unreachable { url: self.url.clone(), reason: format!("the stream broke off: {e}") },
        };
        if !is_stream {
            let bytes = response.body_mut().with_config().limit(MAX_RESPONSE_BYTES).read_to_vec().map_err(|e| {
                match self.transport(e) {
                    Attempt::Fail(error) => error,
                    Attempt::Retry { message, .. } => LlmError::Unreachable { url: self.url.clone(), reason: message },
                }
            })?;
            let completion = self.parse(&bytes)?;
            on_delta(&completion.content);
            return Ok(completion);
        }
        let reader = std::io::BufReader::new(response.body_mut().with_config().limit(MAX_RESPONSE_BYTES).reader());
        let mut completion =
            Completion { content: String::new(), finish_reason: None, prompt_tokens: None, completion_tokens: None };
        for line in reader.lines() {
            let line = line.map_err(failed)?;
            let Some(data) = line.strip_prefix("data:") else { continue };
            let data = data.trim();
            if data == "[DONE]" {
                break;
            }
            let chunk: StreamChunk =
                serde_json::from_str(data).map_err(|e| malformed(format!("not a chat completion chunk: {e}")))?;
            if let Some(usage) = chunk.usage {
                completion.prompt_tokens = usage.prompt_tokens.or(completion.prompt_tokens);
                completion.completion_tokens = usage.completion_tokens.or(completion.completion_tokens);
            }
            let Some(choice) = chunk.choices.into_iter().next() else { continue };
            if let Some(piece) = choice.delta.and_then(|d| d.content).filter(|p| !p.is_empty()) {
                completion.content.push_str(&piece);
                on_delta(&piece);
            }
            if choice.finish_reason.is_some() {
                completion.finish_reason = choice.finish_reason;
            }
        }
        Ok(completion)
    }
}

/// OpenAI, vLLM, Ollama and llama.cpp put a message in `{"error": {"message"}}`,
/// `{"error": "..."}` or `{"detail": ...}`; otherwise the first bytes of the body.
fn server_message(body: &[u8]) -> String {
    serde_json::from_slice::<serde_json::Value>(body)
        .ok()
        .and_then(|v| {
            let error = v.get("error").or_else(|| v.get("detail"))?;
            error.get("message").and_then(|m| m.as_str()).or_else(|| error.as_str()).map(str::to_owned)
        })
        .unwrap_or_else(|| String::from_utf8_lossy(&body[..body.len().min(300)]).trim().to_owned())
}

/// Whether a 400 is the server's way of saying the prompt is too long (OpenAI's
/// `context_length_exceeded`, llama.cpp's "exceed context window", vLLM's "maximum context length").
fn mentions_context(message: &str) -> bool {
    let lower = message.to_ascii_lowercase();
    lower.contains("context") || lower.contains("too many tokens") || lower.contains("too long")
}
