"""A cartridge engram builds, checked by a checker that shares no code with engram.

The checker below uses only the standard library, the ``rfc8785`` package, ``jsonschema`` and
``cryptography``: the published schemas, the DDL as stock ``sqlite3 .schema`` prints it, the ROM
manifest recomputed by a short function written here, and the DSSE signature checked with
``cryptography`` over a PAE built here (SPEC §3.1-§3.3, §4.2, §5.3, §6, §7, §8).
"""

from __future__ import annotations

import base64
import hashlib
import json
import re
import sqlite3
import subprocess
import zlib
from pathlib import Path

import pytest
import rfc8785
from cartridge_kit import SCHEMAS, build_sample
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey
from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat, load_pem_public_key
from jsonschema import Draft202012Validator

SPEC_SCHEMA = """
CREATE TABLE cartridge (
  key   TEXT PRIMARY KEY NOT NULL,
  value TEXT NOT NULL
) WITHOUT ROWID;
CREATE TABLE sqlar (
  name TEXT PRIMARY KEY,
  mode INT, mtime INT,
  sz INT,
  data BLOB
);
CREATE TABLE memory (
  id                   TEXT PRIMARY KEY NOT NULL,
  zone                 TEXT NOT NULL CHECK (zone IN ('rom','save')),
  artifact_fingerprint TEXT NOT NULL,
  codebase_fingerprint TEXT,
  payload              TEXT NOT NULL,
  oid                  TEXT NOT NULL,
  created_at           TEXT NOT NULL
) WITHOUT ROWID;
CREATE INDEX memory_zone_fp ON memory(zone, artifact_fingerprint);
CREATE TABLE vectors (
  memory_id            TEXT PRIMARY KEY,
  zone                 TEXT NOT NULL,
  embedding            BLOB NOT NULL,
  artifact_fingerprint TEXT
);
CREATE TABLE objects (
  oid        TEXT PRIMARY KEY NOT NULL,
  kind       TEXT NOT NULL CHECK (kind IN ('sqlar','memory','cartridge','skill','attestation')),
  source_ref TEXT NOT NULL,
  canon      TEXT NOT NULL,
  zone       TEXT NOT NULL CHECK (zone IN ('rom','save')),
  sz         INTEGER NOT NULL
) WITHOUT ROWID;
CREATE TABLE signatures (
  sig_id         TEXT PRIMARY KEY NOT NULL,
  target         TEXT NOT NULL DEFAULT 'rom-manifest',
  manifest_hash  TEXT NOT NULL,
  envelope       TEXT NOT NULL,
  keyid          TEXT NOT NULL,
  public_key_pem TEXT,
  alg            TEXT NOT NULL DEFAULT 'ed25519',
  created_at     TEXT NOT NULL
) WITHOUT ROWID;
CREATE TABLE attestations (
  att_id      TEXT PRIMARY KEY NOT NULL,
  type        TEXT NOT NULL,
  subject_oid TEXT,
  media_type  TEXT NOT NULL,
  document    TEXT NOT NULL,
  status_url  TEXT,
  created_at  TEXT NOT NULL
) WITHOUT ROWID;
CREATE TABLE acx_skill (
  name           TEXT PRIMARY KEY,
  description    TEXT NOT NULL,
  license        TEXT, compatibility TEXT, skill_version TEXT,
  sqlar_path     TEXT NOT NULL,
  body_tokens    INTEGER,
  content_sha256 TEXT NOT NULL,
  resources      TEXT NOT NULL,
  ext            TEXT,
  schema_version TEXT NOT NULL
);
CREATE TABLE capabilities (
  id           TEXT PRIMARY KEY NOT NULL,
  json         TEXT NOT NULL,
  content_hash TEXT NOT NULL
);
"""
"""SPEC §3.2 with §5.3 and §6.1, comments dropped; the one departure (public_key_pem) is in
docs/spec/acx.md §2, and vectors is the plain table of §3.5's "local materialization"."""


def _norm(sql: str) -> list[str]:
    text = re.sub(r"--[^\n]*", " ", sql)
    text = re.sub(r"\s+", " ", text)
    text = re.sub(r"\s*([(),;])\s*", r"\1", text)
    return sorted(s.strip() for s in text.split(";") if s.strip())


def _schema(name: str) -> Draft202012Validator:
    return Draft202012Validator(json.loads((SCHEMAS / f"{name}.schema.json").read_text()))


def _file(conn: sqlite3.Connection, name: str) -> bytes:
    sz, data = conn.execute("SELECT sz, data FROM sqlar WHERE name = ?", (name,)).fetchone()
    return data if len(data) == sz else zlib.decompress(data)


def _manifest(conn: sqlite3.Connection) -> str:
    """SPEC §3.3, written from the text: live oids, sorted by (kind, source_ref), JCS, sha256."""
    entries = []
    for _kind, ref, canon, sz in sorted(
        conn.execute("SELECT kind, source_ref, canon, sz FROM objects WHERE zone='rom'")
    ):
        if ref.startswith("memory:"):
            (text,) = conn.execute("SELECT payload FROM memory WHERE id = ?", (ref[7:],)).fetchone()
            data = text.encode()
        elif ref.startswith("capability:"):
            (text,) = conn.execute(
                "SELECT json FROM capabilities WHERE id = ?", (ref[11:],)
            ).fetchone()
            data = text.encode()
        elif ref.startswith("cartridge:"):
            (value,) = conn.execute(
                "SELECT value FROM cartridge WHERE key = ?", (ref[10:],)
            ).fetchone()
            data = rfc8785.dumps({"key": ref[10:], "value": value})
        else:
            data = _file(conn, ref)
        entries.append(
            {
                "sourceRef": ref,
                "oid": "sha256:" + hashlib.sha256(data).hexdigest(),
                "canon": canon,
                "sz": sz,
            }
        )
    return "sha256:" + hashlib.sha256(rfc8785.dumps(entries)).hexdigest()


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_sample(tmp_path_factory.mktemp("independent"))


