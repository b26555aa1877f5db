"""The closed package spec (``acx.package-spec/1``) and the pinned LanceDB memory schema (§7.7).

Spec: lboel/acx@85f1358 SPEC.md §7.6-§7.7 and §12 item 9; the published
``package-spec.schema.json`` and ``lance-memory.schema.json``; docs/spec/acx.md §11.

:func:`build_package_spec` writes the eight fixed role profiles with live counts;
:func:`spec_report` is ``engram cartridge spec``: it checks that the package spec matches the
closed profile exactly and the signed cartridge metadata (id, spec version, ``{id, dim}``
engine), that every required artifact is present, that every memory record and capability
conforms, that the harness manifest and the loop-context policy declare a known version, and
that the LanceDB descriptor is the normative 14-column table for the cartridge's engine.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from engram.cartridge._harness import HARNESS_FILE, harness_problems
from engram.cartridge._record_tables import RECORD_TABLES
from engram.cartridge._records import array, record_problems
from engram.cartridge._rom import Rom
from engram.cartridge._schemas import issues
from engram.cartridge._skills import budget_problems, derive_skills
from engram.core.canonical import Json, JsonObject, parse_strict
from engram.errors import CanonicalJsonError, CartridgeFormatError

PACKAGE_SPEC_FILE = "rom/package-spec.json"
LANCE_SCHEMA_FILE = "rom/schema/lance-memory.json"
LOOP_POLICY_FILE = "rom/policy/loop-context-policy.json"
LOOP_VERSIONS = ("acx.loop-context-policy/1", "acx.loop-context-policy/1.1")
SPEC_VERSION = "0.1"
REQUIRED_META = (
    "acx.spec_version",
    "acx.cartridge_id",
    "acx.artifact_id",
    "acx.artifact_version",
    "acx.created_at",
    "acx.embedding_engine",
    "acx.publisher_id",
)
"""Meta keys every cartridge carries, signed (§3.2 required keys; the reference adds publisher)."""

LANCE_COLUMNS: tuple[JsonObject, ...] = (
    {"name": "id", "type": "utf8", "nullable": False},
    {"name": "zone", "type": "utf8", "nullable": False, "enum": ["rom", "save"]},
    {"name": "portable", "type": "bool", "nullable": False},
    {"name": "artifact_fingerprint", "type": "utf8", "nullable": False},
    {"name": "codebase_fingerprint", "type": "utf8", "nullable": True},
    {"name": "title", "type": "utf8", "nullable": False},
    {"name": "summary", "type": "utf8", "nullable": False},
    {"name": "source_type", "type": "utf8", "nullable": False},
    {"name": "tags", "type": "list<utf8>", "nullable": False},
    {
        "name": "impact",
        "type": "utf8",
        "nullable": False,
        "enum": ["positive", "neutral", "negative"],
    },
    {"name": "xp_awarded", "type": "int32", "nullable": False},
    {"name": "timestamp", "type": "utf8", "nullable": False},
    {"name": "text", "type": "utf8", "nullable": False},
    {"name": "vector", "type": "fixed_size_list<float32, {dim}>", "nullable": False},
)
"""The normative ``memories`` columns of ``acx.lance-memory/1``, in order."""


def lance_schema(engine: JsonObject) -> JsonObject:
    dim = engine["dim"]
    columns = [{**c, "type": str(c["type"]).replace("{dim}", str(dim))} for c in LANCE_COLUMNS]
    return {
        "schemaVersion": "acx.lance-memory/1",
        "format": "lancedb",
        "table": "memories",
        "partitionBy": "zone",
        "distanceMetric": "cosine",
        "embeddingEngine": {"id": engine["id"], "dim": dim},
        "textTemplate": 'title + "\\n\\n" + summary',
        "columns": list[Json](columns),
    }


def _same_table(got: JsonObject, want: JsonObject) -> bool:
    """Same engine and the same columns (name, type, nullability) in the same order."""

    def columns(doc: JsonObject) -> list[tuple[object, object, object]]:
        cols = doc.get("columns")
        if not isinstance(cols, list):
            return []
        return [
            (c.get("name"), c.get("type"), c.get("nullable")) for c in cols if isinstance(c, dict)
        ]

    return got.get("embeddingEngine") == want["embeddingEngine"] and columns(got) == columns(want)


def build_package_spec(
    *,
    cartridge_id: str,
    engine: JsonObject,
    memories: int,
    skills: int,
    table_counts: Mapping[str, int],
    levels: int = 0,
) -> JsonObject:
    """The package spec; ``table_counts`` is each record table's row count, by its prefix."""
    return {
        "schemaVersion": "acx.package-spec/1",
        "cartridgeId": cartridge_id,
        "specVersion": SPEC_VERSION,
        "embeddingEngine": {"id": engine["id"], "dim": engine["dim"]},
        "artifacts": [
            {
                "role": "identity",
                "kind": "meta",
                "schema": "acx.cartridge-meta/1",
                "required": True,
            },
            {
                "role": "memory-baseline",
                "kind": "table",
                "table": "memory",
                "mediaType": "application/json",
                "schema": "acx.memory-record.v1",
                "required": True,
                "count": memories,
            },
            {
                "role": "memory-vectors",
                "kind": "lance",
                "path": "vectors/memories.lance",
                "schema": "acx.lance-memory/1",
                "required": False,
                "signed": False,
                "reindexOnImport": True,
                "descriptor": LANCE_SCHEMA_FILE,
            },
            {
                "role": "skills",
                "kind": "sqlar",
                "path": "rom/skills/",
                "schema": "acx.skill/1",
                "required": False,
                "count": skills,
            },
            *(t.package_artifact(table_counts.get(t.prefix, 0)) for t in RECORD_TABLES),
            {
                "role": "harness",
                "kind": "sqlar",
                "path": HARNESS_FILE,
                "schema": "acx.harness.v1",
                "required": True,
            },
            {
                "role": "loop-context",
                "kind": "sqlar",
                "path": LOOP_POLICY_FILE,
                "schema": "acx.loop-context-policy/1.1",
                "required": True,
            },
            {
                "role": "level",
                "kind": "attestation",
                "schema": "acx.level-credential.v1",
                "required": False,
                "count": levels,
            },
        ],
    }


