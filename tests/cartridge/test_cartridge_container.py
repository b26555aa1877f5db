"""The .acx container: SQLite header identity, the §3.2 DDL, stock sqlar rows, portable paths.

SPEC §3.1-§3.2 and §12 items 1-2 (lboel/acx@85f1358). Files are built by engram, then read or
changed with stock tools: ``file(1)``, the ``sqlite3`` CLI and a plain ``sqlite3`` connection.
"""

from __future__ import annotations

import os
import shutil
import sqlite3
import struct
import subprocess
import zlib
from pathlib import Path

import pytest
from cartridge_kit import (
    SCRIPT_PATH,
    SKILL_MD,
    SKILL_PATH,
    build,
    check,
    execute,
    file_bytes,
    needs_sqlite3,
    rows,
    stock_sqlite3,
    write_package,
)

from engram.cartridge import Cartridge, install_skills, load_rom
from engram.cartridge.internals import (
    APPLICATION_ID,
    USER_VERSION,
    SqlarEntry,
    check_path,
    decode_sqlar,
    encode_sqlar,
)
from engram.core.keys import PrivateKey
from engram.errors import CartridgeFormatError
from engram.trust import TrustState


@pytest.fixture
def signed(tmp_path: Path) -> Path:
    """A signed cartridge with one skill (SKILL.md, an executable script, a reference)."""
    package = write_package(tmp_path / "pkg")
    return build(tmp_path / "git-helper.acx", key=PrivateKey.generate(), package=package)


@pytest.mark.req("engram.cartridge.container-header")
def test_header_bytes_carry_application_id_and_packed_user_version(signed: Path) -> None:
    head = signed.read_bytes()[:100]
    assert head[:16] == b"SQLite format 3\x00"
    assert struct.unpack_from(">I", head, 68)[0] == APPLICATION_ID == 1094932529
    assert head[68:72] == b"ACX1"
    assert struct.unpack_from(">I", head, 60)[0] == USER_VERSION == 16777472
    assert head[60:64] == bytes([1, 0, 1, 0])  # MAJOR 1, MINOR 0, vec0 1, flags 0 (no SAVE)
    assert struct.unpack_from(">I", head, 96)[0] >= 3_037_000  # written by SQLite >= 3.37
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
def test_a_plain_sqlite_file_is_refused(tmp_path: Path) -> None:
    plain = tmp_path / "plain.acx"
    execute(plain, "CREATE TABLE t(x)")
    with pytest.raises(CartridgeFormatError, match="application_id is 0, expected 1094932529"):
        Cartridge.open(plain)


@pytest.mark.req("engram.cartridge.container-header")
@pytest.mark.parametrize(
    ("user_version", "message"),
    [
        (0x02000100, "has major 2"),
        (0x00000100, "has major 0"),
        (0x01000102, "sets flags this reader does not know"),
    ],
)
def test_an_unknown_user_version_is_refused(signed: Path, user_version: int, message: str) -> None:
    execute(signed, f"PRAGMA user_version = {user_version}")
    with pytest.raises(CartridgeFormatError, match=message):
        Cartridge.open(signed)


@pytest.mark.req("engram.cartridge.container-header")
def test_a_newer_minor_version_is_read(signed: Path) -> None:
    """SPEC §3.1: spec_MINOR is additive, so a reader of major 1 reads minor 7."""
    execute(signed, f"PRAGMA user_version = {0x01070100}")
    assert check(signed).state is TrustState.PORTABLE


