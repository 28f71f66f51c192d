//! The in-process cache of each user's vectors, for exact dense search.
//!
//! A user's vectors are read from the database once into one contiguous `f32` matrix and then
//! scanned in memory. The cache is checked against the database on every search: rows
//! appended since are loaded incrementally and status changes are patched in place, as
//! [`super::usercache`] describes for both caches.
//!
//! **Exact, but screened in int8.** Scanning 100k × 384 `f32` moves 154 MB through the
//! memory bus per query, which alone costs more than a recall's whole latency budget. So
//! each row is also kept quantised to `i8` with its own scale (a quarter of the bytes),
//! and a search runs in two passes:
//! 1. every admitted row gets an approximate score from its codes and the query quantised
//!    to `i16` (an exact integer sum), and an error bound `e`: half a quantisation step per
//!    component on both sides, plus the float rounding of the exact sum;
//! 2. with `L` the `limit`-th largest lower bound `a − e`, every row whose upper bound
//!    `a + e` reaches `L` is re-scored exactly in `f32`, and the best `limit` are kept.
//!
//! The `limit` rows with the highest lower bounds all score at least `L` exactly, so every
//! row of the exact top `limit` scores at least `L` too and is among the re-scored ones:
//! the result is the same as a full `f32` scan (same scores, same tie order), not an
//! approximation. Both passes run AVX2+FMA code when the CPU has it ([`kernels`]).
//!
//! **Large users: a 4-bit pre-screen** ([`DenseScreen::FourBit`], the default, from
//! [`FOUR_BIT_ROWS`] rows). At 100k rows the int8 codes are still 38 MB a query, and the
//! scan is bound by memory bandwidth. So each row also keeps 4-bit codes (two a byte, its
//! own scale, half the int8 bytes), and a search first scores every admitted row from them,
//! with a margin of six standard deviations of the row's rounding error: each code is off
//! by at most half a step, uniformly, so the error of the sum is close to normal with
//! standard deviation `scale · ‖q‖₂ / √12`, plus the query's own (tiny) rounding at worst.
//! The rows whose upper estimate reaches the `limit`-th best lower estimate go on to the
//! exact two passes above. Unlike those, this step is not proven: a row of the exact top
//! `limit` is dropped only if its rounding error, or that of one of the `limit` rows above
//! the floor, exceeds six standard deviations (a chance of about 2·10⁻⁹ per row under that
//! model). `membank bench recall` measures the results against the exact path on real
//! vectors, and [`DenseScreen::Exact`] turns it off. Searches of the user running at the
//! same time score their queries in one shared pass over the codes ([`super::batch`]),
//! with the same scores as a pass of their own.
//!
//! A user's entry is charged to the store's cache budget as its arrays' capacities plus the
//! labels' strings: about `dim · 5.5 + 82` bytes a row (2,194 at 384 dimensions).

use std::borrow::Cow;
use std::sync::OnceLock;

use membank_core::Status;

use super::Source;
use super::batch::{ScanBatcher, ScanKey};
use super::usercache::{Labels, RowMeta, Speakers, UserCache, UserRows, status_only};
use crate::cache::{CacheKind, DenseScreen, FOUR_BIT_ROWS, reserve_rows};
use crate::types::{Hit, SearchFilter};
use crate::{StoreError, kernels, parallel};

/// From this many admitted rows on, the screening pass is split over two threads.
const PARALLEL_ROWS: usize = 32_768;

/// One user's vectors.
#[derive(Default)]
pub(crate) struct UserVectors {
    entries: Vec<RowMeta>,
    /// Row-major `f32` vectors, exact.
    data: Vec<f32>,
    /// The same rows quantised to `i8`, `codes[r * dim + j] * scales[r] ≈ data[r * dim + j]`.
    codes: Vec<i8>,
    scales: Vec<f32>,
    /// The same rows in 4-bit codes ([`kernels::push_codes4`]), `dim / 2` bytes a row, with
    /// their scales; empty when `dim` is odd.
    codes4: Vec<u8>,
    scales4: Vec<f32>,
    /// Each entry's status again, one byte a row: the admission of a search with no other
    /// filter reads these instead of the entries (64 bytes a row).
    statuses: Vec<Status>,
    /// Heap bytes of the entries' label strings (speakers counted once each).
    label_bytes: usize,
    /// The entries' distinct speakers.
    speakers: Speakers,
    /// Where searches of these rows running at the same time share their 4-bit pass.
    batcher: ScanBatcher,
    /// The rows a search admits when only their status decides ([`status_only`]): without
    /// (`[0]`) and with (`[1]`) the archived and superseded, each built by the first such
    /// search after a change of the rows (collecting them was 3 % of all CPU under load).
    admitted_by_status: [OnceLock<Vec<u32>>; 2],
}

/// All cached users' vectors of one store.
pub(crate) type VectorCache = UserCache<UserVectors>;

impl VectorCache {
    /// Brings the user's cached vectors up to date with `source`'s snapshot, then scans them.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn search(
        &self,
        source: &mut dyn Source,
        user_row: i64,
        revision: i64,
        dim: usize,
        query: &[f32],
        filter: &SearchFilter,
        labels: &Labels<'_>,
        limit: usize,
        screen: DenseScreen,
    ) -> Result<Vec<Hit>, StoreError> {
        self.with_fresh(source, user_row, revision, dim, |cached| {
            scan(cached, dim, query, filter, labels, limit, screen)
        })
    }
}

