"""What the integrations need from a membank handle, and helpers they share.

The integrations take any object with the methods of :class:`MemoryBackend`:
``membank.Memory`` (the engine in this process) and ``membank.Client`` (a
``membank serve`` over HTTP) both qualify. They are typed against this protocol, not
against the concrete classes, so a test can hand them a fake.

Nothing here imports a framework.
"""

from __future__ import annotations

import json
import unicodedata
from collections.abc import Iterator, Mapping, Sequence
from datetime import datetime, timezone
from typing import Any, Protocol

__all__ = [
    "MemoryBackend",
    "MemoryRecordLike",
    "HitLike",
    "missing_framework",
    "valid_user",
    "valid_label",
    "to_datetime",
    "iter_memories",
    "record_text",
    "METADATA_VALUE_BYTES",
    "METADATA_ENTRIES",
    "TEXT_BYTES",
]

# The server's limits (crates/membank-server/src/rest/memories.rs, `checked_metadata`, and
# `--text-limit`), kept here so an item refused over HTTP is refused in-process too.
METADATA_VALUE_BYTES = 4096
METADATA_ENTRIES = 64
TEXT_BYTES = 32 * 1024
# `--max-page`: the largest page `list` serves by default.
PAGE = 1000


class MemoryRecordLike(Protocol):
    """A stored memory: the fields of the REST memory JSON the integrations read."""

    @property
    def id(self) -> str: ...
    @property
    def kind(self) -> str: ...
    @property
    def content(self) -> str | None: ...
    @property
    def user_text(self) -> str | None: ...
    @property
    def assistant_text(self) -> str | None: ...
    @property
    def day(self) -> str: ...
    @property
    def occurred_at(self) -> str | datetime: ...
    @property
    def recorded_at(self) -> str | datetime: ...
    @property
    def status(self) -> str: ...
    @property
    def session(self) -> str | None: ...
    @property
    def metadata(self) -> Mapping[str, str]: ...
    @property
    def recall_count(self) -> int: ...


class HitLike(MemoryRecordLike, Protocol):
    """One recall result: a memory with its scores."""

    @property
    def score(self) -> float: ...
    @property
    def retention(self) -> float: ...
    @property
    def strength(self) -> float: ...
    @property
    def importance(self) -> float: ...
    @property
    def reminisced(self) -> bool: ...


class MemoryBackend(Protocol):
    """The methods of ``membank.Memory`` / ``membank.Client`` the integrations call."""

    def remember(
        self,
        user: str,
        user_text: str,
        assistant_text: str | None = None,
        *,
        importance: float | None = None,
        session: str | None = None,
        metadata: Mapping[str, str] | None = None,
    ) -> str: ...

    def note(
        self,
        user: str,
        text: str,
        *,
        importance: float | None = None,
        session: str | None = None,
        metadata: Mapping[str, str] | None = None,
    ) -> str: ...

    def recall(
        self,
        user: str,
        query: str,
        k: int = 5,
        *,
        strengthen: bool = True,
        kind: str | None = None,
    ) -> Sequence[HitLike]: ...

    def get(self, user: str, id: str) -> MemoryRecordLike: ...

    def list(
        self,
        user: str,
        *,
        status: str | None = None,
        kind: str | None = None,
        limit: int = 50,
        offset: int = 0,
    ) -> Sequence[MemoryRecordLike]: ...

    def forget(self, user: str, id: str) -> Any: ...

    def erase(self, user: str, id: str) -> Any: ...


def missing_framework(module: str, package: str, error: ImportError) -> ImportError:
    """The ImportError an integration raises when its framework is not installed."""
    out = ImportError(
        f"{module} needs the {package!r} package, which is not installed: "
        f"pip install {package}"
    )
    out.name = error.name
    return out


def valid_user(user: object) -> bool:
    """Whether membank accepts ``user`` as a user id *as written*.

    membank trims user ids and refuses empty ones, control characters, ``/`` and more than
    256 bytes. The integrations refuse a label the engine would change (``" alice"`` would
    become ``"alice"``): two namespaces must never land on one person.
    """
    if not isinstance(user, str) or not user or user != user.strip():
        return False
    if len(user.encode("utf-8")) > 256 or "/" in user:
        return False
    return not any(unicodedata.category(c) == "Cc" for c in user)


def valid_label(label: object) -> bool:
    """Whether membank accepts ``label`` as a session or agent label: non-blank, no control
    characters, at most 256 characters."""
    if not isinstance(label, str) or not label.strip() or len(label) > 256:
        return False
    return not any(unicodedata.category(c) == "Cc" for c in label)


def to_datetime(value: str | datetime) -> datetime:
    """An RFC 3339 string (as the REST JSON has it) or a datetime, as an aware datetime."""
    if isinstance(value, datetime):
        return value if value.tzinfo is not None else value.replace(tzinfo=timezone.utc)
    text = value.strip()
    if text.endswith("Z") or text.endswith("z"):
        text = text[:-1] + "+00:00"
    parsed = datetime.fromisoformat(text)
    return parsed if parsed.tzinfo is not None else parsed.replace(tzinfo=timezone.utc)


def iter_memories(
    backend: MemoryBackend,
    user: str,
    *,
    status: str | None = None,
    kind: str | None = None,
) -> Iterator[MemoryRecordLike]:
    """Every memory of ``user`` (optionally of one status and kind), page by page."""
    offset = 0
    while True:
        page = backend.list(user, status=status, kind=kind, limit=PAGE, offset=offset)
        yield from page
        if len(page) < PAGE:
            return
        offset += len(page)


def record_text(record: MemoryRecordLike) -> str:
    """The text a memory holds (empty for an erased one)."""
    return record.content or ""


def dumps(value: Any) -> str:
    """JSON with non-ASCII kept, no spaces: what the integrations store in metadata."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), sort_keys=True)
