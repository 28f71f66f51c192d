//! The in-process lexical index of each user, for BM25 search.
//!
//! SQLite's FTS5 ranks every row that matches any query term before it can return the best
//! fifty: on a user with 100k memories a query with one common word cost 25 ms there. This
//! index holds, per user, the postings of each term (document, term frequency) and each
//! document's length, built from the memories' own text with the same cutting rules as the
//! FTS5 body ([`membank_core::text::terms`]), and scores with BM25 (k1 = 1.2, b = 0.75, the
//! FTS5 defaults; Lucene's IDF, positive for every term, see [`idf`]) by walking only the
//! query terms' postings.
//!
//! Statistics are the user's own: N, document frequencies and the average length count this
//! user's memories only, so one user's memories never change another's ranking.
//!
//! It is kept in step with the database exactly like the vector cache, by
//! [`super::usercache`]: rows added since are loaded incrementally, status changes are
//! patched in place, and an erasure reloads the index (its terms must leave memory too).
//! Its entry is charged to the store's cache budget as its arrays' capacities, the term
//! table's buckets and keys, and every postings list's buffer, small allocations with the
//! allocator's header and rounding.

use std::collections::HashMap;

use membank_core::Status;

use super::usercache::{Labels, RowMeta, Speakers, UserCache, UserRows, status_only};
use super::{Source, for_each_body_term};
use crate::StoreError;
use crate::cache::{CacheKind, allocation, reserve_rows};
use crate::types::{Hit, SearchFilter};

/// BM25 term-frequency saturation.
const K1: f64 = 1.2;
/// BM25 length normalisation.
const B: f64 = 0.75;

/// One user's lexical index.
#[derive(Default)]
pub(crate) struct UserTerms {
    docs: Vec<RowMeta>,
    /// Each document's status again, one byte a document: a search that filters by status
    /// alone reads these instead of the documents (64 bytes each, scattered over the
    /// documents a query's terms touch).
    statuses: Vec<Status>,
    /// Term → index into `postings`. foldhash (seeded per process) instead of SipHash:
    /// hashing every word of 100k memories was a third of loading a user.
    terms: HashMap<Box<str>, u32, foldhash::quality::RandomState>,
    postings: Vec<Vec<(u32, u32)>>,
    /// Each document's length in terms (apart from `docs`, so the scoring loop reads 4 bytes).
    lens: Vec<u32>,
    total_len: u64,
    /// Heap bytes of the documents' label strings, of the term strings, and of the
    /// postings lists' buffers (each a small allocation, counted with the allocator's
    /// share), kept as they grow: summing them per search would walk every term.
    label_bytes: usize,
    term_bytes: usize,
    posting_bytes: usize,
    /// The documents' distinct speakers (counted in `label_bytes` as they come).
    speakers: Speakers,
}

/// All cached users' lexical indexes of one store.
pub(crate) type TermCache = UserCache<UserTerms>;

impl TermCache {
    /// Brings the user's index up to date with `source`'s snapshot, then ranks by BM25.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn search(
        &self,
        source: &mut dyn Source,
        user_row: i64,
        revision: i64,
        terms: &[String],
        filter: &SearchFilter,
        labels: &Labels<'_>,
        limit: usize,
    ) -> Result<Vec<Hit>, StoreError> {
        self.with_fresh(source, user_row, revision, (), |cached| rank(cached, terms, filter, labels, limit))
    }
}

impl UserRows for UserTerms {
    type Params = ();
    const KIND: CacheKind = CacheKind::Terms;

    fn rows_mut(&mut self) -> &mut [RowMeta] {
        &mut self.docs
    }

