//! MemoryBank's second layer: per user and day, an event summary and a personality
//! portrait of that day; over all days, a global summary (from the daily summaries) and a
//! global portrait (from the daily portraits). Each is a memory of its kind with
//! `derived_from`, its own embedding, and the prompt id and model in its metadata. Also
//! [`Engine::profile`], which reads them back.
//!
//! **Incremental.** Each daily memory records a fingerprint (SHA-256) of the day's active
//! sources: the id and content of every active turn and note of that day. A day is redone
//! only when the fingerprint it would have now differs from the recorded one, which is
//! exactly when one of its turns was added, edited, archived, restored or erased. A global
//! memory records the fingerprint of the daily memories it was made from, so it is redone
//! only when a daily one was. With nothing new, a run makes no LLM call. A redone memory
//! *supersedes* the old one (kept, restorable), it never deletes it. A day whose sources
//! are all gone has its summary and portrait archived, with the reason.
//!
//! A derived memory that a sweep archived still counts as current: forgetting a summary
//! by design must not make the next run pay to write it again.
//!
//! **Long input is chunked, never cut.** Sources are packed into chunks that fit the
//! model's prompt budget (a single oversized turn is split by characters); each chunk is
//! condensed on its own, and the partial results are merged with the `merge` prompt,
//! recursively if they still do not fit.

use std::collections::BTreeMap;

use chrono::NaiveDate;
use membank_core::{ForgettingState, Kind, Memory, MemoryId, Scope, Source, Status, Strength};
use membank_llm::prompts::{self, Prompt};
use membank_llm::{CompletionRequest, Llm, Message, estimate_tokens};
use membank_store::{ListQuery, NewMemory};
use sha2::{Digest, Sha256};

use crate::quote::neutralise;
use crate::{Engine, EngineError};

/// Metadata keys of derived memories.
pub(crate) mod meta {
    /// The prompt that made it (`name@version`).
    pub const PROMPT: &str = "prompt";
    /// The model that made it.
    pub const MODEL: &str = "model";
    /// SHA-256 over its sources' ids and contents.
    pub const FINGERPRINT: &str = "fingerprint";
    /// How many chunks the input was cut into (1: not chunked).
    pub const CHUNKS: &str = "chunks";
}

/// Bring a user's summaries and portraits up to date.
#[derive(Debug, Clone)]
pub struct SummarizeRequest {
    /// Whose memories (agent and session labels are ignored: summaries are per user).
    pub scope: Scope,
    /// Redo every day and the globals even if nothing changed (after a prompt or model change).
    pub force: bool,
}

/// What happened to one derived memory.
#[derive(Debug, Clone, PartialEq)]
pub enum DerivedOutcome {
    /// Its sources did not change; nothing was done.
    Unchanged(MemoryId),
    /// Made anew (first time, or superseding the listed old one).
    Made {
        /// The new memory.
        id: MemoryId,
        /// The memory it superseded, if any.
        replaced: Option<MemoryId>,
    },
    /// Its sources are gone; it was archived.
    Archived(MemoryId),
    /// There is nothing to make it from.
    Absent,
}

impl DerivedOutcome {
    /// True when this run changed something.
    pub fn changed(&self) -> bool {
        matches!(self, DerivedOutcome::Made { .. } | DerivedOutcome::Archived(_))
    }
}

/// One day's result.
#[derive(Debug, Clone, PartialEq)]
pub struct DayOutcome {
    /// The day (in the user's zone).
    pub day: NaiveDate,
    /// Active turns and notes of that day.
    pub sources: usize,
    /// Its event summary.
    pub summary: DerivedOutcome,
    /// Its portrait.
    pub portrait: DerivedOutcome,
}

