//! Importance estimators against the critical-turn labels.
//!
//! ```text
//! xz -dk --stdout ../shared/data/longmemeval/longmemeval_s_cleaned.json.xz > /tmp/longmemeval_s_cleaned.json
//! cargo run --release -p membank-eval --example importance -- tune   [DATA_DIR] [LONGMEMEVAL_JSON]
//! cargo run --release -p membank-eval --example importance -- fit    [DATA_DIR] [LONGMEMEVAL_JSON]
//! cargo run --release -p membank-eval --example importance -- report [DATA_DIR] [LONGMEMEVAL_JSON]
//! ```
//!
//! `score` reads texts, one per line, from standard input and prints each one's estimates.
//! `dump` writes the tuning halves' hidden-state means (every layer, whole and per sentence)
//! to `/tmp/importance-dump/` for trying other probes outside Rust (tuning halves only);
//! `texts` prints the tuning halves' examples with their texts as JSON lines (for
//! `scripts/importance_finetune.py`, which fine-tunes the model's layers on them).
//! `tune` prints the lexical estimate's AUC on the tuning halves only; `fit` cross-validates
//! the probe on them (layer and strength) and writes its weights; `report` scores the shipped
//! estimator (the probe) and the lexical one on both halves (look at the reporting halves
//! once, at the end). `oof DATA_DIR LONGMEMEVAL_JSON 0|1` refits the shipped probe (its layer
//! and strength) without half 0 or 1 of every set's tuning groups (alternate users,
//! conversations, questions in file order) and writes the weights to
//! `/tmp/importance-oof-<half>/`: built in place of the shipped ones, they give the
//! forgetting policy out-of-fold importances for the tuning users it is chosen on (scores of
//! the users a probe was fitted on are more confident than a new user's). DATA_DIR defaults to `../shared/data` (holding `memorybank/`,
//! `locomo/`), the LongMemEval file to `/tmp/longmemeval_s_cleaned.json`; the labels are read
//! from `bench/critical` (run from the repository root), the models from membank's model
//! store (`membank models fetch`, with `--model multilingual-e5-small`).

use std::path::PathBuf;

use membank_embed::{Embedder, LocalEmbedder, LocalOptions};
use membank_eval::importance::{Example, Set, Sources, Split, auc_table, load, roc_auc};

fn main() -> Result<(), Error> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let command = args.first().map_or("tune", String::as_str);
    let data = PathBuf::from(args.get(1).map_or("../shared/data", String::as_str));
    let longmemeval = PathBuf::from(args.get(2).map_or("/tmp/longmemeval_s_cleaned.json", String::as_str));
    if command == "score" {
        return score_stdin();
    }
    if command == "dump" {
        return dump(&data, &longmemeval);
    }
    if command == "texts" {
        return texts(&data, &longmemeval);
    }
    let splits: &[Split] = match command {
        "tune" | "fit" | "oof" => &[Split::Tune],
        "report" => &[Split::Tune, Split::Report],
        other => return Err(format!("unknown command {other:?}: tune, fit, oof, report, score, dump or texts").into()),
    };
    let examples = load_labelled(&data, &longmemeval)?;
    let lexical: Vec<f64> = examples.iter().map(|e| membank_core::salience::estimate_importance(&e.text)).collect();
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
        fit(&examples, &lexical, None)?;
    }
    if command == "oof" {
        let half: usize =
            args.get(3).and_then(|h| h.parse().ok()).filter(|h| *h < 2).ok_or("oof needs a half: 0 or 1")?;
        fit(&examples, &lexical, Some(half))?;
    }
    Ok(())
}

/// Every labelled turn, read from the data directory, the LongMemEval file and
/// `bench/critical` (run from the repository root).
fn load_labelled(data: &std::path::Path, longmemeval: &std::path::Path) -> Result<Vec<Example>, Error> {
    Ok(load(&Sources {
        labels: &PathBuf::from("bench/critical"),
        memorybank_en: &data.join("memorybank/memory_bank_en.json"),
        memorybank_cn: &data.join("memorybank/memory_bank_cn.json"),
        locomo: &data.join("locomo/locomo10.json"),
        longmemeval: Some(longmemeval),
    })?)
}

