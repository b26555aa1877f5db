"""One declaration per MCP tool: the facts a tool states once, beside its function.

Issue 28: a tool's name, title, hints and description used to be written in five places across
three modules. Now a tool is one method of :class:`~engram.mcp._tools.EngramTools` under
:func:`engram_tool`: its name is the method's name, its title and behaviour hints are the
decorator's arguments, its description is the decorator's text (or a template filled with the
seat's kinds and rings), its input schema is derived by the MCP SDK from the signature and its
output schema from the return annotation (``Tool.from_function``). :func:`declared_tools` reads
them back in the order they are written; the server, ``TOOL_NAMES`` and the test that compares
the served ``tools/list`` with the declarations all read that one list.
"""

from __future__ import annotations

import functools
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

from mcp.types import ToolAnnotations

from engram.memory import subject_ring_id
from engram.memory.internals import subject_spec

if TYPE_CHECKING:
    from engram.memory import OteSpec

F = TypeVar("F", bound=Callable[..., Any])
T = TypeVar("T")
OWN = "caller"  # stands for the caller's subject in descriptions written before any call
_ATTRIBUTE = "__engram_tool__"


@dataclass(frozen=True)
class SeatWords:
    """What a tool description may name about the seat, as a model should read it."""

    seat_id: str
    kinds: str  # the allowed kinds, comma-separated
    mounted: str  # every mounted ring: "M4 (seat:…), …"
    writable: str  # the rings that take writes, or "none"

    @staticmethod
    def of(spec: OteSpec, *, for_subjects: bool = False) -> SeatWords:
        """``for_subjects``: as a caller acting for a subject mounts them (``/mcp``: the
        token's subject), with the subject's own ring named "the user's own ring"."""
        if for_subjects:
            spec = subject_spec(spec, OWN)

        def name(ring_id: str) -> str:
            return "the user's own ring" if ring_id == subject_ring_id(OWN) else ring_id

        writable = ", ".join(f"{m.ring} ({name(m.ring_id)})" for m in spec.mounts if m.writable)
        return SeatWords(
            seat_id=spec.seat.seat_id,
            kinds=", ".join(spec.ontology.allowed_kinds),
            mounted=", ".join(f"{m.ring} ({name(m.ring_id)})" for m in spec.mounts),
            writable=writable or "none",
        )


@dataclass(frozen=True)
class ToolDeclaration:
    """One tool as declared: everything ``tools/list`` says about it except the schemas, which
    the SDK derives from the function itself.

    The hints say what a call does to the world (docs/spec/mcp.md, "Tools"). ``llm_distiller``:
    the tool calls the configured LLM distiller when there is one, so with one it is open world
    and not idempotent (its text may differ per call). ``inline``: the tool only reads the local
    store and index, briefly, so it may run on the event loop instead of a worker thread when
    the engine has no remote stage (see :func:`runner`)."""

    name: str
    title: str
    read_only: bool
    destructive: bool
    idempotent: bool
    describe: str | Callable[[SeatWords], str]
    llm_distiller: bool = False
    inline: bool = False

    def description(self, seat: SeatWords) -> str:
        """The description as this seat's server lists it."""
        return self.describe if isinstance(self.describe, str) else self.describe(seat)

    def annotations(self, *, distiller: bool = False) -> ToolAnnotations:
        open_world = self.llm_distiller and distiller
        return ToolAnnotations(
            title=self.title,
            read_only_hint=self.read_only,
            destructive_hint=self.destructive,
            idempotent_hint=self.idempotent and not open_world,
            open_world_hint=open_world,
        )


def engram_tool(
    *,
    title: str,
    describe: str | Callable[[SeatWords], str],
    read_only: bool = False,
    destructive: bool = False,
    idempotent: bool = True,
    llm_distiller: bool = False,
    inline: bool = False,
) -> Callable[[F], F]:
    """Declare the decorated method an MCP tool named after it (see the module docstring)."""

    def declare(fn: F) -> F:
        declaration = ToolDeclaration(
            fn.__name__, title, read_only, destructive, idempotent, describe, llm_distiller, inline
        )
        setattr(fn, _ATTRIBUTE, declaration)
        return fn

    return declare


def declared_tools(owner: type) -> tuple[ToolDeclaration, ...]:
    """The tools ``owner`` declares, in the order its body writes them."""
    found = (getattr(value, _ATTRIBUTE, None) for value in vars(owner).values())
    return tuple(d for d in found if isinstance(d, ToolDeclaration))


def runner(
    declaration: ToolDeclaration, method: Callable[..., T], local: Callable[[], bool]
) -> Callable[..., Awaitable[T]]:
    """``method`` as the SDK should call it: on the event loop when the declaration says it may
    and ``local()`` (every stage of the engine is in this process), else on a worker thread.

    Issue 33: the SDK hands every synchronous tool to an anyio worker thread, and on a loaded
    machine the two thread switches of that hand-off cost more than a recall at 10k memories.
    A call that may wait on the network (a remote embedder or reranker, an LLM distiller) or
    on another writer (store writes) still runs on a thread, so it never stalls the loop.
    The signature is ``method``'s (``functools.wraps``): the SDK derives the same schemas.
    """

    @functools.wraps(method)
    async def run(**arguments: Any) -> T:
        if declaration.inline and local():
            return method(**arguments)
        import anyio.to_thread  # the SDK's own thread hand-off, as it does for sync tools

        return await anyio.to_thread.run_sync(functools.partial(method, **arguments))

    return run


__all__ = ["SeatWords", "ToolDeclaration", "declared_tools", "engram_tool", "runner"]
