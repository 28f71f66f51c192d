//! Throughput benchmark of the local embedder: embeds the first `--n` lines of a sentence
//! file `--runs` times with `--threads` worker threads and prints sentences per second
//! (median of the runs). The PyTorch counterpart is `bench/embed/pytorch_embed.py`;
//! `bench/embed/compare.sh` runs both side by side.
//!
//! It is a measurement, not a test: it asserts nothing and is never run by `cargo test`.
//!
//! ```text
//! cargo run --release -p membank-embed --example bench_embed -- --threads 2 --n 2000 --sentences FILE [--model-dir DIR] [--runs 5]
//! ```

use std::path::PathBuf;
use std::time::Instant;

use membank_embed::{Embedder, LocalEmbedder, LocalOptions};

struct Args {
    threads: usize,
    n: usize,
    runs: usize,
    sentences: PathBuf,
    model_dir: PathBuf,
}

fn parse_args() -> Result<Args, String> {
    let mut args = Args {
        threads: 1,
        n: 2000,
        runs: 5,
        sentences: PathBuf::new(),
        model_dir: membank_embed::fetch::default_model_dir(),
    };
    let mut iter = std::env::args().skip(1);
    while let Some(flag) = iter.next() {
        let value = iter.next().ok_or_else(|| format!("{flag} needs a value"))?;
        let number = || value.parse::<usize>().map_err(|e| format!("{flag}: {e}"));
        match flag.as_str() {
            "--threads" => args.threads = number()?,
            "--n" => args.n = number()?,
            "--runs" => args.runs = number()?.max(1),
            "--sentences" => args.sentences = PathBuf::from(&value),
            "--model-dir" => args.model_dir = PathBuf::from(&value),
            other => return Err(format!("unknown flag {other}")),
        }
    }
    if args.sentences.as_os_str().is_empty() {
        return Err("--sentences FILE is required".to_owned());
    }
    Ok(args)
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args = parse_args()?;
    let text = std::fs::read_to_string(&args.sentences)?;
    let sentences: Vec<&str> = text.lines().take(args.n).collect();
    let embedder = LocalEmbedder::open(
        &args.model_dir,
        LocalOptions {
            threads: args.threads,
        },
    )?;
    let tokens: usize = sentences.iter().map(|s| embedder.token_ids(s).len()).sum();
    println!(
        "sentences: {} ({tokens} tokens), threads: {}",
        sentences.len(),
        args.threads
    );

    embedder.embed(&sentences[..sentences.len().min(64)])?; // warm-up
    let mut rates = Vec::with_capacity(args.runs);
    let mut cpu_rates = Vec::with_capacity(args.runs);
    for _ in 0..args.runs {
        let (start, cpu_start) = (Instant::now(), cpu_seconds());
        let vectors = embedder.embed(&sentences)?;
        rates.push(vectors.len() as f64 / start.elapsed().as_secs_f64());
        cpu_rates.push(vectors.len() as f64 / (cpu_seconds() - cpu_start).max(1e-9));
    }
    let runs: Vec<String> = rates.iter().map(|r| format!("{r:.1}")).collect();
    println!("runs: {}", runs.join(" "));
    println!("sentences/s: {:.1}", median(&mut rates));
    println!("sentences per cpu-second: {:.1}", median(&mut cpu_rates));
    Ok(())
}

fn median(values: &mut [f64]) -> f64 {
    values.sort_by(f64::total_cmp);
    values[values.len() / 2]
}

/// CPU time (user + system, all threads) of this process so far, from /proc on Linux; a
/// second view of efficiency that other load on the machine disturbs less than wall time.
fn cpu_seconds() -> f64 {
    let Ok(stat) = std::fs::read_to_string("/proc/self/stat") else {
        return f64::NAN;
    };
    // Fields after the parenthesised command name; utime and stime are fields 14 and 15.
    let after = stat.rsplit_once(')').map_or("", |(_, rest)| rest);
    let fields: Vec<&str> = after.split_whitespace().collect();
    let ticks = |i: usize| {
        fields
            .get(i)
            .and_then(|v| v.parse::<f64>().ok())
            .unwrap_or(f64::NAN)
    };
    // Clock ticks are 100 per second on every Linux configuration in use.
    (ticks(11) + ticks(12)) / 100.0
}
