"""Every ROM record table is one declaration, and what a cartridge holds follows it.

Each test reads the written file with plain SQLite or the ACX spec's own published schema, not
the code that derives from the declaration, so a layer that stopped following it would fail here.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from cartridge_kit import RECORDS, SCHEMAS, build, check, execute, rows, write_package

from engram.cartridge import Cartridge, ScrubBlocked, load_rom, spec_report
from engram.cartridge.internals import RECORD_TABLES, RecordTable
from engram.core.jsonio import dumps_text
from engram.core.keys import PrivateKey
from engram.trust import TrustState


@pytest.fixture(scope="module")
def exported(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("tables")
    package = write_package(root / "pkg", records=RECORDS[:1])
    return build(root / "out.acx", key=PrivateKey.generate(), package=package)


def _normalised(sql: str) -> str:
    return " ".join(sql.replace("(", " ( ").replace(")", " ) ").replace(",", " , ").split())


@pytest.mark.req("engram.cartridge.record-tables")
@pytest.mark.parametrize("table", RECORD_TABLES, ids=lambda t: t.table)
def test_the_written_table_is_the_declared_one(exported: Path, table: RecordTable) -> None:
    ((sql,),) = rows(exported, "SELECT sql FROM sqlite_master WHERE name = ?", (table.table,))
    assert _normalised(sql) == _normalised(table.ddl)
    stored = rows(exported, f"SELECT id, json, content_hash FROM {table.table}")  # noqa: S608
    assert stored, f"the export wrote no {table.prefix} row"
    objects = {r[0]: r for r in rows(exported, "SELECT source_ref, oid, kind, canon FROM objects")}
    for rid, text, content_hash in stored:
        assert json.loads(text)["schemaVersion"] == table.schema_version
        _ref, oid, kind, canon = objects[f"{table.prefix}:{rid}"]
        assert (oid, kind, canon) == (content_hash, "cartridge", "jcs-rfc8785")


@pytest.mark.req("engram.cartridge.record-tables")
@pytest.mark.parametrize("table", RECORD_TABLES, ids=lambda t: t.table)
def test_the_package_spec_entry_is_the_published_schemas(
    exported: Path, table: RecordTable
) -> None:
    """The entry engram writes is the one the ACX spec's package-spec schema fixes for the role."""
    published = json.loads((SCHEMAS / "package-spec.schema.json").read_text())
    by_role = {
        d["properties"]["role"]["const"]: d
        for d in published["$defs"].values()
        if isinstance(d, dict) and "role" in d.get("properties", {})
    }
    fixed = {k: v["const"] for k, v in by_role[table.role]["properties"].items() if "const" in v}
    ((count,),) = rows(exported, f"SELECT count(*) FROM {table.table}")  # noqa: S608
    entry = table.package_artifact(count)
    assert {k: entry[k] for k in fixed} == fixed
    ((spec_text,),) = rows(exported, "SELECT data FROM sqlar WHERE name = 'rom/package-spec.json'")
    written: dict[str, Any] = json.loads(spec_text)
    assert entry in written["artifacts"]
    with Cartridge.open(exported) as cartridge:
        assert spec_report(load_rom(cartridge)).issues == []


@pytest.mark.req("engram.cartridge.record-tables")
@pytest.mark.parametrize("table", RECORD_TABLES, ids=lambda t: t.table)
@pytest.mark.parametrize(
    ("change", "why"),
    [
        ("UPDATE {t} SET json = json || ' '", "a record rewritten after signing"),
        ("INSERT INTO {t} VALUES ('extra', '{{}}', 'sha256:00')", "a row no objects row covers"),
        ("UPDATE {t} SET content_hash = 'sha256:00'", "a content_hash that is not its json's"),
    ],
)
def test_every_declared_table_is_covered_by_the_signature(
    exported: Path, tmp_path: Path, table: RecordTable, change: str, why: str
) -> None:
    copy = tmp_path / "copy.acx"
    copy.write_bytes(exported.read_bytes())
    assert check(copy).state is TrustState.PORTABLE
    execute(copy, change.format(t=table.table))
    assert check(copy).state is TrustState.TAMPERED, why


@pytest.mark.req("engram.cartridge.scrub-gate", "engram.cartridge.record-tables")
def test_a_record_rows_text_goes_through_the_scrub_gate(tmp_path: Path) -> None:
    """§7.5: every string field of every record, a capability's as much as a memory's."""
    package = write_package(tmp_path / "pkg", records=RECORDS[:1])
    leak = [{"taskType": "debug", "stack": ["pkg:npm/glpat-abcdefghijklmnopqrstu"]}]
    (package / "capabilities.json").write_text(dumps_text(leak), encoding="utf-8")
    out = tmp_path / "leak.acx"
    with pytest.raises(ScrubBlocked, match=r"capability:cap-[0-9a-f]{16}:1: gitlab-token"):
        build(out, key=PrivateKey.generate(), package=package)
    assert not out.exists()
