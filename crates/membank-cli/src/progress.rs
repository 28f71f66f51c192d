//! Progress of long imports, evaluations, simulations and benchmark builds, on standard
//! error.
//!
//! On a terminal it is one line redrawn in place (`\r`), at most ten times a second. Anywhere
//! else (a pipe, a file, a CI log) a `\r` does not go back: the counters would run together
//! (`5000/10000010000/100000…`). There it writes whole lines only: while a step runs, at
//! most one every [`LINE_EVERY`], and then only once a tenth more of it is done or
//! [`HEARTBEAT`] has passed in silence; when the step ends (the next step begins, or
//! [`Bar::finish`]), one line saying how far it got and how long it took. A quick step so
//! leaves one line; an hour-long import about a dozen.
//!
//! What to write is decided by [`State::update`] and [`State::end`], functions of the state
//! and the time passed in, so the rate rules are tested without sleeping. Hand-written
//! rather than a dependency: a line of text is all it needs to do.

use std::io::{IsTerminal, Write};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// On a non-terminal, the shortest time between two progress lines of a step.
pub const LINE_EVERY: Duration = Duration::from_secs(5);
/// On a non-terminal, a line after this long even if less than a tenth more is done.
pub const HEARTBEAT: Duration = Duration::from_secs(60);
/// On a terminal, the shortest time between two redraws.
const REDRAW_EVERY: Duration = Duration::from_millis(100);

/// A progress display: `label  done/total [=====>    ] 42%  eta 12s` on a terminal;
/// elsewhere lines such as `label: done/total (42%), 12s, eta 16s` and, at the end of a
/// step, `label: done/total in 28.0s`.
pub struct Bar {
    style: Style,
    state: Mutex<State>,
}

/// How progress is written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Style {
    /// One line redrawn in place: standard error is a terminal.
    Redraw,
    /// Whole lines at a low rate: standard error is a pipe or a file.
    Lines,
}

/// The current step and what was last written about it.
struct State {
    label: String,
    started: Instant,
    last_draw: Option<Instant>,
    /// The last report of the step, `(done, total)`; `None` once its end was written.
    last: Option<(usize, usize)>,
    /// How much was done when the last line was written (`Lines` only).
    last_done: usize,
    /// A redrawn line is open (no newline after it yet).
    open_line: bool,
}

impl Default for Bar {
    fn default() -> Self {
        Self::new()
    }
}

impl Bar {
    /// A bar that redraws on a terminal and writes whole lines elsewhere.
    pub fn new() -> Self {
        let style = if std::io::stderr().is_terminal() { Style::Redraw } else { Style::Lines };
        Self { style, state: Mutex::new(State::new(Instant::now())) }
    }

    /// Reports `done` of `total` for the step `label`.
    pub fn update(&self, label: &str, done: usize, total: usize) {
        let text =
            self.state.lock().unwrap_or_else(|e| e.into_inner()).update(self.style, label, done, total, Instant::now());
        write(text);
    }

    /// Ends the last step: ends a redrawn line, or writes the step's last line.
    pub fn finish(&self) {
        let text = self.state.lock().unwrap_or_else(|e| e.into_inner()).end(self.style, Instant::now());
        write(text);
    }
}

fn write(text: Option<String>) {
    if let Some(text) = text {
        let mut err = std::io::stderr().lock();
        let _ = err.write_all(text.as_bytes());
        let _ = err.flush();
    }
}

impl State {
    fn new(now: Instant) -> Self {
        Self { label: String::new(), started: now, last_draw: None, last: None, last_done: 0, open_line: false }
    }

    /// What to write for this report at time `now`, if anything.
    fn update(&mut self, style: Style, label: &str, done: usize, total: usize, now: Instant) -> Option<String> {
        let mut out = String::new();
        if self.label != label {
            out.extend(self.end(style, now));
            *self = Self::new(now);
            self.label = label.to_string();
        }
        if total == 0 {
            // Nothing to do after all (an evaluation database already imported): the step
            // says nothing, and a line drawn for it at a terminal is cleared.
            self.last = None;
            return std::mem::take(&mut self.open_line)
                .then(|| "\r\x1b[2K".to_string())
                .or((!out.is_empty()).then_some(out));
        }
        self.last = Some((done, total));
        let finished = done >= total;
        let fraction = if total == 0 { 1.0 } else { (done as f64 / total as f64).min(1.0) };
        let since_draw = now.saturating_duration_since(self.last_draw.unwrap_or(self.started));
        let elapsed = now.saturating_duration_since(self.started).as_secs_f64();
        let eta = if done > 0 && !finished {
            format!("eta {:.0}s", elapsed / done as f64 * (total - done) as f64)
        } else {
            format!("{elapsed:.0}s")
        };
        let due = match style {
            Style::Redraw => finished || self.last_draw.is_none() || since_draw >= REDRAW_EVERY,
            Style::Lines => {
                let tenth_more = done.saturating_sub(self.last_done).saturating_mul(10) >= total;
                !finished && since_draw >= LINE_EVERY && (tenth_more || since_draw >= HEARTBEAT)
            }
        };
        if due {
            self.last_draw = Some(now);
            self.last_done = done;
            match style {
                Style::Redraw => {
                    self.open_line = true;
                    let width = 30;
                    let filled = ((fraction * width as f64) as usize).min(width);
                    let bar: String = "=".repeat(filled)
                        + if filled < width { ">" } else { "" }
                        + &" ".repeat(width.saturating_sub(filled + 1));
                    out += &format!("\r{label:<10} {done:>7}/{total:<7} [{bar}] {:>3.0}%  {eta}   ", fraction * 100.0);
                }
                Style::Lines => {
                    out += &format!("{label}: {done}/{total} ({:.0}%), {elapsed:.0}s, {eta}\n", fraction * 100.0)
                }
            }
        }
        (!out.is_empty()).then_some(out)
    }

