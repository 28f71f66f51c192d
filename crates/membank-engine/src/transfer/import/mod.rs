//! Importing history: the reference MemoryBank JSON, LoCoMo and LongMemEval conversations.
//!
//! An import is two steps. A format parser ([`memorybank`], [`locomo`], [`longmemeval`])
//! turns a file into an [`ImportSet`]: plain records, each with a stable `key` derived
//! from its position in the source (user key, date, turn index, dialogue id), and the path
//! of the JSON value it came from. Then [`Engine::import`] validates the whole set before
//! writing anything (a bad record fails the import with its path, and nothing is stored),
//! skips records whose key the user already has (re-importing a file adds nothing), embeds
//! the rest in large batches, and stores everything in one transaction.
//!
//! It deliberately does not summarise, consolidate or sweep: imported history is stored as
//! it was, with its own dates and forgetting numbers.

pub mod locomo;
pub mod longmemeval;
pub mod memorybank;

use std::collections::{BTreeMap, HashMap, HashSet};

use chrono::Duration;
use membank_core::memory::turn_content;
use membank_core::time::UserTimeZone;
use membank_core::{
    ClockFrom, ForgettingState, InvalidInput, Kind, Memory, MemoryId, Scope, Source, Status, Strength, TenantId,
    Timestamp, UserId,
};
use membank_store::NewMemory;

use crate::ops::validate_text;
use crate::{Engine, EngineError};

/// The metadata key that holds a record's import key.
pub const IMPORT_KEY: &str = "import_key";

/// Version of how the parsers turn a file into records (wording of contents, keys,
/// metadata). Anything that caches imported data, such as `membank eval`'s databases, keys
/// on it, so a change of wording is never measured on a database built the old way.
/// 2: LoCoMo turns hold the utterance and its image caption, the speaker only as metadata.
pub const FORMAT_VERSION: u32 = 2;

/// The largest import file read (1 GiB): a guard against being handed a disk image.
pub const MAX_IMPORT_BYTES: u64 = 1 << 30;

/// Texts embedded per call: the local model is several times faster per sentence on big batches.
const EMBED_BATCH: usize = 256;

/// One record to import.
#[derive(Debug, Clone, PartialEq)]
pub struct ImportRecord {
    /// Stable identity within the user (e.g. `memorybank:2023-04-28:3`); re-imports skip known keys.
    pub key: String,
    /// Where in the file it came from (a JSON path), for error messages.
    pub path: String,
    /// What it is.
    pub kind: Kind,
    /// Who said it.
    pub source: Source,
    /// Turns: the person's words.
    pub user_text: Option<String>,
    /// Turns: the reply.
    pub assistant_text: Option<String>,
    /// Other kinds: the text.
    pub text: Option<String>,
    /// When it was said.
    pub occurred_at: Timestamp,
    /// Keys of the records (of the same user) it was made from.
    pub derived_from: Vec<String>,
    /// Free-form metadata (source ids kept so evidence can be matched).
    pub metadata: BTreeMap<String, String>,
    /// Forgetting strength carried over from the source, if it had one.
    pub strength: Option<f64>,
    /// Last recall carried over from the source, if it had one.
    pub last_recalled_at: Option<Timestamp>,
}

impl ImportRecord {
    /// A turn record with no forgetting state of its own.
    pub fn turn(
        key: String,
        path: String,
        user_text: String,
        assistant_text: Option<String>,
        occurred_at: Timestamp,
    ) -> Self {
        Self {
            key,
            path,
            kind: Kind::Turn,
            source: Source::User,
            user_text: Some(user_text),
            assistant_text,
            text: None,
            occurred_at,
            derived_from: Vec::new(),
            metadata: BTreeMap::new(),
            strength: None,
            last_recalled_at: None,
        }
    }

    /// A record of another kind (note, summary, portrait).
    pub fn other(key: String, path: String, kind: Kind, source: Source, text: String, occurred_at: Timestamp) -> Self {
        Self {
            key,
            path,
            kind,
            source,
            user_text: None,
            assistant_text: None,
            text: Some(text),
            occurred_at,
            derived_from: Vec::new(),
            metadata: BTreeMap::new(),
            strength: None,
            last_recalled_at: None,
        }
    }