@pytest.mark.req("engram.cartridge.container-header", "engram.cartridge.hostile-files")
def test_files_that_are_not_single_sqlite_cartridges_are_refused(
    signed: Path, tmp_path: Path
) -> None:
    bogus = tmp_path / "notes.acx"
    bogus.write_bytes(b"PK\x03\x04" + b"\x00" * 200)
    with pytest.raises(CartridgeFormatError, match="not a SQLite 3 database"):
        Cartridge.open(bogus)
    with pytest.raises(CartridgeFormatError, match="is a directory"):
        Cartridge.open(tmp_path)
    with pytest.raises(CartridgeFormatError, match="no such cartridge"):
        Cartridge.open(tmp_path / "missing.acx")
    fifo = tmp_path / "fifo.acx"
    os.mkfifo(fifo)
    with pytest.raises(CartridgeFormatError, match="not a regular file"):
        Cartridge.open(fifo)
    wal = tmp_path / "wal.acx"
    shutil.copyfile(signed, wal)
    execute(wal, "PRAGMA journal_mode = WAL")
    with pytest.raises(CartridgeFormatError, match="rollback-journal mode"):
        Cartridge.open(wal)
    padded = tmp_path / "padded.acx"
    padded.write_bytes(signed.read_bytes() + b"\0" * 4096)
    with pytest.raises(CartridgeFormatError, match="header records"):
        Cartridge.open(padded)


@pytest.mark.req("engram.cartridge.verbatim-ddl")
@pytest.mark.parametrize(
    ("sql", "message"),
    [
        ("CREATE TRIGGER t AFTER INSERT ON sqlar BEGIN SELECT 1; END", "unexpected schema object"),
        ("CREATE VIEW v AS SELECT 1", "unexpected schema object view"),
        ("CREATE TABLE extra(x)", "unexpected schema object table 'extra'"),
        ("CREATE INDEX extra_ix ON sqlar(mtime)", "unexpected schema object index"),
        ("ALTER TABLE cartridge ADD COLUMN note TEXT", "cartridge does not have the SPEC"),
        ("DROP TABLE attestations", "missing attestations"),
        ("DROP INDEX memory_zone_fp", "missing memory_zone_fp"),
    ],
)
def test_anything_but_the_spec_ddl_is_refused(signed: Path, sql: str, message: str) -> None:
    execute(signed, sql)
    with pytest.raises(CartridgeFormatError, match=message):
        Cartridge.open(signed)


@pytest.mark.req("engram.cartridge.verbatim-ddl")
def test_the_ddl_spellings_of_spec_and_reference_are_both_read(tmp_path: Path) -> None:
    """SPEC §3.2 has signatures without public_key_pem; a vec0 vectors table is accepted."""
    path = build(tmp_path / "unsigned.acx", key=None, package=write_package(tmp_path / "pkg"))
    conn = sqlite3.connect(path)
    conn.executescript(
        """
        DROP TABLE signatures;
        CREATE TABLE signatures (
          sig_id        TEXT PRIMARY KEY NOT NULL,
          target        TEXT NOT NULL DEFAULT 'rom-manifest',
          manifest_hash TEXT NOT NULL,
          envelope      TEXT NOT NULL,  -- DSSE JSON
          keyid         TEXT NOT NULL,
          alg           TEXT NOT NULL DEFAULT 'ed25519',
          created_at    TEXT NOT NULL
        ) WITHOUT ROWID;
        DROP TABLE vectors;
        PRAGMA writable_schema = ON;
        INSERT INTO sqlite_schema(type, name, tbl_name, rootpage, sql) VALUES (
          'table', 'vectors', 'vectors', 0,
          'CREATE VIRTUAL TABLE vectors USING vec0(memory_id TEXT PRIMARY KEY, zone TEXT '
          || 'partition key, embedding float[128] distance_metric=cosine, '
          || '+artifact_fingerprint TEXT)'
        );
        """
    )
    conn.close()
    # No sqlite-vec extension is loaded here: the vec0 table is accepted and never read (§3.5).
    assert check(path).state is TrustState.LEGACY


