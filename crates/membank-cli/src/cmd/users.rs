//! `users`: the tenant's users with their time zones, or set one user's time zone.

use anyhow::Result;
use membank_server::wire;
use serde_json::json;

use crate::args::memories::UsersArgs;
use crate::context::Context;
use crate::output::print_json;

/// `users`: lists users, or sets one's time zone.
pub fn users(ctx: &Context, a: UsersArgs) -> Result<()> {
    let json = ctx.cli_json;
    let engine = if a.time_zone.is_some() { ctx.engine()? } else { ctx.engine_to_read()? };
    if let (Some(user), Some(zone)) = (&a.user, &a.time_zone) {
        let zone = engine.set_time_zone(&ctx.scope(user, None, None)?, zone)?;
        return if json {
            print_json(&json!({ "user": user.trim(), "time_zone": zone }))
        } else {
            println!("{} now counts days in {zone}", user.trim());
            Ok(())
        };
    }
    let users = engine.store().list_users(&ctx.tenant)?;
    if json {
        let out: Vec<_> = users
            .iter()
            .map(|u| json!({ "user": u.user, "time_zone": u.time_zone, "created_at": wire::rfc3339(u.created_at) }))
            .collect();
        print_json(&json!({ "users": out }))
    } else {
        users.iter().for_each(|u| println!("{}\t{}", u.user, u.time_zone));
        Ok(())
    }
}
