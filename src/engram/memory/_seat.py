"""Which seat manifest is in use, and where it was found.

engram.ote.v1 & MCP contract (Part V, Plate 03, §3.2) with the seat-resolution order of
``docs/spec/mcp.md`` "Seat": ``--ote FILE``, else ``$ENGRAM_OTE``, else the nearest
``.engram/ote.toml`` at or above the working directory. Every memory command and ``engram mcp``
resolve the seat this one way, and both ``engram status`` and the ``engram_status`` tool report the
answer, so an agent (or its operator) can tell which manifest governs what it records.

The environment is passed in as a mapping: only the CLI reads the real one.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from engram.errors import ManifestError
from engram.memory._manifest import OteSpec, find_manifest, load_manifest

# "default": the seat ``engram serve`` keeps under $ENGRAM_HOME when it finds no manifest
# (docs/spec/memory-rest.md "The default seat"); only serve uses it, never ``locate_seat``.
SeatOrigin = Literal["--ote", "ENGRAM_OTE", ".engram/ote.toml", "default"]


@dataclass(frozen=True)
class SeatSource:
    """Where the seat manifest came from: the rule that found it and its absolute path."""

    origin: SeatOrigin
    path: Path

    def to_wire(self) -> dict[str, str]:
        return {"origin": self.origin, "path": str(self.path)}


def locate_seat(option: Path | None, environ: Mapping[str, str], cwd: Path) -> SeatSource:
    """Apply the resolution order; ManifestError names what was tried when nothing is found."""
    if option is not None:
        return SeatSource("--ote", (cwd / option).resolve())
    from_env = environ.get("ENGRAM_OTE", "").strip()
    if from_env:
        return SeatSource("ENGRAM_OTE", (cwd / from_env).resolve())
    found = find_manifest(cwd)
    if found is None:
        raise ManifestError(
            "no seat manifest: pass --ote FILE, set ENGRAM_OTE, or run `engram init` to "
            f"write .engram/ote.toml (searched upwards from {cwd})"
        )
    return SeatSource(".engram/ote.toml", found.resolve())


def load_seat(source: SeatSource) -> OteSpec:
    """Read and validate the manifest the source points at (ManifestError names the file)."""
    return load_manifest(source.path)


__all__ = ["SeatOrigin", "SeatSource", "load_seat", "locate_seat"]
