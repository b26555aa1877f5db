"""The ROM's tables of signed JSON records, each declared once.

Spec: lboel/acx@85f1358 SPEC.md §6.1 (``capabilities(id TEXT PRIMARY KEY, json TEXT,
content_hash TEXT)``, each ``json`` row covered by the ROM integrity manifest) and §3.3;
docs/spec/acx.md §4 and "Adding a record type".

A record table holds one RFC 8785 JSON record per row, addressed in the manifest as
``<prefix>:<id>``. Everything that handles such a table derives from its :class:`RecordTable`
entry in :data:`RECORD_TABLES`, so adding an ACX record type stored this way is one entry here
plus its schema file and its domain checks:

- the DDL the writer creates and the reader accepts (``_format.SPEC_DDL``), and that the table
  is optional (``_container``);
- the manifest's source refs, their live bytes, the ``kind``/``canon`` an objects row of one may
  carry, and that every row is covered (``_rom``);
- the writer's rows, objects rows and scrub-gate input (``_build``);
- the package spec's artifact entry, the count it must state, and the per-record checks
  (``_package``).
"""

from __future__ import annotations

from collections.abc import Callable, Set
from dataclasses import dataclass

from engram.cartridge._capabilities import cartridge_capability_problems
from engram.core.canonical import JsonObject

RecordProblems = Callable[[JsonObject, str, Set[str]], list[str]]
"""``(record, where, field-learned artifact fingerprints) -> problems`` for one stored record."""


@dataclass(frozen=True, slots=True)
class RecordTable:
    """One ROM table of signed JSON records."""

    table: str
    """The SQLite table: ``(id TEXT PRIMARY KEY NOT NULL, json TEXT NOT NULL, content_hash TEXT
    NOT NULL)``, ``json`` the record's RFC 8785 text, ``content_hash`` its ``sha256:`` address."""
    prefix: str
    """The manifest's ``source_ref`` prefix (``<prefix>:<id>``), also the noun in messages."""
    schema_version: str
    """The records' ``schemaVersion``, named by the package spec's artifact entry."""
    role: str
    """The package spec's artifact role, whose ``count`` must be the live row count."""
    problems: RecordProblems
    """What is wrong with one stored record (schema and domain rules), in the package spec."""
    kinds: tuple[str, ...] = ("cartridge", "skill")
    """The ``objects.kind`` a row may carry: the §3.2 CHECK list has no kind of its own for
    these, and the reference writes ``cartridge``."""

    @property
    def ddl(self) -> str:
        return (
            f"CREATE TABLE {self.table} (\n"
            "  id           TEXT PRIMARY KEY NOT NULL,\n"
            "  json         TEXT NOT NULL,\n"
            "  content_hash TEXT NOT NULL\n"
            ")"
        )

    # The table name is this declaration's constant, never input: hence the noqa on S608.
    @property
    def select_sql(self) -> str:
        """Every row with the types and byte size the reader checks, at most ``?`` of them."""
        columns = "id, json, content_hash, typeof(id), typeof(json), length(CAST(json AS BLOB))"
        return f"SELECT {columns} FROM {self.table} NOT INDEXED LIMIT ?"  # noqa: S608

    @property
    def insert_sql(self) -> str:
        return f"INSERT INTO {self.table}(id, json, content_hash) VALUES (?, ?, ?)"  # noqa: S608

    def ref(self, record_id: str) -> str:
        return f"{self.prefix}:{record_id}"

    def package_artifact(self, count: int) -> JsonObject:
        return {
            "role": self.role,
            "kind": "table",
            "table": self.table,
            "schema": self.schema_version,
            "required": False,
            "count": count,
        }


CAPABILITIES = RecordTable(
    table="capabilities",
    prefix="capability",
    schema_version="acx.capability/1",
    role="capabilities",
    problems=cartridge_capability_problems,
)

RECORD_TABLES: tuple[RecordTable, ...] = (CAPABILITIES,)
"""Every record table, in the order the package spec lists their artifacts."""


__all__ = ["CAPABILITIES", "RECORD_TABLES", "RecordProblems", "RecordTable"]
