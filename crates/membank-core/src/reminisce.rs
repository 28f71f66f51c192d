//! Reminiscence: an archived memory that a recall found in the archive and returned comes
//! back to the active memories, with Ebbinghaus's **savings**: relearning is faster than
//! first learning, so it does not start again as a new memory would.
//!
//! Archiving changes none of a memory's forgetting numbers (only its status), so the
//! stored state of an archived memory is the state it had when it was archived. From it:
//!
//! - **MemoryBank**: `S ← S_at_archive + 1` and the recall clock restarts now, so
//!   `R = exp(-t/S)` starts again at 1 with the strength the memory had earned, plus the
//!   usual one of a recall.
//! - **FadeMem**: `v` is reinforced as from the moment it was archived, not from what the
//!   curve has decayed it to since: the time in the archive does not count against it. As
//!   a recall's gain shrinks with the recent recalls (`exp(−n/N)`, and `n` was higher at
//!   archive than it is now), the reinforcement from now is taken instead when it is the
//!   better one: a reminiscence never leaves a memory weaker than a plain recall today
//!   would. The access clock restarts now.
//!
//! Both policies' numbers are updated whichever is configured, as a recall does.

use serde_json::json;

use crate::ForgettingState;
use crate::fademem::days_between;
use crate::forgetting::ForgettingPolicy;
use crate::time::Timestamp;

impl ForgettingPolicy {
    /// The moment a memory in `state` was archived: the time of its `archived` event when
    /// known, otherwise the moment FadeMem's `v` fell below ε (where a sweep would have
    /// archived it). Never before its last recall nor after `now`.
    pub fn archive_moment(&self, state: &ForgettingState, archived_at: Option<Timestamp>, now: Timestamp) -> Timestamp {
        let moment = archived_at.unwrap_or_else(|| {
            let days = self.fademem.days_until_archived(state);
            let ms = if days.is_finite() { (days * 86_400_000.0).min(1e15) as i64 } else { i64::MAX };
            state.last_recalled_at.checked_add_signed(chrono::Duration::milliseconds(ms)).unwrap_or(now)
        });
        moment.max(state.last_recalled_at).min(now.max(state.last_recalled_at))
    }

    /// The state of an archived memory in `state`, archived at `archived_at` (see
    /// [`Self::archive_moment`]), after a strengthening recall at `now` returned it: the
    /// savings rule of this module. The caller sets its status back to active.
    pub fn reminisce(
        &self,
        state: &ForgettingState,
        archived_at: Option<Timestamp>,
        now: Timestamp,
    ) -> ForgettingState {
        let at_archive = self.archive_moment(state, archived_at, now);
        let from_archive = self.fademem.reinforce(state, at_archive);
        let from_now = self.fademem.reinforce(state, now);
        // The younger effective age is the higher `v` on the same curve.
        let faded = if from_archive.fade_age <= from_now.fade_age { from_archive } else { from_now };
        ForgettingState {
            strength: state.strength.strengthened(),
            recall_count: state.recall_count.saturating_add(1),
            last_recalled_at: state.last_recalled_at.max(now),
            fade_age: faded.fade_age,
            access_frequency: faded.access_frequency,
            ..*state
        }
    }

    /// The numbers of a `reminisced` event (without the recall's query id, rank and score):
    /// the strengths before, at archive and after, when it was archived, and FadeMem's `v`
    /// now before, at archive and after, whichever policy is configured.
    pub fn reminisce_event_data(
        &self,
        before: &ForgettingState,
        after: &ForgettingState,
        archived_at: Option<Timestamp>,
        now: Timestamp,
    ) -> serde_json::Value {
        let at_archive = self.archive_moment(before, archived_at, now);
        json!({
            "policy": self.kind.as_str(),
            "previous_status": "archived",
            "archived_at": at_archive.to_rfc3339(),
            "days_archived": days_between(at_archive, now),
            "strength_at_archive": before.strength.get(),
            "strength_before": before.strength.get(),
            "strength_after": after.strength.get(),
            "retention_before": self.memorybank_retention(before, now),
            "retention_after": self.memorybank_retention(after, now),
            "v_at_archive": self.fademem.decay(before, at_archive).strength,
            "v_before": self.fademem.decay(before, now).strength,
            "v_after": self.fademem.decay(after, now).strength,
            "frequency_after": after.access_frequency,
            "last_recalled_at_before": before.last_recalled_at.to_rfc3339(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Strength;
    use crate::forgetting::PolicyKind;
    use chrono::{Duration, TimeZone};

    fn t0() -> Timestamp {
        chrono::Utc.with_ymd_and_hms(2024, 1, 1, 0, 0, 0).unwrap()
    }

    #[test]
    fn memorybank_comes_back_with_the_strength_it_had_plus_one_and_a_fresh_clock() {
        let policy = ForgettingPolicy::default();
        let archived =
            ForgettingState { strength: Strength::new(4.0).unwrap(), recall_count: 3, ..ForgettingState::new(t0()) };
        let now = t0() + Duration::days(90);
        let after = policy.reminisce(&archived, Some(t0() + Duration::days(40)), now);
        assert_eq!(after.strength.get(), 5.0);
        assert_eq!(after.recall_count, 4);
        assert_eq!(after.last_recalled_at, now);
        assert_eq!(policy.retention_of(&after, now), 1.0);
        // A first learning would have started at S = 1: the savings are the other three.
        assert!(after.strength.get() > Strength::INITIAL.strengthened().get());
    }

    #[test]
    fn fademem_is_reinforced_as_from_the_archive_not_from_today() {
        let policy = ForgettingPolicy { kind: PolicyKind::FadeMem, ..ForgettingPolicy::default() };
        let state = ForgettingState::new(t0());
        let archived_at = policy.archive_moment(&state, None, t0() + Duration::days(400));
        assert!(policy.fademem.decay(&state, archived_at).strength <= policy.fademem.epsilon + 1e-9);
        let now = archived_at + Duration::days(200);
        let after = policy.reminisce(&state, Some(archived_at), now);
        let plain = policy.strengthen(&state, now);
        let v = |s: &ForgettingState| policy.fademem.decay(s, now).strength;
        assert!(v(&after) > policy.fademem.epsilon, "back above ε: {}", v(&after));
        assert!(v(&after) >= v(&plain), "never weaker than a plain recall today: {} vs {}", v(&after), v(&plain));
        assert_eq!(after.last_recalled_at, now);
        assert_eq!(after.strength.get(), 2.0);
        let data = policy.reminisce_event_data(&state, &after, Some(archived_at), now);
        assert_eq!(data["strength_at_archive"], 1.0);
        assert_eq!(data["strength_after"], 2.0);
        assert!(data["v_after"].as_f64().unwrap() > data["v_before"].as_f64().unwrap());
    }

    #[test]
    fn the_archive_moment_stays_between_the_last_recall_and_now() {
        let policy = ForgettingPolicy::default();
        let state = ForgettingState::new(t0());
        let now = t0() + Duration::days(3);
        assert_eq!(policy.archive_moment(&state, Some(t0() - Duration::days(5)), now), t0());
        assert_eq!(policy.archive_moment(&state, Some(now + Duration::days(5)), now), now);
        let pinned = ForgettingState { pinned: true, ..state };
        assert_eq!(policy.archive_moment(&pinned, None, now), now);
    }
}
