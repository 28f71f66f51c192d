//! Importance estimators against the critical-turn labels.
//!
//! ```text
//! xz -dk --stdout /work/shared/data/longmemeval/longmemeval_s_cleaned.json.xz > /tmp/longmemeval_s_cleaned.json
//! cargo run --release -p membank-eval --example importance -- tune   [DATA_DIR] [LONGMEMEVAL_JSON]
//! cargo run --release -p membank-eval --example importance -- fit    [DATA_DIR] [LONGMEMEVAL_JSON]
//! cargo run --release -p membank-eval --example importance -- report [DATA_DIR] [LONGMEMEVAL_JSON]
//! ```
//!
//! `tune` prints the lexical estimate's AUC on the tuning halves only; `fit` adds the probe's
//! cross-validation on them and writes its weights; `report` scores the shipped estimator
//! (the probe) and the lexical one on both halves (look at the reporting halves once, at the
//! end). DATA_DIR defaults to `../shared/data` (holding `memorybank/`,
//! `locomo/`), the LongMemEval file to `/tmp/longmemeval_s_cleaned.json`; the labels are read
//! from `bench/critical` (run from the repository root).

use std::path::PathBuf;

use membank_eval::importance::{Example, Set, Sources, Split, auc_table, load, roc_auc};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let command = args.first().map_or("tune", String::as_str);
    let data = PathBuf::from(args.get(1).map_or("../shared/data", String::as_str));
    let longmemeval = PathBuf::from(args.get(2).map_or("/tmp/longmemeval_s_cleaned.json", String::as_str));
    let splits: &[Split] = match command {
        "tune" => &[Split::Tune],
        "report" => &[Split::Tune, Split::Report],
        "fit" => &[Split::Tune],
        "dump" => &[Split::Tune, Split::Report],
        other => return Err(format!("unknown command {other:?}: tune, fit, report or dump").into()),
    };
    let examples = load(&Sources {
        labels: &PathBuf::from("bench/critical"),
        memorybank_en: &data.join("memorybank/memory_bank_en.json"),
        memorybank_cn: &data.join("memorybank/memory_bank_cn.json"),
        locomo: &data.join("locomo/locomo10.json"),
        longmemeval: &longmemeval,
    })?;
    let lexical: Vec<f64> = examples.iter().map(|e| membank_core::salience::estimate_importance(&e.text)).collect();
    if command == "dump" {
        return dump(&examples, &lexical, args.get(3).map_or("/tmp/importance-dump.jsonl", String::as_str));
    }
    let probe = if command == "report" { Some(shipped(&examples, splits)?) } else { None };
    println!("{:<14} {:<7} {:>6} {:>9} {:>8} {:>8}", "set", "half", "turns", "critical", "lexical", "probe");
    let probe_rows = probe.as_ref().map(|p| auc_table(&examples, p, splits));
    for (k, row) in auc_table(&examples, &lexical, splits).into_iter().enumerate() {
        let show = |a: Option<f64>| a.map_or("-".to_string(), |a| format!("{a:.3}"));
        let p = probe_rows.as_ref().map_or("-".to_string(), |rows| show(rows[k].auc));
        println!("{:<14} {:<7} {:>6} {:>9} {:>8} {:>8}", row.set, row.half, row.turns, row.critical, show(row.auc), p);
    }
    if probe.is_some() {
        println!("(probe on the tune halves is in-sample: it was fitted there; its CV AUC is in the weight files)");
    }
    if command == "fit" {
        fit(&examples, &lexical)?;
    }
    Ok(())
}

/// The embedding models the probe is fitted for: the directory under the model store, the
/// name of the weights file, and whether the sets it serves are the Chinese ones.
const MODELS: [(&str, &str, bool); 2] =
    [("all-MiniLM-L6-v2", "all-MiniLM-L6-v2", false), ("multilingual-e5-small", "multilingual-e5-small", true)];

/// L2 strengths tried (on the mean log loss, over the standardised embedding weights; the
/// lexical weight and the bias are not penalised).
const LAMBDAS: [f64; 12] = [10.0, 3.0, 1.0, 0.3, 0.1, 0.03, 0.01, 0.003, 0.001, 3e-4, 1e-4, 3e-5];

/// Folds of the grouped cross-validation (groups dealt round-robin within each set).
const FOLDS: usize = 5;

type Error = Box<dyn std::error::Error>;

/// A strength's mean out-of-fold AUC, the strength, and the AUC per set.
type Choice = (f64, f64, Vec<(Set, f64)>);

