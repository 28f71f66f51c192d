//! The `membank-export` format, version 1: JSON Lines, lossless, streamed.
//!
//! ```text
//! {"format":"membank-export","version":1,"vectors":false}
//! {"type":"user","tenant":"default","user":"ana","time_zone":"UTC","created_at":"…","maintained_at":null,"resummarize_due":false}
//! {"type":"memory","id":"…","agent":null,"session":null,"kind":"turn",…,"metadata":{…}}     one per memory, oldest row first
//! {"type":"event","id":"…","memory_id":"…","kind":"created","at":"…","data":{…}}          the user's log, in order
//! {"type":"query","at":"…","vector":[…]}                                                   recent recall queries (with vectors only)
//! … the next user …
//! {"type":"end","users":1,"memories":12,"events":40}
//! ```
//!
//! A memory line carries all of its state: kind, source, both clocks (`occurred_at`,
//! `recorded_at`), texts, day, status, the forgetting numbers (strength, recall count,
//! last recall, pinned, layer, importance, base importance, FadeMem age, access
//! frequency, decay factor), `superseded_by`, `derived_from`, metadata, and with
//! `--vectors` its vector and the model that made it. Times are RFC 3339 in UTC with
//! milliseconds (the store's precision); numbers print in their shortest exact form, so
//! export → import → export reproduces the bytes. The `end` line's counts let an import
//! tell a complete file from a cut one.
//!
//! Reading ([`parse`]) validates the whole file before anything is stored: every line, its
//! place (a memory or event before any user, a second header), unique ids, events that
//! name memories of their own user, vector lengths, and the end line's counts. Errors
//! name the line and the field.

use std::collections::{BTreeMap, HashSet};
use std::io::Write;

use chrono::SecondsFormat;
use membank_core::event::{Event, EventKind};
use membank_core::{
    ForgettingState, InvalidInput, Kind, Layer, Memory, MemoryId, Scope, Source, Status, Strength, TenantId, Timestamp,
    UserId,
};
use membank_store::{EmbeddingModel, ExportRow, ImportCounts, ModelVector, Store, StoreError, UserImport, UserState};
use serde::{Deserialize, Serialize};

use crate::{Engine, EngineError};

/// The format's name in the header line.
pub const FORMAT: &str = "membank-export";
/// The version this build writes and reads.
pub const VERSION: u32 = 1;
/// Longest text of one memory an import accepts, in bytes. Far above what a caller may
/// store (`MAX_TEXT_BYTES`, 32 KiB): membank's own summaries and fused memories are not
/// held to that limit, and an import must take back whatever an export wrote.
pub const MAX_EXPORT_TEXT_BYTES: usize = 16 * 1024 * 1024;
/// Largest export file an import reads, in bytes (the whole file is validated in memory).
pub const MAX_EXPORT_BYTES: u64 = 2 * 1024 * 1024 * 1024;

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct Header {
    format: String,
    version: u32,
    vectors: bool,
}

#[derive(Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case", deny_unknown_fields)]
enum Line {
    User {
        tenant: String,
        user: String,
        time_zone: String,
        created_at: String,
        maintained_at: Option<String>,
        resummarize_due: bool,
    },
    Memory(Box<MemoryLine>),
    Event {
        id: String,
        memory_id: Option<String>,
        kind: String,
        at: String,
        data: serde_json::Value,
    },
    Query {
        at: String,
        vector: Vec<f32>,
    },
    End {
        users: usize,
        memories: usize,
        events: usize,
    },
}

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct MemoryLine {
    id: String,
    agent: Option<String>,
    session: Option<String>,
    kind: String,
    source: String,
    content: Option<String>,
    user_text: Option<String>,
    assistant_text: Option<String>,
    occurred_at: String,
    recorded_at: String,
    day: String,
    status: String,
    strength: f64,
    recall_count: u32,
    last_recalled_at: String,
    pinned: bool,
    layer: String,
    importance: f64,
    base_importance: f64,
    fade_age: f64,
    access_frequency: f64,
    decay_factor: f64,
    superseded_by: Option<String>,
    derived_from: Vec<String>,
    metadata: BTreeMap<String, String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    model: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    vector: Option<Vec<f32>>,
}

