"""Backends for the integration tests.

Every test that takes ``backend`` runs against:

* ``fake``: ``fake_membank.FakeMemory``, word-overlap recall, no engine (fast);
* ``memory``: the real engine in this process, ``membank.Memory`` (the package's
  ``shared_memory`` fixture: one engine for the session, each test its own user);
* ``client``: ``membank.Client`` on a real ``membank serve`` on 127.0.0.1 (the package's
  ``server`` fixture, stopped by its PID).

The ``server``, ``shared_memory`` and ``user`` fixtures come from ``python/tests/conftest.py``.
``MEMBANK_TEST_BACKENDS=fake,memory`` runs only some backends.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

import membank

sys.path.insert(0, str(Path(__file__).resolve().parent))

from fake_membank import FakeMemory  # noqa: E402
from harness import Server  # noqa: E402

from membank.integrations._backend import MemoryBackend  # noqa: E402


def _wanted() -> list[str]:
    chosen = os.environ.get("MEMBANK_TEST_BACKENDS")
    if chosen:
        return [b.strip() for b in chosen.split(",") if b.strip()]
    return ["fake", "memory", "client"]


@pytest.fixture(params=_wanted())
def backend(request: pytest.FixtureRequest) -> Iterator[MemoryBackend]:
    """A membank handle, one per backend kind (see the module docs)."""
    kind = request.param
    if kind == "fake":
        yield FakeMemory()
    elif kind == "memory":
        memory: membank.Memory = request.getfixturevalue("shared_memory")
        yield memory
    elif kind == "client":
        server: Server = request.getfixturevalue("server")
        with membank.Client(server.url, timeout=60) as client:
            yield client
    else:
        raise ValueError(f"unknown backend {kind!r}")
