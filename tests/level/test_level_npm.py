"""An independent verifier agrees: Digital Bazaar's @digitalbazaar/vc 7 with the eddsa-jcs-2022
cryptosuite and vc-bitstring-status-list (tests/level/verify.mjs; no engram code on that side)."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
from level_kit import Issued, issue, node_verify


@pytest.fixture(scope="module")
def issued(tmp_path_factory: pytest.TempPathFactory) -> Issued:
    return issue(tmp_path_factory.mktemp("npm"))


@pytest.mark.req("engram.level.independent-verifier")
def test_the_npm_verifier_accepts_engrams_credential_and_status_list(
    issued: Issued, tmp_path: Path
) -> None:
    result = node_verify(tmp_path, issued, issued.credential)
    assert result["verified"] is True, result["errors"]
    statuses = result["statusResult"]["results"]
    assert [s["status"] for s in statuses] == [False]


def _one_byte_changes(credential: dict[str, Any]) -> list[dict[str, Any]]:
    """Copies with exactly one character of one string member changed (a byte of the UTF-8 JSON)."""
    out = []
    targets: list[tuple[Any, ...]] = [
        ("name",),
        ("validFrom",),
        ("issuer", "id"),
        ("credentialSubject", "id"),
        ("credentialSubject", "result", 0, "acx:ratingMu"),
        ("credentialSubject", "result", 0, "acx:cartridgeRomDigest"),
        ("credentialSubject", "achievement", "criteria", "narrative"),
        ("evidence", 5, "acx:digestMultibase"),
        ("credentialStatus", "statusListIndex"),
        ("proof", "proofValue"),
    ]
    for path in targets:
        changed = copy.deepcopy(credential)
        node: Any = changed
        for key in path[:-1]:
            node = node[key]
        text = node[path[-1]]
        position = len(text) // 2
        replacement = "2" if text[position] != "2" else "3"
        node[path[-1]] = text[:position] + replacement + text[position + 1 :]
        out.append(changed)
    return out


@pytest.mark.req("engram.level.independent-verifier")
def test_the_npm_verifier_rejects_every_one_byte_change(issued: Issued, tmp_path: Path) -> None:
    for changed in _one_byte_changes(issued.credential):
        result = node_verify(tmp_path, issued, changed)
        assert result["verified"] is False, changed


@pytest.mark.req("engram.level.independent-verifier", "engram.level.status-fail-closed")
def test_a_revoked_credential_is_revoked_for_the_npm_verifier_too(
    issued: Issued, tmp_path: Path
) -> None:
    revoked = issued.revoked_list()
    result = node_verify(tmp_path, issued, issued.credential, revoked)
    # the library reports verified: true and puts the revocation bit in statusResult
    assert [s["status"] for s in result["statusResult"]["results"]] == [True]
