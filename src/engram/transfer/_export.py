"""Memories out of a store into a cartridge, streamed.

Spec: lboel/acx@85f1358 SPEC.md §7.1-§7.6 and §12 items 8-10; docs/spec/acx.md §8.4 and §12.

- :func:`ring_records` turns one ring's memories into author records (``title`` the kind,
  ``summary`` the text, ``tags`` the entities); a repo ring's memories (M2) are field-learned
  with ``repoId`` the ring id, so export quarantines them unless asked, and then fingerprints
  them with the installation salt (§7.2). It is an iterator over pages of the store.
- :func:`export_cartridge` is ``engram cartridge export``: an agent package's contents (or a
  bare one named after the output), then the ring's records, drawn from the store a page at a
  time, exported (§7.4) and written by :func:`engram.cartridge.write` in its batches; no list
  of the ring's memories, author records or exported records is ever built, so a ring of
  100,000 memories is exported in bounded memory (issue 33). The file is the one a list of
  the same records writes, byte for byte.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from itertools import chain
from pathlib import Path

from engram.cartridge import ExportOptions, package_contents, write
from engram.cartridge.internals import Built, ExportedRecords, repo_literals, set_memories
from engram.core.bulk import gc_paused
from engram.core.canonical import JsonObject
from engram.core.jsonio import dumps_text
from engram.core.keys import PrivateKey
from engram.errors import Forbidden, InvalidRequest
from engram.memory import MemoryEngine
from engram.memory.internals import owner_of, ring_memory_pages


def ring_records(engine: MemoryEngine, ring: str) -> Iterator[JsonObject]:
    """One ring's memories as author records for export (M2 memories are field-learned),
    oldest first, read from the store a page at a time as they are drawn."""
    mount = engine.spec.mount_for(ring)
    ring_id = mount.ring_id if mount else ring
    if mount is None and (owner_of(ring_id) is not None or engine.subject is not None):
        # A subject's memories go only where that subject's own caller takes them.
        raise Forbidden(f"ring {ring!r} is not mounted by this caller")
    return _ring_records(engine, ring_id)


def _ring_records(engine: MemoryEngine, ring_id: str) -> Iterator[JsonObject]:
    for page in ring_memory_pages(engine.store, ring_id):
        for m in page:
            yield {
                "id": m.id.removeprefix("mem:")[:32],
                "title": m.kind,
                "summary": m.text,
                "sourceType": m.kind,
                "tags": list(m.entities),
                "timestamp": m.created_at,
                "repoId": m.ring_id if m.ring == "M2" else None,
                "impact": "neutral",
                "xpAwarded": 0,
            }


@dataclass(frozen=True)
class ExportSummary:
    built: Built
    quarantined: int
    """Field-learned records left out (the package's and the ring's)."""


def export_cartridge(
    out: str | os.PathLike[str],
    options: ExportOptions,
    *,
    package: Path | None = None,
    engine: MemoryEngine | None = None,
    ring: str | None = None,
    key: PrivateKey | None = None,
) -> ExportSummary:
    """Write a cartridge at ``out`` from ``package`` (an agent package directory) and/or
    ``ring``'s memories in ``engine``, signed with ``key`` at ``options.now``."""
    target = Path(out)
    with tempfile.TemporaryDirectory() as tmp:
        source = package
        if source is None:
            if ring is None:
                raise InvalidRequest("give an agent package directory, --ring, or both")
            source = Path(tmp)
            name = options.artifact_id or target.stem.lower()
            (source / "manifest.json").write_text(dumps_text({"name": name}), encoding="utf-8")
        contents, quarantined = package_contents(source, options)
    if ring is None:
        return ExportSummary(write(target, contents, key=key, signed_at=options.now), quarantined)
    if engine is None:
        raise InvalidRequest("exporting a ring needs the memory engine that holds it")
    records = ring_records(engine, ring)
    # §7.5: no raw repoId survives export. A ring's records share one repoId (a repository
    # ring's id, else none), so the first record's is the scrub gate's literal for all of them,
    # as every record's is for a package (repo_literals); the gate needs it before the first
    # payload is screened.
    first = next(records, None)
    if first is not None:
        contents.literals = sorted({*contents.literals, *repo_literals([first])})
        records = chain([first], records)
    with gc_paused():
        exported = ExportedRecords(records, options)
        set_memories(contents, chain(contents.memories, exported))
        built = write(target, contents, key=key, signed_at=options.now)
    return ExportSummary(built, quarantined + exported.quarantined)


__all__ = ["ExportSummary", "export_cartridge", "ring_records"]
