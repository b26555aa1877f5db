"""Input checks shared by the context domain functions (limits in ``docs/spec/context-model.md``).

Every refusal is an :class:`~engram.errors.InvalidRequest` naming the field, so the CLI prints it
and the provider answers ``400 invalid_request`` without touching the store.
"""

from __future__ import annotations

import math
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from engram.errors import InvalidRequest

MAX_DISPLAY_NAME = 200
MAX_STATEMENT = 2000
MAX_ID = 200
MAX_SOURCE = 100


def text(field: str, value: object, limit: int) -> str:
    """A non-empty string of at most ``limit`` characters without control characters."""
    if not isinstance(value, str):
        raise InvalidRequest(f"{field} must be a string")
    stripped = value.strip()
    if not stripped:
        raise InvalidRequest(f"{field} must not be empty")
    if len(stripped) > limit:
        raise InvalidRequest(f"{field} is longer than {limit} characters")
    if any(ord(ch) < 32 and ch not in "\t" for ch in stripped):
        raise InvalidRequest(f"{field} must not contain control characters or line breaks")
    return stripped


def timezone(value: object) -> str:
    """An IANA time zone name known to this machine (``UTC``, ``Europe/Paris``...)."""
    name = text("timezone", value, 64)
    try:
        ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError) as e:
        raise InvalidRequest(f"unknown IANA time zone {name!r}") from e
    return name


def check_confidence(value: object) -> float:
    """``value`` as a float in [0, 1], or InvalidRequest (untrusted input: any JSON value)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise InvalidRequest("confidence must be a number between 0 and 1")
    number = float(value)
    if not math.isfinite(number) or not 0.0 <= number <= 1.0:
        raise InvalidRequest("confidence must be a number between 0 and 1")
    return number


__all__ = [
    "MAX_DISPLAY_NAME",
    "MAX_ID",
    "MAX_SOURCE",
    "MAX_STATEMENT",
    "check_confidence",
    "text",
    "timezone",
]