/// Which users to export.
#[derive(Debug, Clone)]
pub struct ExportRequest {
    /// These users (tenant and user of each scope; labels are ignored), or every user of
    /// every tenant when empty.
    pub users: Vec<Scope>,
    /// Include each memory's vector and the user's recent recall queries.
    pub vectors: bool,
    /// A user asked for that does not exist is left out (it has nothing stored) instead
    /// of failing the export with `NotFound`.
    pub skip_missing: bool,
}

/// What an export wrote.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ExportCounts {
    /// Users written.
    pub users: usize,
    /// Memories written.
    pub memories: usize,
    /// Events written.
    pub events: usize,
}

fn time(t: Timestamp) -> String {
    t.to_rfc3339_opts(SecondsFormat::Millis, true)
}

fn write_line(out: &mut dyn Write, value: &impl Serialize) -> Result<(), StoreError> {
    let mut line = serde_json::to_vec(value).map_err(|e| StoreError::Corrupt(e.to_string()))?;
    line.push(b'\n');
    out.write_all(&line).map_err(StoreError::Output)
}

impl Engine {
    /// Writes the export to `out` as it reads it (constant memory); each user from one
    /// consistent snapshot. A user asked for that does not exist is `NotFound`.
    pub fn export(&self, request: &ExportRequest, out: &mut dyn Write) -> Result<ExportCounts, EngineError> {
        export(self.store.as_ref(), request, out)
    }

    /// Reads an export and stores it, ids kept, all or nothing (see [`parse`] for the
    /// checks). Memories without a vector in the file, or with one of another model, are
    /// embedded again with this engine's model. An existing user is refused unless `merge`.
    pub fn import_export(&self, bytes: &[u8], merge: bool) -> Result<ImportCounts, EngineError> {
        let mut users = parse(bytes)?;
        // Memories without a vector are embedded first, and the model asked only then: an
        // embedder that picks its model by the text (the CLI's automatic choice for a new
        // store) has picked it by then. Vectors of another model are made again after.
        let mut model: Option<membank_store::EmbeddingModel> = None;
        for pass in [Pass::Missing, Pass::OtherModel] {
            if pass == Pass::OtherModel && model.is_none() {
                model = Some(self.model());
            }
            for user in &mut users {
                let redo: Vec<usize> = user
                    .memories
                    .iter()
                    .enumerate()
                    .filter(|(_, (m, v))| {
                        m.status != Status::Erased
                            && m.content.is_some()
                            && match (pass, v, &model) {
                                (Pass::Missing, v, _) => v.is_none(),
                                (Pass::OtherModel, Some((vm, _)), Some(model)) => vm != model,
                                (Pass::OtherModel, _, _) => false,
                            }
                    })
                    .map(|(i, _)| i)
                    .collect();
                for chunk in redo.chunks(64) {
                    let texts: Vec<&str> =
                        chunk.iter().map(|&i| user.memories[i].0.content.as_deref().unwrap_or("")).collect();
                    let vectors = self.embedder.embed(&texts)?;
                    let model = model.get_or_insert_with(|| self.model()).clone();
                    for (&i, vector) in chunk.iter().zip(vectors) {
                        user.memories[i].1 = Some((model.clone(), vector));
                    }
                }
            }
        }
        if let Some(model) = &model {
            self.note_writing(
                model,
                users
                    .iter()
                    .flat_map(|u| u.memories.iter().filter(|(m, _)| m.status == Status::Active).map(|(m, _)| m)),
            );
        }
        for user in &mut users {
            for (memory, vector) in &mut user.memories {
                if memory.status == Status::Erased {
                    *vector = None;
                }
            }
        }
        Ok(self.store.import_users(users, merge)?)
    }
}

/// The two passes of [`Engine::import_export`] over memories that need a vector.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Pass {
    /// Memories the file carries no vector for.
    Missing,
    /// Memories whose vector in the file is of another model than this engine's.
    OtherModel,
}

