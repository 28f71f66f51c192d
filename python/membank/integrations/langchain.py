"""LangChain chat history and retriever kept in membank.

``MembankChatMessageHistory(memory, user, session_id)`` is a ``BaseChatMessageHistory``:

* **In.** ``add_messages`` pairs each human message with the AI reply that follows it and
  stores the pair as one membank exchange (``remember(user, human, ai)``) labelled with the
  session (``session=session_id``). Several AI messages after one human message are one
  reply, joined by a blank line; several human messages in a row are one turn. A human message
  still waiting for its reply is kept by this object and stored with the reply (or alone,
  as a turn without a reply, when the next human message comes first). System messages
  and tool messages are not stored; an AI message without text (only tool calls) adds
  nothing to the reply.
* **Out.** ``messages`` reads the session's turns back from membank, oldest first, as
  ``HumanMessage``/``AIMessage`` pairs (``max_turns`` keeps only the latest), followed by
  the human message still waiting for its reply. Only active turns are read: a turn the
  forgetting curve archived has left the history (a recall can still bring it back).
  ``session_id=None`` reads every turn of the user.
* **Clear.** ``clear`` forgets (archives) the session's turns, which membank can restore;
  ``erase_on_clear=True`` erases them for good instead.

``MembankRetriever(memory=…, user=…)`` is a ``BaseRetriever``: a query is a membank recall
(strengthening by default), and each hit is a ``Document`` whose ``page_content`` is the
memory's text and whose ``metadata`` holds ``id``, ``kind``, ``score``, ``day``,
``occurred_at``, ``retention``, ``strength``, ``importance``, ``reminisced`` and
``status``. A blank query returns no documents.

The async methods are LangChain's defaults: the same code in an executor.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Annotated, Any

from ._backend import (
    HitLike,
    MemoryBackend,
    MemoryRecordLike,
    iter_memories,
    missing_framework,
    to_datetime,
    valid_label,
    valid_user,
)

_USER_RULE = "a membank user id: non-blank, no surrounding spaces, no control characters or '/', at most 256 bytes"

try:
    from langchain_core.callbacks import CallbackManagerForRetrieverRun
    from langchain_core.chat_history import BaseChatMessageHistory
    from langchain_core.documents import Document
    from langchain_core.messages import AIMessage, BaseMessage, HumanMessage
    from langchain_core.retrievers import BaseRetriever
    from pydantic import ConfigDict, Field, SkipValidation
except ImportError as error:  # pragma: no cover - exercised by test_missing_framework
    raise missing_framework("membank.integrations.langchain", "langchain-core", error) from error

__all__ = ["MembankChatMessageHistory", "MembankRetriever", "hit_to_document"]


def _text(message: BaseMessage) -> str:
    """A message's text, whether its content is a string or a list of content blocks."""
    content = message.content
    if isinstance(content, str):
        return content
    parts: list[str] = []
    for block in content:
        if isinstance(block, str):
            parts.append(block)
        elif isinstance(block, dict) and block.get("type") == "text" and isinstance(block.get("text"), str):
            parts.append(block["text"])
    return "".join(parts)