impl VectorCache {
    /// [`VectorCache::search`] for the two lists of [`crate::Store::dense_search_tiers`],
    /// from one scan.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn search_tiers(
        &self,
        source: &mut dyn Source,
        user_row: i64,
        revision: i64,
        dim: usize,
        query: &[f32],
        filter: &SearchFilter,
        labels: &Labels<'_>,
        limit: usize,
        wide_limit: usize,
        screen: DenseScreen,
    ) -> Result<crate::DenseTiers, StoreError> {
        self.with_fresh(source, user_row, revision, dim, |cached| {
            scan_tiers(cached, dim, query, filter, labels, limit, wide_limit, screen)
        })
    }
}

impl UserRows for UserVectors {
    type Params = usize;
    const KIND: CacheKind = CacheKind::Vectors;

    fn rows_mut(&mut self) -> &mut [RowMeta] {
        &mut self.entries
    }

    fn load_after(&mut self, source: &mut dyn Source, after: i64, dim: usize) -> Result<i64, StoreError> {
        load_after(source, dim, after, self)
    }

    fn heap_bytes(&self) -> usize {
        self.entries.capacity() * std::mem::size_of::<RowMeta>()
            + self.label_bytes
            + self.speakers.table_bytes()
            + self.data.capacity() * std::mem::size_of::<f32>()
            + self.codes.capacity()
            + self.scales.capacity() * std::mem::size_of::<f32>()
            + self.codes4.capacity()
            + self.scales4.capacity() * std::mem::size_of::<f32>()
            + self.statuses.capacity()
            // The two lists of rows admitted by status, charged whether built yet or not.
            + 2 * self.entries.capacity() * std::mem::size_of::<u32>()
    }

    fn shrink(&mut self) {
        self.entries.shrink_to_fit();
        self.data.shrink_to_fit();
        self.codes.shrink_to_fit();
        self.scales.shrink_to_fit();
        self.codes4.shrink_to_fit();
        self.scales4.shrink_to_fit();
        self.statuses.shrink_to_fit();
    }

    fn statuses_patched(&mut self) {
        self.admitted_by_status = Default::default();
        self.statuses.clear();
        self.statuses.extend(self.entries.iter().map(|e| e.status));
    }
}

fn load_after(source: &mut dyn Source, dim: usize, after: i64, cached: &mut UserVectors) -> Result<i64, StoreError> {
    let mut last = after;
    cached.admitted_by_status = Default::default();
    let appending = !cached.entries.is_empty();
    if !appending {
        let n = source.count_after(CacheKind::Vectors, after)?;
        cached.entries.reserve_exact(n);
        cached.data.reserve_exact(n * dim);
        cached.codes.reserve_exact(n * dim);
        cached.scales.reserve_exact(n);
        cached.statuses.reserve_exact(n);
        if dim.is_multiple_of(2) {
            cached.codes4.reserve_exact(n * dim / 2);
            cached.scales4.reserve_exact(n);
        }
    }
    source.vectors_after(after, dim, &mut |mut entry, vector| {
        if vector.len() != dim {
            return Err(StoreError::Corrupt(format!(
                "vector of memory row {} has {} dimensions, the store {dim}",
                entry.seq,
                vector.len()
            )));
        }
        last = entry.seq;
        let (speaker, speaker_bytes) = cached.speakers.intern(entry.speaker.take());
        entry.speaker = speaker;
        cached.label_bytes += entry.label_bytes() + speaker_bytes;
        reserve_rows(&mut cached.entries, 1, appending);
        reserve_rows(&mut cached.statuses, 1, appending);
        cached.statuses.push(entry.status);
        cached.entries.push(entry);
        let start = cached.data.len();
        reserve_rows(&mut cached.data, dim, appending);
        cached.data.extend_from_slice(vector);
        let row = &cached.data[start..];
        let scale = kernels::quantise_scale(row);
        reserve_rows(&mut cached.codes, dim, appending);
        cached.codes.extend(row.iter().map(|&x| kernels::quantise(x, scale)));
        reserve_rows(&mut cached.scales, 1, appending);
        cached.scales.push(scale);
        if dim.is_multiple_of(2) {
            let scale4 = kernels::quantise4_scale(row);
            reserve_rows(&mut cached.codes4, dim / 2, appending);
            kernels::push_codes4(row, scale4, &mut cached.codes4);
            reserve_rows(&mut cached.scales4, 1, appending);
            cached.scales4.push(scale4);
        }
        Ok(())
    })?;
    Ok(last)
}

/// Scores `rows` into `out` with `score` (a kernel over some of the rows), split as
/// [`score_rows_many`] splits.
fn score_rows(rows: &[u32], out: &mut [f32], score: impl Fn(&[u32], &mut [f32]) + Sync) {
    score_rows_many(rows, &mut [out], |rows, outs| score(rows, &mut *outs[0]));
}

/// Scores `rows` into each of `outs` (one slot a row) with `score` (a kernel over some of
/// the rows), on two threads from [`PARALLEL_ROWS`] rows on while a core is spare
/// ([`parallel::spare_core`]).
fn score_rows_many(rows: &[u32], outs: &mut [&mut [f32]], score: impl Fn(&[u32], &mut [&mut [f32]]) + Sync) {
    if rows.len() >= PARALLEL_ROWS && parallel::cores() > 1 && parallel::spare_core() {
        let half = rows.len() / 2;
        let (rows_a, rows_b) = rows.split_at(half);
        let (mut outs_a, mut outs_b): (Vec<&mut [f32]>, Vec<&mut [f32]>) =
            outs.iter_mut().map(|out| out.split_at_mut(half)).unzip();
        std::thread::scope(|scope| {
            scope.spawn(|| {
                let _working = parallel::working();
                score(rows_b, &mut outs_b)
            });
            score(rows_a, &mut outs_a);
        });
    } else {
        score(rows, outs);
    }
}