/// The result of a summarize run.
#[derive(Debug, Clone, PartialEq)]
pub struct SummarizeResponse {
    /// Every day with sources or a current daily memory, oldest first.
    pub days: Vec<DayOutcome>,
    /// The global summary.
    pub global_summary: DerivedOutcome,
    /// The global portrait.
    pub global_portrait: DerivedOutcome,
    /// Calls made to the model.
    pub llm_calls: usize,
    /// The model used.
    pub model: String,
}

/// Read a user's portrait and summaries.
#[derive(Debug, Clone)]
pub struct ProfileRequest {
    /// Whose.
    pub scope: Scope,
}

/// One day's summary and portrait.
#[derive(Debug, Clone, PartialEq)]
pub struct DayProfile {
    /// The day.
    pub day: NaiveDate,
    /// Its event summary, if made.
    pub summary: Option<Memory>,
    /// Its portrait, if made.
    pub portrait: Option<Memory>,
}

/// A user's profile: the globals and the days they draw on.
#[derive(Debug, Clone, PartialEq)]
pub struct ProfileResponse {
    /// The global portrait, if made.
    pub global_portrait: Option<Memory>,
    /// The global summary, if made.
    pub global_summary: Option<Memory>,
    /// The daily memories the globals were made from, oldest first.
    pub days: Vec<DayProfile>,
}

/// Tokens kept free in every prompt for message framing and our own wrapper lines.
const FRAMING_TOKENS: usize = 64;

/// A summarisation job: its prompt and placeholders, and the quoted material.
struct Job<'a> {
    prompt: Prompt,
    values: Vec<(&'static str, String)>,
    /// Wraps the material: `<tag>` … `</tag>`.
    tag: &'a str,
    /// What the merge prompt calls the result ("event summary", …).
    what: &'a str,
    /// The period the merge prompt names.
    period: String,
}

