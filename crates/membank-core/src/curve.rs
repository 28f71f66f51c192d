//! A memory's forgetting curve: its retention over time, from the moment its clock started
//! to a projection ahead, replayed through the policy's own functions
//! ([`ForgettingPolicy::retention_of`], [`ForgettingPolicy::strengthen`]) so the picture
//! is the arithmetic the sweep runs, not a second copy of the formula.
//!
//! The caller supplies the state the clock started in, the steps that changed the state
//! (strengthening recalls, pins, unpins, restores, reminiscences: from the event log) and the memory's
//! stored state now. Between steps the state is the replayed one; after the last step it
//! is the stored one, so the curve at `now` is the retention every other view shows and
//! the projection is what the next sweeps will see.

use chrono::Duration;

use crate::forgetting::ForgettingPolicy;
use crate::state::ForgettingState;
use crate::time::Timestamp;

/// What changed the forgetting state at one moment.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Step {
    /// A strengthening recall (`S += 1`, the clock restarts).
    Recall,
    /// Pinned: no decay until unpinned.
    Pin,
    /// Unpinned.
    Unpin,
    /// Restored from the archive: the clock restarts (never backwards).
    Restore,
    /// Brought back from the archive by a strengthening recall that found it there: a
    /// restore and a recall with savings ([`ForgettingPolicy::reminisce`]), as from the
    /// moment it was archived (when known).
    Reminisce {
        /// When it was archived.
        archived_at: Option<Timestamp>,
    },
}

/// One point of the curve.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Point {
    /// When.
    pub at: Timestamp,
    /// Retention under the policy (FadeMem's `v` under FadeMem).
    pub retention: f64,
    /// Strength S in effect.
    pub strength: f64,
    /// After `now`: what happens if the memory is never recalled again.
    pub projected: bool,
}

/// The sampled curve.
#[derive(Debug, Clone, PartialEq)]
pub struct Curve {
    /// Ascending in time; at each step one point a millisecond before it and one at it,
    /// so a recall shows as a vertical jump.
    pub points: Vec<Point>,
    /// When retention falls (or fell) below the policy's archive threshold if the memory is
    /// never recalled again; `None` when pinned, when the policy has no threshold, or when
    /// it stays above it for a century.
    pub crosses_threshold_at: Option<Timestamp>,
    /// Retention just before and just after each step, in the order given.
    pub at_steps: Vec<(f64, f64)>,
}

/// How far the curve is sampled evenly (points at the steps and `now` come on top).
const SAMPLES: usize = 240;

/// The longest projection: a century.
const HORIZON_DAYS: i64 = 36_500;

impl ForgettingPolicy {
    /// The state after `step` at `at`, by the policy's own rules.
    pub fn apply(&self, state: &ForgettingState, step: Step, at: Timestamp) -> ForgettingState {
        match step {
            Step::Recall => self.strengthen(state, at),
            Step::Pin => ForgettingState { pinned: true, ..*state },
            Step::Unpin => ForgettingState { pinned: false, ..*state },
            Step::Restore => ForgettingState { last_recalled_at: state.last_recalled_at.max(at), ..*state },
            Step::Reminisce { archived_at } => self.reminisce(state, archived_at, at),
        }
    }

    /// The first moment at or after `from` when a memory in `state`, never recalled again,
    /// is below the archive threshold; `None` without a threshold, when pinned, or beyond a
    /// century. Found by search on [`Self::retention_of`] to the second (retention never
    /// rises without a step), so it holds for either policy.
    pub fn crosses_threshold(&self, state: &ForgettingState, from: Timestamp) -> Option<Timestamp> {
        let below = self.archive_below()?;
        if state.pinned {
            return None;
        }
        let under = |t: Timestamp| self.retention_of(state, t) < below;
        if under(from) {
            return Some(from);
        }
        let mut step = Duration::hours(1);
        let limit = from + Duration::days(HORIZON_DAYS);
        let (mut low, mut high) = (from, from + step);
        while !under(high) {
            if high >= limit {
                return None;
            }
            low = high;
            step = step * 2;
            high = (high + step).min(limit);
        }
        while high - low > Duration::seconds(1) {
            let middle = low + (high - low) / 2;
            if under(middle) { high = middle } else { low = middle }
        }
        Some(high)
    }