/// How far a pass's approximate score `a` of row `r` may be from the exact one:
/// `e = scales[r] · per_scale`, widened by `relative · (e + |a| + absolute)` for the float
/// roundings of computing `a`, the bound and `a ± e`. Computed where it is used instead of
/// into an array (writing and reading one was 3 % of all CPU under load).
#[derive(Clone, Copy)]
struct Errors<'a> {
    scales: &'a [f32],
    per_scale: f32,
    relative: f32,
    absolute: f32,
}

impl<'a> Errors<'a> {
    /// The error of an estimate `a` of a row whose scale is `scale`.
    #[inline(always)]
    fn of(&self, scale: f32, a: f32) -> f32 {
        let e = scale * self.per_scale;
        e + self.relative * (e + a.abs() + self.absolute)
    }

    /// The scales of `rows` (distinct, ascending), in their order: the scales themselves
    /// when `rows` is every row (the usual first pass: nothing filtered out), so that
    /// nothing is gathered or allocated.
    fn scales_of(&self, rows: &[u32]) -> Cow<'a, [f32]> {
        if rows.len() == self.scales.len() {
            debug_assert!(rows.iter().enumerate().all(|(i, &r)| r as usize == i));
            Cow::Borrowed(self.scales)
        } else {
            Cow::Owned(rows.iter().map(|&r| self.scales[r as usize]).collect())
        }
    }

    /// Each row's error, in the rows' order.
    #[cfg(test)]
    fn each(&self, rows: &[u32], approx: &[f32]) -> Vec<f32> {
        rows.iter().zip(approx).map(|(&r, &a)| self.of(self.scales[r as usize], a)).collect()
    }
}

/// Which of some rows go on to the next pass, given their approximate scores (in the rows'
/// order) and their errors.
type Keep<'a> = dyn Fn(&[u32], &[f32], &Errors<'_>) -> Vec<u32> + 'a;

/// The 4-bit pre-screen (see the module docs): the rows of `rows` that `keep` keeps given
/// their estimates and margins (those whose estimate may reach a group's `limit`-th best).
///
/// The scores come from a pass shared with the searches of the same rows running at the
/// same time ([`super::batch`]), the same scores as a pass of its own.
fn four_bit_screen(
    cached: &UserVectors,
    dim: usize,
    query: &[f32],
    rows: &[u32],
    key: &ScanKey,
    keep: &Keep<'_>,
) -> Vec<u32> {
    let quantised = kernels::ByteQuery::new(query);
    let query_scale = quantised.scale;
    let approx = cached.batcher.scores(key.clone(), quantised, rows.len(), &|queries, outs| {
        score_rows_many(rows, outs, |rows, outs| {
            kernels::dot_u4_rows_many(&cached.codes4, &cached.scales4, dim, rows, queries, outs)
        })
    });
    let l2 = query.iter().map(|x| x * x).sum::<f32>().sqrt();
    // Per row: six standard deviations of the two roundings, each uniform within half a
    // step (variance step² / 12 per component): the row's codes against the query
    // (σ = scale₄ · ‖q‖₂ / √12) and the query's bytes against the row's decoded codes
    // (σ ≤ q_scale · 7 · scale₄ · √dim / √12, every code at most 7 steps); plus the float
    // rounding of the exact sum.
    let row_sigma = l2 / 12f32.sqrt();
    let query_sigma = query_scale * 7.0 * (dim as f32).sqrt() / 12f32.sqrt();
    let sigma = (row_sigma * row_sigma + query_sigma * query_sigma).sqrt();
    let errors =
        Errors { scales: &cached.scales4, per_scale: 6.0 * sigma, relative: 64.0 * f32::EPSILON, absolute: 1.0 };
    keep(rows, &approx, &errors)
}

/// The rows whose estimate plus its error can reach the `limit`-th best estimate minus its
/// error (`limit` ≤ rows): one group's rows kept, computed plainly; the reference that
/// [`keep_within_reach`] is tested against.
#[cfg(test)]
fn within_reach(rows: &[u32], approx: &[f32], limit: usize, errors: &[f32]) -> Vec<u32> {
    let mut lower: Vec<f32> = approx.iter().zip(errors).map(|(&a, &e)| a - e).collect();
    let (_, kth, _) = lower.select_nth_unstable_by(limit - 1, |a, b| b.total_cmp(a));
    let floor = *kth;
    rows.iter().zip(approx.iter().zip(errors)).filter(|&(_, (&a, &e))| a + e >= floor).map(|(&r, _)| r).collect()
}

