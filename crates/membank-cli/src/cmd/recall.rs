//! `recall`: the memories most relevant to a query, strengthened unless asked not to.

use anyhow::Result;
use membank_engine::RecallRequest;
use membank_engine::core::Kind;
use membank_server::wire;

use crate::args::memories::RecallArgs;
use crate::context::Context;
use crate::input::{at, day, parse_all};
use crate::output::print_json;
use crate::render;

/// `recall`.
pub fn recall(ctx: &Context, a: RecallArgs) -> Result<()> {
    let json = ctx.cli_json;
    // A recall only reads where it matters: a missing file holds nothing to strengthen.
    let engine = ctx.engine_to_read()?;
    let scope = ctx.scope(&a.user, a.agent.as_deref(), a.session.as_deref())?;
    let now = at(&engine, &scope, "now", a.now.as_deref())?;
    let mut request = RecallRequest::new(scope, a.query, a.k);
    request.now = now;
    request.kinds = parse_all::<Kind>(&a.kinds)?;
    request.day_from = day("from", a.from.as_deref())?;
    request.day_to = day("to", a.to.as_deref())?;
    request.include_archived = a.include_archived;
    request.strengthen = a.no_strengthen.then_some(false);
    request.weight_by_retention = a.weight_by_retention.then_some(true);
    request.reminisce = a.reminisce.parse()?;
    let response = engine.recall(request)?;
    if json {
        print_json(&wire::RecallOut::from(&response))
    } else {
        if !response.user_known {
            return crate::output::print_text(&render::no_such_user(a.user.trim()));
        }
        crate::output::print_text(&render::recall(&response))
    }
}