@pytest.mark.req("engram.cartridge.sqlar-stock")
@needs_sqlite3
def test_reads_an_archive_the_stock_cli_wrote(signed: Path, tmp_path: Path) -> None:
    """Rows `sqlite3 -Ac` writes (zlib when smaller, stored otherwise) decode byte for byte."""
    source = tmp_path / "src"
    (source / "save").mkdir(parents=True)
    files = {
        "save/big.md": b"repeat me " * 500,  # compresses: zlib
        "save/tiny.txt": b"hi",  # does not: stored
        "save/empty.txt": b"",
    }
    for name, content in files.items():
        (source / name).write_bytes(content)
    archive = tmp_path / "stock.sqlar"
    stock_sqlite3(archive, "-Ac", *files, cwd=source)
    stored = {
        name: (mode, sz, data)
        for name, mode, sz, data in rows(archive, "SELECT name, mode, sz, data FROM sqlar")
    }
    assert stored["save/big.md"][2][:2] == b"\x78\x9c"  # zlib, as compress() writes it
    for name, content in files.items():
        mode, sz, data = stored[name]
        entry = SqlarEntry(name, mode, 0, sz, len(data))
        assert decode_sqlar(entry, data) == content
        assert encode_sqlar(content, compress=True) == data  # the choice the stock CLI makes


@pytest.mark.req("engram.cartridge.sqlar-stock")
def test_raw_deflate_rows_as_the_reference_writes_them_are_read() -> None:
    content = b"deflate me " * 200
    packer = zlib.compressobj(6, zlib.DEFLATED, -15)
    raw = packer.compress(content) + packer.flush()
    assert decode_sqlar(SqlarEntry("rom/x.md", 0o644, 0, len(content), len(raw)), raw) == content
    with pytest.raises(CartridgeFormatError, match="does not inflate to its recorded size"):
        decode_sqlar(SqlarEntry("rom/x.md", 0o644, 0, len(content) + 1, len(raw)), raw)


@pytest.mark.req("engram.cartridge.sqlar-stock")
def test_written_rows_are_stored_so_every_reader_sees_the_same_bytes(signed: Path) -> None:
    """Stock sqlite3 inflates only zlib and the reference only raw Deflate: engram writes
    ``sz == length(data)`` rows, which both read as they are (docs/spec/acx.md §2)."""
    table = {
        name: (mode, mtime, sz, data)
        for name, mode, mtime, sz, data in rows(
            signed, "SELECT name, mode, mtime, sz, data FROM sqlar"
        )
    }
    assert table
    for name, (mode, mtime, sz, data) in table.items():
        assert isinstance(data, bytes), name
        assert len(data) == sz, name
        assert mode in (0o100644, 0o100755), name
        assert isinstance(mtime, int)
        assert mtime >= 0
    assert table[SKILL_PATH][3] == SKILL_MD
    assert table[SCRIPT_PATH][0] == 0o100755
    assert table[SKILL_PATH][0] == 0o100644
    assert not [n for n in table if len(n.split("/")) < 2]  # no directory rows (§3.2)


@pytest.mark.req("engram.cartridge.sqlar-stock")
def test_an_empty_file_is_a_zero_length_blob(tmp_path: Path) -> None:
    package = write_package(tmp_path / "pkg", extra={"skills/git-helper/assets/EMPTY.txt": b""})
    out = build(tmp_path / "e.acx", key=None, package=package)
    assert rows(
        out, "SELECT sz, typeof(data), length(data) FROM sqlar WHERE name LIKE '%EMPTY.txt'"
    ) == [(0, "blob", 0)]
    with Cartridge.open(out) as cartridge:
        assert cartridge.read("rom/skills/git-helper/assets/EMPTY.txt") == b""


@pytest.mark.req("engram.cartridge.sqlar-stock", "engram.cartridge.skills-frontmatter")
@needs_sqlite3
def test_stock_cli_extracts_the_skills_byte_for_byte_with_their_modes(
    signed: Path, tmp_path: Path
) -> None:
    target = tmp_path / "extract"
    target.mkdir()
    stock_sqlite3(signed, "-Ax", cwd=target)
    skill = tmp_path / "pkg" / "skills" / "git-helper"
    for source in skill.rglob("*"):
        if source.is_file():
            copy = target / "rom" / "skills" / "git-helper" / source.relative_to(skill)
            assert copy.read_bytes() == source.read_bytes()
            assert copy.stat().st_mode & 0o111 == source.stat().st_mode & 0o111
    listing = stock_sqlite3(signed, "-At").split()
    assert SKILL_PATH in listing