    /// The text shown and embedded.
    pub fn content(&self) -> String {
        match self.kind {
            Kind::Turn => turn_content(self.user_text.as_deref().unwrap_or(""), self.assistant_text.as_deref()),
            _ => self.text.clone().unwrap_or_default(),
        }
    }
}

/// The records of one user.
#[derive(Debug, Clone, PartialEq)]
pub struct ImportUser {
    /// The (trimmed) user id.
    pub user: UserId,
    /// Where in the file the user came from.
    pub path: String,
    /// Its records, in file order.
    pub records: Vec<ImportRecord>,
}

/// A parsed import file.
#[derive(Debug, Clone, PartialEq)]
pub struct ImportSet {
    /// `memorybank`, `locomo` or `longmemeval`.
    pub format: &'static str,
    /// The users, in file order.
    pub users: Vec<ImportUser>,
}

impl ImportSet {
    /// How many records the set holds.
    pub fn len(&self) -> usize {
        self.users.iter().map(|u| u.records.len()).sum()
    }
    /// True when it holds no record.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// Import a parsed set into one tenant.
#[derive(Debug, Clone)]
pub struct ImportRequest {
    /// The tenant the users belong to.
    pub tenant: TenantId,
    /// What to import.
    pub set: ImportSet,
    /// Where the imported memories' forgetting clocks start: each record's own date (and
    /// the source's last recall, if it kept one), or the import (the default), so that a
    /// migrated history is not past the archive threshold the moment it arrives.
    pub clock_from: ClockFrom,
}

/// What an import did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ImportReport {
    /// Users in the file.
    pub users: usize,
    /// Records in the file.
    pub records: usize,
    /// Records stored now.
    pub imported: usize,
    /// Records already present (earlier import of the same file), or repeated in the file.
    pub skipped: usize,
}

/// Progress of a long import: `done` of `total` records embedded.
pub type ImportProgress<'a> = &'a (dyn Fn(usize, usize) + Sync);

/// An error about one place in an import file.
pub(crate) fn bad(path: &str, reason: impl std::fmt::Display) -> InvalidInput {
    InvalidInput::new("import file", format!("{path}: {reason}"))
}

/// Parses JSON, reporting a syntax error with its line and column.
pub(crate) fn parse_json(bytes: &[u8]) -> Result<serde_json::Value, InvalidInput> {
    if bytes.len() as u64 > MAX_IMPORT_BYTES {
        return Err(InvalidInput::new(
            "import file",
            format!("is {} bytes; the limit is {MAX_IMPORT_BYTES}", bytes.len()),
        ));
    }
    let text = std::str::from_utf8(bytes).map_err(|e| {
        let line = bytes[..e.valid_up_to()].iter().filter(|b| **b == b'\n').count() + 1;
        InvalidInput::new("import file", format!("line {line}: not valid UTF-8 (byte offset {})", e.valid_up_to()))
    })?;
    serde_json::from_str(text).map_err(|e| {
        InvalidInput::new("import file", format!("line {}, column {}: not valid JSON: {e}", e.line(), e.column()))
    })
}

/// A JSON path member for a key: `["key"]`, quoted so spaces and odd characters show.
pub(crate) fn member(key: &str) -> String {
    format!("[{}]", serde_json::Value::String(key.to_string()))
}

/// A string field that must be present.
pub(crate) fn required_str<'a>(value: &'a serde_json::Value, field: &str, path: &str) -> Result<&'a str, InvalidInput> {
    match value.get(field) {
        Some(serde_json::Value::String(s)) => Ok(s),
        Some(other) => Err(bad(&format!("{path}.{field}"), format!("expected a string, found {}", type_name(other)))),
        None => Err(bad(path, format!("missing field {field:?}"))),
    }
}

