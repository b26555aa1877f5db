"""Cartridge flows end to end: memories recorded in one store travel through a cartridge into
another; the reference's memories import; vectors are never read on import; engram's earlier
layout names `upgrade`, which re-packs it (and refuses a changed file).

SPEC §7.3, §7.6 (lboel/acx@85f1358); docs/spec/acx.md §8.4 and §14.
"""

from __future__ import annotations

import hashlib
import sqlite3
from pathlib import Path

import pytest
from cartridge_kit import REFERENCE, SALT, Seat, build_sample, key_file

from engram.cartridge import Cartridge, verify
from engram.cli import cli, run_cli
from engram.core.canonical import canonicalize
from engram.trust import TrustState

NOTES = ("Deploys go out on Tuesdays.", "The API is versioned by date.")


def _cli(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = run_cli(cli, list(args))
    out, err = capsys.readouterr()
    return code, out, err


def _texts(seat: Seat, ring_id: str = "seat:engram-implementer") -> list[str]:
    return sorted(str(m["text"]) for m in seat.memories(ring_id))


@pytest.mark.req("engram.cartridge.store-round-trip", "engram.cartridge.merge-idempotent")
def test_memories_move_between_two_stores_once(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    a, b = Seat(tmp_path / "a"), Seat(tmp_path / "b")
    notes = tmp_path / "notes.jsonl"
    notes.write_bytes(
        b"".join(canonicalize({"text": t, "kind": "fact", "ring": "M4"}) + b"\n" for t in NOTES)
    )
    assert _cli(capsys, "record", "--from", str(notes), *a.args())[0] == 0
    key, _ = key_file(tmp_path)
    out = tmp_path / "seat.acx"
    code, _, err = _cli(
        capsys, "cartridge", "export", "-o", str(out), "--publisher", "io.github.acme",
        "--sign-key", str(key), "--ring", "M4", "--artifact-id", "seat", *a.args(),
    )  # fmt: skip
    assert code == 0, err
    importing = ["cartridge", "import", str(out), "--accept", "portable", *b.args()]
    code, text, err = _cli(capsys, *importing)
    assert code == 0, err
    assert "imported 2" in text
    assert _texts(b) == sorted(NOTES) == _texts(a)
    code, text, err = _cli(capsys, *importing)
    assert code == 0, err
    assert "imported 0" in text
    assert "2 already known" in text
    assert _texts(b) == sorted(NOTES)
    code, _, err = _cli(capsys, "cartridge", "import", str(out), *b.args())
    assert code == 1
    assert "untrusted_cartridge" in err  # portable is not accepted by default


@pytest.mark.req("engram.cartridge.reference-interop", "engram.cartridge.store-round-trip")
def test_the_reference_cartridges_memory_imports(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    b = Seat(tmp_path / "b")
    importing = ["cartridge", "import", str(REFERENCE), "--accept", "portable", *b.args()]
    code, text, err = _cli(capsys, *importing)
    assert code == 0, err
    assert "imported 1" in text
    (memory,) = b.memories("seat:engram-implementer")
    assert memory["kind"] == "knowledge"  # its sourceType
    assert _cli(capsys, *importing)[1].count("1 already known") == 1


@pytest.mark.req("engram.cartridge.memory-baseline")
def test_vectors_are_never_read_on_import(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """§7.6: the consumer re-indexes from the JSON baseline and discards foreign vectors."""
    path = build_sample(tmp_path)
    with sqlite3.connect(path) as conn:
        conn.execute("UPDATE vectors SET embedding = zeroblob(8), zone = 'elsewhere'")
        conn.execute("INSERT INTO vectors VALUES ('ghost', 'rom', x'00', NULL)")
    with Cartridge.open(path) as cartridge:
        assert verify(cartridge).state is TrustState.PORTABLE  # vectors are outside the manifest
    b = Seat(tmp_path / "b")
    importing = ["cartridge", "import", str(path), "--accept", "portable", *b.args()]
    code, text, err = _cli(capsys, *importing)
    assert code == 0, err
    assert "imported 1" in text


def _old_layout(path: Path, files: dict[str, bytes] | None = None) -> dict[str, bytes]:
    """A cartridge in engram's layout before the SPEC.md alignment (acx_meta, acx_object)."""
    conn = sqlite3.connect(path)
    conn.execute("PRAGMA application_id = 1094932529")
    conn.execute("PRAGMA user_version = 16777472")
    conn.execute(
        "CREATE TABLE sqlar(name TEXT PRIMARY KEY, mode INT, mtime INT, sz INT, data BLOB)"
    )
    conn.execute("CREATE TABLE acx_meta(key TEXT PRIMARY KEY NOT NULL, value TEXT NOT NULL) STRICT")
    conn.execute(
        "CREATE TABLE acx_object(path TEXT PRIMARY KEY NOT NULL, kind TEXT NOT NULL, "
        "mode INTEGER NOT NULL, size INTEGER NOT NULL, oid TEXT) STRICT"
    )
    old = {"kind": "fact", "entities": []}
    records = [
        {**old, "id": "r1", "text": "Old but true.", "tier": "transferable"},
        {**old, "id": "r2", "text": "Local CI quirk.", "tier": "field-learned",
         "codebaseFingerprint": "0123456789abcdef"},
    ]  # fmt: skip
    content = files or {
        "rom/cartridge.json": canonicalize(
            {"artifactId": "old", "artifactVersion": "1.0.0", "publisherId": "io.github.acme"}
        ),
        "rom/memory/records.jsonl": b"".join(canonicalize(r) + b"\n" for r in records),
        "rom/skills/old-skill/SKILL.md": (
            b"---\nname: old-skill\ndescription: An old skill.\n---\nbody\n"
        ),
        "save/notes.md": b"local notes\n",
    }
    for name, data in content.items():
        conn.execute("INSERT INTO sqlar VALUES (?, 33188, 0, ?, ?)", (name, len(data), data))
        conn.execute(
            "INSERT INTO acx_object VALUES (?, 'file', 33188, ?, ?)",
            (name, len(data), hashlib.sha256(data).hexdigest()),
        )
    conn.commit()
    conn.close()
    return content


@pytest.mark.req("engram.cartridge.upgrade")
def test_an_old_layout_file_names_upgrade_and_upgrades(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    old = tmp_path / "old.acx"
    content = _old_layout(old)
    code, _, err = _cli(capsys, "cartridge", "verify", str(old))
    assert code == 2
    assert "engram cartridge upgrade old.acx NEW.acx --sign-key KEY" in err
    key, _ = key_file(tmp_path)
    new = tmp_path / "new.acx"
    upgrade = ["cartridge", "upgrade", str(old), str(new), "--sign-key", str(key)]
    code, text, err = _cli(capsys, *upgrade)
    assert code == 0, err
    assert "1 carried, 1 field-learned left out" in text
    with Cartridge.open(new) as cartridge:
        report = verify(cartridge)
        assert (
            cartridge.read("rom/skills/old-skill/SKILL.md")
            == content["rom/skills/old-skill/SKILL.md"]
        )
        assert cartridge.read("save/notes.md") == b"local notes\n"
    assert report.state is TrustState.PORTABLE
    assert report.signature_verified
    salt = tmp_path / "salt"
    salt.write_bytes(SALT)
    new.unlink()
    code, text, err = _cli(capsys, *upgrade, "--installation-salt-file", str(salt))
    assert code == 0, err
    assert "2 carried, 0 field-learned left out" in text


@pytest.mark.req("engram.cartridge.upgrade", "engram.cartridge.live-hashes")
def test_upgrade_refuses_to_re_sign_a_changed_old_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    old = tmp_path / "old.acx"
    _old_layout(old)
    with sqlite3.connect(old) as conn:
        conn.execute(
            "UPDATE sqlar SET data = CAST('---\nname: old-skill\ndescription: evil\n---\n' "
            "AS BLOB), sz = 42 WHERE name = 'rom/skills/old-skill/SKILL.md'"
        )
    key, _ = key_file(tmp_path)
    code, _, err = _cli(
        capsys, "cartridge", "upgrade", str(old), str(tmp_path / "new.acx"), "--sign-key", str(key)
    )
    assert code == 2
    assert "no longer matches the hash its old index recorded" in err
    assert not (tmp_path / "new.acx").exists()


@pytest.mark.req("engram.cartridge.upgrade", "engram.cartridge.scrub-gate")
def test_upgrade_runs_the_scrub_gate_too(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    old = tmp_path / "old.acx"
    _old_layout(
        old,
        {
            "rom/cartridge.json": b'{"artifactId":"old","artifactVersion":"1.0.0",'
            b'"publisherId":"io.github.acme"}',
            "rom/memory/records.jsonl": canonicalize(
                {
                    "id": "r1",
                    "kind": "fact",
                    "text": "key AKIAIOSFODNN7EXAMPLE",
                    "tier": "transferable",
                }
            ),
        },
    )
    key, _ = key_file(tmp_path)
    code, _, err = _cli(
        capsys, "cartridge", "upgrade", str(old), str(tmp_path / "new.acx"), "--sign-key", str(key)
    )
    assert code == 2
    assert "scrub_blocked" in err
    assert not (tmp_path / "new.acx").exists()


@pytest.mark.req("engram.cartridge.upgrade", "engram.cartridge.hostile-files")
@pytest.mark.parametrize(
    ("name", "data", "size", "message"),
    [
        ("/etc/cron.d/x", b"x", 1, "absolute"),
        ("rom/x.md", b"\x78\x9c" + b"\xff" * 20, 10_000, "does not inflate"),
        ("rom/y.md", b"x", 100 * 1024**2, "object limit"),
    ],
)
def test_upgrade_refuses_a_hostile_old_file_in_one_line(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    name: str,
    data: bytes,
    size: int,
    message: str,
) -> None:
    old = tmp_path / "old.acx"
    _old_layout(old)
    with sqlite3.connect(old) as conn:
        conn.execute("INSERT INTO sqlar VALUES (?, 33188, 0, ?, ?)", (name, size, data))
    key, _ = key_file(tmp_path)
    code, _, err = _cli(
        capsys, "cartridge", "upgrade", str(old), str(tmp_path / "new.acx"), "--sign-key", str(key)
    )
    assert code == 2
    assert err.startswith("error: invalid_cartridge: ")
    assert err.count("\n") == 1
    assert message in err