    fn load_after(&mut self, source: &mut dyn Source, after: i64, (): ()) -> Result<i64, StoreError> {
        let mut last = after;
        let appending = !self.docs.is_empty();
        if !appending {
            // Erased rows are counted and skipped: the shrink after the load returns their room.
            let n = source.count_after(CacheKind::Terms, after)?;
            self.docs.reserve_exact(n);
            self.statuses.reserve_exact(n);
            self.lens.reserve_exact(n);
        }
        // Reused across documents: the term being cut, and the document's term indexes.
        let mut buffer = String::new();
        let mut doc_terms: Vec<u32> = Vec::new();
        source.texts_after(after, &mut |mut meta, content, user_text, assistant_text| {
            last = meta.seq;
            if meta.status == Status::Erased {
                return Ok(());
            }
            let doc = self.docs.len() as u32;
            // One table lookup per term occurrence; term frequencies come from sorting the
            // document's own indexes (a dozen numbers), not from a map per document.
            doc_terms.clear();
            let (terms, postings, term_bytes) = (&mut self.terms, &mut self.postings, &mut self.term_bytes);
            let mut add = |term: &str| {
                let index = match terms.get(term) {
                    Some(&index) => index,
                    None => {
                        let index = postings.len() as u32;
                        terms.insert(term.into(), index);
                        *term_bytes += allocation(term.len());
                        postings.push(Vec::new());
                        index
                    }
                };
                doc_terms.push(index);
            };
            for_each_body_term(content, user_text, assistant_text, &mut buffer, &mut add);
            doc_terms.sort_unstable();
            for run in doc_terms.chunk_by(|a, b| a == b) {
                let postings = &mut self.postings[run[0] as usize];
                let before = posting_allocation(postings);
                postings.push((doc, run.len() as u32));
                self.posting_bytes += posting_allocation(postings) - before;
            }
            let (speaker, speaker_bytes) = self.speakers.intern(meta.speaker.take());
            meta.speaker = speaker;
            self.label_bytes += meta.label_bytes() + speaker_bytes;
            reserve_rows(&mut self.statuses, 1, appending);
            self.statuses.push(meta.status);
            reserve_rows(&mut self.docs, 1, appending);
            self.docs.push(meta);
            reserve_rows(&mut self.lens, 1, appending);
            self.lens.push(doc_terms.len() as u32);
            self.total_len += doc_terms.len() as u64;
            Ok(())
        })?;
        Ok(last)
    }

    fn heap_bytes(&self) -> usize {
        // A hash table of capacity c has about c · 8/7 buckets, each a key-value pair and a
        // control byte.
        let table = self.terms.capacity() * 8 / 7 * (std::mem::size_of::<(Box<str>, u32)>() + 1);
        self.docs.capacity() * std::mem::size_of::<RowMeta>()
            + self.statuses.capacity()
            + self.label_bytes
            + self.speakers.table_bytes()
            + table
            + self.term_bytes
            + self.postings.capacity() * std::mem::size_of::<Vec<(u32, u32)>>()
            + self.posting_bytes
            + self.lens.capacity() * std::mem::size_of::<u32>()
    }

    fn shrink(&mut self) {
        self.docs.shrink_to_fit();
        self.statuses.shrink_to_fit();
        self.terms.shrink_to_fit();
        self.postings.shrink_to_fit();
        for postings in &mut self.postings {
            postings.shrink_to_fit();
        }
        self.posting_bytes = self.postings.iter().map(posting_allocation).sum();
        self.lens.shrink_to_fit();
    }

    fn statuses_patched(&mut self) {
        self.statuses.clear();
        self.statuses.extend(self.docs.iter().map(|d| d.status));
    }
}

/// The heap bytes of one postings list's buffer.
fn posting_allocation(postings: &Vec<(u32, u32)>) -> usize {
    allocation(postings.capacity() * std::mem::size_of::<(u32, u32)>())
}

/// BM25's inverse document frequency of a term in `df` of `n` documents, as Lucene
/// computes it: `ln(1 + (n − df + 0.5) / (df + 0.5))`. Always positive, so a match always
/// adds to a score, and still falling as the term gets commoner. FTS5's form without the
/// `1 +` is negative for a term in over half the documents and had to be floored (at 1e-6):
/// on a store of one or two memories every word is in half of them, and an exact match
/// scored 0.000001, indistinguishable from no match at all.
fn idf(n: f64, df: f64) -> f64 {
    (1.0 + (n - df + 0.5) / (df + 0.5)).ln()
}

/// Accumulator arrays kept between searches, all zero: allocating, zeroing and faulting in
/// a fresh one per query (800 KB at 100k memories) was about a fifth of a BM25 search under
/// load. At most [`KEPT_SCORES`] are kept, none longer than [`KEPT_SCORES_LEN`] documents
/// (8 MiB in all at most); a larger user's search allocates its own, as before.
static SCORES: std::sync::Mutex<Vec<Vec<f64>>> = std::sync::Mutex::new(Vec::new());
const KEPT_SCORES: usize = 4;
const KEPT_SCORES_LEN: usize = 1 << 18;

