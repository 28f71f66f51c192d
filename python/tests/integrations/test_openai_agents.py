"""MembankSession with the real Agents SDK, and an agent run by a scripted model."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import pytest
from agents import Agent, Model, ModelResponse, ModelSettings, RunConfig, Runner, function_tool
from agents.agent_output import AgentOutputSchemaBase
from agents.handoffs import Handoff
from agents.items import TResponseInputItem, TResponseOutputItem, TResponseStreamEvent
from agents.memory import Session, SQLiteSession
from agents.models.interface import ModelTracing
from agents.tool import Tool
from agents.usage import Usage
from openai.types.responses import ResponseFunctionToolCall, ResponseOutputMessage, ResponseOutputText
from openai.types.responses.response_prompt_param import ResponsePromptParam

from membank.integrations._backend import MemoryBackend
from membank.integrations.openai_agents import MembankSession


def user_item(text: str) -> TResponseInputItem:
    return {"role": "user", "content": text}


def assistant_item(text: str) -> TResponseInputItem:
    return {
        "type": "message",
        "role": "assistant",
        "id": "msg",
        "status": "completed",
        "content": [{"type": "output_text", "text": text, "annotations": []}],
    }


def turns(backend: MemoryBackend, user: str) -> list[tuple[str | None, str | None]]:
    found = backend.list(user, status="active", kind="turn")
    return sorted((t.user_text, t.assistant_text) for t in found)


def test_session_protocol_and_pairing(backend: MemoryBackend, user: str) -> None:
    session = MembankSession(backend, user, "s1")
    assert isinstance(session, Session)
    assert session.session_id == "s1"

    async def run() -> None:
        assert await session.get_items() == []
        await session.add_items([user_item("My daughter Lena starts school in September")])
        assert turns(backend, user) == []  # waiting for the reply
        await session.add_items(
            [
                {"type": "function_call", "call_id": "c1", "name": "calendar", "arguments": "{}"},
                {"type": "function_call_output", "call_id": "c1", "output": "ok"},
                assistant_item("How exciting for Lena!"),
            ]
        )
        assert turns(backend, user) == [("My daughter Lena starts school in September", "How exciting for Lena!")]
        items = await session.get_items()
        assert len(items) == 4 and items[0] == user_item("My daughter Lena starts school in September")
        assert await session.get_items(limit=1) == [items[-1]]
        stored = backend.list(user, status="active", kind="turn")
        assert stored[0].session == "s1"

    asyncio.run(run())


def test_pop_item_undoes_the_exchange(backend: MemoryBackend, user: str) -> None:
    session = MembankSession(backend, user, "s1")

    async def run() -> None:
        await session.add_items([user_item("I live in Berlin"), assistant_item("Nice city.")])
        await session.add_items([user_item("My favourite colour is green"), assistant_item("Green it is.")])
        assert len(turns(backend, user)) == 2
        popped = await session.pop_item()
        assert popped == assistant_item("Green it is.")
        # The reply was taken back: its exchange is gone from membank, the question waits.
        assert turns(backend, user) == [("I live in Berlin", "Nice city.")]
        await session.add_items([assistant_item("Green, noted.")])
        assert turns(backend, user) == [("I live in Berlin", "Nice city."), ("My favourite colour is green", "Green, noted.")]
        assert await session.pop_item() == assistant_item("Green, noted.")
        assert await session.pop_item() == user_item("My favourite colour is green")
        assert turns(backend, user) == [("I live in Berlin", "Nice city.")]

    asyncio.run(run())


def test_clear_keeps_long_term_memory(backend: MemoryBackend, user: str) -> None:
    session = MembankSession(backend, user, "s1")

    async def run() -> None:
        await session.add_items([user_item("I am allergic to penicillin"), assistant_item("I will remember that.")])
        await session.clear_session()
        assert await session.get_items() == []
        assert await session.pop_item() is None
        assert turns(backend, user) == [("I am allergic to penicillin", "I will remember that.")]
        # A new session object over a kept history does not store its old exchanges again.
        kept = SQLiteSession("s2")
        first = MembankSession(backend, user, "s2", history=kept)
        await first.add_items([user_item("I play chess"), assistant_item("Fun!")])
        again = MembankSession(backend, user, "s2", history=kept)
        await again.add_items([user_item("Also the piano"), assistant_item("Lovely.")])
        assert len(turns(backend, user)) == 3

    asyncio.run(run())


def test_bad_input(backend: MemoryBackend, user: str) -> None:
    for bad_user, bad_session in [
        ("", "s"),
        ("  ", "s"),
        (" alice", "s"),
        ("a/b", "s"),
        (user, ""),
        (user, "  "),
        (user, "new\nline"),
        (user, "s" * 300),
    ]:
        with pytest.raises(ValueError):
            MembankSession(backend, bad_user, bad_session)
    session = MembankSession(backend, user, "s")

    async def run() -> None:
        # Items that are no messages, blank texts, an assistant reply with no question,
        # and unknown shapes are kept in the history and stored nowhere else.
        await session.add_items(
            [
                assistant_item("Hello! How can I help?"),
                {"role": "system", "content": "be nice"},
                user_item("   "),
                {"type": "reasoning", "id": "r1", "summary": []},
                {"type": "message", "role": "user", "content": [{"type": "input_image", "detail": "auto", "image_url": "data:,"}]},
            ]
        )
        assert turns(backend, user) == []
        assert len(await session.get_items()) == 5
        assert await session.recall_context("   ") == ""
        assert await session.recall_context("something never said") == ""

    asyncio.run(run())


# ---- an agent ----------------------------------------------------------------------------


class ScriptedModel(Model):
    """Answers from a script and keeps what each call was given."""

    def __init__(self, script: list[list[TResponseOutputItem]]) -> None:
        self.script = list(script)
        self.calls: list[tuple[str | None, list[TResponseInputItem]]] = []

    async def get_response(
        self,
        system_instructions: str | None,
        input: str | list[TResponseInputItem],  # noqa: A002
        model_settings: ModelSettings,
        tools: list[Tool],
        output_schema: AgentOutputSchemaBase | None,
        handoffs: list[Handoff[Any, Any]],
        tracing: ModelTracing,
        *,
        previous_response_id: str | None,
        conversation_id: str | None,
        prompt: ResponsePromptParam | None,
    ) -> ModelResponse:
        items: list[TResponseInputItem] = [user_item(input)] if isinstance(input, str) else list(input)
        self.calls.append((system_instructions, items))
        return ModelResponse(output=self.script.pop(0), usage=Usage(), response_id=None)

    def stream_response(
        self,
        system_instructions: str | None,
        input: str | list[TResponseInputItem],  # noqa: A002
        model_settings: ModelSettings,
        tools: list[Tool],
        output_schema: AgentOutputSchemaBase | None,
        handoffs: list[Handoff[Any, Any]],
        tracing: ModelTracing,
        *,
        previous_response_id: str | None,
        conversation_id: str | None,
        prompt: ResponsePromptParam | None,
    ) -> AsyncIterator[TResponseStreamEvent]:
        raise NotImplementedError("the scripted model does not stream")


def say(text: str) -> list[TResponseOutputItem]:
    return [
        ResponseOutputMessage(
            id="msg",
            type="message",
            role="assistant",
            status="completed",
            content=[ResponseOutputText(type="output_text", text=text, annotations=[])],
        )
    ]


def call(name: str) -> list[TResponseOutputItem]:
    return [ResponseFunctionToolCall(type="function_call", call_id=f"call-{name}", name=name, arguments="{}", id="fc")]


@function_tool
def local_time() -> str:
    """The time where the person is."""
    return "09:30"


def test_agent_recalls_across_sessions(backend: MemoryBackend, user: str) -> None:
    """An agent over two sessions; the scripted model's input in the second session holds
    a fact said in the first, which only membank carries across."""
    model = ScriptedModel(
        [
            say("Miso is a lovely name!"),
            call("local_time"),
            say("It is 09:30, good time for a run before the Lisbon marathon training."),
            say("Welcome back!"),
            say("Your cat is called Miso."),
        ]
    )
    agent = Agent(name="companion", instructions="You are a warm companion.", model=model, tools=[local_time])

    async def run() -> None:
        monday = MembankSession(backend, user, "monday")
        config = RunConfig(tracing_disabled=True, call_model_input_filter=monday.input_filter())
        await Runner.run(agent, "I adopted a grey cat and named her Miso.", session=monday, run_config=config)
        await Runner.run(agent, "What time is it? I train for the Lisbon marathon.", session=monday, run_config=config)

        friday = MembankSession(backend, user, "friday")
        config = RunConfig(tracing_disabled=True, call_model_input_filter=friday.input_filter())
        await Runner.run(agent, "Hello again!", session=friday, run_config=config)
        result = await Runner.run(agent, "Remind me: what is my cat called?", session=friday, run_config=config)
        assert result.final_output == "Your cat is called Miso."
        assert len(model.calls) == 5  # the tool call took a second model call
        first_instructions = model.calls[0][0]
        assert first_instructions == "You are a warm companion."  # nothing to recall yet

        # The last call: its own session's items only, and the recalled fact in the instructions.
        instructions, items = model.calls[-1]
        said = [i.get("content") for i in items if isinstance(i, dict) and i.get("role") == "user"]
        assert said == ["Hello again!", "Remind me: what is my cat called?"]
        assert instructions is not None and instructions.startswith("You are a warm companion.")
        assert "Miso" in instructions
        # Recalled context is never written back into the session.
        assert not any("remember about this person" in str(i) for i in await friday.get_items())
        # Each exchange became one membank turn, tool calls left out.
        stored = turns(backend, user)
        assert len(stored) == 4
        assert ("What time is it? I train for the Lisbon marathon.",
                "It is 09:30, good time for a run before the Lisbon marathon training.") in stored

    asyncio.run(run())


def test_input_filter_recalls_once_per_message(user: str) -> None:
    from fake_membank import FakeMemory

    fake = FakeMemory()
    model = ScriptedModel([call("local_time"), say("It is 09:30."), call("local_time"), say("Still 09:30.")])
    agent = Agent(name="a", instructions="Be brief.", model=model, tools=[local_time])
    session = MembankSession(fake, user, "s")
    config = RunConfig(tracing_disabled=True, call_model_input_filter=session.input_filter())

    async def run() -> None:
        await Runner.run(agent, "What time is it?", session=session, run_config=config)
        assert fake.recalls == [(user, "What time is it?")]  # two model calls, one recall
        await Runner.run(agent, "What time is it?", session=session, run_config=config)
        assert len(fake.recalls) == 2  # the same words again are a new message
        assert "It is 09:30." in (model.calls[-1][0] or "")  # the first turn, recalled

    asyncio.run(run())
