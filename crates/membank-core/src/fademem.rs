//! FadeMem adaptive forgetting (Wei et al. 2026, arXiv 2601.18642 v1), the second
//! forgetting policy beside MemoryBank's curve.
//!
//! Each memory has an **importance** `I = w·b + α·rel + β·f/(1+f) + γ·exp(-δ·age)` in
//! [0, 1]: `b` its base importance at ingestion (given by the caller, rated by an LLM, or
//! estimated from its text), `rel` its relevance to what the person has been asking lately
//! (the best cosine to the user's recent recall queries), `f` a time-decayed count of its
//! recalls, and `age` the days since it happened. The four weights sum to 1, so `I` stays in
//! [0, 1] whatever the inputs.
//!
//! Importance moves a memory between two **layers** with hysteresis: up to the long-term
//! layer at `I ≥ θ_promote`, back to the short-term layer only at `I < θ_demote`.
//!
//! Its **strength** decays as `v(t) = v0·exp(-λ·Δt^β)` with `v0 = 1`, `λ = λ_base·exp(-μ·I)·k`,
//! where `k` is the memory's own decay factor (1, or more for the loser of a conflict, less
//! for a fused memory), `β < 1` in the long-term layer (sub-linear: slow) and `β > 1` in the
//! short-term layer. `Δt` is the memory's **effective age** in days: the days since its last
//! access plus the age it kept through that access (`fade_age`, 0 for a new memory). A
//! recall reinforces it with diminishing returns, `v ← v + Δv·(1 − v)·exp(−n/N)` with `n` the
//! recent accesses, restarts the access clock, and sets the kept age to the age at which the
//! curve has the reinforced value: the memory goes on along the same curve from a younger
//! point. (The literal reading — restart at `Δt = 0` with `v0 = v` — makes a recall *hurt*
//! in the long-term layer, because `β < 1` decays fastest right after `Δt = 0`; a property
//! test found that, and this form can never shorten survival, whatever `β`.) Below `ε` a
//! memory is archived.
//!
//! **Published defaults.** λ_base = 0.1, β = 0.8 (long) and 1.2 (short), θ_promote = 0.7,
//! θ_demote = 0.3 and the fusion similarity 0.75 are FadeMem's. The half-life at `I = 0`
//! follows from `v0·exp(-λ·t^β) = v0/2`:
//! `t½ = (ln 2 / λ)^(1/β)`; `ln 2 / 0.1 = 6.931`;
//! long-term `6.931^(1/0.8) = exp(1.25 · 1.9361) = exp(2.4201) ≈ 11.25 days`;
//! short-term `6.931^(1/1.2) = exp(0.8333 · 1.9361) = exp(1.6134) ≈ 5.02 days` —
//! FadeMem's published 11.25 and 5.02 days. Importance lengthens both: at `I = 1` with
//! μ = 1.5, `λ` is `e^1.5 ≈ 4.5` times smaller.
//! The paper leaves the importance weights, δ, μ, Δv, N, ε and the similarity thresholds
//! open; ours are documented on [`FadeMemParams`] with the reason for each.
//!
//! Everything here is a function of `(state, inputs, now)`, like the MemoryBank curve.

use crate::error::InvalidInput;
use crate::state::{ForgettingState, Layer};
use crate::time::Timestamp;

/// One day in milliseconds: FadeMem's time unit.
const DAY_MS: f64 = 86_400_000.0;

