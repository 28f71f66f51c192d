//! Reading what a command was given beyond clap's parsing: text from a file or standard
//! input, times and days, lists of ids and names. Each failure is the engine's
//! `Invalid` (exit code 3), as it would be over the API.

use std::io::Read;
use std::path::{Path, PathBuf};

use anyhow::{Context as _, Result};
use membank_engine::core::Scope;
use membank_engine::{Engine, EngineError};

/// Reads a text argument from a file or standard input, refusing invalid UTF-8.
pub fn read_text(path: &Path) -> Result<String> {
    let bytes = if path == Path::new("-") {
        let mut buf = Vec::new();
        std::io::stdin().take(membank_engine::core::limits::MAX_TEXT_BYTES as u64 + 1).read_to_end(&mut buf)?;
        buf
    } else {
        let mut buf = Vec::new();
        std::fs::File::open(path)
            .with_context(|| format!("cannot read {}", path.display()))?
            .take(membank_engine::core::limits::MAX_TEXT_BYTES as u64 + 1)
            .read_to_end(&mut buf)?;
        buf
    };
    String::from_utf8(bytes).map_err(|e| {
        anyhow::Error::new(EngineError::Invalid(membank_engine::core::InvalidInput::new(
            "text file",
            format!(
                "{} is not valid UTF-8 (first bad byte at offset {})",
                path.display(),
                e.utf8_error().valid_up_to()
            ),
        )))
    })
}

/// The inline text, else the file's (`-` for standard input), else none.
pub fn text_arg(inline: Option<String>, file: Option<&PathBuf>) -> Result<Option<String>> {
    match (inline, file) {
        (Some(text), _) => Ok(Some(text)),
        (None, Some(path)) => read_text(path).map(Some),
        (None, None) => Ok(None),
    }
}

/// A time flag for this user: RFC 3339, or a bare date as the user's local midnight.
pub fn at(
    engine: &Engine,
    scope: &Scope,
    field: &'static str,
    value: Option<&str>,
) -> Result<Option<membank_engine::core::Timestamp>> {
    Ok(value.map(|v| engine.parse_time(scope, field, v)).transpose()?)
}

/// A day flag (`--from`, `--to`): YYYY-MM-DD.
pub fn day(field: &'static str, value: Option<&str>) -> Result<Option<chrono::NaiveDate>> {
    Ok(value.map(|v| membank_engine::core::time::parse_day(field, v)).transpose().map_err(EngineError::Invalid)?)
}

/// Every value parsed, or the first one's error.
pub fn parse_all<T: std::str::FromStr<Err = membank_engine::core::InvalidInput>>(values: &[String]) -> Result<Vec<T>> {
    Ok(values.iter().map(|v| v.parse::<T>()).collect::<Result<Vec<_>, _>>()?)
}
