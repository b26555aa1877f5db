"""JSON text for people and for wire bodies that nobody signs.

Signed or hashed bytes come only from :func:`engram.core.canonical.canonicalize`. Everything
else that writes JSON - CLI ``--json`` output, HTTP response bodies, config files - comes through
:func:`dumps_text`, so the one ``json.dumps`` call outside the canonicaliser lives here where a
reviewer can see it, and the project-wide ruff ban (TID251) keeps it from spreading.
"""

from __future__ import annotations

import json

from engram.errors import CanonicalJsonError


def dumps_text(value: object, *, indent: int | None = None, sort_keys: bool = True) -> str:
    """JSON text of ``value``: compact when ``indent`` is None, else pretty with that indent.

    Non-ASCII characters are written as themselves (the text is meant to be UTF-8 encoded).
    ``NaN``/``Infinity`` and non-JSON Python values raise
    :class:`~engram.errors.CanonicalJsonError` instead of producing text other parsers refuse.
    Never sign or hash the result: use ``canonicalize`` for that.
    """
    separators = (",", ":") if indent is None else (",", ": ")
    try:
        # The one sanctioned json.dumps: output is for humans and unsigned wire bodies only.
        return json.dumps(  # noqa: TID251
            value,
            indent=indent,
            sort_keys=sort_keys,
            separators=separators,
            ensure_ascii=False,
            allow_nan=False,
        )
    except ValueError as e:
        # json says "Out of range float values ..." for NaN/Infinity, "Circular reference ..."
        reason = "non_finite_number" if "float" in str(e) else "not_json"
        raise CanonicalJsonError(reason, "$", str(e)) from e
    except TypeError as e:
        raise CanonicalJsonError("not_json", "$", str(e)) from e


__all__ = ["dumps_text"]
