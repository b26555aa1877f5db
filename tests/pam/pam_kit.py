"""The independent side of the PAM tests: the PAM SDK (PyPI portable-ai-memory 1.0.0), its own
bundled schema, and the spec's Appendix D signature check written here without engram's code.

- :func:`sdk_check` loads a document with the SDK and runs its deep validation (content hashes,
  the integrity checksum it recomputes from its own models, cross references, temporal order)
  and, separately, the SDK's bundled JSON Schema;
- :func:`reference_verify` is the spec's Appendix D ``verify_export``: the payload
  ``{checksum, export_id, export_date, owner_id}`` through the ``rfc8785`` package, the value
  through ``base64.urlsafe_b64decode``, the Multikey through ``base58``, the check through
  ``cryptography``;
- :func:`sdk_document` builds a rich memory store with the SDK's own models and checksum.
"""

from __future__ import annotations

import base64
import hashlib
import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import base58
import jsonschema
import portable_ai_memory as pam
import rfc8785
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey
from portable_ai_memory.models.memory_store import (
    AccessBlock,
    AccessGrant,
    ConfidenceBlock,
    MetadataBlock,
    ProvenanceBlock,
    RelationObject,
    TemporalBlock,
)
from portable_ai_memory.schemas import load_schema

from engram.core.canonical import JsonObject
from engram.core.clock import FixedClock
from engram.memory import MemoryEngine, default_manifest_text, open_engine, parse_manifest
from engram.store import Store

OWNER = "550e8400-e29b-41d4-a716-446655440000"


def engine_on(store: Store, clock: FixedClock | None = None) -> MemoryEngine:
    # The model-free seat: new seats get the bundled MiniLM model, these tests are not about it.
    text = default_manifest_text().replace(
        'embedding_provider = "minilm-l6-v2"', 'embedding_provider = "local-hash-128"'
    )
    return open_engine(store, parse_manifest(text), clock or FixedClock())


def loose(document: JsonObject) -> dict[str, Any]:
    """A document engram wrote, as a test reads it: indexed freely (a wrong shape fails the
    test with a KeyError or TypeError), since the assertions are the check."""
    return document


def sdk_check(document: dict[str, Any]) -> pam.MemoryStore:
    """The document read by the SDK, valid by its deep checks (no errors, no warnings) and by
    its bundled JSON Schema; the SDK's own checksum function agrees with the integrity block."""
    jsonschema.Draft202012Validator(load_schema("memory-store")).validate(
        json.loads(json.dumps(document))  # noqa: TID251 - through plain JSON, as a file would go
    )
    store = pam.load_dict(json.loads(json.dumps(document)))  # noqa: TID251
    assert isinstance(store, pam.MemoryStore)
    result = pam.validate_memory_store(store)
    assert result.is_valid, str(result)
    assert not result.warnings, str(result)
    dumped = [m.model_dump(mode="json", by_alias=True, exclude_none=True) for m in store.memories]
    if store.integrity is not None:
        assert pam.compute_integrity_checksum(dumped) == store.integrity.checksum
    for memory in store.memories:
        assert pam.compute_content_hash(memory.content) == memory.content_hash
    return store


def multikey_public_bytes(text: str) -> bytes:
    """An Ed25519 Multikey (``z`` + base58btc of 0xed 0x01 + 32 bytes) as its raw key."""
    assert text.startswith("z"), text
    raw = base58.b58decode(text[1:])
    assert raw[:2] == b"\xed\x01", raw[:2]
    assert len(raw) == 34
    return raw[2:]


def reference_verify(document: dict[str, Any]) -> bool:
    """PAM spec Appendix D ``verify_export``, over the document's own signature block."""
    payload = {
        "checksum": document["integrity"]["checksum"],
        "export_id": document["export_id"],
        "export_date": document["export_date"],
        "owner_id": document["owner"]["id"],
    }
    signature = base64.urlsafe_b64decode(document["signature"]["value"])
    key = Ed25519PublicKey.from_public_bytes(
        multikey_public_bytes(document["signature"]["public_key"])
    )
    try:
        key.verify(signature, rfc8785.dumps(payload))
    except InvalidSignature:
        return False
    return True


def reference_checksum(memories: list[dict[str, Any]]) -> str:
    """PAM spec Appendix C ``compute_integrity_checksum`` (rfc8785 over memories sorted by id)."""
    ordered = sorted(memories, key=lambda m: m["id"])
    return "sha256:" + hashlib.sha256(rfc8785.dumps(ordered)).hexdigest()


