"""The methods ``Memory`` and ``Client`` share, written once over an abstract ``_run``."""

from __future__ import annotations

from types import TracebackType
from typing import List, Mapping, Optional, Sequence, Type, TypeVar, Union

from . import _ops
from ._ops import Day, Op, PathLike, When
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
S = TypeVar("S", bound="SyncApi")


class SyncApi:
    """membank's operations, each one REST request (see the README's API section)."""

    def _run(self, op: Op[T]) -> T:  # pragma: no cover - each transport defines it
        raise NotImplementedError

    def close(self) -> None:  # pragma: no cover - each transport defines it
        raise NotImplementedError

    def __enter__(self: S) -> S:
        return self

    def __exit__(
        self,
        exc_type: Optional[Type[BaseException]],
        exc: Optional[BaseException],
        traceback: Optional[TracebackType],
    ) -> None:
        self.close()

    def remember(
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
        """Store one exchange and return the new memory's id; recallable at once.

        ``at`` is when it was said (default now): a ``datetime`` (naive means this machine's
        local time), a ``date`` (the user's local midnight) or an RFC 3339 string.
        ``importance`` in [0, 1] overrides the estimate. ``clock_from="event"`` starts the
        forgetting clock at ``at`` rather than now. Texts are at most 32 KiB each.
        """
        return self._run(
            _ops.remember(user, user_text, assistant_text, at, importance, agent, session, metadata, clock_from)
        )

    def note(
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
        """Store a free-form fact and return its id. ``source``: ``agent`` (default),
        ``user`` or ``assistant``; the other arguments as for :meth:`remember`."""
        return self._run(_ops.note(user, text, source, at, importance, agent, session, metadata, clock_from))

    def recall(
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
        """The ``k`` (1 to 200) memories most relevant to ``query``, best first.

        Returns a :class:`~membank.Recall`: a list of :class:`~membank.Hit` that also
        carries ``query_id``, ``strengthened``, ``reminiscence`` and ``user_known``.
        ``strengthen=False`` only looks (nothing is logged or strengthened); ``True`` lets
        the configured recall mode decide (by default a recall strengthens what it
        returns, which resets its forgetting clock). ``reminisce``: ``auto`` (default),
        ``never`` or ``always`` consult the archive. ``kind`` narrows to kinds (``turn``,
        ``note``, …); ``date_from``/``date_to`` to days; ``at`` is the query's own time.
        """
        return self._run(
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

    def get(self, user: str, id: str) -> MemoryWithRetention:
        """One memory with its retention now; :class:`~membank.NotFound` when ``user`` has
        no memory ``id`` (another user's id is answered the same way)."""
        return self._run(_ops.get(user, id))

    def list(
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
        """A page of memories (newest first), with their retention now. ``status``: one or
        more of ``active`` (default), ``archived``, ``superseded``, ``erased``; ``limit``
        1 to 1000. The :class:`~membank.MemoryList` also carries the counts per status."""
        return self._run(
            _ops.list_memories(user, status, limit, kind, offset, pinned, date_from, date_to, oldest_first)
        )

    def forget(self, user: str, id: str, reason: Optional[str] = None) -> MemoryRecord:
        """Archive a memory now (restorable); ``reason`` is kept in the event log."""
        return self._run(_ops.change(user, id, "forget", reason))

    def restore(self, user: str, id: str) -> MemoryRecord:
        """Bring an archived or superseded memory back to active."""
        return self._run(_ops.change(user, id, "restore"))

    def pin(self, user: str, id: str) -> MemoryRecord:
        """Pin a memory: it never decays and is never archived."""
        return self._run(_ops.change(user, id, "pin"))

    def unpin(self, user: str, id: str) -> MemoryRecord:
        """Unpin a memory."""
        return self._run(_ops.change(user, id, "unpin"))

    def erase(self, user: str, id: str) -> MemoryRecord:
        """Erase a memory for good (its text, vector and index row, and what was derived
        from it); returns the content-free tombstone."""
        return self._run(_ops.erase(user, id))

    def sweep(self, user: str, dry_run: bool = False, *, at: Optional[When] = None) -> SweepReport:
        """Run the forgetting curve over the user's active memories: archive those whose
        retention fell below the threshold (never deletes). ``dry_run`` changes nothing."""
        return self._run(_ops.sweep(user, dry_run, at))

    def maintain(self, user: str, dry_run: bool = False, *, at: Optional[When] = None) -> MaintainReport:
        """One maintenance cycle for the user now: importance and layers, archiving under
        the forgetting policy, near-duplicate merging (and with an LLM configured, fusion
        and conflicts). :class:`~membank.Conflict` while another cycle runs for the user."""
        return self._run(_ops.maintain(user, dry_run, at))

    def events(
        self, user: str, memory_id: Optional[str] = None, *, after: Optional[int] = None, limit: int = 1000
    ) -> List[Event]:
        """The user's event log (content-free), in log order; ``memory_id`` narrows it to
        one memory. Pages: pass the last ``seq`` as ``after``; ``limit`` 1 to 10000."""
        return self._run(_ops.events(user, memory_id, after, limit))

    def export(self, user: str, path: PathLike, *, vectors: bool = False) -> ExportSummary:
        """Write everything stored about the user to ``path`` in the lossless
        ``membank-export`` format (JSON Lines), and return its counts."""
        return self._run(_ops.export(user, path, vectors))

    def users(self) -> List[User]:
        """The tenant's users, in creation order (a key bound to one user sees that one)."""
        return self._run(_ops.users())
