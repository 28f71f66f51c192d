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
        "fit" => &[Split::Tune],
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
    if command == "fit" {
        fit(&examples, &lexical)?;
    }
    Ok(())
}

/// Cross-validates, by group within the tuning halves only, an L2 logistic probe over the
/// memory's embedding (all-MiniLM-L6-v2, or multilingual-e5-small for Chinese) plus the
/// lexical logit, for a few regularisation strengths; prints the out-of-fold AUC per set.
fn fit(examples: &[membank_eval::importance::Example], lexical: &[f64]) -> Result<(), Box<dyn std::error::Error>> {
    use membank_embed::{Embedder, LocalEmbedder, LocalOptions};
    let models = membank_embed::default_model_dir().parent().map(std::path::Path::to_path_buf).unwrap_or_default();
    let tune: Vec<usize> = (0..examples.len()).filter(|&i| examples[i].split == Split::Tune).collect();
    let mut rows: Vec<Vec<f64>> = vec![Vec::new(); examples.len()];
    for (chinese, dir) in [(false, "all-MiniLM-L6-v2"), (true, "multilingual-e5-small")] {
        let embedder = LocalEmbedder::open(&models.join(dir), LocalOptions::default())?;
        let ids: Vec<usize> = tune.iter().copied().filter(|&i| examples[i].set.is_chinese() == chinese).collect();
        let texts: Vec<&str> = ids.iter().map(|&i| examples[i].text.as_str()).collect();
        for (chunk_ids, chunk) in ids.chunks(32).zip(texts.chunks(32)) {
            for (&i, v) in chunk_ids.iter().zip(embedder.embed(chunk)?) {
                let l = lexical[i].clamp(1e-6, 1.0 - 1e-6);
                let mut row: Vec<f64> = v.iter().map(|x| f64::from(*x)).collect();
                row.push((l / (1.0 - l)).ln());
                row.push(1.0);
                rows[i] = row;
            }
        }
    }
    for lambda in [0.001, 0.01, 0.1, 1.0] {
        let mut oof = vec![f64::NAN; examples.len()];
        for chinese in [false, true] {
            let ids: Vec<usize> = tune.iter().copied().filter(|&i| examples[i].set.is_chinese() == chinese).collect();
            let mut groups: Vec<&str> = ids.iter().map(|&i| examples[i].group.as_str()).collect();
            groups.sort_unstable();
            groups.dedup();
            for g in &groups {
                let train: Vec<usize> = ids.iter().copied().filter(|&i| examples[i].group != *g).collect();
                let w = logistic(&rows, examples, &train, lambda);
                for &i in ids.iter().filter(|&&i| examples[i].group == *g) {
                    oof[i] = rows[i].iter().zip(&w).map(|(a, b)| a * b).sum();
                }
            }
        }
        let cells = auc_table(examples, &oof, &[Split::Tune]);
        let line: Vec<String> =
            cells.iter().map(|r| format!("{} {}", r.set, r.auc.map_or("-".into(), |a| format!("{a:.3}")))).collect();
        println!("probe lambda {lambda}: {}", line.join("  "));
    }
    Ok(())
}

/// L2-regularised logistic regression by full-batch gradient descent (the bias, the last
/// column, is not penalised).
fn logistic(
    rows: &[Vec<f64>],
    examples: &[membank_eval::importance::Example],
    train: &[usize],
    lambda: f64,
) -> Vec<f64> {
    let d = rows[train[0]].len();
    let mut w = vec![0.0; d];
    let n = train.len() as f64;
    for _ in 0..300 {
        let mut grad = vec![0.0; d];
        for &i in train {
            let z: f64 = rows[i].iter().zip(&w).map(|(a, b)| a * b).sum();
            let err = 1.0 / (1.0 + (-z).exp()) - f64::from(u8::from(examples[i].critical));
            for (g, x) in grad.iter_mut().zip(&rows[i]) {
                *g += err * x / n;
            }
        }
        for k in 0..d {
            let penalty = if k + 1 == d { 0.0 } else { lambda * w[k] };
            w[k] -= 2.0 * (grad[k] + penalty);
        }
    }
    w
}
