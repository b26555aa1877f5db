"""The host-side route event envelope and the bounds a host applies while routing.

Spec: lboel/acx@85f1358 SPEC.md §16.7 (``maxPropagationHops`` bounds any cascade, ``maxFanout`` the
targets of each route) and §16.7.1 (a host that operationalizes routes carries an ephemeral
envelope: a unique ``eventId``, a ``correlationId``, an optional ``causationId``, the verified
``graphDigest``, the ``routeId``, a non-negative ``hopCount`` and knowledge references of id plus
opaque revision, never content; the first event is hop 0 and every forward adds one; a host stops
before a forward would exceed the hop bound, deduplicates by ``eventId`` within a correlation,
and never merges convergence inputs across correlations; the envelope is never written into the
signed graph); docs/spec/acx-graphs.md §"Route events".

engram itself routes nothing. This module is for a host that does: :class:`RouteEvent` parses
and writes the envelope exactly, :class:`RouteLedger` enforces the graph's bounds and
deduplication, and :class:`ConvergenceInbox` gathers one convergence point's inputs per
correlation and says when they are complete.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from engram.core.canonical import Json, JsonObject
from engram.errors import InputError

_DIGEST = re.compile(r"sha256:[0-9a-f]{64}")
_ID = re.compile(r"[a-z][a-z0-9._-]{0,127}")
_REQUIRED = frozenset(
    {"eventId", "correlationId", "graphDigest", "routeId", "hopCount", "knowledge"}
)
_OPTIONAL = frozenset({"causationId"})
_REF_MEMBERS = frozenset({"id", "revision"})


class RouteEventError(InputError):
    """A route event is malformed, or routing it would break the graph's bounds."""

    code = "invalid_route_event"


class PropagationLimit(RouteEventError):
    """Forwarding would exceed ``limits.maxPropagationHops`` (or a route's ``maxFanout``)."""

    code = "propagation_limit"


@dataclass(frozen=True)
class KnowledgeRef:
    """A knowledge module id and an opaque revision, version or digest: never the content."""

    id: str
    revision: str

    def to_wire(self) -> JsonObject:
        return {"id": self.id, "revision": self.revision}


@dataclass(frozen=True)
class RouteEvent:
    """The §16.7.1 envelope. Runtime state only: it never enters the signed graph."""

    event_id: str
    correlation_id: str
    graph_digest: str
    route_id: str
    hop_count: int
    knowledge: tuple[KnowledgeRef, ...]
    causation_id: str | None = None

    def to_wire(self) -> JsonObject:
        out: JsonObject = {
            "eventId": self.event_id,
            "correlationId": self.correlation_id,
            "graphDigest": self.graph_digest,
            "routeId": self.route_id,
            "hopCount": self.hop_count,
            "knowledge": [k.to_wire() for k in self.knowledge],
        }
        if self.causation_id is not None:
            out["causationId"] = self.causation_id
        return out

    @classmethod
    def from_wire(cls, value: Json) -> RouteEvent:
        """Exactly the §16.7.1 members; a knowledge reference is exactly ``{id, revision}``."""
        if not isinstance(value, dict):
            raise RouteEventError("a route event is a JSON object")
        missing = sorted(_REQUIRED - set(value))
        extra = sorted(set(value) - _REQUIRED - _OPTIONAL)
        if missing or extra:
            raise RouteEventError(f"route event members: missing {missing}, unexpected {extra}")
        event_id, correlation_id, route_id = (
            _text(value[member], member) for member in ("eventId", "correlationId", "routeId")
        )
        causation_id = (
            _text(value["causationId"], "causationId") if "causationId" in value else None
        )
        graph_digest = value["graphDigest"]
        if not isinstance(graph_digest, str) or not _DIGEST.fullmatch(graph_digest):
            raise RouteEventError("graphDigest is the verified graph's sha256:<hex> digest")
        hops = value["hopCount"]
        if not isinstance(hops, int) or isinstance(hops, bool) or hops < 0:
            raise RouteEventError("hopCount is a non-negative integer")
        refs = value["knowledge"]
        if not isinstance(refs, list) or not refs:
            raise RouteEventError("knowledge lists one or more knowledge references")
        parsed = []
        for ref in refs:
            if not isinstance(ref, dict) or set(ref) != _REF_MEMBERS:
                raise RouteEventError(
                    "a knowledge reference is exactly {id, revision}: content never travels"
                )
            ref_id = _text(ref["id"], "knowledge id")
            parsed.append(KnowledgeRef(ref_id, _text(ref["revision"], "knowledge revision")))
        return cls(
            event_id=event_id,
            correlation_id=correlation_id,
            graph_digest=graph_digest,
            route_id=route_id,
            hop_count=hops,
            knowledge=tuple(parsed),
            causation_id=causation_id,
        )


def _text(value: Json, what: str) -> str:
    if not isinstance(value, str) or not value.strip() or len(value) > 256:
        raise RouteEventError(f"{what} is a non-empty string of at most 256 characters")
    return value


def _new_id() -> str:
    return str(uuid.uuid4())


