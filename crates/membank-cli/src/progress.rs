//! A small progress bar on standard error for long imports and evaluations.
//!
//! Drawn only when standard error is a terminal (scripts and CI logs stay clean), redrawn
//! at most ten times a second. Hand-written rather than a dependency: one line of text is
//! all it needs to do.

use std::io::{IsTerminal, Write};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// A progress line: `label  done/total [=====>    ] 42%  eta 12s`.
pub struct Bar {
    enabled: bool,
    state: Mutex<State>,
}

struct State {
    started: Instant,
    last_draw: Option<Instant>,
    label: String,
}

impl Bar {
    /// A bar that draws if standard error is a terminal.
    pub fn new() -> Self {
        Self { enabled: std::io::stderr().is_terminal(), state: Mutex::new(State { started: Instant::now(), last_draw: None, label: String::new() }) }
    }

    /// Reports `done` of `total` for the step `label`.
    pub fn update(&self, label: &str, done: usize, total: usize) {
        if !self.enabled {
            return;
        }
        let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        if state.label != label {
            if !state.label.is_empty() {
                eprintln!();
            }
            state.label = label.to_string();
            state.started = Instant::now();
            state.last_draw = None;
        }
        let finished = done >= total;
        if !finished && state.last_draw.is_some_and(|t| t.elapsed() < Duration::from_millis(100)) {
            return;
        }
        state.last_draw = Some(Instant::now());
        let fraction = if total == 0 { 1.0 } else { done as f64 / total as f64 };
        let width = 30;
        let filled = ((fraction * width as f64) as usize).min(width);
        let elapsed = state.started.elapsed().as_secs_f64();
        let eta = if done > 0 && !finished { format!("eta {:.0}s", elapsed / done as f64 * (total - done) as f64) } else { format!("{elapsed:.0}s") };
        let bar: String = "=".repeat(filled) + if filled < width { ">" } else { "" } + &" ".repeat(width.saturating_sub(filled + 1));
        let mut err = std::io::stderr().lock();
        let _ = write!(err, "\r{label:<10} {done:>7}/{total:<7} [{bar}] {:>3.0}%  {eta}   ", fraction * 100.0);
        let _ = err.flush();
    }

    /// Ends the line.
    pub fn finish(&self) {
        if self.enabled && !self.state.lock().unwrap_or_else(|e| e.into_inner()).label.is_empty() {
            eprintln!();
        }
    }
}