@pytest.mark.req("engram.cartridge.sqlar-stock", "engram.cartridge.save-excluded")
@needs_sqlite3
def test_a_save_file_added_by_the_stock_cli_reads_back_and_signs_nothing(
    signed: Path, tmp_path: Path
) -> None:
    before = check(signed)
    (tmp_path / "save").mkdir()
    (tmp_path / "save" / "notes.txt").write_bytes(b"hello " * 50)
    stock_sqlite3(signed, "-Au", "save/notes.txt", cwd=tmp_path)
    with Cartridge.open(signed) as cartridge:
        assert cartridge.read("save/notes.txt") == b"hello " * 50
    after = check(signed)
    assert after.state is TrustState.PORTABLE
    assert after.signature_verified
    assert after.manifest_hash == before.manifest_hash


@pytest.mark.req("engram.cartridge.portable-paths")
@pytest.mark.parametrize(
    ("name", "message"),
    [
        ("rom/../etc/passwd", "traversal"),
        ("save/./x", "traversal"),
        ("/rom/skills/a", "absolute"),
        ("C:/rom/x", "absolute"),
        ("\\\\server\\rom\\x", "absolute"),
        ("rom\\skills\\x", "backslash"),
        ("skills/x/SKILL.md", "not rooted at rom/ or save/"),
        ("rom", "fewer than two segments"),
        ("save", "fewer than two segments"),
        ("rom/skills/-x", "not portable"),
        ("rom/skills/.hidden", "not portable"),
        ("rom/skills/a b", "not portable"),
        ("rom/skills/a\x00b", "not portable"),
        ("rom/skills/caf\u00e9", "not portable"),
        ("rom/skills/CON.txt", "reserved device"),
        ("rom/skills/x.", "not portable"),
        ("rom//x", "not portable"),
        ("rom/x/", "not portable"),
        ("rom/" + "a" * 129, "not portable"),
        ("rom/" + "a/" * 20 + "x", "deeper than"),
        ("rom/" + "abcdefgh/" * 60 + "x", "longer than"),
        ("", "empty cartridge path"),
    ],
)
def test_unportable_paths_are_refused(name: str, message: str) -> None:
    with pytest.raises(CartridgeFormatError, match=message):
        check_path(name)


@pytest.mark.req("engram.cartridge.portable-paths")
def test_the_portable_segment_rule_is_spec_s() -> None:
    """Each segment matches ^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$ (§3.2), 128 characters at most."""
    assert check_path("rom/" + "a" * 128) == "rom/" + "a" * 128
    assert check_path("save/A.b_c-d/0") == "save/A.b_c-d/0"


@pytest.mark.req("engram.cartridge.portable-paths", "engram.cartridge.hostile-files")
@pytest.mark.parametrize(
    "name", ["rom/../../evil", "/etc/cron.d/evil", "save/../../x", "other/x", "rom", "rom/a\\b"]
)
def test_every_row_read_checks_its_path(signed: Path, name: str) -> None:
    execute(signed, "INSERT INTO sqlar VALUES (?, 33188, 0, 4, ?)", (name, b"evil"))
    with pytest.raises(CartridgeFormatError, match="cartridge path"):
        Cartridge.open(signed)


@pytest.mark.req("engram.cartridge.portable-paths", "engram.cartridge.hostile-files")
def test_a_name_that_is_not_text_is_refused(signed: Path) -> None:
    execute(signed, "INSERT INTO sqlar VALUES (CAST('save/x' AS BLOB), 33188, 0, 1, x'41')")
    with pytest.raises(CartridgeFormatError, match="is not text"):
        Cartridge.open(signed)