def default_loop_policy(engine_id: str) -> JsonObject:
    """A minimal loop + context policy (item 12 owns its evaluation): v1 fields only, labelled
    1.1 as the package spec's fixed role requires (1.1 is additive over 1)."""
    return {
        "schemaVersion": "acx.loop-context-policy/1.1",
        "loop": {
            "maxTurns": 40,
            "cycle": ["gather_context", "act", "verify"],
            "verification": {
                "passIntent": "lint, types and touched tests green",
                "maxAttempts": 3,
                "scope": "touched",
                "blockOnFailure": True,
            },
            "stopConditions": [
                {"when": "completed", "action": "stop"},
                {"when": "blocked", "action": "handoff"},
                {"when": "max_turns", "action": "handoff"},
                {"when": "needs_input", "action": "await_human"},
            ],
            "handoff": {
                "emits": "OperatorCommandReport",
                "returnWindows": ["blocker", "pr_ready", "ambiguity"],
            },
        },
        "context": {"retrieval": "just_in_time", "embeddingEngineId": engine_id},
        "guardrailContract": {
            "signalKinds": ["milestone", "checkpoint", "question", "blocked", "stop"],
            "outcomeReport": "OperatorCommandReport",
        },
        "hints": {},
    }


def engine_of(meta: dict[str, str]) -> JsonObject:
    text = meta.get("acx.embedding_engine")
    try:
        engine = parse_strict(text or "")
    except CanonicalJsonError as e:
        raise CartridgeFormatError(f"acx.embedding_engine is not JSON: {e.message}") from e
    if (
        not isinstance(engine, dict)
        or set(engine) != {"id", "dim"}
        or not isinstance(engine["id"], str)
        or not isinstance(engine["dim"], int)
        or isinstance(engine["dim"], bool)
        or not 1 <= engine["dim"] <= 65536
    ):
        raise CartridgeFormatError("acx.embedding_engine must be exactly {id, dim}")
    return engine


@dataclass
class SpecReport:
    spec: JsonObject | None
    counts: dict[str, int]
    issues: list[str] = field(default_factory=list)

    @property
    def clean(self) -> bool:
        return not self.issues

    def to_wire(self) -> JsonObject:
        return {
            "clean": self.clean,
            "packageSpec": self.spec,
            "counts": dict[str, Json](self.counts),
            "issues": list[Json](self.issues),
        }


