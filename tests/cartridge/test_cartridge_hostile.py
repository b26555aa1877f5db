"""Hostile cartridges through the CLI: a clear error and exit code, no traceback, bounded memory
(an address-space limit set with ``resource`` in the child) and bounded time (issue 15)."""

from __future__ import annotations

import os
import shutil
import sqlite3
import struct
import subprocess
import zlib
from pathlib import Path

import pytest
from cartridge_kit import REFERENCE, build_sample, digest, execute
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from engram.cartridge import (
    Cartridge,
    Host,
    Limits,
    activate,
    load_rom,
    strip,
    verify,
    write_save,
)
from engram.errors import CartridgeFormatError, EngramError
from engram.trust import TrustState
from peak_kit import run_python_peak

LIMIT = 1536 * 1024**2
PEAKS: dict[str, int] = {}


def _run(*args: str) -> tuple[subprocess.CompletedProcess[str], int]:
    # The child caps its own address space and reports its own VmHWM (peak_kit): ru_maxrss of a
    # child forked from an xdist worker that has grown is the worker's size, not the command's.
    code = (
        f"import resource; resource.setrlimit(resource.RLIMIT_AS, ({LIMIT}, {LIMIT}))\n"
        "from engram.cli import main; main()"
    )
    return run_python_peak(code, args, timeout=60, env=os.environ)


def _bomb(tmp: Path, rows: int, size: int) -> Path:
    path = build_sample(tmp, name=f"bomb-{rows}.acx")
    packed = zlib.compress(b"\0" * size, 9)
    with sqlite3.connect(path) as conn:
        for i in range(rows):
            conn.execute(
                "INSERT INTO sqlar VALUES (?, 420, 0, ?, ?)",
                (f"rom/knowledge/b{i}.md", size, packed),
            )
    return path


def _cases(tmp: Path) -> dict[str, tuple[Path, str]]:
    cases: dict[str, tuple[Path, str]] = {}
    fifo = tmp / "fifo.acx"
    os.mkfifo(fifo)
    cases["fifo"] = (fifo, "not a regular file")
    cases["one-object-over-limit"] = (_bomb(tmp, 1, 80 * 1024**2), "object limit")
    cases["total-over-budget"] = (_bomb(tmp, 6, 60 * 1024**2), "budget")
    truncated = tmp / "truncated.acx"
    truncated.write_bytes(REFERENCE.read_bytes()[:5000])
    cases["truncated"] = (truncated, "truncated")
    wrong = tmp / "wrong.acx"
    data = bytearray(REFERENCE.read_bytes())
    data[68:72] = b"NOPE"
    wrong.write_bytes(bytes(data))
    cases["application-id"] = (wrong, "application_id")
    traversal = tmp / "traversal.acx"
    shutil.copyfile(REFERENCE, traversal)
    with sqlite3.connect(traversal) as conn:
        conn.execute(
            "UPDATE sqlar SET name = '../../etc/passwd' WHERE name = 'rom/knowledge/SKILLS.md'"
        )
    cases["traversal"] = (traversal, "traversal")
    utf8 = tmp / "utf8.acx"
    shutil.copyfile(REFERENCE, utf8)
    with sqlite3.connect(utf8) as conn:
        conn.execute(
            "UPDATE cartridge SET value = CAST(x'fffe41' AS TEXT) WHERE key = 'acx.agent_name'"
        )
    cases["invalid-utf8"] = (utf8, "malformed")
    return cases


@pytest.mark.req(
    "engram.cartridge.hostile-files",
    "engram.cartridge.inflate-budget",
    "engram.cartridge.portable-paths",
)
def test_hostile_cartridges_fail_cleanly_in_bounded_memory(tmp_path: Path) -> None:
    for name, (path, expected) in _cases(tmp_path).items():
        for verb in ("verify", "inspect"):
            done, peak = _run("cartridge", verb, str(path))
            assert done.returncode == 2, (name, verb, done.stdout, done.stderr)
            assert "Traceback" not in done.stderr, (name, done.stderr)
            assert done.stderr.startswith("error: "), (name, done.stderr)
            assert expected in done.stderr, (name, done.stderr)
            PEAKS[f"{name}/{verb}"] = peak
    largest = PEAKS["total-over-budget/verify"]
    print(f"\npeak RSS of the largest hostile cartridge (6 x 60 MiB bombs): {largest // 1024} MiB")
    assert largest < 700 * 1024  # KiB: bounded by the 256 MiB budget plus the interpreter


# --- the same refusals in-process, one rule at a time ------------------------------------------


@pytest.fixture
def signed(tmp_path: Path) -> Path:
    return build_sample(tmp_path)


