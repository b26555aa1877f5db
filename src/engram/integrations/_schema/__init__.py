"""The adapters' tables, as store components that import no framework.

``engram db migrate`` and ``engram db status`` find every component by importing the modules
of a few packages; the adapters themselves import LangGraph or the Agents SDK, which an install
without those extras lacks. Their tables are therefore declared here, where ``engram db`` can
read them on any install (docs/integrations.md).
"""

from engram.integrations._schema._agents import AGENTS_COMPONENT, SUBJECT_MARK
from engram.integrations._schema._langgraph import LANGGRAPH_COMPONENT, ring_id_for, scope_for

__all__ = ["AGENTS_COMPONENT", "LANGGRAPH_COMPONENT", "SUBJECT_MARK", "ring_id_for", "scope_for"]
