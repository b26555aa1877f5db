"""``engram cartridge ...`` end to end: memories between separate stores, the trust gate on
import, build/verify/strip/inspect, and every refusal as one line with its exit code.

SPEC §3.4, §4.5, §7.3-§7.6 (lboel/acx@85f1358); docs/spec/acx.md §8.4 and §13.
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest
from cartridge_kit import (
    RECORDS,
    SALT,
    SAMPLE_PACKAGE,
    Seat,
    digest,
    execute,
    key_file,
    one_error_line,
    run,
    write_package,
)

from engram.core.canonical import canonicalize


@pytest.fixture
def sign_key(tmp_path: Path) -> Path:
    return key_file(tmp_path)[0]


@pytest.fixture
def salt_file(tmp_path: Path) -> Path:
    path = tmp_path / "salt"
    path.write_bytes(SALT)
    path.chmod(0o600)
    return path


@pytest.fixture
def seats(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> tuple[Seat, Seat]:
    """Store A holds three seat memories and one repository memory; store B is empty."""
    a, b = Seat(tmp_path / "a", "a" * 16), Seat(tmp_path / "b", "b" * 16)
    lines = [{"text": r["summary"], "kind": "fact", "ring": "M4"} for r in RECORDS] + [
        {"text": "Our CI runs on the self-hosted runner pool.", "kind": "fact", "ring": "M2"}
    ]
    source = tmp_path / "a-records.jsonl"
    source.write_bytes(b"".join(canonicalize(line) + b"\n" for line in lines))
    assert run(capsys, "record", "--from", str(source), *a.args())[0] == 0
    return a, b


def _signed_sample(capsys: pytest.CaptureFixture[str], sign_key: Path, tmp_path: Path) -> Path:
    """The sample package exported and signed as ``good.acx``."""
    good = tmp_path / "good.acx"
    export = ["cartridge", "export", str(SAMPLE_PACKAGE), "-o", str(good), "--publisher"]
    assert run(capsys, *export, "io.github.acme", "--sign-key", str(sign_key))[0] == 0
    return good


def _export(
    capsys: pytest.CaptureFixture[str], seat: Seat, out: Path, *more: str
) -> tuple[int, str, str]:
    return run(
        capsys, "cartridge", "export", "-o", str(out), "--publisher", "io.github.acme",
        "--artifact-id", "seat", *more, *seat.args(),
    )  # fmt: skip


@pytest.mark.req("engram.cartridge.store-round-trip", "engram.cartridge.merge-idempotent")
def test_round_trip_between_two_stores_without_duplicates(
    seats: tuple[Seat, Seat], sign_key: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    a, b = seats
    out = tmp_path / "seat.acx"
    code, text, err = _export(capsys, a, out, "--ring", "M4", "--sign-key", str(sign_key))
    assert code == 0, err
    assert "memories:       3 (0 field-learned quarantined)" in text
    code, text, _ = run(capsys, "cartridge", "verify", str(out), "--local-key", str(sign_key))
    assert (code, "trust:    portable" in text) == (0, True)  # local needs the key in a registry
    imported = ["cartridge", "import", str(out), "--ring", "M4", "--accept", "portable", "--json"]
    code, text, err = run(capsys, *imported, *b.args())
    assert code == 0, err
    first = json.loads(text)
    assert (first["imported"], first["alreadyKnown"], first["trust"]["trust"]) == (3, 0, "portable")
    code, text, _ = run(capsys, *imported, *b.args())
    second = json.loads(text)
    assert (second["imported"], second["alreadyKnown"]) == (0, 3)
    received = b.memories("seat:engram-implementer")
    assert sorted(str(m["text"]) for m in received) == sorted(r["summary"] for r in RECORDS)
    assert all(m["status"] == "candidate" and m["origin"] == "import" for m in received)
    for m in received:
        provenance = m["provenance"]
        assert isinstance(provenance, dict)
        assert provenance["manifestHash"] == first["trust"]["manifestHash"]
        assert provenance["trust"] == "portable"
    # The store indexed the text with its own engine: it never copied the cartridge's vectors.
    with sqlite3.connect(b.db) as conn:
        tables = {n for (n,) in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    assert "vectors" not in tables


@pytest.mark.req("engram.cartridge.export-partition", "engram.cartridge.store-round-trip")
def test_repository_memory_is_field_learned_and_goes_only_home(
    seats: tuple[Seat, Seat],
    sign_key: Path,
    salt_file: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    a, b = seats
    out = tmp_path / "repo.acx"
    code, text, _ = _export(capsys, a, out, "--ring", "M2", "--sign-key", str(sign_key))
    assert code == 0
    assert "(1 field-learned quarantined)" in text
    code, _, err = _export(
        capsys, a, out, "--ring", "M2", "--sign-key", str(sign_key), "--include-field-learned"
    )
    assert code == 2
    one_error_line(err, "invalid_cartridge")
    assert "--installation-salt-file" in err
    code, _, err = _export(
        capsys, a, out, "--ring", "M2", "--sign-key", str(sign_key), "--include-field-learned",
        "--installation-salt-file", str(salt_file),
    )  # fmt: skip
    assert code == 0, err
    code, text, _ = run(capsys, "cartridge", "inspect", str(out), "--json")
    assert json.loads(text)["memory"] == {"save": 1}
    importing = ["cartridge", "import", str(out), "--ring", "M3", "--accept", "portable", "--json"]
    code, text, _ = run(capsys, *importing, *b.args())
    assert (json.loads(text)["quarantined"], json.loads(text)["imported"]) == (1, 0)
    assert b.memories("team:shared") == []
    # A teammate on the same codebase (same org salt, same repository) projects it.
    c = Seat(tmp_path / "c", "a" * 16)
    home = [*importing, "--codebase-fingerprint", c.codebase]
    code, text, _ = run(capsys, *home, *c.args())
    assert (json.loads(text)["imported"], json.loads(text)["quarantined"]) == (1, 0)
    assert [m["text"] for m in c.memories("team:shared")] == [
        "Our CI runs on the self-hosted runner pool."
    ]


@pytest.mark.req("engram.cartridge.store-round-trip", "engram.cartridge.hostile-files")
def test_import_refuses_tampered_and_untrusted_cartridges_without_writing(
    seats: tuple[Seat, Seat], sign_key: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    a, b = seats
    out = tmp_path / "seat.acx"
    assert _export(capsys, a, out, "--ring", "M4", "--sign-key", str(sign_key))[0] == 0
    code, _, err = run(capsys, "cartridge", "import", str(out), *b.args())
    assert code == 1
    one_error_line(err, "untrusted_cartridge")
    assert "portable" in err
    # The refusal names what would accept it (its key in a registry, or the state itself).
    assert err.rstrip().endswith(
        "; to import it: name its key in a trust registry (--trust-registry FILE), pass "
        "--local-key FILE if it is your own, or --accept portable"
    )
    execute(out, "UPDATE memory SET payload = replace(payload, 'revert', 'rebase')")
    code, text, _ = run(capsys, "cartridge", "verify", str(out))
    assert code == 1
    assert "trust:    tampered" in text
    code, _, err = run(capsys, "cartridge", "import", str(out), "--accept", "portable", *b.args())
    assert code == 1
    one_error_line(err, "untrusted_cartridge")
    assert "tampered" in err
    assert "to import it" not in err  # nothing accepts a tampered file, so no way out is offered
    assert b.memories("seat:engram-implementer") == []
    code, _, err = run(capsys, "cartridge", "import", str(out), "--ring", "M0", *b.args())
    assert code == 1
    assert "not a writable mount" in err


@pytest.mark.req("engram.cartridge.strip-save", "engram.cartridge.dsse-rom-manifest")
def test_export_verify_strip_inspect(
    sign_key: Path, salt_file: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    package = write_package(tmp_path / "pkg", records=RECORDS)
    out = tmp_path / "g.acx"
    code, text, err = run(
        capsys, "cartridge", "export", str(package), "-o", str(out), "--publisher",
        "io.github.acme", "--include-field-learned", "--installation-salt-file", str(salt_file),
    )  # fmt: skip
    assert code == 0, err
    assert "unsigned (legacy)" in text
    code, text, _ = run(capsys, "cartridge", "verify", str(out))
    assert code == 0
    assert "trust:    legacy" in text
    code, text, _ = run(
        capsys, "cartridge", "export", str(package), "-o", str(out), "--publisher",
        "io.github.acme", "--sign-key", str(sign_key), "--include-field-learned",
        "--installation-salt-file", str(salt_file),
    )  # fmt: skip
    assert code == 0
    manifest_hash = next(ln.split()[-1] for ln in text.splitlines() if ln.startswith("rom hash:"))
    code, text, _ = run(capsys, "cartridge", "verify", str(out), "--json")
    report = json.loads(text)
    assert (report["trust"], report["manifestHash"], report["signatureVerified"]) == (
        "portable",
        manifest_hash,
        True,
    )
    stripped = tmp_path / "rom.acx"
    code, text, _ = run(capsys, "cartridge", "strip", str(out), "-o", str(stripped))
    assert code == 0
    assert f"rom hash before strip: {manifest_hash}" in text
    assert f"rom hash after  strip: {manifest_hash}" in text
    assert "EQUAL" in text
    code, text, _ = run(capsys, "cartridge", "inspect", str(stripped))
    assert code == 0
    assert "  - git-helper: Answers questions about a repository's git history." in text
    assert "  rom: 2" in text
    assert "save:" not in text
    code, text, _ = run(capsys, "cartridge", "inspect", str(out), "--json")
    assert json.loads(text)["memory"] == {"rom": 2, "save": 1}
    assert json.loads(text)["meta"]["acx.save_codebase_fingerprint"]["signed"] is False


@pytest.mark.req("engram.cartridge.scrub-gate", "engram.cartridge.export-partition")
def test_a_repository_rings_id_never_leaves_in_a_ring_export(
    sign_key: Path, salt_file: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """§7.5: no raw repoId survives export. A repository ring's records carry its id as their
    repoId, so the gate looks for it in everything the ring export writes, as it does for a
    package's records."""
    a = Seat(tmp_path / "a", "c" * 16)
    line = {"text": f"The CI of {a.repo} runs on the runner pool.", "kind": "fact", "ring": "M2"}
    source = tmp_path / "leak.jsonl"
    source.write_bytes(canonicalize(line) + b"\n")
    assert run(capsys, "record", "--from", str(source), *a.args())[0] == 0
    out = tmp_path / "repo.acx"
    shipped = ["--include-field-learned", "--installation-salt-file", str(salt_file)]
    code, _, err = _export(capsys, a, out, "--ring", "M2", "--sign-key", str(sign_key), *shipped)
    assert code == 2
    one_error_line(err, "scrub_blocked")
    assert "repo-identifier-leak" in err
    assert not out.exists()
    # Quarantined (the default), the record does not go out, so neither does the id.
    code, text, err = _export(capsys, a, out, "--ring", "M2", "--sign-key", str(sign_key))
    assert code == 0, err
    assert "(1 field-learned quarantined)" in text


