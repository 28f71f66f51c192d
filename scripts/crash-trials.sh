#!/usr/bin/env bash
# Crash trials (issue 10): N trials of a mixed workload against a real `membank serve` on
# 127.0.0.1, each ended by `kill -9` at a random moment, then a restart that checks every
# acknowledged write survived and nothing unacknowledged is half-present, and
# `membank check`. The driver is scripts/crash_trials.py (Python 3, stdlib only).
#
#   scripts/crash-trials.sh N [--seed S] [--threads T] [--dir DIR] …   (see crash_trials.py --help)
#
# The binary is $MEMBANK_BIN if set (CI uses the debug build), else a release build.
# The last line printed is exactly `N trials, K acknowledged writes, L lost`; the exit
# status is non-zero if anything was lost or half-present.
set -euo pipefail
cd "$(dirname "$0")/.."
if [[ $# -lt 1 ]]; then
    echo "usage: $0 N [crash_trials.py options]" >&2
    exit 2
fi
if [[ -z "${MEMBANK_BIN:-}" ]]; then
    cargo build --quiet --release -p membank-cli
    MEMBANK_BIN="$PWD/target/release/membank"
fi
exec python3 scripts/crash_trials.py "$@" --bin "$MEMBANK_BIN"
