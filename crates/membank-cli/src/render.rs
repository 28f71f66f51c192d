//! Human-readable output. JSON output goes through `membank_server::wire` instead.

use membank_engine::core::event::Event;
use membank_engine::core::Memory;
use membank_engine::{ListResponse, RecallResponse, SweepReport};

fn one_line(text: &str, max: usize) -> String {
    let flat: String = text.split_whitespace().collect::<Vec<_>>().join(" ");
    if flat.chars().count() > max { format!("{}…", flat.chars().take(max).collect::<String>()) } else { flat }
}

fn content(m: &Memory) -> String {
    m.content.as_deref().map(|c| one_line(c, 160)).unwrap_or_else(|| "(erased)".into())
}

pub fn recall(r: &RecallResponse) -> String {
    if r.results.is_empty() {
        return "no memories found\n".into();
    }
    let mut out = String::new();
    for (i, hit) in r.results.iter().enumerate() {
        let m = &hit.memory;
        out.push_str(&format!("{:>2}. [{}] {} {}  score {:.4}  R {:.2}  S {}\n    {}\n", i + 1, m.day, m.kind, m.id, hit.score, hit.retention, m.forgetting.strength.get(), content(m)));
    }
    out
}

pub fn memory(m: &Memory, retention: f64) -> String {
    let mut out = format!(
        "id:           {}\nuser:         {}\nkind:         {} (source: {})\nstatus:       {}\nday:          {}\noccurred_at:  {}\nrecorded_at:  {}\nstrength:     {}  recalls: {}  last recall: {}\nretention:    {:.4}{}\nimportance:   {:.2} (base {:.2}, {})  layer: {}  FadeMem age: {:.1} days\n",
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

pub fn list(l: &ListResponse) -> String {
    let mut out = String::new();
    for (m, retention) in &l.memories {
        let pin = if m.forgetting.pinned { " pinned" } else { "" };
        out.push_str(&format!(
            "{} [{}] {:<8} {:<8} S {:<4} R {:.2} I {:.2} {:<5}{}  {}\n",
            m.id,
            m.day,
            m.kind,
            m.status,
            m.forgetting.strength.get(),
            retention,
            m.forgetting.importance,
            m.forgetting.layer,
            pin,
            content(m)
        ));
    }
    out.push_str(&format!("({} active, {} archived, {} superseded, {} erased)\n", l.counts.active, l.counts.archived, l.counts.superseded, l.counts.erased));
    out
}

pub fn sweep(r: &SweepReport) -> String {
    let mut out = format!(
        "{}examined {}, archived {}, kept {}, deferred by the per-pass cap {}\n",
        if r.dry_run { "dry run: " } else { "" },
        r.examined,
        r.archived.len(),
        r.kept,
        r.deferred
    );
    for a in &r.archived {
        out.push_str(&format!("  {}  t {:.2}  S {}  R {:.4}\n", a.id, a.elapsed_units, a.strength, a.retention));
    }
    out
}

pub fn maintain(r: &membank_engine::MaintainReport) -> String {
    let mut out = format!(
        "{}{} ({}): examined {}, promoted {}, demoted {}, archived {}, merged {}, fused {}, conflicts {}, importance rated {}, deferred by the per-pass cap {}\n",
        if r.dry_run { "dry run: " } else { "" },
        r.user,
        r.policy.as_str(),
        r.examined,
        r.promoted,
        r.demoted,
        r.archived.len(),
        r.merged.len(),
        r.fused.len(),
        r.conflicts,
        r.rated,
        r.deferred
    );
    for a in &r.archived {
        out.push_str(&format!("  archived {}  t {:.2}  S {}  R {:.4}\n", a.id, a.elapsed_units, a.strength, a.retention));
    }
    for m in &r.merged {
        out.push_str(&format!("  merged   {} into {}  cosine {:.3}  overlap {:.2}\n", m.old, m.by, m.similarity, m.overlap));
    }
    for id in &r.fused {
        out.push_str(&format!("  fused    {id}\n"));
    }
    for s in &r.skipped {
        out.push_str(&format!("  skipped: {s}\n"));
    }
    out
}

pub fn events(events: &[Event]) -> String {
    let mut out = String::new();
    for e in events {
        let memory = e.memory_id.map(|id| id.to_string()).unwrap_or_else(|| "-".into());
        out.push_str(&format!("{:>6} {} {:<12} {} {}\n", e.seq, e.at.to_rfc3339(), e.kind, memory, e.data));
    }
    if events.is_empty() {
        out.push_str("no events\n");
    }
    out
}
