"""The published ACX JSON Schemas (copied into ``schemas/``), loaded once, checked with jsonschema.

Spec: lboel/acx@85f1358 SPEC.md §13 (the consolidated schema index); docs/spec/acx.md §3.
"""

from __future__ import annotations

import json
from functools import cache
from importlib import resources

from jsonschema import Draft202012Validator

from engram.core.bounds import check_shape
from engram.errors import CartridgeFormatError


@cache
def validator(name: str) -> Draft202012Validator:
    text = (
        resources.files("engram.cartridge")
        .joinpath(f"schemas/{name}.schema.json")
        .read_text(encoding="utf-8")
    )
    return Draft202012Validator(json.loads(text))


def issues(name: str, document: object, where: str) -> list[str]:
    """Every way ``document`` breaks the published schema ``name`` (empty when it conforms)."""
    check_shape(document, where or name)
    found = sorted(validator(name).iter_errors(document), key=lambda e: list(e.absolute_path))
    return [
        f"{where}{''.join(f'[{p!r}]' for p in e.absolute_path)}: {e.message[:200]}"
        for e in found[:20]
    ]


def require(name: str, document: object, where: str) -> None:
    problems = issues(name, document, where)
    if problems:
        raise CartridgeFormatError("; ".join(problems[:5]))


__all__ = ["issues", "require", "validator"]
