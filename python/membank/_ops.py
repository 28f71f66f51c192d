"""Each operation as the REST request it is, and how its answer is read.

``Memory`` (in process), ``Client`` and ``AsyncClient`` (HTTP) differ only in how an
:class:`Op` is sent: here is everything else, once. An operation builds its path, query
and JSON body from the Python arguments; the answer's JSON becomes typed results
(``_types``), and an error answer the exception of its code (``_errors``).

Checks made here, before anything is sent, are only those a request cannot carry: a
string that is not valid Unicode (a lone surrogate has no UTF-8), a blank user (an empty
path segment would name another endpoint), an argument of the wrong type. Every other
rule is the server's, so both transports answer it the same way.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from datetime import date, datetime
from typing import Any, Callable, Dict, Generic, List, Mapping, Optional, Sequence, Tuple, TypeVar, Union
from urllib.parse import quote, urlencode

from ._errors import InvalidInput, MembankError, RateLimited, error_from
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

#: A time: an aware (or local, if naive) ``datetime``, a ``date`` (the user's local
#: midnight), or a string the server reads (RFC 3339, or ``YYYY-MM-DD``).
When = Union[datetime, date, str]
#: A day: a ``date`` or ``YYYY-MM-DD``.
Day = Union[date, str]
PathLike = Union[str, "os.PathLike[str]"]


@dataclass(frozen=True)
class Op(Generic[T]):
    """One request and how to read its answer."""

    method: str
    #: Path with its query string, every user-given part percent-encoded.
    path: str
    #: The JSON body, encoded; ``None`` for none.
    body: Optional[bytes]
    #: Reads the answer's decoded JSON (or, with ``sink``, the file written).
    read: Callable[[Any], T]
    #: A file a successful answer's body is written to instead of being decoded.
    sink: Optional[str] = None
    #: Stores something: a client sends an ``Idempotency-Key``, so a retry stores it once.
    creates: bool = False


def _text(field: str, value: object) -> str:
    if not isinstance(value, str):
        raise TypeError(f"{field}: expected str, got {type(value).__name__}")
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise InvalidInput(f"{field}: is not valid Unicode (it holds a lone surrogate)") from None
    return value


def _opt_text(field: str, value: object) -> Optional[str]:
    return None if value is None else _text(field, value)


def _segment(field: str, value: object) -> str:
    text = _text(field, value)
    if not text.strip():
        raise InvalidInput(f"{field}: must not be empty or only white space")
    return quote(text, safe="")


def _user_path(user: str, rest: str = "") -> str:
    return f"/v1/users/{_segment('user', user)}{rest}"


def _memory_path(user: str, id: str, rest: str = "") -> str:
    if not isinstance(id, str):
        raise TypeError(f"id: expected str, got {type(id).__name__}")
    # An empty or blank id names no memory (and an empty segment would name another endpoint).
    segment = quote(_text("id", id), safe="") if id.strip() else "-"
    return _user_path(user, f"/memories/{segment}{rest}")


def _query(params: Sequence[Tuple[str, Optional[str]]]) -> str:
    given = [(k, v) for k, v in params if v is not None]
    return "?" + urlencode(given, quote_via=quote) if given else ""


def _body(fields: Mapping[str, Any]) -> bytes:
    return json.dumps({k: v for k, v in fields.items() if v is not None}, ensure_ascii=False).encode("utf-8")


def when(field: str, value: Optional[When]) -> Optional[str]:
    """A time as the server reads it. A naive ``datetime`` is this machine's local time."""
    if value is None:
        return None
    if isinstance(value, datetime):
        return (value if value.tzinfo is not None else value.astimezone()).isoformat()
    if isinstance(value, date):
        return value.isoformat()
    return _text(field, value)


def day(field: str, value: Optional[Day]) -> Optional[str]:
    if value is None:
        return None
    if isinstance(value, datetime):
        raise TypeError(f"{field}: expected a date or YYYY-MM-DD, got a datetime")
    if isinstance(value, date):
        return value.isoformat()
    return _text(field, value)


