//! `remember` and `note`: store one exchange or one free-form note, and print the new
//! memory's id (or the memory, with `--json`).

use anyhow::{Result, anyhow};
use membank_engine::core::Source;
use membank_engine::{RememberNote, RememberTurn};
use membank_server::wire;

use crate::args::memories::{NoteArgs, RememberArgs};
use crate::context::Context;
use crate::input::{at, text_arg};
use crate::output::print_json;

/// `remember`: stores one exchange and prints its id.
pub fn remember(ctx: &Context, a: RememberArgs) -> Result<()> {
    let json = ctx.cli_json;
    let engine = ctx.engine()?;
    let user_text = text_arg(a.user_text, a.user_text_file.as_ref())?
        .ok_or_else(|| anyhow!("--user-text or --user-text-file is required"))?;
    let assistant_text = text_arg(a.assistant_text, a.assistant_text_file.as_ref())?;
    let scope = ctx.scope(&a.user, a.agent.as_deref(), a.session.as_deref())?;
    let occurred_at = at(&engine, &scope, "--at", a.at.as_deref())?;
    let memory = engine
        .remember_turn(RememberTurn {
            scope,
            user_text,
            assistant_text,
            occurred_at,
            metadata: Default::default(),
            importance: a.importance,
            clock_from: a.clock_from,
        })
        .map_err(at_flag)?;
    print_stored(json, &memory)
}

/// `note`: stores a free-form note and prints its id.
pub fn note(ctx: &Context, a: NoteArgs) -> Result<()> {
    let json = ctx.cli_json;
    let engine = ctx.engine()?;
    let text = text_arg(a.text, a.text_file.as_ref())?.ok_or_else(|| anyhow!("--text or --text-file is required"))?;
    let scope = ctx.scope(&a.user, a.agent.as_deref(), a.session.as_deref())?;
    let occurred_at = at(&engine, &scope, "--at", a.at.as_deref())?;
    let memory = engine
        .remember_note(RememberNote {
            scope,
            text,
            source: a.source.parse::<Source>()?,
            occurred_at,
            metadata: Default::default(),
            importance: a.importance,
            clock_from: a.clock_from,
        })
        .map_err(at_flag)?;
    print_stored(json, &memory)
}

/// The engine names the field `occurred_at`; here the person typed `--at`.
fn at_flag(err: membank_engine::EngineError) -> membank_engine::EngineError {
    match err {
        membank_engine::EngineError::Invalid(mut invalid) if invalid.field == "occurred_at" => {
            invalid.field = "--at";
            membank_engine::EngineError::Invalid(invalid)
        }
        other => other,
    }
}

/// What `remember` and `note` print: the stored memory as JSON, else its id.
fn print_stored(json: bool, memory: &membank_engine::core::Memory) -> Result<()> {
    if json {
        print_json(&wire::MemoryOut::from(memory))
    } else {
        println!("{}", memory.id);
        Ok(())
    }
}
