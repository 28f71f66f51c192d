"""MembankStore against LangGraph's real BaseStore, and a LangGraph agent that recalls."""

from __future__ import annotations

import asyncio
import operator
import uuid
from typing import Annotated, Any, TypedDict

import pytest
from langchain_core.language_models.fake_chat_models import FakeListChatModel
from langchain_core.messages import AIMessage, AnyMessage, HumanMessage, SystemMessage
from langgraph.graph import END, START, StateGraph
from langgraph.store.base import BaseStore, InvalidNamespaceError, Item, PutOp

from membank.integrations._backend import MemoryBackend
from membank.integrations.langgraph import VIEW_LABEL, MembankStore


def test_is_a_base_store(backend: MemoryBackend) -> None:
    assert isinstance(MembankStore(backend), BaseStore)


def test_put_get_overwrite_delete(backend: MemoryBackend, user: str) -> None:
    store = MembankStore(backend)
    ns = (user, "memories")
    store.put(ns, "food", {"text": "Alice is allergic to peanuts", "n": 1, "tags": ["health"]})
    item = store.get(ns, "food")
    assert item is not None
    assert item.value == {"text": "Alice is allergic to peanuts", "n": 1, "tags": ["health"]}
    assert (item.namespace, item.key) == (ns, "food")
    first_created = item.created_at

    store.put(ns, "food", {"text": "Alice is allergic to shellfish", "n": 2})
    again = store.get(ns, "food")
    assert again is not None and again.value == {"text": "Alice is allergic to shellfish", "n": 2}
    assert again.created_at == first_created
    assert again.updated_at >= item.updated_at
    # One version only: the old note was erased.
    assert [i.key for i in store.search(ns)] == ["food"]

    store.delete(ns, "food")
    assert store.get(ns, "food") is None
    assert store.search(ns) == []
    store.delete(ns, "food")  # deleting what is not there does nothing


def test_same_key_in_other_namespace_is_another_item(backend: MemoryBackend, user: str) -> None:
    store = MembankStore(backend)
    store.put((user, "a"), "k", {"text": "first value"})
    store.put((user, "b"), "k", {"text": "second value"})
    got_a, got_b = store.get((user, "a"), "k"), store.get((user, "b"), "k")
    assert got_a is not None and got_a.value == {"text": "first value"}
    assert got_b is not None and got_b.value == {"text": "second value"}
    assert store.get((user, "a", "deeper"), "k") is None


def test_search_with_query_is_a_recall(backend: MemoryBackend, user: str) -> None:
    store = MembankStore(backend)
    ns = (user, "memories")
    store.put(ns, "cat", {"text": "Alice adopted a grey cat named Miso"})
    store.put(ns, "job", {"text": "Alice works as a nurse at the night shift"})
    store.put(ns, "car", {"text": "Alice drives an old red bicycle to work"})
    hits = store.search(ns, query="what is the name of Alice's cat?", limit=1)
    assert len(hits) == 1
    assert hits[0].key == "cat" and hits[0].value["text"].endswith("Miso")
    assert hits[0].score is not None and hits[0].score > 0
    # The prefix narrows: another namespace of the same person is not searched.
    assert store.search((user, "elsewhere"), query="cat named Miso") == []


@pytest.mark.parametrize("strengthen", [True, False])
def test_search_strengthens_like_a_recall(backend: MemoryBackend, user: str, strengthen: bool) -> None:
    store = MembankStore(backend, strengthen=strengthen)
    ns = (user, "memories")
    store.put(ns, "cat", {"text": "Alice adopted a grey cat named Miso"})
    (note,) = backend.list(user, status="active")
    assert [h.key for h in store.search(ns, query="grey cat Miso", limit=1)] == ["cat"]
    assert backend.get(user, note.id).recall_count == (1 if strengthen else 0)
    assert store.get(ns, "cat") is not None and store.search(ns) != []  # neither recalls
    assert backend.get(user, note.id).recall_count == (1 if strengthen else 0)


def test_search_filter_and_paging(backend: MemoryBackend, user: str) -> None:
    store = MembankStore(backend)
    ns = (user, "prefs")
    for i in range(5):
        store.put(ns, f"k{i}", {"text": f"preference number {i} about tea", "rank": i, "group": "odd" if i % 2 else "even"})
    even = store.search(ns, filter={"group": "even"})
    assert sorted(i.key for i in even) == ["k0", "k2", "k4"]
    high = store.search(ns, filter={"rank": {"$gte": 3}})
    assert sorted(i.key for i in high) == ["k3", "k4"]
    assert store.search(ns, filter={"rank": {"$gt": "x"}}) == []  # incomparable: no match, no crash
    page1, page2 = store.search(ns, limit=2), store.search(ns, limit=2, offset=2)
    assert len(page1) == 2 and len(page2) == 2
    assert not {i.key for i in page1} & {i.key for i in page2}
    queried = store.search(ns, query="preference about tea", filter={"group": "odd"}, limit=10)
    assert sorted(i.key for i in queried) == ["k1", "k3"]


