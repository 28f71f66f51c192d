//! The commands on a user's memories by id or by listing: `list`, `show`, and the state
//! changes `forget`, `restore`, `pin`, `unpin` and `erase`. A change checks every id
//! before it changes any.

use anyhow::Result;
use membank_engine::core::{Kind, MemoryId, Scope, Status};
use membank_engine::{Engine, EngineError, ListRequest};
use membank_server::wire;
use membank_store::ListQuery;
use serde_json::json;

use crate::args::memories::{EraseArgs, ForgetArgs, IdsArgs, ListArgs};
use crate::context::Context;
use crate::errors::UsageError;
use crate::input::{day, parse_all};
use crate::output::print_json;
use crate::prompts::{confirm, interactive};
use crate::render;

/// `list`.
pub fn list(ctx: &Context, a: ListArgs) -> Result<()> {
    let json = ctx.cli_json;
    let engine = ctx.engine_to_read()?;
    let statuses = if a.all {
        vec![Status::Active, Status::Archived, Status::Superseded]
    } else {
        parse_all::<Status>(&a.statuses)?
    };
    let query = ListQuery {
        statuses,
        kinds: parse_all::<Kind>(&a.kinds)?,
        day_from: day("from", a.from.as_deref())?,
        day_to: day("to", a.to.as_deref())?,
        pinned_only: a.pinned,
        limit: a.limit,
        offset: a.offset,
        oldest_first: a.oldest_first,
        without_text: false,
    };
    let response = engine.list(ListRequest { scope: ctx.scope(&a.user, None, None)?, query })?;
    if json {
        print_json(&wire::ListOut::from(&response))
    } else {
        if !response.user_known {
            return crate::output::print_text(&render::no_such_user(a.user.trim()));
        }
        crate::output::print_text(&render::list(&response))?;
        Ok(())
    }
}

/// `show`.
pub fn show(ctx: &Context, a: IdsArgs) -> Result<()> {
    let json = ctx.cli_json;
    let engine = ctx.engine_to_read()?;
    let scope = ctx.scope(&a.user, None, None)?;
    let ids = parse_all::<MemoryId>(&a.ids)?;
    let shown = ids.iter().map(|id| engine.show(&scope, *id)).collect::<Result<Vec<_>, _>>()?;
    if json {
        let out: Vec<_> =
            shown.iter().map(|(m, r)| wire::MemoryWithRetention::new(m, *r, engine.archive_below())).collect();
        print_json(&json!({ "memories": out }))
    } else {
        crate::output::print_text(
            &shown.iter().map(|(m, r)| render::memory(m, *r, engine.archive_below())).collect::<Vec<_>>().join("\n"),
        )
    }
}

/// `forget`.
pub fn forget(ctx: &Context, a: ForgetArgs) -> Result<()> {
    let reason = a.reason.clone();
    apply_to_ids(ctx, &a.target, "archived", |engine, scope, id| engine.forget(scope, id, reason.as_deref()))
}

/// `restore`.
pub fn restore(ctx: &Context, a: IdsArgs) -> Result<()> {
    apply_to_ids(ctx, &a, "restored", |engine, scope, id| engine.restore(scope, id))
}

/// `pin`.
pub fn pin(ctx: &Context, a: IdsArgs) -> Result<()> {
    apply_to_ids(ctx, &a, "pinned", |engine, scope, id| engine.set_pinned(scope, id, true))
}

/// `unpin`.
pub fn unpin(ctx: &Context, a: IdsArgs) -> Result<()> {
    apply_to_ids(ctx, &a, "unpinned", |engine, scope, id| engine.set_pinned(scope, id, false))
}

/// `erase`: asks first at a terminal, refuses without `--yes` elsewhere.
pub fn erase(ctx: &Context, a: EraseArgs) -> Result<()> {
    if !a.yes {
        let n = a.target.ids.len();
        let what = if n == 1 { "1 memory".to_string() } else { format!("{n} memories") };
        if !interactive() {
            return Err(UsageError(format!(
                "erase cannot be undone: pass --yes to erase {what} of {} when not at a terminal",
                a.target.user.trim()
            ))
            .into());
        }
        if !confirm(&format!(
            "Erase {what} of {} for good? Their content, vectors and index entries are removed and cannot be restored.",
            a.target.user.trim()
        ))? {
            eprintln!("nothing erased");
            return Ok(());
        }
    }
    apply_to_ids(ctx, &a.target, "erased", |engine, scope, id| engine.erase(scope, id))
}

/// Applies `op` to every id, after checking that each exists, and prints what was done.
fn apply_to_ids(
    ctx: &Context,
    args: &IdsArgs,
    verb: &str,
    op: impl Fn(&Engine, &Scope, MemoryId) -> Result<membank_engine::core::Memory, EngineError>,
) -> Result<()> {
    let engine = ctx.engine()?;
    let scope = ctx.scope(&args.user, None, None)?;
    let ids = parse_all::<MemoryId>(&args.ids)?;
    // Check every id first so a typo in the third id does not leave the first two changed.
    for id in &ids {
        engine.show(&scope, *id)?;
    }
    let mut done = Vec::new();
    for id in ids {
        done.push(op(&engine, &scope, id)?);
    }
    if ctx.cli_json {
        let out: Vec<wire::MemoryOut> = done.iter().map(Into::into).collect();
        print_json(&json!({ "memories": out }))
    } else {
        done.iter().for_each(|m| println!("{verb} {}", m.id));
        Ok(())
    }
}
