//! Human-readable output. JSON output goes through `membank_server::wire` instead.

use membank_engine::core::Memory;
use membank_engine::core::event::Event;
use membank_engine::{ListResponse, RecallHit, RecallResponse, SweepReport};

fn one_line(text: &str, max: usize) -> String {
    let flat: String = text.split_whitespace().collect::<Vec<_>>().join(" ");
    if flat.chars().count() > max { format!("{}…", flat.chars().take(max).collect::<String>()) } else { flat }
}

fn content(m: &Memory) -> String {
    m.content.as_deref().map(|c| one_line(c, 160)).unwrap_or_else(|| "(erased)".into())
}

/// What a recall or listing says of a user nothing was ever stored for, instead of an
/// empty answer that would look like a user without matching memories.
pub fn no_such_user(user: &str) -> String {
    format!(
        "no such user: nothing was ever stored for {user:?} in this database (`membank users` lists its users; check --user, --tenant and --db)\n"
    )
}

pub fn recall(r: &RecallResponse) -> String {
    let mut out = String::new();
    out.push_str(&date_filter(r));
    if r.results.is_empty() {
        out.push_str("no memories found\n");
        return out;
    }
    for (i, hit) in r.results.iter().enumerate() {
        let m = &hit.memory;
        // Retention and strength of one moment: after this recall. The value the ranking
        // used is named as such when the recall changed it.
        let before = if (hit.retention - hit.retention_before).abs() >= 0.005 {
            format!(" ({:.2} before this recall)", hit.retention_before)
        } else {
            String::new()
        };
        out.push_str(&format!(
            "{:>2}. [{}] {} {}  score {:.4}  R {:.2}{before}  S {}{}\n",
            i + 1,
            m.day,
            m.kind,
            m.id,
            hit.score,
            hit.retention,
            m.forgetting.strength.get(),
            if hit.reminisced { "  (from the archive)" } else { "" }
        ));
        out.push_str(&format!("    {}\n    {}\n", score_parts(hit), content(m)));
    }
    out.push_str(&format!(
        "score: rank fusion: each ranking a memory is in adds 1/({k} + its place), so first place adds {first:.4};\n       dense ranks by meaning (cosine), lexical by shared words (BM25). R: retention after this recall.\n",
        k = r.rrf_k,
        first = membank_engine::core::fusion::rank_share(1.0, r.rrf_k, 1),
    ));
    out
}

/// `= dense 0.0164 (#1, cosine 0.61) + lexical 0.0161 (#2, BM25 1.43) + date 0.0328 …`
fn score_parts(hit: &RecallHit) -> String {
    let p = &hit.parts;
    let mut terms = Vec::new();
    if let Some(rank) = p.dense_rank {
        terms.push(format!("dense {:.4} (#{rank}, cosine {:.2})", p.dense, hit.dense.unwrap_or(0.0)));
    }
    if let Some(rank) = p.lexical_rank {
        terms.push(format!("lexical {:.4} (#{rank}, BM25 {:.2})", p.lexical, hit.lexical.unwrap_or(0.0)));
    }
    if p.date > 0.0 {
        terms.push(format!("date {:.4}", p.date));
    }
    if p.neighbour > 0.0 {
        terms.push(format!("neighbour {:.4}", p.neighbour));
    }
    let mut line = format!("= {}", if terms.is_empty() { "0".to_string() } else { terms.join(" + ") });
    if p.speaker != 1.0 {
        line.push_str(&format!(", x{:.2} speaker named", p.speaker));
    }
    if p.retention != 1.0 {
        line.push_str(&format!(", x{:.2} retention", p.retention));
    }
    line
}

/// `dates: 2024-05-04, from "May 4th" in the query (…): memories of that day first`
fn date_filter(r: &RecallResponse) -> String {
    let Some(d) = &r.date_filter else { return String::new() };
    let days = match (d.from, d.to) {
        (Some(from), Some(to)) if from == to => from.to_string(),
        (Some(from), Some(to)) => format!("{from} to {to}"),
        (Some(from), None) => format!("from {from}"),
        (None, Some(to)) => format!("up to {to}"),
        (None, None) => "any".to_string(),
    };
    let Some(expression) = &d.from_query else {
        return format!("dates: {days} (only these days)\n");
    };
    let year = match d.year_inferred.map(|y| y.as_str()) {
        Some("latest_with_memories") => format!("; no year given: the most recent {expression:?} with memories"),
        Some(_) => format!("; no year given and no {expression:?} with memories: the most recent one"),
        None => String::new(),
    };
    let how = if d.exact {
        "memories of these days rank first, others follow"
    } else {
        "memories of these days rank a little higher"
    };
    format!("dates: {days}, from {expression:?} in the query{year}; {how}\n")
}

/// True when the next sweep archives this memory for its retention: active, not pinned,
/// below the policy's threshold (θ, or FadeMem's ε). `archive_below` is `None` when the
/// policy does not archive by a threshold (stochastic draws, rank mode).
fn past_threshold(m: &Memory, retention: f64, archive_below: Option<f64>) -> bool {
    membank_engine::core::forgetting::past_threshold(archive_below, m.status, &m.forgetting, retention)
}

