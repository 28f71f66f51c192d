//! The write and inspection operations, one request struct each.

use std::collections::BTreeMap;

use chrono::{Duration, NaiveDate};
use membank_core::event::Event;
use membank_core::limits::{MAX_PAGE_SIZE, MAX_TEXT_BYTES};
use membank_core::memory::turn_content;
use membank_core::time::UserTimeZone;
use membank_core::{
    ClockFrom, ForgettingState, InvalidInput, Kind, Memory, MemoryId, Scope, Source, Status, Timestamp,
};
use membank_store::{
    EventQuery, IdempotencyClaim, IdempotencyRecord, Insertion, ListQuery, NewMemory, StatusCounts, SweepReport,
};

use crate::{Engine, EngineError};

/// How far in the future an `occurred_at` may lie (clock skew between a client and us).
const MAX_FUTURE_SKEW: Duration = Duration::hours(24);

/// Checks a text field: not blank, within [`MAX_TEXT_BYTES`]. Returns it unchanged
/// (white space inside a message is the person's, not ours to trim).
pub fn validate_text(field: &'static str, text: &str) -> Result<(), InvalidInput> {
    if text.trim().is_empty() {
        return Err(InvalidInput::new(field, "must not be empty or only white space"));
    }
    if text.len() > MAX_TEXT_BYTES {
        return Err(InvalidInput::new(field, format!("is {} bytes; the limit is {MAX_TEXT_BYTES} bytes", text.len())));
    }
    if text.contains('\0') {
        return Err(InvalidInput::new(field, "must not contain NUL characters"));
    }
    Ok(())
}

/// The metadata key saying where a memory's base importance came from: `explicit` (the
/// caller gave it), `estimator` (membank's text estimator, [`membank_core::salience`]) or
/// `llm` (rated by the configured chat model during maintenance).
pub const IMPORTANCE_SOURCE: &str = "importance_source";

/// The metadata key naming the version of the text estimator that set an `estimator`
/// importance: `importance-probe-v5` (the probe over an intermediate layer of the model's reading of the
/// person's words, for the models it has weights for) or `salience-v1` (the lexical estimate alone).
pub const IMPORTANCE_ESTIMATOR: &str = "importance_estimator";

/// Checks an explicit importance: a finite number in [0, 1].
pub fn validate_importance(value: f64) -> Result<f64, InvalidInput> {
    if value.is_finite() && (0.0..=1.0).contains(&value) {
        Ok(value)
    } else {
        Err(InvalidInput::new("importance", format!("{value} must be a number between 0 and 1")))
    }
}

/// Sets a new memory's base importance: the caller's, else the estimator's from `text`,
/// and records which in its metadata.
pub(crate) fn set_base_importance(memory: &mut Memory, explicit: Option<f64>, text: &str) -> Result<(), InvalidInput> {
    let (value, source) = match explicit {
        Some(value) => (validate_importance(value)?, "explicit"),
        None => (membank_core::salience::estimate_importance(text), "estimator"),
    };
    memory.forgetting.base_importance = value;
    memory.forgetting.importance = value;
    memory.metadata.insert(IMPORTANCE_SOURCE.into(), source.into());
    Ok(())
}

/// The importance probe's features for each memory whose importance is the estimator's:
/// the mean hidden state, at the layer the probe for `model_id` reads, of the person's words
/// ([`membank_core::salience::probe_text`]: a turn's own words, a note whole), in one pass.
/// `None` for a memory with an explicit importance, and for all when no probe was fitted for
/// the model or the embedder cannot show its layers (a remote API): the lexical estimate
/// then stands alone.
pub(crate) fn probe_features(
    embedder: &dyn crate::Embedder,
    model_id: &str,
    memories: &[&Memory],
) -> Result<Vec<Option<Vec<f32>>>, EngineError> {
    let mut out = vec![None; memories.len()];
    let wanted: Vec<usize> = (0..memories.len())
        .filter(|&i| memories[i].metadata.get(IMPORTANCE_SOURCE).map(String::as_str) == Some("estimator"))
        .collect();
    if wanted.is_empty() {
        return Ok(out);
    }
    let texts: Vec<&str> = wanted.iter().map(|&i| memories[i].content.as_deref().unwrap_or_default()).collect();
    if let Some(means) = probe_means(embedder, model_id, &texts)? {
        for (&i, mean) in wanted.iter().zip(means) {
            out[i] = Some(mean);
        }
    }
    Ok(out)
}

