"""One record type for a memory on its way between a store and a cartridge.

Spec: lboel/acx@85f1358 SPEC.md §7.1-§7.4 (``acx.memory-record.v1``); issue 14 point 3 (one record
type that keeps unknown members, deduplicated and content-addressed once); docs/spec/acx.md §8.

:class:`TransferRecord` wraps the record's JSON members as they are, so a record read from a
cartridge and written to another keeps every member this version does not know (the v1 schema
is closed today, but a v1.x record from a newer writer must not lose data passing through). The
store-side content address (``engram.memory.memory_id``) is computed once, in :meth:`memory_id`;
``kind`` and ``text``, which it and the store's row both need, are derived once per record
(an import of 100,000 memories asked for each four and two times).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cached_property

from engram.core.canonical import Json, JsonObject
from engram.memory import memory_id

_KIND = re.compile(r"[a-z][a-z0-9_]{0,63}")


@dataclass(frozen=True)
class TransferRecord:
    members: Mapping[str, Json] = field(default_factory=dict)

    @classmethod
    def from_wire(cls, value: Mapping[str, Json]) -> TransferRecord:
        return cls(dict(value))

    def to_wire(self) -> JsonObject:
        return dict(self.members)

    @property
    def id(self) -> str:
        return str(self.members["id"])

    @property
    def portable(self) -> bool:
        return self.members.get("portable") is True

    @property
    def codebase_fingerprint(self) -> str | None:
        value = self.members.get("codebaseFingerprint")
        return value if isinstance(value, str) else None

    @property
    def artifact_fingerprint(self) -> str:
        return str(self.members.get("artifactFingerprint") or "")

    @cached_property
    def kind(self) -> str:
        """The store's ``kind``: the record's ``sourceType`` when it is a valid kind name."""
        source = str(self.members.get("sourceType") or "").strip().lower().replace("-", "_")
        return source if _KIND.fullmatch(source) else "note"

    @cached_property
    def text(self) -> str:
        """The store's text: the summary, prefixed by the title when the title says more."""
        title = str(self.members.get("title") or "").strip()
        summary = str(self.members.get("summary") or "")
        if not title or title.lower().replace("-", "_") == self.kind:
            return summary
        return f"{title}\n\n{summary}" if summary else title

    @property
    def tags(self) -> tuple[str, ...]:
        tags = self.members.get("tags")
        return tuple(str(t) for t in tags) if isinstance(tags, list) else ()

    def memory_id(self, ring_id: str) -> str:
        """The store's content address of this record in ``ring_id`` (computed here only)."""
        return memory_id(ring_id, self.kind, self.text)


__all__ = ["TransferRecord"]