def _names(field: str, value: Union[str, Sequence[str], None]) -> Optional[List[str]]:
    if value is None:
        return None
    if isinstance(value, str):
        return [_text(field, value)]
    return [_text(field, v) for v in value]


def _boolean(value: Optional[bool]) -> Optional[str]:
    return None if value is None else ("true" if value else "false")


def _number(value: Optional[int]) -> Optional[str]:
    return None if value is None else str(value)


def _metadata(value: Optional[Mapping[str, str]]) -> Optional[Dict[str, str]]:
    if value is None:
        return None
    return {_text("metadata", k): _text("metadata", v) for k, v in value.items()}


def _memory_id(j: Any) -> str:
    return str(j["id"])


# --- the operations -------------------------------------------------------------------


def _write_fields(
    at: Optional[When],
    importance: Optional[float],
    agent: Optional[str],
    session: Optional[str],
    metadata: Optional[Mapping[str, str]],
    clock_from: Optional[str],
) -> Dict[str, Any]:
    """The fields a turn and a note share: when, importance, labels, metadata, clock."""
    return {
        "occurred_at": when("at", at),
        "importance": importance,
        "agent": _opt_text("agent", agent),
        "session": _opt_text("session", session),
        "metadata": _metadata(metadata),
        "clock_from": _opt_text("clock_from", clock_from),
    }


def remember(
    user: str,
    user_text: str,
    assistant_text: Optional[str],
    at: Optional[When],
    importance: Optional[float],
    agent: Optional[str],
    session: Optional[str],
    metadata: Optional[Mapping[str, str]],
    clock_from: Optional[str],
) -> Op[str]:
    body = _body(
        {
            "user_text": _text("user_text", user_text),
            "assistant_text": _opt_text("assistant_text", assistant_text),
            **_write_fields(at, importance, agent, session, metadata, clock_from),
        }
    )
    return Op("POST", _user_path(user, "/turns"), body, _memory_id, creates=True)


def note(
    user: str,
    text: str,
    source: Optional[str],
    at: Optional[When],
    importance: Optional[float],
    agent: Optional[str],
    session: Optional[str],
    metadata: Optional[Mapping[str, str]],
    clock_from: Optional[str],
) -> Op[str]:
    body = _body(
        {
            "text": _text("text", text),
            "source": _opt_text("source", source),
            **_write_fields(at, importance, agent, session, metadata, clock_from),
        }
    )
    return Op("POST", _user_path(user, "/notes"), body, _memory_id, creates=True)


def recall(
    user: str,
    query: str,
    k: int,
    strengthen: bool,
    reminisce: Optional[str],
    kind: Union[str, Sequence[str], None],
    date_from: Optional[Day],
    date_to: Optional[Day],
    at: Optional[When],
    include_archived: Optional[bool],
    weight_by_retention: Optional[bool],
    agent: Optional[str],
    session: Optional[str],
) -> Op[Recall]:
    body = _body(
        {
            "query": _text("query", query),
            "k": k,
            # True leaves it to the configured recall mode (by default: strengthen).
            "strengthen": None if strengthen else False,
            "reminisce": _opt_text("reminisce", reminisce),
            "kinds": _names("kind", kind),
            "from": day("date_from", date_from),
            "to": day("date_to", date_to),
            "now": when("at", at),
            "include_archived": include_archived,
            "weight_by_retention": weight_by_retention,
            "agent": _opt_text("agent", agent),
            "session": _opt_text("session", session),
        }
    )
    return Op("POST", _user_path(user, "/recall"), body, Recall.from_json)


def get(user: str, id: str) -> Op[MemoryWithRetention]:
    return Op("GET", _memory_path(user, id), None, MemoryWithRetention.from_json)


