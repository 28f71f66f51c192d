//! Writing answers: pretty JSON for `--json`, human text with the terminal's control
//! characters made visible, and words quoted for the commands a message suggests typing
//! next.

use std::borrow::Cow;
use std::io::Write;

use anyhow::{Context as _, Result};

/// Prints `value` as pretty JSON on standard output, flushed, so a closed pipe is seen here.
pub fn print_json(value: &impl serde::Serialize) -> Result<()> {
    let text = serde_json::to_string_pretty(value)?;
    let mut out = std::io::stdout().lock();
    writeln!(out, "{text}").and_then(|()| out.flush()).context("cannot write to standard output")
}

/// Prints human-readable `text` on standard output, flushed, with [`terminal_safe`]
/// applied: stored text is data, and a memory holding `\x1b[2J` must not clear the
/// screen of whoever lists it. A write error is returned (a closed pipe ends quietly in
/// `main`, anything else is exit 1).
pub fn print_text(text: &str) -> Result<()> {
    let mut out = std::io::stdout().lock();
    out.write_all(terminal_safe(text).as_bytes()).and_then(|()| out.flush()).context("cannot write to standard output")
}

/// `text` with every character a terminal would act on written out as an escape
/// (`\u{1b}`): C0 and C1 controls and DEL, except the line feed and tab that lay text out,
/// and the bidirectional overrides and isolates that reorder what follows them. JSON output
/// does not need this (its encoder escapes controls) and keeps the text exact.
pub fn terminal_safe(text: &str) -> Cow<'_, str> {
    fn acts(c: char) -> bool {
        (c.is_control() && c != '\n' && c != '\t') || matches!(c, '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
    }
    if !text.chars().any(acts) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        if acts(c) {
            out.extend(c.escape_unicode());
        } else {
            out.push(c);
        }
    }
    Cow::Owned(out)
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn terminal_safe_escapes_what_a_terminal_would_act_on_and_keeps_the_rest() {
        assert_eq!(terminal_safe("plain text, 中文\n\tindented"), "plain text, 中文\n\tindented");
        assert!(matches!(terminal_safe("plain"), Cow::Borrowed(_)));
        assert_eq!(terminal_safe("a\x1b[2Jb"), "a\\u{1b}[2Jb");
        assert_eq!(terminal_safe("\r\x07\x7f\u{9b}"), "\\u{d}\\u{7}\\u{7f}\\u{9b}");
        assert_eq!(terminal_safe("abc\u{202e}fed"), "abc\\u{202e}fed");
    }
}
