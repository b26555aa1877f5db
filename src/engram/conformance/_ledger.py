"""The requirement ledger: one row per requirement, validated against ``requirements.schema.json``.

Spec: OpenWOP v2 Conformance §"Requirement ids" and §"Witness class"; our layout is in
docs/spec/ledger.md. The ledger is read either as one merged ``requirements.json``
(``{"requirements": [...]}``) or as the ``requirements/`` directory of per-area JSON lists.

An installed engram carries the ledger as package data (``engram/conformance/_data/``); a source
checkout reads the repository's files, so the runner and the tests see the same rows.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

import jsonschema

from engram.conformance import _wire as wire
from engram.core.canonical import JsonObject, parse_strict
from engram.errors import InvalidRequest

WITNESS_CLASSES = (
    "witnessable-unaided",
    "witnessable-gated",
    "seam-gated",
    "claims-check",
    "negative-existence",
    "unwitnessable",
)
LEDGER_FILE = "requirements.json"
LEDGER_DIR = "requirements"
SCHEMA_FILE = "requirements.schema.json"

# src/engram/conformance/_ledger.py -> the repository root of a source checkout.
_REPO_ROOT = Path(__file__).resolve().parents[3]


@dataclass(frozen=True)
class Requirement:
    """One ledger row."""

    id: str
    source: str
    section: str
    text: str
    level: str
    witness: str
    tier: int | None = None
    party: str | None = None
    rationale: str | None = None

    @classmethod
    def from_row(cls, row: JsonObject) -> Requirement:
        """A schema-checked row (:func:`validate_document`); a wrong shape raises InvalidRequest."""
        rid = wire.text(row.get("id"), "requirement id")
        where = f"requirement {rid}"
        tier = row.get("tier")
        return cls(
            id=rid,
            source=wire.text(row.get("source"), f"{where}: source"),
            section=wire.text(row.get("section"), f"{where}: section"),
            text=wire.text(row.get("text"), f"{where}: text"),
            level=wire.text(row.get("level"), f"{where}: level"),
            witness=wire.text(row.get("witness"), f"{where}: witness"),
            tier=None if tier is None else wire.integer(tier, f"{where}: tier"),
            party=wire.opt_text(row.get("party"), f"{where}: party"),
            rationale=wire.opt_text(row.get("rationale"), f"{where}: rationale"),
        )


@dataclass(frozen=True)
class Ledger:
    """The validated rows, in file order, with unique ids."""

    requirements: tuple[Requirement, ...]

    def __iter__(self) -> Iterator[Requirement]:
        return iter(self.requirements)

    def __len__(self) -> int:
        return len(self.requirements)

    def __contains__(self, requirement_id: object) -> bool:
        return any(r.id == requirement_id for r in self.requirements)

    @property
    def ids(self) -> frozenset[str]:
        return frozenset(r.id for r in self.requirements)

    def get(self, requirement_id: str) -> Requirement:
        for row in self.requirements:
            if row.id == requirement_id:
                return row
        raise InvalidRequest(f"requirement id not in the ledger: {requirement_id}")

    def select(self, *, party: str, max_tier: int = 3) -> tuple[Requirement, ...]:
        """Rows of one party (provider or runtime) up to ``max_tier``, ordered by tier then id."""
        rows = [
            r
            for r in self.requirements
            if r.party == party and r.tier is not None and r.tier <= max_tier
        ]
        return tuple(sorted(rows, key=lambda r: (r.tier or 0, r.id)))


def schema() -> JsonObject:
    """The ledger JSON Schema (package data when installed, the repository file otherwise)."""
    value = parse_strict(_data_path(SCHEMA_FILE).read_bytes())
    assert isinstance(value, dict)
    return value


def default_ledger_path() -> Path:
    """Where the ledger lives: package data, else the merged file, else the area directory."""
    packaged = _packaged(LEDGER_FILE)
    if packaged is not None:
        return packaged
    merged = _REPO_ROOT / LEDGER_FILE
    return merged if merged.is_file() else _REPO_ROOT / LEDGER_DIR


def load_ledger(path: str | Path | None = None) -> Ledger:
    """Read and validate a ledger: a merged ``requirements.json`` or a ``requirements/`` directory.

    Raises :class:`~engram.errors.InvalidRequest` naming the file and the offending ids when a
    row breaks the schema or an id appears twice.
    """
    where = Path(path) if path is not None else default_ledger_path()
    rows: list[JsonObject] = []
    if where.is_dir():
        files = sorted(where.glob("*.json"))
        if not files:
            raise InvalidRequest(f"no ledger files (*.json) in {where}")
        for file in files:
            rows.extend(_validated_rows(file))
    elif where.is_file():
        rows.extend(_validated_rows(where))
    else:
        raise InvalidRequest(f"no ledger at {where}")
    return Ledger(tuple(Requirement.from_row(row) for row in _unique(rows)))


def validate_document(document: object, origin: str = "<ledger>") -> list[JsonObject]:
    """Check one ledger document against the schema and return its rows.

    ``document`` is ``object``: parsed JSON or rows built in Python, the schema is the check."""
    full = schema()
    # Validate against the branch the document's shape selects, so errors name the row and
    # the member at fault instead of "not valid under any of the given schemas".
    branches = wire.arr(full.get("oneOf"), f"{SCHEMA_FILE}: oneOf")
    branch = wire.obj(branches[1 if isinstance(document, list) else 0], f"{SCHEMA_FILE}: oneOf[]")
    validator = jsonschema.Draft202012Validator({"$defs": full.get("$defs"), **branch})
    problems = sorted(validator.iter_errors(document), key=lambda e: list(e.absolute_path))
    if problems:
        lines = [_describe(document, e) for e in problems[:20]]
        raise InvalidRequest(f"{origin}: ledger does not match {SCHEMA_FILE}: " + "; ".join(lines))
    rows = document.get("requirements") if isinstance(document, dict) else document
    if not isinstance(rows, list):  # pragma: no cover - the schema requires an array
        raise InvalidRequest(f"{origin}: requirements is not an array")
    return [wire.obj(row, f"{origin}: requirements[{i}]") for i, row in enumerate(rows)]


def _validated_rows(file: Path) -> list[JsonObject]:
    return validate_document(parse_strict(file.read_bytes()), str(file))


def _describe(document: object, error: jsonschema.ValidationError) -> str:
    path = list(error.absolute_path)
    # Name the row by its id when the error sits inside a row, so the fix is obvious.
    rows = document.get("requirements") if isinstance(document, dict) else document
    index = path[1] if isinstance(document, dict) and len(path) > 1 else (path[0] if path else None)
    label = "document"
    if isinstance(index, int) and isinstance(rows, list) and index < len(rows):
        row = rows[index]
        label = str(row.get("id", f"row {index}")) if isinstance(row, dict) else f"row {index}"
    return f"{label}: {error.message}"


def _unique(rows: list[JsonObject]) -> list[JsonObject]:
    seen: set[str] = set()
    duplicates: list[str] = []
    for row in rows:
        rid = wire.text(row.get("id"), "requirement id")
        if rid in seen:
            duplicates.append(rid)
        seen.add(rid)
    if duplicates:
        raise InvalidRequest(f"duplicate requirement ids: {', '.join(sorted(set(duplicates)))}")
    return rows


def _packaged(name: str) -> Path | None:
    candidate = resources.files("engram.conformance").joinpath("_data", name)
    return Path(str(candidate)) if candidate.is_file() else None


def _data_path(name: str) -> Path:
    packaged = _packaged(name)
    return packaged if packaged is not None else _REPO_ROOT / name


__all__ = [
    "LEDGER_DIR",
    "LEDGER_FILE",
    "SCHEMA_FILE",
    "WITNESS_CLASSES",
    "Ledger",
    "Requirement",
    "default_ledger_path",
    "load_ledger",
    "schema",
    "validate_document",
]
