"""Backends for the integration tests.

Every test that takes ``backend`` runs against:

* ``fake``: ``fake_membank.FakeMemory``, word-overlap recall, no engine (fast; always);
* ``memory``: the real engine in this process, ``membank.Memory`` on a temporary database
  (when ``membank`` imports);
* ``client``: ``membank.Client`` against a real ``membank serve`` on 127.0.0.1 (when
  ``MEMBANK_BIN`` names the binary, or ``membank`` is on PATH, and ``membank.Client``
  imports); one server for the session, stopped by its PID.

``MEMBANK_TEST_BACKENDS=fake,memory`` picks some of them.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

from fake_membank import FakeMemory  # noqa: E402

from membank.integrations._backend import MemoryBackend  # noqa: E402


def _membank() -> Any | None:
    try:
        import membank
    except ImportError:
        return None
    return membank if hasattr(membank, "Memory") else None


def _wanted() -> list[str]:
    chosen = os.environ.get("MEMBANK_TEST_BACKENDS")
    if chosen:
        return [b.strip() for b in chosen.split(",") if b.strip()]
    return ["fake", "memory", "client"]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


@pytest.fixture(scope="session")
def server_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A ``membank serve`` on a free loopback port, for the ``client`` backend."""
    binary = os.environ.get("MEMBANK_BIN") or shutil.which("membank")
    mb = _membank()
    if binary is None or mb is None or not hasattr(mb, "Client"):
        pytest.skip("client backend: no membank binary (MEMBANK_BIN) or no membank.Client")
    db = tmp_path_factory.mktemp("serve") / "membank.db"
    port = _free_port()
    log = open(db.with_suffix(".log"), "wb")
    proc = subprocess.Popen(
        [binary, "--db", str(db), "serve", "--addr", f"127.0.0.1:{port}", "--no-maintenance", "--rate-limit", "0"],
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            if proc.poll() is not None:
                pytest.fail(f"membank serve exited with {proc.returncode}; see {log.name}")
            try:
                with urllib.request.urlopen(f"{url}/readyz", timeout=2) as response:
                    if response.status == 200:
                        break
            except OSError:
                pass
            if time.monotonic() > deadline:
                pytest.fail(f"membank serve was not ready within 60 s; see {log.name}")
            time.sleep(0.2)
        yield url
    finally:
        os.kill(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.kill(proc.pid, signal.SIGKILL)
            proc.wait()
        log.close()


@pytest.fixture(scope="session")
def engine(tmp_path_factory: pytest.TempPathFactory) -> MemoryBackend:
    """One in-process engine for the session (the model loads once); tests use fresh users."""
    mb = _membank()
    if mb is None:
        pytest.skip("memory backend: membank (the core package) does not import")
    handle: MemoryBackend = mb.Memory(db=str(tmp_path_factory.mktemp("engine") / "membank.db"))
    return handle


@pytest.fixture(params=_wanted())
def backend(request: pytest.FixtureRequest) -> MemoryBackend:
    """A membank handle, one per backend kind (see the module docs)."""
    kind = request.param
    if kind == "fake":
        return FakeMemory()
    if kind == "memory":
        handle: MemoryBackend = request.getfixturevalue("engine")
        return handle
    if kind == "client":
        url: str = request.getfixturevalue("server_url")
        mb = _membank()
        assert mb is not None
        client: MemoryBackend = mb.Client(url)
        return client
    raise ValueError(f"unknown backend {kind!r}")


@pytest.fixture
def user() -> str:
    """A fresh user id, so tests sharing a server never see each other's memories."""
    return f"u-{uuid.uuid4().hex[:12]}"
