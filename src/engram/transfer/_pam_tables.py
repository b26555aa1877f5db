"""What engram keeps of PAM documents beside its memories: the owner, every PAM memory object
ever imported (retracted ones included, never deleted), relations, conversations and the log
of exports and imports that incremental documents refer to.

Spec: Portable AI Memory (PAM) Specification v1.0 §16.3 (an importer matches ``base_export_id``
to an export it knows; "MUST NOT physically delete memories marked as retracted"), §6 (owner).
engram's memories are content addressed and immutable, so a PAM memory's fields that engram's
memory model has no place for (summary, tags, access, validity, the PAM id and status, the
source's confidence) live here, keyed by the PAM id, next to the engram memory that serves it.
Decisions: docs/spec/pam.md. Runs unchanged on SQLite and PostgreSQL.
"""

# ruff: noqa: S608 - SQL text interpolates only "?" placeholder lists

from __future__ import annotations

from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass

from engram.core.canonical import Json, JsonObject, parse_strict
from engram.core.jsonio import dumps_text
from engram.store import Component, Dialect, Migration, Row, Store, Tx, rows_where_in
from engram.transfer import _wire as wire


def _v1(dialect: Dialect) -> Sequence[str]:  # noqa: ARG001 - portable DDL
    return [
        """CREATE TABLE pam_owner (
            id INTEGER PRIMARY KEY,
            owner_id TEXT NOT NULL,
            owner TEXT NOT NULL,
            recorded_at TEXT NOT NULL
        )""",
        """CREATE TABLE pam_memories (
            pam_id TEXT PRIMARY KEY,
            memory_id TEXT,
            ring TEXT NOT NULL,
            ring_id TEXT NOT NULL,
            status TEXT NOT NULL,
            object TEXT NOT NULL,
            decisions TEXT NOT NULL,
            owner_id TEXT NOT NULL,
            export_id TEXT,
            changed_at TEXT NOT NULL
        )""",
        "CREATE INDEX pam_memories_memory ON pam_memories (memory_id)",
        "CREATE INDEX pam_memories_ring ON pam_memories (ring_id)",
        """CREATE TABLE pam_relations (
            id TEXT PRIMARY KEY,
            object TEXT NOT NULL,
            changed_at TEXT NOT NULL
        )""",
        """CREATE TABLE pam_conversations (
            id TEXT PRIMARY KEY,
            object TEXT NOT NULL,
            changed_at TEXT NOT NULL
        )""",
        """CREATE TABLE pam_exports (
            export_id TEXT PRIMARY KEY,
            direction TEXT NOT NULL,
            export_type TEXT NOT NULL,
            export_date TEXT NOT NULL,
            since TEXT,
            base_export_id TEXT,
            owner_id TEXT NOT NULL,
            checksum TEXT,
            signer TEXT,
            recorded_at TEXT NOT NULL
        )""",
    ]


def _v2(dialect: Dialect) -> Sequence[str]:  # noqa: ARG001 - portable DDL
    # The root type_registry of the documents imported (issue 32: kept on a round trip).
    return [
        """CREATE TABLE pam_type_registry (
            id INTEGER PRIMARY KEY,
            uri TEXT NOT NULL,
            recorded_at TEXT NOT NULL
        )""",
    ]


PAM_COMPONENT = Component(
    name="pam",
    migrations=[
        Migration(1, "PAM interchange records", _v1),
        Migration(2, "the type registry of imported documents", _v2),
    ],
)


def migrate(store: Store) -> None:
    store.migrate(PAM_COMPONENT)


def _json(value: object) -> str:  # dumps_text checks it is I-JSON
    return dumps_text(value)


def _load(text: str) -> Json:
    value: Json = parse_strict(text)  # written by _json; narrowed where it is used
    return value


def _load_object(text: str, what: str) -> JsonObject:
    return wire.obj(_load(text), what)


@dataclass(frozen=True)
class PamRow:
    """One PAM memory as engram keeps it."""

    pam_id: str
    memory_id: str | None  # the engram memory holding its content (recalled when served)
    ring: str
    ring_id: str
    status: str
    object: JsonObject
    decisions: frozenset[str]  # engram decision ids the memory carried when it arrived
    owner_id: str
    export_id: str | None
    changed_at: str

    @staticmethod
    def from_row(row: Row) -> PamRow:
        return PamRow(
            pam_id=row["pam_id"],
            memory_id=row["memory_id"],
            ring=row["ring"],
            ring_id=row["ring_id"],
            status=row["status"],
            object=_load_object(row["object"], "pam_memories.object"),
            decisions=frozenset(wire.texts(_load(row["decisions"]), "pam_memories.decisions")),
            owner_id=row["owner_id"],
            export_id=row["export_id"],
            changed_at=row["changed_at"],
        )


_COLUMNS = (
    "pam_id, memory_id, ring, ring_id, status, object, decisions, owner_id, export_id, changed_at"
)


def owner(tx: Tx) -> JsonObject | None:
    row = tx.one("SELECT owner FROM pam_owner WHERE id = 1")
    return None if row is None else _load_object(row["owner"], "pam_owner.owner")


def set_owner(tx: Tx, value: JsonObject, now: str) -> None:
    tx.execute(
        "INSERT INTO pam_owner (id, owner_id, owner, recorded_at) VALUES (1, ?, ?, ?) "
        "ON CONFLICT (id) DO NOTHING",
        (value["id"], _json(value), now),
    )


