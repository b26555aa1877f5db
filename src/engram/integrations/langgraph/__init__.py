"""engram as LangGraph long-term memory: ``pip install "engram-memory-stack[langgraph]"``.

:class:`EngramStore` is a ``langgraph.store.base.BaseStore`` (LangGraph 1.x): items under
namespaces in engram's store (SQLite or PostgreSQL), ``search(query=…)`` through engram's hybrid
recall with each namespace a ring of its own, LangGraph's filters, TTLs. Compile a graph with it
and every node that asks for ``store`` gets it::

    from engram.integrations.langgraph import EngramStore

    store = EngramStore.open()  # $ENGRAM_DATABASE_URL, else $ENGRAM_HOME/engram.db
    graph = builder.compile(store=store)

Decisions: docs/integrations.md.
"""

from engram.integrations.langgraph._store import EngramStore

__all__ = [
    "EngramStore",
]