/// The probe's features of each text, in one pass: the mean hidden state of its person's
/// words ([`membank_core::salience::probe_text`]) at the layer the probe for `model_id`
/// reads. `None` when no probe was fitted for the model or the embedder cannot show its
/// layers.
pub(crate) fn probe_means(
    embedder: &dyn crate::Embedder,
    model_id: &str,
    texts: &[&str],
) -> Result<Option<Vec<Vec<f32>>>, EngineError> {
    let Some(layer) = membank_core::salience::probe_layer(model_id) else {
        return Ok(None);
    };
    let words: Vec<&str> = texts.iter().map(|t| membank_core::salience::probe_text(t)).collect();
    let Some(means) = embedder.layer_means(&words, layer)? else {
        return Ok(None);
    };
    if means.len() != words.len() {
        return Err(EngineError::Storage(format!(
            "the embedder returned {} layer means for {} texts",
            means.len(),
            words.len()
        )));
    }
    Ok(Some(means))
}

/// Once the model is known: an `estimator` importance is estimated again from the text and
/// the probe's `features` ([`probe_features`];
/// [`membank_core::salience::estimate_importance_with`]; for a note an agent saved,
/// [`membank_core::salience::estimate_agent_note_importance_with`]), and the estimator's
/// version recorded. An explicit importance is left alone.
pub(crate) fn estimate_with_features(memory: &mut Memory, model_id: &str, features: Option<&[f32]>) {
    if memory.metadata.get(IMPORTANCE_SOURCE).map(String::as_str) != Some("estimator") {
        return;
    }
    let text = memory.content.as_deref().unwrap_or_default();
    let (value, version) = if memory.kind == Kind::Note && memory.source == Source::Agent {
        membank_core::salience::estimate_agent_note_importance_with(text, model_id, features)
    } else {
        membank_core::salience::estimate_importance_with(text, model_id, features)
    };
    memory.forgetting.base_importance = value;
    memory.forgetting.importance = value;
    memory.metadata.insert(IMPORTANCE_ESTIMATOR.into(), version.into());
}

/// A new active memory with fresh forgetting state, not yet stored.
#[allow(clippy::too_many_arguments)]
pub(crate) fn fresh_memory(
    scope: Scope,
    kind: Kind,
    source: Source,
    content: String,
    occurred_at: Timestamp,
    now: Timestamp,
    day: NaiveDate,
    metadata: BTreeMap<String, String>,
    clock_from: ClockFrom,
) -> Memory {
    Memory {
        id: MemoryId::generate(now),
        scope,
        kind,
        source,
        content: Some(content),
        user_text: None,
        assistant_text: None,
        occurred_at,
        recorded_at: now,
        day,
        forgetting: ForgettingState::starting(occurred_at, now, clock_from),
        status: Status::Active,
        superseded_by: None,
        derived_from: Vec::new(),
        metadata,
    }
}

/// What a person wrote in a memory, without the labels membank adds to a turn's content
/// (`User:`, `Assistant:`: English words that would outvote a short Chinese turn).
pub(crate) fn said_texts(memory: &Memory) -> Vec<&str> {
    if memory.user_text.is_some() || memory.assistant_text.is_some() {
        memory.user_text.iter().chain(&memory.assistant_text).map(String::as_str).collect()
    } else {
        memory.content.as_deref().into_iter().collect()
    }
}

/// How long an `Idempotency-Key` is remembered per user: a retry within this time of the
/// first request gets the first answer; after it, the key is free again.
pub const IDEMPOTENCY_RETENTION: Duration = Duration::hours(24);