    /// The curve from `start.last_recalled_at` to `until`, through `steps` (ascending in
    /// time), with `current` the stored state in force after the last step. Points after
    /// `now` are marked projected.
    pub fn curve(
        &self,
        start: &ForgettingState,
        steps: &[(Timestamp, Step)],
        current: &ForgettingState,
        now: Timestamp,
        until: Timestamp,
    ) -> Curve {
        let origin = start.last_recalled_at;
        // The state in force from each boundary on: the start, then after each step; the
        // last one is the stored state.
        let mut segments: Vec<(Timestamp, ForgettingState)> = vec![(origin, *start)];
        let mut at_steps = Vec::with_capacity(steps.len());
        for (i, &(at, step)) in steps.iter().enumerate() {
            let before = segments.last().map(|(_, s)| *s).unwrap_or(*start);
            let after = if i + 1 == steps.len() { *current } else { self.apply(&before, step, at) };
            at_steps.push((self.retention_of(&before, at), self.retention_of(&after, at)));
            segments.push((at, after));
        }
        if steps.is_empty() {
            segments[0].1 = *current;
        }
        let state_at = |t: Timestamp, strictly_before: bool| -> &ForgettingState {
            let index = segments
                .iter()
                .rposition(|(from, _)| if strictly_before { *from < t } else { *from <= t })
                .unwrap_or(0);
            &segments[index].1
        };
        let until = until.max(now).max(origin);
        let mut times: Vec<(Timestamp, bool)> = Vec::with_capacity(SAMPLES + 2 * steps.len() + 2);
        let span = (until - origin).num_milliseconds().max(1);
        for i in 0..=SAMPLES {
            times.push((origin + Duration::milliseconds(span * i as i64 / SAMPLES as i64), false));
        }
        for &(at, _) in steps {
            times.push((at - Duration::milliseconds(1), true));
            times.push((at, false));
        }
        if now >= origin {
            times.push((now, false));
        }
        let crosses = self.crosses_threshold(current, segments.last().map(|(at, _)| *at).unwrap_or(origin));
        if let Some(at) = crosses.filter(|at| *at <= until) {
            times.push((at, false));
        }
        times.retain(|(t, _)| *t >= origin && *t <= until);
        times.sort_by_key(|(t, before)| (*t, !*before));
        times.dedup_by_key(|(t, _)| *t);
        let points = times
            .into_iter()
            .map(|(t, before)| {
                let state = state_at(t, before);
                Point {
                    at: t,
                    retention: self.retention_of(state, t),
                    strength: state.strength.get(),
                    projected: t > now,
                }
            })
            .collect();
        Curve { points, crosses_threshold_at: crosses, at_steps }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::forgetting::PolicyKind;
    use crate::state::Strength;
    use chrono::TimeZone;

    fn t0() -> Timestamp {
        chrono::Utc.with_ymd_and_hms(2024, 5, 1, 12, 0, 0).unwrap()
    }

    #[test]
    fn each_recall_is_a_jump_and_the_projection_crosses_at_the_sweeps_moment() {
        // The paper's curve on a three-day unit (importance weight 0), so S is the whole strength.
        let policy =
            ForgettingPolicy { unit: Duration::days(3), importance_weight: 0.0, ..ForgettingPolicy::default() };
        let start = ForgettingState::new(t0());
        let recalls = [t0() + Duration::days(2), t0() + Duration::days(5)];
        let steps: Vec<(Timestamp, Step)> = recalls.iter().map(|at| (*at, Step::Recall)).collect();
        let mut current = start;
        for at in recalls {
            current = policy.strengthen(&current, at);
        }
        let now = t0() + Duration::days(6);
        let curve = policy.curve(&start, &steps, &current, now, now + Duration::days(40));
        assert_eq!(curve.points.first().map(|p| p.retention), Some(1.0));
        for (i, at) in recalls.iter().enumerate() {
            let before = curve
                .points
                .iter()
                .find(|p| p.at == *at - Duration::milliseconds(1))
                .expect("a point just before the recall");
            let after = curve.points.iter().find(|p| p.at == *at).expect("a point at the recall");
            assert!(
                before.retention < 0.9 && (after.retention - 1.0).abs() < 1e-12,
                "recall {i}: {before:?} → {after:?}"
            );
            assert_eq!(after.strength, (i + 2) as f64);
            let (r_before, r_after) = curve.at_steps[i];
            assert!(
                (r_before - before.retention).abs() < 1e-6 && r_after == after.retention,
                "{:?}",
                curve.at_steps[i]
            );
        }
        assert!(curve.points.windows(2).all(|w| w[0].at < w[1].at), "ascending in time");
        let crosses = curve.crosses_threshold_at.expect("the policy has a threshold");
        // S = 3 after two recalls: R = exp(-t/3) < 0.05 once t > 3·ln 20 units of 3 days.
        let expected = recalls[1] + Duration::milliseconds((3.0 * 20f64.ln() * 3.0 * 86_400_000.0) as i64);
        assert!((crosses - expected).num_seconds().abs() <= 1, "{crosses} vs {expected}");
        // The sweep's own assessment agrees on both sides of it.
        let id = crate::MemoryId::generate(t0());
        assert!(policy.assess(id, &current, crosses - Duration::seconds(2)).archive.is_none());
        assert!(policy.assess(id, &current, crosses + Duration::seconds(2)).archive.is_some());
        assert!(curve.points.iter().any(|p| p.at == crosses), "the crossing is a point");
        assert!(curve.points.iter().filter(|p| p.at > now).all(|p| p.projected));
        assert!(curve.points.iter().filter(|p| p.at <= now).all(|p| !p.projected));
    }

    #[test]
    fn pinned_memories_stay_flat_and_never_cross() {
        let policy = ForgettingPolicy::default();
        let start = ForgettingState::new(t0());
        let pinned_at = t0() + Duration::days(1);
        let current = policy.apply(&start, Step::Pin, pinned_at);
        let now = t0() + Duration::days(30);
        let curve = policy.curve(&start, &[(pinned_at, Step::Pin)], &current, now, now + Duration::days(30));
        assert!(curve.points.iter().filter(|p| p.at >= pinned_at).all(|p| p.retention == 1.0));
        assert!(curve.points.iter().any(|p| p.at < pinned_at && p.retention < 1.0));
        assert_eq!(curve.crosses_threshold_at, None);
    }

    #[test]
    fn a_reminiscence_is_a_jump_back_to_full_retention_with_savings() {
        let policy = ForgettingPolicy::default();
        let start = ForgettingState::new(t0());
        let recalled = t0() + Duration::days(2);
        let archived_at = t0() + Duration::days(20);
        let reminisced = t0() + Duration::days(60);
        let steps = [(recalled, Step::Recall), (reminisced, Step::Reminisce { archived_at: Some(archived_at) })];
        let after_recall = policy.apply(&start, Step::Recall, recalled);
        let current = policy.apply(&after_recall, steps[1].1, reminisced);
        assert_eq!(current.strength.get(), 3.0, "S at archive (2) plus one");
        let now = reminisced + Duration::days(1);
        let curve = policy.curve(&start, &steps, &current, now, now + Duration::days(10));
        let (before, after) = curve.at_steps[1];
        assert!(before < 0.05 && after == 1.0, "{before} → {after}");
        let at = curve.points.iter().find(|p| p.at == reminisced).unwrap();
        assert_eq!(at.strength, 3.0);
    }

    #[test]
    fn without_steps_the_stored_state_is_the_curve() {
        let policy = ForgettingPolicy::default();
        let stored = ForgettingState { strength: Strength::new(4.0).unwrap(), ..ForgettingState::new(t0()) };
        let now = t0() + Duration::days(3);
        let curve = policy.curve(&ForgettingState::new(t0()), &[], &stored, now, now);
        let at_now = curve.points.iter().find(|p| p.at == now).unwrap();
        assert_eq!(at_now.retention, policy.retention_of(&stored, now));
        assert_eq!(at_now.strength, 4.0);
    }

    #[test]
    fn fademem_crossing_matches_its_closed_form() {
        let policy = ForgettingPolicy { kind: PolicyKind::FadeMem, ..ForgettingPolicy::default() };
        let state = ForgettingState::new(t0());
        let crosses = policy.crosses_threshold(&state, t0()).expect("FadeMem archives below ε");
        let expected = policy.fademem.days_until_archived(&state);
        let got = (crosses - t0()).num_seconds() as f64 / 86_400.0;
        assert!((got - expected).abs() < 1.0 / 86_400.0 * 2.0, "{got} days vs {expected}");
    }
}
