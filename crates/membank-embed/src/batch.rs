//! [`BatchingEmbedder`]: micro-batching of concurrent requests' texts.
//!
//! A server answers many requests at once, and each needs a text embedded: a recall its
//! query, a stored turn or note its text (and, for the importance probe, the mean hidden
//! state of the person's words at one layer). Alone, every text runs its own forward pass
//! and reads every weight of the model again. Here the texts of concurrent callers go to
//! one worker thread, which takes every text of one kind waiting when it becomes free (at
//! most `max_queries`) and runs them in one forward pass, so the weights are read once per
//! batch and the packed batch keeps the cores busy. Queries go first: a recall does not
//! wait behind a batch of documents that queued after it.
//!
//! Nothing waits on purpose by default: a lone text is embedded as soon as the worker
//! takes it (a thread hand-off, tens of microseconds), and texts batch up only while a
//! pass is running — which is exactly when waiting would happen anyway. `window` adds a
//! deliberate wait after the first text of a batch, for callers that prefer throughput.
//!
//! Each text gets what the inner embedder gives it alone, provided the inner embedder keeps
//! each text's output independent of the others in its batch: the local embedder's int8
//! path does, bit for bit (its tests check queries and documents; documents take that path
//! where the CPU has VNNI or AMX); on its f32 path a document's vector can differ from its
//! vector alone in the last bits (cosine above 0.99999), as in any batched import. A failed
//! batch is retried text by text, so each caller gets its own text's error. A call with
//! `max_queries` texts or more is a batch already and goes straight to the inner embedder.
//!
//! It deliberately does not spawn more than one thread, reorder texts of one kind, or cache
//! vectors.

use std::sync::mpsc;
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crate::{EmbedError, Embedder};

/// How a [`BatchingEmbedder`] batches.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BatchOptions {
    /// Most texts in one forward pass (at least 1; 1 turns batching off).
    pub max_queries: usize,
    /// How long the worker waits for more texts after the first of a batch; zero by
    /// default (batches form only from texts that queued during the previous pass).
    pub window: Duration,
}

impl Default for BatchOptions {
    fn default() -> Self {
        Self { max_queries: 32, window: Duration::ZERO }
    }
}

/// What a waiting text is to become.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    /// A search query's vector ([`Embedder::embed_query`]).
    Query,
    /// A document's vector ([`Embedder::embed`]).
    Document,
    /// The mean hidden state after this many layers ([`Embedder::layer_means`]).
    LayerMean(usize),
}

/// One text's answer: its vector, or `None` for a layer mean the inner embedder cannot give.
type Answer = Result<Option<Vec<f32>>, EmbedError>;
type Reply = mpsc::SyncSender<Answer>;

/// A text waiting for the worker.
struct Job {
    kind: Kind,
    text: String,
    reply: Reply,
}

/// Texts waiting for the worker, and whether it should stop.
#[derive(Default)]
struct State {
    waiting: Vec<Job>,
    stopping: bool,
}

#[derive(Default)]
struct Queue {
    state: Mutex<State>,
    wake: Condvar,
}

impl Queue {
    fn lock(&self) -> MutexGuard<'_, State> {
        // The worker never panics while holding the lock; a poisoned lock still holds a
        // consistent queue.
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// Counters of a [`BatchingEmbedder`], for metrics and benchmarks.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct BatchStats {
    /// Forward passes run for queries.
    pub batches: u64,
    /// Queries embedded.
    pub queries: u64,
    /// Most queries in one pass so far.
    pub largest: u64,
    /// Forward passes run for documents and layer means.
    pub document_batches: u64,
    /// Documents embedded and layer means taken through the queue.
    pub documents: u64,
}

/// An [`Embedder`] that embeds concurrent callers' texts together. See the module docs.
pub struct BatchingEmbedder {
    inner: Arc<dyn Embedder>,
    queue: Arc<Queue>,
    stats: Arc<Mutex<BatchStats>>,
    max: usize,
    worker: Option<JoinHandle<()>>,
}

