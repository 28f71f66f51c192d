//! The engine's error: what went wrong, and whose fault it is, in a form every interface
//! maps to its own codes (CLI exit codes, HTTP statuses) through [`EngineError::code`].

use membank_core::InvalidInput;
use membank_embed::EmbedError;
use membank_llm::LlmError;
use membank_store::StoreError;

/// Why an operation failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum EngineError {
    /// Caller's: a value breaks a rule (empty text, bad time, too long, unknown kind).
    #[error(transparent)]
    Invalid(#[from] InvalidInput),
    /// Caller's: no such memory in this scope (including memories of other users).
    #[error("{0} not found")]
    NotFound(String),
    /// Caller's: the operation does not apply to the memory's state.
    #[error("{0}")]
    Conflict(String),
    /// Caller's configuration: the store holds another model's vectors, or the database is newer.
    #[error("{0}")]
    Incompatible(String),
    /// The embedding model failed or is missing.
    #[error(transparent)]
    Embed(#[from] EmbedError),
    /// The destination of a streamed result (export) failed: a closed pipe or connection.
    #[error("writing the output failed: {0}")]
    Output(std::io::Error),
    /// The store failed (ours or the machine's).
    #[error("storage failed: {0}")]
    Storage(String),
    /// The machine's, for now: the database (or a node of a distributed one) cannot be
    /// reached or went away during the operation; retrying later can succeed. Its message
    /// and source name the server and the cause, for the operator: a server answers it
    /// with a message of its own.
    #[error(transparent)]
    StorageUnavailable(StoreError),
    /// The machine's: the database's disk is full. The operation was rolled back whole:
    /// nothing of it was stored, changed or erased, and what was stored before is intact.
    #[error(
        "the database's disk is full: nothing of this operation was stored, changed or erased; free space and try again"
    )]
    StorageFull,
    /// Caller's configuration: the operation needs a chat model and none is configured.
    #[error(
        "no LLM is configured: set MEMBANK_LLM_BASE_URL and MEMBANK_LLM_MODEL (and MEMBANK_LLM_API_KEY if the endpoint needs one), or the [llm] table of the config file, e.g. base_url = \"http://localhost:11434/v1\", model = \"llama3.2\""
    )]
    LlmNotConfigured,
    /// The chat model failed (unreachable, unauthorised, model missing, context too long, …).
    #[error(transparent)]
    Llm(#[from] LlmError),
}

impl EngineError {
    /// A stable, machine-readable code for this error class.
    pub fn code(&self) -> &'static str {
        match self {
            EngineError::Invalid(_) => "invalid_input",
            EngineError::NotFound(_) => "not_found",
            EngineError::Conflict(_) => "conflict",
            EngineError::Incompatible(_) => "incompatible",
            EngineError::Embed(EmbedError::ModelMissing { .. }) => "model_missing",
            EngineError::Embed(_) => "embedding_failed",
            EngineError::Storage(_) => "storage_failed",
            EngineError::StorageFull => "storage_full",
            EngineError::StorageUnavailable(_) => "storage_unavailable",
            EngineError::Output(_) => "output_failed",
            EngineError::LlmNotConfigured => "llm_not_configured",
            EngineError::Llm(err) => err.code(),
        }
    }
}

impl From<StoreError> for EngineError {
    fn from(err: StoreError) -> Self {
        match err {
            StoreError::NotFound { what } => EngineError::NotFound(what),
            StoreError::Invalid(invalid) => EngineError::Invalid(invalid),
            StoreError::Conflict(message) => EngineError::Conflict(message),
            StoreError::Output(err) => EngineError::Output(err),
            err @ (StoreError::ModelMismatch { .. } | StoreError::NewerSchema { .. } | StoreError::Corrupt(_)) => {
                EngineError::Incompatible(err.to_string())
            }
            // Not logged here: the boundary that answers it (the server, the CLI) does.
            unavailable @ StoreError::Unavailable(_) => EngineError::StorageUnavailable(unavailable),
            full if full.is_storage_full() => {
                tracing::error!(error = %full, "the database's disk is full");
                EngineError::StorageFull
            }
            other => {
                tracing::error!(error = %other, "store operation failed");
                EngineError::Storage(other.to_string())
            }
        }
    }
}
