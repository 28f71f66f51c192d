"""An OpenAI Agents SDK agent with a membank session: what the person said on Monday is
in the model's instructions on Friday. Uses OpenAI when OPENAI_API_KEY is set, else a
small offline model that shows what it was given.

    python examples/openai_agents_session.py [membank.db]
"""

from __future__ import annotations

import asyncio
import os
import sys
from collections.abc import AsyncIterator
from typing import Any

from agents import Agent, Model, ModelResponse, RunConfig, Runner
from agents.items import TResponseStreamEvent
from agents.usage import Usage
from openai.types.responses import ResponseOutputMessage, ResponseOutputText

from membank import Memory
from membank.integrations.openai_agents import MembankSession


class OfflineModel(Model):
    """Replies with the memory lines it found in its instructions."""

    async def get_response(self, system_instructions: str | None, *args: Any, **kwargs: Any) -> ModelResponse:
        remembered = [line for line in (system_instructions or "").splitlines() if line.startswith("- [")]
        text = "I remember: " + " / ".join(remembered) if remembered else "Nice to meet you!"
        content = ResponseOutputText(type="output_text", text=text, annotations=[])
        message = ResponseOutputMessage(id="m", type="message", role="assistant", status="completed", content=[content])
        return ModelResponse(output=[message], usage=Usage(), response_id=None)

    def stream_response(self, *args: Any, **kwargs: Any) -> AsyncIterator[TResponseStreamEvent]:
        raise NotImplementedError


async def main() -> None:
    memory = Memory(db=sys.argv[1] if len(sys.argv) > 1 else "membank-example.db")
    model: str | Model = "gpt-4o-mini" if os.environ.get("OPENAI_API_KEY") else OfflineModel()
    agent = Agent(name="companion", instructions="You are a warm companion.", model=model)
    for session_id, message in [("monday", "My cat is called Miso."), ("friday", "What is my cat called?")]:
        session = MembankSession(memory, "alice", session_id)
        config = RunConfig(call_model_input_filter=session.input_filter(), tracing_disabled=True)
        result = await Runner.run(agent, message, session=session, run_config=config)
        print(f"[{session_id}] > {message}\n  {result.final_output}")


asyncio.run(main())
