"""A LangGraph long-term memory store (``BaseStore``) kept in membank.

``MembankStore(memory)`` takes a ``membank.Memory`` or ``membank.Client`` and maps
LangGraph's namespaces onto membank's people and kinds:

* **User.** The label at position ``user_level`` (default 0) of a namespace is the membank
  user: ``("alice", "memories")`` is Alice's. It must be a valid membank user id as written
  (non-blank, no surrounding spaces, no control characters, no ``/``, at most 256 bytes).
* **Items are notes.** ``put(ns, key, value)`` stores one membank note for that user. Its
  text is what recall searches: the value's text fields (``"text: …"`` lines, or the
  string alone when the value has a single field; or the fields named by ``index``).
  Its metadata holds the namespace (``langgraph.namespace``, a JSON array), the key
  (``langgraph.key``), the value as JSON (``langgraph.value``, continued in
  ``langgraph.value.1``, … past 4,096 bytes) and the first put's time
  (``langgraph.created_at``), so ``get`` returns the exact value put.
* **Overwrite and delete.** Putting a key again stores a new note and erases the previous
  one; ``delete`` (or ``put(…, None)``) erases it. Erasing is membank's irreversible
  removal (a content-free tombstone stays in the event log).
* **Forgetting.** An item the forgetting curve archives is still returned by ``get`` and by
  a search without a query (it is forgotten, not deleted, and restorable), but no longer
  ranks in a search *with* a query unless membank's reminiscence brings it back. The same
  holds for an item that maintenance merged into a near-duplicate item (``superseded``): it
  keeps its key and value, and the survivor ranks for both.
* **Search is recall.** ``search(prefix, query=q)`` is a membank recall of ``offset + limit``
  memories for the user, which strengthens what it returns as any recall does
  (``strengthen=False`` at construction turns that off); when the prefix or the filter
  leaves fewer results, a second recall looks further (up to 200) without strengthening. The
  ``SearchItem.score`` is membank's fused score (rank fusion, not a probability). Without a
  query, ``search`` lists the matching items, newest first, with ``score=None``.
  ``filter`` matches the value like LangGraph's own stores (``$eq``, ``$ne``, ``$gt``,
  ``$gte``, ``$lt``, ``$lte``, nested dicts). A prefix must reach the user label: the
  store searches one person at a time.
* **The person's other memories.** Everything else membank holds for the user (the turns a
  chat history remembered, notes written elsewhere, summaries, fused memories) appears read-only under
  ``(…, user, "membank", <kind>)`` with the memory id as key and the value
  ``{"text", "kind", "day", "occurred_at", "status"}`` (plus ``user_text``,
  ``assistant_text``, ``session`` when present). A search on the user's whole prefix
  ``(…, user)`` returns both; ``put`` and ``delete`` there are refused.

Bad input: a namespace or key the store could never hold (a user label membank refuses, a
key with a NUL character or over 4,096 bytes) makes ``put`` raise ``InvalidNamespaceError``
or ``ValueError`` and makes ``get`` return ``None``, ``search`` return ``[]`` and
``delete`` do nothing. ``get`` of a missing item is ``None``; ``delete`` of one does nothing.

The async methods run the same code in a worker thread.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any, Literal

from ._backend import (
    METADATA_ENTRIES,
    METADATA_VALUE_BYTES,
    TEXT_BYTES,
    HitLike,
    MemoryBackend,
    MemoryRecordLike,
    dumps,
    iter_memories,
    missing_framework,
    to_datetime,
    valid_user,
)

try:
    from langgraph.store.base import (
        BaseStore,
        GetOp,
        InvalidNamespaceError,
        Item,
        ListNamespacesOp,
        MatchCondition,
        Op,
        PutOp,
        Result,
        SearchItem,
        SearchOp,
    )
    from langgraph.store.base.embed import get_text_at_path
except ImportError as error:  # pragma: no cover - exercised by test_missing_framework
    raise missing_framework("membank.integrations.langgraph", "langgraph", error) from error

__all__ = ["MembankStore", "VIEW_LABEL"]

VIEW_LABEL = "membank"
"""The label after the user under which the person's other memories appear, read-only."""

