"""Shared helpers for the cartridge tests: a skills folder, records, and byte-level tampering.

Tampering goes through a plain ``sqlite3`` connection (or raw byte edits) on a real cartridge
file - exactly what an attacker with the file could do - never through engram's own writer.
"""

from __future__ import annotations

import hashlib
import sqlite3
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from engram.cartridge import Cartridge, TrustReport, collect_skills, verify
from engram.cartridge import build as build_cartridge
from engram.core.clock import FixedClock
from engram.core.keys import PrivateKey

CLOCK = FixedClock(datetime(2026, 3, 1, 12, 0, tzinfo=UTC))
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

RECORDS: list[dict[str, Any]] = [
    {
        "id": "mem-001",
        "kind": "invariant",
        "text": "Never force-push the main branch.",
        "tier": "transferable",
        "identity": {"seatId": "seat:acme-implementer", "author": "dana"},
    },
    {
        "id": "mem-002",
        "kind": "procedure",
        "text": "Run make check before every commit in this repository.",
        "tier": "field-learned",
        "codebaseFingerprint": "0123456789abcdef",
        "identity": {"seatId": "seat:acme-implementer"},
    },
    {
        "id": "mem-003",
        "kind": "decision",
        "text": "Prefer SQLite for embedded storage; PostgreSQL when several workers share.",
        "tier": "transferable",
        "entities": ["ADR-0007"],
    },
]


def write_skills(root: Path) -> Path:
    """A skills folder with one skill: SKILL.md, an executable script and a host ext file."""
    skill = root / "skills" / "git-helper"
    (skill / "scripts").mkdir(parents=True)
    (skill / "SKILL.md").write_bytes(SKILL_MD)
    script = skill / "scripts" / "blame.sh"
    script.write_bytes(b'#!/bin/sh\ngit blame -w "$1"\n')
    script.chmod(0o755)
    (skill / "acx.ext.json").write_bytes(b'{"com.anthropic.claude-code": {"model": "opus"}}')
    return root / "skills"


def build(
    out: Path,
    *,
    key: PrivateKey | None,
    skills: Path | None = None,
    records: Sequence[Mapping[str, Any]] | None = None,
    publisher: str = PUBLISHER,
    harness: Mapping[str, Any] | None = None,
) -> Path:
    build_cartridge(
        out,
        publisher_id=publisher,
        artifact_id="git-helper",
        artifact_version="1.0.0",
        clock=CLOCK,
        skills=collect_skills(skills) if skills is not None else None,
        records=RECORDS if records is None else records,
        harness=harness,
        key=key,
    )
    return out


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


def rows(path: Path, sql: str) -> list[tuple[Any, ...]]:
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        return conn.execute(sql).fetchall()
    finally:
        conn.close()


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()