/// One memory in full, saying plainly when it is already past the archive threshold
/// (`archive_below`, the policy's θ or ε; `None` marks nothing).
pub fn memory(m: &Memory, retention: f64, archive_below: Option<f64>) -> String {
    let past = if past_threshold(m, retention, archive_below) {
        format!("  past the archive threshold ({:.2}): the next sweep archives it", archive_below.unwrap_or_default())
    } else {
        String::new()
    };
    let mut out = format!(
        "id:           {}\nuser:         {}\nkind:         {} (source: {})\nstatus:       {}\nday:          {}\noccurred_at:  {}\nrecorded_at:  {}\nstrength:     {}  recalls: {}  last recall: {}\nretention:    {:.4}{}{}\nimportance:   {:.2} (base {:.2}, {})  layer: {}  FadeMem age: {:.1} days\n",
        m.id,
        m.scope.user,
        m.kind,
        m.source,
        m.status,
        m.day,
        m.occurred_at.to_rfc3339(),
        m.recorded_at.to_rfc3339(),
        m.forgetting.strength.get(),
        m.forgetting.recall_count,
        m.forgetting.last_recalled_at.to_rfc3339(),
        retention,
        if m.forgetting.pinned { "  (pinned)" } else { "" },
        past,
        m.forgetting.importance,
        m.forgetting.base_importance,
        m.metadata.get("importance_source").map(String::as_str).unwrap_or("default"),
        m.forgetting.layer,
        m.forgetting.fade_age,
    );
    match (&m.user_text, &m.assistant_text) {
        (Some(user), assistant) => {
            out.push_str(&format!("user said:    {user}\n"));
            if let Some(reply) = assistant {
                out.push_str(&format!("assistant:    {reply}\n"));
            }
        }
        _ => out.push_str(&format!("content:      {}\n", m.content.as_deref().unwrap_or("(erased)"))),
    }
    out
}

/// A page of memories, marking those already past the archive threshold and counting them.
pub fn list(l: &ListResponse) -> String {
    let archive_below = l.archive_below;
    let mut out = String::new();
    let mut past_count = 0;
    for (m, retention) in &l.memories {
        let pin = if m.forgetting.pinned { " pinned" } else { "" };
        let past = past_threshold(m, *retention, archive_below);
        past_count += usize::from(past);
        out.push_str(&format!(
            "{} [{}] {:<8} {:<8} S {:<4} R {:.2}{} I {:.2} {:<5}{}  {}\n",
            m.id,
            m.day,
            // as_str: the Display impls do not pad.
            m.kind.as_str(),
            m.status.as_str(),
            m.forgetting.strength.get(),
            retention,
            if past { " (past threshold: the next sweep archives it)" } else { "" },
            m.forgetting.importance,
            m.forgetting.layer.as_str(),
            pin,
            content(m)
        ));
    }
    out.push_str(&format!(
        "({} active, {} archived, {} superseded, {} erased)\n",
        l.counts.active, l.counts.archived, l.counts.superseded, l.counts.erased
    ));
    if let (Some(threshold), 1..) = (archive_below, past_count) {
        let (these, them) = if past_count == 1 {
            ("1 memory listed is".to_string(), "it")
        } else {
            (format!("{past_count} memories listed are"), "them")
        };
        out.push_str(&format!(
            "{these} past the archive threshold (R < {threshold}): the next sweep archives {them}\n"
        ));
    }
    out
}

/// The past-tense verb of a report, or what would happen on a dry run.
fn did(dry_run: bool, done: &str, would: &str) -> String {
    if dry_run { format!("would {would}") } else { done.to_string() }
}

pub fn sweep(r: &SweepReport) -> String {
    let d = r.dry_run;
    let mut out = format!(
        "{}examined {}, {} {}, {} {}, {} {}\n",
        if d { "dry run, nothing changed: " } else { "" },
        r.examined,
        did(d, "archived", "archive"),
        r.archived.len(),
        did(d, "kept", "keep"),
        r.kept,
        if d { "the per-pass cap would defer" } else { "deferred by the per-pass cap" },
        r.deferred
    );
    for a in &r.archived {
        out.push_str(&format!(
            "  {}{}  t {:.2}  S {}  R {:.4}\n",
            if d { "would archive " } else { "" },
            a.id,
            a.elapsed_units,
            a.strength,
            a.retention
        ));
    }
    out
}

