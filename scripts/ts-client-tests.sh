#!/usr/bin/env bash
# The TypeScript client's tests (issue 27): `npm ci` in clients/typescript, a strict `tsc`
# build into dist/, then `node --test` against real `membank serve` processes on free
# loopback ports (temporary databases, the real embedding model, a scripted stub LLM for
# chat), including the check that the committed src/schema.d.ts is what the binary serves
# at /openapi.json.
#
#   MEMBANK_BIN=target/debug/membank scripts/ts-client-tests.sh [test files…]
#
# Needs node (20+) with npm, and the binary (`cargo build -p membank-cli`); .ci/run calls
# it after building. Every server a test starts writes its PID into a temporary directory;
# on exit, pass or fail, any of them still running is stopped by that PID.
set -euo pipefail
cd "$(dirname "$0")/.."
root="$PWD"
pkg="$root/clients/typescript"
export MEMBANK_BIN="${MEMBANK_BIN:-$root/target/debug/membank}"
case "$MEMBANK_BIN" in /*) ;; *) MEMBANK_BIN="$root/$MEMBANK_BIN" ;; esac
started=$SECONDS

step() {
  printf '== [%ds] ts-client: %s\n' $((SECONDS - started)) "$*"
}

if [[ ! -x "$MEMBANK_BIN" ]]; then
  echo "ts-client: no membank binary at $MEMBANK_BIN (cargo build -p membank-cli, or set MEMBANK_BIN)" >&2
  exit 2
fi
for tool in node npm; do
  command -v "$tool" >/dev/null || { echo "ts-client: $tool is not installed (Debian: apt-get install nodejs npm)" >&2; exit 2; }
done
node_major="$(node -p 'process.versions.node.split(".")[0]')"
if ((node_major < 20)); then
  echo "ts-client: node $(node --version) is too old; the client and its tests need node 20 or newer" >&2
  exit 2
fi

tmp="$(mktemp -d "${TMPDIR:-/tmp}/membank-ts-client.XXXXXX")"
export MEMBANK_TS_TMP="$tmp"
stop_leftovers() {
  local pidfile pid
  for pidfile in "$tmp"/*/serve-*.pid; do
    [[ -e "$pidfile" ]] || continue
    pid="$(<"$pidfile")"
    # Only a process that is still this membank binary: a PID can be reused.
    if [[ "$(readlink "/proc/$pid/exe" 2>/dev/null)" == "$(readlink -f "$MEMBANK_BIN")" ]]; then
      echo "ts-client: stopping a membank serve left running (PID $pid)" >&2
      kill -TERM "$pid" 2>/dev/null || true
      for _ in $(seq 1 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
      kill -KILL "$pid" 2>/dev/null || true
    fi
  done
  rm -rf "$tmp"
}
trap stop_leftovers EXIT

step "npm ci (the pinned dev tools: typescript, openapi-typescript, @types/node)"
npm ci --prefix "$pkg" --no-audit --no-fund --loglevel=error

step "tsc: the client (strict, ESM + .d.ts into dist/) and the tests"
npm run --prefix "$pkg" --silent build
npm run --prefix "$pkg" --silent build:test

if [[ $# -eq 0 ]]; then
  set -- "$pkg"/build/test/*.test.js
fi
step "node --test against $MEMBANK_BIN"
# One file at a time: each starts its own servers, and two cores are enough for one.
node --test --test-concurrency=1 --test-reporter=spec "$@"
step "passed"