/// An all-zero accumulator array of at least `n` entries.
fn take_scores(n: usize) -> Vec<f64> {
    let mut scores = SCORES.lock().unwrap_or_else(|e| e.into_inner()).pop().unwrap_or_default();
    if scores.len() < n {
        scores.resize(n, 0.0);
    }
    scores
}

/// Gives back an accumulator array whose nonzero entries are all among `touched`.
fn give_scores(mut scores: Vec<f64>, touched: &[u32]) {
    if scores.len() > KEPT_SCORES_LEN {
        return;
    }
    for &doc in touched {
        scores[doc as usize] = 0.0;
    }
    let mut kept = SCORES.lock().unwrap_or_else(|e| e.into_inner());
    if kept.len() < KEPT_SCORES {
        kept.push(scores);
    }
}

/// A scored document in [`rank`]'s heap, ordered worst last: a lower score, or the same
/// score and a later document, is greater (the heap's top is the worst kept).
#[derive(Clone, Copy)]
struct Ranked(f64, u32);

impl PartialEq for Ranked {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == std::cmp::Ordering::Equal
    }
}
impl Eq for Ranked {}
impl PartialOrd for Ranked {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for Ranked {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        other.0.total_cmp(&self.0).then(self.1.cmp(&other.1))
    }
}

/// Adds each document's BM25 score for `terms` (each distinct term once) into `scores`
/// (zero at first, at least one entry per document); the documents touched, in the order
/// first touched.
fn accumulate(cached: &UserTerms, terms: &[String], scores: &mut [f64]) -> Vec<u32> {
    let n = cached.docs.len();
    let average = cached.total_len as f64 / n as f64;
    let mut touched: Vec<u32> = Vec::new();
    let mut seen_terms = std::collections::HashSet::new();
    for term in terms {
        if !seen_terms.insert(term.as_str()) {
            continue;
        }
        let Some(&index) = cached.terms.get(term.as_str()) else { continue };
        let postings = &cached.postings[index as usize];
        let df = postings.len() as f64;
        let idf = idf(n as f64, df);
        for &(doc, tf) in postings {
            let tf = f64::from(tf);
            let norm = K1 * (1.0 - B + B * f64::from(cached.lens[doc as usize]) / average);
            let slot = &mut scores[doc as usize];
            if *slot == 0.0 {
                touched.push(doc);
            }
            *slot += idf * tf * (K1 + 1.0) / (tf + norm);
        }
    }
    touched
}

/// The `limit` best documents for `terms` by BM25 (ties by document order), those the
/// filter admits.
fn rank(cached: &UserTerms, terms: &[String], filter: &SearchFilter, labels: &Labels<'_>, limit: usize) -> Vec<Hit> {
    let n = cached.docs.len();
    if n == 0 || limit == 0 {
        return Vec::new();
    }
    // Dense accumulators: a posting costs one add, however common its term.
    let mut scores = take_scores(n);
    let touched = accumulate(cached, terms, &mut scores);
    // The best `limit` in a heap whose top is the worst kept: most matching documents are
    // compared with it once and passed over, where collecting every match and selecting
    // among them cost more than the scoring. Filters apply once per matching document.
    let mut best: std::collections::BinaryHeap<Ranked> =
        std::collections::BinaryHeap::with_capacity(limit.min(touched.len()) + 1);
    let mut offer = |doc: u32| {
        let candidate = Ranked(scores[doc as usize], doc);
        if best.len() < limit {
            best.push(candidate);
        } else if best.peek().is_some_and(|worst| candidate < *worst) {
            best.pop();
            best.push(candidate);
        }
    };
    match status_only(filter, labels) {
        Some(admit) => touched.iter().filter(|&&doc| admit(cached.statuses[doc as usize])).for_each(|&doc| offer(doc)),
        None => touched
            .iter()
            .filter(|&&doc| cached.docs[doc as usize].admitted(filter, labels))
            .for_each(|&doc| offer(doc)),
    }
    let ranked = best.into_sorted_vec();
    give_scores(scores, &touched);
    ranked
        .into_iter()
        .map(|Ranked(score, doc)| Hit {
            id: cached.docs[doc as usize].id,
            score,
            speaker: cached.docs[doc as usize].speaker.clone(),
        })
        .collect()
}