@pytest.mark.req("engram.cartridge.scrub-gate", "engram.cartridge.no-private-keys")
def test_export_refuses_a_record_that_leaks_the_signing_key(
    sign_key: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    leak = {**RECORDS[0], "summary": "deploy with " + sign_key.read_text()}
    package = write_package(tmp_path / "pkg", records=[leak])
    out = tmp_path / "leak.acx"
    code, _, err = run(
        capsys, "cartridge", "export", str(package), "-o", str(out), "--publisher",
        "io.github.acme", "--sign-key", str(sign_key),
    )  # fmt: skip
    assert code == 2
    one_error_line(err, "scrub_blocked")
    assert "private-key" in err
    assert "PRIVATE KEY" not in err
    assert not out.exists()
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []


@pytest.mark.req("engram.cartridge.no-private-keys")
@pytest.mark.parametrize("flag", ["--registry", "--trust"])
def test_a_private_key_given_as_the_registry_is_refused_as_private_material(
    sign_key: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], flag: str
) -> None:
    out = tmp_path / "c.acx"
    export = ["cartridge", "export", str(SAMPLE_PACKAGE), "-o", str(out), "--publisher"]
    assert run(capsys, *export, "io.github.acme", "--sign-key", str(sign_key))[0] == 0
    for command in ("verify", "ls", "load", "import"):
        target = str(tmp_path) if command == "ls" else str(out)
        code, _, err = run(capsys, "cartridge", command, target, flag, str(sign_key))
        assert code == 2, (command, err)
        one_error_line(err, "invalid_trust_registry")
        assert "private key material" in err
        assert "BEGIN" not in err


