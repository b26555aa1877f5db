"""Shared helpers for the cartridge tests: vectors, keys, builds and tampering with stock tools.

Tampering goes through a plain ``sqlite3`` connection, the stock ``sqlite3`` CLI or raw byte
edits on a real cartridge file - exactly what anyone holding the file could do - never through
engram's own writer.
"""

from __future__ import annotations

import hashlib
import shutil
import sqlite3
import subprocess
import zlib
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from engram.cartridge import Cartridge, ExportOptions, TrustReport, package_contents, verify, write
from engram.cartridge.internals import canonical_repo_identity, codebase_fingerprint
from engram.cli import cli, run_cli
from engram.core.canonical import canonicalize
from engram.core.keys import PrivateKey, PublicKey, save_private_key
from engram.memory import default_manifest_text, export_memories
from engram.store import open_store
from engram.trust import KeyStatus, TrustedKey, TrustRegistry
from engram.trust.internals import GITHUB_OIDC_ISSUER, NamespaceProof, ProofMethod

VECTORS = Path(__file__).resolve().parents[1] / "vectors"
REFERENCE = (
    VECTORS / "acx-reference/registry/cartridges/io.github.ridgeworks/ada-ridge/1.0.0/cartridge.acx"
)
REFERENCE_INDEX = VECTORS / "acx-reference/registry/index.json"
REFERENCE_HASH = "sha256:318b930a1942eb9d3e8088906c6b32f91def9e156d4cbb3a178e676d4e28aaca"
REFERENCE_KEY_PEM = (
    "-----BEGIN PUBLIC KEY-----\nMCowBQYDK2VwAyEAGxi9GUYS56oHDSvNQC9P30FxbNsjJ5sw7zK0nN2Z5Ug=\n"
    "-----END PUBLIC KEY-----\n"
)
REFERENCE_BUILT = VECTORS / "acx-reference-built"
SAMPLE_PACKAGE = VECTORS / "acx-reference/examples/sample-agent-package"
SCHEMAS = VECTORS / "acx-spec/schemas"
NOW = datetime(2026, 7, 20, tzinfo=UTC)
PUBLISHER = "io.github.acme"

SKILL_MD = b"""---
name: git-helper
description: Answers questions about a repository's git history.
license: Apache-2.0
compatibility: Requires git
metadata:
  author: acme
  version: "1.0"
allowed-tools: Bash(git:*) Read
---
# Git helper

Use `git log --follow` to trace a file through renames.
"""
SKILL_PATH = "rom/skills/git-helper/SKILL.md"
SCRIPT_PATH = "rom/skills/git-helper/scripts/blame.sh"

needs_sqlite3 = pytest.mark.skipif(
    shutil.which("sqlite3") is None, reason="the stock sqlite3 CLI is not installed"
)
needs_ssh_keygen = pytest.mark.skipif(
    shutil.which("ssh-keygen") is None, reason="ssh-keygen is not installed"
)


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    """``engram ARGS`` in-process: (exit code, stdout, stderr)."""
    code = run_cli(cli, list(args))
    out, err = capsys.readouterr()
    return code, out, err


def one_error_line(err: str, code: str) -> None:
    """A refusal is exactly one ``error: <code>: ...`` line on stderr, never a traceback."""
    assert err.startswith(f"error: {code}: "), err
    assert err.count("\n") == 1, err
    assert "Traceback" not in err


def fingerprint_members(record: Mapping[str, Any]) -> dict[str, Any]:
    """The nine members §7.3 hashes, from SPEC's text (lboel/acx@85f1358): text trimmed and
    lowercased, tags lowercased and sorted; the tests hash them with an encoder of their own."""

    def text(key: str) -> str:
        return str(record.get(key) or "").strip().lower()

    return {
        "title": text("title"),
        "summary": text("summary"),
        "sourceType": text("sourceType"),
        "repoId": record.get("repoId"),
        "projectLabel": text("projectLabel"),
        "timestamp": record.get("timestamp") or "",
        "impact": record.get("impact") or "neutral",
        "xpAwarded": record.get("xpAwarded") or 0,
        "tags": sorted(str(t).lower() for t in record.get("tags") or []),
    }


