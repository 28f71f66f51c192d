//! The evaluation error: a bad data or gold file (the caller's), or an engine failure.

use membank_engine::EngineError;

/// Why a benchmark run failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum EvalError {
    /// Caller's: a data, question or gold file could not be read.
    #[error("cannot read {path}: {source}")]
    Read {
        /// The file.
        path: String,
        /// The I/O error.
        source: std::io::Error,
    },
    /// Caller's: a data, question or gold file is malformed; says where.
    #[error("{path}: {reason}")]
    Data {
        /// The file, with a line or JSON path where known.
        path: String,
        /// What is wrong.
        reason: String,
    },
    /// Caller's: the questions chosen to score (a conversation range, a half) are not in
    /// the data file, or none are; says what the file has.
    #[error("{0}")]
    Selection(String),
    /// The engine failed (importing or recalling).
    #[error(transparent)]
    Engine(#[from] EngineError),
}

impl EvalError {
    pub(crate) fn data(path: impl std::fmt::Display, reason: impl Into<String>) -> Self {
        EvalError::Data { path: path.to_string(), reason: reason.into() }
    }
}

/// Reads a whole file, naming it in the error.
pub(crate) fn read(path: &std::path::Path) -> Result<Vec<u8>, EvalError> {
    std::fs::read(path).map_err(|source| EvalError::Read { path: path.display().to_string(), source })
}