/// One entry of [`Engine::remember_all`].
#[derive(Debug, Clone)]
pub enum Remember {
    /// An exchange.
    Turn(RememberTurn),
    /// A note.
    Note(RememberNote),
}

/// Store one exchange: what the person said and, optionally, the assistant's reply.
#[derive(Debug, Clone)]
pub struct RememberTurn {
    /// Whose memory.
    pub scope: Scope,
    /// The person's words.
    pub user_text: String,
    /// The assistant's reply.
    pub assistant_text: Option<String>,
    /// When it was said (default: now).
    pub occurred_at: Option<Timestamp>,
    /// Free-form string metadata.
    pub metadata: BTreeMap<String, String>,
    /// How much it matters, in [0, 1] (FadeMem's base importance); default: estimated from the text.
    pub importance: Option<f64>,
    /// Where its forgetting clock starts when `occurred_at` is in the past: the event's
    /// date, or when it is stored (the default).
    pub clock_from: ClockFrom,
}

/// Store a free-form note an agent chose to save.
#[derive(Debug, Clone)]
pub struct RememberNote {
    /// Whose memory.
    pub scope: Scope,
    /// The note.
    pub text: String,
    /// Who said it (default: agent).
    pub source: Source,
    /// When it happened (default: now).
    pub occurred_at: Option<Timestamp>,
    /// Free-form string metadata.
    pub metadata: BTreeMap<String, String>,
    /// How much it matters, in [0, 1] (FadeMem's base importance); default: estimated from the text.
    pub importance: Option<f64>,
    /// Where its forgetting clock starts when `occurred_at` is in the past: the event's
    /// date, or when it is stored (the default).
    pub clock_from: ClockFrom,
}

/// List memories of a scope.
#[derive(Debug, Clone)]
pub struct ListRequest {
    /// Whose memories.
    pub scope: Scope,
    /// Filters and paging (statuses empty: active only).
    pub query: ListQuery,
}

/// A page of memories with the retention each has now.
#[derive(Debug, Clone)]
pub struct ListResponse {
    /// When retention was computed.
    pub now: Timestamp,
    /// The memories, each with its retention now.
    pub memories: Vec<(Memory, f64)>,
    /// Counts per status for the whole scope.
    pub counts: StatusCounts,
    /// The retention below which the next sweep archives an active, unpinned memory
    /// (`None` when the policy does not archive by a threshold).
    pub archive_below: Option<f64>,
    /// Whether anything was ever stored for this user (`false`: no such user).
    pub user_known: bool,
}

/// Run the forgetting policy over one scope.
#[derive(Debug, Clone)]
pub struct SweepRequest {
    /// Whose memories.
    pub scope: Scope,
    /// The sweep's time (default: now).
    pub now: Option<Timestamp>,
    /// Report only; change nothing.
    pub dry_run: bool,
    /// Override the policy's per-pass cap.
    pub max_archive_fraction: Option<f64>,
}

impl Engine {
    fn prepare(
        &self,
        scope: &Scope,
        occurred_at: Option<Timestamp>,
    ) -> Result<(Timestamp, Timestamp, NaiveDate), EngineError> {
        let now = self.clock.now();
        let occurred_at = occurred_at.map(membank_core::time::truncate_to_millis).unwrap_or(now);
        if occurred_at > now + MAX_FUTURE_SKEW {
            return Err(InvalidInput::new(
                "occurred_at",
                format!("{} lies more than a day in the future", occurred_at.to_rfc3339()),
            )
            .into());
        }
        membank_core::time::check_year("occurred_at", occurred_at)?;
        let user = self.store.ensure_user(&scope.tenant, &scope.user, now)?;
        let zone = UserTimeZone::parse(&user.time_zone)?;
        let day = membank_core::time::check_day_year("occurred_at", zone.day_of(occurred_at))?;
        Ok((now, occurred_at, day))
    }

