#!/usr/bin/env bash
# Schema-driven fuzzing of the REST API against its own OpenAPI document, with
# schemathesis (PyPI). Starts a real `membank serve` on a loopback port with a fresh
# database and an API key, runs schemathesis against /openapi.json, then stops the server
# and runs the database integrity check. Kept out of `cargo test`: it takes minutes.
#
# Usage: [MEMBANK_BIN=path] scripts/fuzz_openapi.sh [MAX_EXAMPLES]   (default 30 per operation)
# Needs: cargo, python3 with pip (installs schemathesis if missing), the local model.
set -euo pipefail
cd "$(dirname "$0")/.."
max_examples="${1:-30}"
command -v schemathesis >/dev/null || python3 -m pip install -q schemathesis
# MEMBANK_BIN: an already built binary (e.g. target/debug/membank); default: a release build.
if [ -z "${MEMBANK_BIN:-}" ]; then
  cargo build --release -q -p membank-cli
  MEMBANK_BIN="$PWD/target/release/membank"
fi
bin="$MEMBANK_BIN"
work="$(mktemp -d)"
db="$work/fuzz.db"
port=$((20000 + RANDOM % 20000))
key="$("$bin" --db "$db" keys create --tenant fuzz 2>/dev/null)"
# No rate limits: schemathesis sends bad keys on purpose, which the per-address failure
# limit would soon answer with 429 for every request, leaving the API untested.
"$bin" --db "$db" --tenant fuzz serve --addr "127.0.0.1:$port" --rate-limit 0 --auth-failure-rate 0 >"$work/server.log" 2>&1 &
server=$!
trap 'kill "$server" 2>/dev/null || true; rm -rf "$work"' EXIT
for _ in $(seq 1 100); do
  curl -fsS "http://127.0.0.1:$port/readyz" >/dev/null 2>&1 && break
  sleep 0.2
done
status=0
schemathesis run "http://127.0.0.1:$port/openapi.json" \
  --header "Authorization: Bearer $key" \
  --checks all \
  --max-examples "$max_examples" \
  --workers 1 \
  --seed 1 || status=$?
kill -TERM "$server"
wait "$server" || true
if grep -q "panicked" "$work/server.log"; then
  echo "the server panicked:"; grep -A5 panicked "$work/server.log"; status=1
fi
"$bin" --db "$db" check
exit "$status"
