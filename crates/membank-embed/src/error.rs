//! Errors of the embedding crate, sized to their audience: each variant says whether the
//! caller (configuration, input) or we are at fault.
//!
//! It deliberately carries no HTTP status mapping or wire shape; the server crate decides
//! how an embedding failure is shown to its clients.

use std::path::PathBuf;

/// Why an embedding could not be made.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum EmbedError {
    /// Caller's configuration: the model directory lacks a file. The message says how to fetch it.
    #[error("embedding model file {file} is missing in {}; run `membank models fetch` to download it", dir.display())]
    ModelMissing {
        /// The model directory that was searched.
        dir: PathBuf,
        /// The file name that is missing.
        file: String,
    },
    /// Caller's configuration: a model file exists but cannot be used (corrupt, wrong shape).
    #[error("embedding model in {} is unusable: {reason}", dir.display())]
    InvalidModel {
        /// The model directory.
        dir: PathBuf,
        /// What is wrong with it.
        reason: String,
    },
    /// A remote embedding endpoint failed or answered something we cannot use.
    #[error("embedding endpoint error: {0}")]
    Remote(String),
    /// Caller's configuration or the network: the remote endpoint could not be reached at all
    /// (connection refused, DNS failure, timeout).
    #[error("embedding endpoint {url} is unreachable: {reason}")]
    RemoteUnreachable {
        /// The URL that was requested.
        url: String,
        /// What the connection attempt reported.
        reason: String,
    },
    /// Caller's configuration: the endpoint answered with an HTTP error status, e.g. 401 for
    /// a missing or wrong API key, or 404 for an unknown model or a wrong base URL.
    #[error("embedding endpoint {url} answered HTTP {status}: {message}")]
    RemoteStatus {
        /// The URL that was requested.
        url: String,
        /// The HTTP status code.
        status: u16,
        /// A hint for the status and the endpoint's own error message, when it gave one.
        message: String,
    },
    /// The endpoint's fault (or a wrong base URL pointing at something else): the answer is
    /// not a well-formed embeddings response.
    #[error("embedding endpoint {url} answered malformed data: {reason}")]
    RemoteMalformed {
        /// The URL that was requested.
        url: String,
        /// What is wrong with the answer.
        reason: String,
    },
    /// Caller's configuration: the model produced vectors of another length than configured.
    #[error("embedding model {model} returned vectors of dimension {actual}, expected {expected}")]
    DimensionMismatch {
        /// The model that was asked.
        model: String,
        /// The dimension that was configured.
        expected: usize,
        /// The dimension that came back.
        actual: usize,
    },
    /// Caller's input: a model name that is not one of the known local models.
    #[error("unknown embedding model {name:?}; known models: {known}")]
    UnknownModel {
        /// The name that was asked for.
        name: String,
        /// The known names, comma-separated.
        known: String,
    },
    /// Our fault or the embedder's: a call returned no vector for a text.
    #[error("the embedder returned no vector")]
    NoVector,
    /// Fetching a model failed.
    #[error("model fetch failed: {0}")]
    Fetch(String),
    /// Our fault or the machine's: an I/O error while reading the model.
    #[error("i/o error: {0}")]
    Io(#[from] std::io::Error),
}