    fn store_new(&self, mut memory: Memory, embed_text: &str) -> Result<Memory, EngineError> {
        let vector = self
            .embedder
            .embed(&[embed_text])?
            .pop()
            .ok_or_else(|| EngineError::Storage("the embedder returned no vector".into()))?;
        // The model is asked after embedding: an embedder that picks its model by the text
        // (the CLI's automatic choice for a new store) has picked it by now.
        let model = self.model();
        let features = probe_features(self.embedder.as_ref(), &model.id, &[&memory])?.pop().flatten();
        estimate_with_features(&mut memory, &model.id, features.as_deref());
        self.note_writing(&model, [&memory]);
        let memory = self.store.insert(NewMemory { memory, embedding: Some((model, vector)) })?;
        tracing::debug!(id = %memory.id, kind = %memory.kind, "stored memory");
        Ok(memory)
    }

    /// Stores one turn. It is recallable as soon as this returns.
    pub fn remember_turn(&self, request: RememberTurn) -> Result<Memory, EngineError> {
        let (memory, content) = self.turn_memory(request)?;
        self.store_new(memory, &content)
    }

    fn turn_memory(&self, request: RememberTurn) -> Result<(Memory, String), EngineError> {
        validate_text("user_text", &request.user_text)?;
        if let Some(reply) = &request.assistant_text {
            validate_text("assistant_text", reply)?;
        }
        if let Some(importance) = request.importance {
            validate_importance(importance)?;
        }
        let (now, occurred_at, day) = self.prepare(&request.scope, request.occurred_at)?;
        let content = turn_content(&request.user_text, request.assistant_text.as_deref());
        let mut memory = fresh_memory(
            request.scope,
            Kind::Turn,
            Source::User,
            content.clone(),
            occurred_at,
            now,
            day,
            request.metadata,
            request.clock_from,
        );
        set_base_importance(&mut memory, request.importance, &content)?;
        memory.user_text = Some(request.user_text);
        memory.assistant_text = request.assistant_text;
        Ok((memory, content))
    }

    /// Stores a note.
    pub fn remember_note(&self, request: RememberNote) -> Result<Memory, EngineError> {
        let (memory, text) = self.note_memory(request)?;
        self.store_new(memory, &text)
    }

    fn note_memory(&self, request: RememberNote) -> Result<(Memory, String), EngineError> {
        validate_text("text", &request.text)?;
        if request.source == Source::Derived {
            return Err(InvalidInput::new("source", "derived memories are made by membank, not stored as notes").into());
        }
        if let Some(importance) = request.importance {
            validate_importance(importance)?;
        }
        let (now, occurred_at, day) = self.prepare(&request.scope, request.occurred_at)?;
        let mut memory = fresh_memory(
            request.scope,
            Kind::Note,
            request.source,
            request.text.clone(),
            occurred_at,
            now,
            day,
            request.metadata,
            request.clock_from,
        );
        set_base_importance(&mut memory, request.importance, &request.text)?;
        Ok((memory, request.text))
    }

    /// Stores turns and notes of one user all at once or not at all: every entry is
    /// validated (texts, dates, importance) before anything is embedded or stored, the
    /// vectors are computed in one batch, and the store writes them in one transaction.
    /// With an idempotency claim, a retry of the same request stores nothing and answers
    /// [`Insertion::Replayed`]; the key with another request is refused.
    pub fn remember_all(
        &self,
        entries: Vec<Remember>,
        claim: Option<&IdempotencyClaim>,
    ) -> Result<Insertion, EngineError> {
        if entries.is_empty() {
            return Err(InvalidInput::new("entries", "give at least one turn or note").into());
        }
        let mut prepared = Vec::with_capacity(entries.len());
        for (index, entry) in entries.into_iter().enumerate() {
            let built = match entry {
                Remember::Turn(turn) => self.turn_memory(turn),
                Remember::Note(note) => self.note_memory(note),
            };
            prepared.push(built.map_err(|err| match err {
                EngineError::Invalid(invalid) => {
                    EngineError::Invalid(InvalidInput::new("entries", format!("entry {index}: {invalid}")))
                }
                other => other,
            })?);
        }
        let first = &prepared[0].0.scope;
        if prepared.iter().any(|(m, _)| m.scope.tenant != first.tenant || m.scope.user != first.user) {
            return Err(InvalidInput::new("entries", "all entries of one request belong to one user").into());
        }
        let texts: Vec<&str> = prepared.iter().map(|(_, text)| text.as_str()).collect();
        let vectors = self.embedder.embed(&texts)?;
        if vectors.len() != texts.len() {
            return Err(EngineError::Storage(format!(
                "the embedder returned {} vectors for {} texts",
                vectors.len(),
                texts.len()
            )));
        }
        let model = self.model();
        let memories: Vec<&Memory> = prepared.iter().map(|(memory, _)| memory).collect();
        let features = probe_features(self.embedder.as_ref(), &model.id, &memories)?;
        for ((memory, _), features) in prepared.iter_mut().zip(&features) {
            estimate_with_features(memory, &model.id, features.as_deref());
        }
        self.note_writing(&model, prepared.iter().map(|(memory, _)| memory));
        let batch = prepared
            .into_iter()
            .zip(vectors)
            .map(|((memory, _), vector)| NewMemory { memory, embedding: Some((model.clone(), vector)) })
            .collect();
        Ok(self.store.insert_all(batch, claim)?)
    }

