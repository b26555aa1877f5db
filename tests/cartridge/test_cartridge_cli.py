"""``engram cartridge ...`` end to end, and a cartridge moving between two separate stores."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest
from acx_kit import RECORDS, execute

from engram.cli import cli
from engram.cli._app import run_cli
from engram.core.keys import PrivateKey, save_private_key
from engram.memory import default_manifest_text, export_memories
from engram.store import open_store


class Seat:
    """One HOME: its own seat manifest (with its own M2 codebase ring) and SQLite database."""

    def __init__(self, root: Path, repo_hex: str) -> None:
        root.mkdir()
        self.ote = root / "ote.toml"
        self.ote.write_text(
            default_manifest_text().replace("repo:0000000000000000", f"repo:{repo_hex}")
        )
        self.db = root / "engram.db"
        self.url = f"sqlite:///{self.db}"

    def args(self) -> list[str]:
        return ["--ote", str(self.ote), "--database", self.url]

    def memories(self, ring_id: str) -> list[dict[str, object]]:
        store = open_store(self.url)
        try:
            return [r.memory.to_json() for r in export_memories(store, ring_id)]
        finally:
            store.close()


def _run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = run_cli(cli, list(args))
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture
def sign_key(tmp_path: Path) -> Path:
    path = tmp_path / "publisher.pem"
    save_private_key(path, PrivateKey.generate())
    return path


@pytest.fixture
def seats(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> tuple[Seat, Seat]:
    """Store A holds three seat memories and one repository memory; store B is empty."""
    a, b = Seat(tmp_path / "a", "a" * 16), Seat(tmp_path / "b", "b" * 16)
    lines = [{"text": r["text"], "kind": r["kind"], "ring": "M4"} for r in RECORDS] + [
        {"text": "Our CI runs on the self-hosted runner pool.", "kind": "fact", "ring": "M2"}
    ]
    source = tmp_path / "a-records.jsonl"
    source.write_text("".join(json.dumps(line) + "\n" for line in lines))  # noqa: TID251
    assert _run(capsys, "record", "--from", str(source), *a.args())[0] == 0
    return a, b


@pytest.mark.req("engram.cartridge.store-round-trip", "engram.cartridge.merge-idempotent")
def test_round_trip_between_two_stores_without_duplicates(
    seats: tuple[Seat, Seat],
    skills: Path,
    sign_key: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    a, b = seats
    out = tmp_path / "seat.acx"
    code, text, _ = _run(
        capsys,
        "cartridge",
        "export",
        "--ring",
        "M4",
        "--skills",
        str(skills),
        "--publisher",
        "io.github.acme",
        "--sign-key",
        str(sign_key),
        "-o",
        str(out),
        *a.args(),
    )
    assert code == 0, text
    assert "3 memory record(s)" in text
    code, text, _ = _run(capsys, "cartridge", "verify", str(out), "--own-key", str(sign_key))
    assert (code, text.split(":")[0]) == (0, "local")

    imported = ["cartridge", "import", str(out), "--ring", "M4", "--accept", "portable", "--json"]
    code, text, err = _run(capsys, *imported, *b.args())
    assert code == 0, err
    first = json.loads(text)
    assert (first["imported"], first["duplicateId"], first["trust"]["state"]) == (3, 0, "portable")
    code, text, _ = _run(capsys, *imported, *b.args())
    second = json.loads(text)
    assert (second["imported"], second["duplicateId"]) == (0, 3)

    received = b.memories("seat:engram-implementer")
    assert len(received) == 3
    assert sorted(str(m["text"]) for m in received) == sorted(r["text"] for r in RECORDS)
    assert all(m["status"] == "candidate" and m["origin"] == "import" for m in received)
    provenance = [m["provenance"] for m in received]
    assert all(str(p["manifestHash"]).startswith("sha256:") for p in provenance)  # type: ignore[index]
    # Vectors were re-indexed by B's own engine, never copied from the cartridge.
    with sqlite3.connect(b.db) as conn:
        tables = {n for (n,) in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
        vector_table = next(t for t in tables if "vector" in t and "dense" not in t)
        count = conn.execute(f"SELECT count(*) FROM {vector_table}").fetchone()[0]  # noqa: S608
    assert count == 3


@pytest.mark.req("engram.cartridge.export-partition", "engram.cartridge.store-round-trip")
def test_repository_memory_is_field_learned_and_stays_home(
    seats: tuple[Seat, Seat], sign_key: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    a, b = seats
    out = tmp_path / "repo.acx"
    export = ["cartridge", "export", "--ring", "M2", "--publisher", "io.github.acme"]
    assert _run(capsys, *export, "--sign-key", str(sign_key), "-o", str(out), *a.args())[0] == 0
    code, text, _ = _run(capsys, "cartridge", "inspect", str(out), "--json")
    assert code == 0
    assert json.loads(text)["memory"] == {"records": 1, "transferable": 0, "field-learned": 1}
    importing = ["cartridge", "import", str(out), "--ring", "M3", "--accept", "portable", "--json"]
    code, text, _ = _run(capsys, *importing, *b.args())
    assert json.loads(text)["quarantined"] == 1
    assert json.loads(text)["imported"] == 0
    assert b.memories("team:shared") == []
    # Back home (A's own codebase fingerprint) the same record is not foreign: it is projected.
    code, text, _ = _run(capsys, *importing, *a.args())
    home = json.loads(text)
    assert (home["imported"], home["quarantined"]) == (1, 0)
    assert [m["text"] for m in a.memories("team:shared")] == [
        "Our CI runs on the self-hosted runner pool."
    ]


@pytest.mark.req("engram.cartridge.store-round-trip", "engram.cartridge.hostile-files")
def test_import_refuses_tampered_and_untrusted_cartridges_without_writing(
    seats: tuple[Seat, Seat], sign_key: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    a, b = seats
    out = tmp_path / "seat.acx"
    export = ["cartridge", "export", "--ring", "M4", "--publisher", "io.github.acme"]
    assert _run(capsys, *export, "--sign-key", str(sign_key), "-o", str(out), *a.args())[0] == 0
    code, _, err = _run(capsys, "cartridge", "import", str(out), *b.args())
    assert code == 1
    assert "untrusted_cartridge" in err
    assert "portable" in err
    execute(out, "UPDATE acx_object SET oid = 'ff' WHERE path = 'rom/memory/records.jsonl'")
    code, text, _ = _run(capsys, "cartridge", "verify", str(out))
    assert code == 1
    assert text.startswith("tampered")
    code, _, err = _run(capsys, "cartridge", "import", str(out), "--accept", "portable", *b.args())
    assert code == 1
    assert "tampered" in err
    assert b.memories("seat:engram-implementer") == []


@pytest.mark.req("engram.cartridge.strip-save", "engram.cartridge.dsse-rom-manifest")
def test_build_sign_strip_inspect(
    skills: Path, sign_key: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    memories = tmp_path / "m.jsonl"
    memories.write_text("".join(json.dumps(r) + "\n" for r in RECORDS))  # noqa: TID251
    out = tmp_path / "g.acx"
    code, text, err = _run(
        capsys,
        "cartridge",
        "build",
        "--skills",
        str(skills),
        "--memories",
        str(memories),
        "--publisher",
        "io.github.acme",
        "-o",
        str(out),
    )
    assert code == 0, err
    assert "unsigned (legacy)" in text
    assert _run(capsys, "cartridge", "verify", str(out))[1].startswith("legacy")
    code, text, _ = _run(capsys, "cartridge", "sign", str(out), "--sign-key", str(sign_key))
    assert code == 0
    digest = text.split("sha256:")[1].split()[0]
    code, text, _ = _run(capsys, "cartridge", "verify", str(out), "--json")
    assert json.loads(text)["state"] == "portable"
    assert json.loads(text)["manifestHash"] == "sha256:" + digest
    stripped = tmp_path / "rom.acx"
    code, text, _ = _run(capsys, "cartridge", "strip", str(out), "-o", str(stripped))
    assert code == 0
    assert digest in text
    code, text, _ = _run(capsys, "cartridge", "inspect", str(stripped))
    assert "skills: git-helper" in text
    assert "memory: 3 record(s) (2 transferable, 1 field-learned)" in text


@pytest.mark.req("engram.cartridge.scrub-gate", "engram.cartridge.no-private-keys")
def test_cli_build_refuses_a_leaking_record(
    sign_key: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    memories = tmp_path / "m.jsonl"
    leak = {**RECORDS[0], "text": "deploy with " + sign_key.read_text()}
    memories.write_text(json.dumps(leak) + "\n")  # noqa: TID251
    out = tmp_path / "leak.acx"
    code, _, err = _run(
        capsys,
        "cartridge",
        "build",
        "--memories",
        str(memories),
        "--publisher",
        "io.github.acme",
        "--sign-key",
        str(sign_key),
        "-o",
        str(out),
    )
    assert code == 2
    assert "scrub_blocked" in err
    assert "private-key" in err
    assert not out.exists()