@pytest.mark.req("engram.cartridge.portable-paths")
def test_case_colliding_paths_are_refused(signed: Path) -> None:
    execute(signed, "INSERT INTO sqlar VALUES ('save/Notes.md', 33188, 0, 1, x'41')")
    execute(signed, "INSERT INTO sqlar VALUES ('save/notes.md', 33188, 0, 1, x'41')")
    with pytest.raises(CartridgeFormatError, match="differ only by letter case"):
        Cartridge.open(signed)


@pytest.mark.req("engram.cartridge.portable-paths")
@pytest.mark.parametrize(("mode", "data"), [(0o120777, b"/etc/passwd"), (0o104755, b"x")])
def test_symlink_and_setuid_rows_are_refused(signed: Path, mode: int, data: bytes) -> None:
    execute(signed, "INSERT INTO sqlar VALUES ('save/link', ?, 0, ?, ?)", (mode, len(data), data))
    with pytest.raises(CartridgeFormatError, match="not a portable file"):
        Cartridge.open(signed)


@pytest.mark.req("engram.cartridge.portable-paths")
def test_a_file_under_another_file_is_refused(signed: Path) -> None:
    execute(signed, "INSERT INTO sqlar VALUES ('save/a', 33188, 0, 1, x'41')")
    execute(signed, "INSERT INTO sqlar VALUES ('save/a/b', 33188, 0, 1, x'41')")
    with pytest.raises(CartridgeFormatError, match="lies under the file"):
        Cartridge.open(signed)


@pytest.mark.req("engram.cartridge.live-hashes")
def test_a_rom_file_no_objects_row_covers_is_tampered(signed: Path) -> None:
    """SPEC §3.3 lists ROM objects; engram also refuses ROM content outside the list."""
    execute(signed, "INSERT INTO sqlar VALUES ('rom/payload.sh', 33261, 0, 2, x'6869')")
    report = check(signed)
    assert report.state is TrustState.TAMPERED
    assert any("rom/payload.sh" in p and "no objects row covers" in p for p in report.problems)


@pytest.mark.req("engram.cartridge.container-header")
def test_reads_use_a_read_only_connection(signed: Path) -> None:
    before = signed.read_bytes()
    with Cartridge.open(signed) as cartridge:
        with pytest.raises(CartridgeFormatError, match=r"readonly|read-only|query_only"):
            cartridge.query("DELETE FROM cartridge")
        load_rom(cartridge)
    assert signed.read_bytes() == before
    assert sqlite3.sqlite_version_info >= (3, 37, 0)


@pytest.mark.req("engram.cartridge.sqlar-stock")
def test_modes_are_outside_the_signed_manifest_and_installs_follow_the_row(
    signed: Path, tmp_path: Path
) -> None:
    """SPEC §3.3 signs {sourceRef, oid, canon, sz}: a 0644/0755 flip changes no trust state, so
    engram restricts modes to those two and installs a file with exactly the mode its row has."""
    execute(signed, "UPDATE sqlar SET mode = 33188 WHERE name = ?", (SCRIPT_PATH,))
    assert check(signed).state is TrustState.PORTABLE
    with Cartridge.open(signed) as cartridge:
        rom = load_rom(cartridge)
    written = {p.name: p for p in install_skills(rom, tmp_path / "skills")}
    assert written["blame.sh"].stat().st_mode & 0o777 == 0o644
    assert written["SKILL.md"].read_bytes() == file_bytes(signed, SKILL_PATH)
    execute(signed, "UPDATE sqlar SET mode = 33261 WHERE name = ?", (SCRIPT_PATH,))
    with Cartridge.open(signed) as cartridge:
        rom = load_rom(cartridge)
    written = {p.name: p for p in install_skills(rom, tmp_path / "skills2")}
    assert written["blame.sh"].stat().st_mode & 0o777 == 0o755