impl std::fmt::Debug for BatchingEmbedder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BatchingEmbedder").field("stats", &self.stats()).finish_non_exhaustive()
    }
}

impl BatchingEmbedder {
    /// Starts the worker thread over `inner`.
    ///
    /// Errors: [`EmbedError::Io`] when the thread cannot be spawned.
    pub fn new(inner: Arc<dyn Embedder>, options: BatchOptions) -> Result<Self, EmbedError> {
        let queue = Arc::new(Queue::default());
        let stats = Arc::new(Mutex::new(BatchStats::default()));
        let worker = {
            let (inner, queue, stats) = (inner.clone(), queue.clone(), stats.clone());
            std::thread::Builder::new()
                .name("membank-query-batch".into())
                .spawn(move || run(&*inner, &queue, &stats, options))?
        };
        Ok(Self { inner, queue, stats, max: options.max_queries.max(1), worker: Some(worker) })
    }

    /// The counters so far.
    pub fn stats(&self) -> BatchStats {
        *self.stats.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn submit(&self, kind: Kind, texts: &[&str]) -> Vec<mpsc::Receiver<Answer>> {
        let mut receivers = Vec::with_capacity(texts.len());
        let mut state = self.queue.lock();
        for text in texts {
            let (reply, receiver) = mpsc::sync_channel(1);
            state.waiting.push(Job { kind, text: (*text).to_owned(), reply });
            receivers.push(receiver);
        }
        drop(state);
        self.queue.wake.notify_one();
        receivers
    }

    /// Each text's answer through the queue, in order.
    fn through_queue(&self, kind: Kind, texts: &[&str]) -> Result<Vec<Option<Vec<f32>>>, EmbedError> {
        self.submit(kind, texts)
            .into_iter()
            // The worker answers every text it takes; a closed channel means it is gone.
            .map(|receiver| receiver.recv().unwrap_or(Err(EmbedError::NoVector)))
            .collect()
    }

    /// Vectors through the queue: every answer must be one.
    fn vectors(&self, kind: Kind, texts: &[&str]) -> Result<Vec<Vec<f32>>, EmbedError> {
        self.through_queue(kind, texts)?.into_iter().map(|v| v.ok_or(EmbedError::NoVector)).collect()
    }
}

/// The worker: take what is waiting of one kind, run it in one pass, answer, repeat.
fn run(inner: &dyn Embedder, queue: &Queue, stats: &Mutex<BatchStats>, options: BatchOptions) {
    let max = options.max_queries.max(1);
    loop {
        let mut state = queue.lock();
        while state.waiting.is_empty() && !state.stopping {
            state = queue.wake.wait(state).unwrap_or_else(PoisonError::into_inner);
        }
        if state.waiting.is_empty() {
            return;
        }
        if !options.window.is_zero() && state.waiting.len() < max {
            let until = Instant::now() + options.window;
            while state.waiting.len() < max && !state.stopping {
                let now = Instant::now();
                if now >= until {
                    break;
                }
                state = queue.wake.wait_timeout(state, until - now).unwrap_or_else(PoisonError::into_inner).0;
            }
        }
        // Queries first; otherwise the kind of the oldest text waiting.
        let kind =
            if state.waiting.iter().any(|job| job.kind == Kind::Query) { Kind::Query } else { state.waiting[0].kind };
        let mut batch = Vec::new();
        let mut rest = Vec::with_capacity(state.waiting.len());
        for job in state.waiting.drain(..) {
            if job.kind == kind && batch.len() < max {
                batch.push(job);
            } else {
                rest.push(job);
            }
        }
        state.waiting = rest;
        drop(state);

        let texts: Vec<&str> = batch.iter().map(|job| job.text.as_str()).collect();
        let answers = answer(inner, kind, &texts);
        // Counted before anyone is answered, so a caller that reads the counters after its
        // answer sees its own batch in them.
        {
            let mut counters = stats.lock().unwrap_or_else(PoisonError::into_inner);
            if kind == Kind::Query {
                counters.batches += 1;
                counters.queries += batch.len() as u64;
                counters.largest = counters.largest.max(batch.len() as u64);
            } else {
                counters.document_batches += 1;
                counters.documents += batch.len() as u64;
            }
        }
        for (job, answer) in batch.iter().zip(answers) {
            // A caller that gave up (dropped its receiver) is no one's concern.
            let _ = job.reply.send(answer);
        }
    }
}

/// One pass of `texts`, all of `kind`; when it fails (or answers the wrong number), each
/// text alone, so one bad text does not fail the others.
fn answer(inner: &dyn Embedder, kind: Kind, texts: &[&str]) -> Vec<Answer> {
    let some = |vectors: Vec<Vec<f32>>| -> Vec<Answer> { vectors.into_iter().map(|v| Ok(Some(v))).collect() };
    let together = match kind {
        Kind::Query => inner.embed_queries(texts).map(some),
        Kind::Document => inner.embed(texts).map(some),
        Kind::LayerMean(layer) => inner.layer_means(texts, layer).map(|means| match means {
            Some(means) => some(means),
            None => texts.iter().map(|_| Ok(None)).collect(),
        }),
    };
    match together {
        Ok(answers) if answers.len() == texts.len() => answers,
        _ => texts
            .iter()
            .map(|text| match kind {
                Kind::Query => inner.embed_query(text).map(Some),
                Kind::Document => inner.embed(&[text]).and_then(|mut v| v.pop().ok_or(EmbedError::NoVector)).map(Some),
                Kind::LayerMean(layer) => inner.layer_means(&[text], layer).map(|m| m.and_then(|mut m| m.pop())),
            })
            .collect(),
    }
}

impl Drop for BatchingEmbedder {
    fn drop(&mut self) {
        self.queue.lock().stopping = true;
        self.queue.wake.notify_all();
        if let Some(worker) = self.worker.take() {
            // The worker answers what is queued, then returns.
            let _ = worker.join();
        }
    }
}

impl Embedder for BatchingEmbedder {
    fn model_id(&self) -> &str {
        self.inner.model_id()
    }