/// Writes the export of `request` from `store` to `out`.
pub fn export(store: &dyn Store, request: &ExportRequest, out: &mut dyn Write) -> Result<ExportCounts, EngineError> {
    let users: Vec<(TenantId, UserId)> = if request.users.is_empty() {
        store.all_users()?
    } else {
        request.users.iter().map(|s| (s.tenant.clone(), s.user.clone())).collect()
    };
    write_line(out, &Header { format: FORMAT.into(), version: VERSION, vectors: request.vectors })?;
    let mut counts = ExportCounts::default();
    for (tenant, user) in users {
        let mut sink = |row: ExportRow| -> Result<(), StoreError> {
            match row {
                ExportRow::User(state) => {
                    counts.users += 1;
                    write_line(
                        out,
                        &Line::User {
                            tenant: state.tenant.to_string(),
                            user: state.user.to_string(),
                            time_zone: state.time_zone,
                            created_at: time(state.created_at),
                            maintained_at: state.maintained_at.map(time),
                            resummarize_due: state.resummarize_due,
                        },
                    )
                }
                ExportRow::Memory(memory, vector) => {
                    counts.memories += 1;
                    write_line(out, &Line::Memory(Box::new(memory_line(&memory, vector))))
                }
                ExportRow::Event(event) => {
                    counts.events += 1;
                    write_line(
                        out,
                        &Line::Event {
                            id: event.id.to_string(),
                            memory_id: event.memory_id.map(|id| id.to_string()),
                            kind: event.kind.as_str().into(),
                            at: time(event.at),
                            data: event.data,
                        },
                    )
                }
                ExportRow::Query(at, vector) => write_line(out, &Line::Query { at: time(at), vector }),
            }
        };
        if !store.export_user(&tenant, &user, request.vectors, &mut sink)? && !request.skip_missing {
            return Err(EngineError::NotFound(format!("user {user}")));
        }
    }
    write_line(out, &Line::End { users: counts.users, memories: counts.memories, events: counts.events })?;
    out.flush().map_err(StoreError::Output)?;
    Ok(counts)
}

fn memory_line(m: &Memory, vector: Option<(EmbeddingModel, Vec<f32>)>) -> MemoryLine {
    let f = &m.forgetting;
    let (model, vector) = match vector {
        Some((model, vector)) => (Some(model.id), Some(vector)),
        None => (None, None),
    };
    MemoryLine {
        id: m.id.to_string(),
        agent: m.scope.agent.as_ref().map(|a| a.as_str().to_string()),
        session: m.scope.session.as_ref().map(|s| s.as_str().to_string()),
        kind: m.kind.as_str().into(),
        source: m.source.as_str().into(),
        content: m.content.clone(),
        user_text: m.user_text.clone(),
        assistant_text: m.assistant_text.clone(),
        occurred_at: time(m.occurred_at),
        recorded_at: time(m.recorded_at),
        day: m.day.format("%Y-%m-%d").to_string(),
        status: m.status.as_str().into(),
        strength: f.strength.get(),
        recall_count: f.recall_count,
        last_recalled_at: time(f.last_recalled_at),
        pinned: f.pinned,
        layer: f.layer.as_str().into(),
        importance: f.importance,
        base_importance: f.base_importance,
        fade_age: f.fade_age,
        access_frequency: f.access_frequency,
        decay_factor: f.decay_factor,
        superseded_by: m.superseded_by.map(|id| id.to_string()),
        derived_from: m.derived_from.iter().map(ToString::to_string).collect(),
        metadata: m.metadata.clone(),
        model,
        vector,
    }
}

/// A located error: "line N: field: problem".
fn at(line: usize, field: &str, message: impl std::fmt::Display) -> InvalidInput {
    InvalidInput::new("export", format!("line {line}: {field}: {message}"))
}

fn parse_time(line: usize, field: &str, value: &str) -> Result<Timestamp, InvalidInput> {
    let t = chrono::DateTime::parse_from_rfc3339(value)
        .map(|t| t.with_timezone(&chrono::Utc))
        .map_err(|_| at(line, field, format!("{:?} is not an RFC 3339 time", truncate(value))))?;
    membank_core::time::check_year("time", t).map_err(|e| at(line, field, e.reason))
}

fn truncate(value: &str) -> String {
    value.chars().take(60).collect()
}

fn parse_id<T: std::str::FromStr>(line: usize, field: &str, value: &str) -> Result<T, InvalidInput> {
    value.parse().map_err(|_| at(line, field, format!("{:?} is not a valid id", truncate(value))))
}

fn parse_enum<T: std::str::FromStr<Err = InvalidInput>>(
    line: usize,
    field: &str,
    value: &str,
) -> Result<T, InvalidInput> {
    value.parse().map_err(|e: InvalidInput| at(line, field, e.to_string()))
}

