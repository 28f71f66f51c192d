//! The local embedder against vectors made by the real sentence-transformers library
//! (fixture `tests/fixtures/minilm_reference.json`, written by
//! `bench/embed/make_reference.py`): token ids must be identical, vectors must have cosine
//! at least 0.999 — in practice they agree to about 1e-6.

use membank_embed::Embedder;
use serde::Deserialize;

use crate::support::{cosine, embedder, f32_embedder};

#[derive(Deserialize)]
struct Fixture {
    cases: Vec<Case>,
}

#[derive(Deserialize)]
struct Case {
    text: String,
    token_ids: Vec<u32>,
    vector: Vec<f32>,
}

fn fixture() -> Fixture {
    let json = include_str!("../fixtures/minilm_reference.json");
    serde_json::from_str(json).expect("fixture parses")
}

#[test]
fn token_ids_match_hugging_face() {
    let embedder = embedder();
    for case in fixture().cases {
        assert_eq!(embedder.token_ids(&case.text), case.token_ids, "token ids of {:?}", case.text);
    }
}

#[test]
fn vectors_match_sentence_transformers() {
    let embedder = f32_embedder();
    let cases = fixture().cases;
    assert!(cases.len() >= 20);
    let texts: Vec<&str> = cases.iter().map(|c| c.text.as_str()).collect();
    let vectors = embedder.embed(&texts).expect("embedding works");
    let mut worst = (f32::MAX, "");
    for (case, vector) in cases.iter().zip(&vectors) {
        assert_eq!(vector.len(), 384);
        let similarity = cosine(vector, &case.vector);
        if similarity < worst.0 {
            worst = (similarity, case.text.as_str());
        }
    }
    eprintln!("minimum cosine to sentence-transformers: {} ({:?})", worst.0, worst.1);
    assert!(worst.0 >= 0.999, "cosine {} for {:?}", worst.0, worst.1);
}

#[test]
fn one_at_a_time_equals_batched() {
    let embedder = embedder();
    let cases = fixture().cases;
    let texts: Vec<&str> = cases.iter().map(|c| c.text.as_str()).collect();
    let batched = embedder.embed(&texts).expect("embedding works");
    for (text, expected) in texts.iter().zip(&batched) {
        let single = embedder.embed(&[text]).expect("embedding works");
        assert!(cosine(&single[0], expected) > 0.99999, "{text:?}");
    }
}

/// The int8 path (the default, queries and documents) against the f32 reference: every
/// reference sentence at cosine ≥ 0.999 to sentence-transformers' vector, and a query's
/// vector is the same alone as inside a batch of queries (what `serve`'s micro-batching
/// relies on).
#[test]
fn int8_queries_agree_with_f32_and_do_not_depend_on_the_batch() {
    let int8 = embedder();
    assert_eq!(int8.query_precision(), membank_embed::QueryPrecision::Int8);
    // Documents take the int8 path only where the CPU has VNNI or AMX.
    let paths = membank_embed::kernel_paths();
    let int8_documents = paths.int8.contains("vnni") || paths.int8.contains("amx");
    eprintln!("kernel paths: {paths}; int8 documents: {int8_documents}");
    assert_eq!(int8.document_precision() == membank_embed::QueryPrecision::Int8, int8_documents);
    let cases = fixture().cases;
    let texts: Vec<&str> = cases.iter().map(|c| c.text.as_str()).collect();
    let batched = int8.embed_queries(&texts).expect("embedding works");
    let mut worst = (f32::MAX, "");
    for ((case, text), vector) in cases.iter().zip(&texts).zip(&batched) {
        let alone = int8.embed_query(text).expect("embedding works");
        assert_eq!(&alone, vector, "{text:?} alone and in a batch");
        let similarity = cosine(vector, &case.vector);
        if similarity < worst.0 {
            worst = (similarity, case.text.as_str());
        }
    }
    eprintln!("int8 queries: minimum cosine to sentence-transformers {} ({:?})", worst.0, worst.1);
    assert!(worst.0 >= 0.999, "cosine {} for {:?}", worst.0, worst.1);
    // Documents on the int8 path are the queries' vectors (all-MiniLM-L6-v2 has no
    // prefixes), else the f32 reference's.
    let documents = int8.embed(&texts).expect("embedding works");
    if int8_documents {
        assert_eq!(documents, batched, "documents and queries");
    } else {
        assert_eq!(documents, f32_embedder().embed(&texts).expect("embedding works"), "f32 documents");
    }
    // More text against our own f32 path (which matches sentence-transformers, above): 150
    // of the English and Chinese utterances of the e5 tokenizer fixture.
    #[derive(Deserialize)]
    struct Texts {
        cases: Vec<Text>,
    }
    #[derive(Deserialize)]
    struct Text {
        text: String,
    }
    let more: Texts =
        serde_json::from_str(include_str!("../fixtures/e5_hf_tokenizers_reference.json")).expect("fixture parses");
    assert!(more.cases.len() >= 100);
    let texts: Vec<&str> = more.cases.iter().map(|c| c.text.as_str()).take(150).collect();
    let queries = int8.embed_queries(&texts).expect("embedding works");
    let reference = f32_embedder().embed(&texts).expect("embedding works");
    let worst = queries.iter().zip(&reference).map(|(q, r)| cosine(q, r)).fold(f32::MAX, f32::min);
    eprintln!("int8: minimum cosine to the f32 path over {} utterances {worst}", texts.len());
    assert!(worst >= 0.999, "cosine {worst}");
}

/// What `serve`'s micro-batcher relies on for stored memories: on the int8 path (documents
/// take it where the CPU has VNNI or AMX) a document's vector and the importance probe's
/// layer mean of a text are the same alone as inside a batch of others, bit for bit. On the
/// f32 path the documents agree to cosine 0.99999 (`one_at_a_time_equals_batched`).
#[test]
fn int8_documents_and_layer_means_do_not_depend_on_the_batch() {
    let int8 = embedder();
    let texts: Vec<String> = fixture().cases.into_iter().map(|c| c.text).collect();
    let texts: Vec<&str> = texts.iter().map(String::as_str).collect();
    // Layer means are computed (nothing was embedded as a document yet that could answer
    // them from its side output), alone and in a batch, on whichever path documents take.
    let batched = int8.layer_means(&texts, 4).expect("runs").expect("the local model shows its layers");
    for (text, mean) in texts.iter().zip(&batched) {
        let alone = int8.layer_means(&[text], 4).expect("runs").expect("layers");
        if int8.document_precision() == membank_embed::QueryPrecision::Int8 {
            assert_eq!(&alone[0], mean, "{text:?}: layer mean alone and in a batch");
        } else {
            assert!(cosine(&alone[0], mean) > 0.99999, "{text:?}");
        }
    }
    if int8.document_precision() != membank_embed::QueryPrecision::Int8 {
        eprintln!("documents take the f32 path on this CPU (no VNNI or AMX): bit-identity not expected");
        return;
    }
    let documents = int8.embed(&texts).expect("embedding works");
    for (text, vector) in texts.iter().zip(&documents) {
        assert_eq!(&int8.embed(&[text]).expect("embeds")[0], vector, "{text:?}: document alone and in a batch");
    }
}
