"""Cartridges the ACX reference implementation built (tests/vectors/acx-reference-built/) open,
verify, strip and import in engram.

tests/vectors/acx-reference-built/SOURCE.txt says how each file was made: the reference CLI's
``export`` of its sample agent package, signed with a throwaway key whose public half is beside
the file. SPEC §3-§8 (lboel/acx@85f1358).
"""

from __future__ import annotations

import json
import shutil
import sqlite3
import zlib
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from cartridge_kit import REFERENCE_BUILT, Seat, registry_for, rows

from engram.cartridge import Cartridge, derive_skills, load_rom, spec_report, strip, verify
from engram.cli import cli, run_cli
from engram.core.keys import PublicKey
from engram.trust import TrustState

PUBLISHER = "io.github.acx-interop"
NAMES = ("sample", "field-learned", "no-memory")
HASHES = {
    "sample": "sha256:a52dbfa6510e6157c4ec00e7c09efd8c518cf47666574c84b2f6c4d6d31c4cf0",
    "field-learned": "sha256:0e40d9388ba203b6f7f474e80053f72558c1c8586969969fdf8baddf5cc50d0d",
    "no-memory": "sha256:862cac9401aa589a5c7795e6d2938507deee72191144c63909520848a50b5bd7",
}
SIGNED_AT = datetime(2026, 4, 3, 13, 35, 46, 190000, tzinfo=UTC)


def _file(name: str) -> Path:
    return REFERENCE_BUILT / f"{name}.acx"


def _key(name: str) -> PublicKey:
    return PublicKey.from_pem((REFERENCE_BUILT / f"{name}.pub.pem").read_bytes())


@pytest.mark.req("engram.cartridge.reference-built", "engram.cartridge.rom-manifest")
@pytest.mark.parametrize("name", NAMES)
def test_each_verifies_portable_without_a_registry(name: str) -> None:
    with Cartridge.open(_file(name)) as cartridge:
        report = verify(cartridge)
    assert report.state is TrustState.PORTABLE, report.reason
    assert report.signature_verified
    assert report.manifest_hash == HASHES[name]
    assert report.keyid == _key(name).key_id
    assert report.publisher_id == PUBLISHER
    assert report.signed_at == SIGNED_AT


@pytest.mark.req("engram.cartridge.reference-built", "engram.cartridge.trust-order")
@pytest.mark.parametrize("name", NAMES)
def test_each_is_trusted_with_a_registry_that_binds_its_key(name: str) -> None:
    registry = registry_for(_key(name), PUBLISHER)
    with Cartridge.open(_file(name)) as cartridge:
        report = verify(cartridge, registry=registry, now=datetime(2026, 7, 20, tzinfo=UTC))
    assert report.state is TrustState.TRUSTED, report.reason
    other = registry_for(_key("sample" if name != "sample" else "no-memory"), PUBLISHER)
    with Cartridge.open(_file(name)) as cartridge:
        assert verify(cartridge, registry=other).state is TrustState.PORTABLE


def _flip(path: Path, ref: str) -> None:
    conn = sqlite3.connect(path)
    try:
        if ref.startswith("memory:"):
            conn.execute("UPDATE memory SET payload = payload || ' ' WHERE id = ?", (ref[7:],))
        elif ref.startswith("capability:"):
            conn.execute("UPDATE capabilities SET json = json || ' ' WHERE id = ?", (ref[11:],))
        elif ref.startswith("cartridge:"):
            conn.execute("UPDATE cartridge SET value = value || 'x' WHERE key = ?", (ref[10:],))
        else:
            ((sz, data),) = conn.execute("SELECT sz, data FROM sqlar WHERE name = ?", (ref,))
            raw = data if len(data) == sz else zlib.decompress(data, -15)
            changed = bytes([raw[0] ^ 1]) + raw[1:]  # one byte of the file's content
            conn.execute("UPDATE sqlar SET data = ? WHERE name = ?", (changed, ref))
        conn.commit()
    finally:
        conn.close()


