//! `events`: a user's event log, oldest first, in pages.

use anyhow::Result;
use membank_server::wire;
use membank_store::EventQuery;
use serde_json::json;

use crate::args::memories::EventsArgs;
use crate::context::Context;
use crate::output::print_json;
use crate::render;

/// `events`.
pub fn events(ctx: &Context, a: EventsArgs) -> Result<()> {
    let json = ctx.cli_json;
    let engine = ctx.engine_to_read()?;
    let query =
        EventQuery { memory_id: a.memory.as_deref().map(str::parse).transpose()?, after_seq: a.after, limit: a.limit };
    let events = engine.events(&ctx.scope(&a.user, None, None)?, &query)?;
    if json {
        let out: Vec<wire::EventOut> = events.iter().map(Into::into).collect();
        print_json(&json!({ "events": out }))
    } else {
        crate::output::print_text(&render::events(&events))?;
        Ok(())
    }
}
