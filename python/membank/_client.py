"""``Client`` and ``AsyncClient``: the same methods as ``Memory``, over HTTP to a
``membank serve``.

Every call has a timeout (``timeout`` seconds for connecting, each read and each write;
default 30): a server that is closed, refuses, or does not answer in time raises
:class:`~membank.ConnectionFailed` (a :class:`~membank.Unavailable`), never a hang.

One retry, and only one: when a pooled connection turns out closed (the server
disconnected without answering; a server closes a connection after refusing an
oversized body, or when it sat idle too long), the request is sent once more on a new
one. ``remember`` and ``note`` carry an ``Idempotency-Key``, so even a request the server
did receive is stored once. A timeout is never retried: a write that timed out may or
may not have been stored.
"""

from __future__ import annotations

import uuid
from types import TracebackType
from typing import Any, Dict, List, Mapping, Optional, Sequence, Type, TypeVar, Union

import httpx

from . import _ops
from ._api import SyncApi
from ._errors import ConnectionFailed
from ._ops import Day, Op, PathLike, When, read_answer
from ._types import (
    Event,
    ExportSummary,
    MaintainReport,
    MemoryList,
    MemoryRecord,
    MemoryWithRetention,
    Recall,
    SweepReport,
    User,
)

T = TypeVar("T")

#: Seconds a connection, a read or a write may take.
DEFAULT_TIMEOUT = 30.0


def _headers(api_key: Optional[str], tenant: Optional[str]) -> Dict[str, str]:
    headers = {"Accept": "application/json", "User-Agent": "membank-python"}
    if api_key is not None:
        headers["Authorization"] = f"Bearer {api_key}"
    if tenant is not None:
        headers["X-Membank-Tenant"] = tenant
    return headers


def _request_headers(op: Op[Any]) -> Dict[str, str]:
    headers = {"Content-Type": "application/json"} if op.body is not None else {}
    if op.creates:
        headers["Idempotency-Key"] = uuid.uuid4().hex
    return headers


def _failed(base_url: str, timeout: float, err: httpx.TransportError) -> ConnectionFailed:
    if isinstance(err, httpx.TimeoutException):
        return ConnectionFailed(f"no answer from {base_url} within {timeout:g} s ({type(err).__name__})")
    return ConnectionFailed(f"cannot reach {base_url}: {err or type(err).__name__}")


