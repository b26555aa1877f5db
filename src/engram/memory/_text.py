"""Text features shared by recording and recall: tokens, entities, the local vector, token cost.

Spec: engram.ote.v1 & MCP contract (Part V, Plate 03, §3.2) (engram_record stores "memory_vectors
128-dim local baseline"; engram_recall is lexical BM25 with corpus IDF + dense). The local baseline
is the engine ``local-hash-128``: signed feature hashing (CRC-32) of stemmed words, word bigrams and
character trigrams, L2-normalised. It is deterministic, offline and needs no model, so every memory
always has one. Decisions: ``docs/spec/memory-retrieval.md``.
"""

from __future__ import annotations

import itertools
import math
import zlib
from collections.abc import Sequence
from functools import lru_cache
from typing import Any

import numpy as np
import Stemmer  # type: ignore[import-not-found]  # PyStemmer ships no type information

from engram.memory._analysis import script_of, words

LOCAL_ENGINE = "local-hash-128"
LOCAL_DIMS = 128

# A compact English stop list (articles, pronouns, auxiliaries, prepositions): these carry no
# topic, and removing them keeps posting lists short, which is most of recall's speed.
STOPWORDS = frozenset(
    """
    a about above after again against all am an and any are as at be because been before
    being below between both but by can could did do does doing down during each few for
    from further had has have having he her here hers herself him himself his how i if in
    into is it its itself just me more most my myself no nor not now of off on once only or
    other our ours ourselves out over own same she should so some such than that the their
    theirs them themselves then there these they this those through to too under until up
    very was we were what when where which while who whom why will with would you your yours
    yourself yourselves s t d ll m re ve y also get got really yeah oh hey wow like just
    gonna thats im ive dont
    """.split()  # noqa: SIM905 - a word list reads better as text
)
_STEMMER = Stemmer.Stemmer("english")
# Snowball stemmers for the scripts one language dominates; Latin words keep the English one (as
# before: the language of a Latin word is unknown), scripts not named here are not stemmed.
_SCRIPT_STEMMERS = {
    "CYRILLIC": Stemmer.Stemmer("russian"),
    "GREEK": Stemmer.Stemmer("greek"),
    "ARABIC": Stemmer.Stemmer("arabic"),
    "DEVANAGARI": Stemmer.Stemmer("hindi"),
}


@lru_cache(maxsize=200_000)
def _stem(word: str) -> str:
    if word.isascii():
        return str(_STEMMER.stemWord(word))
    script = script_of(word)
    stemmer = _STEMMER if script == "LATIN" else _SCRIPT_STEMMERS.get(script)
    return word if stemmer is None else str(stemmer.stemWord(word))


def clear_caches() -> None:
    """Forget cached stems and word features (a benchmark that swaps the analysis calls it)."""
    _stem.cache_clear()
    _word_features.cache_clear()


def terms(text: str) -> list[str]:
    """Index terms: words without stop words, Snowball-stemmed (so "went" != "go", but
    "groups" == "group"); the words come from ``_analysis`` (every script)."""
    return [_stem(w) for w in words(text) if w not in STOPWORDS]


def token_cost(text: str) -> int:
    """Approximate LLM tokens of a memory (4 characters a token), for keyspace budgets."""
    return max(1, math.ceil(len(text) / 4))


def extract_entities(text: str, patterns: Sequence[Any]) -> list[str]:
    """Distinct non-empty matches of the seat's entity_patterns (RE2 programs, or ``re``
    patterns), in order of first appearance."""
    seen: dict[str, None] = {}
    for pattern in patterns:
        for match in pattern.finditer(text):
            found = match.group(0)
            if found:
                seen.setdefault(found, None)
    return list(seen)


@lru_cache(maxsize=400_000)
def _feature(name: str) -> tuple[int, float]:
    h = zlib.crc32(name.encode("utf-8"))
    return h % LOCAL_DIMS, (1.0 if h & 0x80000000 else -1.0)