/// The embedding models the probe is fitted for: the directory under the model store (also
/// the weight file's name), the sets it is fitted and cross-validated on, and the layers
/// tried (the hidden state after that many layers). all-MiniLM-L6-v2 serves English stores;
/// multilingual-e5-small serves stores whose first words were Chinese, which hold English
/// too, so it learns from every set (MemoryBank's two banks are one set of people translated:
/// a person's fold is the same in both).
const MODELS: [(&str, &[Set], &[usize]); 2] = [
    ("all-MiniLM-L6-v2", &[Set::MemoryBankEn, Set::Locomo, Set::LongMemEval], &[2, 3, 4, 5]),
    ("multilingual-e5-small", &Set::ALL, &[4, 6, 8, 10]),
];

/// L2 strengths tried (on the mean log loss, over the standardised feature weights; the
/// lexical weight and the bias are not penalised).
const LAMBDAS: [f64; 8] = [3.0, 1.0, 0.3, 0.1, 0.03, 0.01, 0.003, 0.001];

/// Folds of the grouped cross-validation (a set's groups, in file order, dealt round-robin).
const FOLDS: usize = 5;

type Error = Box<dyn std::error::Error>;

/// A choice's mean out-of-fold AUC, its layer and strength, and the AUC per set.
type Choice = (f64, usize, f64, Vec<(Set, f64)>);

fn model_store() -> PathBuf {
    membank_embed::default_model_dir().parent().map(std::path::Path::to_path_buf).unwrap_or_default()
}

/// The shipped estimator's score (`estimate_importance_with`, the probe where the model
/// has weights) for every example of `splits`, read by the model its set is stored with
/// (multilingual-e5-small for Chinese, all-MiniLM-L6-v2 otherwise), as the engine reads it.
fn shipped(examples: &[Example], splits: &[Split]) -> Result<Vec<f64>, Error> {
    let mut scores = vec![f64::NAN; examples.len()];
    for (dir, chinese) in [("all-MiniLM-L6-v2", false), ("multilingual-e5-small", true)] {
        let embedder = LocalEmbedder::open(&model_store().join(dir), LocalOptions::default())?;
        let ids: Vec<usize> = (0..examples.len())
            .filter(|&i| splits.contains(&examples[i].split) && examples[i].set.is_chinese() == chinese)
            .collect();
        let read = membank_eval::importance::probe_scores(&embedder, examples, &ids)?
            .ok_or_else(|| format!("{} has no probe weights", embedder.model_id()))?;
        for (&i, (p, version)) in ids.iter().zip(read) {
            if version == membank_core::salience::PROBE_ASKED_VERSION {
                let e = &examples[i];
                println!(
                    "raised by a request to remember: {} {:?} {} critical={} {:?}",
                    e.set.name(),
                    e.split,
                    e.group,
                    e.critical,
                    membank_core::salience::probe_text(&e.text)
                );
            }
            scores[i] = p;
        }
    }
    Ok(scores)
}

