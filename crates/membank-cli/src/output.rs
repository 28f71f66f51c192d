//! Writing answers: pretty JSON for `--json`, and words quoted for the commands a
//! message suggests typing next.

use std::io::Write;

use anyhow::Result;

/// Prints `value` as pretty JSON on standard output, flushed, so a closed pipe is seen here.
pub fn print_json(value: &impl serde::Serialize) -> Result<()> {
    let mut out = std::io::stdout().lock();
    writeln!(out, "{}", serde_json::to_string_pretty(value)?)?;
    out.flush()?;
    Ok(())
}

/// `text` as one word a POSIX shell reads back unchanged: as is when it is plain, else in
/// single quotes.
pub fn shell_word(text: &str) -> String {
    if !text.is_empty() && text.chars().all(|c| c.is_ascii_alphanumeric() || "-_./:=@+,".contains(c)) {
        text.to_string()
    } else {
        format!("'{}'", text.replace('\'', "'\\''"))
    }
}
