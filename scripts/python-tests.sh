#!/usr/bin/env bash
# The Python package (python/, issue 27): builds and installs it into a venv the way a
# user's `pip install ./python` does, then runs `mypy --strict` over the package and its
# tests and `pytest` (one behaviour suite against membank.Memory in process, and against
# membank.Client and membank.AsyncClient on a real `membank serve` on 127.0.0.1).
#
#   scripts/python-tests.sh [pytest args…]
#
# Needs the Rust toolchain and python3 (3.9+, with venv); pip fetches maturin, pytest,
# mypy and httpx from PyPI. The venv is $MEMBANK_PY_VENV, default target/python-venv
# (shared with scripts/python-integration-tests.sh, which runs after this one and reuses
# the package installed here). The server is $MEMBANK_BIN, else target/debug/membank
# (built when missing). Both use the embedding model in the default directory
# (`membank models fetch`).
#
# Cost: the wheel is built with cargo's dev profile into the workspace's target/, so after
# `cargo build -p membank-cli` (CI) nothing but pyo3 and the extension itself compiles: on
# two cores, warm, the whole script takes about a minute (python/NOTES.md). A user's
# `pip install ./python` builds the release profile instead.
set -euo pipefail
cd "$(dirname "$0")/.."
root="$PWD"
venv="${MEMBANK_PY_VENV:-$root/target/python-venv}"
started=$SECONDS

step() {
  printf '== [%ds] %s\n' $((SECONDS - started)) "$*"
}

if [[ ! -x "$venv/bin/python" ]]; then
  step "creating the venv $venv"
  python3 -m venv "$venv"
fi
py="$venv/bin/python"

step "installing the build and test tools (maturin, pytest, mypy, httpx)"
"$py" -m pip install --quiet --disable-pip-version-check "maturin>=1.9.4,<2" pytest mypy httpx

# maturin's PEP 517 backend runs `maturin` from PATH, hence the venv's bin first. No build
# isolation: the maturin just installed builds it, with no second download. `--profile
# dev` and the default target dir (the workspace's target/) reuse the dependencies the
# debug build compiled; their features are the same (membank-python depends on
# membank-cli's library), so none of them is compiled again.
step "pip install ./python (maturin, cargo dev profile, workspace target/)"
PATH="$venv/bin:$PATH" MATURIN_PEP517_ARGS="--profile dev" \
  nice "$py" -m pip install --quiet --disable-pip-version-check --no-build-isolation --force-reinstall --no-deps ./python

if [[ -z "${MEMBANK_BIN:-}" ]]; then
  if [[ ! -x target/debug/membank ]]; then
    step "building membank (cargo build -p membank-cli)"
    nice cargo build -p membank-cli
  fi
  export MEMBANK_BIN="$root/target/debug/membank"
fi

# The core package and its tests; the integrations (membank/integrations, tests/integrations)
# need their frameworks and are checked by scripts/python-integration-tests.sh.
step "mypy --strict (the package and its tests)"
(cd python && nice "$py" -m mypy --strict --cache-dir "$venv/.mypy_cache" \
  membank/_*.py membank/_native.pyi tests/*.py)  # membank/_*.py includes __init__.py

step "pytest (from python/tests, so the installed package is the one imported)"
(cd python/tests && nice "$venv/bin/pytest" -q -p no:cacheprovider --ignore=integrations "$@" .)
step "done"
