"""engram.graph: ACX Agent Graphs (``acx.agent-graph/1``), a team's information architecture.

Spec: lboel/acx@85f1358 SPEC.md §16 (actors as logical seats, knowledge modules as stewardship
metadata never content, routes with conflict-free mandatory direction and response contracts,
loop bindings that pin workflows by digest, bounded convergence, global bounds, the host-side
route event envelope, the ``acx.agent-graph-signature/1`` signature, the CLI profile) and
§17.3-§17.4 (lineage, pinned dependencies); our decisions are in docs/spec/acx-graphs.md.

Read with :func:`load_graph`, check with :func:`lint_graph` (``publish=True`` for the publication
profile), sign with :func:`sign_graph`, verify with :func:`check_graph` (signature and
publishable structure), resolve workflow pins with :func:`resolve_pins`, show with
:func:`graph_outline` / :func:`graph_dot` / :func:`render_svg`. A graph executes nothing and
grants nothing; :class:`RouteLedger` and :class:`ConvergenceInbox` are for a host that routes
events and must stay within the graph's bounds. Signing reuses ``engram.workflow``'s spine.
"""

from engram.graph._events import (
    ConvergenceInbox,
    PropagationLimit,
    RouteEvent,
    RouteEventError,
    RouteLedger,
)
from engram.graph._graph import (
    PinnedWorkflow,
    check_graph,
    graph_digest,
    load_graph,
    resolve_pins,
    sign_graph,
    verify_graph,
)
from engram.graph._lint import lint_graph
from engram.graph._render import Outline, graph_dot, graph_outline, render_svg
from engram.graph._starter import starter_graph

__all__ = [
    "ConvergenceInbox",
    "Outline",
    "PinnedWorkflow",
    "PropagationLimit",
    "RouteEvent",
    "RouteEventError",
    "RouteLedger",
    "check_graph",
    "graph_digest",
    "graph_dot",
    "graph_outline",
    "lint_graph",
    "load_graph",
    "render_svg",
    "resolve_pins",
    "sign_graph",
    "starter_graph",
    "verify_graph",
]