def test_index_false_is_not_found_by_query_but_by_get(backend: MemoryBackend, user: str) -> None:
    store = MembankStore(backend)
    ns = (user, "secrets")
    store.put(ns, "token", {"text": "the launch code is banana"}, index=False)
    assert store.search(ns, query="launch code banana") == []
    item = store.get(ns, "token")
    assert item is not None and item.value["text"] == "the launch code is banana"
    assert [i.key for i in store.search(ns)] == ["token"]


def test_index_fields_choose_the_text(backend: MemoryBackend, user: str) -> None:
    store = MembankStore(backend, index_fields=["summary"])
    ns = (user, "docs")
    store.put(ns, "d1", {"summary": "Trip to Lisbon in May", "raw": "zzzz qqqq"})
    hits = store.search(ns, query="Lisbon trip")
    assert [h.key for h in hits] == ["d1"]


def test_forgotten_and_merged_items_keep_their_key(user: str) -> None:
    from fake_membank import FakeMemory

    fake = FakeMemory()
    store = MembankStore(fake)
    ns = (user, "m")
    store.put(ns, "a", {"text": "Dana likes green tea"})
    store.put(ns, "b", {"text": "Dana likes green tea a lot"})
    ids = {r.metadata["langgraph.key"]: r.id for r in fake.list(user, status="active")}
    fake.forget(user, ids["a"])  # the forgetting curve archived it
    fake.supersede(user, ids["b"])  # maintenance merged it into a near-duplicate
    for key in ("a", "b"):
        got = store.get(ns, key)
        assert got is not None and got.key == key
    assert sorted(i.key for i in store.search(ns)) == ["a", "b"]
    assert store.search(ns, query="green tea") == []  # neither ranks in a recall
    assert store.list_namespaces(prefix=(user,)) == [ns]
    store.delete(ns, "b")
    assert store.get(ns, "b") is None


def test_user_level_one(backend: MemoryBackend, user: str) -> None:
    store = MembankStore(backend, user_level=1)
    ns = ("memories", user)
    store.put(ns, "k", {"text": "Bob plays the cello on Sundays"})
    assert backend.recall(user, "cello Sundays", 3, strengthen=False)  # the user is label 1
    got = store.get(ns, "k")
    assert got is not None and got.value["text"] == "Bob plays the cello on Sundays"
    assert store.list_namespaces(prefix=("memories", user)) == [("memories", user)]


def test_view_of_other_memories(backend: MemoryBackend, user: str) -> None:
    store = MembankStore(backend)
    turn_id = backend.remember(user, "My sister Lena lives in Porto", "Porto is lovely!")
    store.put((user, "memories"), "sister", {"text": "Lena is the sister"})
    everything = store.search((user,), query="Where does my sister Lena live? Porto", limit=10)
    keys = {(i.namespace, i.key) for i in everything}
    assert ((user, VIEW_LABEL, "turn"), turn_id) in keys
    assert ((user, "memories"), "sister") in keys
    only_turns = store.search((user, VIEW_LABEL, "turn"), query="Lena Porto sister")
    assert [i.key for i in only_turns] == [turn_id]
    assert only_turns[0].value["kind"] == "turn" and "Porto" in only_turns[0].value["text"]
    item = store.get((user, VIEW_LABEL, "turn"), turn_id)
    assert item is not None and item.value["user_text"] == "My sister Lena lives in Porto"
    assert store.get((user, VIEW_LABEL, "note"), turn_id) is None  # wrong kind
    listed = store.search((user, VIEW_LABEL))
    assert [i.key for i in listed] == [turn_id]
    with pytest.raises(InvalidNamespaceError):
        store.put((user, VIEW_LABEL, "turn"), turn_id, {"text": "overwrite"})
    store.delete((user, VIEW_LABEL, "turn"), turn_id)  # refused quietly: still there
    assert store.get((user, VIEW_LABEL, "turn"), turn_id) is not None
    namespaces = store.list_namespaces(prefix=(user,))
    assert (user, "memories") in namespaces and (user, VIEW_LABEL, "turn") in namespaces