/// The JSON type of a value, for messages.
pub(crate) fn type_name(value: &serde_json::Value) -> &'static str {
    match value {
        serde_json::Value::Null => "null",
        serde_json::Value::Bool(_) => "a boolean",
        serde_json::Value::Number(_) => "a number",
        serde_json::Value::String(_) => "a string",
        serde_json::Value::Array(_) => "an array",
        serde_json::Value::Object(_) => "an object",
    }
}

/// A user id from a file key: trimmed and validated, with the path in the error.
pub(crate) fn user_id(raw: &str, path: &str) -> Result<UserId, InvalidInput> {
    UserId::new(raw).map_err(|e| bad(path, format!("bad user key {raw:?}: {}", e.reason)))
}

impl Engine {
    /// Imports a parsed set: validates everything first, skips what the users already
    /// have, embeds the rest in large batches, and stores it all in one transaction.
    pub fn import(&self, request: ImportRequest, progress: ImportProgress<'_>) -> Result<ImportReport, EngineError> {
        let now = self.clock.now();
        validate_set(&request.set, now)?;

        let mut report =
            ImportReport { users: request.set.users.len(), records: request.set.len(), ..Default::default() };
        // Users named twice in a file (e.g. " Jason " and "Jason") are one user.
        let mut pending: Vec<(Scope, HashMap<String, MemoryId>, Vec<ImportRecord>)> = Vec::new();
        for user in request.set.users {
            let scope = Scope::user(request.tenant.clone(), user.user.clone());
            let known = match pending.iter().position(|(s, _, _)| s.user == scope.user) {
                Some(index) => index,
                None => {
                    let known = self.store.metadata_index(&scope, IMPORT_KEY)?;
                    pending.push((scope, known, Vec::new()));
                    pending.len() - 1
                }
            };
            let (_, keys, records) = &mut pending[known];
            let mut seen: HashSet<String> = records.iter().map(|r| r.key.clone()).collect();
            for record in user.records {
                if keys.contains_key(&record.key) || !seen.insert(record.key.clone()) {
                    report.skipped += 1;
                } else {
                    records.push(record);
                }
            }
        }

        let total: usize = pending.iter().map(|(_, _, r)| r.len()).sum();
        progress(0, total);
        let mut batch: Vec<NewMemory> = Vec::with_capacity(total);
        // Asked after the first batch is embedded: an embedder that picks its model by the
        // text (the CLI's automatic choice for a new store) has picked it by then.
        let mut model: Option<membank_store::EmbeddingModel> = None;
        let mut done = 0;
        for (scope, mut ids, records) in pending {
            if records.is_empty() {
                continue;
            }
            let user = self.store.ensure_user(&scope.tenant, &scope.user, now)?;
            let zone = UserTimeZone::parse(&user.time_zone)?;
            for record in &records {
                ids.insert(record.key.clone(), MemoryId::generate(now));
            }
            let contents: Vec<String> = records.iter().map(ImportRecord::content).collect();
            let mut vectors = Vec::with_capacity(records.len());
            // Per record, the importance probe's features: the mean hidden state of the
            // person's words at the probe's layer (`None`: the lexical estimate alone).
            let mut probe_features: Vec<Option<Vec<f32>>> = Vec::with_capacity(records.len());
            for chunk in contents.chunks(EMBED_BATCH) {
                let refs: Vec<&str> = chunk.iter().map(String::as_str).collect();
                let embedded = self.embedder.embed(&refs)?;
                if embedded.len() != refs.len() {
                    return Err(EngineError::Storage(format!(
                        "the embedder returned {} vectors for {} texts",
                        embedded.len(),
                        refs.len()
                    )));
                }
                vectors.extend(embedded);
                let model = model.get_or_insert_with(|| self.model());
                match crate::ops::probe_means(self.embedder.as_ref(), &model.id, &refs)? {
                    Some(means) => probe_features.extend(means.into_iter().map(Some)),
                    None => probe_features.extend(std::iter::repeat_n(None, chunk.len())),
                }
                done += chunk.len();
                progress(done, total);
            }
            for (((record, content), vector), features) in
                records.into_iter().zip(contents).zip(vectors).zip(probe_features)
            {
                let mut forgetting = ForgettingState::starting(record.occurred_at, now, request.clock_from);
                if let Some(strength) = record.strength {
                    forgetting.strength = Strength::new(strength).map_err(|e| bad(&record.path, e.reason))?;
                }
                if let (Some(last), ClockFrom::Event) = (record.last_recalled_at, request.clock_from) {
                    forgetting.last_recalled_at = last.max(record.occurred_at);
                }
                let mut metadata = record.metadata;
                metadata.insert(IMPORT_KEY.to_string(), record.key.clone());
                let derived_from = record.derived_from.iter().filter_map(|key| ids.get(key).copied()).collect();
                metadata.insert(crate::ops::IMPORTANCE_SOURCE.to_string(), "estimator".to_string());
                let mut memory = Memory {
                    id: ids[&record.key],
                    scope: scope.clone(),
                    kind: record.kind,
                    source: record.source,
                    content: Some(content),
                    user_text: record.user_text,
                    assistant_text: record.assistant_text,
                    occurred_at: record.occurred_at,
                    recorded_at: now,
                    day: membank_core::time::check_day_year("occurred_at", zone.day_of(record.occurred_at))
                        .map_err(|e| bad(&record.path, format!("{} {}", e.field, e.reason)))?,
                    forgetting,
                    status: Status::Active,
                    superseded_by: None,
                    derived_from,
                    metadata,
                };
                // The estimator's importance, as every write path rates it (an agent's note too).
                let model_id = model.as_ref().map_or("", |m| m.id.as_str());
                crate::ops::estimate_with_features(&mut memory, model_id, features.as_deref());
                let model =
                    model.clone().ok_or_else(|| EngineError::Storage("a vector was made before any model".into()))?;
                batch.push(NewMemory { memory, embedding: Some((model, vector)) });
            }
        }
        report.imported = batch.len();
        if let Some(model) = &model {
            self.note_writing(model, batch.iter().map(|new| &new.memory));
        }
        if !batch.is_empty() {
            self.store.insert_many(batch)?;
        }
        tracing::info!(imported = report.imported, skipped = report.skipped, users = report.users, "import finished");
        Ok(report)
    }
}