impl Engine {
    /// Summarizes what changed since the last run; see the module docs.
    ///
    /// Errors: `LlmNotConfigured` before anything is read; LLM failures stop the run, and
    /// what was made before the failure stays (each memory is stored on its own).
    pub fn summarize(&self, request: SummarizeRequest) -> Result<SummarizeResponse, EngineError> {
        let llm = self.llm()?.clone();
        let scope = Scope::user(request.scope.tenant.clone(), request.scope.user.clone());
        // Summarising is not a reason to create a user: an unknown one is `NotFound`.
        let user = self
            .store
            .find_user(&scope.tenant, &scope.user)?
            .ok_or_else(|| EngineError::NotFound(format!("user {}", scope.user)))?;
        let mut calls = 0usize;

        let sources = self.by_day(&scope, &[Kind::Turn, Kind::Note], &[Status::Active])?;
        let current = |kind| -> Result<BTreeMap<NaiveDate, Memory>, EngineError> {
            Ok(self
                .by_day(&scope, &[kind], &[Status::Active, Status::Archived])?
                .into_iter()
                .filter_map(|(day, mut all)| all.pop().map(|m| (day, m)))
                .collect())
        };
        let summaries = current(Kind::DailySummary)?;
        let portraits = current(Kind::DailyPortrait)?;

        let mut days: Vec<NaiveDate> =
            sources.keys().chain(summaries.keys()).chain(portraits.keys()).copied().collect();
        days.sort();
        days.dedup();
        let mut outcomes = Vec::with_capacity(days.len());
        for day in days {
            let day_sources = sources.get(&day).map(Vec::as_slice).unwrap_or(&[]);
            let fingerprint = fingerprint(day_sources);
            let conversation: Vec<String> = day_sources.iter().map(source_line).collect();
            let period = format!("{day}");
            let summary = self.refresh(
                &llm,
                &scope,
                Kind::DailySummary,
                summaries.get(&day),
                day_sources,
                &fingerprint,
                request.force,
                Job {
                    prompt: prompts::DAILY_SUMMARY,
                    values: vec![("user", user.user.clone()), ("day", period.clone())],
                    tag: "conversation",
                    what: "event summary",
                    period: period.clone(),
                },
                &conversation,
                &mut calls,
            )?;
            let portrait = self.refresh(
                &llm,
                &scope,
                Kind::DailyPortrait,
                portraits.get(&day),
                day_sources,
                &fingerprint,
                request.force,
                Job {
                    prompt: prompts::DAILY_PORTRAIT,
                    values: vec![("user", user.user.clone()), ("day", period.clone())],
                    tag: "conversation",
                    what: "personality portrait",
                    period,
                },
                &conversation,
                &mut calls,
            )?;
            outcomes.push(DayOutcome { day, sources: day_sources.len(), summary, portrait });
        }

        let global = |kind: Kind| self.current_global(&scope, kind);
        // The globals draw on the current daily memories of days that still have sources
        // (a daily archived by a sweep still counts; one whose day is empty does not).
        let dailies = |kind| -> Result<Vec<Memory>, EngineError> {
            Ok(current(kind)?.into_iter().filter(|(day, _)| sources.contains_key(day)).map(|(_, m)| m).collect())
        };
        let daily_summaries = dailies(Kind::DailySummary)?;
        let daily_portraits = dailies(Kind::DailyPortrait)?;
        let everything = "all days".to_string();
        let global_summary = self.refresh(
            &llm,
            &scope,
            Kind::GlobalSummary,
            global(Kind::GlobalSummary)?.as_ref(),
            &daily_summaries,
            &fingerprint(&daily_summaries),
            request.force,
            Job {
                prompt: prompts::GLOBAL_SUMMARY,
                values: vec![("user", user.user.clone())],
                tag: "summaries",
                what: "overall summary",
                period: everything.clone(),
            },
            &daily_summaries.iter().map(dated_line).collect::<Vec<_>>(),
            &mut calls,
        )?;
        let global_portrait = self.refresh(
            &llm,
            &scope,
            Kind::GlobalPortrait,
            global(Kind::GlobalPortrait)?.as_ref(),
            &daily_portraits,
            &fingerprint(&daily_portraits),
            request.force,
            Job {
                prompt: prompts::GLOBAL_PORTRAIT,
                values: vec![("user", user.user.clone())],
                tag: "portraits",
                what: "overall personality portrait",
                period: everything,
            },
            &daily_portraits.iter().map(dated_line).collect::<Vec<_>>(),
            &mut calls,
        )?;
        tracing::info!(user = %scope.user, llm_calls = calls, "summarized");
        // Everything an erasure took away has been made again from what remains.
        self.store.clear_resummarize_due(&scope)?;
        Ok(SummarizeResponse {
            days: outcomes,
            global_summary,
            global_portrait,
            llm_calls: calls,
            model: llm.model().to_string(),
        })
    }

    /// The global portrait and summary with the daily memories they were made from.
    pub fn profile(&self, request: ProfileRequest) -> Result<ProfileResponse, EngineError> {
        let scope = Scope::user(request.scope.tenant.clone(), request.scope.user.clone());
        let global_portrait = self.current_global(&scope, Kind::GlobalPortrait)?;
        let global_summary = self.current_global(&scope, Kind::GlobalSummary)?;
        let mut ids: Vec<MemoryId> = Vec::new();
        for global in [&global_portrait, &global_summary].into_iter().flatten() {
            ids.extend(&global.derived_from);
        }
        let mut days: BTreeMap<NaiveDate, DayProfile> = BTreeMap::new();
        for memory in self.store.get_many(&scope, &ids)? {
            let entry =
                days.entry(memory.day).or_insert_with(|| DayProfile { day: memory.day, summary: None, portrait: None });
            match memory.kind {
                Kind::DailySummary => entry.summary = Some(memory),
                Kind::DailyPortrait => entry.portrait = Some(memory),
                _ => {}
            }
        }
        Ok(ProfileResponse { global_portrait, global_summary, days: days.into_values().collect() })
    }