_NS = "langgraph.namespace"
_KEY = "langgraph.key"
_VALUE = "langgraph.value"
_CREATED = "langgraph.created_at"
_NOINDEX = "langgraph.index"
# Entries left for the value's chunks once the fixed ones are taken.
_VALUE_CHUNKS = METADATA_ENTRIES - 8
# A store item is found in any of these: superseded is what maintenance makes of a note it
# merged into a near-duplicate (another key's), and the item must still be there for `get`.
_ITEM_STATUSES = "active,archived,superseded"
_VIEW_STATUSES = "active,archived"
_MAX_K = 200


@dataclass(frozen=True)
class _Stored:
    """A store item as found in membank."""

    record: MemoryRecordLike
    namespace: tuple[str, ...]
    key: str
    value: dict[str, Any]
    created_at: datetime
    updated_at: datetime
    indexed: bool


class MembankStore(BaseStore):
    """LangGraph ``BaseStore`` over membank; see the module documentation for the mapping."""

    supports_ttl: bool = False

    def __init__(
        self,
        memory: MemoryBackend,
        *,
        user_level: int = 0,
        index_fields: Sequence[str] | None = None,
        strengthen: bool = True,
        importance: float | None = None,
    ) -> None:
        """
        Args:
            memory: a ``membank.Memory`` or ``membank.Client``.
            user_level: the namespace position that holds the membank user
                (0 for ``(user_id, "memories")``, 1 for ``("memories", user_id)``).
            index_fields: the value's fields whose text membank embeds and searches, as
                LangGraph paths (``"text"``, ``"facts[*]"``); default: all of them.
            strengthen: whether a search with a query strengthens what it returns.
            importance: the base importance of every note written, in [0, 1]; default:
                membank estimates it from the text.
        """
        if user_level < 0:
            raise ValueError("user_level must be 0 or more")
        self.memory = memory
        self.user_level = user_level
        self.index_fields = list(index_fields) if index_fields is not None else None
        self.strengthen = strengthen
        self.importance = importance

    # ---- BaseStore -------------------------------------------------------------------

    def batch(self, ops: Iterable[Op]) -> list[Result]:
        results: list[Result] = []
        scans: dict[str, list[_Stored]] = {}
        for op in ops:
            if isinstance(op, GetOp):
                _check_labels(op.namespace)
                results.append(self._get(op.namespace, op.key, scans))
            elif isinstance(op, SearchOp):
                _check_labels(op.namespace_prefix)
                results.append(self._search(op, scans))
            elif isinstance(op, PutOp):
                _check_labels(op.namespace)
                self._put(op, scans)
                results.append(None)
            elif isinstance(op, ListNamespacesOp):
                for condition in op.match_conditions or ():
                    _check_labels(tuple(label for label in condition.path if label != "*"))
                results.append(self._list_namespaces(op))
            else:
                raise TypeError(f"MembankStore: unknown operation {op!r}")
        return results

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        return await asyncio.to_thread(self.batch, list(ops))

    # ---- get -------------------------------------------------------------------------

    def _get(self, namespace: tuple[str, ...], key: str, scans: dict[str, list[_Stored]]) -> Item | None:
        user = self._user_of(namespace)
        if user is None:
            return None
        rest = namespace[self.user_level + 1 :]
        if rest[:1] == (VIEW_LABEL,):
            if len(rest) != 2:
                return None
            return self._view_get(namespace, user, rest[1], key)
        found = self._current(user, namespace, key, scans)
        if found is None:
            return None
        return Item(
            value=found.value,
            key=found.key,
            namespace=found.namespace,
            created_at=found.created_at,
            updated_at=found.updated_at,
        )

    def _view_get(self, namespace: tuple[str, ...], user: str, kind: str, key: str) -> Item | None:
        try:
            record = self.memory.get(user, key)
        except Exception as error:  # membank.NotFound / InvalidInput: no such memory
            if getattr(error, "code", None) in ("not_found", "invalid_input"):
                return None
            raise
        if record.kind != kind or _is_store_item(record) or record.status not in ("active", "archived"):
            return None
        return _view_item(namespace[: self.user_level + 1], record)

    # ---- put / delete ----------------------------------------------------------------

    def _put(self, op: PutOp, scans: dict[str, list[_Stored]]) -> None:
        namespace, key = tuple(op.namespace), op.key
        deleting = op.value is None
        if not namespace:
            raise InvalidNamespaceError("Namespace cannot be empty.")
        user = self._user_of(namespace)
        if user is None:
            if deleting:
                return
            raise InvalidNamespaceError(self._user_problem(namespace))
        if namespace[self.user_level + 1 : self.user_level + 2] == (VIEW_LABEL,):
            if deleting:
                return
            raise InvalidNamespaceError(
                f"{namespace}: the label {VIEW_LABEL!r} after the user shows the person's other "
                "membank memories and is read-only"
            )
        if not isinstance(key, str):
            raise ValueError(f"key must be a string, not {type(key).__name__}")
        previous = self._versions(user, namespace, key, scans)
        if deleting:
            for old in previous:
                self.memory.erase(user, old.record.id)
            scans.pop(user, None)
            return
        assert op.value is not None
        metadata = self._metadata(namespace, key, op.value, op.index, previous)
        text = self._text(namespace, key, op.value, op.index)
        self.memory.note(user, text, importance=self.importance, metadata=metadata)
        # The new note first, then the old ones: a failure in between leaves two versions,
        # and `get` reads the newer; never none.
        for old in previous:
            self.memory.erase(user, old.record.id)
        scans.pop(user, None)

    def _metadata(
        self,
        namespace: tuple[str, ...],
        key: str,
        value: Mapping[str, Any],
        index: Literal[False] | list[str] | None,
        previous: list[_Stored],
    ) -> dict[str, str]:
        if "\0" in key or len(key.encode("utf-8")) > METADATA_VALUE_BYTES:
            raise ValueError(
                f"key: at most {METADATA_VALUE_BYTES} bytes and no NUL character (membank metadata)"
            )
        ns_json = dumps(list(namespace))
        if len(ns_json.encode("utf-8")) > METADATA_VALUE_BYTES:
            raise InvalidNamespaceError(f"namespace: at most {METADATA_VALUE_BYTES} bytes as JSON")
        if not isinstance(value, Mapping):
            raise ValueError(f"value must be a mapping, not {type(value).__name__}")
        try:
            value_json = dumps(dict(value))
        except (TypeError, ValueError) as error:
            raise ValueError(f"value is not JSON-serialisable: {error}") from error
        chunks = _chunks(value_json, METADATA_VALUE_BYTES)
        if len(chunks) > _VALUE_CHUNKS:
            raise ValueError(
                f"value: {len(value_json.encode('utf-8'))} bytes of JSON; a membank item holds at "
                f"most {_VALUE_CHUNKS * METADATA_VALUE_BYTES // 1024} KiB"
            )
        created = min((p.created_at for p in previous), default=datetime.now(timezone.utc))
        metadata = {_NS: ns_json, _KEY: key, _CREATED: created.isoformat()}
        for i, chunk in enumerate(chunks):
            metadata[_VALUE if i == 0 else f"{_VALUE}.{i}"] = chunk
        if index is False:
            metadata[_NOINDEX] = "false"
        return metadata

    def _text(
        self,
        namespace: tuple[str, ...],
        key: str,
        value: Mapping[str, Any],
        index: Literal[False] | list[str] | None,
    ) -> str:
        if index is False:
            text = key
        else:
            fields = index if index is not None else self.index_fields
            if fields is None:
                text = _render(value)
            else:
                text = "\n".join(t for path in fields for t in get_text_at_path(dict(value), path))
        if not text.strip():
            text = key if key.strip() else "/".join(namespace)
        return _truncate(text, TEXT_BYTES)

    # ---- search ----------------------------------------------------------------------

    def _search(self, op: SearchOp, scans: dict[str, list[_Stored]]) -> list[SearchItem]:
        prefix = tuple(op.namespace_prefix)
        if len(prefix) <= self.user_level:
            raise InvalidNamespaceError(
                f"{prefix}: MembankStore searches one person at a time; the prefix must reach "
                f"the user label at position {self.user_level}"
            )
        user = self._user_of(prefix)
        if user is None or op.limit <= 0:
            return []
        root = prefix[: self.user_level + 1]
        rest = prefix[self.user_level + 1 :]
        # Which of the two sources the prefix reaches: the store's notes, the view.
        view_kind: str | None = None
        if not rest:
            items, view = True, True
        elif rest[0] == VIEW_LABEL:
            items, view = False, len(rest) <= 2
            view_kind = rest[1] if len(rest) == 2 else None
        else:
            items, view = True, False
        if not (items or view):
            return []
        flt = op.filter or {}
        if op.query is None:
            return self._list_search(user, root, prefix, items, view, view_kind, flt, op, scans)
        if not op.query.strip():
            return []
        wanted = op.offset + op.limit
        kind = "note" if not view else view_kind
        # First a recall of exactly the results asked for, strengthening as a plain recall
        # would: the person's top memories for the query, used or not by this page.
        k = min(_MAX_K, wanted)
        hits = self.memory.recall(user, op.query, k, strengthen=self.strengthen, kind=kind)
        out = self._select(hits, root, prefix, items, view, view_kind, flt)
        if len(out) < wanted and len(hits) == k and k < _MAX_K:
            # The prefix or the filter left too few: look further, strengthening no more.
            k = min(_MAX_K, max(3 * wanted, wanted + 20))
            hits = self.memory.recall(user, op.query, k, strengthen=False, kind=kind)
            out = self._select(hits, root, prefix, items, view, view_kind, flt)
        return out[op.offset : op.offset + op.limit]

    def _select(
        self,
        hits: Sequence[HitLike],
        root: tuple[str, ...],
        prefix: tuple[str, ...],
        items: bool,
        view: bool,
        view_kind: str | None,
        flt: dict[str, Any],
    ) -> list[SearchItem]:
        """The hits that are items under ``prefix`` (or, for the view, memories) matching ``flt``."""
        out: list[SearchItem] = []
        for hit in hits:
            found = _parse(hit)
            if found is not None:
                if items and found.indexed and _starts_with(found.namespace, prefix) and _matches(found.value, flt):
                    out.append(_search_item(found, hit.score))
            elif view and not _is_store_item(hit) and (view_kind is None or hit.kind == view_kind):
                item = _view_item(root, hit)
                if _matches(item.value, flt):
                    out.append(_as_search_item(item, hit.score))
        return out

    def _list_search(
        self,
        user: str,
        root: tuple[str, ...],
        prefix: tuple[str, ...],
        items: bool,
        view: bool,
        view_kind: str | None,
        flt: dict[str, Any],
        op: SearchOp,
        scans: dict[str, list[_Stored]],
    ) -> list[SearchItem]:
        found: list[tuple[datetime, SearchItem]] = []
        if items:
            current: dict[tuple[tuple[str, ...], str], _Stored] = {}
            for stored in self._scan(user, scans):
                if _starts_with(stored.namespace, prefix):
                    seen = current.get((stored.namespace, stored.key))
                    if seen is None or (stored.updated_at, stored.record.id) > (seen.updated_at, seen.record.id):
                        current[(stored.namespace, stored.key)] = stored
            for stored in current.values():
                if _matches(stored.value, flt):
                    found.append((stored.updated_at, _search_item(stored, None)))
        if view:
            for record in iter_memories(self.memory, user, status=_VIEW_STATUSES, kind=view_kind):
                if _is_store_item(record):
                    continue
                item = _view_item(root, record)
                if _matches(item.value, flt):
                    found.append((item.updated_at, _as_search_item(item, None)))
        found.sort(key=lambda pair: pair[0], reverse=True)
        return [item for _, item in found[op.offset : op.offset + op.limit]]

    # ---- list_namespaces -------------------------------------------------------------

    def _list_namespaces(self, op: ListNamespacesOp) -> list[tuple[str, ...]]:
        conditions = tuple(op.match_conditions or ())
        users = self._users_for(conditions)
        namespaces: set[tuple[str, ...]] = set()
        for user in users:
            view_root = self._view_root(user, conditions)
            kinds: set[str] = set()
            for record in iter_memories(self.memory, user, status=_ITEM_STATUSES):
                stored = _parse(record)
                if stored is not None:
                    namespaces.add(stored.namespace)
                elif not _is_store_item(record) and record.status != "superseded":
                    kinds.add(record.kind)
            if view_root is not None:
                namespaces.update(view_root + (VIEW_LABEL, kind) for kind in kinds)
        matched = sorted(ns for ns in namespaces if all(_condition_holds(c, ns) for c in conditions))
        if op.max_depth is not None:
            matched = sorted({ns[: op.max_depth] for ns in matched})
        return matched[op.offset : op.offset + op.limit]

    def _users_for(self, conditions: tuple[MatchCondition, ...]) -> list[str]:
        for condition in conditions:
            path = condition.path
            if condition.match_type == "prefix" and len(path) > self.user_level and path[self.user_level] != "*":
                user = path[self.user_level]
                return [user] if valid_user(user) else []
        users = getattr(self.memory, "users", None)
        if not callable(users):
            raise InvalidNamespaceError(
                "MembankStore.list_namespaces needs a prefix that names the user "
                f"(position {self.user_level}) when the membank handle cannot list its users"
            )
        listed: list[str] = []
        for entry in users():
            name = entry if isinstance(entry, str) else getattr(entry, "user", None)
            if isinstance(name, str) and valid_user(name):
                listed.append(name)
        return listed

    def _view_root(self, user: str, conditions: tuple[MatchCondition, ...]) -> tuple[str, ...] | None:
        """The labels up to the user for the view's namespaces, when they are known."""
        if self.user_level == 0:
            return (user,)
        for condition in conditions:
            path = condition.path
            if condition.match_type == "prefix" and len(path) > self.user_level:
                head = tuple(path[: self.user_level + 1])
                if "*" not in head:
                    return head
        return None

    # ---- membank lookups -------------------------------------------------------------

    def _user_of(self, namespace: tuple[str, ...]) -> str | None:
        if len(namespace) <= self.user_level:
            return None
        user = namespace[self.user_level]
        return user if valid_user(user) else None

    def _user_problem(self, namespace: tuple[str, ...]) -> str:
        if len(namespace) <= self.user_level:
            return f"{namespace}: the namespace must name the membank user at position {self.user_level}"
        return (
            f"{namespace}: {namespace[self.user_level]!r} is not a membank user id (non-blank, no "
            "surrounding spaces, no control characters or '/', at most 256 bytes)"
        )

    def _scan(self, user: str, scans: dict[str, list[_Stored]]) -> list[_Stored]:
        if user not in scans:
            found = (_parse(r) for r in iter_memories(self.memory, user, status=_ITEM_STATUSES, kind="note"))
            scans[user] = [s for s in found if s is not None]
        return scans[user]

    def _versions(
        self, user: str, namespace: tuple[str, ...], key: str, scans: dict[str, list[_Stored]]
    ) -> list[_Stored]:
        return [s for s in self._scan(user, scans) if s.namespace == namespace and s.key == key]

    def _current(
        self, user: str, namespace: tuple[str, ...], key: str, scans: dict[str, list[_Stored]]
    ) -> _Stored | None:
        versions = self._versions(user, namespace, key, scans)
        return max(versions, key=lambda s: (s.updated_at, s.record.id), default=None)


