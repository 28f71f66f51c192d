#!/usr/bin/env python3
"""Would fine-tuning the embedding model on the critical-turn labels beat the shipped probe?

A research script, not part of the build or the tests. The shipped importance probe
(`importance-probe-v5`) is a logistic regression over the *frozen* model's mean hidden state
after layer 4 (all-MiniLM-L6-v2) or 6 (multilingual-e5-small) plus the lexical estimate's
logit. This script asks whether letting the labels change the model helps: it reads the tuning halves' examples, runs the model's first BASE
layers frozen, then layers BASE+1..TOP either frozen (`frozen`: the shipped probe's form,
fitted by scikit-learn), fully trained (`full`) or through low-rank adapters on their six
linear maps (`lora`, what a shipped file could carry), with a logistic head on the mean state
after layer TOP and the lexical logit, and scores each by grouped 5-fold cross-validation on
the tuning halves only (the same folds as `importance fit`: a set's groups in file order,
dealt round-robin; every set weighs the same in the loss). It prints each set's ROC
AUC and the share of its critical turns kept when the lowest-scored 45 % are archived (the
ranking bound the forgetting curve works under), and their mean.

    cargo run --release -p membank-eval --example importance -- texts ../shared/data \\
        /tmp/longmemeval_s_cleaned.json > /tmp/importance-texts.jsonl
    pip install jax tokenizers safetensors scikit-learn numpy
    python3 scripts/importance_finetune.py /tmp/importance-texts.jsonl frozen
    python3 scripts/importance_finetune.py /tmp/importance-texts.jsonl full
    python3 scripts/importance_finetune.py /tmp/importance-texts.jsonl full --model multilingual-e5-small
    python3 scripts/importance_finetune.py /tmp/importance-texts.jsonl lora --lr 1e-3

The models are read from membank's model store (`membank models fetch`, with `--model
multilingual-e5-small` for the second); all-MiniLM-L6-v2 is scored on the English sets,
multilingual-e5-small on all four, as `importance fit` does. `--base` and `--top` default to
the shipped probe's layer (4 and 6) and the one below it. Frozen token states
are cached in /tmp/importance-finetune/. On 2 cores a `full` or `lora` run of one layer takes
about 12 minutes with all-MiniLM-L6-v2 and 18 with multilingual-e5-small. The `texts` command writes tuning halves only, so nothing here can see a
reporting half.
"""

import argparse
import hashlib
import json
import os
import pickle
import sys
import time

import jax
import jax.numpy as jnp
import numpy as np
from safetensors.numpy import load_file
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import roc_auc_score
from tokenizers import Tokenizer

STORE = os.path.expanduser("~/.local/share/membank/models/")
# Per model: the sets it is fitted on (as `importance fit`), the prefix it reads documents with,
# its token limit, and the probe's layer (the shipped `importance-probe-v5`).
MODELS = {
    "all-MiniLM-L6-v2": (["memorybank_en", "locomo", "longmemeval"], "", 256, 4),
    "multilingual-e5-small": (["memorybank_en", "memorybank_cn", "locomo", "longmemeval"], "passage: ", 512, 6),
}
MODEL = ""
SETS = []
CACHE = "/tmp/importance-finetune"
LINEAR = [
    "attention.self.query",
    "attention.self.key",
    "attention.self.value",
    "attention.output.dense",
    "intermediate.dense",
    "output.dense",
]
BATCH = 32


def layer_norm(x, g, b, eps=1e-12):
    m = x.mean(-1, keepdims=True)
    v = ((x - m) ** 2).mean(-1, keepdims=True)
    return (x - m) / jnp.sqrt(v + eps) * g + b


