"""Read ``rom/policy/loop-context-policy.json``: strict I-JSON, a known schemaVersion, our schema.

SPEC §9.1 (lboel/acx@85f1358): one policy per cartridge, ``schemaVersion``
``acx.loop-context-policy/1``, "an unrecognized schemaVersion MUST be rejected"; §9.6 adds the
additive ``acx.loop-context-policy/1.1``. The published JSON Schema knows only ``/1`` and is
closed, so the reference's own v1.1 default fails it: engram ships a schema of its own for each
version (``_schemas/``; docs/spec/acx-policy.md §2 lists how they differ from the published one)
and dispatches on ``schemaVersion`` before validating. The rules no schema can say are in
:mod:`engram.policy._lint`.

Input is bytes (the ROM object's uncompressed bytes), so the ``.acx`` reader only has to hand
them over; the digest recorded here is the ``sha256:`` of exactly those bytes, the ``oid`` of a
``raw`` ROM object (SPEC §3.3).
"""

from __future__ import annotations

import copy
import hashlib
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cache
from importlib import resources
from typing import Any

from jsonschema import Draft202012Validator

from engram.core.bounds import check_shape
from engram.core.canonical import Json, JsonObject, parse_strict
from engram.errors import CanonicalJsonError
from engram.policy._errors import PolicyError, Problem
from engram.policy._lint import semantic_problems, vendor_problems

POLICY_PATH = "rom/policy/loop-context-policy.json"
MEDIA_TYPE = "application/vnd.acx.loop-context-policy.v1+json"
V1 = "acx.loop-context-policy/1"
V1_1 = "acx.loop-context-policy/1.1"
SCHEMA_VERSIONS = (V1, V1_1)
MAX_POLICY_BYTES = 1 << 20
"""A policy is a few kilobytes; a megabyte bounds what a hostile cartridge can make us parse."""

_SCHEMA_FILES = {
    V1: "loop-context-policy-1.schema.json",
    V1_1: "loop-context-policy-1.1.schema.json",
}


@dataclass(frozen=True)
class LoopContextPolicy:
    """A validated policy. The signed bytes are kept; the document is handed out as copies.

    Hosts MUST NOT mutate the ROM policy (SPEC §9.1): nothing here can be changed in place, and
    :meth:`document` returns a fresh deep copy each time, so a caller's edits never reach it.
    """

    raw: bytes = field(repr=False)
    digest: str
    schema_version: str
    _document: JsonObject = field(repr=False, compare=False)

    def document(self) -> JsonObject:
        return copy.deepcopy(self._document)

    def get(self, *path: str) -> Any:  # Any: the policy is Accepted (see there)
        """The value at ``path`` (keys), or None; a deep copy, never the policy's own object."""
        node: Json = self._document
        for key in path:
            if not isinstance(node, dict) or key not in node:
                return None
            node = node[key]
        return copy.deepcopy(node)


def schema_for(schema_version: str) -> JsonObject:
    """engram's JSON Schema for ``schema_version`` (a copy)."""
    return copy.deepcopy(_schema(schema_version))


@cache
def _schema(schema_version: str) -> JsonObject:
    name = _SCHEMA_FILES[schema_version]
    text = resources.files("engram.policy").joinpath("_schemas", name).read_bytes()
    value: Json = parse_strict(text)
    assert isinstance(value, dict)
    Draft202012Validator.check_schema(value)
    return value


@cache
def _validator(schema_version: str) -> Draft202012Validator:
    return Draft202012Validator(_schema(schema_version))


def load_policy(data: bytes, *, what: str = POLICY_PATH) -> LoopContextPolicy:
    """Parse and validate a loop-context policy; :class:`PolicyError` lists every problem.

    Order: size and strict I-JSON (RFC 7493: no duplicate members, lone surrogates, huge
    integers), a JSON object, a recognised ``schemaVersion`` (anything else is refused, SPEC
    §9.1), the version's schema, then the semantic rules. Vendor specifics outside ``hints`` are
    reported under their own rule even where the closed schema would refuse the key anyway, so
    the message says why.
    """
    if not isinstance(data, bytes | bytearray | memoryview):
        raise PolicyError(what, [Problem("engram.policy.strict-json", "$", "a policy is bytes")])
    raw = bytes(data)
    if len(raw) > MAX_POLICY_BYTES:
        raise PolicyError(
            what,
            [Problem("engram.policy.strict-json", "$", f"{len(raw)} bytes > {MAX_POLICY_BYTES}")],
        )
    try:
        value: Json = parse_strict(raw)
    except CanonicalJsonError as e:
        raise PolicyError(what, [Problem("engram.policy.strict-json", "$", e.message)]) from e
    if not isinstance(value, dict):
        raise PolicyError(
            what, [Problem("engram.policy.strict-json", "$", "a policy is a JSON object")]
        )
    version = value.get("schemaVersion")
    if version not in SCHEMA_VERSIONS:
        known = " or ".join(SCHEMA_VERSIONS)
        raise PolicyError(
            what,
            [
                Problem(
                    "engram.policy.schema-version",
                    "$.schemaVersion",
                    f"unrecognized schemaVersion {version!r}: this host reads {known}",
                )
            ],
        )
    problems = vendor_problems(value)
    problems += _schema_problems(value, version)
    if not problems:
        problems = semantic_problems(value)
    if problems:
        raise PolicyError(what, problems)
    return LoopContextPolicy(
        raw=raw,
        digest="sha256:" + hashlib.sha256(raw).hexdigest(),
        schema_version=version,
        _document=value,
    )


def validate_policy_document(document: Mapping[str, Json]) -> list[Problem]:
    """The problems of an already-parsed document (empty when it is a valid policy)."""
    version = document.get("schemaVersion")
    if version not in SCHEMA_VERSIONS:
        return [
            Problem(
                "engram.policy.schema-version",
                "$.schemaVersion",
                f"unrecognized schemaVersion {version!r}",
            )
        ]
    value = dict(document)
    problems = vendor_problems(value) + _schema_problems(value, version)
    return problems or semantic_problems(value)


def _schema_problems(value: JsonObject, version: str) -> list[Problem]:
    check_shape(value, "the policy")
    errors = sorted(_validator(version).iter_errors(value), key=lambda e: (e.json_path, e.message))
    return [Problem("engram.policy.schema", e.json_path, e.message) for e in errors]


__all__ = [
    "MAX_POLICY_BYTES",
    "MEDIA_TYPE",
    "POLICY_PATH",
    "SCHEMA_VERSIONS",
    "V1",
    "V1_1",
    "LoopContextPolicy",
    "load_policy",
    "schema_for",
    "validate_policy_document",
]
