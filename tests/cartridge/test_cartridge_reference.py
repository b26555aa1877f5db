"""The reference implementation's published cartridge (lboel/acx@85f1358) opens and verifies.

The registry index's published digest is the oracle for the ROM manifest (SPEC §3.3); the
reference's own key, bound in a registry we write, makes it ``trusted`` (§4.4-§4.5); a one-byte
change to any ROM object makes it ``tampered``.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
import subprocess
import zlib
from pathlib import Path

import pytest
from cartridge_kit import (
    NOW,
    REFERENCE,
    REFERENCE_HASH,
    REFERENCE_INDEX,
    REFERENCE_KEY_PEM,
    copy_reference,
    registry_for,
)

from engram.cartridge import (
    Cartridge,
    derive_skills,
    install_skills,
    load_rom,
    spec_report,
    strip,
    verify,
)
from engram.core.keys import PublicKey
from engram.trust import TrustRegistry, TrustState


def _registry() -> TrustRegistry:
    return registry_for(PublicKey.from_pem(REFERENCE_KEY_PEM.encode()), "io.github.ridgeworks")


@pytest.mark.req("engram.cartridge.rom-manifest", "engram.cartridge.reference-interop")
def test_the_manifest_hash_is_the_registry_index_digest() -> None:
    index = json.loads(REFERENCE_INDEX.read_text())
    digests = [a.get("digest") for a in _walk(index) if isinstance(a, dict)]
    assert REFERENCE_HASH in digests
    with Cartridge.open(REFERENCE) as cartridge:
        report = verify(cartridge)
        rom = load_rom(cartridge)
    assert rom.manifest_hash == REFERENCE_HASH
    assert report.state is TrustState.PORTABLE
    assert report.signature_verified
    assert report.manifest_hash == REFERENCE_HASH
    assert report.publisher_id == "io.github.ridgeworks"


def _walk(value: object) -> list[object]:
    out: list[object] = [value]
    if isinstance(value, dict):
        for v in value.values():
            out += _walk(v)
    elif isinstance(value, list):
        for v in value:
            out += _walk(v)
    return out


@pytest.mark.req("engram.cartridge.trust-order", "engram.cartridge.reference-interop")
def test_a_registry_binding_its_publisher_to_its_key_makes_it_trusted() -> None:
    with Cartridge.open(REFERENCE) as cartridge:
        report = verify(cartridge, registry=_registry(), now=NOW)
    assert report.state is TrustState.TRUSTED, report.reason
    with Cartridge.open(REFERENCE) as cartridge:
        mine = verify(cartridge, registry=_registry(), now=NOW, local_keyids=[report.keyid or ""])
    assert mine.state is TrustState.LOCAL


def _rom_sources(path: Path) -> list[tuple[str, str]]:
    with sqlite3.connect(path) as conn:
        return [
            (str(k), str(r))
            for k, r in conn.execute("SELECT kind, source_ref FROM objects WHERE zone='rom'")
        ]


def _flip_one_byte(path: Path, ref: str) -> None:
    conn = sqlite3.connect(path)
    try:
        if ref.startswith("memory:"):
            conn.execute(
                "UPDATE memory SET payload = replace(payload, 'pattern', 'patterx') WHERE id = ?",
                (ref[7:],),
            )
        elif ref.startswith("capability:"):
            conn.execute(
                "UPDATE capabilities SET json = replace(json, '\"mu\":25', '\"mu\":26') "
                "WHERE id = ?",
                (ref[11:],),
            )
        elif ref.startswith("cartridge:"):
            conn.execute("UPDATE cartridge SET value = value || 'x' WHERE key = ?", (ref[10:],))
        else:
            (data,) = conn.execute("SELECT data FROM sqlar WHERE name = ?", (ref,)).fetchone()
            raw = zlib.decompress(data, -15)
            changed = bytes([raw[0] ^ 1]) + raw[1:]
            packed = zlib.compress(changed)
            stored = packed if len(packed) < len(changed) else changed
            conn.execute("UPDATE sqlar SET data = ? WHERE name = ?", (stored, ref))
        conn.commit()
    finally:
        conn.close()


@pytest.mark.req("engram.cartridge.live-hashes", "engram.cartridge.reference-interop")
def test_a_one_byte_change_to_any_rom_object_is_tampered(tmp_path: Path) -> None:
    sources = _rom_sources(REFERENCE)
    assert len(sources) == 27
    for _kind, ref in sources:
        target = copy_reference(tmp_path)
        _flip_one_byte(target, ref)
        with Cartridge.open(target) as cartridge:
            report = verify(cartridge)
        assert report.state is TrustState.TAMPERED, ref
        target.unlink()


@pytest.mark.req("engram.cartridge.strip-save", "engram.cartridge.reference-interop")
def test_strip_keeps_the_manifest_hash_and_the_signature(tmp_path: Path) -> None:
    result = strip(REFERENCE, tmp_path / "rom.acx")
    assert result.before == result.after == REFERENCE_HASH
    with Cartridge.open(tmp_path / "rom.acx") as cartridge:
        report = verify(cartridge)
    assert report.state is TrustState.PORTABLE
    assert report.signature_verified


@pytest.mark.req("engram.cartridge.skill-index", "engram.cartridge.reference-interop")
def test_its_skills_list_and_install_byte_for_byte(tmp_path: Path) -> None:
    with Cartridge.open(REFERENCE) as cartridge:
        rom = load_rom(cartridge)
    skills = derive_skills(rom.files)
    assert [s.name for s in skills] == ["expertise-devops-engineer"]
    listing = subprocess.run(
        ["sqlite3", str(REFERENCE), "-At"], capture_output=True, text=True, check=True
    )
    assert "rom/skills/expertise-devops-engineer/SKILL.md" in listing.stdout.split()
    written = install_skills(rom, tmp_path / "skills")
    data = written[0].read_bytes()
    assert hashlib.sha256(data).hexdigest() == skills[0].content_sha256
    with sqlite3.connect(REFERENCE) as conn:
        (oid,) = conn.execute(
            "SELECT oid FROM objects WHERE source_ref = ?", (skills[0].sqlar_path,)
        ).fetchone()
    assert oid == "sha256:" + skills[0].content_sha256
    # The reference stores raw Deflate, which stock sqlite3 -Ax cannot inflate (it reads zlib):
    # docs/spec/acx.md §2 records this departure of the reference; engram reads both forms.
    failed = subprocess.run(
        ["sqlite3", str(REFERENCE), "-Ax"], cwd=tmp_path, capture_output=True, text=True
    )
    assert "uncompress" in failed.stderr


@pytest.mark.req("engram.cartridge.package-spec", "engram.cartridge.reference-interop")
def test_its_package_spec_is_clean() -> None:
    with Cartridge.open(REFERENCE) as cartridge:
        report = spec_report(load_rom(cartridge))
    assert report.clean, report.issues


@pytest.mark.req("engram.cartridge.reference-interop")
def test_verify_prints_portable_and_the_published_hash(engram_shell: object) -> None:
    done = engram_shell("cartridge", "verify", str(REFERENCE))  # type: ignore[operator]
    assert done.returncode == 0, done.stderr
    assert "trust:    portable" in done.stdout
    assert REFERENCE_HASH in done.stdout
