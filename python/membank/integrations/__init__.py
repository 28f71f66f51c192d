"""Framework integrations for membank. Each submodule imports its framework when imported.

* ``membank.integrations.langgraph``: ``MembankStore``, a LangGraph ``BaseStore``
  (``pip install langgraph``).
* ``membank.integrations.langchain``: ``MembankChatMessageHistory`` and
  ``MembankRetriever`` (``pip install langchain-core``).
* ``membank.integrations.openai_agents``: ``MembankSession``, an OpenAI Agents SDK
  ``Session`` (``pip install openai-agents``).

Each takes a ``membank.Memory`` (in-process) or ``membank.Client`` (HTTP); see
``README.md`` beside this file for how each maps onto membank.
"""
