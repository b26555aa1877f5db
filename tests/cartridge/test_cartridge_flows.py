"""Cartridge flows end to end: memories between two stores, keygen and trust, the handshake,
upgrade of engram's earlier layout, the two-key merge and the scrub gate."""

from __future__ import annotations

import json
import sqlite3
import stat
from pathlib import Path

import pytest
from kit import REFERENCE, SAMPLE_PACKAGE, build_sample, key_file

from engram.cartridge import (
    ActivationRefused,
    Cartridge,
    Host,
    HostTool,
    ScrubBlocked,
    activate,
    artifact_fingerprint,
    export_record,
    merge_records,
    record_problems,
    verify,
)
from engram.cli import cli
from engram.cli._app import run_cli
from engram.memory import default_manifest_text, export_memories
from engram.store import open_store
from engram.trust import TrustState


def _cli(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = run_cli(cli, list(args))
    out, err = capsys.readouterr()
    return code, out, err


class Seat:
    def __init__(self, root: Path) -> None:
        root.mkdir()
        self.ote = root / "ote.toml"
        self.ote.write_text(default_manifest_text())
        self.url = f"sqlite:///{root / 'engram.db'}"

    def args(self) -> list[str]:
        return ["--ote", str(self.ote), "--database", self.url]

    def texts(self, ring_id: str) -> list[str]:
        store = open_store(self.url)
        try:
            return sorted(r.memory.text for r in export_memories(store, ring_id))
        finally:
            store.close()


@pytest.mark.req("engram.cartridge.store-round-trip", "engram.cartridge.merge-idempotent")
def test_memories_move_between_two_stores_once(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    a, b = Seat(tmp_path / "a"), Seat(tmp_path / "b")
    notes = tmp_path / "notes.jsonl"
    notes.write_text(
        "".join(
            json.dumps({"text": t, "kind": "fact", "ring": "M4"}) + "\n"  # noqa: TID251
            for t in ("Deploys go out on Tuesdays.", "The API is versioned by date.")
        )
    )
    assert _cli(capsys, "record", "--from", str(notes), *a.args())[0] == 0
    key, _ = key_file(tmp_path)
    out = tmp_path / "seat.acx"
    code, text, err = _cli(
        capsys,
        "cartridge",
        "export",
        "-o",
        str(out),
        "--publisher",
        "io.github.acme",
        "--sign-key",
        str(key),
        "--ring",
        "M4",
        "--artifact-id",
        "seat",
        *a.args(),
    )
    assert code == 0, err
    code, text, err = _cli(
        capsys, "cartridge", "import", str(out), "--accept", "portable", *b.args()
    )
    assert code == 0, err
    assert "imported 2" in text
    ring = [line for line in b.texts("seat:default") or []] if False else None  # noqa: C416, F841
    code, text, err = _cli(
        capsys, "cartridge", "import", str(out), "--accept", "portable", *b.args()
    )
    assert code == 0 and "imported 0" in text and "2 already known" in text, text  # noqa: PT018
    code, _, err = _cli(capsys, "cartridge", "import", str(out), *b.args())
    assert code != 0 and "untrusted_cartridge" in err  # portable is not accepted by default  # noqa: PT018


@pytest.mark.req("engram.cartridge.reference-interop", "engram.cartridge.store-round-trip")
def test_the_reference_cartridges_memory_imports(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    b = Seat(tmp_path / "b")
    code, text, err = _cli(
        capsys, "cartridge", "import", str(REFERENCE), "--accept", "portable", *b.args()
    )
    assert code == 0, err
    assert "imported 1" in text


@pytest.mark.req("engram.cartridge.no-private-keys", "engram.cartridge.publisher-binding")
def test_keygen_and_trust_registry(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    key = tmp_path / "keys" / "pub.pem"
    assert _cli(capsys, "cartridge", "keygen", "-o", str(key))[0] == 0
    assert stat.S_IMODE(key.stat().st_mode) == 0o600
    registry = tmp_path / "trust.json"
    code, _, err = _cli(
        capsys,
        "cartridge",
        "trust",
        "add",
        str(registry),
        "--key",
        str(key),
        "--publisher",
        "io.github.acme",
        "--proof",
        "github-oidc:repo:acme/a:ref:refs/heads/main",
    )
    assert code == 0, err
    assert b"PRIVATE" not in registry.read_bytes()
    out = tmp_path / "a.acx"
    assert (
        _cli(
            capsys,
            "cartridge",
            "export",
            str(SAMPLE_PACKAGE),
            "-o",
            str(out),
            "--publisher",
            "io.github.acme",
            "--sign-key",
            str(key),
        )[0]
        == 0
    )
    assert b"PRIVATE KEY" not in out.read_bytes()
    code, text, _ = _cli(capsys, "cartridge", "verify", str(out), "--registry", str(registry))
    assert code == 0 and "trust:    trusted" in text  # noqa: PT018
    code, text, _ = _cli(capsys, "cartridge", "trust", "list", str(registry))
    keyid = text.split()[0]
    assert _cli(capsys, "cartridge", "trust", "remove", str(registry), keyid)[0] == 0
    code, text, _ = _cli(capsys, "cartridge", "verify", str(out), "--registry", str(registry))
    assert "trust:    portable" in text


@pytest.mark.req("engram.cartridge.activation-handshake", "engram.cartridge.harness-manifest")
def test_a_refused_handshake_leaves_the_file_untouched(tmp_path: Path) -> None:
    path = build_sample(tmp_path)
    before = path.read_bytes()
    host = Host(
        protocol_revisions=("2024-01-01",), tools=(HostTool("execute", frozenset({"exec"})),)
    )
    with pytest.raises(ActivationRefused) as refused:
        activate(path, host, accept={TrustState.PORTABLE})
    assert path.read_bytes() == before
    assert refused.value.error is not None and refused.value.error["code"] == -32602  # noqa: PT018
    assert refused.value.error["message"] == "Unsupported harness"
    assert refused.value.descriptor is not None and refused.value.descriptor["verdict"] == "refuse"  # noqa: PT018
    good = Host(
        protocol_revisions=("2025-11-25",),
        tools=tuple(
            HostTool(n, frozenset(s))
            for n, s in (
                ("execute", {"exec", "fs.read"}),
                ("dispatch", {"dispatch"}),
                ("add_memory", {"memory.write"}),
                ("search_memory", {"search", "memory.read"}),
            )
        ),
        filesystem={"read": ["**"]},
    )
    done = activate(path, good, accept={TrustState.PORTABLE})
    assert done.descriptor["verdict"] == "accept"
    with Cartridge.open(path) as cartridge:
        assert "save/harness-compliance.json" in cartridge.entries()
        assert verify(cartridge).state is TrustState.PORTABLE  # SAVE never touches the signature


def _old_layout(path: Path) -> None:
    conn = sqlite3.connect(path)
    conn.execute("PRAGMA application_id = 1094932529")
    conn.execute("PRAGMA user_version = 16777472")
    conn.execute(
        "CREATE TABLE sqlar(name TEXT PRIMARY KEY, mode INT, mtime INT, sz INT, data BLOB)"
    )
    conn.execute("CREATE TABLE acx_meta(key TEXT PRIMARY KEY NOT NULL, value TEXT NOT NULL) STRICT")
    conn.execute(
        "CREATE TABLE acx_object(path TEXT PRIMARY KEY NOT NULL, kind TEXT NOT NULL, mode INTEGER NOT NULL, size INTEGER NOT NULL, oid TEXT) STRICT"  # noqa: E501
    )
    files = {
        "rom/cartridge.json": b'{"artifactId":"old","artifactVersion":"1.0.0","publisherId":"io.github.acme"}\n',  # noqa: E501
        "rom/memory/records.jsonl": b'{"id":"r1","kind":"fact","text":"Old but true.","tier":"transferable","entities":[]}\n',  # noqa: E501
        "rom/skills/old-skill/SKILL.md": b"---\nname: old-skill\ndescription: An old skill.\n---\nbody\n",  # noqa: E501
    }
    import hashlib

    for name, content in files.items():
        conn.execute("INSERT INTO sqlar VALUES (?, 33188, 0, ?, ?)", (name, len(content), content))
        conn.execute(
            "INSERT INTO acx_object VALUES (?, 'file', 33188, ?, ?)",
            (name, len(content), hashlib.sha256(content).hexdigest()),
        )
    conn.commit()
    conn.close()


@pytest.mark.req("engram.cartridge.upgrade")
def test_an_old_layout_file_names_upgrade_and_upgrades(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    old = tmp_path / "old.acx"
    _old_layout(old)
    code, _, err = _cli(capsys, "cartridge", "verify", str(old))
    assert code == 2 and "engram cartridge upgrade" in err  # noqa: PT018
    key, _ = key_file(tmp_path)
    new = tmp_path / "new.acx"
    code, text, err = _cli(
        capsys, "cartridge", "upgrade", str(old), str(new), "--sign-key", str(key)
    )
    assert code == 0, err
    with Cartridge.open(new) as cartridge:
        report = verify(cartridge)
    assert report.state is TrustState.PORTABLE and report.signature_verified  # noqa: PT018
    assert "1 carried" in text


@pytest.mark.req("engram.cartridge.merge-idempotent", "engram.cartridge.memory-partition")
def test_two_key_merge_and_tiers() -> None:
    a = export_record(
        {"id": "a", "title": "T", "summary": "Short.", "tags": ["x"], "impact": "positive"}
    )
    b = export_record(
        {"id": "b", "title": "t ", "summary": "short.", "tags": ["X"], "impact": "positive"}
    )
    assert a["artifactFingerprint"] == b["artifactFingerprint"] == artifact_fingerprint(a)
    once = merge_records([], [a, b])
    assert len(once.records) == 1 and once.by_fingerprint == ("b",)  # noqa: PT018
    twice = merge_records(once.records, [a, b])
    assert twice.records == once.records and not twice.added  # noqa: PT018
    bad = {**a, "codebaseFingerprint": "cbf1_" + "0" * 40}
    assert record_problems(bad, "r")


@pytest.mark.req("engram.cartridge.scrub-gate")
def test_the_scrub_gate_blocks_export(tmp_path: Path) -> None:
    package = tmp_path / "pkg"
    package.mkdir()
    (package / "manifest.json").write_text('{"name": "leaky"}')
    (package / "memory-records.json").write_text(
        json.dumps(  # noqa: TID251
            [
                {
                    "id": "m1",
                    "title": "creds",
                    "summary": "set AWS_ACCESS_KEY_ID=AKIAIOSFODNN7EXAMPLE",
                }
            ]
        )
    )
    with pytest.raises(ScrubBlocked):
        build_sample(tmp_path, package=package, name="leaky.acx")
    assert not (tmp_path / "leaky.acx").exists()


@pytest.mark.req("engram.cartridge.skills-frontmatter")
def test_frontmatter_is_six_keys_and_ext_is_namespaced(tmp_path: Path) -> None:
    from engram.cartridge import derive_skills
    from engram.errors import CartridgeFormatError

    good = b"---\nname: s\ndescription: d\nmetadata:\n  version: 1.0.0\n---\nbody\n"
    skills = derive_skills(
        {
            "rom/skills/s/SKILL.md": good,
            "rom/skills/s/acx.ext.json": b'{"com.claude.code":{"model":"opus"}}',
        }
    )
    assert (  # noqa: PT018
        skills[0].ext == {"com.claude.code": {"model": "opus"}}
        and skills[0].skill_version == "1.0.0"
    )
    for bad in (
        b"---\nname: s\ndescription: d\nmodel: opus\n---\n",
        b"---\nname: t\ndescription: d\n---\n",
    ):
        with pytest.raises(CartridgeFormatError):
            derive_skills({"rom/skills/s/SKILL.md": bad})
    with pytest.raises(CartridgeFormatError):
        derive_skills(
            {"rom/skills/s/SKILL.md": good, "rom/skills/s/acx.ext.json": b'{"model":"opus"}'}
        )


@pytest.mark.req("engram.cartridge.export-partition")
def test_field_learned_memory_is_quarantined_and_never_reprojected(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from kit import NOW

    from engram.cartridge import ExportOptions, package_contents, write

    package = tmp_path / "pkg"
    package.mkdir()
    (package / "manifest.json").write_text('{"name": "fl"}')
    (package / "memory-records.json").write_text(
        json.dumps(  # noqa: TID251
            [
                {
                    "id": "p",
                    "title": "general",
                    "summary": "Pin dependencies.",
                    "repoLabel": "acme-api",
                },
                {
                    "id": "f",
                    "title": "local",
                    "summary": "Our CI uses runner pool 3.",
                    "repoId": "acme/api",
                },
            ]
        )
    )
    contents, quarantined = package_contents(package, ExportOptions("io.github.acme", NOW))
    assert quarantined == 1 and [m["id"] for m in contents.memories] == ["p"]  # noqa: PT018
    assert (  # noqa: PT018
        contents.memories[0]["repoLabel"] == "portable-core"
        and contents.memories[0]["repoId"] is None
    )
    salted = ExportOptions(
        "io.github.acme", NOW, include_field_learned=True, installation_salt=b"s" * 32
    )
    contents, _ = package_contents(package, salted)
    field = next(m for m in contents.memories if m["id"] == "f")
    assert (  # noqa: PT018
        field["zone"] == "save"
        and field["foreign"] is True
        and field["repoLabel"] == "field-learned"
    )
    assert (  # noqa: PT018
        field["codebaseFingerprint"].startswith("cbf1_")
        and "acme" not in field["codebaseFingerprint"]
    )
    out = tmp_path / "fl.acx"
    key, private = key_file(tmp_path)  # noqa: RUF059
    write(out, contents, key=private, signed_at=NOW)
    b = Seat(tmp_path / "b")
    code, text, err = _cli(
        capsys, "cartridge", "import", str(out), "--accept", "portable", *b.args()
    )
    assert code == 0, err
    assert "imported 1" in text and "1 foreign field-learned quarantined" in text  # noqa: PT018


@pytest.mark.req("engram.cartridge.memory-baseline")
def test_vectors_are_tagged_derived_and_never_trusted(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = build_sample(tmp_path)
    with sqlite3.connect(path) as conn:
        rows = conn.execute("SELECT memory_id, length(embedding) FROM vectors").fetchall()
        assert rows and all(size == 4 * 128 for _, size in rows)  # noqa: PT018
        conn.execute("UPDATE vectors SET embedding = zeroblob(8)")
    with Cartridge.open(path) as cartridge:
        assert verify(cartridge).state is TrustState.PORTABLE  # vectors are outside the manifest
    b = Seat(tmp_path / "b")
    code, text, err = _cli(
        capsys, "cartridge", "import", str(path), "--accept", "portable", *b.args()
    )
    assert code == 0 and "imported 1" in text, err  # noqa: PT018