/// The rows of `rows` whose estimate plus its error can reach the `limit`-th best estimate
/// minus its error among the rows of some group (a group with no more rows than its limit
/// keeps all of its rows), in row order: what every screening pass keeps.
///
/// Two passes over the rows, each mostly one comparison a row (at 100k rows this was a
/// third of a large user's scan when each group collected and selected its lower bounds):
/// 1. each row's bounds are computed once; a group keeps its `limit` best lower bounds so
///    far in a small heap, and a row whose lower bound does not beat the worst of a full
///    heap is passed over without asking whether it belongs to the group. A group's floor
///    is then its heap's worst (its `limit`-th best lower bound); a group whose heap never
///    filled has at most `limit` rows and keeps them all. (A group of exactly `limit` rows
///    gets its worst lower bound as its floor, which keeps them all too: every row's upper
///    bound is at least its lower one.)
/// 2. a row whose upper bound is below every group's floor is dropped at once; the others
///    are kept if they belong to a group whose floor they reach.
// `!(upper < lowest)` is meant: true for a NaN bound too, and branch-free.
#[allow(clippy::neg_cmp_op_on_partial_ord)]
fn keep_within_reach(rows: &[u32], approx: &[f32], errors: &Errors<'_>, groups: &[Group<'_>]) -> Vec<u32> {
    assert_eq!(rows.len(), approx.len(), "one estimate a row");
    let scales = errors.scales_of(rows);
    let mut best: Vec<LowestKept> = groups.iter().map(|(_, limit)| LowestKept::new(*limit)).collect();
    // Rows go by in chunks: a chunk none of whose lower bounds beats the lowest of the
    // groups' worst kept is passed over after one branch-free maximum (the worst kept only
    // rises, so one taken earlier in the chunk would not change that).
    let chunks = || rows.chunks(KEEP_CHUNK).zip(approx.chunks(KEEP_CHUNK)).zip(scales.chunks(KEEP_CHUNK));
    for ((rows, approx), scales) in chunks() {
        let highest = approx.iter().zip(scales).fold(i32::MIN, |m, (&a, &s)| m.max(total_key(a - errors.of(s, a))));
        if best.iter().all(|best| highest <= best.worst && best.heap.len() == best.limit) {
            continue;
        }
        for ((&r, &a), &s) in rows.iter().zip(approx).zip(scales) {
            let lower = total_key(a - errors.of(s, a));
            for ((member, _), best) in groups.iter().zip(best.iter_mut()) {
                if best.would_take(lower) && member.is_none_or(|member| member(r)) {
                    best.take(lower);
                }
            }
        }
    }
    // Each group's floor: `None` keeps all of its rows; a group of limit 0 keeps none.
    let floors: Vec<Option<f32>> = groups
        .iter()
        .zip(&best)
        .map(|((_, limit), best)| if *limit == 0 { Some(f32::INFINITY) } else { best.floor() })
        .collect();
    let lowest = floors.iter().map(|f| f.unwrap_or(f32::NEG_INFINITY)).fold(f32::INFINITY, f32::min);
    let mut kept = Vec::new();
    for ((rows, approx), scales) in chunks() {
        // Most chunks hold no row within reach of any group: one branch-free pass says so.
        // (`!(upper < lowest)` is true for a NaN bound too, which goes on to the groups'
        // own tests, as they had it.)
        if !approx.iter().zip(scales).fold(false, |any, (&a, &s)| any | !(a + errors.of(s, a) < lowest)) {
            continue;
        }
        kept.extend(
            rows.iter()
                .zip(approx.iter().zip(scales))
                .filter(|&(r, (&a, &s))| {
                    let upper = a + errors.of(s, a);
                    upper.partial_cmp(&lowest) != Some(std::cmp::Ordering::Less)
                        && groups.iter().zip(&floors).any(|((member, limit), floor)| {
                            *limit > 0
                                && floor.is_none_or(|floor| upper >= floor)
                                && member.is_none_or(|member| member(*r))
                        })
                })
                .map(|(r, _)| *r),
        );
    }
    kept
}

/// Rows [`keep_within_reach`] tests at a time before looking at each.
const KEEP_CHUNK: usize = 32;

/// `x`'s bits as an integer that orders like [`f32::total_cmp`] (the transform it uses).
fn total_key(x: f32) -> i32 {
    let bits = x.to_bits() as i32;
    bits ^ (((bits >> 31) as u32) >> 1) as i32
}

/// The `f32` of a [`total_key`] (the transform is its own inverse).
fn from_total_key(key: i32) -> f32 {
    f32::from_bits((key ^ (((key >> 31) as u32) >> 1) as i32) as u32)
}

/// The `limit` largest of some values, as [`total_key`]s, in a min-heap: what
/// [`keep_within_reach`] keeps of a group's lower bounds.
struct LowestKept {
    heap: std::collections::BinaryHeap<std::cmp::Reverse<i32>>,
    limit: usize,
    /// The heap's worst once it is full; `i32::MIN` before (`i32::MAX` for a limit of 0,
    /// which takes nothing).
    worst: i32,
}

impl LowestKept {
    fn new(limit: usize) -> Self {
        let worst = if limit == 0 { i32::MAX } else { i32::MIN };
        Self { heap: std::collections::BinaryHeap::with_capacity(limit.min(4096)), limit, worst }
    }

    /// Whether `key` would enter: it beats the worst of a full heap, or the heap has room.
    fn would_take(&self, key: i32) -> bool {
        key > self.worst || (self.heap.len() < self.limit)
    }

    /// Adds `key`, which [`LowestKept::would_take`], dropping the worst if the heap is full.
    fn take(&mut self, key: i32) {
        if self.heap.len() == self.limit {
            self.heap.pop();
        }
        self.heap.push(std::cmp::Reverse(key));
        if self.heap.len() == self.limit {
            self.worst = self.heap.peek().map_or(i32::MIN, |w| w.0);
        }
    }

    /// The `limit`-th largest value, once `limit` values were taken; `None` before.
    fn floor(&self) -> Option<f32> {
        (self.limit > 0 && self.heap.len() == self.limit)
            .then(|| self.heap.peek().map_or(f32::INFINITY, |w| from_total_key(w.0)))
    }
}

fn scan(
    cached: &UserVectors,
    dim: usize,
    query: &[f32],
    filter: &SearchFilter,
    labels: &Labels<'_>,
    limit: usize,
    screen: DenseScreen,
) -> Vec<Hit> {
    let rows = admitted(cached, filter, labels);
    let key = ScanKey::new(filter, labels);
    let [best] = scan_groups(cached, dim, query, rows, &key, [(None, limit)], screen);
    hits(cached, best)
}