pub fn maintain(r: &membank_engine::MaintainReport) -> String {
    let d = r.dry_run;
    let mut out = format!(
        "{}{} ({}): examined {}, {} {}, {} {}, {} {}, {} {}, {} {}, conflicts {}, importance rated {}, {} {}\n",
        if d { "dry run, nothing changed: " } else { "" },
        r.user,
        r.policy.as_str(),
        r.examined,
        did(d, "promoted", "promote"),
        r.promoted,
        did(d, "demoted", "demote"),
        r.demoted,
        did(d, "archived", "archive"),
        r.archived.len(),
        did(d, "merged", "merge"),
        r.merged.len(),
        did(d, "fused", "fuse"),
        r.fused.len(),
        r.conflicts,
        r.rated,
        if d { "the per-pass cap would defer" } else { "deferred by the per-pass cap" },
        r.deferred
    );
    for a in &r.archived {
        out.push_str(&format!(
            "  {} {}  t {:.2}  S {}  R {:.4}\n",
            did(d, "archived", "archive"),
            a.id,
            a.elapsed_units,
            a.strength,
            a.retention
        ));
    }
    for m in &r.merged {
        out.push_str(&format!(
            "  {} {} into {}  cosine {:.3}  overlap {:.2}\n",
            did(d, "merged  ", "merge"),
            m.old,
            m.by,
            m.similarity,
            m.overlap
        ));
    }
    for id in &r.fused {
        out.push_str(&format!("  {} {id}\n", did(d, "fused   ", "fuse")));
    }
    for s in &r.skipped {
        out.push_str(&format!("  skipped: {s}\n"));
    }
    out
}

/// A page of the event log in the order things happened (each event's time, then its log
/// position: an operation given an earlier `--now` is logged after events it precedes),
/// numbered from 1 for this listing. The log position (`log`) is global to the store, so
/// it skips the numbers of other users' events; it is the cursor `--after` takes, and the
/// pages follow it.
pub fn events(events: &[Event]) -> String {
    if events.is_empty() {
        return "no events\n".into();
    }
    let mut in_time: Vec<&Event> = events.iter().collect();
    in_time.sort_by(|a, b| a.at.cmp(&b.at).then(a.seq.cmp(&b.seq)));
    let width = events.len().to_string().len().max(2);
    let log_width = in_time.iter().map(|e| e.seq.to_string().len()).max().unwrap_or(3).max(3);
    let mut out =
        format!("{:>width$}  {:<24}  {:<12} {:<36}  {:>log_width$}  data\n", "#", "at", "kind", "memory", "log");
    for (n, e) in in_time.iter().enumerate() {
        let memory = e.memory_id.map(|id| id.to_string()).unwrap_or_else(|| "-".into());
        out.push_str(&format!(
            "{:>width$}  {:<24}  {:<12} {:<36}  {:>log_width$}  {}\n",
            n + 1,
            membank_server::wire::rfc3339(e.at),
            e.kind.as_str(),
            memory,
            e.seq,
            e.data
        ));
    }
    let last = events.iter().map(|e| e.seq).max().unwrap_or_default();
    out.push_str(&format!(
        "{} events in the order they happened. log: position in the store's event log, shared by all users (so it skips numbers); later events: --after {last}\n",
        events.len()
    ));
    out
}

#[cfg(test)]
mod tests {
    use chrono::{TimeZone, Utc};
    use membank_engine::core::{Kind, Scope, Status, TenantId, UserId};
    use membank_store::StatusCounts;

    use super::*;

    /// An active turn of user ana, said and stored at 2024-05-04 09:00 UTC.
    fn sample(text: &str) -> Memory {
        let at = Utc.with_ymd_and_hms(2024, 5, 4, 9, 0, 0).unwrap();
        let scope = Scope::user(TenantId::default_tenant(), UserId::new("ana").unwrap());
        Memory { user_text: Some(text.into()), ..Memory::fixture(&scope, Kind::Turn, text, at) }
    }

    const PAST: &str = "(past threshold: the next sweep archives it)";

    #[test]
    fn a_list_marks_and_counts_what_the_next_sweep_archives() {
        let faded = sample("faded");
        let mut pinned = sample("pinned");
        pinned.forgetting.pinned = true;
        let mut archived = sample("archived already");
        archived.status = Status::Archived;
        let fresh = sample("fresh");
        let page = ListResponse {
            now: faded.occurred_at,
            memories: vec![(faded, 0.01), (pinned, 0.01), (archived, 0.01), (fresh, 0.9)],
            counts: StatusCounts { active: 3, archived: 1, superseded: 0, erased: 0 },
            archive_below: Some(0.05),
            user_known: true,
        };
        let text = list(&page);
        let marked: Vec<&str> = text.lines().filter(|l| l.contains(PAST)).collect();
        assert_eq!(marked.len(), 1, "{text}");
        assert!(marked[0].ends_with("  faded"), "{text}");
        assert!(text.ends_with("(3 active, 1 archived, 0 superseded, 0 erased)\n1 memory listed is past the archive threshold (R < 0.05): the next sweep archives it\n"), "{text}");
        // A policy that does not archive by a threshold marks nothing.
        let text = list(&ListResponse { archive_below: None, ..page });
        assert!(!text.contains("past"), "{text}");
    }

    #[test]
    fn show_says_when_a_memory_is_past_the_threshold() {
        let m = sample("faded");
        assert!(
            memory(&m, 0.01, Some(0.05))
                .contains("retention:    0.0100  past the archive threshold (0.05): the next sweep archives it\n")
        );
        assert!(!memory(&m, 0.2, Some(0.05)).contains("past"));
        assert!(!memory(&m, 0.01, None).contains("past"));
    }
}