def spec_report(rom: Rom, *, level_count: int = 0) -> SpecReport:
    """Everything ``engram cartridge spec`` checks, as a list of issues (empty: CLEAN)."""
    found: list[str] = []
    meta = rom.signed_meta
    try:
        engine: JsonObject | None = engine_of(meta)
    except CartridgeFormatError as e:
        engine = None
        found.append(e.message)
    for key in REQUIRED_META:
        if key not in meta:
            found.append(f"cartridge meta {key} is missing or not signed")
    try:
        skills = derive_skills(rom.files)
    except CartridgeFormatError as e:
        skills = []
        found.append(e.message)
    for skill in skills:
        found.extend(budget_problems(skill))
    counts = {
        "memory": len(rom.memories),
        "skills": len(skills),
        **{t.role: len(rom.records[t.prefix]) for t in RECORD_TABLES},
        "level": level_count,
    }
    spec: JsonObject | None = None
    try:
        spec = rom.json_file(PACKAGE_SPEC_FILE)
    except CartridgeFormatError as e:
        found.append(e.message)
    if spec is None:
        found.append(f"{PACKAGE_SPEC_FILE} is missing (a required ROM artifact)")
    else:
        found.extend(issues("package-spec", spec, PACKAGE_SPEC_FILE))
        if spec.get("cartridgeId") != meta.get("acx.cartridge_id"):
            found.append(f"{PACKAGE_SPEC_FILE}: cartridgeId does not match acx.cartridge_id")
        if spec.get("specVersion") != meta.get("acx.spec_version"):
            found.append(f"{PACKAGE_SPEC_FILE}: specVersion does not match acx.spec_version")
        if engine is not None and spec.get("embeddingEngine") != engine:
            found.append(
                f"{PACKAGE_SPEC_FILE}: embeddingEngine does not match acx.embedding_engine"
            )
        declared = {
            a.get("role"): a.get("count")
            for a in array(spec.get("artifacts"))
            if isinstance(a, dict)
        }
        for role in ("skills", *(t.role for t in RECORD_TABLES)):
            live = counts[role]
            if declared.get(role) != live:
                found.append(
                    f"{PACKAGE_SPEC_FILE}: {role} count {declared.get(role)} is not the live {live}"
                )
    for required in (HARNESS_FILE, LOOP_POLICY_FILE, LANCE_SCHEMA_FILE):
        if required not in rom.files:
            found.append(f"required artifact {required} is missing")
    try:
        harness = rom.json_file(HARNESS_FILE)
        if harness is not None:
            found.extend(harness_problems(harness))
        policy = rom.json_file(LOOP_POLICY_FILE)
        if policy is not None and policy.get("schemaVersion") not in LOOP_VERSIONS:
            found.append(
                f"{LOOP_POLICY_FILE}: unrecognised schemaVersion {policy.get('schemaVersion')!r}"
            )
        lance = rom.json_file(LANCE_SCHEMA_FILE)
        if lance is not None:
            found.extend(issues("lance-memory", lance, LANCE_SCHEMA_FILE))
            if engine is not None and not _same_table(lance, lance_schema(engine)):
                found.append(
                    f"{LANCE_SCHEMA_FILE} is not the normative 14-column table for {engine}"
                )
    except CartridgeFormatError as e:
        found.append(e.message)
    for row in rom.memories.values():
        try:
            found.extend(record_problems(row.record(), f"memory:{row.id}"))
        except CartridgeFormatError as e:
            found.append(e.message)
    orphans = sorted(rom.vector_ids - set(rom.memories))
    if orphans:
        found.append(
            f"vectors rows {orphans[:5]} have no memory baseline row (§7.6: a bundle with vectors "
            "but no JSON baseline is invalid)"
        )
    field_learned = {row.artifact_fingerprint for row in rom.memories.values() if row.zone != "rom"}
    for table in RECORD_TABLES:
        for rid, text in rom.records[table.prefix].items():
            where = table.ref(rid)
            try:
                record = parse_strict(text)
            except CanonicalJsonError as e:
                found.append(f"{where}: {e.message}")
                continue
            if not isinstance(record, dict):
                found.append(f"{where} is not an object")
                continue
            found.extend(table.problems(record, where, field_learned))
    return SpecReport(spec, counts, found)


__all__ = [
    "LANCE_COLUMNS",
    "LANCE_SCHEMA_FILE",
    "LOOP_POLICY_FILE",
    "LOOP_VERSIONS",
    "PACKAGE_SPEC_FILE",
    "SPEC_VERSION",
    "SpecReport",
    "build_package_spec",
    "default_loop_policy",
    "engine_of",
    "lance_schema",
    "spec_report",
]
