//! The dispatcher: one arm per subcommand, each calling the module that runs it. No
//! command logic lives here, and no module imports this one; shared state is in
//! `crate::context`, shared helpers in the crate's small modules.

pub mod bench;
pub mod companion;
pub mod eval;
pub mod events;
pub mod import;
pub mod importance;
pub mod keys;
pub mod maintain;
pub mod memories;
pub mod migrate;
pub mod models;
pub mod recall;
pub mod remember;
pub mod serve;
pub mod simulate;
pub mod transfer;
pub mod users;

use anyhow::Result;

use crate::args::Command;
use crate::context::Context;

/// Runs the parsed command.
pub fn dispatch(command: Command, ctx: &Context) -> Result<()> {
    match command {
        Command::Remember(a) => remember::remember(ctx, a),
        Command::Note(a) => remember::note(ctx, a),
        Command::Recall(a) => recall::recall(ctx, a),
        Command::List(a) => memories::list(ctx, a),
        Command::Show(a) => memories::show(ctx, a),
        Command::Forget(a) => memories::forget(ctx, a),
        Command::Restore(a) => memories::restore(ctx, a),
        Command::Pin(a) => memories::pin(ctx, a),
        Command::Unpin(a) => memories::unpin(ctx, a),
        Command::Erase(a) => memories::erase(ctx, a),
        Command::Sweep(a) => maintain::sweep(ctx, a),
        Command::Maintain(a) => maintain::maintain(ctx, a),
        Command::Events(a) => events::events(ctx, a),
        Command::Users(a) => users::users(ctx, a),
        Command::Check(a) => transfer::check(ctx, a),
        Command::Export(a) => transfer::export(ctx, a),
        Command::Backup(a) => transfer::backup(ctx, a),
        Command::Migrate(a) => migrate::run(ctx, a),
        Command::Models { command } => models::run(ctx, command),
        Command::Bench { command } => bench::run(ctx, command),
        Command::Summarize(a) => companion::summarize(ctx, a),
        Command::Profile(a) => companion::profile(ctx, a),
        Command::Chat(a) => companion::chat(ctx, a),
        Command::Import(a) => import::run(ctx, a),
        Command::Eval { command } => eval::run(ctx, command),
        Command::Simulate(a) => simulate::run(ctx, a),
        Command::Serve(a) => serve::serve(ctx, a),
        Command::Mcp(a) => serve::mcp(ctx, a),
        Command::Keys { command } => keys::run(ctx, command),
    }
}
