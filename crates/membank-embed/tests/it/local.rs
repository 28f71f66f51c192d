//! Behaviour of the local embedder at its boundary: shapes, order, normalisation, and
//! texts that must not break it.

use membank_embed::{Embedder, LocalEmbedder, LocalOptions};

use crate::support::{cosine, embedder, f32_embedder, model_dir};

#[test]
fn identity_and_dimension() {
    let embedder = embedder();
    assert_eq!(embedder.model_id(), "sentence-transformers/all-MiniLM-L6-v2");
    assert_eq!(embedder.dim(), 384);
    assert_eq!(embedder.embed(&[]).expect("empty batch"), Vec::<Vec<f32>>::new());
}

#[test]
fn hostile_texts_give_unit_vectors() {
    let long_words = "memory ".repeat(15_000);
    let long_blob = "x".repeat(100_000);
    let mixed = "日本語テキスト🙂\u{0}\u{1b}[31m".repeat(5_000);
    let control: String = (0u8..32).map(char::from).collect();
    let texts = [
        "",
        " ",
        long_words.as_str(),
        long_blob.as_str(),
        mixed.as_str(),
        control.as_str(),
        "\u{10FFFF}\u{E000}\u{FEFF}\u{202E}",
        "🙂🙂🙂👩‍🚀",
        "中文句子，测试。",
        "[CLS][SEP][PAD][MASK][UNK]",
    ];
    let vectors = embedder().embed(&texts).expect("embedding works");
    assert_eq!(vectors.len(), texts.len());
    for (text, vector) in texts.iter().zip(&vectors) {
        let norm = vector.iter().map(|x| x * x).sum::<f32>().sqrt();
        assert!(vector.iter().all(|x| x.is_finite()), "{:?}", &text[..text.len().min(20)]);
        assert!((norm - 1.0).abs() < 1e-4, "norm {norm}");
    }
    assert_eq!(embedder().token_ids(&long_words).len(), 256);
}

#[test]
fn results_keep_input_order_across_batches_and_threads() {
    // More tokens than one batch holds (about 3,000 in all), of varied lengths, so that
    // sorting, batching and both threads come into play.
    let texts: Vec<String> =
        (0..80).map(|i| format!("note {i}: {}", "we talked about the garden and the weather ".repeat(i % 9))).collect();
    let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
    let together = embedder().embed(&refs).expect("embedding works");
    let single_thread =
        LocalEmbedder::open(&model_dir(), LocalOptions { threads: 1, ..Default::default() }).expect("model loads");
    for index in [0, 1, 8, 40, 79] {
        let alone = single_thread.embed(&[refs[index]]).expect("embedding works");
        assert!(cosine(&alone[0], &together[index]) > 0.99999, "text {index}");
    }
}

#[test]
fn similar_sentences_are_closer_than_unrelated_ones() {
    let vectors = embedder()
        .embed(&["I adopted a puppy last week.", "Last week I got a new dog.", "The stock market fell sharply today."])
        .expect("embedding works");
    assert!(cosine(&vectors[0], &vectors[1]) > cosine(&vectors[0], &vectors[2]) + 0.3);
}

/// What the importance probe reads: the mean hidden state after the first `layer` layers.
/// At full depth, normalised, it is the sentence embedding (the model pools by mean); part
/// way it differs; past the model's depth there is none; a text's mean does not depend on
/// the batch it came in; hostile texts give finite vectors.
#[test]
fn layer_means_are_the_embedding_at_full_depth_and_stop_early_otherwise() {
    // Layer means take the documents' weights: f32 here, to compare with the f32 embedding.
    let embedder = f32_embedder();
    let texts = ["My sister Anna lives in Berlin.", "Thanks, that helps!", "", "中文句子，测试。"];
    let embedded = embedder.embed(&texts).expect("embedding works");
    let full = embedder.layer_means(&texts, 6).expect("runs").expect("a local model shows its layers");
    let four = embedder.layer_means(&texts, 4).expect("runs").expect("a local model shows its layers");
    assert_eq!((full.len(), four.len()), (texts.len(), texts.len()));
    for ((e, f), m) in embedded.iter().zip(&full).zip(&four) {
        assert_eq!((f.len(), m.len()), (384, 384));
        let norm = f.iter().map(|x| x * x).sum::<f32>().sqrt();
        assert!(norm > 1.5, "not normalised: {norm}");
        assert!(cosine(e, f) > 0.9999, "full depth is the embedding: {}", cosine(e, f));
        assert!(cosine(f, m) < 0.99, "layer 4 is not layer 6: {}", cosine(f, m));
        assert!(m.iter().all(|x| x.is_finite()));
    }
    let alone = embedder.layer_means(&texts[..1], 4).expect("runs").expect("layers");
    assert!(alone[0].iter().zip(&four[0]).all(|(a, b)| (a - b).abs() < 1e-4), "batch-independent");
    assert_eq!(embedder.layer_means(&texts, 7).expect("runs"), None, "MiniLM has six layers");
    assert_eq!(embedder.layer_means(&[], 4).expect("runs"), Some(Vec::new()));
    let long = "memory ".repeat(15_000);
    let hostile = embedder.layer_means(&[long.as_str(), "\u{0}\u{202E}🙂"], 3).expect("runs").expect("layers");
    assert!(hostile.iter().flatten().all(|x| x.is_finite()));
}