    /// Starts an idempotency claim for `key` and the request's digest, with this engine's
    /// clock and the documented retention ([`IDEMPOTENCY_RETENTION`]).
    pub fn idempotency_claim(&self, key: &str, request_hash: &str) -> IdempotencyClaim {
        let now = self.clock.now();
        IdempotencyClaim {
            key: key.to_string(),
            request_hash: request_hash.to_string(),
            now,
            expire_before: now - IDEMPOTENCY_RETENTION,
        }
    }

    /// What `key` was used for by this user within the retention, if anything.
    pub fn idempotency_record(&self, scope: &Scope, key: &str) -> Result<Option<IdempotencyRecord>, EngineError> {
        Ok(self.store.idempotency_record(scope, key, self.clock.now() - IDEMPOTENCY_RETENTION)?)
    }

    /// Lists memories with their retention now.
    pub fn list(&self, mut request: ListRequest) -> Result<ListResponse, EngineError> {
        if request.query.limit == 0 || request.query.limit > MAX_PAGE_SIZE {
            return Err(InvalidInput::new("limit", format!("must be between 1 and {MAX_PAGE_SIZE}")).into());
        }
        if request.query.statuses.is_empty() {
            request.query.statuses = vec![Status::Active];
        }
        let now = self.clock.now();
        let policy = &self.config.forgetting;
        let memories = self.store.list(&request.scope, &request.query)?;
        let counts = self.store.counts(&request.scope)?;
        let stored = counts.active + counts.archived + counts.superseded + counts.erased;
        let user_known = stored > 0 || self.store.find_user(&request.scope.tenant, &request.scope.user)?.is_some();
        Ok(ListResponse {
            user_known,
            now,
            memories: memories
                .into_iter()
                .map(|m| {
                    let r = policy.retention_of(&m.forgetting, now);
                    (m, r)
                })
                .collect(),
            counts,
            archive_below: policy.archive_below(),
        })
    }

    /// The retention below which the next sweep archives an active, unpinned memory under
    /// this engine's policy (`None` when it does not archive by a threshold).
    pub fn archive_below(&self) -> Option<f64> {
        self.config.forgetting.archive_below()
    }

    /// Whether the next sweep archives `memory`, whose retention now is `retention`, for
    /// its retention alone.
    pub fn past_threshold(&self, memory: &Memory, retention: f64) -> bool {
        self.config.forgetting.past_threshold(memory.status, &memory.forgetting, retention)
    }

    /// One memory with its retention now.
    pub fn show(&self, scope: &Scope, id: MemoryId) -> Result<(Memory, f64), EngineError> {
        let memory = self.store.get(scope, id)?;
        let retention = self.config.forgetting.retention_of(&memory.forgetting, self.clock.now());
        Ok((memory, retention))
    }