/// FadeMem's parameters (the `[forgetting.fademem]` table).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct FadeMemParams {
    /// `w`: weight of the base importance at ingestion. Default 0.35: what the person
    /// stated matters most before any recall has shown it is used.
    pub base_weight: f64,
    /// `α`: weight of relevance to recent queries. Default 0.25.
    pub relevance_weight: f64,
    /// `β` of the importance formula: weight of recall frequency `f/(1+f)`. Default 0.25.
    pub frequency_weight: f64,
    /// `γ`: weight of recency `exp(-δ·age)`. Default 0.15.
    pub recency_weight: f64,
    /// `δ` per day. Default `ln 2 / 7`: recency halves each week.
    pub recency_rate: f64,
    /// Half-life in days of the recall count `f` (a recall a month ago counts for less than
    /// one yesterday). Default 14: two weeks, the span of a "recent window".
    pub frequency_half_life_days: f64,
    /// θ_promote: importance at which a memory enters the long-term layer (FadeMem: 0.7).
    pub promote: f64,
    /// θ_demote: importance below which a long-term memory returns to short-term (FadeMem: 0.3).
    pub demote: f64,
    /// λ_base per day (FadeMem: 0.1).
    pub lambda_base: f64,
    /// μ: how strongly importance slows decay, `λ = λ_base·exp(-μ·I)`. Default 1.5: an
    /// important memory (I = 1) decays about 4.5 times slower.
    pub importance_modulation: f64,
    /// β in the long-term layer (FadeMem: 0.8, sub-linear).
    pub beta_long: f64,
    /// β in the short-term layer (FadeMem: 1.2, super-linear).
    pub beta_short: f64,
    /// ε: strength below which a memory is archived. Default 0.05, the MemoryBank
    /// policy's θ, so both policies archive at the same retention.
    pub epsilon: f64,
    /// Δv: how much of the missing strength a recall restores. Default 0.5.
    pub reinforcement: f64,
    /// N: recent accesses at which reinforcement has fallen to 1/e. Default 5.
    pub reinforcement_saturation: f64,
    /// Cosine at or above which two memories of one user are near-duplicate candidates
    /// (their texts must also say the same thing). Default 0.95.
    pub duplicate_similarity: f64,
    /// Word overlap (Jaccard over lowercase terms) at or above which two near-duplicate
    /// candidates say the same thing. Default 0.8: in a five-word sentence one changed word
    /// ("I live in Paris" / "… Berlin") already falls below it, so a changed fact is a
    /// conflict candidate, never a duplicate.
    pub duplicate_overlap: f64,
    /// Cosine above which memories cluster for fusion (FadeMem: 0.75).
    pub fusion_similarity: f64,
    /// Days within which memories may be fused together. Default 7.
    pub fusion_window_days: f64,
    /// Upper end of the consolidation band: memories with `ε ≤ v < this` are fused.
    /// Default 0.35 (the widely used recipe's band is 0.15–0.35).
    pub consolidation_threshold: f64,
    /// Cosine at or above which two differing memories are a conflict candidate. Default 0.8.
    pub conflict_similarity: f64,
    /// Decay-rate factor of the loser of a conflict. Default 3 (the recipe's "×3").
    pub conflict_decay_factor: f64,
    /// How many recent recall queries per user relevance is measured against. Default 16.
    pub recent_queries: usize,
}

impl Default for FadeMemParams {
    fn default() -> Self {
        Self {
            base_weight: 0.35,
            relevance_weight: 0.25,
            frequency_weight: 0.25,
            recency_weight: 0.15,
            recency_rate: std::f64::consts::LN_2 / 7.0,
            frequency_half_life_days: 14.0,
            promote: 0.7,
            demote: 0.3,
            lambda_base: 0.1,
            importance_modulation: 1.5,
            beta_long: 0.8,
            beta_short: 1.2,
            epsilon: 0.05,
            reinforcement: 0.5,
            reinforcement_saturation: 5.0,
            duplicate_similarity: 0.95,
            duplicate_overlap: 0.8,
            fusion_similarity: 0.75,
            fusion_window_days: 7.0,
            consolidation_threshold: 0.35,
            conflict_similarity: 0.8,
            conflict_decay_factor: 3.0,
            recent_queries: 16,
        }
    }
}

/// What importance is computed from, besides the memory's own state.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ImportanceInputs {
    /// Best cosine to the user's recent recall queries (0 when there are none); clipped to [0, 1].
    pub relevance: f64,
    /// Days since the memory happened.
    pub age_days: f64,
}

/// The numbers behind one memory's FadeMem strength now.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Decay {
    /// The effective age in days: the age kept at the last access plus the days since.
    pub elapsed_days: f64,
    /// The decay rate λ in force.
    pub lambda: f64,
    /// The exponent β of the memory's layer.
    pub beta: f64,
    /// v(t).
    pub strength: f64,
}

