#!/usr/bin/env bash
# Isolation at scale (issue 10): the randomised cross-tenant/cross-user test of the server
# (crates/membank-server/tests/it/isolation.rs) with 10,000 operations (or $1) over REST
# and MCP, sent over HTTP to the real server on a 127.0.0.1 socket. CI runs the same test
# with its default, smaller count, in-process. Prints the test's summary line:
# `isolation: N operations (… REST requests, … MCP tool calls) …, S s, V violations`.
#
#   scripts/isolation-10k.sh [OPS] [SEED]
set -euo pipefail
cd "$(dirname "$0")/.."
export MEMBANK_ISOLATION_OPS="${1:-10000}"
export MEMBANK_ISOLATION_SOCKET="${MEMBANK_ISOLATION_SOCKET:-1}"
if [[ -n "${2:-}" ]]; then
    export MEMBANK_ISOLATION_SEED="$2"
fi
cargo test --quiet -p membank-server --test it -- --exact isolation::random_operations_never_cross_users_or_tenants --nocapture