    /// The newest active (or, failing that, archived) global memory of a kind.
    pub(crate) fn current_global(&self, scope: &Scope, kind: Kind) -> Result<Option<Memory>, EngineError> {
        for status in [Status::Active, Status::Archived] {
            let query = ListQuery { statuses: vec![status], kinds: vec![kind], limit: 1, ..ListQuery::default() };
            if let Some(memory) = self.store.list(scope, &query)?.pop() {
                return Ok(Some(memory));
            }
        }
        Ok(None)
    }

    /// Every memory of these kinds and statuses, grouped by day, each day oldest first.
    fn by_day(
        &self,
        scope: &Scope,
        kinds: &[Kind],
        statuses: &[Status],
    ) -> Result<BTreeMap<NaiveDate, Vec<Memory>>, EngineError> {
        let mut out: BTreeMap<NaiveDate, Vec<Memory>> = BTreeMap::new();
        let page = membank_core::limits::MAX_PAGE_SIZE;
        let mut offset = 0;
        loop {
            let query = ListQuery {
                statuses: statuses.to_vec(),
                kinds: kinds.to_vec(),
                limit: page,
                offset,
                oldest_first: true,
                ..ListQuery::default()
            };
            let batch = self.store.list(scope, &query)?;
            let n = batch.len();
            for memory in batch {
                out.entry(memory.day).or_default().push(memory);
            }
            if n < page {
                return Ok(out);
            }
            offset += n;
        }
    }

    /// Makes, keeps or archives one derived memory so that it matches its sources.
    #[allow(clippy::too_many_arguments)]
    fn refresh(
        &self,
        llm: &std::sync::Arc<dyn Llm>,
        scope: &Scope,
        kind: Kind,
        existing: Option<&Memory>,
        sources: &[Memory],
        fingerprint: &str,
        force: bool,
        job: Job<'_>,
        material: &[String],
        calls: &mut usize,
    ) -> Result<DerivedOutcome, EngineError> {
        if sources.is_empty() {
            return match existing {
                Some(old) if old.status == Status::Active => {
                    let archived = self.store.archive(
                        scope,
                        old.id,
                        "all the memories it was made from are gone",
                        self.clock.now(),
                    )?;
                    Ok(DerivedOutcome::Archived(archived.id))
                }
                _ => Ok(DerivedOutcome::Absent),
            };
        }
        if let Some(old) = existing
            && !force
            && old.metadata.get(meta::FINGERPRINT).map(String::as_str) == Some(fingerprint)
        {
            return Ok(DerivedOutcome::Unchanged(old.id));
        }
        let (text, chunks) = self.condense(llm.as_ref(), &job, material, calls)?;
        let now = self.clock.now();
        let last = sources.iter().max_by_key(|m| m.occurred_at).map(|m| (m.occurred_at, m.day));
        let (occurred_at, day) = last.unwrap_or((now, sources[0].day));
        // Derived memories decay with the memories they summarise: as strong as the
        // strongest source, last recalled when the latest source was.
        let mut forgetting = ForgettingState::new(occurred_at);
        forgetting.strength = sources
            .iter()
            .map(|m| m.forgetting.strength)
            .fold(Strength::INITIAL, |a, b| if b.get() > a.get() { b } else { a });
        forgetting.last_recalled_at =
            sources.iter().map(|m| m.forgetting.last_recalled_at).max().unwrap_or(occurred_at);
        let metadata = BTreeMap::from([
            (meta::PROMPT.to_string(), job.prompt.id()),
            (meta::MODEL.to_string(), llm.model().to_string()),
            (meta::FINGERPRINT.to_string(), fingerprint.to_string()),
            (meta::CHUNKS.to_string(), chunks.to_string()),
        ]);
        let memory = Memory {
            id: MemoryId::generate(now),
            scope: scope.clone(),
            kind,
            source: Source::Derived,
            content: Some(text.clone()),
            user_text: None,
            assistant_text: None,
            occurred_at,
            recorded_at: now,
            day,
            forgetting,
            status: Status::Active,
            superseded_by: None,
            derived_from: sources.iter().map(|m| m.id).collect(),
            metadata,
        };
        let vector = self
            .embedder
            .embed(&[text.as_str()])?
            .pop()
            .ok_or_else(|| EngineError::Storage("the embedder returned no vector".into()))?;
        let replaces: Vec<MemoryId> = existing.map(|m| m.id).into_iter().collect();
        let stored = self.store.insert_superseding(
            NewMemory { memory, embedding: Some((self.model(), vector)) },
            &replaces,
            now,
        )?;
        tracing::debug!(id = %stored.id, kind = %kind, day = %stored.day, chunks, "made derived memory");
        Ok(DerivedOutcome::Made { id: stored.id, replaced: existing.map(|m| m.id) })
    }

