"""``acx.embed/local-hash-128/1``: the embedding engine that tags a cartridge's derived vectors.

Spec: lboel/acx@85f1358 SPEC.md §7.7 (``text = title + "\\n\\n" + summary``; tokens are
``[a-z0-9]+`` after lowercasing; for each token ``h = sha1(token)`` adds ``h[4] & 1 ? +1 : -1``
at dimension ``uint32be(h[0..4]) % 128``; L2-normalise) and §3.5/§7.6 (vectors are derived,
never signed, rebuilt by every consumer with its own engine). It is not the memory engine's own
``local-hash-128`` (engram.memory hashes differently): a cartridge carries ACX's definition so
any reader can reproduce its vectors, and engram's importer discards them and re-indexes.
"""

from __future__ import annotations

import hashlib
import math
import re
import struct
from collections.abc import Mapping

from engram.core.canonical import Json, JsonObject

ENGINE: JsonObject = {"id": "local-hash-128", "dim": 128}
ENGINE_TEXT = '{"id":"local-hash-128","dim":128}'
"""``acx.embedding_engine`` as the reference writes it (member order id, dim)."""
_TOKEN = re.compile(r"[a-z0-9]+")


def embed(text: str) -> list[float]:
    vector = [0.0] * 128
    for token in _TOKEN.findall(text.lower()):
        h = hashlib.sha1(token.encode("utf-8"), usedforsecurity=False).digest()
        vector[int.from_bytes(h[:4], "big") % 128] += 1.0 if h[4] & 1 else -1.0
    norm = math.sqrt(sum(v * v for v in vector))
    return [v / norm for v in vector] if norm else vector


def memory_text(record: Mapping[str, Json]) -> str:
    return f"{record.get('title') or ''}\n\n{record.get('summary') or ''}"


def pack(vector: list[float]) -> bytes:
    return struct.pack(f"<{len(vector)}f", *vector)


__all__ = ["ENGINE", "ENGINE_TEXT", "embed", "memory_text", "pack"]