# ---- helpers ---------------------------------------------------------------------------


def _check_labels(namespace: Sequence[object]) -> None:
    """LangGraph's own label rules, also for ops handed straight to ``batch``."""
    for label in namespace:
        if not isinstance(label, str):
            raise InvalidNamespaceError(f"Namespace labels must be strings, got {label!r} in {namespace}")
        if not label:
            raise InvalidNamespaceError(f"Namespace labels cannot be empty strings, in {namespace}")
        if "." in label or "\0" in label:
            raise InvalidNamespaceError(f"Invalid namespace label {label!r}: no '.' or NUL, in {namespace}")


def _is_store_item(record: MemoryRecordLike) -> bool:
    return _KEY in record.metadata and _NS in record.metadata


def _parse(record: MemoryRecordLike) -> _Stored | None:
    """The store item a memory holds, or None when it is not one (or is unreadable)."""
    md = record.metadata
    if not _is_store_item(record) or record.status not in ("active", "archived", "superseded"):
        return None
    try:
        namespace = json.loads(md[_NS])
        parts = [md[_VALUE]]
        i = 1
        while f"{_VALUE}.{i}" in md:
            parts.append(md[f"{_VALUE}.{i}"])
            i += 1
        value = json.loads("".join(parts))
        updated = to_datetime(record.recorded_at)
        created = to_datetime(md[_CREATED]) if _CREATED in md else updated
    except (KeyError, ValueError):
        return None
    if not isinstance(namespace, list) or not all(isinstance(x, str) for x in namespace):
        return None
    if not isinstance(value, dict):
        return None
    return _Stored(
        record=record,
        namespace=tuple(namespace),
        key=md[_KEY],
        value=value,
        created_at=created,
        updated_at=updated,
        indexed=md.get(_NOINDEX) != "false",
    )


