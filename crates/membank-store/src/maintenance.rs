//! Applying one maintenance cycle's plan, the same on both backends.
//!
//! The store decides nothing here: the engine plans (importance, layers, archives, merges,
//! fusions, conflicts) from a snapshot, and [`apply_plan`] carries the plan out in the
//! caller's transaction, skipping any item whose memory stopped being active in the
//! meantime (a person forgot or erased it while an LLM was thinking), so a plan can never
//! resurrect or overwrite a newer decision. Planned numbers are sanitised before they are
//! written ([`StateUpdate::sanitised`]).

use membank_core::event::NewEvent;
use membank_core::event_payload as payload;
use membank_core::{Layer, MemoryId, Status, Timestamp};

use crate::StoreError;
use crate::types::{MaintenanceApplied, MaintenancePlan, NewMemory, Replacement, StateUpdate};
use crate::write::UserTx;

/// What applying a plan needs from a backend's transaction, besides [`UserTx`].
pub(crate) trait PlanTx: UserTx {
    /// The memory's row and status, if it belongs to the user.
    fn status_of(&mut self, id: MemoryId) -> Result<Option<(i64, Status)>, StoreError>;
    /// Stores a new memory with its vector, index row and `created` event.
    fn insert(&mut self, new: NewMemory) -> Result<MemoryId, StoreError>;
    /// Writes an update's sanitised values to the memory in row `seq`.
    fn update(&mut self, seq: i64, values: &UpdateValues<'_>) -> Result<(), StoreError>;
    /// Archives the memory in row `seq`.
    fn archive(&mut self, seq: i64) -> Result<(), StoreError>;
    /// Marks the memory in row `seq` superseded by `by`.
    fn supersede(&mut self, seq: i64, by: MemoryId) -> Result<(), StoreError>;
    /// Records that the user was maintained at `now`, with their memories compared up to
    /// position `through` (`None`: up to their newest memory); the position never moves back.
    fn mark_maintained(&mut self, now: Timestamp, through: Option<i64>) -> Result<(), StoreError>;
}

/// A [`StateUpdate`]'s values as they are written: importances in [0, 1], counts and
/// factors finite and not negative.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct UpdateValues<'a> {
    /// The new importance (0 when the plan's is not a number).
    pub importance: f64,
    /// The new layer.
    pub layer: Layer,
    /// A new base importance, if it changes.
    pub base: Option<f64>,
    /// Who set the base importance (`llm`, …), if it changes.
    pub source: Option<&'a str>,
    /// Recalls to add.
    pub add_recalls: u32,
    /// Decayed frequency to add (0 when the plan's is not a finite number).
    pub add_frequency: f64,
    /// A new decay-rate factor, only a finite positive one.
    pub decay_factor: Option<f64>,
}

impl StateUpdate {
    /// The values this update writes, sanitised.
    pub(crate) fn sanitised(&self) -> UpdateValues<'_> {
        let (base, source) = match &self.base_importance {
            Some((value, source)) => (Some(value.clamp(0.0, 1.0)), Some(source.as_str())),
            None => (None, None),
        };
        UpdateValues {
            importance: if self.importance.is_finite() { self.importance.clamp(0.0, 1.0) } else { 0.0 },
            layer: self.layer,
            base,
            source,
            add_recalls: self.add_recalls,
            add_frequency: if self.add_frequency.is_finite() { self.add_frequency.max(0.0) } else { 0.0 },
            decay_factor: self.decay_factor.filter(|v| v.is_finite() && *v > 0.0),
        }
    }
}

/// Carries out `plan` in the caller's transaction.
pub(crate) fn apply_plan(tx: &mut impl PlanTx, plan: MaintenancePlan) -> Result<MaintenanceApplied, StoreError> {
    let now = plan.now;
    let mut applied = MaintenanceApplied::default();
    let mut status_changed = false;

    // New memories first, so supersessions can point at them.
    let mut inserted: Vec<Option<MemoryId>> = Vec::with_capacity(plan.insert.len());
    for (new, kind, data) in plan.insert {
        // A fusion of sources that are no longer all active is not made.
        let mut sources_active = true;
        for source in &new.memory.derived_from {
            if !matches!(tx.status_of(*source)?, Some((_, Status::Active))) {
                sources_active = false;
            }
        }
        if !sources_active {
            applied.skipped += 1;
            inserted.push(None);
            continue;
        }
        let id = tx.insert(new)?;
        tx.append(&[NewEvent::about(id, kind, now, data)])?;
        applied.inserted += 1;
        inserted.push(Some(id));
    }

    for update in plan.updates {
        let Some((seq, Status::Active)) = tx.status_of(update.id)? else {
            applied.skipped += 1;
            continue;
        };
        tx.update(seq, &update.sanitised())?;
        let events: Vec<NewEvent> =
            update.events.into_iter().map(|(kind, data)| NewEvent::about(update.id, kind, now, data)).collect();
        tx.append(&events)?;
    }

    for (id, data) in plan.archive {
        let Some((seq, Status::Active)) = tx.status_of(id)? else {
            applied.skipped += 1;
            continue;
        };
        tx.archive(seq)?;
        tx.append(&[payload::archived(id, now, data)])?;
        applied.archived += 1;
        status_changed = true;
    }

    for supersession in plan.supersede {
        let by = match supersession.by {
            Replacement::Existing(id) => Some(id),
            Replacement::Inserted(index) => inserted.get(index).copied().flatten(),
        };
        let Some(by) = by else {
            applied.skipped += 1;
            continue;
        };
        let old = tx.status_of(supersession.old)?;
        let winner = tx.status_of(by)?;
        let (Some((seq, Status::Active)), Some((_, Status::Active))) = (old, winner) else {
            applied.skipped += 1;
            continue;
        };
        tx.supersede(seq, by)?;
        tx.append(&[payload::superseded_in_maintenance(supersession.old, now, by, supersession.data)])?;
        applied.superseded += 1;
        status_changed = true;
    }

    if status_changed {
        tx.bump_revision()?;
    }
    tx.mark_maintained(now, plan.maintained_through)?;
    tx.append(&[payload::maintained(now, plan.summary, applied.skipped)])?;
    Ok(applied)
}
