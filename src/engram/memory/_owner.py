"""Whose memory: a subject's own ring beside the seat's rings, and the engine acting for them.

Beyond engram.ote.v1 (issue 27; decisions in ``docs/spec/memory-ownership.md``). Every memory
belongs either to the seat (the agent-fleet knowledge the OTE manifest describes: rings M0-M4
with the ids the manifest mounts) or to one subject, the end user whose token recorded it. A
subject's memories live in that subject's own ring, ``subject:<subject id>``, at level M4: one
ring per person, whatever seat recorded it. The ring id says who owns a memory, so every path
that already reads only the mounted rings (recall, status counts, graduation, exports) keeps
subjects apart by construction, and the content address (sha256 of kind, ring id and text) of
the same words differs per subject, so recording reveals nothing about another subject.

Acting for a subject, an engine mounts:
- the manifest's shared rings M0-M3 (canon, archetype, repo, team), **read-only**: a subject's
  memories are never written into shared knowledge;
- the subject's own ring in place of the seat's M4, with the M4 mount's budget share and access.
The seat's own M4 ring is not mounted: it holds the agent's notes recorded with no subject (and
memories recorded before ownership existed), which may be about anyone.

A manifest cannot mount a ``subject:`` ring (every mount's id must carry its ring's prefix,
``docs/spec/memory-manifest.md``), so no seat manifest reaches a subject's memories either.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace

from engram.errors import EngramError, Forbidden, InvalidRequest
from engram.memory._manifest import Mount, OteSpec

SUBJECT_RING_PREFIX = "subject:"
SUBJECT_LEVEL = "M4"
# Subject ids are the context protocol's (uuid4 text); any id a token can carry is accepted,
# bounded and without separators that could make two subjects' ring ids meet.
SUBJECT_ID_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$"
_SUBJECT = re.compile(SUBJECT_ID_PATTERN)
SHARED_LEVELS = frozenset({"M0", "M1", "M2", "M3"})


def check_subject(subject_id: str) -> str:
    """``subject_id`` if it can name a subject's ring, else ``invalid_request``."""
    if not isinstance(subject_id, str) or not _SUBJECT.fullmatch(subject_id):
        raise InvalidRequest(
            f"subject: expected a subject id (letters, digits, '.', '_', '-'; at most 128), "
            f"got {str(subject_id)[:80]!r}"
        )
    return subject_id


SUBJECT_HEADER = "Engram-Subject"
"""The HTTP header an ``admin`` token names the subject it acts for with (/mcp, the REST API)."""


@dataclass(frozen=True)
class Caller:
    """Whom an HTTP request acts for, and who acts (written into a memory's history)."""

    subject: str
    actor: str


def http_caller(token_subject: str, token_id: str, *, admin: bool, named: str | None) -> Caller:
    """The one rule for whom an HTTP request with a token acts for (``/mcp`` and the memory REST
    API; docs/spec/memory-ownership.md "Who is the caller"): the token's own subject, or, for an
    ``admin`` token only, the subject ``named`` in the ``Engram-Subject`` header. Anyone else
    naming another subject is ``forbidden``; a named id that cannot be a subject's is
    ``invalid_request``. The actor names the token by its id, never the token."""
    if named is None or named == token_subject:
        return Caller(token_subject, f"token:{token_id}")
    if not admin:
        raise Forbidden(
            f"only an admin token may act for another subject ({SUBJECT_HEADER.lower()})"
        )
    try:
        subject = check_subject(named)
    except EngramError as e:
        raise InvalidRequest(f"{SUBJECT_HEADER.lower()}: {e.message}") from e
    return Caller(subject, f"admin token:{token_id} for {subject}")


def subject_ring_id(subject_id: str) -> str:
    """The ring that holds ``subject_id``'s memories."""
    return SUBJECT_RING_PREFIX + check_subject(subject_id)


def owner_of(ring_id: str) -> str | None:
    """The subject who owns memories of ``ring_id``, or None for the seat's (shared) rings."""
    if ring_id.startswith(SUBJECT_RING_PREFIX):
        return ring_id[len(SUBJECT_RING_PREFIX) :]
    return None


def subject_spec(spec: OteSpec, subject_id: str) -> OteSpec:
    """``spec`` as seen by a caller acting for ``subject_id`` (see the module docstring)."""
    ring_id = subject_ring_id(subject_id)
    shared = tuple(replace(m, access="read_only") for m in spec.mounts if m.ring in SHARED_LEVELS)
    seat_m4 = next((m for m in spec.mounts if m.ring == SUBJECT_LEVEL), None)
    own = Mount(
        ring=SUBJECT_LEVEL,
        ring_id=ring_id,
        access=seat_m4.access if seat_m4 is not None else "read_write",
        budget_share_pct=seat_m4.budget_share_pct if seat_m4 is not None else 0,
    )
    return replace(spec, mounts=(*shared, own))


__all__ = [
    "SUBJECT_HEADER",
    "SUBJECT_ID_PATTERN",
    "SUBJECT_LEVEL",
    "SUBJECT_RING_PREFIX",
    "Caller",
    "check_subject",
    "http_caller",
    "owner_of",
    "subject_ring_id",
    "subject_spec",
]
