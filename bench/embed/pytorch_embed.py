#!/usr/bin/env python3
"""Embedding throughput of the reference implementation, sentence-transformers on PyTorch (CPU).

Counterpart of `membank bench embed --sentences FILE`: same sentence file (its first --n
lines), same thread count, the same numbers (median sentences/s and sentences per
CPU-second), so that bench/embed/compare.sh can put both side by side. Loads the model from a local directory
with HF_HUB_OFFLINE=1; it never downloads anything.
"""

import argparse
import os
import statistics
import time

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--sentences", required=True)
    parser.add_argument("--n", type=int, default=2000)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--model-dir", default=os.path.expanduser("~/.local/share/membank/models/all-MiniLM-L6-v2"))
    args = parser.parse_args()

    import torch

    torch.set_num_threads(args.threads)
    from sentence_transformers_loader import load_model

    model = load_model(args.model_dir)
    with open(args.sentences, encoding="utf-8") as f:
        sentences = [line.rstrip("\n") for line in f][: args.n]

    model.encode(sentences[:64], batch_size=args.batch_size, normalize_embeddings=True)  # warm-up
    rates, cpu_rates = [], []
    for _ in range(args.runs):
        start, cpu_start = time.perf_counter(), time.process_time()
        model.encode(sentences, batch_size=args.batch_size, normalize_embeddings=True)
        rates.append(len(sentences) / (time.perf_counter() - start))
        cpu_rates.append(len(sentences) / max(time.process_time() - cpu_start, 1e-9))
    print(f"runs: {' '.join(f'{r:.1f}' for r in rates)}")
    print(f"sentences/s: {statistics.median(rates):.1f}")
    print(f"sentences per cpu-second: {statistics.median(cpu_rates):.1f}")


if __name__ == "__main__":
    main()
