//! One byte budget for a store's in-process per-user caches, with least-recently-used
//! eviction across every user of every cache.
//!
//! A store keeps, per user, caches that make a search fast (the vectors of dense search,
//! the BM25 index of lexical search). Kept forever, they grow with the number of users a
//! process ever served. [`CacheBudget`] owns every cached user entry of one store handle:
//! each entry is charged its heap bytes (counted by its owner: vectors and codes, postings,
//! row metadata, strings — what the allocator was asked for, and for small allocations its
//! header and rounding too; for 1,000 users the total was within 2% of the heap's growth,
//! `membank bench cache`) and when the total passes the budget, the least recently used
//! entries, whichever cache they belong to, are dropped until it fits again. What the
//! allocator keeps of evicted entries is not counted (README, *Performance*).
//!
//! What it does not know: how an entry is loaded or kept fresh (`search/usercache.rs`, from
//! a backend's `Source`), so both backends charge the same budget.
//!
//! **In use is never freed.** A search holds its entry through an [`Arc`]: evicting only
//! removes the budget's handle, and the entry's memory goes when the last search using it
//! ends. Its bytes stop counting at eviction, so for that moment the process holds a little
//! more than the tracked total.
//!
//! **A user larger than the whole budget** is still served: the search loads the user's
//! entry, uses it, and the entry is not kept (counted as an eviction; a warning is logged
//! once per store). Keeping it instead would let one user hold the process over its bound;
//! the price is that such a user's every search loads it again, so the budget should be
//! sized for the largest user (see the default's numbers at [`DEFAULT_CACHE_MB`]).

use std::any::Any;
use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

/// The default budget in MiB (1 GiB). Measured with the 384-dimension default model
/// (`membank bench recall`): a user with 10k memories is charged 22.8 MiB in both caches
/// (19.0 vectors, 3.8 BM25), one with 100k 228 MiB (190 and 38). So the default keeps four
/// of the largest users, or dozens of 10k and hundreds of 1k ones, and a server holding it
/// and the model still fits in 2 GB.
pub const DEFAULT_CACHE_MB: u64 = 1024;

/// What a store handle is opened with besides its location: settings that live in the
/// process, not in the database. Every backend takes the same.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StoreOptions {
    /// Most bytes the in-process per-user caches (every user's vectors and BM25 index
    /// together) may keep; `None`: no limit. `Some(0)` keeps nothing: every search loads
    /// what it reads. Default [`DEFAULT_CACHE_MB`] MiB.
    pub cache_budget: Option<u64>,
    /// How the dense scan screens a large user's rows (default [`DenseScreen::FourBit`]).
    pub dense_screen: DenseScreen,
}

impl Default for StoreOptions {
    fn default() -> Self {
        Self { cache_budget: Some(DEFAULT_CACHE_MB << 20), dense_screen: DenseScreen::default() }
    }
}

/// How the dense scan picks the rows it scores exactly (see `search/vectors.rs`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum DenseScreen {
    /// The int8 screen over every row with a proven error bound: the result is the full
    /// f32 scan's, always.
    Exact,
    /// Users of at least [`FOUR_BIT_ROWS`] rows are screened first with 4-bit codes (half
    /// the int8 codes' bytes) and a margin of six standard deviations of each row's
    /// rounding error; the rows within it go through the exact path. The same result as
    /// the full scan unless a row's rounding error exceeds that margin (measured: see
    /// `membank bench recall`'s `dense_recall`).
    #[default]
    FourBit,
}

/// From this many rows on, [`DenseScreen::FourBit`] screens with 4-bit codes first.
pub const FOUR_BIT_ROWS: usize = 20_000;

/// The bytes every cached user entry costs beyond its rows: the entry's own struct and lock,
/// its place in the budget's two maps, and the allocator's share of a few small allocations.
pub(crate) const ENTRY_OVERHEAD: usize = 256;

/// Which per-user cache an entry belongs to. A fixed set: it labels metrics.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[non_exhaustive]
pub enum CacheKind {
    /// Each user's vectors for exact dense search.
    Vectors,
    /// Each user's BM25 index for lexical search.
    Terms,
}

impl CacheKind {
    /// Every cache, in a fixed order.
    pub const ALL: [CacheKind; 2] = [CacheKind::Vectors, CacheKind::Terms];

    /// The cache's name as a metric label: `vectors` or `terms`.
    pub fn as_str(self) -> &'static str {
        match self {
            CacheKind::Vectors => "vectors",
            CacheKind::Terms => "terms",
        }
    }

    fn index(self) -> usize {
        match self {
            CacheKind::Vectors => 0,
            CacheKind::Terms => 1,
        }
    }
}