/// Checks every record before anything is written, so a bad record stores nothing.
fn validate_set(set: &ImportSet, now: Timestamp) -> Result<(), InvalidInput> {
    let latest = now.checked_add_signed(Duration::hours(24)).unwrap_or(Timestamp::MAX_UTC);
    for user in &set.users {
        let keys: HashSet<&str> = user.records.iter().map(|r| r.key.as_str()).collect();
        for record in &user.records {
            let path = record.path.as_str();
            let check = |field: &'static str, text: &str| {
                validate_text(field, text).map_err(|e| bad(path, format!("{} {}", e.field, e.reason)))
            };
            match record.kind {
                Kind::Turn => {
                    check("user text", record.user_text.as_deref().unwrap_or(""))?;
                    if let Some(reply) = &record.assistant_text {
                        check("reply", reply)?;
                    }
                }
                _ => check("text", record.text.as_deref().unwrap_or(""))?,
            }
            if record.occurred_at > latest {
                return Err(bad(path, format!("{} lies in the future", record.occurred_at.to_rfc3339())));
            }
            membank_core::time::check_year("occurred_at", record.occurred_at)
                .map_err(|e| bad(path, format!("{} {}", e.field, e.reason)))?;
            // A recall in the future would make retention grow with time.
            if let Some(last) = record.last_recalled_at.filter(|last| *last > latest) {
                return Err(bad(path, format!("last recalled {}, which lies in the future", last.to_rfc3339())));
            }
            if let Some(strength) = record.strength {
                Strength::new(strength).map_err(|e| bad(path, format!("memory strength {}", e.reason)))?;
            }
            if let Some(missing) = record.derived_from.iter().find(|k| !keys.contains(k.as_str())) {
                return Err(bad(path, format!("derived from {missing:?}, which is not in the file")));
            }
            if record.metadata.contains_key(IMPORT_KEY) {
                return Err(bad(path, format!("metadata key {IMPORT_KEY:?} is reserved")));
            }
        }
    }
    Ok(())
}