    /// Runs a job over its material, chunked to the model's budget and merged.
    /// Returns the text and the number of chunks of the first level.
    fn condense(
        &self,
        llm: &dyn Llm,
        job: &Job<'_>,
        material: &[String],
        calls: &mut usize,
    ) -> Result<(String, usize), EngineError> {
        let values: Vec<(&str, &str)> = job.values.iter().map(|(k, v)| (*k, v.as_str())).collect();
        let system = job.prompt.render(&values);
        let chunks = pack(material, room(llm, &system)?);
        let mut partials = Vec::with_capacity(chunks.len());
        for (i, chunk) in chunks.iter().enumerate() {
            let part =
                if chunks.len() > 1 { format!(" part=\"{} of {}\"", i + 1, chunks.len()) } else { String::new() };
            let body = format!("<{tag}{part}>\n{chunk}\n</{tag}>", tag = job.tag);
            partials.push(call(llm, &system, body, calls)?);
        }
        let first_level = partials.len();
        // Merge partial results until one remains; each level at least halves the count
        // because `room` guarantees two replies fit in one prompt.
        let mut depth = 0;
        while partials.len() > 1 {
            depth += 1;
            if depth > 16 {
                return Err(EngineError::Storage("merging partial summaries did not converge".into()));
            }
            let merge_system = prompts::MERGE.render(&[
                ("what", job.what),
                ("user", values.iter().find(|(k, _)| *k == "user").map(|(_, v)| *v).unwrap_or("the person")),
                ("period", &job.period),
                ("instruction", &system),
            ]);
            let groups = pack(&partials, room(llm, &merge_system)?);
            let mut next = Vec::with_capacity(groups.len());
            for group in groups {
                next.push(call(llm, &merge_system, format!("<parts>\n{group}\n</parts>"), calls)?);
            }
            if next.len() >= partials.len() {
                return Err(EngineError::Storage(
                    "the model's context window is too small to merge partial summaries; raise [llm] context_tokens"
                        .into(),
                ));
            }
            partials = next;
        }
        Ok((partials.pop().unwrap_or_default(), first_level))
    }
}

/// Tokens available for material next to `system`, leaving room for the reply; at
/// least two replies must fit so merging always makes progress.
fn room(llm: &dyn Llm, system: &str) -> Result<usize, EngineError> {
    let budget = llm.budget();
    let room = budget.prompt_tokens().saturating_sub(estimate_tokens(system) + FRAMING_TOKENS);
    if room < 2 * budget.reply_tokens.max(1) {
        return Err(membank_llm::LlmError::ContextTooLong {
            message: format!("a context window of {} tokens with {}-token replies leaves too little room for material; raise [llm] context_tokens", budget.context_tokens, budget.reply_tokens),
            estimated: None,
        }
        .into());
    }
    Ok(room)
}

fn call(llm: &dyn Llm, system: &str, body: String, calls: &mut usize) -> Result<String, EngineError> {
    *calls += 1;
    let completion = llm.complete(&CompletionRequest::new(vec![Message::system(system), Message::user(body)]))?;
    if completion.truncated() {
        tracing::warn!("the model's reply was cut by the reply token budget");
    }
    let text = completion.content.trim().to_string();
    if text.is_empty() {
        return Err(membank_llm::LlmError::Malformed {
            url: llm.model().to_string(),
            reason: "the model returned an empty summary".into(),
        }
        .into());
    }
    Ok(text)
}

