"""The time stage: a query's time intent (``time_intent``) as a prior on the fused score.

It runs only when the query has an intent, so every other query is ranked exactly as before.
Each candidate with a positive fused score gets a prior in [0, w_time_window + w_time_order +
w_superseded] from when its memory happened (``provenance["occurred_at"]``, an RFC 3339 /
ISO 8601 instant, else when it was recorded) and whether it was superseded, and its fused score
is multiplied by (1 + prior): relevance still decides among memories of the same time, and a
window never empties the slate (a prior, not a filter; docs/spec/memory-retrieval.md "Time and
updates").
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime

import numpy as np

from engram.core.canonical import Json, parse_strict
from engram.memory._engine import MemoryEngine
from engram.memory._index import View
from engram.memory._recall.search import Search
from engram.memory._recall.stages import Candidates, Column
from engram.memory._recall.time_intent import LATEST, TimeIntent
from engram.memory._recall.tuning import Tuning
from engram.memory._text import terms
from engram.store import Tx, rows_where_in

OCCURRED_AT = "occurred_at"  # the provenance key conversation ingestion writes (UTC instant)
_DAY = 86_400.0
_OPEN_SCALE = 30 * _DAY  # how fast the prior fades outside a window open on one side


@dataclass(frozen=True)
class TimeQuery:
    """A query's time intent, with the superseded memories (row numbers) it brought back."""

    intent: TimeIntent
    superseded: frozenset[int] = frozenset()


def occurred(provenance: Json, created_at: str) -> float:
    """When a memory happened, as POSIX seconds: ``provenance["occurred_at"]`` when it is an
    instant, else its recording time ``created_at``."""
    value = provenance.get(OCCURRED_AT) if isinstance(provenance, dict) else None
    if isinstance(value, str):
        moment = _instant(value)
        if moment is not None:
            return moment
    return _instant(created_at) or 0.0


def occurred_by_n(tx: Tx, ns: Sequence[int]) -> dict[int, float]:
    """When the memories numbered ``ns`` happened (two columns per row, 500 rows a query)."""
    out: dict[int, float] = {}
    select = "SELECT n, provenance, created_at FROM memory_items"
    for row in rows_where_in(tx, select, "n", ns):
        text = str(row["provenance"])
        # Most provenance has no time: parse it only when the key is there.
        provenance = parse_strict(text) if OCCURRED_AT in text else None
        out[int(row["n"])] = occurred(provenance, str(row["created_at"]))
    return out


def _instant(text: str) -> float | None:
    try:
        moment = datetime.fromisoformat(text[:64].strip().replace("Z", "+00:00"))
    except ValueError:
        return None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)  # ingestion writes UTC; a naive one is read as UTC
    return moment.timestamp()


def time_stage(
    engine: MemoryEngine,
    view: View,
    ring_ids: Sequence[str],
    pool: Candidates,
    base: np.ndarray,
    when: TimeQuery,
    tuning: Tuning,
) -> Column | None:
    """The time column over the candidates: their prior, and the fused score's share it adds
    (``base`` x prior, ``base`` being the other stages' fused score). None: nothing scored."""
    intent = when.intent
    rows = _reachable(base, intent, when, tuning)
    if rows.shape[0] == 0:
        return None
    n_of = view.arrays["n"]
    ns = [int(n_of[pool.docs[int(i)]]) for i in rows]
    with engine.store.read() as tx:
        found = occurred_by_n(tx, ns)
        start, end, anchor = _window(tx, view, ring_ids, intent, tuning)
    times = np.asarray([found.get(n, math.nan) for n in ns], dtype=np.float64)
    prior = np.zeros(len(pool.docs), dtype=np.float32)
    part = np.zeros(rows.shape[0], dtype=np.float64)
    known = ~np.isnan(times)
    if start is not None or end is not None:
        part += tuning.w_time_window * _inside(times, start, end)
    if intent.order and known.any():
        low, high = float(np.nanmin(times)), float(np.nanmax(times))
        spread = (times - low) / (high - low) if high > low else np.zeros_like(times)
        spread = np.nan_to_num(spread, nan=0.0)
        part += tuning.w_time_order * (spread if intent.order == LATEST else 1.0 - spread)
    if intent.previous and when.superseded:
        part += tuning.w_superseded * np.asarray([n in when.superseded for n in ns], np.float64)
    if anchor is not None:
        part[[n == anchor for n in ns]] = 0.0  # the event itself is neither before nor after
    prior[rows] = np.nan_to_num(part, nan=0.0).astype(np.float32)
    return Column("time", prior, (base * prior,))


def _reachable(base: np.ndarray, intent: TimeIntent, when: TimeQuery, tuning: Tuning) -> np.ndarray:
    """The rows whose prior can matter: a positive base score that, multiplied by the largest
    factor the prior can give, reaches the ``pool``-th best base score (only the first ``pool``
    places are ranked; a row below that bound stays below ``pool`` rows whatever its time)."""
    positive = np.flatnonzero(base > 0)
    if positive.shape[0] <= tuning.pool:
        return positive
    largest = (
        1.0 + tuning.w_time_window * intent.windowed + tuning.w_time_order * bool(intent.order)
    )
    largest += tuning.w_superseded * (intent.previous and bool(when.superseded))
    values = base[positive]
    threshold = float(np.partition(values, values.shape[0] - tuning.pool)[-tuning.pool])
    # A margin for float32 rounding: a row at the bound is kept, never lost.
    return positive[values >= threshold / largest * 0.999]


def _inside(times: np.ndarray, start: float | None, end: float | None) -> np.ndarray:
    """1 inside the window, fading with the distance to it (scaled to the window's length)."""
    low = -math.inf if start is None else start
    high = math.inf if end is None else end
    scale = max(high - low, _DAY) if start is not None and end is not None else _OPEN_SCALE
    gap = np.maximum(low - times, 0.0) + np.maximum(times - high, 0.0)
    out = np.exp(-gap / scale)
    return np.where(np.isnan(times), 0.0, out)


def _window(
    tx: Tx,
    view: View,
    ring_ids: Sequence[str],
    intent: TimeIntent,
    tuning: Tuning,
) -> tuple[float | None, float | None, int | None]:
    """The window in POSIX seconds, and the event's memory (row number) when the window is an
    event's: bounded by the time of the memory that best matches its words (no match: no
    window, the query ranks as if it named no event)."""
    if not intent.event:
        start = None if intent.start is None else intent.start.timestamp()
        end = None if intent.end is None else intent.end.timestamp()
        return start, end, None
    best = Search(view, terms(intent.event), ring_ids, tuning).top(1)
    if not best:
        return None, None, None
    n = int(view.arrays["n"][next(iter(best))])
    found = occurred_by_n(tx, [n])
    if n not in found:
        return None, None, None
    at = found[n]
    return (None, at, n) if intent.event_side == "before" else (at, None, n)


__all__ = ["OCCURRED_AT", "TimeQuery", "occurred", "occurred_by_n", "time_stage"]