impl FadeMemParams {
    /// Checks every parameter, naming the one that is wrong.
    pub fn validate(&self) -> Result<(), InvalidInput> {
        let unit = |name: &'static str, value: f64| {
            if (0.0..=1.0).contains(&value) {
                Ok(())
            } else {
                Err(InvalidInput::new(name, format!("{value} must lie in [0, 1]")))
            }
        };
        let positive = |name: &'static str, value: f64| {
            if value.is_finite() && value > 0.0 {
                Ok(())
            } else {
                Err(InvalidInput::new(name, format!("{value} must be a finite number above 0")))
            }
        };
        let non_negative = |name: &'static str, value: f64| {
            if value.is_finite() && value >= 0.0 {
                Ok(())
            } else {
                Err(InvalidInput::new(name, format!("{value} must be a finite number of at least 0")))
            }
        };
        unit("forgetting.fademem.base_weight", self.base_weight)?;
        unit("forgetting.fademem.relevance_weight", self.relevance_weight)?;
        unit("forgetting.fademem.frequency_weight", self.frequency_weight)?;
        unit("forgetting.fademem.recency_weight", self.recency_weight)?;
        let sum = self.base_weight + self.relevance_weight + self.frequency_weight + self.recency_weight;
        if (sum - 1.0).abs() > 1e-6 {
            return Err(InvalidInput::new(
                "forgetting.fademem.base_weight",
                format!("the four importance weights (base, relevance, frequency, recency) must sum to 1, not {sum}"),
            ));
        }
        non_negative("forgetting.fademem.recency_rate", self.recency_rate)?;
        positive("forgetting.fademem.frequency_half_life_days", self.frequency_half_life_days)?;
        unit("forgetting.fademem.promote", self.promote)?;
        unit("forgetting.fademem.demote", self.demote)?;
        if self.demote > self.promote {
            return Err(InvalidInput::new(
                "forgetting.fademem.demote",
                format!("θ_demote ({}) must not exceed θ_promote ({})", self.demote, self.promote),
            ));
        }
        positive("forgetting.fademem.lambda_base", self.lambda_base)?;
        non_negative("forgetting.fademem.importance_modulation", self.importance_modulation)?;
        positive("forgetting.fademem.beta_long", self.beta_long)?;
        positive("forgetting.fademem.beta_short", self.beta_short)?;
        if self.beta_long > self.beta_short {
            return Err(InvalidInput::new(
                "forgetting.fademem.beta_long",
                format!(
                    "the long-term exponent ({}) must not exceed the short-term one ({})",
                    self.beta_long, self.beta_short
                ),
            ));
        }
        if !(self.epsilon > 0.0 && self.epsilon < 1.0) {
            return Err(InvalidInput::new(
                "forgetting.fademem.epsilon",
                format!("{} must lie strictly between 0 and 1", self.epsilon),
            ));
        }
        unit("forgetting.fademem.reinforcement", self.reinforcement)?;
        positive("forgetting.fademem.reinforcement_saturation", self.reinforcement_saturation)?;
        unit("forgetting.fademem.duplicate_similarity", self.duplicate_similarity)?;
        unit("forgetting.fademem.duplicate_overlap", self.duplicate_overlap)?;
        unit("forgetting.fademem.fusion_similarity", self.fusion_similarity)?;
        non_negative("forgetting.fademem.fusion_window_days", self.fusion_window_days)?;
        unit("forgetting.fademem.consolidation_threshold", self.consolidation_threshold)?;
        if self.consolidation_threshold < self.epsilon {
            return Err(InvalidInput::new(
                "forgetting.fademem.consolidation_threshold",
                format!("{} must not be below ε ({})", self.consolidation_threshold, self.epsilon),
            ));
        }
        unit("forgetting.fademem.conflict_similarity", self.conflict_similarity)?;
        if !(self.conflict_decay_factor.is_finite() && self.conflict_decay_factor >= 1.0) {
            return Err(InvalidInput::new(
                "forgetting.fademem.conflict_decay_factor",
                format!("{} must be a finite number of at least 1", self.conflict_decay_factor),
            ));
        }
        if self.recent_queries == 0 || self.recent_queries > 1024 {
            return Err(InvalidInput::new(
                "forgetting.fademem.recent_queries",
                format!("{} must be between 1 and 1024", self.recent_queries),
            ));
        }
        Ok(())
    }

    /// The recall count `f` decayed to `now` (it is stored as of the last access).
    pub fn frequency_now(&self, state: &ForgettingState, now: Timestamp) -> f64 {
        let days = days_between(state.last_recalled_at, now);
        (state.access_frequency * (-std::f64::consts::LN_2 * days / self.frequency_half_life_days).exp()).max(0.0)
    }

    /// `I = w·b + α·rel + β·f/(1+f) + γ·exp(-δ·age)`, in [0, 1].
    pub fn importance(&self, state: &ForgettingState, inputs: ImportanceInputs, now: Timestamp) -> f64 {
        let base = clip01(state.base_importance);
        let relevance = clip01(inputs.relevance);
        let frequency = self.frequency_now(state, now);
        let age = if inputs.age_days.is_nan() { 0.0 } else { inputs.age_days.max(0.0) };
        let value = self.base_weight * base
            + self.relevance_weight * relevance
            + self.frequency_weight * (frequency / (1.0 + frequency))
            + self.recency_weight * (-self.recency_rate * age).exp();
        clip01(value)
    }

    /// The layer after an importance update, with hysteresis.
    pub fn next_layer(&self, current: Layer, importance: f64) -> Layer {
        match current {
            Layer::Short if importance >= self.promote => Layer::Long,
            Layer::Long if importance < self.demote => Layer::Short,
            layer => layer,
        }
    }

    /// The exponent β of a layer.
    pub fn beta(&self, layer: Layer) -> f64 {
        match layer {
            Layer::Long => self.beta_long,
            Layer::Short => self.beta_short,
        }
    }

    /// λ for a memory of this importance and decay factor.
    pub fn lambda(&self, importance: f64, decay_factor: f64) -> f64 {
        let factor = if decay_factor.is_finite() && decay_factor > 0.0 { decay_factor } else { 1.0 };
        self.lambda_base * (-self.importance_modulation * clip01(importance)).exp() * factor
    }

    /// `v = exp(-λ·Δt^β)` at the memory's effective age, with its stored importance and layer.
    pub fn decay(&self, state: &ForgettingState, now: Timestamp) -> Decay {
        let elapsed_days = kept_age(state) + days_between(state.last_recalled_at, now);
        let lambda = self.lambda(state.importance, state.decay_factor);
        let beta = self.beta(state.layer);
        let strength = if state.pinned { 1.0 } else { clip01((-lambda * elapsed_days.powf(beta)).exp()) };
        Decay { elapsed_days, lambda, beta, strength }
    }

    /// The effective age at which the curve of this importance, decay factor and layer has
    /// strength `v` (0 for `v ≥ 1`).
    pub fn age_at(&self, state: &ForgettingState, v: f64) -> f64 {
        if v >= 1.0 || v.is_nan() {
            return 0.0;
        }
        let lambda = self.lambda(state.importance, state.decay_factor);
        ((1.0 / v.max(f64::MIN_POSITIVE)).ln() / lambda).powf(1.0 / self.beta(state.layer))
    }

    /// Days from the last access until `v` falls below ε, if never recalled again (infinite
    /// for pinned memories; 0 when it is already below).
    pub fn days_until_archived(&self, state: &ForgettingState) -> f64 {
        if state.pinned {
            return f64::INFINITY;
        }
        (self.age_at(state, self.epsilon) - kept_age(state)).max(0.0)
    }

    /// The state after an access (a strengthening recall) at `now`: `v` reinforced with
    /// diminishing returns and the kept age set to where the curve has that value, `f` one
    /// higher, the access clock restarted. A recall dated before the last one never moves
    /// the clock backwards.
    pub fn reinforce(&self, state: &ForgettingState, now: Timestamp) -> ForgettingState {
        let decay = self.decay(state, now);
        let current = decay.strength;
        let recent = self.frequency_now(state, now);
        let gain = self.reinforcement * (1.0 - current) * (-recent / self.reinforcement_saturation).exp();
        let reinforced = clip01(current + gain).max(current);
        ForgettingState {
            fade_age: self.age_at(state, reinforced).min(decay.elapsed_days),
            access_frequency: recent + 1.0,
            last_recalled_at: state.last_recalled_at.max(now),
            ..*state
        }
    }
}