class MembankChatMessageHistory(BaseChatMessageHistory):
    """A chat history whose human+AI pairs are membank exchanges; see the module docs."""

    def __init__(
        self,
        memory: MemoryBackend,
        user: str,
        session_id: str | None = None,
        *,
        max_turns: int | None = None,
        importance: float | None = None,
        erase_on_clear: bool = False,
    ) -> None:
        """
        Args:
            memory: a ``membank.Memory`` or ``membank.Client``.
            user: the membank user the conversation is with.
            session_id: the session label of the turns (``None``: the user's whole history).
            max_turns: read back only the latest N turns (``None``: all).
            importance: base importance of the stored turns in [0, 1] (default: estimated).
            erase_on_clear: ``clear`` erases the session's turns instead of archiving them.
        """
        if not valid_user(user):
            raise ValueError(f"user {user!r} is not {_USER_RULE}")
        if session_id is not None and not valid_label(session_id):
            raise ValueError(
                f"session_id {session_id!r} is not a membank session label (non-blank, no control "
                "characters, at most 256 characters), nor None for the whole history"
            )
        if max_turns is not None and max_turns < 0:
            raise ValueError("max_turns must be 0 or more")
        self.memory = memory
        self.user = user
        self.session_id = session_id
        self.max_turns = max_turns
        self.importance = importance
        self.erase_on_clear = erase_on_clear
        self._pending: list[str] = []
        self._reply: list[str] = []

    # ---- out -------------------------------------------------------------------------

    def _turns(self, latest: int | None = None) -> list[MemoryRecordLike]:
        turns = [
            r
            for r in iter_memories(self.memory, self.user, status="active", kind="turn")
            if self.session_id is None or r.session == self.session_id
        ]
        turns.sort(key=lambda r: (to_datetime(r.occurred_at), to_datetime(r.recorded_at), r.id))
        if latest is not None:
            turns = turns[len(turns) - latest :] if latest else []
        return turns

    @property
    def messages(self) -> list[BaseMessage]:
        out: list[BaseMessage] = []
        for turn in self._turns(self.max_turns):
            out.append(HumanMessage(content=turn.user_text or "", id=f"{turn.id}:user"))
            if turn.assistant_text:
                out.append(AIMessage(content=turn.assistant_text, id=f"{turn.id}:assistant"))
        if self._pending:
            out.append(HumanMessage(content="\n\n".join(self._pending)))
        return out

    @messages.setter
    def messages(self, value: list[BaseMessage]) -> None:
        raise AttributeError("MembankChatMessageHistory.messages is read from membank; use add_messages or clear")

    # ---- in --------------------------------------------------------------------------

    def add_messages(self, messages: Sequence[BaseMessage]) -> None:
        for message in messages:
            if isinstance(message, HumanMessage):
                if self._reply:
                    self._flush()
                text = _text(message)
                if text.strip():
                    self._pending.append(text)
            elif isinstance(message, AIMessage):
                text = _text(message)
                if text.strip():
                    self._reply.append(text)
        if self._reply:
            self._flush()

    def _flush(self) -> None:
        """Stores the waiting turn (with its reply, if any)."""
        reply = "\n\n".join(self._reply) if self._reply else None
        if self._pending:
            self.memory.remember(
                self.user,
                "\n\n".join(self._pending),
                reply,
                importance=self.importance,
                session=self.session_id,
            )
        # A reply with no human message before it (a greeting) has no turn to join.
        self._pending, self._reply = [], []

    def clear(self) -> None:
        for turn in self._turns():
            if self.erase_on_clear:
                self.memory.erase(self.user, turn.id)
            else:
                self.memory.forget(self.user, turn.id)
        self._pending, self._reply = [], []


def hit_to_document(hit: HitLike) -> Document:
    """A membank recall hit as a LangChain ``Document``."""
    occurred = hit.occurred_at
    return Document(
        page_content=hit.content or "",
        id=hit.id,
        metadata={
            "id": hit.id,
            "kind": hit.kind,
            "score": hit.score,
            "day": hit.day,
            "occurred_at": occurred.isoformat() if isinstance(occurred, datetime) else occurred,
            "retention": hit.retention,
            "strength": hit.strength,
            "importance": hit.importance,
            "reminisced": hit.reminisced,
            "status": hit.status,
        },
    )


class MembankRetriever(BaseRetriever):
    """Recall from membank as LangChain ``Document``s; see the module docs."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    memory: Annotated[MemoryBackend, SkipValidation()] = Field(exclude=True)
    """A ``membank.Memory`` or ``membank.Client``."""
    user: str
    """The membank user to recall for."""
    k: int = 5
    """How many memories (1 to 200)."""
    strengthen: bool = True
    """Whether a retrieval strengthens what it returns (membank's recall)."""
    kind: str | None = None
    """Only memories of this kind (``turn``, ``note``, …)."""

    def _get_relevant_documents(self, query: str, *, run_manager: CallbackManagerForRetrieverRun) -> list[Document]:
        if not query.strip():
            return []
        hits = self.memory.recall(self.user, query, self.k, strengthen=self.strengthen, kind=self.kind)
        return [hit_to_document(hit) for hit in hits]

    def __init__(self, **data: Any) -> None:
        super().__init__(**data)
        if not valid_user(self.user):
            raise ValueError(f"user {self.user!r} is not {_USER_RULE}")
