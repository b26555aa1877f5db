"""Hostile and malformed files are refused with clear errors, and nothing is written."""

from __future__ import annotations

import shutil
import struct
from pathlib import Path

import pytest
from acx_kit import build, check, digest, execute
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from engram.cartridge import (
    Cartridge,
    Limits,
    TrustState,
    load_rom,
    plan_import,
    seal,
    strip,
    verify,
)
from engram.core.keys import PrivateKey
from engram.errors import CartridgeFormatError, EngramError


@pytest.mark.req("engram.cartridge.hostile-files")
def test_truncated_file_is_refused(signed: Path) -> None:
    data = signed.read_bytes()
    signed.write_bytes(data[: len(data) - 1024])
    with pytest.raises(CartridgeFormatError, match="truncated cartridge"):
        Cartridge.open(signed)
    signed.write_bytes(data[:60])
    with pytest.raises(CartridgeFormatError, match="shorter than a SQLite header"):
        Cartridge.open(signed)


@pytest.mark.req("engram.cartridge.hostile-files")
def test_wrong_application_id_in_the_header_bytes_is_refused(signed: Path) -> None:
    data = bytearray(signed.read_bytes())
    struct.pack_into(">I", data, 68, 0x4D504246)  # another application's id
    signed.write_bytes(bytes(data))
    with pytest.raises(CartridgeFormatError, match="application_id is 1297105478"):
        Cartridge.open(signed)


@pytest.mark.req("engram.cartridge.hostile-files")
def test_oversize_rows_are_refused_before_they_are_read(signed: Path) -> None:
    big = b"A" * 5000
    execute(signed, "INSERT INTO sqlar VALUES ('save/big.bin', 33188, 0, ?, ?)", (len(big), big))
    with pytest.raises(CartridgeFormatError, match="over the 4096-byte row limit"):
        Cartridge.open(signed, Limits(max_row_bytes=4096))
    assert Cartridge.open(signed).read("save/big.bin") == big


@pytest.mark.req("engram.cartridge.hostile-files")
def test_a_decompression_bomb_is_refused(signed: Path) -> None:
    import zlib

    bomb = zlib.compress(b"\x00" * 10_000_000)
    execute(signed, "INSERT INTO sqlar VALUES ('save/bomb', 33188, 0, 20000, ?)", (bomb,))
    with (
        Cartridge.open(signed) as cartridge,
        pytest.raises(CartridgeFormatError, match="does not inflate to its recorded size"),
    ):
        cartridge.read("save/bomb")


@pytest.mark.req("engram.cartridge.hostile-files")
def test_too_many_rows_are_refused(signed: Path) -> None:
    with pytest.raises(CartridgeFormatError, match="more than 5 sqlar rows"):
        Cartridge.open(signed, Limits(max_rows=5))


@pytest.mark.req("engram.cartridge.hostile-files", "engram.cartridge.portable-paths")
def test_traversal_in_signed_content_is_refused_before_loading(
    tmp_path: Path, key: PrivateKey
) -> None:
    """A cartridge signed by its author whose ROM names a traversal path is still refused."""
    path = build(tmp_path / "evil.acx", key=key)
    execute(
        path, "INSERT INTO sqlar VALUES ('rom/skills/../../../.bashrc', 33188, 0, 4, x'65636f68')"
    )
    with pytest.raises(CartridgeFormatError, match="path traversal"):
        Cartridge.open(path)


@pytest.mark.req("engram.cartridge.hostile-files")
def test_refused_operations_write_nothing(signed: Path, tmp_path: Path, key: PrivateKey) -> None:
    execute(signed, "INSERT INTO sqlar VALUES ('/abs/path', 33188, 0, 1, x'41')")
    before = digest(signed)
    with pytest.raises(CartridgeFormatError, match="absolute"):
        seal(signed, key)
    with pytest.raises(CartridgeFormatError, match="absolute"):
        strip(signed, tmp_path / "out.acx")
    assert digest(signed) == before
    assert not (tmp_path / "out.acx").exists()
    assert sorted(p.name for p in signed.parent.iterdir() if p.name.startswith(".")) == []


def _mutations() -> st.SearchStrategy[list[tuple[int, int]]]:
    # Mostly past the 100-byte header, where SQLite itself has to notice (or not) the change.
    offsets = st.one_of(st.integers(0, 99), st.integers(100, 1 << 20), st.integers(100, 1 << 20))
    return st.lists(st.tuples(offsets, st.integers(0, 255)), min_size=1, max_size=8)


@pytest.fixture(scope="module")
def pristine(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    from acx_kit import write_skills

    root = tmp_path_factory.mktemp("pristine")
    key = PrivateKey.generate()
    path = build(root / "pristine.acx", key=key, skills=write_skills(root))
    return path, check(path).manifest_hash


@pytest.mark.req("engram.cartridge.hostile-files", "engram.cartridge.live-hashes")
@settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(mutations=_mutations())
def test_mutated_bytes_never_pass_as_intact_other_content(
    pristine: tuple[Path, str], tmp_path: Path, mutations: list[tuple[int, int]]
) -> None:
    """Any byte mutation is refused, reported tampered, or leaves the ROM meaning unchanged."""
    source, original_hash = pristine
    data = bytearray(source.read_bytes())
    for offset, value in mutations:
        data[offset % len(data)] = value
    target = tmp_path / "mutated.acx"
    target.write_bytes(bytes(data))
    try:
        with Cartridge.open(target) as cartridge:
            report = verify(cartridge)
            if report.state is not TrustState.TAMPERED:
                assert report.manifest_hash == original_hash
                assert report.state is TrustState.PORTABLE
                rom = load_rom(cartridge)
                assert rom.manifest_hash == original_hash
            plan = plan_import(cartridge, existing=[], accept={TrustState.PORTABLE})
            assert plan.report.state is TrustState.PORTABLE
    except EngramError as e:
        # Refusals are the format error or the trust refusal, never anything else.
        assert e.code in {"invalid_cartridge", "untrusted_cartridge"}, e  # noqa: PT017
    finally:
        shutil.rmtree(tmp_path, ignore_errors=True)
        tmp_path.mkdir()
