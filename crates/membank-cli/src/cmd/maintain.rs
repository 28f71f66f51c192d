//! `sweep` and `maintain`: the forgetting runs, over one user or every user of the
//! tenant. At a terminal, a sweep that would archive most of a user's memories is shown
//! and asked about first.

use anyhow::Result;
use membank_engine::{MaintainRequest, SweepRequest};
use membank_server::wire;
use serde_json::json;

use crate::args::memories::{MaintainArgs, SweepArgs};
use crate::context::Context;
use crate::input::at;
use crate::output::print_json;
use crate::prompts::{confirm, interactive};
use crate::render;

/// `sweep`: one user or all, asking at a terminal before archiving most of a user's memories.
pub fn sweep(ctx: &Context, a: SweepArgs) -> Result<()> {
    let json = ctx.cli_json;
    let engine = ctx.engine()?;
    let users: Vec<String> = match &a.user {
        Some(user) => vec![user.clone()],
        None => engine.store().list_users(&ctx.tenant)?.into_iter().map(|u| u.user).collect(),
    };
    let ask = !a.dry_run && !a.yes && interactive();
    let mut reports = Vec::new();
    for user in &users {
        let scope = ctx.scope(user, None, None)?;
        let now = at(&engine, &scope, "now", a.now.as_deref())?;
        let request = SweepRequest { scope, now, dry_run: a.dry_run, max_archive_fraction: a.max_fraction };
        if ask {
            // A person at a terminal is shown a sweep that would archive most of
            // someone's memories before it happens (backdated imports, a --now far ahead).
            let preview = engine.sweep(SweepRequest { dry_run: true, ..request.clone() })?;
            if preview.archived.len() * 2 > preview.examined {
                eprint!("{}", render::sweep(&preview));
                if !confirm(&format!(
                    "This sweep would archive {} of {}'s {} active memories (restorable with `membank restore`). Go on?",
                    preview.archived.len(),
                    user.trim(),
                    preview.examined
                ))? {
                    eprintln!("{}: nothing archived", user.trim());
                    continue;
                }
            }
        }
        reports.push((user.clone(), engine.sweep(request)?));
    }
    if reports.is_empty() {
        return Ok(());
    }
    if json {
        if a.all_users {
            let out: Vec<_> =
                reports.iter().map(|(u, r)| json!({ "user": u, "report": wire::SweepOut::from(r) })).collect();
            print_json(&json!({ "users": out }))
        } else {
            print_json(&wire::SweepOut::from(&reports[0].1))
        }
    } else {
        for (user, report) in &reports {
            if a.all_users {
                print!("{user}: ");
            }
            print!("{}", render::sweep(report));
        }
        Ok(())
    }
}

/// `maintain`: one cycle for one user or all.
pub fn maintain(ctx: &Context, a: MaintainArgs) -> Result<()> {
    let json = ctx.cli_json;
    let engine = ctx.engine_with_llm()?;
    let users: Vec<String> = match &a.user {
        Some(user) => vec![user.clone()],
        None => engine.store().list_users(&ctx.tenant)?.into_iter().map(|u| u.user).collect(),
    };
    let mut reports = Vec::new();
    for user in &users {
        let scope = ctx.scope(user, None, None)?;
        let now = at(&engine, &scope, "now", a.now.as_deref())?;
        reports.push(engine.maintain(MaintainRequest { scope, now, dry_run: a.dry_run })?);
    }
    if json {
        if a.all_users {
            print_json(&wire::MaintainAllOut::from_reports(&reports))
        } else {
            print_json(&wire::MaintainOut::from(&reports[0]))
        }
    } else {
        reports.iter().for_each(|r| print!("{}", render::maintain(r)));
        if a.all_users {
            println!("{} users", reports.len());
        }
        Ok(())
    }
}
