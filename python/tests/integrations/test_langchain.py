"""MembankChatMessageHistory and MembankRetriever with langchain-core, and a chat chain that recalls."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from operator import itemgetter
from typing import Any
from uuid import UUID

import pytest
from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.chat_history import BaseChatMessageHistory
from langchain_core.documents import Document
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage
from langchain_core.prompts import ChatPromptTemplate, MessagesPlaceholder
from langchain_core.retrievers import BaseRetriever
from langchain_core.runnables import RunnablePassthrough
from langchain_core.runnables.history import RunnableWithMessageHistory

from membank.integrations._backend import MemoryBackend
from membank.integrations.langchain import MembankChatMessageHistory, MembankRetriever


def _texts(messages: list[BaseMessage]) -> list[tuple[str, str]]:
    return [(m.type, str(m.content)) for m in messages]


def test_history_pairs_become_exchanges(backend: MemoryBackend, user: str) -> None:
    history = MembankChatMessageHistory(backend, user, "s1")
    assert isinstance(history, BaseChatMessageHistory)
    assert history.messages == []
    history.add_messages([HumanMessage("I moved to Porto last spring"), AIMessage("How do you like Porto?")])
    history.add_user_message("I love the river")
    # Waiting for its reply: shown, not stored yet.
    assert _texts(history.messages)[-1] == ("human", "I love the river")
    assert len(backend.list(user, status="active", kind="turn")) == 1
    history.add_ai_message("The Douro is beautiful.")
    assert _texts(history.messages) == [
        ("human", "I moved to Porto last spring"),
        ("ai", "How do you like Porto?"),
        ("human", "I love the river"),
        ("ai", "The Douro is beautiful."),
    ]
    turns = backend.list(user, status="active", kind="turn")
    assert len(turns) == 2
    assert {t.session for t in turns} == {"s1"}
    assert {t.user_text for t in turns} == {"I moved to Porto last spring", "I love the river"}
    # A new object over the same session reads the same history back.
    assert _texts(MembankChatMessageHistory(backend, user, "s1").messages) == _texts(history.messages)
    # Another session of the same person has its own history; None reads them all.
    other = MembankChatMessageHistory(backend, user, "s2")
    assert other.messages == []
    other.add_messages([HumanMessage("Hi again"), AIMessage("Hello!")])
    assert len(MembankChatMessageHistory(backend, user).messages) == 6
    assert _texts(MembankChatMessageHistory(backend, user, "s1", max_turns=1).messages) == [
        ("human", "I love the river"),
        ("ai", "The Douro is beautiful."),
    ]


def test_history_skips_what_is_not_an_exchange(backend: MemoryBackend, user: str) -> None:
    history = MembankChatMessageHistory(backend, user, "s")
    history.add_messages(
        [
            SystemMessage("You are helpful."),
            AIMessage("Hello, I am your assistant."),  # a greeting: no turn to join
            HumanMessage("What's the weather?"),
            AIMessage("", tool_calls=[{"name": "weather", "args": {}, "id": "c1"}]),
            ToolMessage("sunny", tool_call_id="c1"),
            AIMessage([{"type": "text", "text": "It is sunny."}]),
            AIMessage("Anything else?"),
            HumanMessage("  "),
        ]
    )
    assert _texts(history.messages) == [
        ("human", "What's the weather?"),
        ("ai", "It is sunny.\n\nAnything else?"),
    ]


def test_two_human_messages_in_a_row(backend: MemoryBackend, user: str) -> None:
    history = MembankChatMessageHistory(backend, user, "s")
    history.add_messages([HumanMessage("first"), HumanMessage("second"), AIMessage("reply to both")])
    assert _texts(history.messages) == [("human", "first\n\nsecond"), ("ai", "reply to both")]


def test_clear_archives_or_erases(backend: MemoryBackend, user: str) -> None:
    history = MembankChatMessageHistory(backend, user, "s")
    history.add_messages([HumanMessage("My locker code is 4711"), AIMessage("Noted.")])
    keep = MembankChatMessageHistory(backend, user, "other")
    keep.add_messages([HumanMessage("Another session entirely"), AIMessage("Yes.")])
    history.clear()
    assert history.messages == []
    assert len(keep.messages) == 2
    archived = backend.list(user, status="archived", kind="turn")
    assert [t.user_text for t in archived] == ["My locker code is 4711"]

    eraser = MembankChatMessageHistory(backend, user, "other", erase_on_clear=True)
    eraser.clear()
    assert keep.messages == []
    assert [t.id for t in backend.list(user, status="active,archived", kind="turn")] == [archived[0].id]


def test_async_history(backend: MemoryBackend, user: str) -> None:
    history = MembankChatMessageHistory(backend, user, "s")

    async def run() -> list[BaseMessage]:
        await history.aadd_messages([HumanMessage("async hello"), AIMessage("async reply")])
        return await history.aget_messages()

    assert _texts(asyncio.run(run())) == [("human", "async hello"), ("ai", "async reply")]


def test_history_bad_input(backend: MemoryBackend, user: str) -> None:
    for bad_user in ["", "   ", " alice", "a/b", "new\nline", "x" * 300]:
        with pytest.raises(ValueError):
            MembankChatMessageHistory(backend, bad_user, "s")
        with pytest.raises(ValueError):
            MembankRetriever(memory=backend, user=bad_user)
    for bad_session in [" ", "", "tab\there", "s" * 300]:
        with pytest.raises(ValueError):
            MembankChatMessageHistory(backend, user, bad_session)
    with pytest.raises(ValueError):
        MembankChatMessageHistory(backend, user, "s", max_turns=-1)
    history = MembankChatMessageHistory(backend, user, "never-used")
    assert history.messages == []
    history.clear()  # nothing to clear
    with pytest.raises(AttributeError):
        history.messages = []


def test_retriever_documents(backend: MemoryBackend, user: str) -> None:
    backend.remember(user, "I adopted a grey cat named Miso", "Lovely name!")
    backend.note(user, "Alice prefers tea over coffee")
    retriever = MembankRetriever(memory=backend, user=user, k=2)
    assert isinstance(retriever, BaseRetriever)
    docs = retriever.invoke("what is my cat called? Miso")
    assert docs and isinstance(docs[0], Document)
    best = docs[0]
    assert "Miso" in best.page_content
    for field in ("id", "kind", "score", "day", "occurred_at", "retention", "strength", "importance", "reminisced", "status"):
        assert field in best.metadata, field
    assert best.metadata["kind"] == "turn" and best.id == best.metadata["id"]
    assert isinstance(best.metadata["score"], float) and isinstance(best.metadata["retention"], float)
    notes = MembankRetriever(memory=backend, user=user, kind="note").invoke("tea or coffee")
    assert [d.metadata["kind"] for d in notes] == ["note"]
    assert retriever.invoke("   ") == []
    assert asyncio.run(retriever.ainvoke("grey cat Miso"))[0].metadata["kind"] == "turn"
    with pytest.raises(ValueError):
        MembankRetriever(memory=backend, user="  ")


def test_retriever_for_a_stranger_is_empty(backend: MemoryBackend, user: str) -> None:
    assert MembankRetriever(memory=backend, user=user).invoke("anything at all") == []


# ---- an agent ----------------------------------------------------------------------------


class PromptRecorder(BaseCallbackHandler):
    """Keeps the messages of every chat model call."""

    def __init__(self) -> None:
        self.prompts: list[list[BaseMessage]] = []

    def on_chat_model_start(
        self,
        serialized: dict[str, Any],
        messages: list[list[BaseMessage]],
        *,
        run_id: UUID,
        **kwargs: Any,
    ) -> None:
        self.prompts.extend(messages)


def _replies() -> Iterator[AIMessage]:
    for text in [
        "Miso is a lovely name for a cat.",
        "Porto is a beautiful city.",
        "Good to see you again!",
        "Your cat is called Miso.",
    ]:
        yield AIMessage(text)


@pytest.mark.filterwarnings("ignore:RunnableWithMessageHistory is deprecated")
def test_chain_recalls_across_sessions(backend: MemoryBackend, user: str) -> None:
    """A chat chain with membank as its history and its retriever: turns of one session are
    stored as exchanges, and a later session's prompt holds an earlier session's fact."""
    model = GenericFakeChatModel(messages=_replies())
    retriever = MembankRetriever(memory=backend, user=user, k=3)
    prompt = ChatPromptTemplate.from_messages(
        [
            ("system", "What you remember:\n{context}"),
            MessagesPlaceholder("history"),
            ("human", "{question}"),
        ]
    )

    def join(docs: list[Document]) -> str:
        return "\n".join(f"[{d.metadata['day']}] {d.page_content}" for d in docs)

    chain = RunnablePassthrough.assign(context=itemgetter("question") | retriever | join) | prompt | model
    chat = RunnableWithMessageHistory(
        chain,
        lambda session_id: MembankChatMessageHistory(backend, user, session_id),
        input_messages_key="question",
        history_messages_key="history",
    )
    recorder = PromptRecorder()

    def say(session: str, text: str) -> str:
        reply = chat.invoke(
            {"question": text},
            config={"configurable": {"session_id": session}, "callbacks": [recorder]},
        )
        return str(reply.content)

    say("monday", "I adopted a grey cat and named her Miso.")
    say("monday", "I also moved to Porto last year.")
    # Within a session the history carries the earlier turns.
    assert any("Miso" in str(m.content) for m in recorder.prompts[-1] if isinstance(m, HumanMessage))
    say("friday", "Hello again!")
    answer = say("friday", "Remind me, what is my cat called?")
    assert answer == "Your cat is called Miso."

    last = recorder.prompts[-1]
    # A new session: its history is its own ("Hello again!"), so the fact came from recall.
    assert [str(m.content) for m in last if isinstance(m, HumanMessage)] == [
        "Hello again!",
        "Remind me, what is my cat called?",
    ]
    system = last[0]
    assert isinstance(system, SystemMessage) and "Miso" in str(system.content)
    assert len(backend.list(user, status="active", kind="turn")) == 4
