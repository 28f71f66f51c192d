//! Shared 4-bit passes: dense searches of one user that run at the same time score their
//! queries in one pass over the user's codes.
//!
//! At 100k rows the 4-bit pass reads 19 MB of codes per query and was a quarter of all CPU
//! under 32 clients. [`crate::kernels::dot_u4_rows_many`] reads and unpacks each row once
//! for several queries. This module brings the queries together, without waiting for any
//! longer than a pass already running takes:
//! - A search that finds no pass over its rows running runs its own at once (the *leader*),
//!   taking with it every query already waiting with the same rows, up to [`MOST`]. A lone
//!   search therefore never waits, as before.
//! - A search that finds a pass over its rows running waits for it to end. The queries that
//!   gathered meanwhile then go in one pass, led by one of them.
//!
//! One pass at a time per entry and rows, not one per core: with two passes allowed, under
//! 32 clients on 2 cores most searches found a place free and ran alone (about 1.3 queries
//! a pass, 355 recalls/s); with one, about 3 queries a pass and 398 recalls/s (`membank
//! bench http --memories 100000 --clients 32`, same binary, same hour). The scan of a
//! lone search is still split over two threads when a core is spare. Searches of other
//! rows (another filter), of other users or of other entries do not wait for each other
//! and run side by side as before.
//!
//! **Same rows.** Only searches that hold the lock of the same cached entry at the same
//! moment meet here (the batcher lives inside the entry, and a search waits holding its
//! lock), so they see the same rows; those with the same [`ScanKey`] (the filter and labels
//! that chose the rows) admitted the same rows, and the leader scores its own rows for all.
//!
//! **Failure.** If a leader's pass panics, the queries it took from others go back to the
//! queue and one of them leads them again; the panic resumes in the leader's caller.
//!
//! Every query's scores are the ones it would have got alone, bit for bit (the kernels'
//! sums are exact), so results never depend on who ran with whom.

use std::sync::{Condvar, Mutex, MutexGuard};

use crate::kernels::ByteQuery;
use crate::types::SearchFilter;

/// The most queries one pass takes (two groups of four in the kernel).
pub(crate) const MOST: usize = 8;

/// What chose a search's rows: two searches of the same entry with equal keys admitted the
/// same rows.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct ScanKey {
    pub filter: SearchFilter,
    pub agent: Option<String>,
    pub session: Option<String>,
}

impl ScanKey {
    pub(crate) fn new(filter: &SearchFilter, labels: &super::Labels<'_>) -> Self {
        Self {
            filter: filter.clone(),
            agent: labels.agent.map(str::to_owned),
            session: labels.session.map(str::to_owned),
        }
    }
}

/// A query waiting for a pass.
struct Waiting {
    ticket: u64,
    key: ScanKey,
    query: ByteQuery,
}

#[derive(Default)]
struct State {
    next_ticket: u64,
    /// The rows of each pass running now (one key a pass).
    running: Vec<ScanKey>,
    waiting: Vec<Waiting>,
    /// Scores of queries whose pass ended, for their searches to pick up.
    finished: Vec<(u64, Vec<f32>)>,
    /// Passes run and queries scored, over the batcher's life (for tests and metrics).
    passes: u64,
    queries: u64,
}

impl State {
    /// Ends a pass over the rows of `key`.
    fn end(&mut self, key: &ScanKey) {
        if let Some(at) = self.running.iter().position(|k| k == key) {
            self.running.swap_remove(at);
        }
    }
}

/// The meeting point of one cached entry's searches.
#[derive(Default)]
pub(crate) struct ScanBatcher {
    state: Mutex<State>,
    changed: Condvar,
}

/// Scores some queries over the caller's rows: one output per query, one slot a row.
pub(crate) type Pass<'a> = dyn Fn(&[&ByteQuery], &mut [&mut [f32]]) + 'a;