@pytest.mark.req("engram.cartridge.container-header", "engram.cartridge.verbatim-ddl")
def test_header_and_ddl_as_stock_sqlite3_sees_them(built: Path) -> None:
    head = built.read_bytes()[:100]
    assert head[68:72] == b"ACX1"
    assert int.from_bytes(head[60:64], "big") == 16777472
    schema = subprocess.run(
        ["sqlite3", str(built), ".schema"], capture_output=True, text=True, check=True
    ).stdout
    assert _norm(schema) == _norm(SPEC_SCHEMA)


@pytest.mark.req("engram.cartridge.rom-manifest", "engram.cartridge.dsse-rom-manifest")
def test_manifest_and_dsse_checked_without_engram(built: Path) -> None:
    conn = sqlite3.connect(built)
    digest = _manifest(conn)
    meta = dict(conn.execute("SELECT key, value FROM cartridge"))
    assert meta["acx.rom_manifest_hash"] == digest
    ((manifest_hash, envelope_text, keyid, pem),) = conn.execute(
        "SELECT manifest_hash, envelope, keyid, public_key_pem FROM signatures "
        "WHERE target='rom-manifest'"
    ).fetchall()
    assert manifest_hash == digest
    envelope = json.loads(envelope_text)
    assert set(envelope) == {"payloadType", "payload", "signatures"}
    assert envelope["payloadType"] == "application/vnd.in-toto+json"
    payload = base64.b64decode(envelope["payload"])
    pae = b"DSSEv1 %d %b %d %b" % (28, b"application/vnd.in-toto+json", len(payload), payload)
    key = load_pem_public_key(pem.encode())
    assert isinstance(key, Ed25519PublicKey)
    der = key.public_bytes(Encoding.DER, PublicFormat.SubjectPublicKeyInfo)
    assert (
        keyid == envelope["signatures"][0]["keyid"] == "ed25519:" + hashlib.sha256(der).hexdigest()
    )
    key.verify(base64.b64decode(envelope["signatures"][0]["sig"]), pae)
    statement = json.loads(payload)
    assert statement["_type"] == "https://in-toto.io/Statement/v1"
    assert statement["subject"][0] == {
        "name": meta["acx.cartridge_id"],
        "digest": {"sha256": digest[7:]},
    }
    assert statement["predicateType"] == "https://acx.dev/attestation/cartridge/v1"
    assert set(statement["predicate"]) == {
        "acxSchemaVersion",
        "publisherId",
        "romDigest",
        "manifestHash",
        "checksumHash",
        "fileCount",
        "embeddingEngine",
        "signedAt",
        "provenanceInstanceId",
    }
    assert statement["predicate"]["manifestHash"] == statement["predicate"]["romDigest"] == digest
    assert statement["predicate"]["publisherId"] == meta["acx.publisher_id"] == "io.github.acme"
    assert payload == rfc8785.dumps(statement)


@pytest.mark.req(
    "engram.cartridge.package-spec",
    "engram.cartridge.memory-partition",
    "engram.cartridge.harness-manifest",
    "engram.cartridge.capability-records",
    "engram.cartridge.skill-index",
)
def test_every_document_matches_the_published_schemas(built: Path) -> None:
    conn = sqlite3.connect(built)
    for name, schema in (
        ("rom/package-spec.json", "package-spec"),
        ("rom/manifest/harness-requirements.json", "harness-requirements"),
        ("rom/schema/lance-memory.json", "lance-memory"),
    ):
        errors = list(_schema(schema).iter_errors(json.loads(_file(conn, name))))
        assert not errors, (name, errors[:2])
    for (payload,) in conn.execute("SELECT payload FROM memory"):
        assert not list(_schema("memory-partition").iter_errors(json.loads(payload)))
    for (text,) in conn.execute("SELECT json FROM capabilities"):
        assert not list(_schema("capability-sellable-claim").iter_errors(json.loads(text)))
    cursor = conn.execute("SELECT * FROM acx_skill")
    columns = [d[0] for d in cursor.description]
    for values in cursor.fetchall():
        skill = {c: v for c, v in zip(columns, values, strict=True) if v is not None}
        path = skill["sqlar_path"]
        skill["resources"] = json.loads(skill["resources"])
        skill["sqlar_path"] = path.removeprefix("rom/")
        assert not list(_schema("skill-bundle").iter_errors(skill))
        assert skill["content_sha256"] == hashlib.sha256(_file(conn, path)).hexdigest()
    spec = json.loads(_file(conn, "rom/package-spec.json"))
    meta = dict(conn.execute("SELECT key, value FROM cartridge").fetchall())
    assert spec["cartridgeId"] == meta["acx.cartridge_id"]
    assert spec["embeddingEngine"] == json.loads(meta["acx.embedding_engine"])


@pytest.mark.req("engram.cartridge.sqlar-stock", "engram.cartridge.skill-index")
def test_stock_sqlite3_extracts_every_file_byte_for_byte(built: Path, tmp_path: Path) -> None:
    subprocess.run(["sqlite3", str(built), "-Ax"], cwd=tmp_path, check=True, capture_output=True)
    conn = sqlite3.connect(built)
    names = [n for (n,) in conn.execute("SELECT name FROM sqlar")]
    assert names
    assert all(n.split("/")[0] in ("rom", "save") and len(n.split("/")) >= 2 for n in names)
    for name in names:
        assert (tmp_path / name).read_bytes() == _file(conn, name)
