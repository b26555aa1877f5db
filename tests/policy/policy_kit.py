"""Vectors and small builders for the loop-context policy tests (no engram imports here)."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

VECTORS = Path(__file__).resolve().parent.parent / "vectors" / "acx-reference" / "policy"
REFERENCE_V1_1 = VECTORS / "ada-ridge-1.0.0.loop-context-policy.json"
DOCS_V1 = VECTORS / "docs-example-v1.loop-context-policy.json"
PUBLISHED_SCHEMA = (
    VECTORS.parent.parent / "acx-spec" / "schemas" / "loop-policy-context-policy.schema.json"
)


def reference() -> dict[str, Any]:
    value: dict[str, Any] = json.loads(REFERENCE_V1_1.read_bytes())
    return value


def docs_v1() -> dict[str, Any]:
    value: dict[str, Any] = json.loads(DOCS_V1.read_bytes())
    return value


def to_bytes(document: Any) -> bytes:
    # A test peer writes its own JSON: plain json with sorted keys, not engram's canonicaliser.
    return json.dumps(document, sort_keys=True).encode("utf-8")  # noqa: TID251


def edited(document: dict[str, Any], path: str, value: Any) -> dict[str, Any]:
    """A deep copy with ``value`` set at a dotted path (list indexes as digits)."""
    out = copy.deepcopy(document)
    node: Any = out
    keys = path.split(".")
    for key in keys[:-1]:
        node = node[int(key)] if isinstance(node, list) else node.setdefault(key, {})
    last = keys[-1]
    if isinstance(node, list):
        node[int(last)] = value
    else:
        node[last] = value
    return out
