"""Reading an ACX JSON artifact: bounded, strict I-JSON, then its published JSON Schema.

Spec: lboel/acx@85f1358 SPEC.md §2.1 (JSON Schema Draft 2020-12, RFC 8785), §14 and §16; the
schemas ``cal.schema.json`` and ``agent-graph.schema.json`` ship inside engram unchanged.
docs/spec/acx-workflows.md §"Reading a document".

A workflow or Agent Graph is parsed by ``engram.core.canonical.parse_strict`` (duplicate members,
lone surrogates, non-finite numbers and integers beyond 2^53-1 are refused: the digest is the JCS
of what was parsed, and two parsers must agree on what that is), refused beyond
:data:`MAX_DOCUMENT_BYTES` before parsing, and then validated against its schema with
``jsonschema``'s Draft 2020-12 validator. Formats (``uri``, ``date-time``) are checked by
engram's own rules, not by optional jsonschema plug-ins, so the verdict does not depend on
which extras happen to be installed.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import cache
from importlib import resources

import jsonschema
from jsonschema.exceptions import ValidationError, best_match

from engram.core.bounds import check_shape
from engram.core.canonical import Json, JsonObject, parse_object, parse_strict
from engram.errors import InputError
from engram.workflow._issues import Issue, member_path

MAX_DOCUMENT_BYTES = 4 * 1024 * 1024
"""A workflow or graph larger than this is refused unread (the reference's are about 15 KB)."""

_MAX_SCHEMA_ISSUES = 50


class DocumentError(InputError):
    """A file is not a JSON object engram can read as an ACX workflow or Agent Graph."""

    code = "invalid_document"


def load_document(data: bytes, *, what: str) -> JsonObject:
    """Parse ``data`` as one strict I-JSON object, or raise :class:`DocumentError`."""
    if len(data) > MAX_DOCUMENT_BYTES:
        raise DocumentError(f"{what} is {len(data)} bytes; the limit is {MAX_DOCUMENT_BYTES}")
    return parse_object(data, what=what, error=DocumentError)


@cache
def packaged_schema(package: str, name: str) -> JsonObject:
    """A schema shipped in ``package``'s ``schemas/`` folder, parsed strictly, cached."""
    text = resources.files(package).joinpath("schemas", name).read_bytes()
    schema: Json = parse_strict(text)
    assert isinstance(schema, dict)
    return schema


@cache
def _validator(package: str, name: str) -> jsonschema.Draft202012Validator:
    schema = packaged_schema(package, name)
    jsonschema.Draft202012Validator.check_schema(schema)
    return jsonschema.Draft202012Validator(schema)


Classifier = Callable[[ValidationError], str | None]
"""Names a more specific rule for a schema violation (``content`` on a knowledge module is the
metadata-only rule, not just "an unknown property"), or None for the schema rule itself."""


def schema_issues(
    document: Json,
    *,
    package: str,
    schema: str,
    rule: str,
    classify: Classifier | None = None,
) -> list[Issue]:
    """One issue per schema violation, most specific cause first, at most 50."""
    check_shape(document, "the document")
    validator = _validator(package, schema)
    issues: list[Issue] = []
    errors = sorted(validator.iter_errors(document), key=lambda e: list(e.absolute_path))
    for error in errors[:_MAX_SCHEMA_ISSUES]:
        cause = best_match(error.context) if error.context else error
        cause = cause or error
        named = classify(cause) if classify is not None else None
        issues.append(Issue(named or rule, _path(cause), _message(cause)))
    if len(errors) > _MAX_SCHEMA_ISSUES:
        more = len(errors) - _MAX_SCHEMA_ISSUES
        issues.append(Issue(rule, "$", f"and {more} more schema violation(s)"))
    return issues


def _path(error: ValidationError) -> str:
    return member_path("$", *[p for p in error.absolute_path if isinstance(p, str | int)])


def _message(error: ValidationError) -> str:
    text = error.message
    # jsonschema quotes the whole offending instance; a 2 KB description makes that unreadable.
    return text if len(text) <= 240 else text[:237] + "..."


def unexpected_members(error: ValidationError) -> list[str]:
    """The member names an ``additionalProperties: false`` violation is about (else none)."""
    if error.validator != "additionalProperties" or not isinstance(error.instance, dict):
        return []
    allowed = set(error.schema.get("properties", {})) if isinstance(error.schema, dict) else set()
    return [k for k in error.instance if k not in allowed]


__all__ = [
    "MAX_DOCUMENT_BYTES",
    "Classifier",
    "DocumentError",
    "load_document",
    "packaged_schema",
    "schema_issues",
    "unexpected_members",
]