@pytest.mark.req("engram.cartridge.reference-built", "engram.cartridge.live-hashes")
@pytest.mark.parametrize("name", NAMES)
def test_a_one_byte_change_to_any_rom_object_is_tampered(name: str, tmp_path: Path) -> None:
    refs = [r for (r,) in rows(_file(name), "SELECT source_ref FROM objects WHERE zone = 'rom'")]
    assert len(refs) > 20
    target = tmp_path / "mutant.acx"
    for ref in refs:
        shutil.copyfile(_file(name), target)
        _flip(target, ref)
        with Cartridge.open(target) as cartridge:
            assert verify(cartridge).state is TrustState.TAMPERED, ref


@pytest.mark.req("engram.cartridge.reference-built", "engram.cartridge.strip-save")
@pytest.mark.parametrize("name", NAMES)
def test_strip_keeps_the_hash_and_the_signature(name: str, tmp_path: Path) -> None:
    out = tmp_path / "rom.acx"
    result = strip(_file(name), out)
    assert result.before == result.after == HASHES[name]
    with Cartridge.open(out) as cartridge:
        report = verify(cartridge)
        assert report.state is TrustState.PORTABLE
        assert report.signature_verified
        assert [m.zone for m in load_rom(cartridge).memories.values()] == (
            [] if name == "no-memory" else ["rom"]
        )


@pytest.mark.req("engram.cartridge.reference-built", "engram.cartridge.package-spec")
@pytest.mark.parametrize("name", NAMES)
def test_each_is_cleanly_specified_and_lists_its_skill(name: str) -> None:
    with Cartridge.open(_file(name)) as cartridge:
        rom = load_rom(cartridge)
    report = spec_report(rom)
    assert report.clean, report.issues
    assert [s.name for s in derive_skills(rom.files)] == ["expertise-designer"]
    # The reference keys acx_skill by sqlar_path (SPEC §5.3 keys it by name); engram reads both.
    assert rows(_file(name), "SELECT sqlar_path, name FROM acx_skill") == [
        ("rom/skills/expertise-designer/SKILL.md", "expertise-designer")
    ]


@pytest.mark.req("engram.cartridge.reference-built", "engram.cartridge.export-partition")
def test_the_field_learned_record_is_in_save_and_outside_the_signature() -> None:
    with Cartridge.open(_file("field-learned")) as cartridge:
        rom = load_rom(cartridge)
    zones = {m.id: m.zone for m in rom.memories.values()}
    assert zones == {"mem-ge-mnhsl3xg": "rom", "mem-fl-runner-pool": "save"}
    saved: dict[str, Any] = rom.memories["mem-fl-runner-pool"].record()
    assert saved["foreign"] is True
    assert saved["repoId"] is None
    assert saved["codebaseFingerprint"].startswith("cbf1_")
    assert "memory:mem-fl-runner-pool" not in {str(e["sourceRef"]) for e in rom.manifest}
    # The reference leaves user_version's SAVE flag clear although SAVE holds a row (§3.1 says
    # bit0 = SAVE present); engram reads the file all the same (docs/spec/acx.md §2).
    assert rows(_file("field-learned"), "PRAGMA user_version") == [(16777472,)]


@pytest.mark.req("engram.cartridge.reference-built", "engram.cartridge.store-round-trip")
def test_their_memories_import_and_foreign_field_learned_memory_stays_out(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    seat = Seat(tmp_path / "b", "b" * 16)
    counts = {}
    for name in NAMES:
        code = run_cli(
            cli,
            [
                "cartridge",
                "import",
                str(_file(name)),
                "--accept",
                "portable",
                "--json",
                *seat.args(),
            ],
        )
        out, err = capsys.readouterr()
        assert code == 0, err
        summary = json.loads(out)
        counts[name] = (summary["imported"], summary["alreadyKnown"], summary["quarantined"])
    # The same transferable record is in sample and field-learned: it is imported once.
    assert counts == {"sample": (1, 0, 0), "field-learned": (0, 1, 1), "no-memory": (0, 0, 0)}
    texts = [str(m["text"]) for m in seat.memories("seat:engram-implementer")]
    assert texts == [
        "Scenario Research Designer joined the company\n\nNew designer added to design."
    ]
