//! The binary's errors and what they mean to a caller: usage mistakes found after
//! parsing, the `hint:` line under an error, quiet ends on a closed pipe, and the one
//! table from an error to its documented exit code (listed in `main.rs`).

use membank_engine::EngineError;
use membank_store::StoreError;

/// A mistake in how a command was called, found after parsing (exit code 2, like clap's).
#[derive(Debug)]
pub struct UsageError(pub String);

impl std::fmt::Display for UsageError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for UsageError {}

/// Something the command needs that is not there, found by the binary itself (a database
/// file a read-only command was pointed at, a directory; exit code 4, "not found").
#[derive(Debug)]
pub struct Missing(pub String);

impl std::fmt::Display for Missing {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Missing {}

/// A next step printed under an error (`hint: …`), with the flags the person used.
#[derive(Debug)]
pub struct Hint(pub String);

impl std::fmt::Display for Hint {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// Adds a hint that repeats the flags that matter, where the error's own advice is a bare
/// command that would act on other data (a missing model fetched into the default
/// directory instead of --model-dir). `model_flags` are the flags that name the local
/// model (`Context::model_flags`); `auto_model` says no model was named.
pub fn with_hint(err: anyhow::Error, model_flags: &str, auto_model: bool) -> anyhow::Error {
    let missing_model = err.chain().any(|cause| {
        matches!(
            cause.downcast_ref::<membank_embed::EmbedError>(),
            Some(membank_embed::EmbedError::ModelMissing { .. })
        ) || matches!(
            cause.downcast_ref::<EngineError>(),
            Some(EngineError::Embed(membank_embed::EmbedError::ModelMissing { .. }))
        )
    });
    let flags = model_flags;
    if missing_model && !flags.is_empty() {
        return err.context(Hint(format!("with your flags: membank models fetch{flags}")));
    }
    // Chosen automatically: the error's own advice fetches the default model; name the one
    // this store needs.
    let missing_dir = err.chain().find_map(|cause| {
        match cause.downcast_ref::<membank_embed::EmbedError>().or_else(|| match cause.downcast_ref::<EngineError>() {
            Some(EngineError::Embed(e)) => Some(e),
            _ => None,
        }) {
            Some(membank_embed::EmbedError::ModelMissing { dir, .. }) => Some(dir.clone()),
            _ => None,
        }
    });
    if auto_model
        && let Some(dir) = missing_dir
        && let Some(model) =
            membank_embed::KnownModel::ALL.into_iter().find(|m| membank_embed::fetch::default_dir_for(*m) == dir)
    {
        return err.context(Hint(format!(
            "no model is named, so this store uses {} (the model of its vectors, or the one the writing of its first memories needs); fetch it with: membank models fetch --model {}{flags}",
            model.name(),
            model.name()
        )));
    }
    err
}

/// True when `err` comes from writing to a closed stdout (the reader of a pipe left): the
/// command ends quietly then, as `head` expects.
pub fn is_broken_pipe(err: &anyhow::Error) -> bool {
    err.chain().any(|cause| {
        cause.downcast_ref::<std::io::Error>().is_some_and(|e| e.kind() == std::io::ErrorKind::BrokenPipe)
            || cause.downcast_ref::<membank_engine::EngineError>().is_some_and(
                |e| matches!(e, membank_engine::EngineError::Output(io) if io.kind() == std::io::ErrorKind::BrokenPipe),
            )
    })
}

/// Maps an error to the documented exit code.
pub fn exit_code(err: &anyhow::Error) -> u8 {
    for cause in err.chain() {
        if cause.downcast_ref::<UsageError>().is_some() {
            return 2;
        }
        if cause.downcast_ref::<Missing>().is_some() {
            return 4;
        }
        if let Some(e) = cause.downcast_ref::<EngineError>() {
            return match e {
                EngineError::Invalid(_) => 3,
                EngineError::NotFound(_) => 4,
                EngineError::Conflict(_) => 5,
                EngineError::Incompatible(_) => 6,
                EngineError::Embed(membank_embed::EmbedError::ModelMissing { .. }) => 7,
                EngineError::LlmNotConfigured => 8,
                EngineError::Llm(_) => 9,
                EngineError::StorageUnavailable(_) => 10,
                _ => 1,
            };
        }
        if cause.downcast_ref::<membank_engine::core::InvalidInput>().is_some() {
            return 3;
        }
        if let Some(e) = cause.downcast_ref::<StoreError>() {
            return match e {
                StoreError::NewerSchema { .. } | StoreError::Corrupt(_) | StoreError::ModelMismatch { .. } => 6,
                StoreError::NotFound { .. } => 4,
                StoreError::Conflict(_) => 5,
                StoreError::Invalid(_) => 3,
                StoreError::Unavailable(_) => 10,
                _ => 1,
            };
        }
        match cause.downcast_ref::<membank_embed::EmbedError>() {
            Some(membank_embed::EmbedError::ModelMissing { .. }) => return 7,
            // A --local-model (or config) name that is not a known model: a usage error.
            Some(membank_embed::EmbedError::UnknownModel { .. }) => return 2,
            _ => {}
        }
    }
    1
}