fn finite(line: usize, field: &str, value: f64) -> Result<f64, InvalidInput> {
    if value.is_finite() { Ok(value) } else { Err(at(line, field, "must be a finite number")) }
}

/// Reads and validates a whole export; nothing is stored.
pub fn parse(bytes: &[u8]) -> Result<Vec<UserImport>, InvalidInput> {
    if bytes.len() as u64 > MAX_EXPORT_BYTES {
        return Err(InvalidInput::new("export", format!("the file is larger than {MAX_EXPORT_BYTES} bytes")));
    }
    let text = std::str::from_utf8(bytes)
        .map_err(|e| InvalidInput::new("export", format!("the file is not UTF-8 (byte {})", e.valid_up_to())))?;
    let mut lines = text.split('\n').enumerate().map(|(i, l)| (i + 1, l));
    let Some((_, first)) = lines.next().filter(|(_, l)| !l.trim().is_empty()) else {
        return Err(InvalidInput::new("export", "the file is empty"));
    };
    let header: Header =
        serde_json::from_str(first).map_err(|e| at(1, "header", format!("not a membank-export header: {e}")))?;
    if header.format != FORMAT {
        return Err(at(1, "format", format!("is {:?}, expected {FORMAT:?}", truncate(&header.format))));
    }
    if header.version != VERSION {
        return Err(at(1, "version", format!("is {}, this build reads version {VERSION}", header.version)));
    }
    let mut users: Vec<UserImport> = Vec::new();
    let mut memory_ids: HashSet<MemoryId> = HashSet::new();
    let mut event_ids: HashSet<String> = HashSet::new();
    let mut user_keys: HashSet<(String, String)> = HashSet::new();
    let mut own_memories: HashSet<MemoryId> = HashSet::new();
    let mut dims: Option<(String, usize)> = None;
    let mut end: Option<(usize, usize, usize, usize)> = None;
    for (n, raw) in lines {
        if raw.trim().is_empty() {
            continue;
        }
        if end.is_some() {
            return Err(at(n, "type", "a line after the end line"));
        }
        let line: Line = serde_json::from_str(raw).map_err(|e| at(n, "line", e))?;
        match line {
            Line::User { tenant, user, time_zone, created_at, maintained_at, resummarize_due } => {
                let tenant_id = TenantId::new(&tenant).map_err(|e| at(n, "tenant", e))?;
                let user_id = UserId::new(&user).map_err(|e| at(n, "user", e))?;
                if !user_keys.insert((tenant_id.to_string(), user_id.to_string())) {
                    return Err(at(n, "user", format!("{tenant}/{user} appears twice")));
                }
                membank_core::time::UserTimeZone::parse(&time_zone).map_err(|e| at(n, "time_zone", e))?;
                let state = UserState {
                    tenant: tenant_id,
                    user: user_id,
                    time_zone,
                    created_at: parse_time(n, "created_at", &created_at)?,
                    maintained_at: maintained_at.map(|t| parse_time(n, "maintained_at", &t)).transpose()?,
                    resummarize_due,
                };
                own_memories.clear();
                users.push(UserImport { state, memories: Vec::new(), events: Vec::new(), queries: Vec::new() });
            }
            Line::Memory(line) => {
                let user = users.last_mut().ok_or_else(|| at(n, "type", "a memory before any user line"))?;
                let scope = Scope {
                    tenant: user.state.tenant.clone(),
                    user: user.state.user.clone(),
                    agent: line
                        .agent
                        .as_deref()
                        .map(membank_core::AgentLabel::new)
                        .transpose()
                        .map_err(|e| at(n, "agent", e))?,
                    session: line
                        .session
                        .as_deref()
                        .map(membank_core::AgentLabel::new)
                        .transpose()
                        .map_err(|e| at(n, "session", e))?,
                };
                let (memory, vector) = memory_from_line(n, *line, scope, header.vectors, &mut dims)?;
                if !memory_ids.insert(memory.id) {
                    return Err(at(n, "id", format!("memory {} appears twice", memory.id)));
                }
                own_memories.insert(memory.id);
                user.memories.push((memory, vector));
            }
            Line::Event { id, memory_id, kind, at: when, data } => {
                let user = users.last_mut().ok_or_else(|| at(n, "type", "an event before any user line"))?;
                let event_id = parse_id(n, "id", &id)?;
                if !event_ids.insert(id.clone()) {
                    return Err(at(n, "id", format!("event {id} appears twice")));
                }
                let memory_id: Option<MemoryId> = memory_id.map(|m| parse_id(n, "memory_id", &m)).transpose()?;
                if let Some(m) = memory_id
                    && !own_memories.contains(&m)
                {
                    return Err(at(
                        n,
                        "memory_id",
                        format!("names memory {m}, which is not one of this user's memories in the file"),
                    ));
                }
                if !data.is_object() {
                    return Err(at(n, "data", "must be a JSON object"));
                }
                let kind: EventKind = parse_enum(n, "kind", &kind)?;
                user.events.push(Event {
                    id: event_id,
                    seq: 0,
                    memory_id,
                    kind,
                    at: parse_time(n, "at", &when)?,
                    data,
                });
            }
            Line::Query { at: when, vector } => {
                let user = users.last_mut().ok_or_else(|| at(n, "type", "a query before any user line"))?;
                if vector.is_empty() || vector.iter().any(|x| !x.is_finite()) {
                    return Err(at(n, "vector", "must be a non-empty list of finite numbers"));
                }
                user.queries.push((parse_time(n, "at", &when)?, vector));
            }
            Line::End { users, memories, events } => end = Some((n, users, memories, events)),
        }
    }
    let Some((n, want_users, want_memories, want_events)) = end else {
        return Err(InvalidInput::new("export", "the file has no end line: it was cut short"));
    };
    let got = (
        users.len(),
        users.iter().map(|u| u.memories.len()).sum::<usize>(),
        users.iter().map(|u| u.events.len()).sum::<usize>(),
    );
    if got != (want_users, want_memories, want_events) {
        return Err(at(
            n,
            "end",
            format!(
                "says {want_users} users, {want_memories} memories, {want_events} events; the file holds {} users, {} memories, {} events",
                got.0, got.1, got.2
            ),
        ));
    }
    // Links may point forward (a memory superseded by a later one): checked once all are read.
    for user in &users {
        let own: HashSet<MemoryId> = user.memories.iter().map(|(m, _)| m.id).collect();
        for (memory, _) in &user.memories {
            for link in memory.superseded_by.iter().chain(memory.derived_from.iter()) {
                if !own.contains(link) {
                    return Err(InvalidInput::new(
                        "export",
                        format!(
                            "memory {} links to {link}, which is not a memory of the same user in the file",
                            memory.id
                        ),
                    ));
                }
            }
        }
        // A chain of supersessions ends: a cycle would have no current memory, and every
        // walk along `superseded_by` (history, edits) would never finish.
        let next: std::collections::HashMap<MemoryId, MemoryId> =
            user.memories.iter().filter_map(|(m, _)| m.superseded_by.map(|s| (m.id, s))).collect();
        for start in next.keys() {
            let (mut at, mut steps) = (*start, 0usize);
            while let Some(following) = next.get(&at) {
                at = *following;
                steps += 1;
                if at == *start || steps > next.len() {
                    return Err(InvalidInput::new(
                        "export",
                        format!("memory {start} is superseded in a cycle (superseded_by leads back to it)"),
                    ));
                }
            }
        }
    }
    Ok(users)
}