@pytest.mark.req("engram.cartridge.hostile-files")
def test_a_truncated_file_is_refused(signed: Path) -> None:
    data = signed.read_bytes()
    signed.write_bytes(data[: len(data) - 1024])
    with pytest.raises(CartridgeFormatError, match="truncated cartridge"):
        Cartridge.open(signed)
    signed.write_bytes(data[:60])
    with pytest.raises(CartridgeFormatError, match="shorter than a SQLite header"):
        Cartridge.open(signed)
    signed.write_bytes(b"")
    with pytest.raises(CartridgeFormatError, match="shorter than a SQLite header"):
        Cartridge.open(signed)


@pytest.mark.req("engram.cartridge.hostile-files", "engram.cartridge.container-header")
def test_another_application_id_in_the_header_bytes_is_refused(signed: Path) -> None:
    data = bytearray(signed.read_bytes())
    struct.pack_into(">I", data, 68, 0x4D504246)  # another application's id
    signed.write_bytes(bytes(data))
    with pytest.raises(CartridgeFormatError, match="application_id is 1297105478"):
        Cartridge.open(signed)


@pytest.mark.req("engram.cartridge.hostile-files", "engram.cartridge.inflate-budget")
def test_oversize_rows_are_refused_before_they_are_read(signed: Path) -> None:
    big = b"A" * 5000
    execute(signed, "INSERT INTO sqlar VALUES ('save/big.bin', 33188, 0, ?, ?)", (len(big), big))
    with pytest.raises(CartridgeFormatError, match="over the 4096-byte object limit"):
        Cartridge.open(signed, Limits(max_object_bytes=4096))
    with Cartridge.open(signed) as cartridge:
        assert cartridge.read("save/big.bin") == big


@pytest.mark.req("engram.cartridge.hostile-files", "engram.cartridge.inflate-budget")
def test_a_decompression_bomb_never_inflates_past_its_declared_size(signed: Path) -> None:
    bomb = zlib.compress(b"\x00" * 10_000_000)
    execute(signed, "INSERT INTO sqlar VALUES ('save/bomb', 33188, 0, 20000, ?)", (bomb,))
    with (
        Cartridge.open(signed) as cartridge,
        pytest.raises(CartridgeFormatError, match="does not inflate to its recorded size"),
    ):
        cartridge.read("save/bomb")


@pytest.mark.req("engram.cartridge.hostile-files", "engram.cartridge.inflate-budget")
def test_the_total_budget_is_charged_before_inflating(signed: Path) -> None:
    with Cartridge.open(signed, Limits(max_total_inflated_bytes=1000)) as cartridge:
        with pytest.raises(CartridgeFormatError, match="1000-byte budget"):
            load_rom(cartridge)
        assert cartridge.inflated > 1000  # charged, then refused: nothing past it was read


@pytest.mark.req("engram.cartridge.hostile-files")
@pytest.mark.parametrize(
    ("limits", "message"),
    [
        (Limits(max_rows=5), "more than 5 sqlar rows"),
        (Limits(max_meta_keys=3), "more than 3 keys"),
        (Limits(max_records=0), "more than 0 memory rows"),
        (Limits(max_record_bytes=10), "over the 10-byte record limit"),
        (Limits(max_file_bytes=4096), "over the 4096 limit"),
    ],
)
def test_row_and_size_limits_are_refusals(signed: Path, limits: Limits, message: str) -> None:
    with pytest.raises(CartridgeFormatError, match=message), Cartridge.open(signed, limits) as c:
        load_rom(c)


@pytest.mark.req("engram.cartridge.hostile-files", "engram.cartridge.portable-paths")
def test_traversal_in_a_signed_file_is_refused_before_anything_is_read(signed: Path) -> None:
    execute(
        signed, "INSERT INTO sqlar VALUES ('rom/skills/../../../.bashrc', 33188, 0, 4, x'65636f68')"
    )
    with pytest.raises(CartridgeFormatError, match="path traversal"):
        Cartridge.open(signed)


@pytest.mark.req("engram.cartridge.hostile-files")
@pytest.mark.parametrize(
    "sql",
    [
        "UPDATE cartridge SET value = CAST(x'c328' AS TEXT) WHERE key = 'acx.agent_name'",
        "UPDATE memory SET payload = CAST(x'7b22ff22' AS TEXT)",
        "UPDATE memory SET payload = 7",
        "UPDATE cartridge SET value = x'00' WHERE key = 'acx.role'",
        "UPDATE objects SET sz = 'big' WHERE source_ref LIKE 'memory:%'",
        "UPDATE sqlar SET mtime = -1 WHERE name LIKE 'rom/knowledge/%'",
        "UPDATE sqlar SET data = NULL WHERE name LIKE 'rom/knowledge/%'",
        "UPDATE sqlar SET sz = 3, data = x'0102' WHERE name LIKE 'rom/knowledge/%'",
    ],
)
def test_malformed_column_values_are_format_errors_not_crashes(signed: Path, sql: str) -> None:
    execute(signed, sql)
    try:
        with Cartridge.open(signed) as cartridge:
            report = verify(cartridge)
    except CartridgeFormatError:
        return
    assert report.state is TrustState.TAMPERED, sql


