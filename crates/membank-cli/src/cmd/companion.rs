//! `summarize`, `profile` and `chat`: thin adapters over the engine's LLM operations,
//! plus the interactive companion session and its slash commands.
//!
//! Memory management in a chat goes only through the person's explicit slash commands
//! (`/forget ID`, `/pin ID`, `/remember TEXT`, `/memories`), parsed from what the person
//! types, never from the model's reply: the model cannot archive, edit or erase anything.

use std::io::{BufRead, Write};

use anyhow::{Result, anyhow, bail};
use membank_engine::core::{Kind, MemoryId, Scope, Source, Status};
use membank_engine::{
    ChatRequest, ChatResponse, DerivedOutcome, Engine, ListRequest, ProfileRequest, ProfileResponse, RememberNote,
    SummarizeRequest, SummarizeResponse,
};
use membank_server::wire_companion;
use membank_store::ListQuery;
use serde_json::json;

use crate::args::companion::{ChatArgs, ProfileArgs, SummarizeArgs};
use crate::context::Context;
use crate::output::print_json;

fn engine_with_llm(ctx: &Context) -> Result<Engine> {
    // Check the LLM first, so "no LLM configured" is said before the model loads.
    let llm = ctx.llm.client()?;
    Ok(ctx.engine()?.with_llm(llm))
}

/// `membank summarize`.
pub fn summarize(ctx: &Context, args: SummarizeArgs) -> Result<()> {
    let engine = engine_with_llm(ctx)?;
    let users: Vec<String> = match &args.user {
        Some(user) => vec![user.clone()],
        None => engine.store().list_users(&ctx.tenant)?.into_iter().map(|u| u.user).collect(),
    };
    let mut out = Vec::new();
    for user in &users {
        let response = engine.summarize(SummarizeRequest { scope: ctx.scope(user, None, None)?, force: args.force })?;
        if !ctx.cli_json {
            crate::output::print_text(&render_summarize(user, &response))?;
        }
        out.push((user.clone(), response));
    }
    if ctx.cli_json {
        if args.all_users {
            let users: Vec<_> = out
                .iter()
                .map(|(u, r)| json!({ "user": u, "report": wire_companion::SummarizeOut::from(r) }))
                .collect();
            print_json(&json!({ "users": users }))?;
        } else if let Some((_, r)) = out.first() {
            print_json(&wire_companion::SummarizeOut::from(r))?;
        }
    }
    Ok(())
}

fn outcome_word(o: &DerivedOutcome) -> &'static str {
    match o {
        DerivedOutcome::Unchanged(_) => "unchanged",
        DerivedOutcome::Made { replaced: Some(_), .. } => "redone",
        DerivedOutcome::Made { .. } => "made",
        DerivedOutcome::Archived(_) => "archived (no sources left)",
        DerivedOutcome::Absent => "none",
    }
}

fn render_summarize(user: &str, r: &SummarizeResponse) -> String {
    let redone = r.days.iter().filter(|d| d.summary.changed() || d.portrait.changed()).count();
    let mut out = format!("{user}: {} days, {redone} redone; {} LLM calls ({})\n", r.days.len(), r.llm_calls, r.model);
    for d in &r.days {
        out.push_str(&format!(
            "  {}  {:>3} memories  summary {}  portrait {}\n",
            d.day,
            d.sources,
            outcome_word(&d.summary),
            outcome_word(&d.portrait)
        ));
    }
    out.push_str(&format!(
        "  global summary {}  global portrait {}\n",
        outcome_word(&r.global_summary),
        outcome_word(&r.global_portrait)
    ));
    out
}

/// `membank profile`.
pub fn profile(ctx: &Context, args: ProfileArgs) -> Result<()> {
    let engine = ctx.engine_to_read()?;
    let response = engine.profile(ProfileRequest { scope: ctx.scope(&args.user, None, None)? })?;
    if ctx.cli_json {
        return print_json(&wire_companion::ProfileOut::from(&response));
    }
    crate::output::print_text(&render_profile(args.user.trim(), &response))?;
    Ok(())
}

fn indented(text: Option<&str>) -> String {
    text.unwrap_or("(erased)").lines().map(|l| format!("    {l}\n")).collect()
}

fn render_profile(user: &str, p: &ProfileResponse) -> String {
    if p.global_portrait.is_none() && p.global_summary.is_none() {
        return format!("no profile for {user} yet: run `membank summarize --user {user}` (needs an LLM)\n");
    }
    let mut out = String::new();
    for (title, memory) in [("Portrait", &p.global_portrait), ("Summary", &p.global_summary)] {
        if let Some(m) = memory {
            let made_by = [m.metadata.get("model"), m.metadata.get("prompt")]
                .into_iter()
                .flatten()
                .cloned()
                .collect::<Vec<_>>()
                .join(", ");
            out.push_str(&format!(
                "{title} of {user} (up to {}; {made_by}):\n{}",
                m.day,
                indented(m.content.as_deref())
            ));
        }
    }
    out.push_str(&format!("Drawn from {} days:\n", p.days.len()));
    for d in &p.days {
        out.push_str(&format!("  {}\n", d.day));
        if let Some(s) = &d.summary {
            out.push_str(&format!("   summary:\n{}", indented(s.content.as_deref())));
        }
        if let Some(s) = &d.portrait {
            out.push_str(&format!("   portrait:\n{}", indented(s.content.as_deref())));
        }
    }
    out
}