/// `score`: each line of standard input (a memory's content, `\n` written as `\\n`) scored
/// by the shipped estimator on both local models, to look at single cases.
fn score_stdin() -> Result<(), Error> {
    use std::io::BufRead;
    let lines: Vec<String> = std::io::stdin().lock().lines().collect::<Result<_, _>>()?;
    let texts: Vec<String> = lines.iter().map(|l| l.replace("\\n", "\n")).collect();
    let mut columns = Vec::new();
    for dir in ["all-MiniLM-L6-v2", "multilingual-e5-small"] {
        let embedder = LocalEmbedder::open(&model_store().join(dir), LocalOptions::default())?;
        let layer = membank_core::salience::probe_layer(embedder.model_id()).ok_or("no probe")?;
        let words: Vec<&str> = texts.iter().map(|t| membank_core::salience::probe_text(t)).collect();
        let means = embedder.layer_means(&words, layer)?.ok_or("no layers")?;
        columns.push(
            texts
                .iter()
                .zip(&means)
                .map(|(t, m)| membank_core::salience::estimate_importance_with(t, embedder.model_id(), Some(m)).0)
                .collect::<Vec<f64>>(),
        );
    }
    println!("{:>7} {:>7} {:>7}  text", "lexical", "minilm", "e5");
    for (k, text) in texts.iter().enumerate() {
        let lexical = membank_core::salience::estimate_importance(text);
        println!("{lexical:>7.3} {:>7.3} {:>7.3}  {}", columns[0][k], columns[1][k], lines[k]);
    }
    Ok(())
}

/// One row: the features, then the lexical logit and 1 (the bias).
fn features(vector: &[f32], lexical: f64) -> Vec<f64> {
    let l = lexical.clamp(1e-6, 1.0 - 1e-6);
    let mut row: Vec<f64> = vector.iter().map(|x| f64::from(*x)).collect();
    row.push((l / (1.0 - l)).ln());
    row.push(1.0);
    row
}

/// One row per example of `ids`: the mean hidden state after `layer` layers of its person's
/// words, then the lexical logit and 1.
fn layer_rows(
    examples: &[Example],
    lexical: &[f64],
    ids: &[usize],
    embedder: &LocalEmbedder,
    layer: usize,
) -> Result<Vec<Vec<f64>>, Error> {
    let mut rows = Vec::with_capacity(ids.len());
    for chunk in ids.chunks(64) {
        let texts: Vec<&str> = chunk.iter().map(|&i| membank_core::salience::probe_text(&examples[i].text)).collect();
        let means = embedder.layer_means(&texts, layer)?.ok_or("the local model shows no layers")?;
        for (&i, v) in chunk.iter().zip(means) {
            rows.push(features(&v, lexical[i]));
        }
    }
    Ok(rows)
}

/// Standardises the feature columns (all but the last two) over `rows` (no labels used), so
/// one strength suits every dimension; returns each column's centre and scale.
fn standardise(rows: &mut [Vec<f64>]) -> (Vec<f64>, Vec<f64>) {
    let dims = rows[0].len() - 2;
    let n = rows.len() as f64;
    let centre: Vec<f64> = (0..dims).map(|a| rows.iter().map(|r| r[a]).sum::<f64>() / n).collect();
    let scale: Vec<f64> = (0..dims)
        .map(|a| (rows.iter().map(|r| (r[a] - centre[a]).powi(2)).sum::<f64>() / n).sqrt().max(1e-9))
        .collect();
    for r in rows.iter_mut() {
        for a in 0..dims {
            r[a] = (r[a] - centre[a]) / scale[a];
        }
    }
    (centre, scale)
}

/// Each example's group's rank: within its set, its position in the data file among the
/// set's groups. MemoryBank's users have the same position in both languages, so a person and
/// their translation always share a rank, hence a fold.
fn ranks(examples: &[Example], ids: &[usize]) -> Vec<usize> {
    ids.iter()
        .map(|&i| {
            let mut positions: Vec<usize> =
                ids.iter().filter(|&&j| examples[j].set == examples[i].set).map(|&j| examples[j].position).collect();
            positions.sort_unstable();
            positions.dedup();
            positions.iter().position(|&p| p == examples[i].position).unwrap_or(0)
        })
        .collect()
}