def test_list_namespaces(backend: MemoryBackend, user: str) -> None:
    store = MembankStore(backend)
    store.put((user, "a", "x"), "k", {"v": "one thing"})
    store.put((user, "a", "y"), "k", {"v": "another thing"})
    store.put((user, "b"), "k", {"v": "third thing"})
    assert store.list_namespaces(prefix=(user,)) == [(user, "a", "x"), (user, "a", "y"), (user, "b")]
    assert store.list_namespaces(prefix=(user,), max_depth=2) == [(user, "a"), (user, "b")]
    assert store.list_namespaces(prefix=(user, "*", "y")) == [(user, "a", "y")]
    assert store.list_namespaces(prefix=(user,), suffix=("x",)) == [(user, "a", "x")]
    assert store.list_namespaces(prefix=(user,), limit=1, offset=1) == [(user, "a", "y")]


def test_list_namespaces_without_a_user_lists_every_users_own(backend: MemoryBackend, user: str) -> None:
    store = MembankStore(backend)
    other = user + "-b"
    store.put((user, "a"), "k", {"v": "one thing"})
    store.put((other, "b"), "k", {"v": "another thing"})
    if not callable(getattr(backend, "users", None)):
        with pytest.raises(InvalidNamespaceError, match="names the user"):
            store.list_namespaces()
        return
    # Memory and Client list the tenant's users (`users()`), so no prefix is needed.
    listed = store.list_namespaces(limit=1000)
    assert (user, "a") in listed and (other, "b") in listed


def test_async_forms(backend: MemoryBackend, user: str) -> None:
    store = MembankStore(backend)
    ns = (user, "async")

    async def run() -> None:
        await store.aput(ns, "k", {"text": "Carol collects vintage stamps"})
        item = await store.aget(ns, "k")
        assert item is not None and item.value["text"] == "Carol collects vintage stamps"
        hits = await store.asearch(ns, query="vintage stamps")
        assert [h.key for h in hits] == ["k"]
        assert await store.alist_namespaces(prefix=(user,)) == [ns]
        await store.adelete(ns, "k")
        assert await store.aget(ns, "k") is None

    asyncio.run(run())


def test_batch_mixes_ops(backend: MemoryBackend, user: str) -> None:
    from langgraph.store.base import GetOp, SearchOp

    store = MembankStore(backend)
    ns = (user, "batch")
    results = store.batch(
        [
            PutOp(ns, "a", {"text": "apples are red"}),
            GetOp(ns, "a"),
            PutOp(ns, "a", {"text": "apples are green"}),
            GetOp(ns, "a"),
            SearchOp(ns),
        ]
    )
    assert results[0] is None
    first, second = results[1], results[3]
    assert isinstance(first, Item) and first.value == {"text": "apples are red"}
    assert isinstance(second, Item) and second.value == {"text": "apples are green"}
    searched = results[4]
    assert isinstance(searched, list) and len(searched) == 1


# ---- bad input -------------------------------------------------------------------------


@pytest.mark.parametrize(
    "label",
    [" alice", "alice ", "   ", "a/b", "tab\there", "x" * 300],
)
def test_bad_user_labels(backend: MemoryBackend, label: str) -> None:
    store = MembankStore(backend)
    with pytest.raises(InvalidNamespaceError):
        store.put((label, "m"), "k", {"text": "never stored"})
    assert store.get((label, "m"), "k") is None
    assert store.search((label, "m"), query="anything") == []
    assert store.search((label,)) == []
    store.delete((label, "m"), "k")
    assert store.list_namespaces(prefix=(label,)) == []


def test_langgraph_label_rules_hold(backend: MemoryBackend, user: str) -> None:
    store = MembankStore(backend)
    for bad in [(user, ""), (user, "a.b"), ()]:
        with pytest.raises(InvalidNamespaceError):
            store.put(bad, "k", {"text": "x"})
    with pytest.raises(InvalidNamespaceError):
        store.batch([PutOp((user, "a.b"), "k", {"text": "x"})])  # straight to batch, too
    with pytest.raises(InvalidNamespaceError):
        store.search(())  # no user: membank searches one person at a time


@pytest.mark.parametrize(
    "key",
    ["../../etc/passwd", "'; DROP TABLE memories; --", "ключ 🔑", "new\nline", "", "a" * 4000, "{\"json\": 1}"],
)
def test_hostile_keys_round_trip(backend: MemoryBackend, user: str, key: str) -> None:
    store = MembankStore(backend)
    ns = (user, "keys")
    store.put(ns, key, {"text": "a value for a strange key"})
    item = store.get(ns, key)
    assert item is not None and item.key == key and item.value == {"text": "a value for a strange key"}
    store.delete(ns, key)
    assert store.get(ns, key) is None


