"""engram.integrations: engram where agents already live, one thin adapter per framework.

Each adapter is its own optional extra and imports its framework only when it is imported:

- :mod:`engram.integrations.langgraph` (``pip install "engram[langgraph]"``): a LangGraph
  ``BaseStore`` over engram's store, ``search(query=…)`` through engram's hybrid recall;
- :mod:`engram.integrations.agents` (``pip install "engram[agents]"``): an OpenAI Agents SDK
  ``Session`` over engram's store, and agent instructions from a verified Engram context export.

Decisions: docs/integrations.md.
"""

__all__: list[str] = []