def copy_reference(tmp: Path) -> Path:
    target = tmp / "ref.acx"
    shutil.copyfile(REFERENCE, target)
    return target


def key_file(tmp: Path, name: str = "publisher.pem") -> tuple[Path, PrivateKey]:
    key = PrivateKey.generate()
    path = tmp / name
    save_private_key(path, key)
    return path, key


def write_package(
    root: Path,
    *,
    records: Sequence[Mapping[str, Any]] = (),
    skills: bool = True,
    manifest: Mapping[str, Any] | None = None,
    extra: Mapping[str, bytes] | None = None,
) -> Path:
    """An agent package directory: manifest, records, one skill with a script and a host ext."""
    root.mkdir(parents=True, exist_ok=True)
    document = {
        "name": "Git Helper",
        "artifactId": "git-helper",
        "artifactVersion": "1.0.0",
        "role": "backend_dev",
        "techStack": ["python", "git"],
        "exportedAt": "2026-03-01T12:00:00.000Z",
    }
    (root / "manifest.json").write_bytes(canonicalize({**document, **(manifest or {})}))
    if records:
        (root / "memory-records.json").write_bytes(canonicalize(list(records)))
    if skills:
        skill = root / "skills" / "git-helper"
        (skill / "scripts").mkdir(parents=True, exist_ok=True)
        (skill / "references").mkdir(exist_ok=True)
        (skill / "SKILL.md").write_bytes(SKILL_MD)
        script = skill / "scripts" / "blame.sh"
        script.write_bytes(b'#!/bin/sh\ngit blame -w "$1"\n')
        script.chmod(0o755)
        (skill / "references" / "renames.md").write_bytes(b"# Renames\n\nSee git help log.\n")
        (skill / "acx.ext.json").write_bytes(b'{"com.anthropic.claude-code": {"model": "opus"}}')
    for name, content in (extra or {}).items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(content)
    return root


RECORDS: list[dict[str, Any]] = [
    {
        "id": "mem-001",
        "title": "Never force-push main",
        "summary": "Never force-push the main branch; open a revert instead.",
        "sourceType": "lesson",
        "tags": ["git", "Safety"],
        "impact": "negative",
        "timestamp": "2026-02-01T10:00:00.000Z",
    },
    {
        "id": "mem-002",
        "title": "CI pool",
        "summary": "Run make check before every commit in this repository.",
        "sourceType": "procedure",
        "repoId": "acme/widgets",
        "repoLabel": "acme-widgets",
        "timestamp": "2026-02-02T10:00:00.000Z",
    },
    {
        "id": "mem-003",
        "title": "Storage choice",
        "summary": "Prefer SQLite for embedded storage; PostgreSQL when several workers share.",
        "sourceType": "decision",
        "tags": ["adr-0007"],
        "impact": "positive",
        "timestamp": "2026-02-03T10:00:00.000Z",
    },
]
SALT = b"s" * 32


class Seat:
    """One HOME: its own seat manifest (with its own M2 codebase ring) and SQLite database."""

    def __init__(self, root: Path, repo_hex: str = "0" * 16) -> None:
        root.mkdir()
        self.repo = f"repo:{repo_hex}"
        self.ote = root / "ote.toml"
        # The model-free seat: new seats get the bundled MiniLM model; cartridges are not about it.
        text = default_manifest_text().replace("repo:0000000000000000", self.repo)
        self.ote.write_text(
            text.replace(
                'embedding_provider = "minilm-l6-v2"', 'embedding_provider = "local-hash-128"'
            )
        )
        self.db = root / "engram.db"
        self.url = f"sqlite:///{self.db}"

    def args(self) -> list[str]:
        return ["--ote", str(self.ote), "--database", self.url]

    def memories(self, ring_id: str) -> list[dict[str, Any]]:
        store = open_store(self.url)
        try:
            return [r.memory.to_wire() for r in export_memories(store, ring_id)]
        finally:
            store.close()

    @property
    def codebase(self) -> str:
        """This repository's §7.2 fingerprint under the org salt (what export stamps)."""
        identity = canonical_repo_identity(origin_url=f"repo://{self.repo}")
        return codebase_fingerprint(SALT, identity)