    fn dim(&self) -> usize {
        self.inner.dim()
    }

    fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, EmbedError> {
        if texts.len() >= self.max {
            return self.inner.embed(texts);
        }
        self.vectors(Kind::Document, texts)
    }

    fn layer_means(&self, texts: &[&str], layer: usize) -> Result<Option<Vec<Vec<f32>>>, EmbedError> {
        if texts.len() >= self.max {
            return self.inner.layer_means(texts, layer);
        }
        let means = self.through_queue(Kind::LayerMean(layer), texts)?;
        // The inner embedder either sees inside its model or does not: all or none.
        Ok(means.into_iter().collect::<Option<Vec<_>>>())
    }

    fn embed_query(&self, text: &str) -> Result<Vec<f32>, EmbedError> {
        self.embed_queries(&[text])?.pop().ok_or(EmbedError::NoVector)
    }

    fn embed_queries(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, EmbedError> {
        self.vectors(Kind::Query, texts)
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};

    use super::*;

    /// A slow stand-in: the vector is `[len, first byte]`; "bad" fails; every pass sleeps.
    struct Slow {
        passes: AtomicUsize,
    }

    impl Embedder for Slow {
        fn model_id(&self) -> &str {
            "slow"
        }
        fn dim(&self) -> usize {
            2
        }
        fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, EmbedError> {
            self.embed_queries(texts)
        }
        fn embed_queries(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, EmbedError> {
            self.passes.fetch_add(1, Ordering::SeqCst);
            std::thread::sleep(Duration::from_millis(30));
            texts
                .iter()
                .map(|t| {
                    if *t == "bad" {
                        Err(EmbedError::NoVector)
                    } else {
                        Ok(vec![t.len() as f32, f32::from(t.bytes().next().unwrap_or(0))])
                    }
                })
                .collect()
        }
        fn embed_query(&self, text: &str) -> Result<Vec<f32>, EmbedError> {
            Ok(self.embed_queries(&[text])?.remove(0))
        }
        /// `[len, layer]` per text, after layer 1 to 4 only.
        fn layer_means(&self, texts: &[&str], layer: usize) -> Result<Option<Vec<Vec<f32>>>, EmbedError> {
            if !(1..=4).contains(&layer) {
                return Ok(None);
            }
            let vectors = self.embed_queries(texts)?;
            Ok(Some(vectors.into_iter().map(|v| vec![v[0], layer as f32]).collect()))
        }
    }

    #[test]
    fn concurrent_queries_share_passes_and_each_gets_its_own_vector() {
        let inner = Arc::new(Slow { passes: AtomicUsize::new(0) });
        let batching = Arc::new(BatchingEmbedder::new(inner.clone(), BatchOptions::default()).expect("worker starts"));
        let texts: Vec<String> = (0..16).map(|i| format!("{}{}", char::from(b'a' + i as u8), "x".repeat(i))).collect();
        std::thread::scope(|scope| {
            for text in &texts {
                let batching = batching.clone();
                scope.spawn(move || {
                    let vector = batching.embed_query(text).expect("embeds");
                    assert_eq!(vector, vec![text.len() as f32, f32::from(text.as_bytes()[0])], "{text}");
                });
            }
        });
        let stats = batching.stats();
        assert_eq!(stats.queries, 16);
        assert!(
            stats.batches < 16 && stats.largest >= 2,
            "queries that arrive during a pass share the next: {stats:?}"
        );
        assert_eq!(inner.passes.load(Ordering::SeqCst) as u64, stats.batches);
    }

    #[test]
    fn a_failing_text_fails_alone_and_a_large_batch_goes_straight_through() {
        let inner = Arc::new(Slow { passes: AtomicUsize::new(0) });
        let batching =
            BatchingEmbedder::new(inner.clone(), BatchOptions { max_queries: 8, window: Duration::from_millis(50) })
                .expect("worker starts");
        let results: Vec<_> = std::thread::scope(|scope| {
            let handles: Vec<_> = ["good", "bad", "fine"]
                .map(|t| {
                    let batching = &batching;
                    scope.spawn(move || batching.embed_query(t))
                })
                .into_iter()
                .collect();
            handles.into_iter().map(|h| h.join().expect("no panic")).collect()
        });
        assert_eq!(results[0].as_ref().expect("good embeds"), &vec![4.0, f32::from(b'g')]);
        assert!(matches!(results[1], Err(EmbedError::NoVector)));
        assert_eq!(results[2].as_ref().expect("fine embeds"), &vec![4.0, f32::from(b'f')]);
        // The same for documents and layer means.
        let documents: Vec<_> = std::thread::scope(|scope| {
            let handles: Vec<_> = ["doc", "bad"]
                .map(|t| {
                    let batching = &batching;
                    scope.spawn(move || batching.embed(&[t]))
                })
                .into_iter()
                .collect();
            handles.into_iter().map(|h| h.join().expect("no panic")).collect()
        });
        assert_eq!(documents[0].as_ref().expect("doc embeds"), &vec![vec![3.0, f32::from(b'd')]]);
        assert!(matches!(documents[1], Err(EmbedError::NoVector)));
        assert_eq!(batching.layer_means(&["abc"], 2).expect("means"), Some(vec![vec![3.0, 2.0]]));
        assert!(matches!(batching.layer_means(&["bad"], 2), Err(EmbedError::NoVector)));
        assert_eq!(batching.layer_means(&["abc"], 9).expect("no such layer"), None);
        // Eight texts or more are a batch already: one pass of the inner embedder, not
        // the queue's.
        let before = batching.stats();
        let passes = inner.passes.load(Ordering::SeqCst);
        let many: Vec<String> = (0..8).map(|i| format!("text {i}")).collect();
        let many: Vec<&str> = many.iter().map(String::as_str).collect();
        assert_eq!(batching.embed(&many).expect("documents embed").len(), 8);
        assert_eq!(batching.stats(), before, "a large batch bypasses the queue");
        assert_eq!(inner.passes.load(Ordering::SeqCst), passes + 1);
        assert_eq!(batching.embed_queries(&[]).expect("nothing to do"), Vec::<Vec<f32>>::new());
        assert_eq!(batching.embed(&[]).expect("nothing to do"), Vec::<Vec<f32>>::new());
    }

    #[test]
    fn concurrent_documents_and_layer_means_share_passes_and_queries_go_first() {
        let inner = Arc::new(Slow { passes: AtomicUsize::new(0) });
        let batching = Arc::new(BatchingEmbedder::new(inner.clone(), BatchOptions::default()).expect("worker starts"));
        // A pass is running (a document) while twelve documents, twelve layer means and
        // one query queue behind it.
        let first = batching.submit(Kind::Document, &["first"]);
        // Slow counts a pass as it starts it (and then sleeps 30 ms).
        while inner.passes.load(Ordering::SeqCst) == 0 {
            std::thread::yield_now();
        }
        let texts: Vec<String> = (0..12).map(|i| format!("{}{}", char::from(b'a' + i as u8), "y".repeat(i))).collect();
        let texts: Vec<&str> = texts.iter().map(String::as_str).collect();
        let documents = batching.submit(Kind::Document, &texts);
        let means = batching.submit(Kind::LayerMean(3), &texts);
        let query = batching.submit(Kind::Query, &["q"]);
        let order = Arc::new(Mutex::new(Vec::new()));
        let wait = |name: &'static str, receivers: Vec<mpsc::Receiver<Answer>>| {
            let order = order.clone();
            std::thread::spawn(move || {
                let answers: Vec<Answer> = receivers.into_iter().map(|r| r.recv().expect("answered")).collect();
                order.lock().expect("lock").push(name);
                answers
            })
        };
        let (first, documents, means, query) =
            (wait("first", first), wait("documents", documents), wait("means", means), wait("query", query));
        let documents = documents.join().expect("no panic");
        let means = means.join().expect("no panic");
        assert_eq!(query.join().expect("no panic")[0].as_ref().expect("ok"), &Some(vec![1.0, f32::from(b'q')]));
        first.join().expect("no panic");
        for ((text, document), mean) in texts.iter().zip(documents).zip(means) {
            let len = text.len() as f32;
            assert_eq!(document.expect("ok"), Some(vec![len, f32::from(text.as_bytes()[0])]), "{text}");
            assert_eq!(mean.expect("ok"), Some(vec![len, 3.0]), "{text}");
        }
        let order = order.lock().expect("lock").clone();
        assert_eq!(order[..2], ["first", "query"], "the query went before the documents queued earlier");
        let stats = batching.stats();
        assert_eq!((stats.queries, stats.documents), (1, 25));
        assert_eq!(stats.document_batches, 3, "the first, the twelve documents, the twelve means: {stats:?}");
        assert_eq!(inner.passes.load(Ordering::SeqCst), 4);
    }

    #[test]
    fn dropping_answers_what_is_queued_and_stops_the_worker() {
        let inner = Arc::new(Slow { passes: AtomicUsize::new(0) });
        let batching = BatchingEmbedder::new(inner, BatchOptions { max_queries: 1, window: Duration::ZERO })
            .expect("worker starts");
        let receivers = batching.submit(Kind::Query, &["one", "two", "three"]);
        drop(batching);
        for receiver in receivers {
            assert!(receiver.recv().expect("answered before the worker stopped").is_ok());
        }
    }
}
