#!/usr/bin/env bash
# The web app's end-to-end tests (issue 12): headless Chromium (Debian's chromium, driven by
# playwright-core) against a real `membank serve` on a free loopback port, with a temporary
# database, the real embedding model and a scripted stub LLM. Screenshots of every page at
# desktop and phone widths go to MEMBANK_E2E_SHOTS (default target/web-e2e-shots).
#
#   MEMBANK_BIN=target/debug/membank scripts/web-e2e.sh [test files…]
#
# Needs node (20+), /usr/bin/chromium (or CHROMIUM=…), and `npm ci --prefix crates/membank-server/web` once.
set -euo pipefail
cd "$(dirname "$0")/.."
root="$PWD"
export MEMBANK_BIN="${MEMBANK_BIN:-$root/target/debug/membank}"
export MEMBANK_E2E_SHOTS="${MEMBANK_E2E_SHOTS:-$root/target/web-e2e-shots}"
case "$MEMBANK_BIN" in /*) ;; *) MEMBANK_BIN="$root/$MEMBANK_BIN" ;; esac
case "$MEMBANK_E2E_SHOTS" in /*) ;; *) MEMBANK_E2E_SHOTS="$root/$MEMBANK_E2E_SHOTS" ;; esac

if [[ ! -x "$MEMBANK_BIN" ]]; then
  echo "web-e2e: no membank binary at $MEMBANK_BIN (cargo build -p membank-cli, or set MEMBANK_BIN)" >&2
  exit 2
fi
if [[ ! -d crates/membank-server/web/node_modules/playwright-core ]]; then
  echo "web-e2e: installing the test tooling (npm ci --prefix crates/membank-server/web)"
  npm ci --prefix crates/membank-server/web --no-audit --no-fund
fi

tmp="$(mktemp -d "${TMPDIR:-/tmp}/membank-web-e2e.XXXXXX")"
trap 'rm -rf "$tmp"' EXIT
export MEMBANK_E2E_TMP="$tmp"
mkdir -p "$MEMBANK_E2E_SHOTS"

if [[ $# -eq 0 ]]; then
  set -- crates/membank-server/web/e2e/*.test.mjs
fi
# One file at a time: each starts its own server, and two cores are enough for one.
node --test --test-concurrency=1 --test-reporter=spec "$@"
echo "web-e2e: screenshots in $MEMBANK_E2E_SHOTS"