    /// What to write when the current step ends at time `now`: the newline after a redrawn
    /// line, or the step's last line; nothing if that was written already.
    fn end(&mut self, style: Style, now: Instant) -> Option<String> {
        match style {
            Style::Redraw => std::mem::take(&mut self.open_line).then(|| "\n".to_string()),
            Style::Lines => {
                let (done, total) = self.last.take()?;
                let elapsed = now.saturating_duration_since(self.started).as_secs_f64();
                Some(format!("{}: {done}/{total} in {elapsed:.1}s\n", self.label))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_step_that_turns_out_empty_says_nothing() {
        let lines =
            written(Style::Lines, &[(0, "importing", 0, 581), (0, "importing", 0, 0), (1, "asking", 56, 56)], 2);
        assert_eq!(lines, "asking: 56/56 in 1.0s\n");
        let redrawn = written(Style::Redraw, &[(0, "importing", 0, 581), (0, "importing", 0, 0)], 1);
        assert!(redrawn.ends_with("\r\x1b[2K"), "{redrawn:?}");
    }

    /// Feeds `(seconds since start, label, done, total)` reports, then ends the step at
    /// `end` seconds; returns what was written.
    fn written(style: Style, reports: &[(u64, &str, usize, usize)], end: u64) -> String {
        let start = Instant::now();
        let mut state = State::new(start);
        let mut out: String = reports
            .iter()
            .filter_map(|&(secs, label, done, total)| {
                state.update(style, label, done, total, start + Duration::from_secs(secs))
            })
            .collect();
        out.extend(state.end(style, start + Duration::from_secs(end)));
        // A second end (a second `finish`) writes nothing more.
        assert_eq!(state.end(style, start + Duration::from_secs(end + 1)), None);
        out
    }

    #[test]
    fn a_quick_step_writes_one_whole_line_when_it_ends() {
        let out = written(
            Style::Lines,
            &[
                (0, "embedding", 0, 100_000),
                (1, "embedding", 5000, 100_000),
                (2, "embedding", 10_000, 100_000),
                (3, "embedding", 100_000, 100_000),
            ],
            3,
        );
        assert_eq!(out, "embedding: 100000/100000 in 3.0s\n");
    }

    #[test]
    fn a_long_step_writes_a_line_per_tenth_at_most_every_five_seconds() {
        // 1 % a second for 100 s: a line every 10 s (a tenth), never the 1 % steps between.
        let reports: Vec<(u64, &str, usize, usize)> = (0..=100).map(|s| (s, "asking", s as usize, 100)).collect();
        let out = written(Style::Lines, &reports, 100);
        let lines: Vec<&str> = out.lines().collect();
        assert_eq!(lines.len(), 10, "{out}");
        assert_eq!(lines[0], "asking: 10/100 (10%), 10s, eta 90s");
        assert_eq!(lines[8], "asking: 90/100 (90%), 90s, eta 10s");
        assert_eq!(lines[9], "asking: 100/100 in 100.0s");
        assert!(!out.contains('\r'));
        // 10 % a second: at most one line per 5 s.
        let fast: Vec<(u64, &str, usize, usize)> = (0..=9).map(|s| (s, "asking", s as usize * 10, 100)).collect();
        assert_eq!(written(Style::Lines, &fast, 10), "asking: 50/100 (50%), 5s, eta 5s\nasking: 90/100 in 10.0s\n");
    }

    #[test]
    fn a_slow_step_still_writes_a_line_a_minute() {
        let out = written(
            Style::Lines,
            &[
                (0, "importing", 0, 1000),
                (30, "importing", 1, 1000),
                (61, "importing", 2, 1000),
                (62, "importing", 3, 1000),
            ],
            62,
        );
        assert_eq!(out, "importing: 2/1000 (0%), 61s, eta 30439s\nimporting: 3/1000 in 62.0s\n");
    }

    #[test]
    fn each_step_ends_with_its_last_report_even_if_the_total_changed() {
        let out = written(
            Style::Lines,
            &[
                (0, "importing", 0, 1),
                (0, "importing", 0, 0),
                (1, "importing", 6, 6),
                (1, "asking", 0, 3),
                (2, "asking", 3, 3),
                (3, "asking", 3, 4),
                (4, "asking", 4, 4),
            ],
            4,
        );
        assert_eq!(out, "importing: 6/6 in 1.0s\nasking: 4/4 in 3.0s\n");
        // Nothing reported, nothing written.
        assert_eq!(written(Style::Lines, &[], 1), "");
    }

    #[test]
    fn a_terminal_gets_one_redrawn_line_per_step() {
        let out = written(Style::Redraw, &[(0, "importing", 1, 2), (1, "importing", 2, 2), (2, "asking", 1, 1)], 2);
        assert_eq!(out.matches('\r').count(), 3, "{out:?}");
        assert_eq!(out.matches('\n').count(), 2, "the step change and the end end the line: {out:?}");
        assert!(out.ends_with('\n'));
    }
}
