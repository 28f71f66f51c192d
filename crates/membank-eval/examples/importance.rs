//! Importance estimators against the critical-turn labels.
//!
//! ```text
//! xz -dk --stdout /work/shared/data/longmemeval/longmemeval_s_cleaned.json.xz > /tmp/longmemeval_s_cleaned.json
//! cargo run --release -p membank-eval --example importance -- tune   [DATA_DIR] [LONGMEMEVAL_JSON]
//! cargo run --release -p membank-eval --example importance -- report [DATA_DIR] [LONGMEMEVAL_JSON]
//! ```
//!
//! `tune` prints AUC on the tuning halves only; `report` adds the reporting halves (look at
//! them once, at the end). DATA_DIR defaults to `../shared/data` (holding `memorybank/`,
//! `locomo/`), the LongMemEval file to `/tmp/longmemeval_s_cleaned.json`; the labels are read
//! from `bench/critical` (run from the repository root).

use std::path::PathBuf;

use membank_eval::importance::{Sources, Split, auc_table, load};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let command = args.first().map_or("tune", String::as_str);
    let data = PathBuf::from(args.get(1).map_or("../shared/data", String::as_str));
    let longmemeval = PathBuf::from(args.get(2).map_or("/tmp/longmemeval_s_cleaned.json", String::as_str));
    let splits: &[Split] = match command {
        "tune" => &[Split::Tune],
        "report" => &[Split::Tune, Split::Report],
        other => return Err(format!("unknown command {other:?}: tune or report").into()),
    };
    let examples = load(&Sources {
        labels: &PathBuf::from("bench/critical"),
        memorybank_en: &data.join("memorybank/memory_bank_en.json"),
        memorybank_cn: &data.join("memorybank/memory_bank_cn.json"),
        locomo: &data.join("locomo/locomo10.json"),
        longmemeval: &longmemeval,
    })?;
    let lexical: Vec<f64> = examples.iter().map(|e| membank_core::salience::estimate_importance(&e.text)).collect();
    println!("{:<14} {:<7} {:>6} {:>9} {:>8}", "set", "half", "turns", "critical", "lexical");
    for row in auc_table(&examples, &lexical, splits) {
        let auc = row.auc.map_or("-".to_string(), |a| format!("{a:.3}"));
        println!("{:<14} {:<7} {:>6} {:>9} {:>8}", row.set, row.half, row.turns, row.critical, auc);
    }
    Ok(())
}