def build(
    out: Path,
    *,
    key: PrivateKey | None,
    package: Path | None = None,
    publisher: str = PUBLISHER,
    include_field_learned: bool = False,
) -> Path:
    """Export ``package`` (default: the reference's sample agent package) to ``out``."""
    options = ExportOptions(
        publisher,
        NOW,
        include_field_learned=include_field_learned,
        installation_salt=SALT if include_field_learned else None,
    )
    contents, _ = package_contents(package or SAMPLE_PACKAGE, options)
    write(out, contents, key=key, signed_at=NOW)
    return out


def build_sample(
    tmp: Path,
    *,
    key: PrivateKey | None = None,
    package: Path = SAMPLE_PACKAGE,
    publisher: str = PUBLISHER,
    name: str = "sample.acx",
) -> Path:
    """A signed cartridge of ``package`` under ``tmp`` (a fresh key unless one is given)."""
    return build(tmp / name, key=key or PrivateKey.generate(), package=package, publisher=publisher)


def check(path: Path, **kwargs: Any) -> TrustReport:
    with Cartridge.open(path) as cartridge:
        return verify(cartridge, **kwargs)


def execute(path: Path, sql: str, params: tuple[object, ...] = ()) -> None:
    """Change a cartridge with plain SQLite, as anyone holding the file could."""
    conn = sqlite3.connect(path)
    try:
        conn.execute(sql, params)
        conn.commit()
    finally:
        conn.close()


def rows(path: Path, sql: str, params: tuple[object, ...] = ()) -> list[tuple[Any, ...]]:
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        return conn.execute(sql, params).fetchall()
    finally:
        conn.close()


def stock_sqlite3(path: Path, *args: str, cwd: Path | None = None) -> str:
    """Run the stock ``sqlite3`` CLI on ``path``; its stdout."""
    done = subprocess.run(
        ["sqlite3", str(path.resolve()), *args],
        check=True,
        cwd=cwd,
        capture_output=True,
        text=True,
    )
    return done.stdout


def file_bytes(path: Path, name: str) -> bytes:
    """One sqlar file's content as a plain reader inflates it (stored, zlib or raw Deflate)."""
    ((sz, data),) = rows(path, "SELECT sz, data FROM sqlar WHERE name = ?", (name,))
    if len(data) == sz:
        return bytes(data)
    try:
        return zlib.decompress(data)
    except zlib.error:
        return zlib.decompress(data, -15)


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def registry_for(
    key: PublicKey,
    publisher: str = PUBLISHER,
    *,
    status: KeyStatus = KeyStatus.ACTIVE,
    not_after: datetime = datetime(2027, 1, 1, tzinfo=UTC),
    revoked_at: datetime | None = None,
    revocation_reason: str | None = None,
) -> TrustRegistry:
    """A registry binding ``publisher`` (an io.github.* id) to ``key``."""
    owner = publisher.split(".")[2] if publisher.startswith("io.github.") else "x"
    return TrustRegistry.empty().with_key(
        TrustedKey(
            keyid=key.key_id,
            publisher_id=publisher,
            public_key=key,
            status=status,
            not_before=datetime(2026, 1, 1, tzinfo=UTC),
            not_after=not_after,
            namespace_proof=NamespaceProof(
                ProofMethod.GITHUB_OIDC,
                datetime(2026, 1, 1, tzinfo=UTC),
                oidc_subject=f"repo:{owner}/agents:ref:refs/heads/main",
                oidc_issuer=GITHUB_OIDC_ISSUER,
            ),
            revoked_at=revoked_at,
            revocation_reason=revocation_reason,
        )
    )