def bert_layer(p, h, mask, heads=12):
    """One BERT encoder layer (post-norm, exact GELU), as membank's bert.rs computes it."""
    b, t, d = h.shape
    hd = d // heads

    def lin(x, name):
        return x @ p[name + ".weight"].T + p[name + ".bias"]

    q = lin(h, "attention.self.query").reshape(b, t, heads, hd)
    k = lin(h, "attention.self.key").reshape(b, t, heads, hd)
    v = lin(h, "attention.self.value").reshape(b, t, heads, hd)
    s = jnp.einsum("bthd,bshd->bhts", q, k) / jnp.sqrt(hd) + (1.0 - mask[:, None, None, :]) * -1e9
    o = jnp.einsum("bhts,bshd->bthd", jax.nn.softmax(s, -1), v).reshape(b, t, d)
    h = layer_norm(lin(o, "attention.output.dense") + h, p["attention.output.LayerNorm.weight"],
                   p["attention.output.LayerNorm.bias"])
    i = lin(h, "intermediate.dense")
    i = 0.5 * i * (1 + jax.scipy.special.erf(i / jnp.sqrt(2.0)))
    return layer_norm(lin(i, "output.dense") + h, p["output.LayerNorm.weight"], p["output.LayerNorm.bias"])


def weights():
    return {k.removeprefix("bert."): v for k, v in load_file(MODEL + "model.safetensors").items()}


def layer_params(w, index):
    pre = f"encoder.layer.{index}."
    return {k[len(pre):]: jnp.asarray(v) for k, v in w.items() if k.startswith(pre)}


def padded(rows, idx, dim=None):
    """A batch of BATCH rows padded to a power of two in length (few shapes, few compilations)."""
    longest = max(len(rows[i]) for i in idx)
    t = int(2 ** np.ceil(np.log2(max(8, longest))))
    mask = np.zeros((BATCH, t), np.float32)
    out = np.zeros((BATCH, t) if dim is None else (BATCH, t, dim), np.int32 if dim is None else np.float32)
    for r, i in enumerate(idx):
        out[r, : len(rows[i])] = rows[i]
        mask[r, : len(rows[i])] = 1
    return out, mask


def frozen_states(texts, depth, prefix, limit):
    """Token states after `depth` layers for every text (cached; float16 to fit in memory)."""
    path = f"{CACHE}/{os.path.basename(MODEL.rstrip('/'))}_L{depth}.pkl"
    key = hashlib.sha256("\0".join(texts).encode()).hexdigest()
    if os.path.exists(path):
        cached = pickle.load(open(path, "rb"))
        if cached.get("texts") == key:
            return cached["states"]
    tok = Tokenizer.from_file(MODEL + "tokenizer.json")
    tok.no_padding()
    tok.enable_truncation(limit)
    ids = [np.array(tok.encode(prefix + t).ids, np.int32) for t in texts]
    w = weights()
    emb = {k: jnp.asarray(v) for k, v in w.items() if k.startswith("embeddings")}
    layers = [layer_params(w, i) for i in range(depth)]

    @jax.jit
    def run(tokens, mask):
        t = tokens.shape[1]
        h = (emb["embeddings.word_embeddings.weight"][tokens] + emb["embeddings.position_embeddings.weight"][None, :t]
             + emb["embeddings.token_type_embeddings.weight"][0])
        h = layer_norm(h, emb["embeddings.LayerNorm.weight"], emb["embeddings.LayerNorm.bias"])
        for p in layers:
            h = bert_layer(p, h, mask)
        return h

    states = [None] * len(texts)
    order = np.argsort([len(i) for i in ids], kind="stable")
    for s in range(0, len(order), BATCH):
        idx = order[s:s + BATCH]
        tokens, mask = padded(ids, idx)
        h = np.asarray(run(tokens, mask))
        for r, i in enumerate(idx):
            states[i] = h[r, : len(ids[i])].astype(np.float16)
    os.makedirs(CACHE, exist_ok=True)
    pickle.dump({"states": states, "texts": key}, open(path, "wb"), protocol=4)
    return states


def logit(p):
    p = np.clip(p, 1e-4, 1 - 1e-4)
    return np.log(p / (1 - p))


def kept(labels, scores, archived=0.45):
    """Share of critical turns not among the lowest-scored `archived` share."""
    order = np.argsort(scores, kind="stable")
    out = np.zeros(len(scores), bool)
    out[order[: int(round(archived * len(scores)))]] = True
    return 1 - (out & (labels == 1)).sum() / max((labels == 1).sum(), 1)