/// [`scan`] for two lists from one pass: the best `limit` rows under `filter`, and the best
/// `wide_limit` under `filter` with archived and superseded memories admitted (each with its
/// status). The same lists as two scans, at about the cost of the wider one.
#[allow(clippy::too_many_arguments)]
fn scan_tiers(
    cached: &UserVectors,
    dim: usize,
    query: &[f32],
    filter: &SearchFilter,
    labels: &Labels<'_>,
    limit: usize,
    wide_limit: usize,
    screen: DenseScreen,
) -> crate::DenseTiers {
    let wide = SearchFilter { include_archived: true, ..filter.clone() };
    let rows = admitted(cached, &wide, labels);
    // The rows pass the wide filter, which differs from `filter` at most in admitting the
    // archived and superseded: the narrow group is the active ones among them.
    let active = |r: u32| cached.statuses[r as usize] == Status::Active;
    let narrow: Option<&dyn Fn(u32) -> bool> = if filter.include_archived { None } else { Some(&active) };
    let key = ScanKey::new(&wide, labels);
    let [best, best_wide] = scan_groups(cached, dim, query, rows, &key, [(narrow, limit), (None, wide_limit)], screen);
    let statuses: Vec<Status> = best_wide.iter().map(|&(_, r)| cached.entries[r].status).collect();
    (hits(cached, best), hits(cached, best_wide).into_iter().zip(statuses).collect())
}

/// The rows a search with `filter` and `labels` may return, in row order. Without kinds,
/// days or labels only the status decides, read from the compact copy.
fn admitted<'a>(cached: &'a UserVectors, filter: &SearchFilter, labels: &Labels<'_>) -> Cow<'a, [u32]> {
    if let Some(admit) = status_only(filter, labels) {
        let list = &cached.admitted_by_status[usize::from(filter.include_archived)];
        return Cow::Borrowed(list.get_or_init(|| {
            cached.statuses.iter().enumerate().filter(|(_, s)| admit(**s)).map(|(i, _)| i as u32).collect()
        }));
    }
    Cow::Owned(
        cached.entries.iter().enumerate().filter(|(_, e)| e.admitted(filter, labels)).map(|(i, _)| i as u32).collect(),
    )
}

fn hits(cached: &UserVectors, scored: Vec<(f32, usize)>) -> Vec<Hit> {
    scored
        .into_iter()
        .map(|(score, index)| Hit {
            id: cached.entries[index].id,
            score: f64::from(score),
            speaker: cached.entries[index].speaker.clone(),
        })
        .collect()
}

/// A group of rows to rank: which of the scanned rows belong to it (`None`: all of them),
/// and how many of its best to return.
type Group<'a> = (Option<&'a dyn Fn(u32) -> bool>, usize);

/// The best rows of each group among `rows`, best first (exact `f32` scores, ties by row
/// order), from one pass of each screen over `rows`: a row goes on to the next, finer pass
/// when it is within reach of the best of any group it belongs to.
fn scan_groups<const N: usize>(
    cached: &UserVectors,
    dim: usize,
    query: &[f32],
    mut rows: Cow<'_, [u32]>,
    key: &ScanKey,
    groups: [Group<'_>; N],
    screen: DenseScreen,
) -> [Vec<(f32, usize)>; N] {
    let most = groups.iter().map(|g| g.1).max().unwrap_or(0);
    if most == 0 || rows.is_empty() {
        return std::array::from_fn(|_| Vec::new());
    }
    // Keeps the rows within reach of any group's `limit`-th best, given approximate scores
    // and their error; a group with no more rows than its limit keeps them all.
    let keep = |rows: &[u32], approx: &[f32], errors: &Errors<'_>| -> Vec<u32> {
        keep_within_reach(rows, approx, errors, &groups)
    };
    let wanted: usize = groups.iter().map(|g| g.1).sum();
    if screen == DenseScreen::FourBit && rows.len() >= FOUR_BIT_ROWS && rows.len() > most && !cached.scales4.is_empty()
    {
        rows = Cow::Owned(four_bit_screen(cached, dim, query, &rows, key, &keep));
    }
    if rows.len() > wanted {
        // Pass 1: approximate scores of every admitted row from its int8 codes, on two
        // threads for a large user (the scan is most of a recall's time there).
        let quantised = kernels::QuantisedQuery::new(query);
        let mut approx = vec![0f32; rows.len()];
        score_rows(&rows, &mut approx, |rows, out| {
            kernels::dot_i8_rows(&cached.codes, &cached.scales, dim, rows, &quantised, out)
        });
        let l1: f32 = query.iter().map(|x| x.abs()).sum();
        // Per row: half a step of the row's codes against the query (0.5 · scale · ‖q‖₁),
        // half a step of the query's codes against the row (0.5 · q_scale · Σ|c_j| · scale,
        // Σ|c_j| ≤ 127 · dim), and the float rounding of the exact f32 sum, at most
        // (dim/8 + 16) roundings of partial sums no larger than 127 · scale · ‖q‖₁
        // (the integer sum is exact).
        let rounding = (dim as f32 / 8.0 + 16.0) * 2.0 * f32::EPSILON * 127.0;
        let query_step = 0.5 * quantised.scale * 127.0 * dim as f32;
        // A few more ulps of `a` and of the bound cover the roundings of computing `a`
        // (two products and a conversion), the bound itself, and `a ± bound`.
        let per_scale = l1 * (0.5 + rounding) + query_step;
        let errors = Errors { scales: &cached.scales, per_scale, relative: 8.0 * f32::EPSILON, absolute: 0.0 };
        rows = Cow::Owned(keep(&rows, &approx, &errors));
    }
    // Pass 2: exact f32 scores of the candidates only.
    let scored: Vec<(f32, usize)> = rows
        .iter()
        .map(|&r| (kernels::dot(&cached.data[r as usize * dim..(r as usize + 1) * dim], query), r as usize))
        .collect();
    let by_score = |a: &(f32, usize), b: &(f32, usize)| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1));
    groups.map(|(member, limit)| {
        let mut mine: Vec<(f32, usize)> = match member {
            None => scored.clone(),
            Some(member) => scored.iter().filter(|(_, r)| member(*r as u32)).copied().collect(),
        };
        if limit == 0 {
            return Vec::new();
        }
        if limit < mine.len() {
            mine.select_nth_unstable_by(limit - 1, by_score);
            mine.truncate(limit);
        }
        mine.sort_by(by_score);
        mine
    })
}