def type_registry(tx: Tx) -> str | None:
    """The ``type_registry`` of the last imported document that named one."""
    row = tx.one("SELECT uri FROM pam_type_registry WHERE id = 1")
    return None if row is None else str(row["uri"])


def set_type_registry(tx: Tx, uri: str, now: str) -> None:
    tx.execute(
        "INSERT INTO pam_type_registry (id, uri, recorded_at) VALUES (1, ?, ?) "
        "ON CONFLICT (id) DO UPDATE SET uri = excluded.uri, recorded_at = excluded.recorded_at",
        (uri, now),
    )


def rows_by_id(tx: Tx, pam_ids: Sequence[str]) -> dict[str, PamRow]:
    select = f"SELECT {_COLUMNS} FROM pam_memories"
    return {r["pam_id"]: PamRow.from_row(r) for r in rows_where_in(tx, select, "pam_id", pam_ids)}


def served_among(tx: Tx, memory_ids: Sequence[str], statuses: Collection[str]) -> set[str]:
    """Which of ``memory_ids`` a PAM memory of one of ``statuses`` holds (the ids and statuses
    only: a whole document's rows with their objects would be the document again)."""
    select = "SELECT memory_id, status FROM pam_memories"
    rows = rows_where_in(tx, select, "memory_id", memory_ids)
    return {r["memory_id"] for r in rows if r["status"] in statuses}


def rows_in_rings(tx: Tx, ring_ids: Sequence[str]) -> list[PamRow]:
    if not ring_ids:
        return []
    marks = ", ".join("?" for _ in ring_ids)
    return [
        PamRow.from_row(r)
        for r in tx.execute(
            f"SELECT {_COLUMNS} FROM pam_memories WHERE ring_id IN ({marks}) ORDER BY pam_id",
            list(ring_ids),
        )
    ]


def upsert_rows(tx: Tx, rows: Iterable[PamRow]) -> None:
    tx.execute_many(
        f"INSERT INTO pam_memories ({_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?) "
        "ON CONFLICT (pam_id) DO UPDATE SET memory_id = excluded.memory_id, "
        "ring = excluded.ring, ring_id = excluded.ring_id, status = excluded.status, "
        "object = excluded.object, "
        "decisions = excluded.decisions, owner_id = excluded.owner_id, "
        "export_id = excluded.export_id, changed_at = excluded.changed_at",
        [
            (
                r.pam_id,
                r.memory_id,
                r.ring,
                r.ring_id,
                r.status,
                _json(r.object),
                _json(sorted(r.decisions)),
                r.owner_id,
                r.export_id,
                r.changed_at,
            )
            for r in rows
        ],
    )


def upsert_objects(tx: Tx, table: str, objects: Iterable[JsonObject], now: str) -> int:
    """Relations or conversations by id; an object equal to the one kept is left alone."""
    assert table in ("pam_relations", "pam_conversations")
    changed = 0
    for obj in objects:
        row = tx.one(f"SELECT object FROM {table} WHERE id = ?", (obj["id"],))
        if row is not None and _load(row["object"]) == obj:
            continue
        tx.execute(
            f"INSERT INTO {table} (id, object, changed_at) VALUES (?, ?, ?) "
            "ON CONFLICT (id) DO UPDATE SET object = excluded.object, "
            "changed_at = excluded.changed_at",
            (obj["id"], _json(obj), now),
        )
        changed += 1
    return changed


def objects(tx: Tx, table: str) -> list[tuple[JsonObject, str]]:
    """Every relation or conversation kept, with when it last changed here, by id."""
    assert table in ("pam_relations", "pam_conversations")
    return [
        (_load_object(r["object"], f"{table}.object"), r["changed_at"])
        for r in tx.execute(f"SELECT object, changed_at FROM {table} ORDER BY id")
    ]


@dataclass(frozen=True)
class LoggedExport:
    export_id: str
    direction: str  # "export" (written here) | "import" (read here)
    export_type: str
    export_date: str
    owner_id: str


def log_export(
    tx: Tx,
    *,
    export_id: str,
    direction: str,
    export_type: str,
    export_date: str,
    since: str | None,
    base_export_id: str | None,
    owner_id: str,
    checksum: str | None,
    signer: str | None,
    now: str,
) -> bool:
    """Record a document; False when its export id was already known (a repeated import)."""
    known = tx.one("SELECT export_id FROM pam_exports WHERE export_id = ?", (export_id,))
    if known is not None:
        return False
    tx.execute(
        "INSERT INTO pam_exports (export_id, direction, export_type, export_date, since, "
        "base_export_id, owner_id, checksum, signer, recorded_at) "
        "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        (
            export_id,
            direction,
            export_type,
            export_date,
            since,
            base_export_id,
            owner_id,
            checksum,
            signer,
            now,
        ),
    )
    return True


def logged_export(tx: Tx, export_id: str) -> LoggedExport | None:
    row = tx.one(
        "SELECT export_id, direction, export_type, export_date, owner_id FROM pam_exports "
        "WHERE export_id = ?",
        (export_id,),
    )
    if row is None:
        return None
    return LoggedExport(
        row["export_id"], row["direction"], row["export_type"], row["export_date"], row["owner_id"]
    )


__all__ = [
    "PAM_COMPONENT",
    "LoggedExport",
    "PamRow",
    "log_export",
    "logged_export",
    "migrate",
    "objects",
    "owner",
    "rows_by_id",
    "rows_in_rings",
    "served_among",
    "set_owner",
    "upsert_objects",
    "upsert_rows",
]