def _search_item(stored: _Stored, score: float | None) -> SearchItem:
    return SearchItem(
        namespace=stored.namespace,
        key=stored.key,
        value=stored.value,
        created_at=stored.created_at,
        updated_at=stored.updated_at,
        score=score,
    )


def _as_search_item(item: Item, score: float | None) -> SearchItem:
    return SearchItem(
        namespace=item.namespace,
        key=item.key,
        value=item.value,
        created_at=item.created_at,
        updated_at=item.updated_at,
        score=score,
    )


def _view_item(root: tuple[str, ...], record: MemoryRecordLike) -> Item:
    occurred = to_datetime(record.occurred_at)
    value: dict[str, Any] = {
        "text": record.content or "",
        "kind": record.kind,
        "day": record.day,
        "occurred_at": occurred.isoformat(),
        "status": record.status,
    }
    if record.user_text is not None:
        value["user_text"] = record.user_text
    if record.assistant_text is not None:
        value["assistant_text"] = record.assistant_text
    if record.session is not None:
        value["session"] = record.session
    return Item(
        value=value,
        key=record.id,
        namespace=root + (VIEW_LABEL, record.kind),
        created_at=occurred,
        updated_at=to_datetime(record.recorded_at),
    )


def _starts_with(namespace: tuple[str, ...], prefix: tuple[str, ...]) -> bool:
    return namespace[: len(prefix)] == prefix