#[cfg(test)]
mod tests_support {
    use chrono::NaiveDate;
    use membank_core::{Kind, MemoryId, Status};

    use super::*;

    /// A cache of `n` rows of dimension `dim` with pseudo-random unit vectors, every
    /// seventh row a copy of an earlier one (exact ties), without SQLite.
    pub(super) fn cache(n: usize, dim: usize, seed: u64) -> UserVectors {
        let mut x = seed;
        let mut next = move || {
            x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            ((x >> 33) as f32 / (1u64 << 31) as f32) - 0.5
        };
        let mut cached = UserVectors::default();
        let day = NaiveDate::from_ymd_opt(2024, 5, 4).expect("valid");
        for i in 0..n {
            let mut row: Vec<f32> = if i % 7 == 6 {
                cached.data[(i / 2) * dim..(i / 2 + 1) * dim].to_vec()
            } else {
                (0..dim).map(|_| next()).collect()
            };
            let norm = row.iter().map(|v| v * v).sum::<f32>().sqrt().max(1e-6);
            row.iter_mut().for_each(|v| *v /= norm);
            let scale = kernels::quantise_scale(&row);
            cached.codes.extend(row.iter().map(|&v| kernels::quantise(v, scale)));
            cached.scales.push(scale);
            let scale4 = kernels::quantise4_scale(&row);
            kernels::push_codes4(&row, scale4, &mut cached.codes4);
            cached.scales4.push(scale4);
            cached.data.extend_from_slice(&row);
            let status = if i % 11 == 3 { Status::Archived } else { Status::Active };
            let at = chrono::DateTime::from_timestamp(1_700_000_000 + i as i64, 0).expect("valid");
            cached.statuses.push(status);
            cached.entries.push(RowMeta {
                seq: i as i64 + 1,
                id: MemoryId::generate(at),
                kind: Kind::Turn,
                day,
                status,
                agent: None,
                session: None,
                speaker: None,
            });
        }
        cached
    }
}

#[cfg(test)]
mod tests {
    use membank_core::{MemoryId, Status};

    use super::tests_support::cache;
    use super::*;

    /// The plain full scan the screened one must equal: every admitted row in f32.
    fn brute(
        cached: &UserVectors,
        dim: usize,
        query: &[f32],
        include_archived: bool,
        limit: usize,
    ) -> Vec<(MemoryId, f32)> {
        let mut all: Vec<(f32, usize)> = (0..cached.entries.len())
            .filter(|&i| include_archived || cached.entries[i].status == Status::Active)
            .map(|i| (kernels::dot(&cached.data[i * dim..(i + 1) * dim], query), i))
            .collect();
        all.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
        all.truncate(limit);
        all.into_iter().map(|(s, i)| (cached.entries[i].id, s)).collect()
    }

