"""The .acx container: SQLite header identity, verbatim DDL, stock sqlar rows, portable paths."""

from __future__ import annotations

import shutil
import sqlite3
import struct
import subprocess
import zlib
from pathlib import Path

import pytest
from acx_kit import SKILL_MD, execute, rows

from engram.cartridge import APPLICATION_ID, USER_VERSION, Cartridge, load_rom
from engram.cartridge._format import SQLAR_DDL
from engram.cartridge._paths import check_path
from engram.cartridge._sqlar import Entry, decode, encode
from engram.errors import CartridgeFormatError

# Written by the stock sqlite3 CLI; see tests/vectors/sqlar/SOURCE.txt.
VECTORS = Path(__file__).resolve().parents[1] / "vectors" / "sqlar"


def _listing() -> dict[str, tuple[int, int, int, int | None, str]]:
    """tests/vectors/sqlar/listing.txt: name -> (mode, mtime, sz, stored_len, encoding)."""
    table: dict[str, tuple[int, int, int, int | None, str]] = {}
    for line in (VECTORS / "listing.txt").read_text().splitlines()[1:]:
        name, mode, mtime, sz, stored, enc, _first2 = (c.strip() for c in line.split("|"))
        table[name] = (int(mode, 8), int(mtime), int(sz), int(stored) if stored else None, enc)
    return table


@pytest.mark.req("engram.cartridge.container-header")
def test_header_bytes_carry_application_id_and_packed_user_version(signed: Path) -> None:
    head = signed.read_bytes()[:100]
    assert head[:16] == b"SQLite format 3\x00"
    assert struct.unpack_from(">I", head, 68)[0] == APPLICATION_ID == 1094932529
    assert struct.unpack_from(">I", head, 60)[0] == USER_VERSION == 16777472
    assert head[60:64] == bytes([1, 0, 1, 0])  # MAJOR 1, MINOR 0, vec0 1, flags 0
    assert struct.unpack_from(">I", head, 96)[0] >= 3_037_000
    assert rows(signed, "PRAGMA application_id") == [(1094932529,)]
    assert rows(signed, "PRAGMA user_version") == [(16777472,)]


@pytest.mark.req("engram.cartridge.container-header")
@pytest.mark.skipif(shutil.which("file") is None, reason="file(1) is not installed on this host")
def test_file_command_sees_the_application_id(signed: Path) -> None:
    out = subprocess.run(["file", str(signed)], capture_output=True, text=True, check=True).stdout
    assert "SQLite 3.x database" in out
    assert "application id 1094932529" in out
    assert "user version 16777472" in out


@pytest.mark.req("engram.cartridge.container-header")
def test_opening_a_plain_sqlite_file_is_refused(tmp_path: Path) -> None:
    plain = tmp_path / "plain.acx"
    execute(plain, "CREATE TABLE t(x)")
    with pytest.raises(CartridgeFormatError, match="application_id is 0, expected 1094932529"):
        Cartridge.open(plain)


@pytest.mark.req("engram.cartridge.container-header")
def test_wrong_user_version_is_refused(signed: Path) -> None:
    execute(signed, "PRAGMA user_version = 33554688")  # major 2
    with pytest.raises(CartridgeFormatError, match="has major 2"):
        Cartridge.open(signed)


@pytest.mark.req("engram.cartridge.container-header")
def test_a_file_that_is_not_sqlite_is_refused(tmp_path: Path) -> None:
    bogus = tmp_path / "notes.acx"
    bogus.write_bytes(b"PK\x03\x04" + b"\x00" * 200)
    with pytest.raises(CartridgeFormatError, match="not a SQLite 3 database"):
        Cartridge.open(bogus)


@pytest.mark.req("engram.cartridge.verbatim-ddl")
def test_schema_is_the_verbatim_ddl_with_the_stock_sqlar_table(signed: Path) -> None:
    stock = (VECTORS / "schema.txt").read_text().strip().removesuffix(";")
    assert stock == SQLAR_DDL
    tables = dict(rows(signed, "SELECT name, sql FROM sqlite_schema WHERE type = 'table'"))
    assert tables["sqlar"] == SQLAR_DDL
    assert set(tables) == {
        "sqlar",
        "acx_meta",
        "acx_object",
        "acx_skill",
        "acx_signature",
        "acx_vectors",
    }


