#!/usr/bin/env bash
# The framework integrations (python/membank/integrations): mypy --strict and pytest with
# the real LangGraph, langchain-core and openai-agents from PyPI, against the real engine
# (membank.Memory), a real `membank serve` (membank.Client) when the binary is built, and a
# fake.
#
#   scripts/python-integration-tests.sh [pytest args…]
#
# It shares the package's venv with scripts/python-tests.sh (MEMBANK_PY_VENV, default
# target/python-venv): the package is built and installed there once, by whichever script
# runs first; this one adds the pinned frameworks (python/tests/integrations/requirements.txt
# and constraints.txt), reinstalling them only when those files change. The package is
# reinstalled when the installed integrations differ from the sources, or when
# MEMBANK_PY_REINSTALL=1.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
VENV="${MEMBANK_PY_VENV:-$ROOT/target/python-venv}"
PY_TESTS="$ROOT/python/tests/integrations"
STAMP="$VENV/.membank-integrations-requirements"
start=$SECONDS

say() { printf '== %s (%ss)\n' "$*" "$((SECONDS - start))"; }

if [[ ! -x "$VENV/bin/python" ]]; then
    say "creating $VENV"
    python3 -m venv "$VENV"
    "$VENV/bin/python" -m pip install --quiet --upgrade pip
fi
PY="$VENV/bin/python"

# The frameworks, pinned.
want="$(cat "$PY_TESTS/requirements.txt" "$PY_TESTS/constraints.txt" | sha256sum | cut -d' ' -f1)"
if [[ "$(cat "$STAMP" 2>/dev/null)" != "$want" ]]; then
    say "installing the pinned frameworks"
    (cd "$PY_TESTS" && nice "$PY" -m pip install --quiet -r requirements.txt)
    echo "$want" >"$STAMP"
fi

# The package: installed unless it is there with these very integrations.
installed_integrations() {
    "$PY" - <<'EOF' 2>/dev/null
import os, membank, membank.integrations
assert hasattr(membank, "Memory")
print(os.path.dirname(membank.integrations.__file__))
EOF
}
where="$(cd / && installed_integrations || true)"
if [[ "${MEMBANK_PY_REINSTALL:-0}" == 1 || -z "$where" ]] ||
    { [[ "$where" != "$ROOT/python/membank/integrations" ]] &&
        ! diff -rq --exclude=__pycache__ "$ROOT/python/membank/integrations" "$where" >/dev/null; }; then
    say "installing the membank package (pip install ./python, as scripts/python-tests.sh does)"
    "$PY" -m pip install --quiet "maturin>=1.9.4,<2" httpx
    PATH="$VENV/bin:$PATH" MATURIN_PEP517_ARGS="--profile dev" \
        nice "$PY" -m pip install --quiet --no-build-isolation --force-reinstall --no-deps "$ROOT/python"
fi

# mypy --strict over the integrations, their tests and the examples. The tests' fake is
# found through MYPYPATH (as the tests import it), not as a file argument.
say "mypy --strict"
(
    cd "$ROOT/python"
    MYPYPATH="$PY_TESTS:$ROOT/python/tests" nice "$PY" -m mypy --strict --explicit-package-bases \
        --cache-dir "$VENV/.mypy_cache_integrations" \
        membank/integrations examples \
        $(ls "$PY_TESTS"/*.py | grep -v fake_membank.py)
)

# The Client backend's `membank serve`: MEMBANK_BIN, else target/debug/membank (what
# scripts/python-tests.sh builds); without one only the fake and in-process backends run.
if [[ -z "${MEMBANK_BIN:-}" && ! -x "$ROOT/target/debug/membank" ]]; then
    echo "no target/debug/membank and no MEMBANK_BIN: skipping the Client backend" >&2
    export MEMBANK_TEST_BACKENDS="${MEMBANK_TEST_BACKENDS:-fake,memory}"
fi

say "pytest"
# From the tests' folder, not python/: the installed package is the one imported.
(cd "$PY_TESTS" && nice "$VENV/bin/pytest" -q -p no:cacheprovider "$@" .)
say "done"
