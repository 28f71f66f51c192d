#!/usr/bin/env bash
# Embedding throughput, membank's Rust all-MiniLM-L6-v2 (`membank bench embed`) against
# sentence-transformers on PyTorch, on the same sentence file at 1 and 2 threads, printed
# side by side.
#
# Needs: python3 (it builds the sentence file and reads membank's --json report), the model
# (run `membank models fetch`, or set MODEL_DIR), and for the PyTorch side a Python with
# torch and sentence-transformers (PYTHON, default .venv-st/bin/python at the repo root;
# make it with `python3 -m venv .venv-st && .venv-st/bin/pip install torch
# sentence-transformers`). It measures; it asserts nothing. Run it on a quiet machine:
# anything else running on the cores skews both sides.
#
# Usage: bench/embed/compare.sh [--n 2000] [--runs 5] [--thread-counts 1,2]
#                               [--sentences FILE] [--rust-only]
#
#   --sentences FILE  use this file (one sentence per line) instead of building one from
#                     the public data (DATA, default ../shared/data beside the repo)
#   --rust-only       run the whole Rust side, print its numbers and stop before PyTorch
#                     (also COMPARE_STOP_BEFORE_PYTORCH=1); the CLI tests run it this way
#                     so that the script cannot rot unnoticed
#   MEMBANK_BIN       the membank binary to measure; without it the script builds one
#                     with `cargo build --release -p membank-cli`
set -euo pipefail

here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
n=2000
runs=5
thread_counts=1,2
sentences=""
rust_only="${COMPARE_STOP_BEFORE_PYTORCH:-0}"
usage() { echo "compare.sh: $1 (usage: compare.sh [--n N] [--runs N] [--thread-counts 1,2] [--sentences FILE] [--rust-only])" >&2; exit 2; }
while [[ $# -gt 0 ]]; do
  case "$1" in
    --n|--runs|--thread-counts|--sentences) [[ $# -ge 2 ]] || usage "$1 needs a value" ;;&
    --n) n="$2"; shift 2 ;;
    --runs) runs="$2"; shift 2 ;;
    --thread-counts) thread_counts="$2"; shift 2 ;;
    --sentences) sentences="$2"; shift 2 ;;
    --rust-only) rust_only=1; shift ;;
    *) usage "unknown argument $1" ;;
  esac
done
[[ "$n" =~ ^[1-9][0-9]{0,6}$ ]] || usage "--n takes a number from 1 to 9999999, not '$n'"
[[ "$runs" =~ ^[1-9][0-9]{0,2}$ ]] || usage "--runs takes a number from 1 to 999, not '$runs'"
[[ "$thread_counts" =~ ^[1-9][0-9]{0,2}(,[1-9][0-9]{0,2})*$ ]] || usage "--thread-counts takes numbers such as 1,2, not '$thread_counts'"
if [[ -n "$sentences" && ! -f "$sentences" ]]; then
  usage "--sentences $sentences is not a file"
fi
python="${PYTHON:-$root/.venv-st/bin/python}"
model_dir="${MODEL_DIR:-${XDG_DATA_HOME:-$HOME/.local/share}/membank/models/all-MiniLM-L6-v2}"
data="${DATA:-$root/../shared/data}"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

if [[ -z "$sentences" ]]; then
  sentences="$work/sentences.txt"
  python3 "$here/make_sentences.py" --n "$n" --out "$sentences" \
    --memorybank "$data/memorybank/memory_bank_en.json" --locomo "$data/locomo/locomo10.json"
fi
load="$(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null || echo unknown)"
if [[ -n "${MEMBANK_BIN:-}" ]]; then
  bin="$MEMBANK_BIN"
else
  (cd "$root" && cargo build --release -q -p membank-cli)
  bin="${CARGO_TARGET_DIR:-$root/target}/release/membank"
fi
[[ -x "$bin" ]] || usage "no membank binary at $bin"

# The Rust side: one run of the real CLI over every thread count, read from its --json
# report. The local MiniLM is named explicitly so a configured e5 or remote embedder
# cannot slip in.
"$bin" --embedder local --local-model all-MiniLM-L6-v2 --model-dir "$model_dir" --json \
  bench embed --sentences "$sentences" --n "$n" --runs "$runs" --thread-counts "$thread_counts" > "$work/rust.json"
# One line per thread count: threads, sentences/s, sentences per CPU-second, every run.
python3 - "$work/rust.json" > "$work/rust.txt" <<'PY'
import json, sys
report = json.load(open(sys.argv[1]))
assert report["benchmark"] == "embed", report
for row in report["results"]:
    cpu = row["sentences_per_cpu_second"]
    runs = " ".join(f"{r:.1f}" for r in row["run_rates"])
    print(row["threads"], f"{row['sentences_per_second']:.1f}", "-" if cpu is None else f"{cpu:.1f}", runs)
PY
declare -A rust rust_cpu torch torch_cpu
while read -r threads rate cpu rest; do
  echo "== $threads thread(s)"
  echo "rust:    runs: $rest"
  rust[$threads]="$rate"
  rust_cpu[$threads]="$cpu"
done < "$work/rust.txt"
words="$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["words"])' "$work/rust.json")"

if [[ "$rust_only" == 1 ]]; then
  echo
  echo "all-MiniLM-L6-v2, $n sentences ($words words), median of $runs runs, Rust only (stopped before PyTorch); load average before: $load"
  printf '%-8s %10s %10s\n' threads rust rust-cpu
  for threads in ${thread_counts//,/ }; do
    printf '%-8s %10s %10s\n' "$threads" "${rust[$threads]}" "${rust_cpu[$threads]}"
  done
  exit 0
fi

# The PyTorch side, thread count by thread count (torch.set_num_threads in each process).
rate() { grep "^$1:" | awk -F': ' '{print $2}'; }
for threads in ${thread_counts//,/ }; do
  out="$(HF_HUB_OFFLINE=1 "$python" "$here/pytorch_embed.py" --threads "$threads" --n "$n" --runs "$runs" \
      --sentences "$sentences" --model-dir "$model_dir" 2>/dev/null)"
  echo "pytorch ($threads thread(s)): $(echo "$out" | grep '^runs:')"
  torch[$threads]="$(echo "$out" | rate 'sentences/s')"
  torch_cpu[$threads]="$(echo "$out" | rate 'sentences per cpu-second')"
done

ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (a == "-" || b == "-" || b == 0) print "-"; else printf "%.2fx", a / b }'; }
echo
echo "all-MiniLM-L6-v2, $n sentences ($words words), median of $runs runs; load average before: $load"
echo "wall: sentences/s; cpu: sentences per CPU-second (all threads), less sensitive to other load"
printf '%-8s %10s %10s %7s | %10s %10s %7s\n' threads rust pytorch ratio rust-cpu torch-cpu ratio
for threads in ${thread_counts//,/ }; do
  printf '%-8s %10s %10s %7s | %10s %10s %7s\n' "$threads" \
    "${rust[$threads]}" "${torch[$threads]}" "$(ratio "${rust[$threads]}" "${torch[$threads]}")" \
    "${rust_cpu[$threads]}" "${torch_cpu[$threads]}" "$(ratio "${rust_cpu[$threads]}" "${torch_cpu[$threads]}")"
done