@pytest.mark.parametrize("key", ["nul\0key", "b" * 5000])
def test_keys_membank_cannot_hold(backend: MemoryBackend, user: str, key: str) -> None:
    store = MembankStore(backend)
    ns = (user, "keys")
    with pytest.raises(ValueError):
        store.put(ns, key, {"text": "x"})
    assert store.get(ns, key) is None
    store.delete(ns, key)


def test_values(backend: MemoryBackend, user: str) -> None:
    store = MembankStore(backend)
    ns = (user, "values")
    big = {"text": "a long document", "body": "é" * 20000}  # 40 kB of UTF-8: several chunks
    store.put(ns, "big", big)
    got = store.get(ns, "big")
    assert got is not None and got.value == big
    store.put(ns, "empty", {})
    got = store.get(ns, "empty")
    assert got is not None and got.value == {}
    with pytest.raises(ValueError):
        store.put(ns, "huge", {"body": "x" * 300_000})
    with pytest.raises(ValueError):
        store.put(ns, "bad", {"obj": object()})
    assert store.get(ns, "huge") is None and store.get(ns, "bad") is None


def test_missing_and_blank_searches(backend: MemoryBackend, user: str) -> None:
    store = MembankStore(backend)
    assert store.get((user, "nothing"), "missing") is None
    assert store.get((user, VIEW_LABEL, "turn"), "not-an-id") is None
    assert store.get((user, VIEW_LABEL, "turn"), "0192f8a0-0000-7000-8000-000000000000") is None
    assert store.search((user, "nothing"), query="hello") == []
    assert store.search((user, "nothing"), query="   ") == []
    assert store.search((user, "nothing"), limit=0) == []
    assert store.list_namespaces(prefix=(user,)) == []


def test_ttl_is_refused(backend: MemoryBackend, user: str) -> None:
    store = MembankStore(backend)
    with pytest.raises(NotImplementedError):
        store.put((user, "m"), "k", {"text": "x"}, ttl=5)


# ---- an agent ----------------------------------------------------------------------------


class State(TypedDict):
    messages: Annotated[list[AnyMessage], operator.add]
    user: str


class RecordingModel(FakeListChatModel):
    """FakeListChatModel that keeps every prompt it was given."""

    prompts: list[list[AnyMessage]] = []

    def invoke(self, input: Any, config: Any = None, **kwargs: Any) -> Any:  # noqa: A002
        self.prompts.append(list(input))
        return super().invoke(input, config, **kwargs)


def test_agent_recalls_through_the_store(backend: MemoryBackend, user: str) -> None:
    """A LangGraph agent over several turns: each turn it searches the store with the new
    message, answers with the memories in its prompt, and saves what the person said.
    A later turn's prompt holds the fact an earlier turn saved."""
    model = RecordingModel(
        responses=["Noted, Miso is a lovely name.", "Good luck with the marathon!", "Your cat is called Miso."],
        prompts=[],
    )

    def respond(state: State, *, store: BaseStore) -> dict[str, Any]:
        question = state["messages"][-1]
        assert isinstance(question.content, str)
        found = store.search((state["user"], "facts"), query=question.content, limit=3)
        memories = "\n".join(f"- {item.value['text']}" for item in found)
        prompt: list[AnyMessage] = [SystemMessage(content=f"Memories:\n{memories}"), *state["messages"]]
        reply = model.invoke(prompt)
        return {"messages": [AIMessage(content=str(reply.content))]}

    def save(state: State, *, store: BaseStore) -> dict[str, Any]:
        said = state["messages"][-2]
        key = f"fact-{uuid.uuid4().hex}"
        store.put((state["user"], "facts"), key, {"text": str(said.content)})
        return {}

    graph = StateGraph(State)
    graph.add_node("respond", respond)
    graph.add_node("save", save)
    graph.add_edge(START, "respond")
    graph.add_edge("respond", "save")
    graph.add_edge("save", END)
    app = graph.compile(store=MembankStore(backend))

    for text in [
        "I adopted a grey cat and named her Miso.",
        "I am training for the Lisbon marathon in October.",
        "Remind me, what is my cat called?",
    ]:
        # A fresh thread each turn: only the store carries memory from one turn to the next.
        out = app.invoke({"messages": [HumanMessage(content=text)], "user": user})
        assert isinstance(out["messages"][-1], AIMessage)

    last_prompt = model.prompts[-1]
    system = last_prompt[0]
    assert isinstance(system, SystemMessage) and "Miso" in str(system.content)
    assert str(last_prompt[-1].content) == "Remind me, what is my cat called?"
    assert "Miso" not in str(model.prompts[0][0].content)  # nothing was known at first
