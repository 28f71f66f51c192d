#!/usr/bin/env bash
# Embedding throughput, membank's Rust all-MiniLM-L6-v2 against sentence-transformers on
# PyTorch, on the same 2,000 sentences at 1 and 2 threads, printed side by side.
#
# Needs: the model (run `membank models fetch`, or set MODEL_DIR), and a Python with torch
# and sentence-transformers (PYTHON, default .venv-st/bin/python at the repo root; make it
# with `python3 -m venv .venv-st && .venv-st/bin/pip install torch sentence-transformers`).
# It measures; it asserts nothing. Run it on a quiet machine: anything else running on the
# cores skews both sides.
#
# Usage: bench/embed/compare.sh [--n 2000] [--runs 5]
set -euo pipefail

here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
n=2000
runs=5
while [[ $# -gt 0 ]]; do
  case "$1" in
    --n) n="$2"; shift 2 ;;
    --runs) runs="$2"; shift 2 ;;
    *) echo "unknown argument $1" >&2; exit 2 ;;
  esac
done
python="${PYTHON:-$root/.venv-st/bin/python}"
model_dir="${MODEL_DIR:-${XDG_DATA_HOME:-$HOME/.local/share}/membank/models/all-MiniLM-L6-v2}"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
sentences="$work/sentences.txt"

python3 "$here/make_sentences.py" --n "$n" --out "$sentences"
load="$(cut -d' ' -f1-3 /proc/loadavg)"
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$root/target-embed}"
(cd "$root" && cargo build --release -q -p membank-embed --example bench_embed)
bench="$CARGO_TARGET_DIR/release/examples/bench_embed"

# Each side prints its runs; keep them in the log, pick the medians for the table.
rate() { grep "^$1:" | awk -F': ' '{print $2}'; }
declare -A rust torch rust_cpu torch_cpu
for threads in 1 2; do
  echo "== $threads thread(s)"
  out="$("$bench" --threads "$threads" --n "$n" --runs "$runs" --sentences "$sentences" --model-dir "$model_dir")"
  echo "rust:    $(echo "$out" | grep '^runs:')"
  rust[$threads]="$(echo "$out" | rate 'sentences/s')"
  rust_cpu[$threads]="$(echo "$out" | rate 'sentences per cpu-second')"
  out="$(HF_HUB_OFFLINE=1 "$python" "$here/pytorch_embed.py" --threads "$threads" --n "$n" --runs "$runs" \
      --sentences "$sentences" --model-dir "$model_dir" 2>/dev/null)"
  echo "pytorch: $(echo "$out" | grep '^runs:')"
  torch[$threads]="$(echo "$out" | rate 'sentences/s')"
  torch_cpu[$threads]="$(echo "$out" | rate 'sentences per cpu-second')"
done

ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2fx", a / b }'; }
echo
echo "all-MiniLM-L6-v2, $n sentences, median of $runs runs; load average before: $load"
echo "wall: sentences/s; cpu: sentences per CPU-second (all threads), less sensitive to other load"
printf '%-8s %10s %10s %7s | %10s %10s %7s\n' threads rust pytorch ratio rust-cpu torch-cpu ratio
for threads in 1 2; do
  printf '%-8s %10s %10s %7s | %10s %10s %7s\n' "$threads" \
    "${rust[$threads]}" "${torch[$threads]}" "$(ratio "${rust[$threads]}" "${torch[$threads]}")" \
    "${rust_cpu[$threads]}" "${torch_cpu[$threads]}" "$(ratio "${rust_cpu[$threads]}" "${torch_cpu[$threads]}")"
done
