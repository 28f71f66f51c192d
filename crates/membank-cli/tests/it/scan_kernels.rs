//! The dense scan's kernel paths on real vectors: the embedding crate's reference texts
//! (English, and Chinese lines of MemoryBank's kind) embedded by the real models, scored on
//! every path this CPU has (`membank_store::ScanPath`) and compared with the portable path.
//! The integer passes must agree bit for bit, the `f32` re-rank up to rounding. The unit
//! tests in the store cover random and awkward inputs; these cover the vectors a user's
//! memories actually have. A path the CPU lacks is skipped, and the test prints the
//! missing feature. The texts are the repository's own fixtures, so a fresh clone has them.

use std::path::Path;

use membank_embed::{Embedder, KnownModel, LocalEmbedder, LocalOptions};
use membank_store::ScanPath;
use membank_store::kernel_check::path_scores;

/// The non-empty texts of an embedding fixture (`{"cases": [{"text": …}, …]}`), those
/// that `keep` keeps.
fn texts(fixture: &str, keep: impl Fn(&str) -> bool) -> Vec<String> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../membank-embed/tests/fixtures").join(fixture);
    let json: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&path).unwrap_or_else(|e| panic!("reading {}: {e}", path.display())))
            .expect("fixture JSON");
    let cases = json["cases"].as_array().expect("a cases array");
    cases
        .iter()
        .filter_map(|c| c["text"].as_str())
        .filter(|t| !t.trim().is_empty() && keep(t))
        .map(str::to_string)
        .collect()
}

fn chinese(text: &str) -> bool {
    text.chars().any(|c| ('\u{4e00}'..='\u{9fff}').contains(&c))
}

fn every_path_agrees(embedder: &LocalEmbedder, sentences: &[String]) {
    let refs: Vec<&str> = sentences.iter().map(String::as_str).collect();
    let rows = embedder.embed(&refs).expect("embedding the memories");
    let mut ran = Vec::new();
    for path in ScanPath::ALL {
        if let Some(feature) = path.missing_feature() {
            eprintln!("scan path {path}: skipped, this CPU lacks {feature}");
            continue;
        }
        for (i, query) in sentences.iter().step_by(25).enumerate() {
            let query = embedder.embed_query(query).expect("embedding a query");
            let portable = path_scores(ScanPath::Portable, &rows, &query).expect("portable");
            let got = path_scores(path, &rows, &query).expect("checked");
            assert_eq!(got.int8, portable.int8, "{path}, int8, query {i}");
            assert_eq!(got.four_bit, portable.four_bit, "{path}, 4-bit, query {i}");
            for (a, b) in got.f32.iter().zip(&portable.f32) {
                assert!((a - b).abs() <= 1e-5, "{path}, f32, query {i}: {a} vs {b}");
            }
        }
        ran.push(path.name());
    }
    eprintln!("{}: scan paths run on this CPU: {}", embedder.model_id(), ran.join(", "));
}

#[test]
fn every_scan_path_scores_real_minilm_vectors_as_the_portable_one() {
    let embedder = LocalEmbedder::open(&crate::model_dir(), LocalOptions { threads: 2, ..Default::default() })
        .expect("the MiniLM model");
    let mut all = texts("minilm_reference.json", |_| true);
    all.extend(texts("e5_hf_tokenizers_reference.json", |_| true));
    assert!(all.len() > 300, "{} texts", all.len());
    every_path_agrees(&embedder, &all);
}

#[test]
fn every_scan_path_scores_real_e5_vectors_of_chinese_as_the_portable_one() {
    let dir = membank_embed::fetch::default_dir_for(KnownModel::MultilingualE5Small);
    if !dir.join("model.safetensors").exists() {
        let message = format!("multilingual-e5-small is not in {}", dir.display());
        assert!(std::env::var_os("MEMBANK_REQUIRE_E5").is_none(), "{message}");
        eprintln!("SKIPPED: {message}");
        return;
    }
    let embedder = LocalEmbedder::open(&dir, LocalOptions { threads: 2, ..Default::default() }).expect("the e5 model");
    let lines = texts("e5_hf_tokenizers_reference.json", chinese);
    assert!(lines.len() > 200, "{} Chinese texts", lines.len());
    every_path_agrees(&embedder, &lines);
}