def trained(args, states, lex, y, weight, fold):
    """Out-of-fold scores of the layers BASE+1..TOP trained (full or LoRA) with the head."""
    w = weights()
    start = [layer_params(w, i) for i in range(args.base, args.top)]
    lens = np.array([len(s) for s in states])

    def merged(params):
        if "lora" not in params:
            return params["layers"]
        out = []
        for p, lo in zip(params["layers"], params["lora"]):
            q = dict(p)
            for k in LINEAR:
                q[k + ".weight"] = p[k + ".weight"] + (lo[k][0] @ lo[k][1]).T
            out.append(q)
        return out

    def mean_state(params, h, m):
        for p in merged(params):
            h = bert_layer(p, h, m)
        return (h * m[..., None]).sum(1) / jnp.maximum(m.sum(1, keepdims=True), 1.0)

    def score(params, h, m, lx):
        z = (mean_state(params, h, m) - params["mu"]) / params["sd"]
        return z @ params["w"] + params["lex"] * lx + params["b"]

    def loss(trainable, fixed, h, m, lx, yy, ww):
        z = score({**fixed, **trainable}, h, m, lx)
        return ((jnp.logaddexp(0, z) - yy * z) * ww).sum() / BATCH + 1e-3 * (trainable["w"] ** 2).sum()

    grad = jax.jit(jax.value_and_grad(loss))
    score_j = jax.jit(score)
    mean_j = jax.jit(mean_state)

    @jax.jit
    def adam(trainable, g, m1, m2, t, lr_layers):
        m1 = jax.tree_util.tree_map(lambda a, b: 0.9 * a + 0.1 * b, m1, g)
        m2 = jax.tree_util.tree_map(lambda a, b: 0.999 * a + 0.001 * b * b, m2, g)
        out = {}
        for k in trainable:
            lr = 1e-3 if k in ("w", "b", "lex") else lr_layers
            out[k] = jax.tree_util.tree_map(
                lambda p, a, b, lr=lr: p - lr * (a / (1 - 0.9**t)) / (jnp.sqrt(b / (1 - 0.999**t)) + 1e-8),
                trainable[k], m1[k], m2[k])
        return out, m1, m2

    def batch(idx):
        h, m = padded(states, idx, dim=states[0].shape[1])
        sel = np.zeros(BATCH, np.float32)
        sel[: len(idx)] = 1
        ii = np.zeros(BATCH, np.int64)
        ii[: len(idx)] = idx
        return h, m, sel, ii

    def batches(ids, rng):
        order = ids[np.argsort(lens[ids] + rng.uniform(0, 8, len(ids)), kind="stable")]
        out = [order[s:s + BATCH] for s in range(0, len(order), BATCH)]
        rng.shuffle(out)
        return out

    oof = np.zeros(len(y))
    for f in range(5):
        began = time.time()
        rng = np.random.default_rng(f + 100 * args.seed)
        train = np.where(fold != f)[0]
        params = {"layers": [dict(p) for p in start], "w": jnp.zeros(384), "b": jnp.zeros(()), "lex": jnp.zeros(())}
        means = []
        for idx in batches(train, rng):
            h, m, _, _ = batch(idx)
            means.append(np.asarray(mean_j(params, h, m))[: len(idx)])
        means = np.concatenate(means)
        params["mu"], params["sd"] = jnp.asarray(means.mean(0)), jnp.asarray(means.std(0) + 1e-6)
        if args.mode == "lora":
            init = np.random.default_rng(7 + f)
            params["lora"] = [
                {k: (jnp.asarray(init.normal(0, 0.02, (p[k + ".weight"].shape[1], args.rank)), jnp.float32),
                     jnp.zeros((args.rank, p[k + ".weight"].shape[0]))) for k in LINEAR}
                for p in start
            ]
        names = ["lora" if args.mode == "lora" else "layers", "w", "b", "lex"]
        trainable = {k: params[k] for k in names}
        fixed = {k: v for k, v in params.items() if k not in names}
        m1 = jax.tree_util.tree_map(jnp.zeros_like, trainable)
        m2 = jax.tree_util.tree_map(jnp.zeros_like, trainable)
        t = 0
        for epoch in range(args.epochs):
            total = 0.0
            for idx in batches(train, rng):
                h, m, sel, ii = batch(idx)
                t += 1
                value, g = grad(trainable, fixed, h, m, lex[ii], y[ii], weight[ii] * sel)
                trainable, m1, m2 = adam(trainable, g, m1, m2, t, args.lr)
                total += float(value)
            print(f"fold {f} epoch {epoch}: loss {total:.1f} ({time.time() - began:.0f} s)", file=sys.stderr, flush=True)
        test = np.where(fold == f)[0]
        for s in range(0, len(test), BATCH):
            idx = test[s:s + BATCH]
            h, m, _, ii = batch(idx)
            oof[idx] = np.asarray(score_j({**fixed, **trainable}, h, m, lex[ii]))[: len(idx)]
    return oof


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("texts", help="the output of `importance texts` (tuning halves only)")
    ap.add_argument("mode", choices=["frozen", "full", "lora"])
    ap.add_argument("--model", choices=sorted(MODELS), default="all-MiniLM-L6-v2")
    ap.add_argument("--base", type=int, help="layers run frozen (full, lora); default: the probe's layer - 1")
    ap.add_argument("--top", type=int, help="the layer whose mean the head reads; default: the probe's layer")
    ap.add_argument("--epochs", type=int, default=3)
    ap.add_argument("--lr", type=float, default=3e-5, help="learning rate of the trained layers or adapters")
    ap.add_argument("--rank", type=int, default=8, help="LoRA rank")
    ap.add_argument("--seed", type=int, default=0, help="batch order")
    args = ap.parse_args()
    global MODEL, SETS
    SETS, prefix, limit, probe_layer = MODELS[args.model]
    MODEL = f"{STORE}{args.model}/"
    args.top = probe_layer if args.top is None else args.top
    args.base = args.top - 1 if args.base is None else args.base
    depth = 6 if args.model.startswith("all-MiniLM") else 12
    if not 0 <= args.base <= args.top <= depth:
        ap.error(f"need 0 <= base <= top <= {depth}")
    ex = [json.loads(line) for line in open(args.texts)]
    ex = [e for e in ex if e["set"] in SETS]
    y = np.array([float(e["critical"]) for e in ex], np.float32)
    sets = np.array([e["set"] for e in ex])
    fold = np.array([e["rank"] % 5 for e in ex])
    lex = logit(np.array([e["lexical"] for e in ex])).astype(np.float32)
    weight = np.array([len(ex) / (len(SETS) * (sets == s).sum()) for s in sets], np.float32)
    texts = [e["text"] for e in ex]
    if args.mode == "frozen":
        x = np.stack([s.astype(np.float32).mean(0) for s in frozen_states(texts, args.top, prefix, limit)])
        x = np.hstack([(x - x.mean(0)) / (x.std(0) + 1e-6), lex[:, None]])
        oof = np.zeros(len(ex))
        for f in range(5):
            train = fold != f
            fit = LogisticRegression(C=0.01, max_iter=3000).fit(x[train], y[train], sample_weight=weight[train])
            oof[~train] = fit.decision_function(x[~train])
    else:
        oof = trained(args, frozen_states(texts, args.base, prefix, limit), lex, y, weight, fold)
    rows = [(s, roc_auc_score(y[sets == s], oof[sets == s]), kept(y[sets == s], oof[sets == s])) for s in SETS]
    line = "  ".join(f"{s} {a:.3f} (kept@45 {k:.3f})" for s, a, k in rows)
    print(f"{args.model} {args.mode} base {args.base} top {args.top}: {line}  mean {np.mean([a for _, a, _ in rows]):.3f}")


if __name__ == "__main__":
    main()
