//! `membank keys create|list|revoke`: the server's API keys, stored hashed; a created key
//! is printed once.

use anyhow::Result;
use membank_engine::core::UserId;
use serde_json::json;

use crate::args::serve::KeysCommand;
use crate::context::Context;

/// `membank keys …`.
pub fn run(ctx: &Context, command: KeysCommand) -> Result<()> {
    let store = ctx.open_store()?;
    let now = chrono::Utc::now();
    match command {
        KeysCommand::Create { user, admin, label } => {
            let user = user.as_deref().map(UserId::new).transpose()?;
            let created =
                membank_server::keys::create_key(store.as_ref(), ctx.tenant.clone(), user, admin, label, now)?;
            if ctx.cli_json {
                println!(
                    "{}",
                    serde_json::to_string_pretty(
                        &json!({ "key": created.key, "id": created.record.key_id, "tenant": created.record.tenant.as_str(), "admin": admin })
                    )?
                );
            } else {
                println!("{}", created.key);
                eprintln!(
                    "key {} for tenant {}{}: store it now, it is not shown again",
                    created.record.key_id,
                    created.record.tenant,
                    if admin { " (admin)" } else { "" }
                );
            }
        }
        KeysCommand::List => {
            let keys = store.list_keys()?;
            if ctx.cli_json {
                let out: Vec<_> = keys
                    .iter()
                    .map(|k| json!({ "id": k.key_id, "tenant": k.tenant.as_str(), "user": k.user.as_ref().map(|u| u.as_str()), "admin": k.admin, "label": k.label, "created_at": membank_server::wire::rfc3339(k.created_at), "revoked_at": k.revoked_at.map(membank_server::wire::rfc3339) }))
                    .collect();
                println!("{}", serde_json::to_string_pretty(&json!({ "keys": out }))?);
            } else if keys.is_empty() {
                println!("no API keys: `membank serve` answers without authentication, on loopback addresses only");
            } else {
                println!("ID\tTENANT\tUSER\tROLE\tSTATE\tLABEL");
                for k in keys {
                    let state = match k.revoked_at {
                        Some(at) => format!("revoked {}", membank_server::wire::rfc3339(at)),
                        None => "active".into(),
                    };
                    let user = k.user.as_ref().map_or_else(|| "(any user)".to_string(), |u| u.as_str().to_string());
                    crate::output::print_text(&format!(
                        "{}\t{}\t{}\t{}\t{}\t{}\n",
                        k.key_id,
                        k.tenant,
                        user,
                        if k.admin {
                            "admin"
                        } else if k.user.is_some() {
                            "user"
                        } else {
                            "tenant"
                        },
                        state,
                        k.label.unwrap_or_default()
                    ))?;
                }
            }
        }
        KeysCommand::Revoke { id } => {
            let record = store.revoke_key(id.trim(), now).map_err(membank_engine::EngineError::from)?;
            if ctx.cli_json {
                println!("{}", serde_json::to_string_pretty(&json!({ "id": record.key_id, "revoked": true }))?);
            } else {
                println!("revoked {}", record.key_id);
            }
        }
    }
    Ok(())
}
