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
    let embedder = LocalEmbedder::open(&args.model_dir, LocalOptions { threads: args.threads })?;
    let tokens: usize = sentences.iter().map(|s| embedder.token_ids(s).len()).sum();
    println!("sentences: {} ({tokens} tokens), threads: {}", sentences.len(), args.threads);

    embedder.embed(&sentences[..sentences.len().min(64)])?; // warm-up
    let mut rates = Vec::with_capacity(args.runs);
    for _ in 0..args.runs {
        let start = Instant::now();
        let vectors = embedder.embed(&sentences)?;
        rates.push(vectors.len() as f64 / start.elapsed().as_secs_f64());
    }
    let runs: Vec<String> = rates.iter().map(|r| format!("{r:.1}")).collect();
    rates.sort_by(f64::total_cmp);
    println!("runs: {}", runs.join(" "));
    println!("sentences/s: {:.1}", rates[rates.len() / 2]);
    Ok(())
}
