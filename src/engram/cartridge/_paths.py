"""Portable, traversal-safe cartridge paths rooted at ``rom/`` or ``save/``.

Spec: lboel/acx@85f1358 SPEC.md §12 item 2 ("only portable traversal-safe paths rooted at
``rom/`` or ``save/``"); docs/spec/acx.md §3 "Paths". Every sqlar row read from a file goes
through :func:`check_path`, and so does every path named inside signed content, so a hostile
name can neither escape an extraction directory nor mean different files on different systems.

A portable path is ``/``-separated, relative, and each segment is 1-128 characters from
``[A-Za-z0-9._-]``, starts with a letter or digit, does not end with ``.``, and is not a Windows
device name; the whole path is at most ``Limits.max_path_chars`` long and
``Limits.max_path_depth`` segments deep. Two paths that differ only by letter case are refused
as a pair by :func:`check_unique_casefold`, because they collide on case-insensitive file systems.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from engram.cartridge._format import DEFAULT_LIMITS, Limits
from engram.errors import CartridgeFormatError

ROM = "rom"
SAVE = "save"
ZONES = (ROM, SAVE)

_SEGMENT = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,127}")
_WINDOWS_DEVICES = frozenset(
    {"con", "prn", "aux", "nul"}
    | {f"com{i}" for i in range(1, 10)}
    | {f"lpt{i}" for i in range(1, 10)}
)


def check_path(name: object, limits: Limits = DEFAULT_LIMITS) -> str:
    """Return ``name`` if it is a portable path under ``rom/`` or ``save/``; else refuse it."""
    if not isinstance(name, str):
        raise CartridgeFormatError(f"cartridge path {name!r} is not text")
    shown = name if len(name) <= 80 else name[:77] + "..."
    if not name:
        raise CartridgeFormatError("empty cartridge path")
    if len(name) > limits.max_path_chars:
        raise CartridgeFormatError(
            f"cartridge path {shown!r} is longer than {limits.max_path_chars} characters"
        )
    if name.startswith("/") or name.startswith("\\") or re.match(r"[A-Za-z]:", name):
        raise CartridgeFormatError(f"absolute cartridge path {shown!r} is refused")
    if "\\" in name:
        raise CartridgeFormatError(f"cartridge path {shown!r} uses a backslash")
    segments = name.split("/")
    if any(segment in ("..", ".") for segment in segments):
        raise CartridgeFormatError(f"path traversal in cartridge path {shown!r} is refused")
    if segments[0] not in ZONES:
        raise CartridgeFormatError(f"cartridge path {shown!r} is not rooted at rom/ or save/")
    if len(segments) < 2:
        raise CartridgeFormatError(
            f"cartridge path {shown!r} has fewer than two segments (SPEC §3.2: rom/... or save/...)"
        )
    if len(segments) > limits.max_path_depth:
        raise CartridgeFormatError(
            f"cartridge path {shown!r} is deeper than {limits.max_path_depth} segments"
        )
    for segment in segments:
        if not _SEGMENT.fullmatch(segment) or segment.endswith("."):
            raise CartridgeFormatError(
                f"cartridge path {shown!r}: segment {segment[:40]!r} is not portable "
                "(letters, digits, '.', '_', '-'; starts with a letter or digit)"
            )
        if segment.split(".")[0].lower() in _WINDOWS_DEVICES:
            raise CartridgeFormatError(
                f"cartridge path {shown!r}: {segment!r} is a reserved device name"
            )
    return name


def zone_of(name: str) -> str:
    """``rom`` or ``save``: the first segment of a checked path."""
    return name.split("/", 1)[0]


def check_unique_casefold(names: Iterable[str]) -> None:
    """Refuse two paths that name the same file on a case-insensitive file system."""
    seen: dict[str, str] = {}
    for name in names:
        folded = name.casefold()
        other = seen.get(folded)
        if other is not None and other != name:
            raise CartridgeFormatError(
                f"cartridge paths {other!r} and {name!r} differ only by letter case"
            )
        seen[folded] = name


def parents(name: str) -> list[str]:
    """The directory rows a path needs, outermost first (``rom/a/b`` -> ``rom``, ``rom/a``)."""
    segments = name.split("/")
    return ["/".join(segments[:i]) for i in range(1, len(segments))]


__all__ = ["ROM", "SAVE", "ZONES", "check_path", "check_unique_casefold", "parents", "zone_of"]