class Client(SyncApi):
    """membank over HTTP: ``Client("http://127.0.0.1:8787", api_key=...)``.

    ``api_key`` is sent as ``Authorization: Bearer``; a server on loopback without keys
    needs none. ``tenant`` is for admin keys (``X-Membank-Tenant``). Results and
    exceptions are those of :class:`~membank.Memory`. One client may be shared by
    threads (it pools connections); ``close()`` or ``with`` releases them.
    """

    def __init__(
        self,
        base_url: str,
        api_key: Optional[str] = None,
        timeout: float = DEFAULT_TIMEOUT,
        *,
        tenant: Optional[str] = None,
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self.timeout = timeout
        self._http = httpx.Client(
            base_url=self.base_url, headers=_headers(api_key, tenant), timeout=timeout, follow_redirects=False
        )

    def close(self) -> None:
        """Close the pooled connections."""
        self._http.close()

    def __repr__(self) -> str:
        return f"membank.Client({self.base_url!r})"

    def _run(self, op: Op[T]) -> T:
        headers = _request_headers(op)
        try:
            try:
                return self._send(op, headers)
            except httpx.RemoteProtocolError:
                return self._send(op, headers)
        except httpx.TransportError as err:
            raise _failed(self.base_url, self.timeout, err) from None

    def _send(self, op: Op[T], headers: Dict[str, str]) -> T:
        if op.sink is None:
            response = self._http.request(op.method, op.path, content=op.body, headers=headers)
            body = response.content
        else:
            with self._http.stream(op.method, op.path, content=op.body, headers=headers) as response:
                if response.is_success:
                    with open(op.sink, "wb") as file:
                        for chunk in response.iter_bytes():
                            file.write(chunk)
                    body = b""
                else:
                    body = response.read()
        return read_answer(op, response.status_code, body, response.headers.get("retry-after"))


class AsyncClient:
    """:class:`Client` for ``asyncio``: the same methods, each a coroutine."""

    def __init__(
        self,
        base_url: str,
        api_key: Optional[str] = None,
        timeout: float = DEFAULT_TIMEOUT,
        *,
        tenant: Optional[str] = None,
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self.timeout = timeout
        self._http = httpx.AsyncClient(
            base_url=self.base_url, headers=_headers(api_key, tenant), timeout=timeout, follow_redirects=False
        )

    async def aclose(self) -> None:
        """Close the pooled connections."""
        await self._http.aclose()

    async def __aenter__(self) -> AsyncClient:
        return self

    async def __aexit__(
        self,
        exc_type: Optional[Type[BaseException]],
        exc: Optional[BaseException],
        traceback: Optional[TracebackType],
    ) -> None:
        await self.aclose()

    def __repr__(self) -> str:
        return f"membank.AsyncClient({self.base_url!r})"

    async def _run(self, op: Op[T]) -> T:
        headers = _request_headers(op)
        try:
            try:
                return await self._send(op, headers)
            except httpx.RemoteProtocolError:
                return await self._send(op, headers)
        except httpx.TransportError as err:
            raise _failed(self.base_url, self.timeout, err) from None

    async def _send(self, op: Op[T], headers: Dict[str, str]) -> T:
        if op.sink is None:
            response = await self._http.request(op.method, op.path, content=op.body, headers=headers)
            body = response.content
        else:
            async with self._http.stream(op.method, op.path, content=op.body, headers=headers) as response:
                if response.is_success:
                    with open(op.sink, "wb") as file:
                        async for chunk in response.aiter_bytes():
                            file.write(chunk)
                    body = b""
                else:
                    body = await response.aread()
        return read_answer(op, response.status_code, body, response.headers.get("retry-after"))

    # The methods of SyncApi, awaited; their documentation is there.

    async def remember(
        self,
        user: str,
        user_text: str,
        assistant_text: Optional[str] = None,
        at: Optional[When] = None,
        importance: Optional[float] = None,
        *,
        agent: Optional[str] = None,
        session: Optional[str] = None,
        metadata: Optional[Mapping[str, str]] = None,
        clock_from: Optional[str] = None,
    ) -> str:
        """See :meth:`membank.Memory.remember`."""
        return await self._run(
            _ops.remember(user, user_text, assistant_text, at, importance, agent, session, metadata, clock_from)
        )

    async def note(
        self,
        user: str,
        text: str,
        *,
        source: Optional[str] = None,
        at: Optional[When] = None,
        importance: Optional[float] = None,
        agent: Optional[str] = None,
        session: Optional[str] = None,
        metadata: Optional[Mapping[str, str]] = None,
        clock_from: Optional[str] = None,
    ) -> str:
        """See :meth:`membank.Memory.note`."""
        return await self._run(_ops.note(user, text, source, at, importance, agent, session, metadata, clock_from))

    async def recall(
        self,
        user: str,
        query: str,
        k: int = 5,
        strengthen: bool = True,
        reminisce: Optional[str] = None,
        kind: Union[str, Sequence[str], None] = None,
        date_from: Optional[Day] = None,
        date_to: Optional[Day] = None,
        *,
        at: Optional[When] = None,
        include_archived: Optional[bool] = None,
        weight_by_retention: Optional[bool] = None,
        agent: Optional[str] = None,
        session: Optional[str] = None,
    ) -> Recall:
        """See :meth:`membank.Memory.recall`."""
        return await self._run(
            _ops.recall(
                user,
                query,
                k,
                strengthen,
                reminisce,
                kind,
                date_from,
                date_to,
                at,
                include_archived,
                weight_by_retention,
                agent,
                session,
            )
        )

    async def get(self, user: str, id: str) -> MemoryWithRetention:
        """See :meth:`membank.Memory.get`."""
        return await self._run(_ops.get(user, id))

    async def list(
        self,
        user: str,
        status: Union[str, Sequence[str], None] = None,
        limit: int = 50,
        *,
        kind: Union[str, Sequence[str], None] = None,
        offset: int = 0,
        pinned: Optional[bool] = None,
        date_from: Optional[Day] = None,
        date_to: Optional[Day] = None,
        oldest_first: bool = False,
    ) -> MemoryList:
        """See :meth:`membank.Memory.list`."""
        return await self._run(
            _ops.list_memories(user, status, limit, kind, offset, pinned, date_from, date_to, oldest_first)
        )

    async def forget(self, user: str, id: str, reason: Optional[str] = None) -> MemoryRecord:
        """See :meth:`membank.Memory.forget`."""
        return await self._run(_ops.change(user, id, "forget", reason))

    async def restore(self, user: str, id: str) -> MemoryRecord:
        """See :meth:`membank.Memory.restore`."""
        return await self._run(_ops.change(user, id, "restore"))

    async def pin(self, user: str, id: str) -> MemoryRecord:
        """See :meth:`membank.Memory.pin`."""
        return await self._run(_ops.change(user, id, "pin"))

    async def unpin(self, user: str, id: str) -> MemoryRecord:
        """See :meth:`membank.Memory.unpin`."""
        return await self._run(_ops.change(user, id, "unpin"))

    async def erase(self, user: str, id: str) -> MemoryRecord:
        """See :meth:`membank.Memory.erase`."""
        return await self._run(_ops.erase(user, id))

    async def sweep(self, user: str, dry_run: bool = False, *, at: Optional[When] = None) -> SweepReport:
        """See :meth:`membank.Memory.sweep`."""
        return await self._run(_ops.sweep(user, dry_run, at))

    async def maintain(self, user: str, dry_run: bool = False, *, at: Optional[When] = None) -> MaintainReport:
        """See :meth:`membank.Memory.maintain`."""
        return await self._run(_ops.maintain(user, dry_run, at))

    async def events(
        self, user: str, memory_id: Optional[str] = None, *, after: Optional[int] = None, limit: int = 1000
    ) -> List[Event]:
        """See :meth:`membank.Memory.events`."""
        return await self._run(_ops.events(user, memory_id, after, limit))

    async def export(self, user: str, path: PathLike, *, vectors: bool = False) -> ExportSummary:
        """See :meth:`membank.Memory.export`."""
        return await self._run(_ops.export(user, path, vectors))

    async def users(self) -> List[User]:
        """See :meth:`membank.Memory.users`."""
        return await self._run(_ops.users())