/// One cache's numbers.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CacheCounters {
    /// Bytes its cached entries are charged now.
    pub bytes: u64,
    /// Users it holds now.
    pub entries: u64,
    /// Searches served from a loaded entry (after loading at most the rows added since).
    pub hits: u64,
    /// Searches that had to load a user whole: never loaded, evicted, or reloaded after an
    /// erasure.
    pub misses: u64,
    /// Entries dropped to stay within the budget (an entry larger than the whole budget,
    /// not kept after its search, counts too).
    pub evictions: u64,
}

/// A store's caches at one moment, for metrics.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CacheStats {
    /// The budget in bytes; `None`: no limit.
    pub budget_bytes: Option<u64>,
    /// The vector cache.
    pub vectors: CacheCounters,
    /// The BM25 cache.
    pub terms: CacheCounters,
}

impl CacheStats {
    /// Bytes charged across both caches.
    pub fn bytes(&self) -> u64 {
        self.vectors.bytes + self.terms.bytes
    }

    /// One cache's numbers.
    pub fn of(&self, kind: CacheKind) -> &CacheCounters {
        match kind {
            CacheKind::Vectors => &self.vectors,
            CacheKind::Terms => &self.terms,
        }
    }
}

type Key = (CacheKind, i64);

/// One user's entry of one cache, type-erased so both caches share one map and one order.
struct Entry {
    slot: Arc<dyn Any + Send + Sync>,
    bytes: u64,
    /// Its place in [`Lru::order`]: larger is more recent.
    tick: u64,
}

#[derive(Default)]
struct Lru {
    entries: HashMap<Key, Entry>,
    /// Entries by last use, oldest first.
    order: BTreeMap<u64, Key>,
    next_tick: u64,
    bytes: [u64; 2],
    counts: [u64; 2],
}

impl Lru {
    fn touch(&mut self, key: Key) {
        let tick = self.next_tick;
        self.next_tick += 1;
        if let Some(entry) = self.entries.get_mut(&key) {
            self.order.remove(&entry.tick);
            entry.tick = tick;
            self.order.insert(tick, key);
        }
    }

    fn total(&self) -> u64 {
        self.bytes.iter().sum()
    }

    fn remove(&mut self, key: Key) -> Option<Entry> {
        let entry = self.entries.remove(&key)?;
        self.order.remove(&entry.tick);
        self.bytes[key.0.index()] -= entry.bytes;
        self.counts[key.0.index()] -= 1;
        Some(entry)
    }
}

#[derive(Default)]
struct KindCounters {
    hits: AtomicU64,
    misses: AtomicU64,
    evictions: AtomicU64,
}

/// The cached user entries of one store handle and the budget they share.
pub(crate) struct CacheBudget {
    max_bytes: Option<u64>,
    lru: Mutex<Lru>,
    counters: [KindCounters; 2],
    warned_oversized: AtomicBool,
}