/// The shipped estimator's score (`estimate_importance_with`, the probe where the model
/// has weights) for every example of `splits`, embedded by the model its set is stored with.
fn shipped(examples: &[Example], splits: &[Split]) -> Result<Vec<f64>, Error> {
    use membank_embed::{Embedder, LocalEmbedder, LocalOptions};
    let models = membank_embed::default_model_dir().parent().map(std::path::Path::to_path_buf).unwrap_or_default();
    let mut scores = vec![f64::NAN; examples.len()];
    for (dir, _, chinese) in MODELS {
        let embedder = LocalEmbedder::open(&models.join(dir), LocalOptions::default())?;
        let ids: Vec<usize> = (0..examples.len())
            .filter(|&i| splits.contains(&examples[i].split) && examples[i].set.is_chinese() == chinese)
            .collect();
        for chunk in ids.chunks(32) {
            let texts: Vec<&str> =
                chunk.iter().map(|&i| membank_core::salience::probe_text(&examples[i].text)).collect();
            for (&i, v) in chunk.iter().zip(embedder.embed(&texts)?) {
                let (p, version) =
                    membank_core::salience::estimate_importance_with(&examples[i].text, embedder.model_id(), Some(&v));
                if version != membank_core::salience::PROBE_VERSION {
                    return Err(format!("{} has no probe weights", embedder.model_id()).into());
                }
                scores[i] = p;
            }
        }
    }
    Ok(scores)
}

/// Writes one JSON line per example (both halves: for offline analysis of which signals
/// to add, read only on the tuning half until the end): its set, half, group, day,
/// label, lexical estimate, shipped estimate and embedding.
fn dump(examples: &[Example], lexical: &[f64], out: &str) -> Result<(), Error> {
    use membank_embed::{Embedder, LocalEmbedder, LocalOptions};
    use std::io::Write;
    let models = membank_embed::default_model_dir().parent().map(std::path::Path::to_path_buf).unwrap_or_default();
    let mut file = std::io::BufWriter::new(std::fs::File::create(out)?);
    for (dir, _, chinese) in MODELS {
        let embedder = LocalEmbedder::open(&models.join(dir), LocalOptions::default())?;
        let other_dir = MODELS.iter().find(|m| m.0 != dir).map_or(dir, |m| m.0);
        let other = LocalEmbedder::open(&models.join(other_dir), LocalOptions::default())?;
        let ids: Vec<usize> = (0..examples.len()).filter(|&i| examples[i].set.is_chinese() == chinese).collect();
        for chunk in ids.chunks(32) {
            let texts: Vec<&str> = chunk.iter().map(|&i| examples[i].text.as_str()).collect();
            // The person's words alone (before the assistant's reply), and the other model's view.
            let users: Vec<&str> = texts.iter().map(|t| t.split("\nAssistant:").next().unwrap_or(t)).collect();
            let user_vectors = embedder.embed(&users)?;
            let other_vectors = other.embed(&texts)?;
            for (k, (&i, v)) in chunk.iter().zip(embedder.embed(&texts)?).enumerate() {
                let e = &examples[i];
                let (p, _) = membank_core::salience::estimate_importance_with(&e.text, embedder.model_id(), Some(&v));
                let line = serde_json::json!({
                    "set": e.set.name(), "tune": e.split == Split::Tune, "group": e.group, "day": e.day,
                    "critical": e.critical, "lexical": lexical[i], "probe": p, "text": e.text, "emb": v,
                    "emb_user": user_vectors[k], "emb_other": other_vectors[k],
                });
                writeln!(file, "{line}")?;
            }
        }
    }
    file.flush()?;
    println!("wrote {out}");
    Ok(())
}

/// One row per example: the memory's embedding, the lexical logit, and 1 (the bias).
fn features(embedding: &[f32], lexical: f64) -> Vec<f64> {
    let l = lexical.clamp(1e-6, 1.0 - 1e-6);
    let mut row: Vec<f64> = embedding.iter().map(|x| f64::from(*x)).collect();
    row.push((l / (1.0 - l)).ln());
    row.push(1.0);
    row
}

