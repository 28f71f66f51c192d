//! The two first-stage searches of a recall, run side by side.
//!
//! A recall asks the store for dense candidates (the vector scan) and lexical ones (BM25).
//! They read different caches and neither needs the other's answer, so they run on two
//! threads: a recall waits for the slower one instead of both. It matters most when a
//! user's caches are cold — the first recall after a server starts loads 100k vectors and
//! builds the BM25 index of 100k texts, and doing both at once halves that wait — and it
//! takes a millisecond or so off a warm 100k-memory recall. The thread costs tens of
//! microseconds, against a recall of several milliseconds at any size. Under load, when
//! every core already runs a recall, the two run one after the other instead
//! (`membank_store::parallel`).

use membank_core::Scope;
use membank_store::{EmbeddingModel, Hit, SearchFilter, Store};

use crate::EngineError;

/// Dense and lexical candidates, `limit` of each, for one query.
pub(crate) fn first_stage(
    store: &dyn Store,
    scope: &Scope,
    model: &EmbeddingModel,
    vector: &[f32],
    terms: &[String],
    filter: &SearchFilter,
    limit: usize,
) -> Result<(Vec<Hit>, Vec<Hit>), EngineError> {
    // Side by side only while a core is spare (`membank_store::parallel`): under load the
    // thread would only queue behind other recalls.
    let _working = membank_store::parallel::working();
    if terms.is_empty() || !membank_store::parallel::spare_core() {
        let dense = store.dense_search(scope, model, vector, filter, limit)?;
        let lexical = store.lexical_search(scope, terms, filter, limit)?;
        return Ok((dense, lexical));
    }
    let (dense, lexical) = std::thread::scope(|threads| {
        let lexical = threads.spawn(|| store.lexical_search(scope, terms, filter, limit));
        let dense = store.dense_search(scope, model, vector, filter, limit);
        // The lexical search only panics on a bug; pass the panic on as such.
        (dense, lexical.join().unwrap_or_else(|panic| std::panic::resume_unwind(panic)))
    });
    Ok((dense?, lexical?))
}