/// Importance estimation asks for a document's layer mean right after embedding it. Once a
/// layer has been asked for, `embed`'s own pass keeps each text's mean there, and asking
/// next gives what a pass of its own gives (texts kept and new ones mixed, in order; two
/// layers kept; a layer not kept is computed); the embeddings are the same as without it. Both weights.
#[test]
fn a_documents_layer_mean_from_its_embedding_pass_equals_its_own_pass() {
    use membank_embed::QueryPrecision;
    let texts = ["My sister Anna lives in Berlin.", "Thanks, that helps!", "中文句子，测试。", ""];
    let new = "A line that was never embedded.";
    for precision in [QueryPrecision::Int8, QueryPrecision::F32] {
        let options = LocalOptions { threads: 2, query_precision: precision, document_precision: precision };
        let open = || LocalEmbedder::open(&model_dir(), options.clone()).expect("the model loads");
        let cold = open();
        let plain = cold.embed(&texts).expect("embeds");
        let own = cold.layer_means(&texts, 4).expect("runs").expect("layers");
        let own_new = cold.layer_means(&[new], 4).expect("runs").expect("layers");
        let own_three = cold.layer_means(&texts, 3).expect("runs").expect("layers");
        let own_five = cold.layer_means(&texts, 5).expect("runs").expect("layers");

        let warm = open();
        warm.layer_means(&["asked once"], 4).expect("runs");
        warm.layer_means(&["asked once"], 3).expect("runs");
        assert_eq!(
            warm.embed(&texts).expect("embeds"),
            plain,
            "{precision:?}: the side output leaves the embedding alone"
        );
        let side = warm.layer_means(&texts, 4).expect("runs").expect("layers");
        let mixed = warm.layer_means(&[texts[1], new, texts[0]], 4).expect("runs").expect("layers");
        let three = warm.layer_means(&texts, 3).expect("runs").expect("layers");
        let five = warm.layer_means(&texts, 5).expect("runs").expect("layers");
        let close = |a: &[Vec<f32>], b: &[&Vec<f32>]| {
            a.len() == b.len()
                && a.iter()
                    .zip(b)
                    .all(|(x, y)| x.len() == 384 && x.iter().zip(y.iter()).all(|(p, q)| (p - q).abs() <= 1e-5))
        };
        assert!(close(&side, &own.iter().collect::<Vec<_>>()), "{precision:?}: kept means are the computed ones");
        assert!(close(&mixed, &[&own[1], &own_new[0], &own[0]]), "{precision:?}: mixed, in order");
        assert!(close(&three, &own_three.iter().collect::<Vec<_>>()), "{precision:?}: two layers kept");
        assert!(close(&five, &own_five.iter().collect::<Vec<_>>()), "{precision:?}: a layer not kept is computed");
    }
}

/// The query cache keys on the text with its whitespace normalised: the tokenizer must read
/// both forms the same, or a cached vector would not be the model's.
#[test]
fn whitespace_the_query_cache_normalises_does_not_change_a_query() {
    let embedder = crate::support::embedder();
    for raw in ["  what is my cat's name ", "what\tis my   cat's\nname", "\u{a0}Miso\u{2003}the cat\r\n"] {
        let normalised = membank_embed::cache::normalise_query(raw);
        assert_eq!(embedder.embed_query(raw).unwrap(), embedder.embed_query(&normalised).unwrap(), "{raw:?}");
    }
}