/// Embeds the examples of `ids` with the model in `dir`, batch by batch.
fn embed_rows(
    examples: &[Example],
    lexical: &[f64],
    ids: &[usize],
    dir: &std::path::Path,
) -> Result<(String, Vec<Vec<f64>>), Error> {
    use membank_embed::{Embedder, LocalEmbedder, LocalOptions};
    let embedder = LocalEmbedder::open(dir, LocalOptions::default())?;
    let mut rows = Vec::with_capacity(ids.len());
    for chunk in ids.chunks(32) {
        let texts: Vec<&str> = chunk.iter().map(|&i| membank_core::salience::probe_text(&examples[i].text)).collect();
        for (&i, v) in chunk.iter().zip(embedder.embed(&texts)?) {
            rows.push(features(&v, lexical[i]));
        }
    }
    Ok((embedder.model_id().to_owned(), rows))
}

/// Cross-validates, by group within the tuning halves only, an L2 logistic probe over the
/// memory's embedding plus the lexical logit for each strength in [`LAMBDAS`]; chooses the
/// strength with the best mean out-of-fold AUC over the model's sets, refits on every tuning
/// example and writes the weights to `crates/membank-core/data/`.
fn fit(examples: &[Example], lexical: &[f64]) -> Result<(), Box<dyn std::error::Error>> {
    let models = membank_embed::default_model_dir().parent().map(std::path::Path::to_path_buf).unwrap_or_default();
    for (dir, file, chinese) in MODELS {
        let ids: Vec<usize> = (0..examples.len())
            .filter(|&i| examples[i].split == Split::Tune && examples[i].set.is_chinese() == chinese)
            .collect();
        let (model_id, mut rows) = embed_rows(examples, lexical, &ids, &models.join(dir))?;
        // Standardise the embedding columns over the tuning rows (no labels used), so one
        // strength suits every dimension; folded back into raw weights when written.
        let dims = rows[0].len() - 2;
        let centre: Vec<f64> = (0..dims).map(|a| rows.iter().map(|r| r[a]).sum::<f64>() / rows.len() as f64).collect();
        let scale: Vec<f64> = (0..dims)
            .map(|a| {
                (rows.iter().map(|r| (r[a] - centre[a]).powi(2)).sum::<f64>() / rows.len() as f64).sqrt().max(1e-9)
            })
            .collect();
        for r in &mut rows {
            for a in 0..dims {
                r[a] = (r[a] - centre[a]) / scale[a];
            }
        }
        let labels: Vec<f64> = ids.iter().map(|&i| f64::from(u8::from(examples[i].critical))).collect();
        // Groups dealt round-robin to folds within each set, so every fold holds every set.
        let mut fold = vec![0usize; ids.len()];
        for set in Set::ALL {
            let mut groups: Vec<&str> =
                ids.iter().filter(|&&i| examples[i].set == set).map(|&i| examples[i].group.as_str()).collect();
            groups.sort_unstable();
            groups.dedup();
            for (k, &i) in ids.iter().enumerate() {
                if examples[i].set == set {
                    fold[k] = groups.iter().position(|g| *g == examples[i].group).unwrap_or(0) % FOLDS;
                }
            }
        }
        let sets: Vec<Set> = Set::ALL.into_iter().filter(|s| ids.iter().any(|&i| examples[i].set == *s)).collect();
        let mut best: Option<Choice> = None;
        let mut warm: Vec<Vec<f64>> = vec![vec![0.0; rows[0].len()]; FOLDS];
        for lambda in LAMBDAS {
            let mut oof = vec![0.0; ids.len()];
            for (f, start) in warm.iter_mut().enumerate() {
                let train: Vec<usize> = (0..ids.len()).filter(|&k| fold[k] != f).collect();
                let w = newton(&rows, &labels, &train, lambda, start.clone());
                for k in (0..ids.len()).filter(|&k| fold[k] == f) {
                    oof[k] = dot(&rows[k], &w);
                }
                *start = w;
            }
            let per_set: Vec<(Set, f64)> = sets
                .iter()
                .map(|&s| {
                    let scored: Vec<(f64, bool)> = (0..ids.len())
                        .filter(|&k| examples[ids[k]].set == s)
                        .map(|k| (oof[k], examples[ids[k]].critical))
                        .collect();
                    (s, roc_auc(&scored).unwrap_or(0.5))
                })
                .collect();
            let mean = per_set.iter().map(|(_, a)| a).sum::<f64>() / per_set.len() as f64;
            let line: Vec<String> = per_set.iter().map(|(s, a)| format!("{} {a:.3}", s.name())).collect();
            println!("{model_id} lambda {lambda:<6}: {}  mean {mean:.3}", line.join("  "));
            if best.as_ref().is_none_or(|b| mean > b.0) {
                best = Some((mean, lambda, per_set));
            }
        }
        let (mean, lambda, per_set) = best.ok_or("no strengths")?;
        let all: Vec<usize> = (0..ids.len()).collect();
        let w = newton(&rows, &labels, &all, lambda, vec![0.0; rows[0].len()]);
        let d = w.len();
        let raw: Vec<f64> = (0..dims).map(|a| w[a] / scale[a]).collect();
        let bias = w[d - 1] - (0..dims).map(|a| raw[a] * centre[a]).sum::<f64>();
        let cv: serde_json::Map<String, serde_json::Value> = per_set
            .iter()
            .map(|(s, a)| (s.name().to_owned(), serde_json::json!((a * 1000.0).round() / 1000.0)))
            .collect();
        let out = serde_json::json!({
            "version": "importance-probe-v2",
            "model": model_id,
            "about": "Logistic probe: P(critical) = sigmoid(embedding(probe_text) . weights + lexical * logit(salience-v1) + bias). \
                      Fitted on the tuning halves of bench/critical only (crates/membank-eval/examples/importance.rs fit).",
            "lambda": lambda,
            "tune_examples": ids.len(),
            "cv_auc": cv,
            "cv_auc_mean": (mean * 1000.0).round() / 1000.0,
            "bias": bias,
            "lexical": w[d - 2],
            "weights": raw,
        });
        let path = format!("crates/membank-core/data/importance-probe-v2.{file}.json");
        std::fs::create_dir_all("crates/membank-core/data")?;
        std::fs::write(&path, serde_json::to_string(&out)? + "\n")?;
        println!("{model_id}: chose lambda {lambda} (CV mean AUC {mean:.3}); wrote {path}");
    }
    Ok(())
}