@dataclass
class RouteLedger:
    """A host's bookkeeping for one verified graph: bounds, route checks and deduplication."""

    # Any: a graph that lint_graph has accepted, so agent-graph.schema.json has already shaped
    # every member read here; isinstance checks would restate the schema.
    graph: Mapping[str, Any]
    graph_digest: str
    _seen: set[tuple[str, str]] = field(default_factory=set)

    def __post_init__(self) -> None:
        self._routes = {r["id"]: r for r in self.graph["routes"]}
        self.max_hops: int = self.graph["limits"]["maxPropagationHops"]
        self.max_fanout: int = self.graph["limits"]["maxFanout"]

    def originate(
        self,
        route_id: str,
        knowledge: Iterable[KnowledgeRef],
        *,
        correlation_id: str | None = None,
        event_id: str | None = None,
    ) -> RouteEvent:
        """The first event of an exchange on ``route_id``: hop 0."""
        return self._event(
            route_id,
            tuple(knowledge),
            hop_count=0,
            correlation_id=correlation_id or _new_id(),
            event_id=event_id or _new_id(),
            causation_id=None,
        )

    def forward(
        self,
        cause: RouteEvent,
        route_id: str,
        knowledge: Iterable[KnowledgeRef] | None = None,
        *,
        event_id: str | None = None,
    ) -> RouteEvent:
        """The event ``cause`` leads to on ``route_id``, one hop further, same correlation.

        Refused with :class:`PropagationLimit` before the forward would exceed the hop bound.
        """
        self._same_graph(cause)
        hop = cause.hop_count + 1
        if hop > self.max_hops:
            raise PropagationLimit(
                f"forwarding {cause.event_id} would be hop {hop}; limits.maxPropagationHops is "
                f"{self.max_hops}"
            )
        refs = cause.knowledge if knowledge is None else tuple(knowledge)
        return self._event(
            route_id,
            refs,
            hop_count=hop,
            correlation_id=cause.correlation_id,
            event_id=event_id or _new_id(),
            causation_id=cause.event_id,
        )

    def targets(self, event: RouteEvent) -> tuple[str, ...]:
        """The actors ``event``'s route addresses, never more than ``maxFanout``."""
        self._same_graph(event)
        route = self._route(event.route_id)
        if len(route["to"]) > self.max_fanout:
            raise PropagationLimit(f"route {event.route_id!r} exceeds limits.maxFanout")
        return tuple(route["to"])

    def accept(self, event: RouteEvent) -> bool:
        """True the first time an ``eventId`` arrives within its correlation, False after."""
        self._same_graph(event)
        key = (event.correlation_id, event.event_id)
        if key in self._seen:
            return False
        self._seen.add(key)
        return True

    def _event(
        self,
        route_id: str,
        knowledge: tuple[KnowledgeRef, ...],
        *,
        hop_count: int,
        correlation_id: str,
        event_id: str,
        causation_id: str | None,
    ) -> RouteEvent:
        route = self._route(route_id)
        if not knowledge:
            raise RouteEventError("an event carries at least one knowledge reference")
        allowed = set(route["carries"]) | set(route.get("returns", []))
        stray = sorted({k.id for k in knowledge} - allowed)
        if stray:
            raise RouteEventError(f"route {route_id!r} does not carry {', '.join(stray)}")
        event = RouteEvent(
            event_id=event_id,
            correlation_id=correlation_id,
            graph_digest=self.graph_digest,
            route_id=route_id,
            hop_count=hop_count,
            knowledge=knowledge,
            causation_id=causation_id,
        )
        return RouteEvent.from_wire(event.to_wire())  # the envelope's own checks, once

    def _route(self, route_id: str) -> Mapping[str, Any]:
        route: Mapping[str, Any] | None = self._routes.get(route_id)
        if route is None:
            raise RouteEventError(f"the graph has no route {route_id!r}")
        return route

    def _same_graph(self, event: RouteEvent) -> None:
        if event.graph_digest != self.graph_digest:
            raise RouteEventError("the event belongs to another graph (graphDigest differs)")


@dataclass
class ConvergenceInbox:
    """One convergence point's inputs, gathered per correlation, never mixed across them."""

    graph: Mapping[str, Any]  # Any: an accepted graph, as RouteLedger.graph
    point_id: str
    _inputs: dict[str, dict[tuple[str, str], KnowledgeRef]] = field(default_factory=dict)
    _rounds: dict[str, int] = field(default_factory=dict)

    def __post_init__(self) -> None:
        points = {p["id"]: p for p in self.graph.get("convergence", [])}
        if self.point_id not in points:
            raise RouteEventError(f"the graph has no convergence point {self.point_id!r}")
        self.point = points[self.point_id]
        self._wanted = {
            (source["loop"], module)
            for source in self.point["inputs"]
            for module in source["knowledge"]
        }

    def add(self, loop_id: str, event: RouteEvent) -> bool:
        """File ``event``'s references as inputs from ``loop_id``; True once all are in."""
        mine = self._inputs.setdefault(event.correlation_id, {})
        for ref in event.knowledge:
            if (loop_id, ref.id) in self._wanted:
                mine[(loop_id, ref.id)] = ref
        return self.complete(event.correlation_id)

    def complete(self, correlation_id: str) -> bool:
        return set(self._inputs.get(correlation_id, {})) == self._wanted

    def inputs(self, correlation_id: str) -> dict[tuple[str, str], KnowledgeRef]:
        return dict(self._inputs.get(correlation_id, {}))

    def begin_round(self, correlation_id: str) -> int:
        """Count one synthesis round; refuse the one beyond ``limits.maxRounds``."""
        done = self._rounds.get(correlation_id, 0)
        if done >= self.point["limits"]["maxRounds"]:
            raise PropagationLimit(
                f"convergence {self.point_id!r} reached limits.maxRounds "
                f"{self.point['limits']['maxRounds']} for correlation {correlation_id}"
            )
        self._rounds[correlation_id] = done + 1
        return done + 1


__all__ = [
    "ConvergenceInbox",
    "KnowledgeRef",
    "PropagationLimit",
    "RouteEvent",
    "RouteEventError",
    "RouteLedger",
]
