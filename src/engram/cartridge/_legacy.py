"""``engram cartridge upgrade``: re-pack a cartridge engram wrote in its earlier layout.

Spec: docs/spec/acx.md §14 (our layout before the SPEC.md alignment: ``acx_meta``, ``acx_object``,
``acx_skill``, ``acx_signature``, ``acx_vectors``, ``rom/cartridge.json``,
``rom/memory/records.jsonl``). The old file is opened read-only; every ROM file must still match
the SHA-256 its ``acx_object`` row recorded (a changed file is refused, not laundered into a
fresh signature); skills and SAVE files are carried over byte for byte, transferable memories
become ``acx.memory-record.v1`` ROM records, and the result is signed anew (the manifest differs,
so the old signature cannot carry over). Field-learned memories need the installation salt to
get a §7.2 ``cbf1_`` fingerprint; without it they are left out and counted.
"""

from __future__ import annotations

import hashlib
import hmac
import os
import sqlite3
import tempfile
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from urllib.parse import quote

from engram.cartridge._agent import ExportOptions, package_contents, set_memories
from engram.cartridge._build import Built, Contents, File, write
from engram.cartridge._format import DEFAULT_LIMITS, check_header
from engram.cartridge._records import array, export_record
from engram.cartridge._sqlar import FILE_MODE, check_entry, decode
from engram.core.canonical import Json, JsonObject, parse_strict
from engram.core.clock import format_instant
from engram.core.jsonio import dumps_text
from engram.core.keys import PrivateKey
from engram.errors import CanonicalJsonError, CartridgeFormatError


@dataclass(frozen=True)
class Upgraded:
    built: Built
    carried: int
    left_out: int


def _rows(path: Path) -> tuple[dict[str, str], dict[str, tuple[bytes, int, int]], dict[str, str]]:
    uri = f"file:{quote(str(path.resolve()))}?mode=ro"
    conn = sqlite3.connect(uri, uri=True)
    try:
        conn.execute("PRAGMA trusted_schema = OFF")
        (verdict,) = conn.execute("PRAGMA integrity_check").fetchone()
        if verdict != "ok":
            raise CartridgeFormatError(f"{path.name}: integrity_check: {verdict}")
        meta = {str(k): str(v) for k, v in conn.execute("SELECT key, value FROM acx_meta")}
        oids = {
            str(p): str(o)
            for p, o in conn.execute("SELECT path, oid FROM acx_object WHERE oid IS NOT NULL")
        }
        files: dict[str, tuple[bytes, int, int]] = {}
        rows = conn.execute(
            "SELECT rowid, name, typeof(name), mode, mtime, sz, typeof(data), length(data) "
            "FROM sqlar NOT INDEXED LIMIT ?",
            (DEFAULT_LIMITS.max_rows + 1,),
        ).fetchall()
        if len(rows) > DEFAULT_LIMITS.max_rows:
            raise CartridgeFormatError(f"{path.name} has more than {DEFAULT_LIMITS.max_rows} rows")
        for row in rows:
            if row[6] == "null":
                continue  # the old layout's directory rows
            entry = check_entry(row)  # portable path, file mode, size limits
            query = "SELECT data FROM sqlar WHERE rowid = ?"
            (data,) = conn.execute(query, (entry.rowid,)).fetchone()
            files[entry.name] = (decode(entry, bytes(data)), entry.mode, entry.mtime)
    except sqlite3.Error as e:
        raise CartridgeFormatError(
            f"{path.name} is not an engram cartridge of the old layout: {e}"
        ) from e
    finally:
        conn.close()
    return meta, files, oids


def upgrade(
    source: str | os.PathLike[str],
    out: str | os.PathLike[str],
    *,
    key: PrivateKey,
    now: datetime,
    installation_salt: bytes | None = None,
) -> Upgraded:
    path = Path(source)
    check_header(path)
    meta, files, oids = _rows(path)
    for name, (content, _mode, _mtime) in files.items():
        if name.startswith("rom/") and oids.get(name) != hashlib.sha256(content).hexdigest():
            raise CartridgeFormatError(
                f"{name} no longer matches the hash its old index recorded; refusing to re-sign "
                "a changed file"
            )
    try:
        document = parse_strict(files["rom/cartridge.json"][0])
        lines = files.get("rom/memory/records.jsonl", (b"", 0, 0))[0].splitlines()
        old_records = [parse_strict(line) for line in lines if line.strip()]
    except (KeyError, CanonicalJsonError) as e:
        raise CartridgeFormatError(
            f"{path.name} lacks a readable rom/cartridge.json or records"
        ) from e
    if not isinstance(document, dict):
        raise CartridgeFormatError(f"{path.name}: rom/cartridge.json is not an object")
    publisher, artifact, version = (
        _member(document, meta, member, key, path)
        for member, key in (
            ("publisherId", "acx.publisher_id"),
            ("artifactId", "acx.artifact_id"),
            ("artifactVersion", "acx.artifact_version"),
        )
    )
    records, left_out = _records(old_records, now, installation_salt)
    contents = _contents(publisher, artifact, version, now, files, records)
    built = write(out, contents, key=key, signed_at=now)
    return Upgraded(built, len(records), left_out)


def _member(document: JsonObject, meta: dict[str, str], member: str, key: str, path: Path) -> str:
    value = document.get(member) or meta.get(key)
    if not isinstance(value, str) or not value:
        raise CartridgeFormatError(
            f"{path.name}: rom/cartridge.json has no {member} (and acx_meta no {key}) to carry over"
        )
    return value


def _records(old: list[Json], now: datetime, salt: bytes | None) -> tuple[list[JsonObject], int]:
    out: list[JsonObject] = []
    left_out = 0
    for record in old:
        if not isinstance(record, dict):
            continue
        base: JsonObject = {
            "id": str(record.get("id")),
            "title": str(record.get("kind") or "note"),
            "summary": str(record.get("text") or ""),
            "sourceType": str(record.get("kind") or "knowledge"),
            "tags": [str(e) for e in array(record.get("entities"))],
            "timestamp": format_instant(now),
        }
        if record.get("tier") == "field-learned":
            if salt is None:
                left_out += 1
                continue
            digest = hmac.new(
                salt, f"engram-legacy:{record.get('codebaseFingerprint')}".encode(), hashlib.sha256
            )
            out.append(
                export_record(
                    {**base, "portable": False}, codebase="cbf1_" + digest.hexdigest()[:40]
                )
            )
        else:
            out.append(export_record(base))
    return out, left_out


def _contents(
    publisher: str,
    artifact: str,
    version: str,
    now: datetime,
    files: dict[str, tuple[bytes, int, int]],
    records: list[JsonObject],
) -> Contents:
    with tempfile.TemporaryDirectory() as tmp:
        package = Path(tmp)
        manifest = {"name": artifact, "artifactId": artifact, "artifactVersion": version}
        (package / "manifest.json").write_text(dumps_text(manifest), encoding="utf-8")
        skills = {n: f for n, f in files.items() if n.startswith("rom/skills/")}
        if skills:
            for name, (content, _mode, _mtime) in skills.items():
                target = package / "skills" / name[len("rom/skills/") :]
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_bytes(content)
        contents, _ = package_contents(package, ExportOptions(publisher, now, default_skill=False))
    set_memories(contents, records)
    saved: dict[str, File] = {
        n: (c, FILE_MODE, m) for n, (c, _mo, m) in files.items() if n.startswith("save/")
    }
    contents.files |= saved
    return contents


__all__ = ["Upgraded", "upgrade"]
