"""A LangGraph graph whose long-term store is membank: it remembers what you tell it and
recalls it in a later conversation. No LLM needed: the "model" node answers from memory.

    python examples/langgraph_store.py [membank.db]
"""

from __future__ import annotations

import sys
import uuid
from typing import TypedDict

from langgraph.graph import END, START, StateGraph
from langgraph.store.base import BaseStore

from membank import Memory
from membank.integrations.langgraph import MembankStore


class State(TypedDict):
    user: str
    message: str
    reply: str


def respond(state: State, *, store: BaseStore) -> dict[str, str]:
    # A recall over the person's facts; a real model would get these in its prompt.
    found = store.search((state["user"], "facts"), query=state["message"], limit=2)
    known = "; ".join(item.value["text"] for item in found)
    return {"reply": f"(I remember: {known})" if known else "(Nothing I remember yet.)"}


def save(state: State, *, store: BaseStore) -> dict[str, str]:
    if not state["message"].endswith("?"):
        store.put((state["user"], "facts"), uuid.uuid4().hex, {"text": state["message"]})
    return {}


builder = StateGraph(State)
builder.add_node("respond", respond)
builder.add_node("save", save)
builder.add_edge(START, "respond")
builder.add_edge("respond", "save")
builder.add_edge("save", END)

store = MembankStore(Memory(db=sys.argv[1] if len(sys.argv) > 1 else "membank-example.db"))
graph = builder.compile(store=store)

for message in ["I adopted a grey cat named Miso.", "I run every Sunday morning.", "What is my cat called?"]:
    out = graph.invoke({"user": "alice", "message": message, "reply": ""})
    print(f"> {message}\n  {out['reply']}")
print(store.list_namespaces(prefix=("alice",)))