impl ScanBatcher {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// `query`'s scores over the caller's `rows` rows (chosen by `key`), from a pass that
    /// `pass` runs here or another search of the same entry runs for it.
    pub(crate) fn scores(&self, key: ScanKey, query: ByteQuery, rows: usize, pass: &Pass<'_>) -> Vec<f32> {
        let mut state = self.lock();
        let ticket = state.next_ticket;
        state.next_ticket += 1;
        state.waiting.push(Waiting { ticket, key, query });
        loop {
            if let Some(at) = state.finished.iter().position(|(t, _)| *t == ticket) {
                return state.finished.swap_remove(at).1;
            }
            // Still waiting (no pass took it) and no pass over the same rows running: lead
            // one.
            if let Some(at) = state.waiting.iter().position(|w| w.ticket == ticket)
                && !state.running.contains(&state.waiting[at].key)
            {
                let mine = state.waiting.remove(at);
                let mut batch = vec![mine];
                let mut i = 0;
                while i < state.waiting.len() && batch.len() < MOST {
                    if state.waiting[i].key == batch[0].key {
                        batch.push(state.waiting.remove(i));
                    } else {
                        i += 1;
                    }
                }
                state.running.push(batch[0].key.clone());
                state.passes += 1;
                state.queries += batch.len() as u64;
                drop(state);
                return self.lead(batch, rows, pass);
            }
            state = self.changed.wait(state).unwrap_or_else(|e| e.into_inner());
        }
    }

    /// Runs one pass for `batch` (the leader's query first) and hands the others theirs.
    fn lead(&self, batch: Vec<Waiting>, rows: usize, pass: &Pass<'_>) -> Vec<f32> {
        // Until the pass returns, the others' queries are owned here; if it panics, the
        // guard puts them back in the queue and frees the pass's place.
        let mut guard = Leading { batcher: self, batch: Some(batch) };
        let batch = guard.batch.as_ref().expect("set above");
        let queries: Vec<&ByteQuery> = batch.iter().map(|w| &w.query).collect();
        let mut outs = vec![vec![0f32; rows]; batch.len()];
        {
            let mut slots: Vec<&mut [f32]> = outs.iter_mut().map(|o| o.as_mut_slice()).collect();
            pass(&queries, &mut slots);
        }
        let batch = guard.batch.take().expect("set above");
        let mut outs = outs.into_iter();
        let mine = outs.next().expect("the leader's own query is first");
        let mut state = self.lock();
        state.end(&batch[0].key);
        state.finished.extend(batch.iter().skip(1).map(|w| w.ticket).zip(outs));
        drop(state);
        self.changed.notify_all();
        mine
    }

    /// Passes run and queries scored so far.
    #[cfg(test)]
    pub(crate) fn counts(&self) -> (u64, u64) {
        let state = self.lock();
        (state.passes, state.queries)
    }

    /// Queries waiting for a pass now.
    #[cfg(test)]
    fn waiting(&self) -> usize {
        self.lock().waiting.len()
    }
}

/// A pass in progress (see [`ScanBatcher::lead`]).
struct Leading<'a> {
    batcher: &'a ScanBatcher,
    batch: Option<Vec<Waiting>>,
}

