"""Time as a parameter: a Clock protocol, and the protocol's one instant format.

Domain code never reads the wall clock; it is handed a :class:`Clock`. Instants on the wire are
RFC 3339 UTC with a ``Z`` suffix and whole seconds (``2026-01-01T10:00:00Z``), as in the spec's
minimal fixture. Parsing accepts fractional seconds and numeric offsets, and normalises to UTC.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Protocol

from engram.errors import InvalidRequest

_RFC3339 = re.compile(
    r"^(\d{4})-(\d{2})-(\d{2})[Tt](\d{2}):(\d{2}):(\d{2})(\.\d{1,9})?([Zz]|[+-]\d{2}:\d{2})$"
)


class Clock(Protocol):
    def now(self) -> datetime:
        """The current instant, timezone-aware, in UTC."""
        ...


class SystemClock:
    """The wall clock. Only adapters and the CLI construct one."""

    def now(self) -> datetime:
        return datetime.now(UTC)


@dataclass
class FixedClock:
    """A clock tests move by hand."""

    current: datetime = field(default_factory=lambda: datetime(2026, 1, 1, 10, 0, 0, tzinfo=UTC))

    def now(self) -> datetime:
        return self.current

    def advance(self, delta: timedelta) -> None:
        self.current = self.current + delta


def _utc(moment: datetime) -> datetime:
    if moment.tzinfo is None:
        raise ValueError("naive datetime: engram only handles timezone-aware instants")
    return moment if moment.tzinfo is UTC else moment.astimezone(UTC)


# Fields are formatted by hand rather than with strftime("%Y"), which glibc writes without
# zero padding for years before 1000 ("999-01-01"): RFC 3339 wants four digits, and the
# precise form must sort as text.


def format_instant(moment: datetime) -> str:
    """``2026-01-01T10:00:00Z`` (UTC, whole seconds; sub-second parts are dropped)."""
    m = _utc(moment)
    return f"{m.year:04d}-{m.month:02d}-{m.day:02d}T{m.hour:02d}:{m.minute:02d}:{m.second:02d}Z"


def format_instant_precise(moment: datetime) -> str:
    """``2026-01-01T10:00:00.123456Z``: for ordering keys such as diff cursors."""
    m = _utc(moment)
    return (
        f"{m.year:04d}-{m.month:02d}-{m.day:02d}T{m.hour:02d}:{m.minute:02d}:{m.second:02d}"
        f".{m.microsecond:06d}Z"
    )


def parse_instant(text: str) -> datetime:
    """Parse an RFC 3339 date-time into an aware UTC datetime; anything else is InvalidRequest."""
    if not isinstance(text, str) or not _RFC3339.match(text):
        raise InvalidRequest(f"not an RFC 3339 date-time: {text!r}")
    normalised = text.upper().replace("Z", "+00:00")
    match = _RFC3339.match(text)
    assert match is not None
    fraction = match.group(7)
    if fraction and len(fraction) > 7:
        # datetime.fromisoformat takes at most microseconds; keep them and drop the rest.
        normalised = normalised.replace(fraction, fraction[:7], 1)
    try:
        return datetime.fromisoformat(normalised).astimezone(UTC)
    except (ValueError, OverflowError) as e:
        # OverflowError: a valid RFC 3339 text whose UTC instant leaves datetime's range, such as
        # 0001-01-01T00:00:00+00:01 (a minute before year 1); schemathesis found it on /diff.
        raise InvalidRequest(f"not a valid date-time: {text!r}") from e


__all__ = [
    "Clock",
    "FixedClock",
    "SystemClock",
    "format_instant",
    "format_instant_precise",
    "parse_instant",
]
