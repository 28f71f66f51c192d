"""A tiny in-memory stand-in for ``membank.Memory``: the same methods, word-overlap recall.

It exists so the integrations' logic can be tested without the engine; the same tests run
against the real ``membank.Memory`` when it imports (see ``conftest.py``).
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta, timezone
from typing import Any

_WORD = re.compile(r"\w+")
_STOP = {"the", "a", "an", "is", "my", "what", "i", "you", "do", "did", "to", "of", "and", "me"}


class FakeError(Exception):
    """Mirrors ``membank.MembankError``: a ``code`` and a message."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code


class FakeInvalidInput(FakeError, ValueError):
    def __init__(self, message: str) -> None:
        super().__init__("invalid_input", message)


class FakeNotFound(FakeError, LookupError):
    def __init__(self, message: str) -> None:
        super().__init__("not_found", message)


@dataclass
class FakeRecord:
    id: str
    kind: str
    content: str | None
    user_text: str | None
    assistant_text: str | None
    day: str
    occurred_at: str
    recorded_at: str
    status: str
    session: str | None
    metadata: Mapping[str, str] = field(default_factory=dict)
    user: str = ""
    strength: float = 1.0
    recall_count: int = 0
    importance: float = 0.5


@dataclass
class FakeHit(FakeRecord):
    score: float = 0.0
    retention: float = 1.0
    reminisced: bool = False


def _words(text: str) -> set[str]:
    return {w for w in _WORD.findall(text.lower()) if w not in _STOP}


class FakeMemory:
    """In-memory, single-process, validating like the engine where the tests care."""

    def __init__(self) -> None:
        self._records: dict[str, FakeRecord] = {}
        self._clock = datetime(2026, 1, 1, tzinfo=timezone.utc)
        self.recalls: list[tuple[str, str]] = []

    def _tick(self) -> datetime:
        self._clock += timedelta(seconds=1)
        return self._clock

    @staticmethod
    def _check_user(user: str) -> None:
        if not user.strip() or "/" in user or any(ord(c) < 32 for c in user):
            raise FakeInvalidInput(f"user: {user!r} is not a valid user")

    @staticmethod
    def _check_text(name: str, text: str) -> None:
        if not text.strip():
            raise FakeInvalidInput(f"{name}: must not be empty")
        if len(text.encode()) > 32 * 1024:
            raise FakeInvalidInput(f"{name}: too long")
        if "\0" in text:
            raise FakeInvalidInput(f"{name}: NUL")

    @staticmethod
    def _check_metadata(metadata: Mapping[str, str] | None) -> dict[str, str]:
        md = dict(metadata or {})
        if len(md) > 64:
            raise FakeInvalidInput("metadata: at most 64 entries")
        for k, v in md.items():
            if len(k.encode()) > 256 or len(v.encode()) > 4096 or "\0" in k or "\0" in v:
                raise FakeInvalidInput("metadata: keys at most 256 bytes, values at most 4096 bytes, no NUL")
        return md

    def _store(
        self,
        user: str,
        kind: str,
        content: str,
        user_text: str | None,
        assistant_text: str | None,
        session: str | None,
        metadata: Mapping[str, str] | None,
    ) -> str:
        self._check_user(user)
        md = self._check_metadata(metadata)
        now = self._tick()
        stamp = now.isoformat().replace("+00:00", "Z")
        rid = str(uuid.uuid4())
        self._records[rid] = FakeRecord(
            id=rid,
            kind=kind,
            content=content,
            user_text=user_text,
            assistant_text=assistant_text,
            day=now.date().isoformat(),
            occurred_at=stamp,
            recorded_at=stamp,
            status="active",
            session=session,
            metadata=md,
            user=user,
        )
        return rid

    def remember(
        self,
        user: str,
        user_text: str,
        assistant_text: str | None = None,
        *,
        importance: float | None = None,
        session: str | None = None,
        metadata: Mapping[str, str] | None = None,
    ) -> str:
        self._check_text("user_text", user_text)
        if assistant_text is not None:
            self._check_text("assistant_text", assistant_text)
        content = f"User: {user_text}" + (f"\nAssistant: {assistant_text}" if assistant_text else "")
        return self._store(user, "turn", content, user_text, assistant_text, session, metadata)

    def note(
        self,
        user: str,
        text: str,
        *,
        importance: float | None = None,
        session: str | None = None,
        metadata: Mapping[str, str] | None = None,
    ) -> str:
        self._check_text("text", text)
        return self._store(user, "note", text, None, None, session, metadata)

    def recall(
        self,
        user: str,
        query: str,
        k: int = 5,
        *,
        strengthen: bool = True,
        kind: str | None = None,
    ) -> Sequence[FakeHit]:
        self._check_user(user)
        self._check_text("query", query)
        if not 1 <= k <= 200:
            raise FakeInvalidInput("k: out of range")
        self.recalls.append((user, query))
        q = _words(query)
        scored: list[tuple[float, FakeRecord]] = []
        for r in self._records.values():
            if r.user != user or r.status != "active" or (kind is not None and r.kind != kind):
                continue
            overlap = len(q & _words(r.content or ""))
            if overlap:
                scored.append((overlap / (1 + len(q)), r))
        scored.sort(key=lambda p: (-p[0], p[1].recorded_at), reverse=False)
        hits: list[FakeHit] = []
        for score, r in scored[:k]:
            if strengthen:
                r.strength += 1
                r.recall_count += 1
            base = {f: getattr(r, f) for f in r.__dataclass_fields__}
            hits.append(FakeHit(**base, score=score))
        return hits

    def get(self, user: str, id: str) -> FakeRecord:
        r = self._records.get(id)
        if r is None or r.user != user:
            raise FakeNotFound(f"memory {id} not found")
        return replace(r)

    def list(
        self,
        user: str,
        *,
        status: str | None = None,
        kind: str | None = None,
        limit: int = 50,
        offset: int = 0,
    ) -> Sequence[FakeRecord]:
        self._check_user(user)
        statuses = set((status or "active").split(","))
        rows = [
            replace(r)
            for r in self._records.values()
            if r.user == user and r.status in statuses and (kind is None or r.kind == kind)
        ]
        rows.sort(key=lambda r: r.recorded_at, reverse=True)
        return rows[offset : offset + limit]

    def _set_status(self, user: str, id: str, status: str) -> Any:
        r = self._records.get(id)
        if r is None or r.user != user:
            raise FakeNotFound(f"memory {id} not found")
        r.status = status
        return None

    def forget(self, user: str, id: str) -> Any:
        return self._set_status(user, id, "archived")

    def restore(self, user: str, id: str) -> Any:
        return self._set_status(user, id, "active")

    def supersede(self, user: str, id: str) -> Any:
        """What maintenance does to a near-duplicate it merged (test helper)."""
        return self._set_status(user, id, "superseded")

    def erase(self, user: str, id: str) -> Any:
        r = self._records.get(id)
        if r is None or r.user != user:
            raise FakeNotFound(f"memory {id} not found")
        r.status = "erased"
        r.content = r.user_text = r.assistant_text = None
        r.metadata = {}
        return None
