"""Fixtures: a real ``membank serve`` on a loopback port, and the three ways to reach
membank, so one behaviour suite runs against each.

The server is the ``membank`` binary of this checkout (``target/debug/membank``, or
``MEMBANK_BIN``), started on 127.0.0.1 with a free port and its own database, and stopped
by its PID. It and ``Memory`` use the real embedding model from the default directory
(``membank models fetch`` puts it there).
"""

from __future__ import annotations

import asyncio
import os
import socket
import subprocess
import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator, Optional, TypeVar

import httpx
import pytest

import membank
from membank._api import SyncApi
from membank._ops import Op

T = TypeVar("T")

REPO = Path(__file__).resolve().parents[2]


def membank_bin() -> Path:
    """The ``membank`` binary the tests run: ``MEMBANK_BIN``, else this checkout's debug build."""
    path = Path(os.environ.get("MEMBANK_BIN") or REPO / "target" / "debug" / "membank")
    if not path.is_file():
        pytest.fail(f"no membank binary at {path}: run `cargo build -p membank-cli` or set MEMBANK_BIN", pytrace=False)
    return path


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


@dataclass
class Server:
    """A running ``membank serve``."""

    process: "subprocess.Popen[bytes]"
    url: str
    log: Path

    def stop(self) -> None:
        """Stops it by its PID: SIGTERM (a graceful shutdown), SIGKILL if it lingers."""
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=15)


def start_server(directory: Path) -> Server:
    """Starts ``membank serve`` on a free loopback port and waits until it is ready."""
    port = free_port()
    log = directory / "server.log"
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMBANK_") or k in ("MEMBANK_MODEL_DIR",)}
    with open(log, "wb") as out:
        process = subprocess.Popen(
            [
                str(membank_bin()),
                "--db",
                str(directory / "server.db"),
                "serve",
                "--addr",
                f"127.0.0.1:{port}",
                "--no-maintenance",
                "--rate-limit",
                "0",
            ],
            stdout=out,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            env=env,
        )
    server = Server(process, f"http://127.0.0.1:{port}", log)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        if process.poll() is not None:
            pytest.fail(f"membank serve exited with {process.returncode}:\n{log.read_text()}", pytrace=False)
        try:
            if httpx.get(f"{server.url}/readyz", timeout=2).status_code == 200:
                return server
        except httpx.TransportError:
            pass
        time.sleep(0.1)
    server.stop()
    pytest.fail(f"membank serve was not ready within 120 s:\n{log.read_text()}", pytrace=False)


@pytest.fixture(scope="session")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    """One server for the session; each test works as its own user."""
    running = start_server(tmp_path_factory.mktemp("server"))
    yield running
    running.stop()


class AsyncAsSync(SyncApi):
    """An ``AsyncClient`` driven by its own event loop, so the sync suite runs over it."""

    def __init__(self, client: membank.AsyncClient) -> None:
        self.client = client
        self.loop = asyncio.new_event_loop()

    def _run(self, op: Op[T]) -> T:
        return self.loop.run_until_complete(self.client._run(op))

    def close(self) -> None:
        self.loop.run_until_complete(self.client.aclose())
        self.loop.close()


@pytest.fixture(scope="session")
def shared_memory(tmp_path_factory: pytest.TempPathFactory) -> Iterator[membank.Memory]:
    """One in-process engine for the session (each test its own user), as a server is one."""
    memory = membank.Memory(db=tmp_path_factory.mktemp("memory") / "memory.db")
    yield memory
    memory.close()


@pytest.fixture(params=["memory", "client", "async_client"])
def api(request: pytest.FixtureRequest) -> Iterator[SyncApi]:
    """``Memory`` in process, ``Client`` and ``AsyncClient`` against a real server."""
    kind: str = request.param
    if kind == "memory":
        yield request.getfixturevalue("shared_memory")
        return
    server: Server = request.getfixturevalue("server")
    if kind == "client":
        with membank.Client(server.url, timeout=60) as client:
            yield client
        return
    adapter = AsyncAsSync(membank.AsyncClient(server.url, timeout=60))
    yield adapter
    adapter.close()


@pytest.fixture
def user() -> str:
    """A user no other test writes to."""
    return f"user-{uuid.uuid4().hex[:12]}"


def pg_url() -> Optional[str]:
    """A throw-away PostgreSQL for the tests (``MEMBANK_TEST_PG_URL``), if one is given."""
    return os.environ.get("MEMBANK_TEST_PG_URL") or None
