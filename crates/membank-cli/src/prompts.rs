//! Asking the person at the terminal: whether one is there, and a yes/no question.
//! Scripts (input not a terminal) are never asked; the commands decide what they do then.

use std::io::Write;

use anyhow::Result;

/// True when a person is at the keyboard: standard input and standard error are terminals.
pub fn interactive() -> bool {
    use std::io::IsTerminal as _;
    std::io::stdin().is_terminal() && std::io::stderr().is_terminal()
}

/// Asks a yes/no question on standard error and reads the answer from standard input;
/// anything but `y` or `yes` is no.
pub fn confirm(question: &str) -> Result<bool> {
    eprint!("{question} [y/N] ");
    std::io::stderr().flush()?;
    let mut answer = String::new();
    std::io::stdin().read_line(&mut answer)?;
    Ok(matches!(answer.trim().to_ascii_lowercase().as_str(), "y" | "yes"))
}