    /// Archives a memory on request (restorable).
    pub fn forget(&self, scope: &Scope, id: MemoryId, reason: Option<&str>) -> Result<Memory, EngineError> {
        if let Some(reason) = reason {
            validate_text("reason", reason)?;
        }
        Ok(self.store.archive(scope, id, reason.unwrap_or("requested"), self.clock.now())?)
    }

    /// Restores an archived memory.
    pub fn restore(&self, scope: &Scope, id: MemoryId) -> Result<Memory, EngineError> {
        Ok(self.store.restore(scope, id, self.clock.now())?)
    }

    /// Pins (never decays) or unpins a memory.
    pub fn set_pinned(&self, scope: &Scope, id: MemoryId, pinned: bool) -> Result<Memory, EngineError> {
        Ok(self.store.set_pinned(scope, id, pinned, self.clock.now())?)
    }

    /// Erases a memory's content for good, leaving a tombstone.
    pub fn erase(&self, scope: &Scope, id: MemoryId) -> Result<Memory, EngineError> {
        Ok(self.store.erase(scope, id, self.clock.now())?)
    }

    /// Runs the forgetting policy over one scope.
    pub fn sweep(&self, request: SweepRequest) -> Result<SweepReport, EngineError> {
        let mut policy = self.config.forgetting;
        if let Some(fraction) = request.max_archive_fraction {
            policy.max_archive_fraction = fraction;
        }
        policy.validate()?;
        let now = self.request_now(request.now, !request.dry_run)?;
        Ok(self.store.sweep(&request.scope, &policy, now, request.dry_run)?)
    }

    /// Strengthens memories the caller confirms it used (the `used` recall mode's feedback);
    /// an archived one (a reminiscing recall returned it) comes back with savings.
    pub fn confirm_used(
        &self,
        scope: &Scope,
        ids: &[MemoryId],
        query_id: Option<&str>,
    ) -> Result<Vec<Memory>, EngineError> {
        Ok(self.store.confirm_used(scope, ids, query_id, &self.config.forgetting, self.clock.now())?)
    }

    /// The event log of a scope.
    pub fn events(&self, scope: &Scope, query: &EventQuery) -> Result<Vec<Event>, EngineError> {
        if query.limit > 10_000 {
            return Err(InvalidInput::new("limit", "must be at most 10000").into());
        }
        Ok(self.store.events(scope, query)?)
    }

    /// Sets a user's time zone (IANA name) for the day bucket of future memories.
    pub fn set_time_zone(&self, scope: &Scope, time_zone: &str) -> Result<String, EngineError> {
        Ok(self.store.set_time_zone(&scope.tenant, &scope.user, time_zone, self.clock.now())?.time_zone)
    }

    /// The user's time zone (UTC for a user membank has not met yet).
    pub fn time_zone_of(&self, scope: &Scope) -> Result<UserTimeZone, EngineError> {
        match self.store.find_user(&scope.tenant, &scope.user)? {
            Some(user) => Ok(UserTimeZone::parse(&user.time_zone)?),
            None => Ok(UserTimeZone::UTC),
        }
    }

    /// Parses a time a caller gave for this user: an RFC 3339 instant, or a bare date
    /// (`2024-05-04`) as the user's local midnight.
    pub fn parse_time(&self, scope: &Scope, field: &'static str, text: &str) -> Result<Timestamp, EngineError> {
        let zone =
            if membank_core::time::bare_date(text).is_some() { self.time_zone_of(scope)? } else { UserTimeZone::UTC };
        Ok(membank_core::time::parse_instant_in(field, text, zone)?)
    }
}

impl Engine {
    /// Warns once when this store's model reads English only and `memories`, just
    /// embedded by it, are written mostly in other scripts. Returns whether it warned now.
    pub(crate) fn note_writing<'a>(
        &self,
        model: &membank_store::EmbeddingModel,
        memories: impl IntoIterator<Item = &'a membank_core::Memory>,
    ) -> bool {
        if self.script_warning.is_done() || !crate::language::reads_only_english(&model.id) {
            return false;
        }
        self.script_warning.check(&model.id, memories.into_iter().flat_map(said_texts))
    }
}