/// [`rank`] computed plainly (every match collected, then selected and sorted): the
/// reference it is tested against.
#[cfg(test)]
fn rank_plainly(
    cached: &UserTerms,
    terms: &[String],
    filter: &SearchFilter,
    labels: &Labels<'_>,
    limit: usize,
) -> Vec<Hit> {
    let n = cached.docs.len();
    if n == 0 || limit == 0 {
        return Vec::new();
    }
    let mut scores = vec![0f64; n];
    let touched = accumulate(cached, terms, &mut scores);
    // Filters apply once per matching document, not once per posting.
    let mut ranked: Vec<(f64, u32)> = match status_only(filter, labels) {
        Some(admit) => touched
            .into_iter()
            .filter(|&doc| admit(cached.statuses[doc as usize]))
            .map(|doc| (scores[doc as usize], doc))
            .collect(),
        None => touched
            .into_iter()
            .filter(|&doc| cached.docs[doc as usize].admitted(filter, labels))
            .map(|doc| (scores[doc as usize], doc))
            .collect(),
    };
    let by_score = |a: &(f64, u32), b: &(f64, u32)| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1));
    if limit < ranked.len() {
        ranked.select_nth_unstable_by(limit - 1, by_score);
        ranked.truncate(limit);
    }
    ranked.sort_by(by_score);
    ranked
        .into_iter()
        .map(|(score, doc)| Hit {
            id: cached.docs[doc as usize].id,
            score,
            speaker: cached.docs[doc as usize].speaker.clone(),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A lexical index over documents of random words from a small vocabulary (so scores
    /// tie often), with random statuses.
    fn index(seed: u64, docs: usize) -> UserTerms {
        let mut state = seed;
        let mut next = move |m: u64| {
            state = state.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            (state >> 33) % m
        };
        let mut cached = UserTerms::default();
        for doc in 0..docs {
            let words: Vec<u32> = (0..1 + next(6)).map(|_| next(12) as u32).collect();
            let mut sorted = words.clone();
            sorted.sort_unstable();
            for run in sorted.chunk_by(|a, b| a == b) {
                let term = format!("w{}", run[0]);
                let index = *cached.terms.entry(term.into()).or_insert_with(|| {
                    cached.postings.push(Vec::new());
                    (cached.postings.len() - 1) as u32
                });
                cached.postings[index as usize].push((doc as u32, run.len() as u32));
            }
            let status = [Status::Active, Status::Active, Status::Archived, Status::Superseded][next(4) as usize];
            let at = chrono::DateTime::from_timestamp(1_700_000_000 + doc as i64, 0).expect("valid");
            cached.docs.push(RowMeta {
                seq: doc as i64 + 1,
                id: membank_core::MemoryId::generate(at),
                kind: if next(3) == 0 { membank_core::Kind::Note } else { membank_core::Kind::Turn },
                day: at.date_naive(),
                status,
                agent: None,
                session: None,
                speaker: None,
            });
            cached.statuses.push(status);
            cached.lens.push(words.len() as u32);
            cached.total_len += words.len() as u64;
        }
        cached
    }

    #[test]
    fn ranking_in_a_heap_returns_what_selecting_among_every_match_returns() {
        let labels = Labels { agent: None, session: None };
        for seed in 0..40 {
            let cached = index(seed, [0, 1, 7, 300, 2000][seed as usize % 5]);
            let terms: Vec<String> = (0..1 + seed % 4).map(|i| format!("w{}", (seed * 7 + i * 5) % 14)).collect();
            for include_archived in [false, true] {
                let filter = SearchFilter { include_archived, ..SearchFilter::default() };
                // A kind filter takes the per-document path instead of the statuses'.
                let kinds = SearchFilter { kinds: vec![membank_core::Kind::Turn], ..filter.clone() };
                for filter in [&filter, &kinds] {
                    for limit in [0, 1, 3, 50, 5000] {
                        let got = rank(&cached, &terms, filter, &labels, limit);
                        let want = rank_plainly(&cached, &terms, filter, &labels, limit);
                        let pairs = |hits: &[Hit]| hits.iter().map(|h| (h.id, h.score.to_bits())).collect::<Vec<_>>();
                        assert_eq!(pairs(&got), pairs(&want), "seed {seed}, terms {terms:?}, limit {limit}");
                    }
                }
            }
        }
        // Every array given back is all zero again.
        for scores in SCORES.lock().unwrap().iter() {
            assert!(scores.iter().all(|&s| s == 0.0));
        }
    }
}