@lru_cache(maxsize=200_000)
def _word_features(word: str) -> tuple[tuple[int, ...], tuple[float, ...], str]:
    """A word's own features, cached: its stem (1.0) and its character trigrams (0.35 each),
    as (buckets, signed weights, stem); the stem is kept for the bigrams."""
    stem = _stem(word)
    names = [("w:" + stem, 1.0)]
    padded = f"#{word}#"
    names += [("c:" + padded[i : i + 3], 0.35) for i in range(len(padded) - 2)]
    buckets = [_feature(n) for n, _ in names]
    return (
        tuple(b for b, _ in buckets),
        tuple(sign * w for (_, sign), (_, w) in zip(buckets, names, strict=True)),
        stem,
    )


def _features_into(text: str, index: list[int], value: list[float]) -> None:
    """Append a text's feature buckets and signed weights: words, trigrams, stem bigrams.

    The order of the pairs is part of the engine: ``np.bincount`` adds each bucket's weights in
    this order, and float sums in another order could differ in the last bit.
    """
    stems: list[str] = []
    for w in words(text):
        if w in STOPWORDS:
            continue
        i, v, stem = _word_features(w)
        index += i
        value += v
        stems.append(stem)
    # Stem bigrams (0.5), hashed inline: most are seen once, so a cache would only cost.
    crc32 = zlib.crc32
    for a, b in itertools.pairwise(stems):
        h = crc32(f"b:{a} {b}".encode())
        index.append(h % LOCAL_DIMS)
        value.append(0.5 if h & 0x80000000 else -0.5)


def _unit_rows(flat_index: np.ndarray, value: Sequence[float], rows: int) -> np.ndarray:
    """``rows`` vectors from bucket indexes (already offset by ``row * LOCAL_DIMS``) and their
    weights: summed per bucket, float32, each row divided by its norm (zero rows stay zero).
    The norm is written as ``np.linalg.norm`` computes it for real rows (the square, summed by
    ``add.reduce``, then ``sqrt``) without its Python layer, a third of a one-text call."""
    flat = np.bincount(
        flat_index, weights=np.asarray(value, dtype=np.float64), minlength=rows * LOCAL_DIMS
    )
    out = flat.reshape(rows, LOCAL_DIMS).astype(np.float32)
    norms = np.sqrt(np.add.reduce(out * out, axis=1, keepdims=True))
    np.divide(out, norms, out=out, where=norms > 0)
    return out


def local_vectors(texts: Sequence[str]) -> np.ndarray:
    """``local-hash-128`` vectors of many texts at once (rows float32, unit length or zero)."""
    index: list[int] = []
    value: list[float] = []
    counts: list[int] = []
    for text in texts:
        before = len(index)
        _features_into(text, index, value)
        counts.append(len(index) - before)
    flat_index = np.asarray(index, dtype=np.int64)
    # Row r's buckets move to r * LOCAL_DIMS + bucket, so one bincount builds every row.
    flat_index += np.repeat(np.arange(len(texts), dtype=np.int64) * LOCAL_DIMS, counts)
    return _unit_rows(flat_index, value, len(texts))


def local_vector(text: str) -> np.ndarray:
    """The ``local-hash-128`` vector of ``text`` (float32, unit length or all zeros):
    ``local_vectors([text])[0]`` bit for bit, without the batch's row offsets (once per
    recall, where they cost a third of it)."""
    index: list[int] = []
    value: list[float] = []
    _features_into(text, index, value)
    vec: np.ndarray = _unit_rows(np.asarray(index, dtype=np.int64), value, 1)[0]
    return vec


def vector_to_blob(vec: np.ndarray) -> bytes:
    return np.asarray(vec, dtype="<f4").tobytes()


def blob_to_vector(blob: bytes, dims: int) -> np.ndarray:
    vec = np.frombuffer(bytes(blob), dtype="<f4")
    if vec.shape[0] != dims:
        raise ValueError(f"stored vector has {vec.shape[0]} dimensions, expected {dims}")
    return vec


__all__ = [
    "LOCAL_DIMS",
    "LOCAL_ENGINE",
    "STOPWORDS",
    "blob_to_vector",
    "clear_caches",
    "extract_entities",
    "local_vector",
    "local_vectors",
    "terms",
    "token_cost",
    "vector_to_blob",
    "words",
]