def sdk_document() -> pam.MemoryStore:
    """A memory store as another system writes it with the SDK: every optional block used."""
    t0 = datetime(2024, 6, 1, 10, 0, tzinfo=UTC)
    t1 = datetime(2026, 2, 15, 20, 0, 0, 500000, tzinfo=UTC)
    grant = AccessGrant(entity="agent-work-assistant", permissions=["read"])  # type: ignore[list-item]
    memories = [
        pam.MemoryObject(
            id="mem-001-identity",
            type="identity",  # type: ignore[arg-type]
            content="User is fluent in English and Spanish and works on databases.",
            content_hash=pam.compute_content_hash(
                "User is fluent in English and Spanish and works on databases."
            ),
            summary="Multilingual database engineer",
            tags=["identity", "language"],
            confidence=ConfidenceBlock(
                initial=1.0,
                current=0.9,
                decay_model="none",  # type: ignore[arg-type]
                last_reinforced=t1,
            ),
            temporal=TemporalBlock(created_at=t0, updated_at=t1, valid_from=t0),
            provenance=ProvenanceBlock(
                platform="claude",
                conversation_ref="conv-001",
                extraction_method="llm_inference",  # type: ignore[arg-type]
                extracted_at=t0,
                extractor="pam-converter/1.0.0",
            ),
            access=AccessBlock(visibility="shared", shared_with=[grant]),  # type: ignore[arg-type]
            metadata=MetadataBlock.model_validate(
                {"language": "en", "domain": "personal", "source_app": {"v": 2, "flag": None}}
            ),
        ),
        pam.MemoryObject(
            id="mem-002-pref",
            type="preference",  # type: ignore[arg-type]
            content="Prefers concise answers with code examples.",
            content_hash=pam.compute_content_hash("Prefers concise answers with code examples."),
            tags=["style"],
            temporal=TemporalBlock(created_at=t0),
            provenance=ProvenanceBlock(platform="chatgpt", conversation_ref="conv-001"),
        ),
        pam.MemoryObject(
            id="mem-003-custom",
            type="custom",  # type: ignore[arg-type]
            custom_type="security-clearance",
            content="Holds a standard security clearance.",
            content_hash=pam.compute_content_hash("Holds a standard security clearance."),
            temporal=TemporalBlock(created_at=t0, valid_until=t1),
            provenance=ProvenanceBlock(platform="manual", extraction_method="manual"),  # type: ignore[arg-type]
        ),
        pam.MemoryObject(
            id="mem-004-old",
            type="fact",  # type: ignore[arg-type]
            status="superseded",  # type: ignore[arg-type]
            content="Lives in Lisbon.",
            content_hash=pam.compute_content_hash("Lives in Lisbon."),
            temporal=TemporalBlock(created_at=t0, superseded_by="mem-005-new"),
            provenance=ProvenanceBlock(platform="claude"),
        ),
        pam.MemoryObject(
            id="mem-005-new",
            type="fact",  # type: ignore[arg-type]
            content="Lives in Porto since 2025.",
            content_hash=pam.compute_content_hash("Lives in Porto since 2025."),
            temporal=TemporalBlock(created_at=t1),
            provenance=ProvenanceBlock(platform="claude"),
        ),
    ]
    dumped = [m.model_dump(mode="json", by_alias=True, exclude_none=True) for m in memories]
    return pam.MemoryStore.model_validate(
        {
            "schema": "portable-ai-memory",
            "schema_version": "1.0",
            "spec_uri": "https://portable-ai-memory.org/spec/v1.0",
            "export_id": "e47ac10b-58cc-4372-a567-0e02b2c3d479",
            "exported_by": "pam-converter/1.0.0",
            "export_date": "2026-02-15T22:00:00Z",
            "owner": {"id": OWNER, "created_at": "2024-06-01T10:00:00Z"},
            "memories": dumped,
            "relations": [
                RelationObject.model_validate(
                    {
                        "id": "rel-001",
                        "from": "mem-005-new",
                        "to": "mem-004-old",
                        "type": "supersedes",
                        "confidence": 0.95,
                        "created_at": "2026-02-15T20:00:00Z",
                    }
                ).model_dump(mode="json", by_alias=True, exclude_none=True)
            ],
            "conversations_index": [
                {
                    "id": "conv-001",
                    "platform": "claude",
                    "title": "Infrastructure discussion",
                    "message_count": 42,
                    "temporal": {"created_at": "2024-06-01T10:00:00Z"},
                    "derived_memories": ["mem-001-identity", "mem-002-pref"],
                    "storage": {"type": "file", "ref": "conversations/conv-001.json"},
                }
            ],
            "integrity": {
                "canonicalization": "RFC8785",
                "checksum": pam.compute_integrity_checksum(dumped),
                "total_memories": len(dumped),
            },
        }
    )


def save_sdk_document(path: Path) -> dict[str, Any]:
    """The SDK's own file writer (``pam.save``); returns what it wrote, read back as JSON."""
    pam.save(sdk_document(), path)
    data = json.loads(path.read_text(encoding="utf-8"))
    assert isinstance(data, dict)
    return data


def without_engram(memory: dict[str, Any]) -> dict[str, Any]:
    """A memory object less ``metadata.engram``, the one member engram adds on export."""
    out = json.loads(json.dumps(memory))  # noqa: TID251 - a deep copy
    metadata = out.get("metadata") or {}
    metadata.pop("engram", None)
    if not metadata:
        out.pop("metadata", None)
    return out  # type: ignore[no-any-return]


__all__ = [
    "OWNER",
    "engine_on",
    "multikey_public_bytes",
    "reference_checksum",
    "reference_verify",
    "save_sdk_document",
    "sdk_check",
    "sdk_document",
    "without_engram",
]