fn dot(a: &[f64], b: &[f64]) -> f64 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}

/// L2-regularised logistic regression (mean log loss + lambda/2 |w|², the last
/// two columns, the lexical logit and the bias — unpenalised) by Newton's method from `w`,
/// until the step is tiny.
fn newton(rows: &[Vec<f64>], labels: &[f64], train: &[usize], lambda: f64, mut w: Vec<f64>) -> Vec<f64> {
    let d = w.len();
    let n = train.len() as f64;
    for _ in 0..30 {
        let mut grad = vec![0.0; d];
        let mut hess = vec![0.0; d * d];
        for &i in train {
            let x = &rows[i];
            let p = 1.0 / (1.0 + (-dot(x, &w)).exp());
            let s = (p * (1.0 - p)).max(1e-9) / n;
            let e = (p - labels[i]) / n;
            for a in 0..d {
                grad[a] += e * x[a];
                let sa = s * x[a];
                let row = &mut hess[a * d..a * d + a + 1];
                for (h, xb) in row.iter_mut().zip(&x[..=a]) {
                    *h += sa * xb;
                }
            }
        }
        for a in 0..d - 2 {
            grad[a] += lambda * w[a];
            hess[a * d + a] += lambda;
        }
        hess[(d - 2) * d + d - 2] += 1e-9;
        hess[(d - 1) * d + d - 1] += 1e-9;
        let step = cholesky_solve(&mut hess, &grad, d);
        let size = step.iter().map(|s| s * s).sum::<f64>().sqrt();
        for (wa, sa) in w.iter_mut().zip(&step) {
            *wa -= sa;
        }
        if size < 1e-6 {
            break;
        }
    }
    w
}

/// Solves H x = g for a symmetric positive definite H given by its lower triangle (row-major,
/// overwritten by its Cholesky factor).
fn cholesky_solve(h: &mut [f64], g: &[f64], d: usize) -> Vec<f64> {
    for j in 0..d {
        let mut diag = h[j * d + j];
        for k in 0..j {
            diag -= h[j * d + k] * h[j * d + k];
        }
        let diag = diag.max(1e-12).sqrt();
        h[j * d + j] = diag;
        for i in j + 1..d {
            let mut v = h[i * d + j];
            for k in 0..j {
                v -= h[i * d + k] * h[j * d + k];
            }
            h[i * d + j] = v / diag;
        }
    }
    let mut y = vec![0.0; d];
    for i in 0..d {
        let mut v = g[i];
        for k in 0..i {
            v -= h[i * d + k] * y[k];
        }
        y[i] = v / h[i * d + i];
    }
    let mut x = vec![0.0; d];
    for i in (0..d).rev() {
        let mut v = y[i];
        for k in i + 1..d {
            v -= h[k * d + i] * x[k];
        }
        x[i] = v / h[i * d + i];
    }
    x
}