@pytest.mark.req("engram.cartridge.no-private-keys", "engram.cartridge.publisher-binding")
def test_keygen_and_trust_registry(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    key = tmp_path / "keys" / "pub.pem"
    key.parent.mkdir()
    assert run(capsys, "cartridge", "keygen", "-o", str(key))[0] == 0
    assert key.stat().st_mode & 0o777 == 0o600
    assert b"PRIVATE KEY" not in Path(f"{key}.pub").read_bytes()
    code, _, err = run(capsys, "cartridge", "keygen", "-o", str(tmp_path / "oops.acx"))
    assert code == 1
    one_error_line(err, "key_file_error")
    registry = tmp_path / "trust.json"
    add = ["cartridge", "trust", "add", str(registry), "--publisher", "io.github.acme"]
    proof = ["--proof", "github-oidc:repo:acme/a:ref:refs/heads/main"]
    code, _, err = run(capsys, *add, "--key", f"{key}.pub", *proof)
    assert code == 0, err
    assert b"PRIVATE" not in registry.read_bytes()
    code, _, err = run(capsys, *add, "--key", str(key), *proof)
    assert code == 2
    one_error_line(err, "invalid_trust_registry")  # already listed
    out = tmp_path / "a.acx"
    export = ["cartridge", "export", str(SAMPLE_PACKAGE), "-o", str(out), "--publisher"]
    assert run(capsys, *export, "io.github.acme", "--sign-key", str(key))[0] == 0
    assert b"PRIVATE KEY" not in out.read_bytes()
    code, text, _ = run(capsys, "cartridge", "verify", str(out), "--registry", str(registry))
    assert code == 0
    assert "trust:    trusted" in text
    code, text, _ = run(
        capsys,
        "cartridge",
        "verify",
        str(out),
        "--registry",
        str(registry),
        "--local-key",
        str(key),
    )
    assert code == 0
    assert "trust:    local" in text
    code, text, _ = run(capsys, "cartridge", "trust", "list", str(registry))
    keyid = text.split()[0]
    assert run(capsys, "cartridge", "trust", "remove", str(registry), keyid)[0] == 0
    code, text, _ = run(capsys, "cartridge", "verify", str(out), "--registry", str(registry))
    assert "trust:    portable" in text
    code, _, err = run(capsys, "cartridge", "trust", "remove", str(registry), keyid)
    assert code == 2
    one_error_line(err, "invalid_trust_registry")


@pytest.mark.req("engram.cartridge.cli-errors")
def test_a_host_descriptor_of_the_wrong_shape_is_refused_not_coerced(
    sign_key: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    good = _signed_sample(capsys, sign_key, tmp_path)
    host = tmp_path / "host.json"

    def check(document: object) -> tuple[int, str, str]:
        host.write_bytes(canonicalize(document))
        return run(
            capsys, "cartridge", "check", str(good), "--host-descriptor", str(host), "--json"
        )

    wrong: list[tuple[object, str]] = [
        ({"protocolRevisions": "2025-11-25"}, "protocolRevisions"),
        ({"protocolRevisions": [20251125]}, "protocolRevisions"),
        ({"tools": {"search": {}}}, "tools"),
        ({"tools": ["search"]}, "tools[0]"),
        ({"tools": [{"name": 3}]}, "tools[0].name"),
        ({"tools": [{"name": "search", "scopes": "read"}]}, "tools[0].scopes"),
        ({"tools": [{"name": "search", "inputSchema": []}]}, "tools[0].inputSchema"),
        ({"model": []}, "model"),
        ({"model": {"toolUse": 1}}, "model.toolUse"),
        ({"model": {"contextWindowTokens": "200000"}}, "model.contextWindowTokens"),
        ({"model": {"contextWindowTokens": True}}, "model.contextWindowTokens"),
        ({"filesystem": {"read": "**"}}, "filesystem.read"),
        ({"network": {"egress": 0}}, "network.egress"),
    ]
    for document, member in wrong:
        code, out, err = check(document)
        assert (code, out) == (2, ""), document
        one_error_line(err, "invalid_request")
        assert f"{host}: {member} must be " in err, err
    # A member that is absent or null takes its default: both describe the same host.
    empty = check({})
    assert empty[0] in (0, 1)
    assert empty[2] == ""
    nulls = {"protocolRevisions": None, "tools": None, "model": {"toolUse": None}, "network": None}
    assert check(nulls) == empty


@pytest.mark.req("engram.cartridge.cli-errors")
def test_every_refusal_is_one_line_with_its_exit_code(
    sign_key: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    good = _signed_sample(capsys, sign_key, tmp_path)
    bad = tmp_path / "bad.acx"
    bad.write_bytes(b"not a cartridge at all" * 10)
    bad_json = tmp_path / "bad.json"
    bad_json.write_text("{not json")
    broken = write_package(tmp_path / "broken", extra={"harness-requirements.json": b"{not json"})
    cases: list[tuple[list[str], int, str]] = [
        (["verify", str(bad)], 2, "invalid_cartridge"),
        (["inspect", str(bad)], 2, "invalid_cartridge"),
        (["spec", str(bad)], 2, "invalid_cartridge"),
        (["strip", str(bad), str(tmp_path / "s.acx")], 2, "invalid_cartridge"),
        (["strip", str(good)], 2, "invalid_request"),
        (["strip", str(good), str(tmp_path / "missing" / "s.acx")], 2, "invalid_cartridge"),
        (["check", str(bad), "--all-tools"], 2, "invalid_cartridge"),
        (["load", str(bad), "--print-only"], 2, "invalid_cartridge"),
        (["card", str(bad), "--url", "https://x.example"], 2, "invalid_cartridge"),
        (["activate", str(good), "--all-tools"], 1, "untrusted_cartridge"),
        (["verify", str(good), "--registry", str(bad_json)], 2, "invalid_trust_registry"),
        (["check", str(good), "--host-descriptor", str(bad_json)], 2, "invalid_request"),
        (
            ["export", "-o", str(tmp_path / "x.acx"), "--publisher", "io.github.acme"],
            2,
            "invalid_request",
        ),
        (
            ["export", str(SAMPLE_PACKAGE), "-o", str(tmp_path / "x.acx"), "--publisher", "acme"],
            2,
            "invalid_cartridge",
        ),
        (
            ["export", str(broken), "-o", str(tmp_path / "x.acx"), "--publisher", "io.github.acme"],
            2,
            "invalid_cartridge",
        ),
        (
            [
                "export",
                str(SAMPLE_PACKAGE),
                "-o",
                str(tmp_path / "x.acx"),
                "--publisher",
                "io.github.acme",
                "--sign-key",
                str(bad_json),
            ],
            1,
            "key_file_error",
        ),
        (
            ["upgrade", str(good), str(tmp_path / "u.acx"), "--sign-key", str(sign_key)],
            2,
            "invalid_cartridge",
        ),
        (["trust", "list", str(bad_json)], 2, "invalid_trust_registry"),
        (
            [
                "trust",
                "add",
                str(tmp_path / "t.json"),
                "--key",
                str(bad_json),
                "--publisher",
                "io.github.acme",
                "--proof",
                "github-oidc:repo:acme/a:ref:x",
            ],
            2,
            "invalid_request",
        ),
        (
            [
                "trust",
                "add",
                str(tmp_path / "t.json"),
                "--key",
                f"{sign_key}",
                "--publisher",
                "io.github.acme",
                "--proof",
                "carrier-pigeon:x",
            ],
            2,
            "invalid_request",
        ),
    ]
    for args, exit_code, code in cases:
        before = digest(good)
        got, _, err = run(capsys, "cartridge", *args)
        assert got == exit_code, (args, err)
        one_error_line(err, code)
        assert digest(good) == before, args
    assert not (tmp_path / "x.acx").exists()
    assert not (tmp_path / "s.acx").exists()