impl Drop for Leading<'_> {
    fn drop(&mut self) {
        let Some(batch) = self.batch.take() else { return };
        // The pass panicked: the others' queries wait again (the leader's own is dropped,
        // its caller gets the panic).
        let mut state = self.batcher.lock();
        state.end(&batch[0].key);
        state.waiting.extend(batch.into_iter().skip(1));
        drop(state);
        self.batcher.changed.notify_all();
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::time::Duration;

    use super::*;

    fn key(include_archived: bool) -> ScanKey {
        ScanKey { filter: SearchFilter { include_archived, ..Default::default() }, agent: None, session: None }
    }

    /// A query whose scores are recognisable: row `i` scores `i · scale`.
    fn query(scale: f32) -> ByteQuery {
        ByteQuery { codes: vec![1, 2], scale }
    }

    fn plain(queries: &[&ByteQuery], outs: &mut [&mut [f32]]) {
        for (q, out) in queries.iter().zip(outs.iter_mut()) {
            for (i, slot) in out.iter_mut().enumerate() {
                *slot = i as f32 * q.scale;
            }
        }
    }

    fn wait_until(what: impl Fn() -> bool) {
        for _ in 0..20_000 {
            if what() {
                return;
            }
            std::thread::sleep(Duration::from_millis(1));
        }
        panic!("timed out");
    }

    /// Starts a search whose pass runs until `release` is set, and returns once it runs.
    fn blocking_pass(
        batcher: &Arc<ScanBatcher>,
        release: &Arc<std::sync::atomic::AtomicBool>,
    ) -> std::thread::JoinHandle<Vec<f32>> {
        let (batcher_, release) = (batcher.clone(), release.clone());
        let passes = batcher.counts().0;
        let handle = std::thread::spawn(move || {
            batcher_.scores(key(false), query(100.0), 3, &|q, o| {
                while !release.load(std::sync::atomic::Ordering::SeqCst) {
                    std::thread::sleep(Duration::from_millis(1));
                }
                plain(q, o)
            })
        });
        wait_until(|| batcher.counts().0 == passes + 1);
        handle
    }

    /// While a pass runs, queries over the same rows gather, and one over other rows runs at
    /// once; when the pass ends, the gathered ones go in one pass, and each search gets its
    /// own scores.
    #[test]
    fn queries_that_wait_together_share_one_pass() {
        let batcher = Arc::new(ScanBatcher::default());
        let release = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let blocker = blocking_pass(&batcher, &release);
        let calls = Arc::new(Mutex::new(Vec::new()));
        let mut searches = Vec::new();
        for s in 0..5 {
            let (batcher, calls) = (batcher.clone(), calls.clone());
            searches.push(std::thread::spawn(move || {
                let got = batcher.scores(key(s == 4), query(s as f32 + 1.0), 3, &|q, o| {
                    calls.lock().unwrap().push(q.len());
                    plain(q, o)
                });
                (s, got)
            }));
        }
        wait_until(|| batcher.waiting() == 4 && calls.lock().unwrap().len() == 1);
        assert_eq!(*calls.lock().unwrap(), vec![1], "the other rows' search ran beside the pass");
        assert!(!blocker.is_finished());
        release.store(true, std::sync::atomic::Ordering::SeqCst);
        assert_eq!(blocker.join().unwrap(), vec![0.0, 100.0, 200.0]);
        for search in searches {
            let (s, got) = search.join().unwrap();
            let scale = s as f32 + 1.0;
            assert_eq!(got, vec![0.0, scale, 2.0 * scale], "search {s}");
        }
        let mut calls = calls.lock().unwrap().clone();
        calls.sort_unstable();
        assert_eq!(calls, vec![1, 4], "the four of one key in one pass, the other alone");
        assert!(batcher.lock().running.is_empty());
        assert_eq!(batcher.counts(), (3, 6));
    }

    /// A lone search runs its pass at once and alone.
    #[test]
    fn a_lone_search_leads_its_own_pass() {
        let batcher = ScanBatcher::default();
        for s in 0..3 {
            let got = batcher.scores(key(false), query(2.0), 4, &|q, o| {
                assert_eq!(q.len(), 1);
                plain(q, o)
            });
            assert_eq!(got, vec![0.0, 2.0, 4.0, 6.0], "search {s}");
        }
        assert_eq!(batcher.counts(), (3, 3));
        assert_eq!(batcher.waiting(), 0);
    }

    /// A pass that panics gives the leader's caller the panic and the queries it took from
    /// others back to the queue, where one of them leads them again.
    #[test]
    fn a_panicking_pass_hands_the_others_back() {
        let batcher = Arc::new(ScanBatcher::default());
        let release = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let blocker = blocking_pass(&batcher, &release);
        // Three searches gather; whichever leads panics, unless it scores its query alone.
        let mut searches = Vec::new();
        for s in 0..3 {
            let batcher = batcher.clone();
            searches.push(std::thread::spawn(move || {
                batcher.scores(key(false), query(s as f32 + 1.0), 2, &|q, o| {
                    if q.len() > 1 {
                        panic!("a pass fails");
                    }
                    plain(q, o)
                })
            }));
        }
        wait_until(|| batcher.waiting() == 3);
        release.store(true, std::sync::atomic::Ordering::SeqCst);
        blocker.join().unwrap();
        let results: Vec<_> = searches.into_iter().map(|s| s.join()).collect();
        // The first leader takes all three and panics, the next takes the other two and
        // panics, the last runs alone.
        let panicked = results.iter().filter(|r| r.is_err()).count();
        assert_eq!(panicked, 2);
        for (s, result) in results.into_iter().enumerate() {
            if let Ok(got) = result {
                assert_eq!(got, vec![0.0, s as f32 + 1.0], "search {s}");
            }
        }
        assert_eq!(batcher.waiting(), 0);
        assert!(batcher.lock().running.is_empty());
    }
}