impl CacheBudget {
    /// A budget of `max_bytes` (`None`: no limit; entries are still counted).
    pub(crate) fn new(max_bytes: Option<u64>) -> Self {
        Self {
            max_bytes,
            lru: Mutex::new(Lru::default()),
            counters: Default::default(),
            warned_oversized: AtomicBool::new(false),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Lru> {
        self.lru.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The user's entry of this cache, created empty (charged nothing) if absent, and now
    /// the most recently used. `S` must be the one type this cache keeps.
    pub(crate) fn slot<S: Default + Send + Sync + 'static>(&self, kind: CacheKind, user: i64) -> Arc<S> {
        let key = (kind, user);
        let mut guard = self.lock();
        let lru = &mut *guard;
        if let Some(entry) = lru.entries.get(&key) {
            match Arc::clone(&entry.slot).downcast::<S>() {
                Ok(slot) => {
                    lru.touch(key);
                    return slot;
                }
                // Only a bug (two types under one cache) gets here; a fresh entry is right
                // either way, since an entry is only ever a cache.
                Err(_) => {
                    debug_assert!(false, "cache {} holds another type", kind.as_str());
                    lru.remove(key);
                }
            }
        }
        let slot = Arc::new(S::default());
        let tick = lru.next_tick;
        lru.next_tick += 1;
        lru.entries.insert(key, Entry { slot: Arc::clone(&slot) as Arc<dyn Any + Send + Sync>, bytes: 0, tick });
        lru.order.insert(tick, key);
        lru.counts[kind.index()] += 1;
        slot
    }

    /// Records that the user's entry `slot` now holds `bytes`, then evicts the least
    /// recently used other entries until the total fits. Returns whether `slot` is kept: not
    /// if it was evicted while it was being loaded (the caller's copy then serves its one
    /// search and goes), nor if it alone is larger than the whole budget.
    pub(crate) fn charge<S: Send + Sync + 'static>(
        &self,
        kind: CacheKind,
        user: i64,
        slot: &Arc<S>,
        bytes: usize,
    ) -> bool {
        let key = (kind, user);
        let bytes = bytes as u64;
        // Evicted entries are dropped after the lock is released: freeing hundreds of
        // megabytes is not work to do while every search waits on this lock.
        let mut evicted: Vec<Entry> = Vec::new();
        let kept = {
            let mut guard = self.lock();
            let lru = &mut *guard;
            let current = lru
                .entries
                .get(&key)
                .is_some_and(|entry| std::ptr::addr_eq(Arc::as_ptr(&entry.slot), Arc::as_ptr(slot)));
            if !current {
                false
            } else if self.max_bytes.is_some_and(|max| bytes > max) {
                evicted.extend(lru.remove(key));
                self.counters[kind.index()].evictions.fetch_add(1, Ordering::Relaxed);
                if !self.warned_oversized.swap(true, Ordering::Relaxed) {
                    tracing::warn!(
                        cache = kind.as_str(),
                        bytes,
                        budget = self.max_bytes,
                        "a user's cache is larger than the whole cache budget: it is loaded for each search and not kept (raise the cache budget)"
                    );
                }
                false
            } else {
                if let Some(entry) = lru.entries.get_mut(&key) {
                    let before = std::mem::replace(&mut entry.bytes, bytes);
                    lru.bytes[kind.index()] = lru.bytes[kind.index()] - before + bytes;
                }
                if let Some(max) = self.max_bytes {
                    let mut excess = lru.total().saturating_sub(max);
                    // Oldest first. Entries charged nothing are being loaded: evicting them
                    // frees nothing and would waste their load.
                    let victims: Vec<Key> = lru
                        .order
                        .values()
                        .filter(|&&victim| victim != key)
                        .filter_map(|victim| {
                            if excess == 0 {
                                return None;
                            }
                            let size = lru.entries.get(victim).map_or(0, |entry| entry.bytes);
                            (size > 0).then(|| {
                                excess = excess.saturating_sub(size);
                                *victim
                            })
                        })
                        .collect();
                    for victim in victims {
                        evicted.extend(lru.remove(victim));
                        self.counters[victim.0.index()].evictions.fetch_add(1, Ordering::Relaxed);
                    }
                }
                true
            }
        };
        drop(evicted);
        kept
    }

    /// Counts a search served from a loaded entry.
    pub(crate) fn hit(&self, kind: CacheKind) {
        self.counters[kind.index()].hits.fetch_add(1, Ordering::Relaxed);
    }

    /// Counts a search that loaded a user whole.
    pub(crate) fn miss(&self, kind: CacheKind) {
        self.counters[kind.index()].misses.fetch_add(1, Ordering::Relaxed);
    }

    /// The numbers now.
    pub(crate) fn stats(&self) -> CacheStats {
        let (bytes, counts) = {
            let lru = self.lock();
            (lru.bytes, lru.counts)
        };
        let of = |kind: CacheKind| {
            let i = kind.index();
            let c = &self.counters[i];
            CacheCounters {
                bytes: bytes[i],
                entries: counts[i],
                hits: c.hits.load(Ordering::Relaxed),
                misses: c.misses.load(Ordering::Relaxed),
                evictions: c.evictions.load(Ordering::Relaxed),
            }
        };
        CacheStats { budget_bytes: self.max_bytes, vectors: of(CacheKind::Vectors), terms: of(CacheKind::Terms) }
    }
}

/// What a heap allocation of `bytes` really takes: the allocator's header and rounding
/// (glibc on 64 bits: 8 bytes of header, 16-byte steps, 32 at least). Counted for the
/// BM25 index's many small allocations (a term's string, a postings list), where it is most
/// of the size: a 7-byte term takes 32.
pub(crate) fn allocation(bytes: usize) -> usize {
    if bytes == 0 { 0 } else { (bytes + 8).next_multiple_of(16).max(32) }
}

/// Makes room for `additional` more items of a cached user's array. A whole load reserved
/// its arrays exactly from a count first (one allocation each, no copies, no holes left
/// behind in the heap; this is what keeps the allocator's overhead low when users are
/// evicted and loaded over and over), and anything beyond that grows as `Vec` does. Rows
/// appended to a loaded entry grow it by an eighth instead: a doubling would leave up to
/// half of a big user's bytes as spare capacity charged to the budget until its next whole
/// load, and an exact fit would copy the whole array on every new memory.
pub(crate) fn reserve_rows<T>(items: &mut Vec<T>, additional: usize, appending: bool) {
    if appending && items.capacity() - items.len() < additional {
        items.reserve_exact(additional.max(items.len() / 8));
    }
}

#[cfg(test)]
mod tests {
    use std::sync::RwLock;