/// The effective age a memory kept through its last access, in days (never negative).
fn kept_age(state: &ForgettingState) -> f64 {
    if state.fade_age.is_finite() { state.fade_age.max(0.0) } else { 0.0 }
}

/// Days from `from` to `to`; 0 when `to` is not later.
pub fn days_between(from: Timestamp, to: Timestamp) -> f64 {
    let ms = (to - from).num_milliseconds();
    if ms <= 0 { 0.0 } else { ms as f64 / DAY_MS }
}

fn clip01(x: f64) -> f64 {
    if x.is_nan() { 0.0 } else { x.clamp(0.0, 1.0) }
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::{Duration, TimeZone};
    use proptest::prelude::*;

    fn t0() -> Timestamp {
        chrono::Utc.with_ymd_and_hms(2024, 1, 1, 0, 0, 0).unwrap()
    }

    fn state(importance: f64, layer: Layer) -> ForgettingState {
        ForgettingState { importance, layer, ..ForgettingState::new(t0()) }
    }

    fn v(p: &FadeMemParams, s: &ForgettingState, days: f64) -> f64 {
        p.decay(s, t0() + Duration::milliseconds((days * DAY_MS) as i64)).strength
    }

    #[test]
    fn half_lives_match_the_published_ones() {
        let p = FadeMemParams::default();
        let long = (std::f64::consts::LN_2 / p.lambda(0.0, 1.0)).powf(1.0 / p.beta_long);
        let short = (std::f64::consts::LN_2 / p.lambda(0.0, 1.0)).powf(1.0 / p.beta_short);
        assert!((long - 11.25).abs() < 0.01, "{long}");
        assert!((short - 5.02).abs() < 0.01, "{short}");
        assert!((v(&p, &state(0.0, Layer::Long), long) - 0.5).abs() < 1e-6);
        assert!((v(&p, &state(0.0, Layer::Short), short) - 0.5).abs() < 1e-6);
    }

    #[test]
    fn days_until_archived_agrees_with_the_curve() {
        let p = FadeMemParams::default();
        for (importance, layer) in [(0.0, Layer::Short), (0.4, Layer::Short), (0.8, Layer::Long)] {
            let s = state(importance, layer);
            let days = p.days_until_archived(&s);
            assert!(v(&p, &s, days * 0.999) >= p.epsilon);
            assert!(v(&p, &s, days * 1.001) < p.epsilon);
        }
    }

    #[test]
    fn hysteresis_between_layers() {
        let p = FadeMemParams::default();
        assert_eq!(p.next_layer(Layer::Short, 0.69), Layer::Short);
        assert_eq!(p.next_layer(Layer::Short, 0.7), Layer::Long);
        assert_eq!(p.next_layer(Layer::Long, 0.5), Layer::Long);
        assert_eq!(p.next_layer(Layer::Long, 0.29), Layer::Short);
    }

    #[test]
    fn bad_parameters_are_named() {
        let cases: Vec<(FadeMemParams, &str)> = vec![
            (FadeMemParams { demote: 0.8, ..Default::default() }, "demote"),
            (FadeMemParams { lambda_base: -0.1, ..Default::default() }, "lambda_base"),
            (FadeMemParams { epsilon: 1.5, ..Default::default() }, "epsilon"),
            (FadeMemParams { promote: 1.2, ..Default::default() }, "promote"),
            (FadeMemParams { base_weight: 0.9, ..Default::default() }, "base_weight"),
            (FadeMemParams { conflict_decay_factor: 0.5, ..Default::default() }, "conflict_decay_factor"),
            (FadeMemParams { beta_long: f64::NAN, ..Default::default() }, "beta_long"),
        ];
        for (params, name) in cases {
            let err = params.validate().unwrap_err();
            assert!(err.field.contains(name), "{name}: {err}");
        }
        FadeMemParams::default().validate().unwrap();
    }

    proptest! {
        #[test]
        fn strength_falls_with_time(i in 0f64..=1.0, long in any::<bool>(), d in 0f64..400.0, dd in 1e-3f64..100.0) {
            let p = FadeMemParams::default();
            let s = state(i, if long { Layer::Long } else { Layer::Short });
            prop_assert!(v(&p, &s, d + dd) <= v(&p, &s, d));
            prop_assert!((0.0..=1.0).contains(&v(&p, &s, d)));
        }

        #[test]
        fn strength_rises_with_importance(i in 0f64..1.0, di in 1e-3f64..1.0, long in any::<bool>(), d in 0f64..400.0) {
            let p = FadeMemParams::default();
            let layer = if long { Layer::Long } else { Layer::Short };
            let more = (i + di).min(1.0);
            prop_assert!(v(&p, &state(more, layer), d) >= v(&p, &state(i, layer), d));
            prop_assert!(p.days_until_archived(&state(more, layer)) >= p.days_until_archived(&state(i, layer)));
        }

        /// Recalling at any moment never makes the memory weaker at any later moment.
        #[test]
        fn a_recall_never_shortens_survival(i in 0f64..=1.0, long in any::<bool>(), recall_after in 0f64..60.0, probe_after in 0f64..200.0, prior in 0u32..20) {
            let p = FadeMemParams::default();
            let mut s = state(i, if long { Layer::Long } else { Layer::Short });
            s.access_frequency = f64::from(prior);
            let recall_at = t0() + Duration::milliseconds((recall_after * DAY_MS) as i64);
            let after = p.reinforce(&s, recall_at);
            let probe = recall_at + Duration::milliseconds((probe_after * DAY_MS) as i64);
            prop_assert!(p.decay(&after, probe).strength >= p.decay(&s, probe).strength);
            prop_assert!(after.access_frequency > p.frequency_now(&s, recall_at));
            // And importance never falls because of a recall.
            let inputs = ImportanceInputs { relevance: 0.3, age_days: recall_after };
            prop_assert!(p.importance(&after, inputs, recall_at) >= p.importance(&s, inputs, recall_at));
        }

        /// At equal importance the long-term layer keeps a memory longer: from the first
        /// day on its strength is at least the short-term one's, and it is archived later.
        #[test]
        fn long_term_outlives_short_term(i in 0f64..=1.0, d in 1f64..400.0) {
            let p = FadeMemParams::default();
            prop_assert!(v(&p, &state(i, Layer::Long), d) >= v(&p, &state(i, Layer::Short), d) - 1e-12);
            prop_assert!(p.days_until_archived(&state(i, Layer::Long)) >= p.days_until_archived(&state(i, Layer::Short)));
        }

        #[test]
        fn pinned_never_decays(i in 0f64..=1.0, d in 0f64..100_000.0, long in any::<bool>()) {
            let p = FadeMemParams::default();
            let s = ForgettingState { pinned: true, ..state(i, if long { Layer::Long } else { Layer::Short }) };
            prop_assert_eq!(v(&p, &s, d), 1.0);
            prop_assert!(p.days_until_archived(&s).is_infinite());
        }

        #[test]
        fn importance_is_bounded_and_monotone(base in -1f64..2.0, rel in -1f64..2.0, f in 0f64..1e6, age in -10f64..1e5, drel in 0f64..1.0) {
            let p = FadeMemParams::default();
            let mut s = state(0.5, Layer::Short);
            s.base_importance = base;
            s.access_frequency = f;
            let i = p.importance(&s, ImportanceInputs { relevance: rel, age_days: age }, t0());
            prop_assert!((0.0..=1.0).contains(&i));
            let j = p.importance(&s, ImportanceInputs { relevance: rel + drel, age_days: age }, t0());
            prop_assert!(j >= i);
        }
    }
}