/// Cross-validates, by group within the tuning halves only, an L2 logistic probe over the
/// mean hidden state at each of the model's candidate layers plus the lexical logit, for
/// each strength in [`LAMBDAS`]; chooses the layer and strength with the best mean
/// out-of-fold AUC over the model's sets, refits on every tuning example and writes the
/// weights to `crates/membank-core/data/`.
fn fit(examples: &[Example], lexical: &[f64], hold_out: Option<usize>) -> Result<(), Error> {
    for (dir, sets, layers) in MODELS {
        let embedder = LocalEmbedder::open(&model_store().join(dir), LocalOptions::default())?;
        let model_id = embedder.model_id().to_owned();
        let mut ids: Vec<usize> = (0..examples.len())
            .filter(|&i| examples[i].split == Split::Tune && sets.contains(&examples[i].set))
            .collect();
        let shipped_path = format!("crates/membank-core/data/{}.{dir}.json", membank_core::salience::PROBE_VERSION);
        let (layers, lambdas): (Vec<usize>, Vec<f64>) = match hold_out {
            None => (layers.to_vec(), LAMBDAS.to_vec()),
            Some(half) => {
                let rank = ranks(examples, &ids);
                ids = ids.iter().zip(rank).filter(|(_, r)| r % 2 != half).map(|(&i, _)| i).collect();
                let shipped: serde_json::Value = serde_json::from_slice(&std::fs::read(&shipped_path)?)?;
                let layer = shipped["layer"].as_u64().ok_or("the shipped file has no layer")? as usize;
                (vec![layer], vec![shipped["lambda"].as_f64().ok_or("the shipped file has no lambda")?])
            }
        };
        let labels: Vec<f64> = ids.iter().map(|&i| f64::from(u8::from(examples[i].critical))).collect();
        let fold: Vec<usize> = ranks(examples, &ids).into_iter().map(|r| r % FOLDS).collect();
        // Every set weighs the same in the loss, however many turns it labels (LoCoMo's
        // 2,760 would otherwise outvote MemoryBank's 300 per language).
        let weight: Vec<f64> = ids
            .iter()
            .map(|&i| {
                let in_set = ids.iter().filter(|&&j| examples[j].set == examples[i].set).count() as f64;
                ids.len() as f64 / (sets.len() as f64 * in_set)
            })
            .collect();
        let mut best: Option<Choice> = None;
        for &layer in &layers {
            let mut rows = layer_rows(examples, lexical, &ids, &embedder, layer)?;
            standardise(&mut rows);
            let mut warm: Vec<Vec<f64>> = vec![vec![0.0; rows[0].len()]; FOLDS];
            for &lambda in &lambdas {
                let mut oof = vec![0.0; ids.len()];
                for (f, start) in warm.iter_mut().enumerate() {
                    let train: Vec<usize> = (0..ids.len()).filter(|&k| fold[k] != f).collect();
                    let w = newton(&rows, &labels, &weight, &train, lambda, start.clone());
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
                let line: Vec<String> = per_set
                    .iter()
                    .map(|(s, a)| {
                        let scored: Vec<(f64, bool)> = (0..ids.len())
                            .filter(|&k| examples[ids[k]].set == *s)
                            .map(|k| (oof[k], examples[ids[k]].critical))
                            .collect();
                        format!("{} {a:.3} (kept@45 {:.3})", s.name(), kept_archiving(&scored, 0.45))
                    })
                    .collect();
                println!("{model_id} layer {layer} lambda {lambda:<6}: {}  mean {mean:.3}", line.join("  "));
                if best.as_ref().is_none_or(|b| mean > b.0) {
                    best = Some((mean, layer, lambda, per_set));
                }
            }
        }
        let (mean, layer, lambda, per_set) = best.ok_or("no choices")?;
        let mut rows = layer_rows(examples, lexical, &ids, &embedder, layer)?;
        let (centre, scale) = standardise(&mut rows);
        let all: Vec<usize> = (0..ids.len()).collect();
        let w = newton(&rows, &labels, &weight, &all, lambda, vec![0.0; rows[0].len()]);
        let d = w.len();
        let dims = d - 2;
        let raw: Vec<f64> = (0..dims).map(|a| w[a] / scale[a]).collect();
        let bias = w[d - 1] - (0..dims).map(|a| raw[a] * centre[a]).sum::<f64>();
        let round = |a: f64| (a * 1000.0).round() / 1000.0;
        let cv: serde_json::Map<String, serde_json::Value> =
            per_set.iter().map(|(s, a)| (s.name().to_owned(), serde_json::json!(round(*a)))).collect();
        let out = serde_json::json!({
            "version": membank_core::salience::PROBE_VERSION,
            "model": model_id,
            "about": "Logistic probe: P(critical) = sigmoid(mean hidden state after `layer` layers of probe_text . weights \
                      + lexical * logit(salience-v1) + bias). Fitted on the tuning halves of bench/critical only \
                      (crates/membank-eval/examples/importance.rs fit).",
            "layer": layer,
            "lambda": lambda,
        "set_weighting": "each set weighs the same",
            "tune_examples": ids.len(),
            "cv_auc": cv,
            "cv_auc_mean": round(mean),
            "bias": bias,
            "lexical": w[d - 2],
            "weights": raw,
        });
        let path = match hold_out {
            None => shipped_path,
            Some(half) => {
                std::fs::create_dir_all(format!("/tmp/importance-oof-{half}"))?;
                format!("/tmp/importance-oof-{half}/{}.{dir}.json", membank_core::salience::PROBE_VERSION)
            }
        };
        std::fs::write(&path, serde_json::to_string(&out)? + "\n")?;
        println!("{model_id}: chose layer {layer}, lambda {lambda} (CV mean AUC {mean:.3}); wrote {path}");
    }
    Ok(())
}

/// The share of critical examples still kept when the `share` of all examples with the
/// lowest scores is archived: what ranking by the score alone could keep at that storage.
fn kept_archiving(scored: &[(f64, bool)], share: f64) -> f64 {
    let mut sorted: Vec<&(f64, bool)> = scored.iter().collect();
    sorted.sort_by(|a, b| a.0.total_cmp(&b.0));
    let cut = (share * sorted.len() as f64).ceil() as usize;
    let critical = sorted.iter().filter(|(_, c)| *c).count();
    let kept = sorted[cut.min(sorted.len())..].iter().filter(|(_, c)| *c).count();
    if critical == 0 { 1.0 } else { kept as f64 / critical as f64 }
}

fn dot(a: &[f64], b: &[f64]) -> f64 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}

