"""``Client`` and ``AsyncClient`` themselves: a closed or silent server raises
``ConnectionFailed`` (never a hang), keys are sent, and every async method works."""

from __future__ import annotations

import asyncio
import socket
import threading
from pathlib import Path
from typing import Iterator

import httpx
import pytest

import membank
from harness import Server, free_port, start_server


def test_a_server_that_stopped_raises_connection_failed(tmp_path: Path) -> None:
    server = start_server(tmp_path)
    client = membank.Client(server.url, timeout=10)
    id = client.remember("ann", "My cat is Miso")
    server.stop()
    assert server.process.returncode is not None
    with pytest.raises(membank.ConnectionFailed) as caught:
        client.get("ann", id)
    assert isinstance(caught.value, membank.Unavailable) and caught.value.code == "unavailable"
    with pytest.raises(membank.ConnectionFailed):
        client.remember("ann", "anything")
    # The name for it catches the same failure.
    with pytest.raises(membank.StorageUnavailable):
        client.recall("ann", "cat")

    async def later() -> None:
        async with membank.AsyncClient(server.url, timeout=10) as aclient:
            with pytest.raises(membank.ConnectionFailed):
                await aclient.recall("ann", "cat")

    asyncio.run(later())


def test_nothing_listening_raises_connection_failed() -> None:
    with membank.Client(f"http://127.0.0.1:{free_port()}", timeout=5) as client:
        with pytest.raises(membank.ConnectionFailed, match="cannot reach"):
            client.recall("ann", "cat")


@pytest.fixture
def silent_server() -> Iterator[str]:
    """A socket that accepts connections and never answers."""
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.bind(("127.0.0.1", 0))
    listener.listen(8)
    accepted = []
    stop = threading.Event()

    def accept() -> None:
        listener.settimeout(0.2)
        while not stop.is_set():
            try:
                accepted.append(listener.accept()[0])
            except OSError:
                pass

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{listener.getsockname()[1]}"
    stop.set()
    thread.join()
    for conn in accepted:
        conn.close()
    listener.close()


def test_a_silent_server_times_out(silent_server: str) -> None:
    with membank.Client(silent_server, timeout=0.5) as client:
        with pytest.raises(membank.ConnectionFailed, match="within 0.5 s"):
            client.remember("ann", "hello")

    async def run() -> None:
        async with membank.AsyncClient(silent_server, timeout=0.5) as aclient:
            with pytest.raises(membank.ConnectionFailed, match="within 0.5 s"):
                await aclient.list("ann")

    asyncio.run(run())


def test_an_unknown_key_is_unauthorized_and_proxied_errors_keep_their_status(server: Server) -> None:
    # The server runs without keys (loopback): a key it does not know is simply not needed.
    with membank.Client(server.url, api_key="mb_unknown") as client:
        assert client.list("ann-key").user_known is False

    def answer(request: httpx.Request) -> httpx.Response:
        if request.headers.get("authorization") != "Bearer right":
            return httpx.Response(401, json={"error": {"code": "unauthorized", "message": "unknown or revoked API key"}})
        return httpx.Response(502, text="<html>bad gateway</html>")

    client = membank.Client("http://membank.invalid", api_key="wrong")
    client._http = httpx.Client(base_url=client.base_url, transport=httpx.MockTransport(answer), headers={"Authorization": "Bearer wrong"})
    with pytest.raises(membank.Unauthorized) as caught:
        client.list("ann")
    assert caught.value.status == 401
    client._http = httpx.Client(base_url=client.base_url, transport=httpx.MockTransport(answer), headers={"Authorization": "Bearer right"})
    with pytest.raises(membank.MembankError) as other:
        client.list("ann")
    assert (other.value.code, other.value.status) == ("internal", 502) and "bad gateway" in other.value.message


def test_every_async_method(server: Server, tmp_path: Path) -> None:
    async def run() -> None:
        async with membank.AsyncClient(server.url, timeout=60) as m:
            user = f"async-{id(m)}"
            first = await m.remember(user, "My cat is Miso", "What a nice name")
            second = await m.note(user, "Miso is a tabby", source="user")
            hits = await m.recall(user, "cat's name", k=2)
            assert first in [h.id for h in hits]
            assert (await m.get(user, second)).source == "user"
            assert len(await m.list(user)) == 2
            assert (await m.pin(user, first)).pinned
            assert not (await m.unpin(user, first)).pinned
            assert (await m.forget(user, second)).status == "archived"
            assert (await m.restore(user, second)).status == "active"
            assert (await m.sweep(user, dry_run=True)).examined == 2
            assert (await m.maintain(user, dry_run=True)).user == user
            assert any(e.kind == "created" for e in await m.events(user, first))
            assert (await m.export(user, tmp_path / "a.jsonl")).memories == 2
            assert (await m.erase(user, second)).status == "erased"
            assert user in [u.user for u in await m.users()]
            # Several at once on one client.
            results = await asyncio.gather(*(m.recall(user, "Miso", strengthen=False) for _ in range(8)))
            assert all(r[0].id == first for r in results)

    asyncio.run(run())
