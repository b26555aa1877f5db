"""The trust taxonomy and the public-keys-only trust registry.

Spec: acx-cartridge-conformance §12 items 4, 5 and 6 (§4.5); docs/spec/acx.md §10.

Verification yields exactly one state, the first whose condition holds, checked in this order:

1. ``tampered`` - live ROM bytes disagree with the stored index or the signature;
2. ``legacy``   - intact but unsigned;
3. ``portable`` - the signature holds, but no registry binds its key to the cartridge's
   publisher and it is not the host's own key;
4. ``trusted``  - a registry entry binds ``(publisherId, keyid)`` with a valid namespace binding;
5. ``local``    - signed by the host's own key.

Trust binds to the reverse-DNS ``publisherId`` plus the content-addressed ``keyid``, never to an
``instanceId`` (an installation id lives only in SAVE and is never consulted). The registry file
holds public keys only: one that carries private key material in any field is refused, as is any
key whose ``keyid`` is not the hash of its public key. The live namespace proof (DNS TXT record or
GitHub OIDC token) is host-side; the registry records which proof binds the namespace and the
binding rule below is checked here.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from engram.cartridge._errors import TrustRegistryError
from engram.cartridge._skills import REVERSE_DNS
from engram.core.canonical import parse_strict
from engram.core.keys import PublicKey
from engram.errors import CanonicalJsonError, EngramError

REGISTRY_SCHEMA_VERSION = "acx.trust-registry/1"


class TrustState(StrEnum):
    TAMPERED = "tampered"
    LEGACY = "legacy"
    PORTABLE = "portable"
    TRUSTED = "trusted"
    LOCAL = "local"


TRUST_ORDER = tuple(TrustState)
"""The evaluation order of §4.5."""

_PRIVATE_FIELD = re.compile(
    r"(?i)^(?:d|k|seed|secret|secretkey|secret_key|private|privatekey|private_key|sk)$"
)
_PRIVATE_TEXT = re.compile(r"PRIVATE KEY|ssh-ed25519-private|-----BEGIN OPENSSH")
_PRIVATE_BYTES = re.compile(rb"PRIVATE KEY|-----BEGIN OPENSSH")


@dataclass(frozen=True)
class Publisher:
    publisher_id: str
    proof_method: str
    keys: dict[str, PublicKey]
    """Active keys by keyid (revoked keys are kept out)."""


@dataclass(frozen=True)
class TrustRegistry:
    publishers: dict[str, Publisher]

    def binds(self, publisher_id: str, keyid: str, key: PublicKey) -> bool:
        publisher = self.publishers.get(publisher_id)
        return publisher is not None and publisher.keys.get(keyid) == key

    @classmethod
    def empty(cls) -> TrustRegistry:
        return cls({})


def load_trust_registry(data: bytes) -> TrustRegistry:
    """Parse a registry file, refusing private material, bad bindings and unknown fields."""
    if _PRIVATE_BYTES.search(data):
        # Checked on the raw bytes first, so a private key file given as a registry is named
        # for what it is (and never parsed or echoed) rather than reported as bad JSON.
        raise TrustRegistryError(
            "trust registry holds private key material: a registry publishes public keys only"
        )
    try:
        document = parse_strict(data)
    except CanonicalJsonError as e:
        raise TrustRegistryError(f"trust registry is not valid JSON: {e.message}") from e
    _refuse_private_material(document, "$")
    if not isinstance(document, dict) or set(document) != {"schemaVersion", "publishers"}:
        raise TrustRegistryError("trust registry must be exactly {schemaVersion, publishers}")
    if document["schemaVersion"] != REGISTRY_SCHEMA_VERSION:
        raise TrustRegistryError(f"trust registry schemaVersion must be {REGISTRY_SCHEMA_VERSION}")
    entries = document["publishers"]
    if not isinstance(entries, list):
        raise TrustRegistryError("trust registry publishers must be a list")
    publishers: dict[str, Publisher] = {}
    for entry in entries:
        publisher = _publisher(entry)
        if publisher.publisher_id in publishers:
            raise TrustRegistryError(f"publisher {publisher.publisher_id!r} is listed twice")
        publishers[publisher.publisher_id] = publisher
    return TrustRegistry(publishers)


def _refuse_private_material(value: Any, where: str) -> None:
    stack: list[tuple[Any, str]] = [(value, where)]
    while stack:
        item, path = stack.pop()
        if isinstance(item, dict):
            for key, member in item.items():
                if _PRIVATE_FIELD.match(key):
                    raise TrustRegistryError(
                        f"trust registry holds private key material at {path}.{key}: "
                        "a registry publishes public keys only"
                    )
                stack.append((member, f"{path}.{key}"))
        elif isinstance(item, list):
            stack.extend((member, f"{path}[{i}]") for i, member in enumerate(item))
        elif isinstance(item, str) and _PRIVATE_TEXT.search(item):
            raise TrustRegistryError(
                f"trust registry holds private key material at {path}: "
                "a registry publishes public keys only"
            )


def _publisher(entry: object) -> Publisher:
    if not isinstance(entry, dict) or set(entry) != {"publisherId", "namespaceProof", "keys"}:
        raise TrustRegistryError("a publisher is exactly {publisherId, namespaceProof, keys}")
    publisher_id = entry["publisherId"]
    if not isinstance(publisher_id, str) or not REVERSE_DNS.fullmatch(publisher_id):
        raise TrustRegistryError(f"publisherId {publisher_id!r} is not a reverse-DNS name")
    method = _namespace_binding(publisher_id, entry["namespaceProof"])
    keys_in = entry["keys"]
    if not isinstance(keys_in, list) or not keys_in:
        raise TrustRegistryError(f"publisher {publisher_id!r} lists no keys")
    keys: dict[str, PublicKey] = {}
    for item in keys_in:
        if not isinstance(item, dict) or set(item) != {"keyid", "publicKey", "status"}:
            raise TrustRegistryError("a registry key is exactly {keyid, publicKey, status}")
        try:
            key = PublicKey.from_b64url(item["publicKey"])
        except EngramError as e:
            raise TrustRegistryError(f"publisher {publisher_id!r}: {e.message}") from e
        if item["keyid"] != key.key_id:
            raise TrustRegistryError(
                f"publisher {publisher_id!r}: keyid {item['keyid']!r} is not the hash of its key"
            )
        if item["status"] not in ("active", "revoked"):
            raise TrustRegistryError("a registry key status is 'active' or 'revoked'")
        if item["status"] == "active":
            keys[key.key_id] = key
    return Publisher(publisher_id=publisher_id, proof_method=method, keys=keys)


def _namespace_binding(publisher_id: str, proof: object) -> str:
    """Check that the recorded namespace proof covers ``publisher_id``; return its method.

    ``dns-txt`` with ``domain`` (``example.com`` covers ``com.example`` and everything under
    it); ``github-oidc`` with ``owner`` (covers ``io.github.<owner>`` and everything under it).
    """
    labels = publisher_id.split(".")
    if (
        isinstance(proof, dict)
        and set(proof) == {"method", "domain"}
        and proof["method"] == "dns-txt"
    ):
        domain = proof["domain"]
        if not isinstance(domain, str) or not domain:
            raise TrustRegistryError(f"publisher {publisher_id!r}: dns-txt proof needs a domain")
        owned = list(reversed(domain.lower().split(".")))
        if len(owned) < 2 or labels[: len(owned)] != owned:
            raise TrustRegistryError(
                f"publisher {publisher_id!r} is not inside the proven namespace {domain!r}"
            )
        return "dns-txt"
    if (
        isinstance(proof, dict)
        and set(proof) == {"method", "owner"}
        and proof["method"] == "github-oidc"
    ):
        owner = proof["owner"]
        if not isinstance(owner, str) or labels[:3] != ["io", "github", owner.lower()]:
            raise TrustRegistryError(
                f"publisher {publisher_id!r} is not inside io.github.{owner} (github-oidc proof)"
            )
        return "github-oidc"
    raise TrustRegistryError(
        f"publisher {publisher_id!r}: namespaceProof must be "
        "{method: dns-txt, domain} or {method: github-oidc, owner}"
    )


def classify(
    *,
    signed_by: tuple[str, str, PublicKey] | None,
    registry: TrustRegistry,
    own_keyids: frozenset[str],
) -> tuple[TrustState, str]:
    """The state of an intact cartridge (tampering was ruled out first) and why."""
    if signed_by is None:
        return TrustState.LEGACY, "intact but unsigned"
    publisher_id, keyid, key = signed_by
    if registry.binds(publisher_id, keyid, key):
        return TrustState.TRUSTED, f"{keyid} is bound to {publisher_id} by the trust registry"
    if keyid in own_keyids:
        return TrustState.LOCAL, f"signed with this host's own key {keyid}"
    return TrustState.PORTABLE, f"signature holds, but {keyid} is not bound to {publisher_id}"


__all__ = [
    "REGISTRY_SCHEMA_VERSION",
    "TRUST_ORDER",
    "Publisher",
    "TrustRegistry",
    "TrustState",
    "classify",
    "load_trust_registry",
]
