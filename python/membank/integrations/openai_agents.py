"""An OpenAI Agents SDK session whose conversations become membank memories.

``MembankSession(memory, user, session_id)`` implements the SDK's ``Session`` protocol
(``session_id``, ``get_items``, ``add_items``, ``pop_item``, ``clear_session``):

* **The session's items** (messages, tool calls, tool outputs, reasoning) are kept verbatim
  by an ordinary SDK session, ``history`` (default: an in-memory ``SQLiteSession``; pass a
  file-backed one to keep it across processes). ``get_items`` and ``pop_item`` read it, so
  the agent sees its transcript exactly as the SDK wrote it. membank is not used for this:
  its memories fade, merge and are archived by design.
* **Long-term memory.** ``add_items`` also pairs each user message with the assistant's
  reply and stores the pair as one membank exchange (``remember(user, user_text,
  assistant_text, session=session_id)``): the text of the user message(s) and of the
  assistant's output message(s) after it, without tool calls, tool outputs or reasoning. A
  user message still waiting for its reply is stored with it when it comes.
* **Recall.** ``session.input_filter()`` is a ``RunConfig(call_model_input_filter=…)``: before
  each model call it recalls from membank with the latest user message and appends what it
  found, with the days, to the model's instructions (not to the session, so it is never
  stored back). A new session, days later, so still hears what the person said before.
  ``recall_context(query)`` gives the same text for other uses.
* **Undo.** ``pop_item`` removing the reply of an exchange this object stored erases that
  membank memory (the SDK pops to correct or retry a turn); exchanges stored before this
  object was made stay.
* **Clear.** ``clear_session`` clears the items; the membank memories stay (they are the
  person's long-term memory, not the session's). Erase them with ``memory.erase``.

The membank handle (``membank.Memory`` or ``membank.Client``) is called in a worker thread.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any

from ._backend import HitLike, MemoryBackend, missing_framework, valid_label, valid_user

try:
    from agents import SQLiteSession
    from agents.items import TResponseInputItem
    from agents.memory import Session, SessionSettings
    from agents.run_config import CallModelData, ModelInputData
except ImportError as error:  # pragma: no cover - exercised by test_missing_framework
    raise missing_framework("membank.integrations.openai_agents", "openai-agents", error) from error

__all__ = ["MembankSession", "format_memories"]

_HEADER = "What you remember about this person from earlier conversations (day, then the memory):"


def _as_mapping(item: object) -> Mapping[str, Any] | None:
    if isinstance(item, Mapping):
        return item
    dump = getattr(item, "model_dump", None)
    if callable(dump):
        dumped = dump()
        return dumped if isinstance(dumped, Mapping) else None
    return None


def _message_text(item: object) -> tuple[str, str] | None:
    """``(role, text)`` of a user or assistant message item, else None."""
    data = _as_mapping(item)
    if data is None or data.get("type", "message") != "message":
        return None
    role = data.get("role")
    if role not in ("user", "assistant"):
        return None
    content = data.get("content")
    if isinstance(content, str):
        return role, content
    parts: list[str] = []
    if isinstance(content, Sequence):
        for part in content:
            p = _as_mapping(part)
            if p is not None and p.get("type") in ("input_text", "output_text", "text"):
                text = p.get("text")
                if isinstance(text, str):
                    parts.append(text)
    return role, "".join(parts)


def format_memories(hits: Sequence[HitLike]) -> str:
    """Recall hits as lines for a prompt: ``- [day] text``; empty when there are none."""
    lines = [f"- [{hit.day}] {' '.join((hit.content or '').split())}" for hit in hits if hit.content]
    return "\n".join([_HEADER, *lines]) if lines else ""


class MembankSession:
    """An Agents SDK ``Session`` that remembers its exchanges in membank; see the module docs."""

    session_settings: SessionSettings | None = None

    def __init__(
        self,
        memory: MemoryBackend,
        user: str,
        session_id: str,
        *,
        history: Session | None = None,
        k: int = 5,
        importance: float | None = None,
        session_settings: SessionSettings | None = None,
    ) -> None:
        """
        Args:
            memory: a ``membank.Memory`` or ``membank.Client``.
            user: the membank user the agent talks with.
            session_id: this conversation's id (also the membank ``session`` label).
            history: the SDK session that keeps the items verbatim (default: in-memory SQLite).
            k: how many memories ``input_filter`` recalls.
            importance: base importance of the stored exchanges in [0, 1] (default: estimated).
            session_settings: the SDK's session settings (e.g. a history ``limit``).
        """
        if not valid_user(user):
            raise ValueError(
                f"user {user!r} is not a membank user id: non-blank, no surrounding spaces, no "
                "control characters or '/', at most 256 bytes"
            )
        if not valid_label(session_id):
            raise ValueError(
                f"session_id {session_id!r} is not a membank session label: non-blank, no "
                "control characters, at most 256 characters"
            )
        self.memory = memory
        self.user = user
        self.session_id = session_id
        self.history: Session = history if history is not None else SQLiteSession(session_id)
        self.k = k
        self.importance = importance
        self.session_settings = session_settings
        self._loaded = False
        self._length = 0
        self._pending: list[str] = []
        self._reply: list[str] = []
        # (history length once the exchange was complete, membank id), oldest first.
        self._remembered: list[tuple[int, str]] = []

    # ---- Session ---------------------------------------------------------------------

    async def get_items(self, limit: int | None = None) -> list[TResponseInputItem]:
        return await self.history.get_items(limit)

    async def add_items(self, items: list[TResponseInputItem]) -> None:
        await self._load()
        await self.history.add_items(items)
        for item in items:
            self._length += 1
            self._take(item)
        await self._flush()

    async def pop_item(self) -> TResponseInputItem | None:
        await self._load()
        popped = await self.history.pop_item()
        if popped is None:
            return None
        self._length -= 1
        erased = False
        while self._remembered and self._remembered[-1][0] > self._length:
            _, memory_id = self._remembered.pop()
            await asyncio.to_thread(self.memory.erase, self.user, memory_id)
            erased = True
        await self._resync(store_complete_tail=erased)
        return popped

    async def clear_session(self) -> None:
        await self.history.clear_session()
        self._length = 0
        self._pending, self._reply, self._remembered = [], [], []

    # ---- recall ----------------------------------------------------------------------

    async def recall_context(self, query: str) -> str:
        """What membank recalls for ``query`` (a strengthening recall of ``k``), as prompt
        lines; empty when nothing is recalled or the query is blank."""
        if not query.strip():
            return ""
        hits = await asyncio.to_thread(self.memory.recall, self.user, query, self.k)
        return format_memories(hits)

    def input_filter(self) -> Callable[[CallModelData[Any]], Awaitable[ModelInputData]]:
        """A ``RunConfig.call_model_input_filter`` adding recalled memories to the instructions.

        It recalls once per user message: the model calls that follow a tool call in the
        same turn (the same message at the same place in the input) reuse what it found.
        """
        last: list[tuple[tuple[int, str], str]] = []

        async def add_memories(data: CallModelData[Any]) -> ModelInputData:
            model_data = data.model_data
            found: tuple[int, str] | None = None
            for index in range(len(model_data.input) - 1, -1, -1):
                message = _message_text(model_data.input[index])
                if message is not None and message[0] == "user" and message[1].strip():
                    found = (index, message[1])
                    break
            if found is None:
                return model_data
            if last and last[0][0] == found:
                context = last[0][1]
            else:
                context = await self.recall_context(found[1])
                last[:] = [(found, context)]
            if not context:
                return model_data
            instructions = f"{model_data.instructions}\n\n{context}" if model_data.instructions else context
            return ModelInputData(input=model_data.input, instructions=instructions)

        return add_memories

    # ---- pairing ---------------------------------------------------------------------

    def _take(self, item: object) -> None:
        message = _message_text(item)
        if message is None:
            return
        role, text = message
        if role == "user":
            if self._reply:
                # The previous exchange had its reply; a new one starts.
                self._pending, self._reply = [], []
            if text.strip():
                self._pending.append(text)
        elif text.strip() and self._pending:
            self._reply.append(text)

    async def _flush(self) -> None:
        if not (self._pending and self._reply):
            return
        memory_id = await asyncio.to_thread(
            lambda: self.memory.remember(
                self.user,
                "\n\n".join(self._pending),
                "\n\n".join(self._reply),
                importance=self.importance,
                session=self.session_id,
            )
        )
        self._remembered.append((self._length, memory_id))
        # Later assistant messages of the same turn (after a tool call) are not stored again.
        self._pending, self._reply = [], []

    async def _load(self) -> None:
        if not self._loaded:
            self._loaded = True
            await self._resync(store_complete_tail=False)

    async def _resync(self, *, store_complete_tail: bool) -> None:
        """Rebuilds the waiting turn from the history's tail."""
        items = await self.history.get_items()
        self._length = len(items)
        self._pending, self._reply = [], []
        for item in items:
            self._take(item)
        if self._pending and self._reply:
            if store_complete_tail:
                await self._flush()
            else:
                # Complete already: stored when it was added (by this object or another).
                self._pending, self._reply = [], []
