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
import operator
import re
import struct
from collections.abc import Mapping, Sequence
from functools import lru_cache

from engram.core.canonical import Json, JsonObject

ENGINE: JsonObject = {"id": "local-hash-128", "dim": 128}
ENGINE_TEXT = '{"id":"local-hash-128","dim":128}'
"""``acx.embedding_engine`` as the reference writes it (member order id, dim)."""
_TOKEN = re.compile(r"[a-z0-9]+")


@lru_cache(maxsize=65_536)
def _slot(token: str) -> tuple[int, float]:
    """Where and which way one token counts: a cartridge's memories repeat most of their words,
    so each distinct word is hashed once (bounded, so a hostile vocabulary cannot grow it)."""
    h = hashlib.sha1(token.encode("utf-8"), usedforsecurity=False).digest()
    return int.from_bytes(h[:4], "big") % 128, 1.0 if h[4] & 1 else -1.0


def embed(text: str) -> list[float]:
    vector = [0.0] * 128
    for token in _TOKEN.findall(text.lower()):
        at, sign = _slot(token)
        vector[at] += sign
    # Every component is a whole number well inside 2**53, so the squares and their sum are
    # exact in any order: this is the reference's sqrt(sum of squares) to the last bit.
    norm = math.sqrt(sum(map(operator.mul, vector, vector)))
    return [v / norm for v in vector] if norm else vector


_ZEROS = bytes(4 * 128)


def embed_packed(text: str) -> bytes:
    """``pack(embed(text))``, the same bytes, without the 128-float list: a memory's text
    touches a dozen dimensions, so only those are summed, divided and packed (a cartridge of
    100,000 memories embeds each one). The squares are whole numbers, so the norm is the same
    double in any order; an untouched dimension is ``0.0 / norm``, which packs as four zeros."""
    touched: dict[int, float] = {}
    for token in _TOKEN.findall(text.lower()):
        at, sign = _slot(token)
        touched[at] = touched.get(at, 0.0) + sign
    norm = math.sqrt(sum(v * v for v in touched.values()))
    if not norm:
        return _ZEROS
    out = bytearray(_ZEROS)
    for at, value in touched.items():
        _FLOAT.pack_into(out, 4 * at, value / norm)
    return bytes(out)


_FLOAT = struct.Struct("<f")


@lru_cache(maxsize=65_536)
def _key(token: str) -> int:
    """:func:`_slot` as one integer: ``2 * dimension + (1 if it adds else 0)``."""
    at, sign = _slot(token)
    return 2 * at + (sign > 0)


def embed_packed_many(texts: Sequence[str]) -> list[bytes]:
    """``[embed_packed(t) for t in texts]``, the same bytes, a batch at a time in numpy: the
    words are found per text, their slots looked up in C (``map`` over the cache) and summed
    per text and dimension by ``bincount`` (issue 33: a cartridge of 100,000 memories embeds
    each one). Exact: every sum is of ±1.0, a whole number, and so are the squares, so the
    norm is the same double in any order; ``x / norm`` is the same IEEE division, and casting
    it to float32 rounds to nearest as ``struct``'s ``<f`` does; a text without words (norm
    zero) is the zero vector."""
    out: list[bytes] = []
    chunk: list[str] = []
    size = 0
    for text in texts:
        chunk.append(text)
        size += len(text)
        if len(chunk) == _MANY or size >= _MANY_CHARS:
            out += _embed_chunk(chunk)
            chunk, size = [], 0
    return out + _embed_chunk(chunk)


_MANY = 1024
"""Texts embedded together at most: a chunk's sums are a ``chunk x 128`` matrix of doubles
(1 MiB), so a writer's batch of 10,000 adds a few MiB to its peak, not 40."""
_MANY_CHARS = 256 * 1024
"""Characters embedded together at most: each word of a chunk is a Python string until its
slots are summed, so long texts are embedded a few at a time (the peak stays flat in them)."""


def _embed_chunk(texts: Sequence[str]) -> list[bytes]:
    import numpy as np

    if not texts:
        return []
    words: list[str] = []
    counts: list[int] = []
    findall = _TOKEN.findall
    for text in texts:
        found = findall(text.lower())
        words += found
        counts.append(len(found))
    keys = np.fromiter(map(_key, words), dtype=np.int64, count=len(words))
    rows = np.repeat(np.arange(len(texts), dtype=np.int64), counts)
    signs = (keys & 1).astype(np.float64) * 2.0 - 1.0
    sums = np.bincount(rows * 128 + (keys >> 1), weights=signs, minlength=len(texts) * 128)
    matrix = sums.reshape(len(texts), 128)
    norms = np.sqrt((matrix * matrix).sum(axis=1))
    empty = norms == 0.0
    norms[empty] = 1.0  # those rows are all zeros: 0.0 / 1.0 packs as the zero vector
    packed = (matrix / norms[:, None]).astype("<f4")
    return [row.tobytes() for row in packed]


def memory_text(record: Mapping[str, Json]) -> str:
    return f"{record.get('title') or ''}\n\n{record.get('summary') or ''}"


def pack(vector: list[float]) -> bytes:
    return struct.pack(f"<{len(vector)}f", *vector)


__all__ = [
    "ENGINE",
    "ENGINE_TEXT",
    "embed",
    "embed_packed",
    "embed_packed_many",
    "memory_text",
    "pack",
]
