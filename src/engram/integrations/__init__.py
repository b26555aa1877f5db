"""engram.integrations: engram where agents already live, one thin adapter per framework.

Each adapter is its own optional extra and imports its framework only when it is imported:

- :mod:`engram.integrations.langgraph` (``pip install "engram-memory-stack[langgraph]"``): a
  LangGraph ``BaseStore`` over engram's store, ``search(query=…)`` through engram's hybrid
  recall;
- :mod:`engram.integrations.agents` (``pip install "engram-memory-stack[agents]"``): an OpenAI
  Agents SDK ``Session`` over engram's store, and agent instructions from a verified Engram
  context export.

:func:`erase_subject_integrations` deletes what both keep for one subject (``engram subject
delete``). Decisions: docs/integrations.md.
"""

from engram.integrations._erase import erase_subject_integrations

__all__ = [
    "erase_subject_integrations",
]