def _condition_holds(condition: MatchCondition, namespace: tuple[str, ...]) -> bool:
    path = tuple(condition.path)
    if len(namespace) < len(path):
        return False
    pairs = zip(namespace, path) if condition.match_type == "prefix" else zip(reversed(namespace), reversed(path))
    return all(p == "*" or n == p for n, p in pairs)


def _matches(value: Mapping[str, Any], flt: Mapping[str, Any]) -> bool:
    return all(_compare(value.get(k), v) for k, v in flt.items())


def _compare(actual: Any, expected: Any) -> bool:
    if isinstance(expected, Mapping):
        if expected and all(isinstance(k, str) and k.startswith("$") for k in expected):
            return all(_operator(actual, op, arg) for op, arg in expected.items())
        if not isinstance(actual, Mapping):
            return False
        return all(_compare(actual.get(k), v) for k, v in expected.items())
    return bool(actual == expected)


def _operator(actual: Any, op: str, arg: Any) -> bool:
    if op == "$eq":
        return bool(actual == arg)
    if op == "$ne":
        return bool(actual != arg)
    try:
        if op == "$gt":
            return bool(actual > arg)
        if op == "$gte":
            return bool(actual >= arg)
        if op == "$lt":
            return bool(actual < arg)
        if op == "$lte":
            return bool(actual <= arg)
    except TypeError:
        return False
    raise ValueError(f"unsupported filter operator {op!r}")


def _render(value: Mapping[str, Any]) -> str:
    """A value as text to embed: its single string, or one ``path: value`` line per leaf."""
    lines: list[tuple[str, str]] = []

    def walk(node: Any, path: str) -> None:
        if isinstance(node, Mapping):
            for k, v in node.items():
                walk(v, f"{path}.{k}" if path else str(k))
        elif isinstance(node, (list, tuple)):
            for v in node:
                walk(v, path)
        elif node is not None:
            lines.append((path, node if isinstance(node, str) else json.dumps(node)))

    walk(value, "")
    if len(lines) == 1:
        return lines[0][1]
    return "\n".join(f"{path}: {text}" for path, text in lines)


def _chunks(text: str, size: int) -> list[str]:
    """``text`` cut into pieces of at most ``size`` UTF-8 bytes, never inside a character."""
    out: list[str] = []
    current: list[str] = []
    used = 0
    for char in text:
        n = len(char.encode("utf-8"))
        if used + n > size:
            out.append("".join(current))
            current, used = [], 0
        current.append(char)
        used += n
    out.append("".join(current))
    return out


def _truncate(text: str, size: int) -> str:
    data = text.encode("utf-8")
    if len(data) <= size:
        return text
    return data[:size].decode("utf-8", errors="ignore")