/// L2-regularised logistic regression (the `weight`-weighted mean log loss + lambda/2 |w|², the last
/// two columns, the lexical logit and the bias — unpenalised) by Newton's method from `w`,
/// until the step is tiny.
fn newton(
    rows: &[Vec<f64>],
    labels: &[f64],
    weight: &[f64],
    train: &[usize],
    lambda: f64,
    mut w: Vec<f64>,
) -> Vec<f64> {
    let d = w.len();
    let n: f64 = train.iter().map(|&i| weight[i]).sum();
    for _ in 0..30 {
        let mut grad = vec![0.0; d];
        let mut hess = vec![0.0; d * d];
        for &i in train {
            let x = &rows[i];
            let p = 1.0 / (1.0 + (-dot(x, &w)).exp());
            let s = weight[i] * (p * (1.0 - p)).max(1e-9) / n;
            let e = weight[i] * (p - labels[i]) / n;
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

/// `dump`: the tuning halves' features for exploring other probes outside Rust: per model,
/// `/tmp/importance-dump/<model>/meta.jsonl` (set, group position, label, lexical estimate,
/// sentence count) and raw little-endian f32 matrices of the person's words' mean hidden
/// state after each layer, whole (`whole_L<l>.f32`) and per sentence (`sent_L<l>.f32`).
fn dump(data: &std::path::Path, longmemeval: &std::path::Path) -> Result<(), Error> {
    use std::io::Write;
    let examples = load_labelled(data, longmemeval)?;
    for (dir, sets, _) in MODELS {
        let embedder = LocalEmbedder::open(&model_store().join(dir), LocalOptions::default())?;
        let ids: Vec<usize> = (0..examples.len())
            .filter(|&i| examples[i].split == Split::Tune && sets.contains(&examples[i].set))
            .collect();
        let out = PathBuf::from(format!("/tmp/importance-dump/{dir}"));
        std::fs::create_dir_all(&out)?;
        let texts: Vec<&str> = ids.iter().map(|&i| membank_core::salience::probe_text(&examples[i].text)).collect();
        let sentences: Vec<Vec<&str>> = texts.iter().map(|t| split_sentences(t)).collect();
        let mut meta = std::fs::File::create(out.join("meta.jsonl"))?;
        for (k, &i) in ids.iter().enumerate() {
            let e = &examples[i];
            let lexical = membank_core::salience::estimate_importance(&e.text);
            writeln!(
                meta,
                "{}",
                serde_json::json!({"set": e.set.name(), "group": e.group, "position": e.position, "critical": e.critical,
                    "lexical": lexical, "sentences": sentences[k].len(), "day": e.day})
            )?;
        }
        let flat: Vec<&str> = sentences.iter().flatten().copied().collect();
        let layers: Vec<usize> = (1..=if dir.starts_with("all-MiniLM") { 6 } else { 12 }).collect();
        for layer in layers {
            for (name, list) in [("whole", &texts), ("sent", &flat)] {
                let mut file =
                    std::io::BufWriter::new(std::fs::File::create(out.join(format!("{name}_L{layer}.f32")))?);
                for chunk in list.chunks(256) {
                    let means = embedder.layer_means(chunk, layer)?.ok_or("no layers")?;
                    for v in means {
                        for x in v {
                            file.write_all(&x.to_le_bytes())?;
                        }
                    }
                }
            }
            println!("{dir}: layer {layer} written ({} texts, {} sentences)", texts.len(), flat.len());
        }
    }
    Ok(())
}

/// `texts`: the tuning halves' examples as JSON lines on standard output (set, group
/// position, fold rank, label, lexical estimate, and the probe's text: the person's words), for
/// trying probes that need the tokens, such as fine-tuning a layer (tuning halves only).
fn texts(data: &std::path::Path, longmemeval: &std::path::Path) -> Result<(), Error> {
    let examples = load_labelled(data, longmemeval)?;
    let ids: Vec<usize> = (0..examples.len()).filter(|&i| examples[i].split == Split::Tune).collect();
    for (&i, rank) in ids.iter().zip(ranks(&examples, &ids)) {
        let e = &examples[i];
        println!(
            "{}",
            serde_json::json!({"set": e.set.name(), "group": e.group, "position": e.position, "rank": rank,
                "critical": e.critical, "lexical": membank_core::salience::estimate_importance(&e.text),
                "text": membank_core::salience::probe_text(&e.text)})
        );
    }
    Ok(())
}

/// A text's sentences: split after `.`, `!`, `?` followed by white space, after `。！？`, and
/// at line breaks; pieces without a letter are dropped; the whole text when that leaves none.
fn split_sentences(text: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut start = 0;
    let chars: Vec<(usize, char)> = text.char_indices().collect();
    for (k, &(at, c)) in chars.iter().enumerate() {
        let next_space = chars.get(k + 1).is_none_or(|&(_, n)| n.is_whitespace());
        let end = match c {
            '。' | '！' | '？' | '\n' => true,
            '.' | '!' | '?' => next_space,
            _ => false,
        };
        if end {
            let piece = text[start..at + c.len_utf8()].trim();
            if piece.chars().any(char::is_alphabetic) {
                out.push(piece);
            }
            start = at + c.len_utf8();
        }
    }
    let piece = text[start..].trim();
    if piece.chars().any(char::is_alphabetic) {
        out.push(piece);
    }
    if out.is_empty() {
        out.push(text);
    }
    out
}
