//! The language model behind summaries, portraits and the companion: the [`Llm`] trait,
//! [`OpenAiChat`] for any OpenAI-compatible `/chat/completions` endpoint (OpenAI, Ollama,
//! vLLM, LM Studio, llama.cpp's server), a token estimate for budgeting calls, and our
//! prompts as versioned files in `prompts/`.
//!
//! It deliberately knows nothing of memories, stores or the CLI: the engine builds the
//! messages, this crate sends them. It never reads the environment; the binary's
//! configuration layer passes an [`OpenAiChatConfig`].
//!
//! Feature `stub`: [`stub::StubServer`], a scripted OpenAI-compatible server on
//! 127.0.0.1 that records requests, for protocol tests. Never part of the product.

mod error;
mod openai;
pub mod prompts;
#[cfg(feature = "stub")]
pub mod stub;

pub use error::LlmError;
pub use openai::{OpenAiChat, OpenAiChatConfig};

/// Who says a message in a chat.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    /// Instructions and context from us.
    System,
    /// The person (or, for summaries, the material to work on).
    User,
    /// The model's earlier replies.
    Assistant,
}

impl Role {
    /// The OpenAI wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            Role::System => "system",
            Role::User => "user",
            Role::Assistant => "assistant",
        }
    }
}

/// One chat message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Message {
    /// Who says it.
    pub role: Role,
    /// What is said.
    pub content: String,
}

impl Message {
    /// A system message.
    pub fn system(content: impl Into<String>) -> Self {
        Self { role: Role::System, content: content.into() }
    }
    /// A user message.
    pub fn user(content: impl Into<String>) -> Self {
        Self { role: Role::User, content: content.into() }
    }
}

/// One call to the model.
#[derive(Debug, Clone, PartialEq)]
pub struct CompletionRequest {
    /// The conversation so far, system message first.
    pub messages: Vec<Message>,
    /// Most tokens the reply may have (default: the client's configured reply budget).
    pub max_tokens: Option<u32>,
    /// Sampling temperature (default: the server's).
    pub temperature: Option<f32>,
}

impl CompletionRequest {
    /// A request with the client's default budget and temperature.
    pub fn new(messages: Vec<Message>) -> Self {
        Self { messages, max_tokens: None, temperature: None }
    }
}

/// The model's answer.
#[derive(Debug, Clone, PartialEq)]
pub struct Completion {
    /// The reply text.
    pub content: String,
    /// Why the model stopped (`stop`, `length`, …) when the server says.
    pub finish_reason: Option<String>,
    /// Tokens in the prompt, as the server counted them.
    pub prompt_tokens: Option<u64>,
    /// Tokens in the reply, as the server counted them.
    pub completion_tokens: Option<u64>,
}

impl Completion {
    /// True when the reply was cut by the token budget.
    pub fn truncated(&self) -> bool {
        self.finish_reason.as_deref() == Some("length")
    }
}

/// How many tokens one call may use.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TokenBudget {
    /// The model's context window: prompt and reply together.
    pub context_tokens: usize,
    /// Most tokens a reply may take.
    pub reply_tokens: usize,
}

impl TokenBudget {
    /// Tokens left for the prompt.
    pub fn prompt_tokens(&self) -> usize {
        self.context_tokens.saturating_sub(self.reply_tokens)
    }
}

/// A chat model. Synchronous, like the store and the embedder: callers on an async
/// runtime run it on a blocking thread.
pub trait Llm: Send + Sync {
    /// The model's name as the endpoint knows it (recorded in what it makes).
    fn model(&self) -> &str;
    /// The token budget of one call.
    fn budget(&self) -> TokenBudget;
    /// One chat completion.
    ///
    /// Errors: see [`LlmError`]; a prompt over the budget is refused before sending.
    fn complete(&self, request: &CompletionRequest) -> Result<Completion, LlmError>;

    /// One chat completion, streamed: `on_delta` receives each piece of the reply as the
    /// model makes it, and the whole completion is returned at the end. The default calls
    /// [`Llm::complete`] and hands over the reply in one piece.
    fn complete_streaming(
        &self,
        request: &CompletionRequest,
        on_delta: &mut dyn FnMut(&str),
    ) -> Result<Completion, LlmError> {
        let completion = self.complete(request)?;
        on_delta(&completion.content);
        Ok(completion)
    }
}

/// A conservative token estimate for budgeting, without the model's tokenizer: about
/// three bytes of ASCII per token (English averages nearer four) and one token per
/// other character (CJK is often one or two characters per token).
pub fn estimate_tokens(text: &str) -> usize {
    let (ascii, other) =
        text.chars().fold((0usize, 0usize), |(a, o), c| if c.is_ascii() { (a + 1, o) } else { (a, o + 1) });
    ascii.div_ceil(3) + other
}

/// The estimate for a whole conversation, with a few tokens of framing per message.
pub fn estimate_messages(messages: &[Message]) -> usize {
    messages.iter().map(|m| estimate_tokens(&m.content) + 4).sum::<usize>() + 3
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn estimate_is_conservative_for_english_and_counts_cjk_characters() {
        let english = "I adopted a grey cat named Miso last week and she sleeps all day.";
        // Real tokenizers give ~16 tokens here; the estimate must not be lower.
        assert!(estimate_tokens(english) >= 16);
        assert_eq!(estimate_tokens("我喜欢猫"), 4);
        assert_eq!(estimate_tokens(""), 0);
    }
}
