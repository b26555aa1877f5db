"""What the registry may call trusted, proven or verified (lboel/acx@85f1358 SPEC.md §17.8 namespace
boundary, §17.6 levels and capabilities, §4.4-§4.5 through ``engram.trust``)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from registry_kit import NOW, REFERENCE_REGISTRY, make_registry

from acx_json_kit import registry_for
from engram.registry import ResolvedLevel, build_index


@pytest.mark.req("engram.registry.namespace-trust")
def test_trusted_needs_a_trust_registry_key_with_a_namespace_proof(tmp_path: Path) -> None:
    registry = make_registry(tmp_path, with_reference=False)
    pem = registry.key.public_key().to_pem().decode()
    plain = build_index(registry.root, now=NOW).index
    assert {w["trust"] for w in plain["workflows"]} == {"portable"}  # a path or a name is no proof
    (registry.root / "trust-registry.json").write_bytes(registry_for(pem, "io.github.example"))
    proven = build_index(registry.root, now=NOW)
    assert proven.ok, [str(p) for p in proven.problems]
    assert {w["trust"] for w in proven.index["workflows"]} == {"trusted"}
    assert {g["trustStatus"] for g in proven.index["agentGraphs"]} == {"verified"}
    # The same key without its namespace proof, or expired, is portable again.
    (registry.root / "trust-registry.json").write_bytes(
        registry_for(pem, "io.github.example", namespaceProof=None)
    )
    unproven = build_index(registry.root, now=NOW)
    assert {w["trust"] for w in unproven.index["workflows"]} == {"portable"}
    (registry.root / "trust-registry.json").write_bytes(
        registry_for(pem, "io.github.example", notAfter="2026-08-01T00:00:00Z")
    )
    assert {w["trust"] for w in build_index(registry.root, now=NOW).index["workflows"]} == {
        "portable"
    }


@pytest.mark.req("engram.registry.level-claims")
def test_a_level_is_proven_only_when_its_credential_resolves_and_stored_flags_prove_nothing(
    tmp_path: Path,
) -> None:
    root = tmp_path / "registry"
    shutil.copytree(REFERENCE_REGISTRY, root)
    (entry,) = build_index(root, now=NOW).index["cartridges"]
    assert entry["level"] is None
    assert entry["levelClaim"] == {
        "acxLevel": 28,
        "careerTier": "principal",
        "verificationState": "unresolved",
    }
    assert all(c["verified"] is False for c in entry["capabilities"])
    seen: list[str] = []

    def resolve(credential: bytes, rom: str) -> ResolvedLevel | None:
        seen.append(rom)
        assert json.loads(credential)["type"][0] == "VerifiableCredential"
        return ResolvedLevel(28, "principal")

    (proven,) = build_index(root, now=NOW, resolve_level=resolve).index["cartridges"]
    assert seen == [entry["romHash"]]  # resolved against the verified ROM digest
    assert proven["level"] == {
        "acxLevel": 28,
        "careerTier": "principal",
        "boundToRom": True,
        "proven": True,
        "verificationState": "verified",
    }
    assert proven["levelClaim"]["verificationState"] == "verified"