/// `membank chat`.
pub fn chat(ctx: &Context, args: ChatArgs) -> Result<()> {
    let engine = engine_with_llm(ctx)?;
    let scope = ctx.scope(&args.user, None, None)?;
    let now = args.now.as_deref().map(|v| engine.parse_time(&scope, "now", v)).transpose()?;
    let session = Session { ctx, engine: &engine, scope, args: &args, now };
    if let Some(message) = &args.message {
        return session.handle(message).map(|_| ());
    }
    let stdin = std::io::stdin();
    if !ctx.cli_json {
        eprintln!("chatting as {} (commands: /forget ID, /pin ID, /remember TEXT, /memories, /quit)", args.user.trim());
    }
    loop {
        if !ctx.cli_json {
            eprint!("you> ");
            std::io::stderr().flush().ok();
        }
        let mut line = String::new();
        if stdin.lock().read_line(&mut line)? == 0 {
            return Ok(());
        }
        let line = line.trim();
        if line.is_empty() {
            continue;
        }
        // In a session an error is reported and the session goes on.
        match session.handle(line) {
            Ok(Flow::Quit) => return Ok(()),
            Ok(Flow::Continue) => {}
            Err(err) => eprintln!("error: {err:#}"),
        }
    }
}

enum Flow {
    Continue,
    Quit,
}

struct Session<'a> {
    ctx: &'a Context,
    engine: &'a Engine,
    scope: Scope,
    args: &'a ChatArgs,
    now: Option<membank_engine::core::Timestamp>,
}

impl Session<'_> {
    fn handle(&self, input: &str) -> Result<Flow> {
        let input = input.trim();
        if let Some(command) = input.strip_prefix('/') {
            return self.command(command);
        }
        let mut request = ChatRequest::new(self.scope.clone(), input);
        request.k = self.args.k;
        request.persona = self.args.persona.clone();
        request.now = self.now;
        let response = self.engine.chat(request)?;
        if self.ctx.cli_json {
            print_json(&wire_companion::ChatOut::from(&response))?;
        } else {
            crate::output::print_text(&render_reply(&response))?;
        }
        Ok(Flow::Continue)
    }

    fn command(&self, command: &str) -> Result<Flow> {
        let (name, rest) = command.split_once(char::is_whitespace).map(|(n, r)| (n, r.trim())).unwrap_or((command, ""));
        let id = || -> Result<MemoryId> { rest.parse::<MemoryId>().map_err(|e| anyhow!(e)) };
        let json = self.ctx.cli_json;
        match name {
            "quit" | "exit" => return Ok(Flow::Quit),
            "forget" => {
                let memory = self.engine.forget(&self.scope, id()?, Some("asked in chat"))?;
                if json {
                    print_json(&json!({ "archived": memory.id.to_string() }))?
                } else {
                    println!("archived {} (restore with `membank restore`)", memory.id)
                }
            }
            "pin" => {
                let memory = self.engine.set_pinned(&self.scope, id()?, true)?;
                if json {
                    print_json(&json!({ "pinned": memory.id.to_string() }))?
                } else {
                    println!("pinned {}", memory.id)
                }
            }
            "remember" => {
                if rest.is_empty() {
                    bail!("/remember needs the text to remember");
                }
                let memory = self.engine.remember_note(RememberNote {
                    scope: self.scope.clone(),
                    text: rest.to_string(),
                    source: Source::User,
                    occurred_at: self.now,
                    metadata: Default::default(),
                    importance: None,
                    clock_from: membank_engine::core::ClockFrom::Event,
                })?;
                if json {
                    print_json(&json!({ "remembered": memory.id.to_string() }))?
                } else {
                    println!("remembered {}", memory.id)
                }
            }
            "memories" => {
                let query = ListQuery {
                    statuses: vec![Status::Active],
                    kinds: vec![Kind::Turn, Kind::Note],
                    limit: 20,
                    ..ListQuery::default()
                };
                let list = self.engine.list(ListRequest { scope: self.scope.clone(), query })?;
                if json {
                    let out: Vec<_> = list
                        .memories
                        .iter()
                        .map(|(m, r)| membank_server::wire::MemoryWithRetention::new(m, *r, list.archive_below))
                        .collect();
                    print_json(&json!({ "memories": out }))?;
                } else {
                    crate::output::print_text(&crate::render::list(&list))?;
                }
            }
            "help" => println!(
                "/forget ID  archive a memory · /pin ID  never let it fade · /remember TEXT  save a note · /memories  recent memories · /quit"
            ),
            other => bail!("unknown command /{other}: try /help"),
        }
        Ok(Flow::Continue)
    }
}

fn render_reply(r: &ChatResponse) -> String {
    let mut out = format!("{}\n", r.reply);
    if r.used.is_empty() {
        out.push_str(&format!("  ─ no memory cited ({} recalled)\n", r.recalled.len()));
    } else {
        let used: Vec<String> = r
            .used
            .iter()
            .map(|c| format!("[{}] {} {} {}", c.label, c.memory.day, c.memory.kind, short(&c.memory.id)))
            .collect();
        out.push_str(&format!("  ─ used: {}\n", used.join(" · ")));
    }
    out
}

fn short(id: &MemoryId) -> String {
    id.to_string().chars().take(8).collect()
}