    use super::*;

    type Slot = RwLock<Vec<u8>>;

    fn fill(budget: &CacheBudget, kind: CacheKind, user: i64, bytes: usize) -> (Arc<Slot>, bool) {
        let slot: Arc<Slot> = budget.slot(kind, user);
        *slot.write().unwrap() = vec![1; bytes];
        let kept = budget.charge(kind, user, &slot, bytes);
        (slot, kept)
    }

    #[test]
    fn small_allocations_cost_their_header_and_rounding() {
        assert_eq!([0, 1, 7, 24, 25, 40, 1000].map(allocation), [0, 32, 32, 32, 48, 48, 1008]);
    }

    #[test]
    fn the_least_recently_used_entries_of_either_cache_go_first() {
        let budget = CacheBudget::new(Some(300));
        fill(&budget, CacheKind::Vectors, 1, 100);
        fill(&budget, CacheKind::Terms, 1, 100);
        fill(&budget, CacheKind::Vectors, 2, 100);
        // Using vectors of user 1 makes terms of user 1 the oldest.
        let _: Arc<Slot> = budget.slot(CacheKind::Vectors, 1);
        fill(&budget, CacheKind::Terms, 2, 100);
        let stats = budget.stats();
        assert_eq!((stats.vectors.entries, stats.terms.entries), (2, 1));
        assert_eq!((stats.terms.evictions, stats.vectors.evictions), (1, 0));
        assert_eq!(stats.bytes(), 300);
        // The evicted entry is a new, empty one when asked for again.
        let again: Arc<Slot> = budget.slot(CacheKind::Terms, 1);
        assert!(again.read().unwrap().is_empty());
    }

    #[test]
    fn an_entry_in_use_outlives_its_eviction_and_is_not_charged_again() {
        let budget = CacheBudget::new(Some(150));
        let (in_use, kept) = fill(&budget, CacheKind::Vectors, 1, 100);
        assert!(kept);
        fill(&budget, CacheKind::Vectors, 2, 100);
        // Evicted, but the search holding it still reads its rows.
        assert_eq!(in_use.read().unwrap().len(), 100);
        assert_eq!(budget.stats().vectors.entries, 1);
        // Charging the evicted copy (its load finished after the eviction) keeps nothing.
        assert!(!budget.charge(CacheKind::Vectors, 1, &in_use, 100));
        assert_eq!(budget.stats().bytes(), 100);
    }

    #[test]
    fn an_entry_larger_than_the_budget_is_served_and_not_kept() {
        let budget = CacheBudget::new(Some(150));
        fill(&budget, CacheKind::Vectors, 1, 100);
        let (big, kept) = fill(&budget, CacheKind::Terms, 2, 200);
        assert!(!kept);
        assert_eq!(big.read().unwrap().len(), 200);
        let stats = budget.stats();
        // The others stay: nothing had to make room for an entry that is not kept.
        assert_eq!((stats.vectors.entries, stats.terms.entries, stats.bytes()), (1, 0, 100));
        assert_eq!(stats.terms.evictions, 1);
        // A budget of zero keeps nothing at all.
        let nothing = CacheBudget::new(Some(0));
        assert!(!fill(&nothing, CacheKind::Vectors, 1, 1).1);
        assert_eq!(nothing.stats().bytes(), 0);
    }

    #[test]
    fn entries_still_loading_are_not_evicted_and_no_limit_evicts_nothing() {
        let budget = CacheBudget::new(Some(100));
        let loading: Arc<Slot> = budget.slot(CacheKind::Vectors, 1);
        fill(&budget, CacheKind::Vectors, 2, 60);
        fill(&budget, CacheKind::Vectors, 3, 60);
        // User 2 made room for user 3; user 1, charged nothing yet, stayed.
        assert!(budget.charge(CacheKind::Vectors, 1, &loading, 10));
        assert_eq!(budget.stats().vectors.entries, 2);

        let unbounded = CacheBudget::new(None);
        for user in 0..50 {
            fill(&unbounded, CacheKind::Terms, user, 1000);
        }
        let stats = unbounded.stats();
        assert_eq!(
            (stats.terms.entries, stats.terms.bytes, stats.terms.evictions, stats.budget_bytes),
            (50, 50_000, 0, None)
        );
    }
}
