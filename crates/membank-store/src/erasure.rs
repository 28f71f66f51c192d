//! The erasure cascade, the same on both backends: which memories an erasure reaches, in
//! which order, and what each one's `erased` event says.
//!
//! Erasing a memory also erases, transitively, every memory made from it (summaries and
//! portraits whose `derived_from` names it, fused memories) and every older version it
//! replaced (`superseded_by` it: the text before an edit, a summary's earlier versions,
//! near-duplicates merged into it), because each of them may quote the erased text. The
//! cascade is breadth first from the erased memory; the memories found from one memory
//! are taken in the order they were stored (their row `seq`); each is erased once, and
//! memories erased already are skipped. Each loses its content, metadata, vector and index
//! entry (the backend's [`EraseTx::erase_row`]) and keeps a tombstone and an `erased`
//! event naming the memory whose erasure reached it.
//!
//! A user whose summary or portrait was erased this way is marked `resummarize_due`: the
//! next summarize run (or maintenance cycle with an LLM) makes them again from what remains.

use std::collections::{BTreeSet, VecDeque};

use membank_core::event_payload as payload;
use membank_core::{Kind, MemoryId, Status, Timestamp};

use crate::StoreError;
use crate::write::UserTx;

/// A memory an erasure reaches: its row, id, status before and kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Reached {
    /// Its row (`seq`).
    pub seq: i64,
    /// Its id.
    pub id: MemoryId,
    /// Its status before the erasure.
    pub status: Status,
    /// Its kind.
    pub kind: Kind,
}

/// What the cascade needs from a backend's transaction, besides [`UserTx`].
pub(crate) trait EraseTx: UserTx {
    /// The user's memories not erased yet that were made from `id` (`derived_from` names
    /// it) or that it replaced (`superseded_by` is it), ordered by their row `seq`.
    fn reached_by(&mut self, id: MemoryId) -> Result<Vec<Reached>, StoreError>;
    /// Removes the memory's content, texts, metadata, vector and index entry, the reasons
    /// an LLM wrote in its events, and stored idempotent answers that quoted it; marks it
    /// erased.
    fn erase_row(&mut self, seq: i64, id: MemoryId) -> Result<(), StoreError>;
    /// Marks the user's summaries and portraits due to be made again.
    fn mark_resummarize_due(&mut self) -> Result<(), StoreError>;
}

/// Erases `root` (not erased yet) and everything it reaches, logs one `erased` event for
/// each and bumps the user's revision; returns how many memories were erased.
pub(crate) fn erase_cascade(tx: &mut impl EraseTx, root: Reached, now: Timestamp) -> Result<usize, StoreError> {
    let closure = reached_from(tx, root)?;
    let cascaded: Vec<MemoryId> = closure.iter().skip(1).map(|r| r.id).collect();
    let mut derived_erased = false;
    let mut events = Vec::with_capacity(closure.len());
    for (index, reached) in closure.iter().enumerate() {
        tx.erase_row(reached.seq, reached.id)?;
        derived_erased |= index > 0 && reached.kind.is_summary();
        events.push(if index == 0 {
            payload::erased(reached.id, now, reached.status, &cascaded)
        } else {
            payload::erased_in_cascade(reached.id, now, reached.status, root.id)
        });
    }
    tx.append(&events)?;
    if derived_erased {
        tx.mark_resummarize_due()?;
    }
    tx.bump_revision()?;
    Ok(closure.len())
}

/// The root and every memory reached from it, breadth first, each once.
fn reached_from(tx: &mut impl EraseTx, root: Reached) -> Result<Vec<Reached>, StoreError> {
    let mut out = vec![root];
    let mut seen: BTreeSet<MemoryId> = BTreeSet::from([root.id]);
    let mut queue = VecDeque::from([root.id]);
    while let Some(current) = queue.pop_front() {
        for found in tx.reached_by(current)? {
            if seen.insert(found.id) {
                out.push(found);
                queue.push_back(found.id);
            }
        }
    }
    Ok(out)
}
