"""engram in the OpenAI Agents SDK: ``pip install "engram-memory-stack[agents]"``.

- :class:`EngramSession`: an ``agents.memory.Session`` whose conversation items live in engram's
  store (SQLite or PostgreSQL), per session id;
- :func:`engram_instructions`: an agent's dynamic instructions carrying the subject's **verified**
  Engram context (``engram.runtime``); an unverifiable export stops the run, never reaching the
  model::

    agent = Agent(name="helper", instructions=engram_instructions(AsyncEngramClient(config)))
    result = await Runner.run(agent, "Plan my week", session=EngramSession.open("ada"))

Decisions: docs/integrations.md.
"""

from engram.integrations.agents._instructions import Instructions, engram_instructions
from engram.integrations.agents._session import EngramSession

__all__ = [
    "EngramSession",
    "Instructions",
    "engram_instructions",
]