    /// The groups' shared pass keeps exactly the union of what each group's plain
    /// selection keeps, in row order: with and without a member filter, limits of 0, 1,
    /// more than the group's rows, equal estimates (ties at the floor), and the narrow and
    /// wide pair the probe of the archive uses.
    #[test]
    fn keeping_within_reach_of_several_groups_is_the_union_of_each_groups() {
        let mut x = 0x2545_f491_4f6c_dd1d_u64;
        let mut next = move || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        for trial in 0..200 {
            let n = [1, 2, 5, 40, 300, 2000][trial % 6];
            // Rows in order with gaps, as an admission leaves them, or every row (whose
            // scales are read in place).
            let rows: Vec<u32> =
                if trial % 12 < 6 { (0..n as u32).map(|i| i * 3 + (i % 2)).collect() } else { (0..n as u32).collect() };
            // Coarse estimates, so several rows share one (ties at the floor).
            let approx: Vec<f32> = (0..n).map(|_| (next() % 64) as f32 / 16.0 - 2.0).collect();
            let errors: Vec<f32> = (0..n).map(|_| (next() % 8) as f32 / 32.0).collect();
            // The same errors as an error model: each row's error is its "scale".
            let mut row_errors = vec![f32::NAN; rows.last().map_or(0, |&r| r as usize + 1)];
            for (&r, &e) in rows.iter().zip(&errors) {
                row_errors[r as usize] = e;
            }
            let model = Errors { scales: &row_errors, per_scale: 1.0, relative: 0.0, absolute: 0.0 };
            assert_eq!(model.each(&rows, &approx), errors);
            let odd = |r: u32| r % 2 == 1;
            let every_fifth = |r: u32| r.is_multiple_of(5);
            let limit = |k: u64| [0, 1, 3, 50, 150, 166, 5000][(k % 7) as usize];
            let (a, b, c) = (limit(next()), limit(next()), limit(next()));
            let cases: Vec<Vec<Group<'_>>> = vec![
                vec![(None, a)],
                vec![(Some(&odd), a)],
                vec![(Some(&odd), a), (None, b)],
                vec![(None, a), (None, b)],
                vec![(Some(&every_fifth), a), (Some(&odd), b), (None, c)],
            ];
            for groups in cases {
                let got = keep_within_reach(&rows, &approx, &model, &groups);
                let mut want = std::collections::BTreeSet::new();
                for (member, limit) in &groups {
                    if *limit == 0 {
                        continue;
                    }
                    let mine: Vec<(u32, (f32, f32))> = rows
                        .iter()
                        .zip(approx.iter().zip(&errors))
                        .filter(|(r, _)| member.is_none_or(|m| m(**r)))
                        .map(|(r, (a, e))| (*r, (*a, *e)))
                        .collect();
                    let (mine, (scores, errors)): (Vec<u32>, (Vec<f32>, Vec<f32>)) = mine.into_iter().unzip();
                    let reach = if mine.len() <= *limit { mine } else { within_reach(&mine, &scores, *limit, &errors) };
                    want.extend(reach);
                }
                let want: Vec<u32> = want.into_iter().collect();
                let limits: Vec<usize> = groups.iter().map(|g| g.1).collect();
                assert_eq!(got, want, "trial {trial}, {n} rows, limits {limits:?}");
            }
        }
    }

    /// Searches of one user running at the same time (their 4-bit passes shared) return
    /// exactly what each returns alone, whatever filter and limit each has.
    #[test]
    fn searches_at_the_same_time_return_what_each_returns_alone() {
        let (n, dim) = (FOUR_BIT_ROWS * 2, 384);
        let cached = cache(n, dim, 11);
        let labels = Labels { agent: None, session: None };
        let filters = [SearchFilter::default(), SearchFilter { include_archived: true, ..Default::default() }];
        let threads = 8;
        let queries: Vec<Vec<f32>> = (0..threads).map(|q| cache(1, dim, 900 + q as u64).data).collect();
        let alone: Vec<Vec<Hit>> = (0..threads)
            .map(|q| scan(&cached, dim, &queries[q], &filters[q % 2], &labels, 10 + q, DenseScreen::FourBit))
            .collect();
        let (passes_before, queries_before) = cached.batcher.counts();
        let rounds = 10;
        for round in 0..rounds {
            let start = std::sync::Barrier::new(threads);
            std::thread::scope(|scope| {
                let handles: Vec<_> = (0..threads)
                    .map(|q| {
                        let (cached, queries, filters, labels, start) = (&cached, &queries, &filters, &labels, &start);
                        scope.spawn(move || {
                            start.wait();
                            scan(cached, dim, &queries[q], &filters[q % 2], labels, 10 + q, DenseScreen::FourBit)
                        })
                    })
                    .collect();
                for (q, handle) in handles.into_iter().enumerate() {
                    let got = handle.join().unwrap();
                    let same = got.len() == alone[q].len()
                        && got.iter().zip(&alone[q]).all(|(a, b)| a.id == b.id && a.score == b.score);
                    assert!(same, "round {round}, query {q}");
                }
            });
        }
        let (passes, scored) = cached.batcher.counts();
        assert_eq!(scored - queries_before, (rounds * threads) as u64);
        // Eight searches released together on a machine of a few cores: some shared a pass.
        assert!(passes - passes_before < scored - queries_before, "no pass was shared");
    }

    #[test]
    fn the_four_bit_screen_narrows_and_keeps_the_exact_top() {
        let (n, dim) = (FOUR_BIT_ROWS + 500, 384);
        let cached = cache(n, dim, 5);
        let rows: Vec<u32> = (0..n as u32).collect();
        for q in 0..4 {
            let query = cache(1, dim, 500 + q).data;
            let key = ScanKey::new(&SearchFilter::default(), &Labels { agent: None, session: None });
            let kept = four_bit_screen(&cached, dim, &query, &rows, &key, &|rows, approx, errors| {
                within_reach(rows, approx, 50, &errors.each(rows, approx))
            });
            // It must leave out rows (else it would only cost time)…
            assert!(kept.len() < n / 2, "query {q}: kept {} of {n}", kept.len());
            // …and never the exact top 50 (archived rows included here: no filter).
            let mut exact: Vec<(f32, u32)> = rows
                .iter()
                .map(|&r| (kernels::dot(&cached.data[r as usize * dim..(r as usize + 1) * dim], &query), r))
                .collect();
            exact.sort_by(|a, b| b.0.total_cmp(&a.0));
            for (_, r) in &exact[..50] {
                assert!(kept.contains(r), "query {q}: row {r} of the exact top 50 was screened out");
            }
        }
    }

    /// The one-pass tiers give exactly what two scans give: the best under the filter, and
    /// the best with archived rows admitted, with their statuses; on both screens, at sizes
    /// on both sides of the 4-bit threshold, and with limits larger than a tier.
    #[test]
    fn the_tiers_scan_equals_two_scans() {
        let labels = Labels { agent: None, session: None };
        for (n, dim, seed) in [(300, 384, 11), (FOUR_BIT_ROWS + 500, 384, 12), (2_000, 16, 13)] {
            let cached = cache(n, dim, seed);
            for q in 0..3 {
                let query: Vec<f32> =
                    if q == 0 { cached.data[3 * dim..4 * dim].to_vec() } else { cache(1, dim, seed * 10 + q).data };
                for (limit, wide_limit) in [(10, 26), (50, 50), (1, 200), (0, 5), (5, 0), (n, n + 3)] {
                    let filter = SearchFilter::default();
                    for screen in [DenseScreen::Exact, DenseScreen::FourBit] {
                        let (active, wide) =
                            scan_tiers(&cached, dim, &query, &filter, &labels, limit, wide_limit, screen);
                        let expected_active = brute(&cached, dim, &query, false, limit);
                        let expected_wide = brute(&cached, dim, &query, true, wide_limit);
                        let got: Vec<(MemoryId, f32)> = active.iter().map(|h| (h.id, h.score as f32)).collect();
                        assert_eq!(got, expected_active, "n {n}, query {q}, limits {limit}/{wide_limit}, {screen:?}");
                        let got: Vec<(MemoryId, f32)> = wide.iter().map(|(h, _)| (h.id, h.score as f32)).collect();
                        assert_eq!(got, expected_wide, "n {n}, query {q}, limits {limit}/{wide_limit}, {screen:?}");
                        for (hit, status) in &wide {
                            let row = cached.entries.iter().find(|e| e.id == hit.id).expect("a cached row");
                            assert_eq!(*status, row.status);
                        }
                        assert!(wide.iter().any(|(_, s)| *s == Status::Archived) || wide_limit < n);
                    }
                }
            }
        }
    }

    #[test]
    fn screened_scan_equals_the_full_f32_scan() {
        let labels = Labels { agent: None, session: None };
        // Below and above the two-thread threshold; small and large dimensions and limits.
        for (n, dim, seed) in
            [(500, 384, 1), (5_000, 32, 2), (PARALLEL_ROWS + 1_000, 16, 3), (FOUR_BIT_ROWS + 500, 384, 4)]
        {
            let cached = cache(n, dim, seed);
            for q in 0..6 {
                // Queries: a stored row (its duplicates tie with it), and fresh directions.
                let query: Vec<f32> =
                    if q == 0 { cached.data[6 * dim..7 * dim].to_vec() } else { cache(1, dim, seed * 100 + q).data };
                for limit in [1, 10, 50, 200] {
                    for include_archived in [false, true] {
                        let filter = SearchFilter { include_archived, ..Default::default() };
                        let expected = brute(&cached, dim, &query, include_archived, limit);
                        // The exact path always; the 4-bit pre-screen (from FOUR_BIT_ROWS rows)
                        // on these random vectors too, where no rounding error comes near its
                        // margin.
                        for screen in [DenseScreen::Exact, DenseScreen::FourBit] {
                            let got: Vec<(MemoryId, f32)> = scan(&cached, dim, &query, &filter, &labels, limit, screen)
                                .into_iter()
                                .map(|h| (h.id, h.score as f32))
                                .collect();
                            assert_eq!(got, expected, "n {n}, dim {dim}, query {q}, limit {limit}, {screen:?}");
                        }
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod timing {
    use super::tests_support::cache;
    use super::*;

    /// Not a test: `cargo test --release -p membank-store --lib scan_timing -- --ignored
    /// --nocapture` prints a 100k-row scan's time and its parts.
    #[test]
    #[ignore]
    fn scan_timing() {
        let (n, dim) = (100_000, 384);
        let cached = cache(n, dim, 3);
        let labels = Labels { agent: None, session: None };
        let filter = SearchFilter::default();
        let query = cache(1, dim, 99).data;
        let median = |mut t: Vec<f64>| {
            t.sort_by(f64::total_cmp);
            t[t.len() / 2]
        };
        let (mut whole, mut admit, mut screen) = (Vec::new(), Vec::new(), Vec::new());
        for _ in 0..41 {
            let start = std::time::Instant::now();
            let hits = scan(&cached, dim, &query, &filter, &labels, 50, DenseScreen::FourBit);
            whole.push(start.elapsed().as_secs_f64() * 1e3);
            assert_eq!(hits.len(), 50);
            let start = std::time::Instant::now();
            let rows: Vec<u32> = cached
                .entries
                .iter()
                .enumerate()
                .filter(|(_, e)| e.admitted(&filter, &labels))
                .map(|(i, _)| i as u32)
                .collect();
            admit.push(start.elapsed().as_secs_f64() * 1e3);
            let start = std::time::Instant::now();
            let kept = four_bit_screen(
                &cached,
                dim,
                &query,
                &rows,
                &ScanKey::new(&filter, &labels),
                &|rows, approx, errors| within_reach(rows, approx, 50, &errors.each(rows, approx)),
            );
            screen.push(start.elapsed().as_secs_f64() * 1e3);
            assert!(kept.len() >= 50);
        }
        // The tiers' scan and the keeping step alone, as a recall's probe of the archive
        // runs them (every seventh row is archived in this cache).
        let rows: Vec<u32> = (0..n as u32).collect();
        let approx: Vec<f32> = rows.iter().map(|&r| cached.data[r as usize * dim]).collect();
        let active = |r: u32| cached.statuses[r as usize] == Status::Active;
        let errors = Errors { scales: &cached.scales4, per_scale: 0.1, relative: 0.0, absolute: 0.0 };
        let (mut tiers, mut keeping) = (Vec::new(), Vec::new());
        for _ in 0..41 {
            let start = std::time::Instant::now();
            let (best, wide) = scan_tiers(&cached, dim, &query, &filter, &labels, 10, 26, DenseScreen::FourBit);
            tiers.push(start.elapsed().as_secs_f64() * 1e3);
            assert_eq!((best.len(), wide.len()), (10, 26));
            let start = std::time::Instant::now();
            let kept = keep_within_reach(&rows, &approx, &errors, &[(Some(&active), 10), (None, 26)]);
            keeping.push(start.elapsed().as_secs_f64() * 1e3);
            assert!(kept.len() >= 26);
        }
        eprintln!(
            "scan of {n} rows: {:.3} ms; admission {:.3} ms, 4-bit screen {:.3} ms; tiers {:.3} ms, keeping {:.3} ms (medians of 41, {})",
            median(whole),
            median(admit),
            median(screen),
            median(tiers),
            median(keeping),
            kernels::scan_path()
        );
    }
}
