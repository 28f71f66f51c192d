//! `membank`: the one binary. Parses arguments, loads configuration, installs the tracing
//! subscriber, calls the engine and renders the answer (human text, or `--json`), and
//! maps errors to exit codes. No engine logic lives here.
//!
//! The crate's map: `args/` holds the clap types (parsing only); `context.rs` resolves
//! them with the configuration file into a `Context` that opens the store and embedder;
//! `cmd/` runs the commands, one module per command or family, with `cmd/mod.rs` only
//! choosing among them; `errors.rs`, `output.rs`, `prompts.rs`, `input.rs` and `render.rs`
//! are shared by the commands. No module imports the dispatcher, and none imports a module
//! that imports it back.
//!
//! Exit codes: 0 success; 2 usage; 3 invalid input; 4 not found; 5 conflict with the
//! memory's state; 6 incompatible database or model; 7 embedding model missing;
//! 8 no LLM configured (summarize, chat); 9 the LLM failed; 10 the database cannot be
//! reached now (a PostgreSQL server or Citus node down or restarting: try again); 1
//! anything else.

mod cmd;
mod input;
mod progress;
mod prompts;
mod render;

// The modules that resolve settings into a `Context` live in the library (`lib.rs`) so
// other front ends share them; re-exported here so `crate::context` and the rest keep
// their paths.
use membank_cli::{args, context, embedder, errors, language, output};

use std::process::ExitCode;

use anyhow::Result;
use clap::Parser;

use crate::args::{Cli, Command};
use crate::context::Context;

fn main() -> ExitCode {
    // A closed stdout (`membank sweep --json | head -c 400`) ends the command quietly
    // instead of with a panic and a backtrace: `println!` panics on EPIPE, and Rust
    // ignores SIGPIPE, so the panic is where it shows. Any other failed write to stdout is
    // an error with exit 1, not a panic's 101.
    let default_hook = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        let payload = info.payload();
        let message = payload
            .downcast_ref::<String>()
            .map(String::as_str)
            .or_else(|| payload.downcast_ref::<&str>().copied())
            .unwrap_or("");
        if message.starts_with("failed printing to stdout") {
            if message.contains("Broken pipe") {
                std::process::exit(0);
            }
            // Any other write error (a full disk, `> /dev/full`): a plain error, exit 1.
            let cause = message.trim_start_matches("failed printing to stdout").trim_start_matches(": ");
            eprintln!("error: cannot write to standard output: {cause}");
            std::process::exit(1);
        }
        default_hook(info);
    }));
    let cli = Cli::parse();
    // Logs are for MEMBANK_LOG and for servers. A command run by a person shows warnings as
    // plain lines (no timestamp, colour or module path); what a newcomer must know is said
    // in sentences by the command itself.
    let server = matches!(cli.command, Command::Serve(_) | Command::Mcp(_));
    match tracing_subscriber::EnvFilter::try_from_env("MEMBANK_LOG") {
        Ok(filter) => tracing_subscriber::fmt().with_env_filter(filter).with_writer(std::io::stderr).init(),
        Err(_) if server => tracing_subscriber::fmt()
            .with_env_filter(tracing_subscriber::EnvFilter::new("warn"))
            .with_writer(std::io::stderr)
            .init(),
        Err(_) => tracing_subscriber::fmt()
            .with_env_filter(tracing_subscriber::EnvFilter::new("warn"))
            .without_time()
            .with_target(false)
            .with_ansi(false)
            .with_writer(std::io::stderr)
            .init(),
    }
    // What is still buffered is written here, so its failure is seen too.
    let result = run(cli).and_then(|()| {
        std::io::Write::flush(&mut std::io::stdout())
            .map_err(|e| anyhow::Error::new(e).context("cannot write to standard output"))
    });
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) if errors::is_broken_pipe(&err) => ExitCode::SUCCESS,
        Err(err) => {
            let code = errors::exit_code(&err);
            match err.downcast_ref::<errors::Hint>() {
                Some(hint) => {
                    let cause: Vec<String> = err.chain().skip(1).map(ToString::to_string).collect();
                    eprintln!("error: {}", cause.join(": "));
                    eprintln!("hint: {hint}");
                }
                None => eprintln!("error: {err:#}"),
            }
            ExitCode::from(code)
        }
    }
}

/// Runs the parsed command, with a hint under its error where the flags matter.
fn run(cli: Cli) -> Result<()> {
    let ctx = Context::new(&cli)?;
    cmd::dispatch(cli.command, &ctx).map_err(|err| errors::with_hint(err, &ctx.model_flags(), ctx.auto_model))
}