@pytest.mark.req("engram.cartridge.verbatim-ddl")
def test_an_extra_trigger_or_altered_table_is_refused(signed: Path, tmp_path: Path) -> None:
    altered = tmp_path / "altered.acx"
    shutil.copy(signed, altered)
    execute(signed, "CREATE TRIGGER t AFTER INSERT ON acx_meta BEGIN SELECT 1; END")
    with pytest.raises(CartridgeFormatError, match="unexpected schema object trigger"):
        Cartridge.open(signed)
    execute(altered, "ALTER TABLE acx_meta ADD COLUMN note TEXT")
    with pytest.raises(CartridgeFormatError, match="acx_meta does not have the verbatim"):
        Cartridge.open(altered)


@pytest.mark.req("engram.cartridge.sqlar-stock")
def test_reads_the_archive_written_by_the_stock_cli() -> None:
    listing = _listing()
    stored = rows(
        VECTORS / "stock-cli.sqlar", "SELECT name, mode, mtime, sz, data FROM sqlar ORDER BY name"
    )
    assert {r[0] for r in stored} == set(listing)
    for name, mode, mtime, sz, data in stored:
        want_mode, want_mtime, want_sz, want_len, enc = listing[name]
        assert (mode, mtime, sz) == (want_mode, want_mtime, want_sz)
        if enc == "NULL":
            assert data is None
            assert mode == 0o40755
            continue
        entry = Entry(name, mode, mtime, sz, len(data))
        original = (VECTORS / "src" / name).read_bytes()
        assert decode(entry, data) == original
        # Our writer makes the same choice the stock CLI made: zlib only when it is smaller.
        assert encode(original) == data
        assert len(data) == want_len
        assert (data[:2] == b"\x78\x9c") == (enc == "zlib")


@pytest.mark.req("engram.cartridge.sqlar-stock")
def test_written_rows_follow_the_stock_rules(signed: Path) -> None:
    table = {r[0]: r[1:] for r in rows(signed, "SELECT name, mode, mtime, sz, data FROM sqlar")}
    mode, _mtime, sz, data = table["rom/skills/git-helper/SKILL.md"]
    assert mode == 0o100644
    assert sz == len(SKILL_MD)
    assert zlib.decompress(data) == SKILL_MD if len(data) < sz else data == SKILL_MD
    assert table["rom/skills/git-helper/scripts/blame.sh"][0] == 0o100755
    for directory in ("rom", "rom/skills", "rom/skills/git-helper", "save"):
        assert table[directory] == (0o40755, table[directory][1], 0, None)
    assert all(isinstance(r[1], int) and r[1] > 1_700_000_000 for r in table.values())


@pytest.mark.req("engram.cartridge.sqlar-stock")
def test_empty_file_is_a_zero_length_blob(tmp_path: Path, signed: Path, key: object) -> None:
    skill = tmp_path / "more" / "empty-notes"
    skill.mkdir(parents=True)
    (skill / "SKILL.md").write_bytes(SKILL_MD.replace(b"git-helper", b"empty-notes"))
    (skill / "EMPTY.txt").write_bytes(b"")
    from acx_kit import build

    out = build(tmp_path / "e.acx", key=None, skills=tmp_path / "more")
    stored = rows(
        out, "SELECT sz, typeof(data), length(data) FROM sqlar WHERE name LIKE '%EMPTY.txt'"
    )
    assert stored == [(0, "blob", 0)]


@pytest.mark.req("engram.cartridge.sqlar-stock")
@pytest.mark.skipif(shutil.which("sqlite3") is None, reason="the sqlite3 CLI is not installed")
def test_stock_cli_extracts_skills_byte_for_byte(
    signed: Path, skills: Path, tmp_path: Path
) -> None:
    target = tmp_path / "extract"
    target.mkdir()
    subprocess.run(["sqlite3", str(signed.resolve()), "-Ax"], cwd=target, check=True)
    extracted = target / "rom" / "skills"
    for source in skills.rglob("*"):
        if source.is_file():
            copy = extracted / source.relative_to(skills)
            assert copy.read_bytes() == source.read_bytes()
            assert copy.stat().st_mode & 0o777 == source.stat().st_mode & 0o777
    listing = subprocess.run(
        ["sqlite3", str(signed), "-At"], capture_output=True, text=True, check=True
    ).stdout.split()
    assert "rom/skills/git-helper/SKILL.md" in listing