@pytest.mark.req("engram.cartridge.hostile-files")
def test_a_corrupt_page_is_refused_by_the_full_integrity_check(signed: Path) -> None:
    data = bytearray(signed.read_bytes())
    page_size = struct.unpack_from(">H", data, 16)[0]
    for offset in range(page_size * 2, page_size * 3):  # garble the third page entirely
        data[offset] = 0xA5
    signed.write_bytes(bytes(data))
    with (
        pytest.raises(CartridgeFormatError, match=r"corrupt|malformed"),
        Cartridge.open(signed) as cartridge,
    ):
        verify(cartridge)


@pytest.mark.req("engram.cartridge.hostile-files", "engram.cartridge.strip-save")
def test_refused_operations_write_nothing(signed: Path, tmp_path: Path) -> None:
    execute(signed, "INSERT INTO sqlar VALUES ('/abs/path', 33188, 0, 1, x'41')")
    before = digest(signed)
    with pytest.raises(CartridgeFormatError, match="absolute"):
        strip(signed, tmp_path / "out.acx")
    with pytest.raises(CartridgeFormatError, match="absolute"):
        write_save(signed, {"save/x.json": b"{}"}, mtime=0)
    with pytest.raises(CartridgeFormatError, match="absolute"):
        activate(signed, Host(protocol_revisions=("2025-11-25",), tools=()))
    assert digest(signed) == before
    assert not (tmp_path / "out.acx").exists()
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith(".")) == []


@pytest.mark.req("engram.cartridge.hostile-files")
def test_a_rom_path_in_write_save_is_refused_before_any_write(signed: Path) -> None:
    before = digest(signed)
    with pytest.raises(CartridgeFormatError, match="not a SAVE path"):
        write_save(signed, {"rom/skills/x/SKILL.md": b"evil"}, mtime=0)
    with pytest.raises(CartridgeFormatError, match="traversal"):
        write_save(signed, {"save/../rom/x": b"evil"}, mtime=0)
    assert digest(signed) == before


@pytest.fixture(scope="module")
def pristine(tmp_path_factory: pytest.TempPathFactory) -> tuple[bytes, str]:
    path = build_sample(tmp_path_factory.mktemp("pristine"))
    with Cartridge.open(path) as cartridge:
        return path.read_bytes(), verify(cartridge).manifest_hash


def _mutations() -> st.SearchStrategy[list[tuple[int, int]]]:
    # The header range too, which the tamper suite (tests/tamper) leaves alone.
    offsets = st.one_of(st.integers(0, 99), st.integers(100, 1 << 20))
    return st.lists(st.tuples(offsets, st.integers(0, 255)), min_size=1, max_size=8)


@pytest.mark.req("engram.cartridge.hostile-files", "engram.cartridge.live-hashes")
@settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(mutations=_mutations())
def test_mutated_bytes_never_pass_as_intact_other_content(
    pristine: tuple[bytes, str], tmp_path: Path, mutations: list[tuple[int, int]]
) -> None:
    """Any byte mutation is refused, reported tampered, or leaves the ROM meaning unchanged
    (signed, or with its signature gone: unsigned)."""
    source, original_hash = pristine
    data = bytearray(source)
    for offset, value in mutations:
        data[offset % len(data)] = value
    target = tmp_path / "mutated.acx"
    target.write_bytes(bytes(data))
    refusal: str | None = None
    try:
        with Cartridge.open(target) as cartridge:
            report = verify(cartridge)
    except EngramError as e:
        refusal = e.code
    if refusal is not None:
        # Refusals are format errors (or the earlier layout), never anything else.
        assert refusal in {"invalid_cartridge", "legacy_cartridge_layout"}
        return
    if report.state is not TrustState.TAMPERED:
        assert report.manifest_hash == original_hash
        # A byte that hides the signature row (e.g. in its scope) leaves the same content
        # unsigned: SPEC 4.5 calls that legacy, which is never trusted. Other content never passes.
        assert report.state in (TrustState.PORTABLE, TrustState.LEGACY)