def list_memories(
    user: str,
    status: Union[str, Sequence[str], None],
    limit: int,
    kind: Union[str, Sequence[str], None],
    offset: int,
    pinned: Optional[bool],
    date_from: Optional[Day],
    date_to: Optional[Day],
    oldest_first: bool,
) -> Op[MemoryList]:
    statuses = _names("status", status)
    kinds = _names("kind", kind)
    query = _query(
        [
            ("status", None if statuses is None else ",".join(statuses)),
            ("kind", None if kinds is None else ",".join(kinds)),
            ("pinned", _boolean(pinned)),
            ("from", day("date_from", date_from)),
            ("to", day("date_to", date_to)),
            ("limit", _number(limit)),
            ("offset", _number(offset)),
            ("order", "oldest" if oldest_first else None),
        ]
    )
    return Op("GET", _user_path(user, "/memories") + query, None, MemoryList.from_json)


def change(user: str, id: str, action: str, reason: Optional[str] = None) -> Op[MemoryRecord]:
    """``forget``, ``restore``, ``pin``, ``unpin``: a POST to the memory's action."""
    query = _query([("reason", _opt_text("reason", reason))])
    return Op("POST", _memory_path(user, id, f"/{action}") + query, None, MemoryRecord.from_json)


def erase(user: str, id: str) -> Op[MemoryRecord]:
    return Op("DELETE", _memory_path(user, id), None, MemoryRecord.from_json)


def sweep(user: str, dry_run: bool, at: Optional[When]) -> Op[SweepReport]:
    body = _body({"dry_run": dry_run, "now": when("at", at)})
    return Op("POST", _user_path(user, "/sweep"), body, SweepReport.from_json)


def maintain(user: str, dry_run: bool, at: Optional[When]) -> Op[MaintainReport]:
    body = _body({"dry_run": dry_run, "now": when("at", at)})
    return Op("POST", _user_path(user, "/maintain"), body, MaintainReport.from_json)


def events(user: str, memory_id: Optional[str], after: Optional[int], limit: int) -> Op[List[Event]]:
    query = _query(
        [
            ("memory", _opt_text("memory_id", memory_id)),
            ("after", _number(after)),
            ("limit", _number(limit)),
        ]
    )
    return Op("GET", _user_path(user, "/events") + query, None, lambda j: [Event.from_json(e) for e in j["events"]])


def users() -> Op[List[User]]:
    return Op("GET", "/v1/users", None, lambda j: [User.from_json(u) for u in j["users"]])


def export(user: str, path: PathLike, vectors: bool) -> Op[ExportSummary]:
    target = os.fspath(path)
    query = _query([("vectors", "true" if vectors else None)])
    return Op("GET", _user_path(user, "/export") + query, None, lambda _: export_summary(target), sink=target)


def export_summary(path: str) -> ExportSummary:
    """The counts of an export's end line; an export without one was cut short."""
    with open(path, "rb") as file:
        file.seek(0, os.SEEK_END)
        size = file.tell()
        file.seek(max(0, size - 4096))
        tail = file.read().splitlines()
    last = json.loads(tail[-1]) if tail else {}
    if not isinstance(last, dict) or last.get("type") != "end":
        raise MembankError(f"the export in {path} has no end line: it was cut short", code="internal")
    return ExportSummary(
        path=path, users=int(last["users"]), memories=int(last["memories"]), events=int(last["events"])
    )


# --- answers --------------------------------------------------------------------------


def read_answer(op: Op[T], status: int, body: bytes, retry_after: Optional[str] = None, in_process: bool = False) -> T:
    """The result of ``op`` from its answer, or the exception of the error it carries."""
    if 200 <= status < 300:
        return op.read(None if op.sink is not None else json.loads(body))
    code, message = "internal", f"the server answered {status}"
    try:
        detail = json.loads(body)["error"]
        code, message = str(detail["code"]), str(detail["message"])
    except (ValueError, KeyError, TypeError):
        if body:
            message += ": " + body[:200].decode("utf-8", "replace")
    error = error_from(code, message, None if in_process else status)
    if isinstance(error, RateLimited) and retry_after is not None:
        try:
            error.retry_after = float(retry_after)
        except ValueError:
            pass
    raise error