/// Packs lines into chunks of at most `room` estimated tokens, in order; a line longer
/// than `room` is split by characters over several chunks (never dropped).
fn pack(lines: &[String], room: usize) -> Vec<String> {
    let mut chunks = Vec::new();
    let mut current = String::new();
    let mut used = 0usize;
    for line in lines {
        for piece in split_to_fit(line, room) {
            let cost = estimate_tokens(&piece) + 1;
            if used + cost > room && !current.is_empty() {
                chunks.push(std::mem::take(&mut current));
                used = 0;
            }
            if !current.is_empty() {
                current.push('\n');
            }
            current.push_str(&piece);
            used += cost;
        }
    }
    if !current.is_empty() || chunks.is_empty() {
        chunks.push(current);
    }
    chunks
}

fn split_to_fit(line: &str, room: usize) -> Vec<String> {
    if estimate_tokens(line) < room {
        return vec![line.to_string()];
    }
    let mut pieces = Vec::new();
    let mut piece = String::new();
    for c in line.chars() {
        piece.push(c);
        // Checked per character: estimates are additive, so this is the longest prefix that fits.
        if estimate_tokens(&piece) + 1 >= room {
            pieces.push(std::mem::take(&mut piece));
        }
    }
    if !piece.is_empty() {
        pieces.push(piece);
    }
    pieces
}

/// One turn or note as a line of a day's conversation.
fn source_line(memory: &Memory) -> String {
    let time = memory.occurred_at.format("%H:%M UTC");
    let body = match (memory.kind, &memory.user_text) {
        (Kind::Turn, Some(user)) => match &memory.assistant_text {
            Some(reply) => format!("[{time}] {}: {user}\n[{time}] Assistant: {reply}", "User"),
            None => format!("[{time}] User: {user}"),
        },
        _ => format!("[{time}] Note ({}): {}", memory.source, memory.content.as_deref().unwrap_or("")),
    };
    neutralise(&body)
}

/// A daily memory as a dated line of global material.
fn dated_line(memory: &Memory) -> String {
    neutralise(&format!("[{}] {}", memory.day, memory.content.as_deref().unwrap_or("").replace('\n', " ")))
}

/// SHA-256 over the sources' ids and contents, in id order (ids are unique per memory,
/// so the order is canonical).
fn fingerprint(sources: &[Memory]) -> String {
    let mut sorted: Vec<&Memory> = sources.iter().collect();
    sorted.sort_by_key(|m| m.id.to_string());
    let mut hasher = Sha256::new();
    for memory in sorted {
        hasher.update(memory.id.to_string().as_bytes());
        hasher.update([0u8]);
        hasher.update(memory.content.as_deref().unwrap_or("").as_bytes());
        hasher.update([0u8]);
    }
    hasher.finalize().iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pack_keeps_every_character_and_respects_the_room() {
        let lines: Vec<String> = (0..50).map(|i| format!("line {i} {}", "x".repeat(i * 7))).collect();
        let chunks = pack(&lines, 60);
        assert!(chunks.len() > 1);
        assert!(chunks.iter().all(|c| estimate_tokens(c) <= 60 + 2), "{chunks:?}");
        let joined: String = chunks.join("\n");
        assert_eq!(joined.replace('\n', ""), lines.join("").replace('\n', ""));
    }

    #[test]
    fn an_oversized_line_is_split_not_dropped() {
        let long = "word ".repeat(400);
        let chunks = pack(std::slice::from_ref(&long), 50);
        assert!(chunks.len() >= 10, "{}", chunks.len());
        assert_eq!(chunks.concat(), long);
    }
}
