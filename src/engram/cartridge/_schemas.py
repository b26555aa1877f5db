"""The published ACX JSON Schemas (copied into ``schemas/``), loaded once, checked with jsonschema.

Spec: lboel/acx@85f1358 SPEC.md §13 (the consolidated schema index); docs/spec/acx.md §3.

A document is first asked of the schema's compiled predicate
(``engram.core.schema_predicate``: a yes is the validator's yes, at a fraction of the cost,
which is what a cartridge of 100,000 records needs); only a document it refuses, or a schema it
cannot compile, goes to ``jsonschema``, which decides and gives every message. ``jsonschema``
is imported on that first use, so a run that meets only conforming documents does not pay for
loading it.
"""

from __future__ import annotations

import json
from functools import cache
from importlib import resources
from typing import TYPE_CHECKING, Any

from engram.core.bounds import check_shape
from engram.core.schema_predicate import Predicate, compile_predicate
from engram.errors import CartridgeFormatError

if TYPE_CHECKING:
    from jsonschema import Draft202012Validator


@cache
def schema_document(name: str) -> Any:
    text = (
        resources.files("engram.cartridge")
        .joinpath(f"schemas/{name}.schema.json")
        .read_text(encoding="utf-8")
    )
    return json.loads(text)


@cache
def validator(name: str) -> Draft202012Validator:
    from jsonschema import Draft202012Validator

    return Draft202012Validator(schema_document(name))


@cache
def conforms(name: str) -> Predicate | None:
    """The compiled yes/no of schema ``name``, or ``None`` when only jsonschema can judge it."""
    return compile_predicate(schema_document(name))


def issues(name: str, document: object, where: str) -> list[str]:
    """Every way ``document`` breaks the published schema ``name`` (empty when it conforms)."""
    check_shape(document, where or name)  # bounded before any recursive step (issue 31)
    fast = conforms(name)
    if fast is not None and fast(document):
        return []
    found = sorted(validator(name).iter_errors(document), key=lambda e: list(e.absolute_path))
    return [
        f"{where}{''.join(f'[{p!r}]' for p in e.absolute_path)}: {e.message[:200]}"
        for e in found[:20]
    ]


def require(name: str, document: object, where: str) -> None:
    problems = issues(name, document, where)
    if problems:
        raise CartridgeFormatError("; ".join(problems[:5]))


__all__ = ["conforms", "issues", "require", "schema_document", "validator"]
