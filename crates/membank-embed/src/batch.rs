//! [`BatchingEmbedder`]: micro-batching of concurrent search queries.
//!
//! A server answers many recalls at once, and each needs its query embedded: alone, every
//! query runs its own forward pass and reads every weight of the model again. Here the
//! queries of concurrent callers go to one worker thread, which takes every query waiting
//! when it becomes free (at most `max_queries`) and embeds them in one forward pass, so
//! the weights are read once per batch and the packed batch keeps the cores busy.
//!
//! Nothing waits on purpose by default: a lone query is embedded as soon as the worker
//! takes it (a thread hand-off, tens of microseconds), and queries batch up only while a
//! pass is running — which is exactly when waiting would happen anyway. `window` adds a
//! deliberate wait after the first query of a batch, for callers that prefer throughput.
//!
//! Results are exactly what the inner embedder gives each query alone, provided its
//! [`Embedder::embed_queries`] keeps each vector independent of the others in the batch
//! (the local embedder's does; its tests check bit-identity). A failed batch is retried
//! query by query, so each caller gets its own query's error. Documents (`embed`) are not
//! batched: they come in batches of their own already.
//!
//! It deliberately does not spawn more than one thread, reorder queries, or cache vectors.

use std::sync::mpsc;
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crate::{EmbedError, Embedder};

/// How a [`BatchingEmbedder`] batches.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BatchOptions {
    /// Most queries in one forward pass (at least 1; 1 turns batching off).
    pub max_queries: usize,
    /// How long the worker waits for more queries after the first of a batch; zero by
    /// default (batches form only from queries that queued during the previous pass).
    pub window: Duration,
}

impl Default for BatchOptions {
    fn default() -> Self {
        Self { max_queries: 32, window: Duration::ZERO }
    }
}

type Reply = mpsc::SyncSender<Result<Vec<f32>, EmbedError>>;

/// Queries waiting for the worker, and whether it should stop.
#[derive(Default)]
struct State {
    waiting: Vec<(String, Reply)>,
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
    /// Forward passes run.
    pub batches: u64,
    /// Queries embedded.
    pub queries: u64,
    /// Most queries in one pass so far.
    pub largest: u64,
}

/// An [`Embedder`] that embeds concurrent queries together. See the module docs.
pub struct BatchingEmbedder {
    inner: Arc<dyn Embedder>,
    queue: Arc<Queue>,
    stats: Arc<Mutex<BatchStats>>,
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
        Ok(Self { inner, queue, stats, worker: Some(worker) })
    }

    /// The counters so far.
    pub fn stats(&self) -> BatchStats {
        *self.stats.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn submit(&self, texts: &[&str]) -> Vec<mpsc::Receiver<Result<Vec<f32>, EmbedError>>> {
        let mut receivers = Vec::with_capacity(texts.len());
        let mut state = self.queue.lock();
        for text in texts {
            let (reply, receiver) = mpsc::sync_channel(1);
            state.waiting.push(((*text).to_owned(), reply));
            receivers.push(receiver);
        }
        drop(state);
        self.queue.wake.notify_one();
        receivers
    }
}

/// The worker: take what is waiting, embed it in one pass, answer, repeat.
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
        let take = state.waiting.len().min(max);
        let batch: Vec<(String, Reply)> = state.waiting.drain(..take).collect();
        drop(state);

        let texts: Vec<&str> = batch.iter().map(|(text, _)| text.as_str()).collect();
        let answers: Vec<Result<Vec<f32>, EmbedError>> = match inner.embed_queries(&texts) {
            Ok(vectors) if vectors.len() == batch.len() => vectors.into_iter().map(Ok).collect(),
            // One bad query must not fail the others: each gets its own answer.
            _ => texts.iter().map(|text| inner.embed_query(text)).collect(),
        };
        // Counted before anyone is answered, so a caller that reads the counters after its
        // answer sees its own batch in them.
        {
            let mut counters = stats.lock().unwrap_or_else(PoisonError::into_inner);
            counters.batches += 1;
            counters.queries += batch.len() as u64;
            counters.largest = counters.largest.max(batch.len() as u64);
        }
        for ((_, reply), answer) in batch.iter().zip(answers) {
            // A caller that gave up (dropped its receiver) is no one's concern.
            let _ = reply.send(answer);
        }
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
        self.inner.embed(texts)
    }

    fn layer_means(&self, texts: &[&str], layer: usize) -> Result<Option<Vec<Vec<f32>>>, EmbedError> {
        self.inner.layer_means(texts, layer)
    }

    fn embed_query(&self, text: &str) -> Result<Vec<f32>, EmbedError> {
        self.embed_queries(&[text])?.pop().ok_or(EmbedError::NoVector)
    }

    fn embed_queries(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, EmbedError> {
        self.submit(texts)
            .into_iter()
            // The worker answers every query it takes; a closed channel means it is gone.
            .map(|receiver| receiver.recv().unwrap_or(Err(EmbedError::NoVector)))
            .collect()
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
    fn a_failing_query_fails_alone_and_documents_are_not_batched() {
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
        let before = batching.stats();
        batching.embed(&["doc"]).expect("documents embed");
        assert_eq!(batching.stats(), before, "documents bypass the queue");
        assert_eq!(batching.embed_queries(&[]).expect("nothing to do"), Vec::<Vec<f32>>::new());
    }

    #[test]
    fn dropping_answers_what_is_queued_and_stops_the_worker() {
        let inner = Arc::new(Slow { passes: AtomicUsize::new(0) });
        let batching = BatchingEmbedder::new(inner, BatchOptions { max_queries: 1, window: Duration::ZERO })
            .expect("worker starts");
        let receivers = batching.submit(&["one", "two", "three"]);
        drop(batching);
        for receiver in receivers {
            assert!(receiver.recv().expect("answered before the worker stopped").is_ok());
        }
    }
}