fn memory_from_line(
    n: usize,
    line: MemoryLine,
    scope: Scope,
    vectors: bool,
    dims: &mut Option<(String, usize)>,
) -> Result<(Memory, Option<ModelVector>), InvalidInput> {
    let status: Status = parse_enum(n, "status", &line.status)?;
    if status == Status::Erased && (line.content.is_some() || line.user_text.is_some() || line.assistant_text.is_some())
    {
        return Err(at(n, "content", "an erased memory has no text"));
    }
    if status != Status::Erased && line.content.is_none() {
        return Err(at(n, "content", "missing (only an erased memory has none)"));
    }
    for (field, text) in
        [("content", &line.content), ("user_text", &line.user_text), ("assistant_text", &line.assistant_text)]
    {
        if let Some(text) = text {
            if text.len() > MAX_EXPORT_TEXT_BYTES {
                return Err(at(n, field, format!("is {} bytes; the limit is {MAX_EXPORT_TEXT_BYTES}", text.len())));
            }
            if text.contains('\0') {
                return Err(at(n, field, "must not contain NUL characters"));
            }
        }
    }
    let unit = |field: &str, v: f64| -> Result<f64, InvalidInput> {
        let v = finite(n, field, v)?;
        if (0.0..=1.0).contains(&v) { Ok(v) } else { Err(at(n, field, format!("{v} is not between 0 and 1"))) }
    };
    let forgetting = ForgettingState {
        strength: Strength::new(finite(n, "strength", line.strength)?).map_err(|e| at(n, "strength", e))?,
        recall_count: line.recall_count,
        last_recalled_at: parse_time(n, "last_recalled_at", &line.last_recalled_at)?,
        pinned: line.pinned,
        layer: parse_enum::<Layer>(n, "layer", &line.layer)?,
        importance: unit("importance", line.importance)?,
        base_importance: unit("base_importance", line.base_importance)?,
        fade_age: {
            let v = finite(n, "fade_age", line.fade_age)?;
            if v < 0.0 { return Err(at(n, "fade_age", "must not be negative")) } else { v }
        },
        access_frequency: {
            let v = finite(n, "access_frequency", line.access_frequency)?;
            if v < 0.0 { return Err(at(n, "access_frequency", "must not be negative")) } else { v }
        },
        decay_factor: {
            let v = finite(n, "decay_factor", line.decay_factor)?;
            if v <= 0.0 { return Err(at(n, "decay_factor", "must be positive")) } else { v }
        },
    };
    let memory = Memory {
        id: parse_id(n, "id", &line.id)?,
        scope,
        kind: parse_enum::<Kind>(n, "kind", &line.kind)?,
        source: parse_enum::<Source>(n, "source", &line.source)?,
        content: line.content,
        user_text: line.user_text,
        assistant_text: line.assistant_text,
        occurred_at: parse_time(n, "occurred_at", &line.occurred_at)?,
        recorded_at: parse_time(n, "recorded_at", &line.recorded_at)?,
        day: {
            let day = membank_core::time::parse_day("day", &line.day).map_err(|e| at(n, "day", e.reason))?;
            let occurred = parse_time(n, "occurred_at", &line.occurred_at)?;
            // The local day of `occurred_at` in some time zone (UTC-12 to UTC+14): the zone it
            // was stored under may since have changed, but no zone puts it further away.
            let earliest = (occurred - chrono::Duration::hours(12)).date_naive();
            let latest = (occurred + chrono::Duration::hours(14)).date_naive();
            if day < earliest || day > latest {
                return Err(at(
                    n,
                    "day",
                    format!("{day} is not the date of occurred_at {} in any time zone", line.occurred_at),
                ));
            }
            day
        },
        forgetting,
        status,
        superseded_by: line.superseded_by.map(|s| parse_id(n, "superseded_by", &s)).transpose()?,
        derived_from: line.derived_from.iter().map(|s| parse_id(n, "derived_from", s)).collect::<Result<_, _>>()?,
        metadata: line.metadata,
    };
    let vector = match (line.model, line.vector) {
        (None, None) => None,
        (Some(model), Some(vector)) => {
            if !vectors {
                return Err(at(n, "vector", "the header says the file has no vectors"));
            }
            if vector.is_empty() || vector.iter().any(|x| !x.is_finite()) {
                return Err(at(n, "vector", "must be a non-empty list of finite numbers"));
            }
            // Stored vectors are L2-normalised (a cosine is their dot product): anything else
            // would score outside [-1, 1].
            let norm = vector.iter().map(|x| f64::from(*x) * f64::from(*x)).sum::<f64>().sqrt();
            if (norm - 1.0).abs() > 1e-3 {
                return Err(at(n, "vector", format!("has length {norm:.6}; vectors are normalised to length 1")));
            }
            match dims {
                Some((m, d)) if *m != model || *d != vector.len() => {
                    return Err(at(
                        n,
                        "vector",
                        format!("{model} with {} numbers; earlier vectors were {m} with {d}", vector.len()),
                    ));
                }
                Some(_) => {}
                None => *dims = Some((model.clone(), vector.len())),
            }
            if status == Status::Erased {
                return Err(at(n, "vector", "an erased memory has no vector"));
            }
            Some((EmbeddingModel { id: model, dim: vector.len() }, vector))
        }
        _ => return Err(at(n, "vector", "model and vector come together")),
    };
    Ok((memory, vector))
}
