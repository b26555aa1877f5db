"""engram.core.clock: the one instant format (RFC 3339 UTC, ``Z``), whole-second and precise.

Years before 1000 are written with four digits (glibc's ``strftime("%Y")`` would write ``999``),
so every formatted instant is valid RFC 3339 and the precise form still sorts as text.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

import pytest

from engram.core.clock import format_instant, format_instant_precise, parse_instant
from engram.errors import InvalidRequest


@pytest.mark.parametrize(
    ("moment", "whole", "precise"),
    [
        (
            datetime(2026, 1, 1, 10, 0, 0, tzinfo=UTC),
            "2026-01-01T10:00:00Z",
            "2026-01-01T10:00:00.000000Z",
        ),
        (
            datetime(999, 12, 31, 23, 59, 59, 999999, tzinfo=UTC),
            "0999-12-31T23:59:59Z",
            "0999-12-31T23:59:59.999999Z",
        ),
        (datetime(1, 1, 1, tzinfo=UTC), "0001-01-01T00:00:00Z", "0001-01-01T00:00:00.000000Z"),
        (
            datetime(2026, 1, 1, 23, 30, 0, 5, tzinfo=timezone(timedelta(hours=-2))),
            "2026-01-02T01:30:00Z",
            "2026-01-02T01:30:00.000005Z",
        ),
    ],
)
def test_instants_are_four_digit_year_utc_and_round_trip(
    moment: datetime, whole: str, precise: str
) -> None:
    assert format_instant(moment) == whole
    assert format_instant_precise(moment) == precise
    assert parse_instant(precise) == moment
    assert parse_instant(whole) == moment.replace(microsecond=0)


def test_precise_instants_sort_as_text_across_the_year_1000() -> None:
    moments = [
        datetime(2026, 1, 1, tzinfo=UTC),
        datetime(999, 6, 1, tzinfo=UTC),
        datetime(1000, 1, 1, tzinfo=UTC),
        datetime(99, 1, 1, tzinfo=UTC),
    ]
    texts = [format_instant_precise(m) for m in moments]
    assert sorted(texts) == [format_instant_precise(m) for m in sorted(moments)]


def test_a_naive_datetime_is_refused_and_a_malformed_text_is_invalid_request() -> None:
    with pytest.raises(ValueError, match="naive"):
        format_instant(datetime(2026, 1, 1))
    with pytest.raises(ValueError, match="naive"):
        format_instant_precise(datetime(2026, 1, 1))
    with pytest.raises(InvalidRequest):
        parse_instant("999-01-01T00:00:00Z")


@pytest.mark.parametrize("text", ["0001-01-01T00:00:00+00:01", "9999-12-31T23:59:59-00:01"])
def test_an_instant_outside_datetimes_range_is_invalid_request_not_a_crash(text: str) -> None:
    # Well-formed RFC 3339 whose UTC instant is before year 1 or after 9999: found by schemathesis
    # as a 500 on GET /v1/context/diff?since=...
    with pytest.raises(InvalidRequest, match="not a valid date-time"):
        parse_instant(text)
