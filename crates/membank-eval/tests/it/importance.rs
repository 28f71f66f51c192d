//! The shipped importance probe on the local embedding models, on the cases the lexical
//! estimator got wrong: negation, Chinese, questions to the assistant, and thanks. Needs the
//! models under `membank_embed::fetch::default_model_dir()`'s parent; skips without them.

use membank_core::salience::{PROBE_VERSION, estimate_importance_with, probe_text};
use membank_embed::{Embedder, LocalEmbedder, LocalOptions};

fn embedder(dir: &str) -> Option<LocalEmbedder> {
    let root = membank_embed::fetch::default_model_dir().parent()?.to_path_buf();
    match LocalEmbedder::open(&root.join(dir), LocalOptions::default()) {
        Ok(embedder) => Some(embedder),
        Err(err) => {
            eprintln!("skipping: {dir} is not installed ({err})");
            None
        }
    }
}

fn scores(embedder: &LocalEmbedder, texts: &[&str]) -> Vec<f64> {
    // The probe reads the embedding of the person's words, as the engine passes it.
    let words: Vec<&str> = texts.iter().map(|t| probe_text(t)).collect();
    let vectors = embedder.embed(&words).unwrap();
    texts
        .iter()
        .zip(&vectors)
        .map(|(text, v)| {
            let (p, version) = estimate_importance_with(text, embedder.model_id(), Some(v));
            assert_eq!(version, PROBE_VERSION, "{}", embedder.model_id());
            assert!((0.0..=1.0).contains(&p));
            eprintln!("{p:.3}  {text:?}");
            p
        })
        .collect()
}

#[test]
fn english_probe_keeps_facts_and_drops_thanks_and_generic_questions() {
    let Some(embedder) = embedder("all-MiniLM-L6-v2") else { return };
    let high = scores(
        &embedder,
        &[
            "User: I don't have any siblings, I grew up as an only child.\nAssistant: That must have shaped you.",
            "I don't have any siblings.",
            "I'm allergic to peanuts, so please keep that in mind.",
            "My daughter Emma starts school in Boston next September.",
        ],
    );
    let low = scores(
        &embedder,
        &[
            "User: Can you recommend some books?\nAssistant: Sure, here are a few classics.",
            "User: Great. Thank you very much for your help. I will study them.\nAssistant: You're welcome!",
            "User: Hello! How are you today?\nAssistant: I'm fine, thanks.",
        ],
    );
    let lowest_high = high.iter().copied().fold(f64::INFINITY, f64::min);
    let highest_low = low.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    assert!(lowest_high > highest_low, "high {high:?} vs low {low:?}");
    // Above the tuning set's base rate of critical turns (about .4), and far below it.
    assert!(lowest_high > 0.4 && highest_low < 0.2, "high {high:?} vs low {low:?}");
}

#[test]
fn chinese_probe_keeps_facts_and_drops_small_talk() {
    let Some(embedder) = embedder("multilingual-e5-small") else { return };
    let high = scores(
        &embedder,
        &[
            "User: 我对花生过敏，一吃就会呼吸困难。\nAssistant: 好的，我会记住的。",
            "User: 我没有兄弟姐妹，我是独生子。\nAssistant: 明白了。",
            "User: 我女儿下个月在上海结婚。\nAssistant: 恭喜你！",
        ],
    );
    let low = scores(
        &embedder,
        &[
            "User: 你好！\nAssistant: 你好，有什么可以帮你的吗？",
            "User: 非常感谢你的帮助，我会好好学习的。\nAssistant: 不客气！",
            "User: 你能推荐几本书吗？\nAssistant: 当然，这里有几本经典作品。",
        ],
    );
    let lowest_high = high.iter().copied().fold(f64::INFINITY, f64::min);
    let highest_low = low.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    assert!(lowest_high > highest_low, "high {high:?} vs low {low:?}");
}
