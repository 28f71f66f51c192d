"""Fixtures: a real ``membank serve`` on a loopback port, and the three ways to reach
membank, so one behaviour suite runs against each.

The server is the ``membank`` binary of this checkout (``target/debug/membank``, or
``MEMBANK_BIN``), started on 127.0.0.1 with a free port and its own database, and stopped
by its PID. It and ``Memory`` use the real embedding model from the default directory
(``membank models fetch`` puts it there).
"""

from __future__ import annotations

import asyncio
import sys
import uuid
from pathlib import Path
from typing import Iterator, TypeVar

import pytest

import membank
from membank._api import SyncApi
from membank._ops import Op

sys.path.insert(0, str(Path(__file__).resolve().parent))

from harness import Server, start_server  # noqa: E402

T = TypeVar("T")


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