@pytest.mark.req("engram.cartridge.sqlar-stock")
@pytest.mark.skipif(shutil.which("sqlite3") is None, reason="the sqlite3 CLI is not installed")
def test_a_save_file_added_by_the_stock_cli_reads_back(signed: Path, tmp_path: Path) -> None:
    (tmp_path / "save").mkdir()
    (tmp_path / "save" / "notes.txt").write_bytes(b"hello " * 50)
    subprocess.run(
        ["sqlite3", str(signed.resolve()), "-Au", "save/notes.txt"], cwd=tmp_path, check=True
    )
    with Cartridge.open(signed) as cartridge:
        assert cartridge.read("save/notes.txt") == b"hello " * 50


@pytest.mark.req("engram.cartridge.portable-paths")
@pytest.mark.parametrize(
    ("name", "message"),
    [
        ("rom/../etc/passwd", "traversal"),
        ("save/./x", "traversal"),
        ("/rom/skills/a", "absolute"),
        ("C:/rom/x", "absolute"),
        ("rom\\skills\\x", "backslash"),
        ("skills/x/SKILL.md", "not rooted at rom/ or save/"),
        ("rom/skills/-x", "not portable"),
        ("rom/skills/a b", "not portable"),
        ("rom/skills/CON.txt", "reserved device"),
        ("rom/skills/x.", "not portable"),
        ("rom//x", "not portable"),
        ("rom/" + "a/" * 20 + "x", "deeper than"),
        ("rom/" + "a" * 600, "longer than"),
    ],
)
def test_unportable_paths_are_refused(name: str, message: str) -> None:
    with pytest.raises(CartridgeFormatError, match=message):
        check_path(name)


@pytest.mark.req("engram.cartridge.portable-paths")
@pytest.mark.parametrize("name", ["rom/../../evil", "/etc/cron.d/evil", "save/../../x", "other/x"])
def test_every_row_read_checks_its_path(signed: Path, name: str) -> None:
    execute(signed, "INSERT INTO sqlar VALUES (?, 33188, 0, 4, ?)", (name, b"evil"))
    with pytest.raises(CartridgeFormatError, match="cartridge path"):
        Cartridge.open(signed)


@pytest.mark.req("engram.cartridge.portable-paths")
def test_case_colliding_paths_are_refused(signed: Path) -> None:
    execute(signed, "INSERT INTO sqlar VALUES ('save/Notes.md', 33188, 0, 1, x'41')")
    execute(signed, "INSERT INTO sqlar VALUES ('save/notes.md', 33188, 0, 1, x'41')")
    with pytest.raises(CartridgeFormatError, match="differ only by letter case"):
        Cartridge.open(signed)


@pytest.mark.req("engram.cartridge.portable-paths")
def test_symlink_rows_are_refused(signed: Path) -> None:
    execute(
        signed, "INSERT INTO sqlar VALUES ('save/link', 41471, 0, 11, CAST('/etc/passwd' AS BLOB))"
    )
    with pytest.raises(CartridgeFormatError, match="not a portable file"):
        Cartridge.open(signed)


@pytest.mark.req("engram.cartridge.portable-paths")
def test_a_rom_row_outside_every_package_role_is_refused_before_loading(signed: Path) -> None:
    execute(signed, "INSERT INTO sqlar VALUES ('rom/payload.sh', 33261, 0, 2, x'6869')")
    with (
        Cartridge.open(signed) as cartridge,
        pytest.raises(CartridgeFormatError, match="belongs to no package role"),
    ):
        load_rom(cartridge)


@pytest.mark.req("engram.cartridge.container-header")
def test_reads_use_a_read_only_connection(signed: Path) -> None:
    with Cartridge.open(signed) as cartridge, pytest.raises(CartridgeFormatError, match="readonly"):
        cartridge.query("DELETE FROM acx_meta")
    assert sqlite3.sqlite_version_info >= (3, 37, 0)
