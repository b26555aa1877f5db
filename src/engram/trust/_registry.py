"""The standalone, public-keys-only ACX trust registry (``acx.trust-registry/1``).

Spec: lboel/acx@85f1358 SPEC.md §4.3 (portable publisher identity), §4.4 (the registry) and the
published schema ``identity-signing-trust.schema.json``; decisions in docs/spec/acx-trust.md.

A registry file is a JSON object ``{schemaVersion, registryId?, updatedAt?, keys: [...]}``; each key
entry carries ``keyid``, ``publisherId``, ``algorithm`` (``ed25519``), ``publicKeyPem`` (SPKI),
``status``, ``notBefore``/``notAfter``, ``namespaceProof`` and optionally ``rotatedFrom``/
``rotatedTo``/``revokedAt``/``revocationReason``. Loading is exact about what the schema fixes
(no unknown members, one entry per keyid, ``keyid`` is the hash of the key it names) and refuses
any private key material before anything else is read. Whether an entry *grants* trust is not
decided here but in :mod:`engram.trust._evaluate`, so a registry with an expired or revoked key
still loads and the verdict says why the key no longer counts.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, replace
from datetime import datetime
from enum import StrEnum

from engram.core.canonical import Json, JsonObject, parse_strict
from engram.core.clock import format_instant, parse_instant
from engram.core.jsonio import dumps_text
from engram.core.keys import PublicKey
from engram.errors import CanonicalJsonError, EngramError, InputError

REGISTRY_SCHEMA_VERSION = "acx.trust-registry/1"
MEDIA_TYPE = "application/vnd.acx.trust-registry.v1"
WELL_KNOWN_PATH = "/.well-known/acx-trust-registry.json"

KEYID = re.compile(r"ed25519:[0-9a-f]{64}")
PUBLISHER_ID = re.compile(
    r"(?:[a-z0-9](?:[a-z0-9-]*[a-z0-9])?\.)+[a-z0-9][a-z0-9-]*(?:[./][a-z0-9][a-z0-9._-]*)*"
)
"""The schema's ``publisherId``: reverse-DNS labels, then an optional signed sub-namespace."""

GITHUB_OIDC_ISSUER = "https://token.actions.githubusercontent.com"
TXT_PREFIX = "_acx-challenge."

_REGISTRY_MEMBERS = frozenset({"schemaVersion", "registryId", "updatedAt", "keys"})
_KEY_REQUIRED = frozenset(
    {"keyid", "publisherId", "algorithm", "publicKeyPem", "status", "notBefore", "notAfter"}
    | {"namespaceProof"}
)
_KEY_OPTIONAL = frozenset({"rotatedFrom", "rotatedTo", "revokedAt", "revocationReason"})
_PROOF_MEMBERS = {
    "dns-txt": frozenset({"method", "txtRecord", "verifiedAt"}),
    "github-oidc": frozenset({"method", "oidcSubject", "oidcIssuer", "verifiedAt"}),
}
_REVOCATION_REASONS = frozenset({"key-compromise", "superseded", "retired"})

# Private material is refused by member name, by text and on the raw bytes (so a private key file
# given as a registry is named for what it is and never parsed or echoed back).
_PRIVATE_MEMBER = re.compile(
    r"(?i)^(?:d|k|seed|secret|secretkey|secret_key|private|privatekey|private_key|"
    r"privatekeypem|private_key_pem|sk)$"
)
_PRIVATE_TEXT = re.compile(r"PRIVATE KEY|ssh-ed25519-private|-----BEGIN OPENSSH")
_PRIVATE_BYTES = re.compile(rb"PRIVATE KEY|-----BEGIN OPENSSH")


class TrustRegistryError(InputError):
    """A trust registry is malformed, or holds private key material."""

    code = "invalid_trust_registry"


class KeyStatus(StrEnum):
    ACTIVE = "active"
    REVOKED = "revoked"
    EXPIRED = "expired"


class ProofMethod(StrEnum):
    DNS_TXT = "dns-txt"
    GITHUB_OIDC = "github-oidc"


@dataclass(frozen=True)
class NamespaceProof:
    """How the registry owner proved that the publisher owns its namespace (§4.3).

    The live check (resolving the TXT record, validating the OIDC token) is the registrar's; the
    registry records its outcome. :meth:`covers` checks that what was proven is the namespace the
    key is listed for.
    """

    method: ProofMethod
    verified_at: datetime
    txt_record: str | None = None
    oidc_subject: str | None = None
    oidc_issuer: str | None = None

    def covers(self, publisher_id: str) -> bool:
        """Whether the proven namespace contains ``publisher_id``.

        ``dns-txt`` with ``_acx-challenge.example.com`` proves ``com.example`` and everything
        below it; ``github-oidc`` with subject ``repo:alice/...`` proves ``io.github.alice`` and
        everything below it. ``io.github.*`` is proven by GitHub OIDC only (§4.3).
        """
        labels = _namespace_labels(publisher_id)
        if self.method is ProofMethod.GITHUB_OIDC:
            owner = _oidc_owner(self.oidc_subject or "")
            return owner is not None and labels[:3] == ["io", "github", owner]
        if labels[:2] == ["io", "github"]:
            return False
        domain = (self.txt_record or "")[len(TXT_PREFIX) :].rstrip(".").lower()
        owned = list(reversed(domain.split(".")))
        return len(owned) >= 2 and all(owned) and labels[: len(owned)] == owned

    def to_wire(self) -> JsonObject:
        out: JsonObject = {
            "method": self.method.value,
            "verifiedAt": format_instant(self.verified_at),
        }
        if self.method is ProofMethod.DNS_TXT:
            out["txtRecord"] = self.txt_record
        else:
            out["oidcSubject"] = self.oidc_subject
            out["oidcIssuer"] = self.oidc_issuer
        return out


@dataclass(frozen=True)
class TrustedKey:
    """One registry entry: a publisher's public key and its validity."""

    keyid: str
    publisher_id: str
    public_key: PublicKey
    status: KeyStatus
    not_before: datetime
    not_after: datetime
    namespace_proof: NamespaceProof
    rotated_from: str | None = None
    rotated_to: str | None = None
    revoked_at: datetime | None = None
    revocation_reason: str | None = None

    def lists(self, publisher_id: str) -> bool:
        """Whether this entry is for ``publisher_id``: the same id or a signed sub-namespace."""
        return publisher_id == self.publisher_id or publisher_id.startswith(self.publisher_id + "/")

    def to_wire(self) -> JsonObject:
        out: JsonObject = {
            "keyid": self.keyid,
            "publisherId": self.publisher_id,
            "algorithm": "ed25519",
            "publicKeyPem": self.public_key.to_pem().decode("ascii"),
            "status": self.status.value,
            "notBefore": format_instant(self.not_before),
            "notAfter": format_instant(self.not_after),
            "namespaceProof": self.namespace_proof.to_wire(),
        }
        if self.rotated_from is not None:
            out["rotatedFrom"] = self.rotated_from
        if self.rotated_to is not None:
            out["rotatedTo"] = self.rotated_to
        if self.revoked_at is not None:
            out["revokedAt"] = format_instant(self.revoked_at)
        if self.revocation_reason is not None:
            out["revocationReason"] = self.revocation_reason
        return out


@dataclass(frozen=True)
class TrustRegistry:
    """A parsed registry: entries by keyid, in file order."""

    keys: tuple[TrustedKey, ...] = ()
    registry_id: str | None = None
    updated_at: datetime | None = None

    @classmethod
    def empty(cls) -> TrustRegistry:
        return cls()

    def key(self, keyid: str) -> TrustedKey | None:
        return next((entry for entry in self.keys if entry.keyid == keyid), None)

    def with_key(self, entry: TrustedKey) -> TrustRegistry:
        """A registry with ``entry`` added; a keyid already listed is refused."""
        if self.key(entry.keyid) is not None:
            raise TrustRegistryError(f"{entry.keyid} is already in the trust registry")
        return replace(self, keys=(*self.keys, entry))

    def without_key(self, keyid: str) -> TrustRegistry:
        """A registry without the entry for ``keyid``; an unknown keyid is refused."""
        if self.key(keyid) is None:
            raise TrustRegistryError(f"{keyid} is not in the trust registry")
        return replace(self, keys=tuple(entry for entry in self.keys if entry.keyid != keyid))

    def to_wire(self) -> JsonObject:
        out: JsonObject = {"schemaVersion": REGISTRY_SCHEMA_VERSION}
        if self.registry_id is not None:
            out["registryId"] = self.registry_id
        if self.updated_at is not None:
            out["updatedAt"] = format_instant(self.updated_at)
        out["keys"] = [entry.to_wire() for entry in self.keys]
        return out

    def to_bytes(self) -> bytes:
        """The registry as a person reads and git diffs it: sorted members, two-space indent."""
        return (dumps_text(self.to_wire(), indent=2) + "\n").encode("utf-8")


def load_trust_registry(data: bytes) -> TrustRegistry:
    """Parse a registry file; :class:`TrustRegistryError` names the first thing wrong with it."""
    if _PRIVATE_BYTES.search(data):
        raise TrustRegistryError(
            "trust registry holds private key material: a registry publishes public keys only"
        )
    try:
        document: Json = parse_strict(data)
    except CanonicalJsonError as e:
        raise TrustRegistryError(f"trust registry is not valid JSON: {e.message}") from e
    _refuse_private_material(document)
    if not isinstance(document, dict):
        raise TrustRegistryError("trust registry must be a JSON object")
    _exact_members(document, required={"schemaVersion", "keys"}, allowed=_REGISTRY_MEMBERS, at="$")
    if document["schemaVersion"] != REGISTRY_SCHEMA_VERSION:
        raise TrustRegistryError(
            f"trust registry schemaVersion is {document['schemaVersion']!r}, "
            f"not {REGISTRY_SCHEMA_VERSION!r}"
        )
    registry_id = document.get("registryId")
    if registry_id is not None and not isinstance(registry_id, str):
        raise TrustRegistryError("trust registry registryId must be a string")
    updated_at = document.get("updatedAt")
    entries = document["keys"]
    if not isinstance(entries, list):
        raise TrustRegistryError("trust registry keys must be a list")
    keys: list[TrustedKey] = []
    seen: set[str] = set()
    for index, entry in enumerate(entries):
        key = _trusted_key(entry, f"$.keys[{index}]")
        if key.keyid in seen:
            raise TrustRegistryError(f"$.keys[{index}]: {key.keyid} is listed twice")
        seen.add(key.keyid)
        keys.append(key)
    return TrustRegistry(
        keys=tuple(keys),
        registry_id=registry_id,
        updated_at=None if updated_at is None else _instant(updated_at, "$.updatedAt"),
    )


def _trusted_key(entry: Json, at: str) -> TrustedKey:
    if not isinstance(entry, dict):
        raise TrustRegistryError(f"{at}: a registry key entry must be an object")
    _exact_members(entry, required=_KEY_REQUIRED, allowed=_KEY_REQUIRED | _KEY_OPTIONAL, at=at)
    keyid = entry["keyid"]
    if not isinstance(keyid, str) or not KEYID.fullmatch(keyid):
        raise TrustRegistryError(f"{at}.keyid must be ed25519:<64 lowercase hex>")
    publisher_id = entry["publisherId"]
    if not isinstance(publisher_id, str) or not PUBLISHER_ID.fullmatch(publisher_id):
        raise TrustRegistryError(f"{at}.publisherId {publisher_id!r} is not a reverse-DNS name")
    if entry["algorithm"] != "ed25519":
        raise TrustRegistryError(f"{at}.algorithm must be 'ed25519'")
    pem = entry["publicKeyPem"]
    if not isinstance(pem, str):
        raise TrustRegistryError(f"{at}.publicKeyPem must be an SPKI PEM string")
    try:
        public_key = PublicKey.from_pem(pem.encode("utf-8"))
    except EngramError as e:
        raise TrustRegistryError(f"{at}.publicKeyPem: {e.message}") from e
    if public_key.key_id != keyid:
        raise TrustRegistryError(f"{at}: keyid {keyid} is not the hash of its publicKeyPem")
    raw_status = entry["status"]
    try:
        if not isinstance(raw_status, str):
            raise ValueError(raw_status)
        status = KeyStatus(raw_status)
    except ValueError as e:
        raise TrustRegistryError(f"{at}.status must be active, revoked or expired") from e
    reason = entry.get("revocationReason")
    if reason is not None and reason not in _REVOCATION_REASONS:
        raise TrustRegistryError(
            f"{at}.revocationReason must be key-compromise, superseded, retired or null"
        )
    revoked_at = entry.get("revokedAt")
    return TrustedKey(
        keyid=keyid,
        publisher_id=publisher_id,
        public_key=public_key,
        status=status,
        not_before=_instant(entry["notBefore"], f"{at}.notBefore"),
        not_after=_instant(entry["notAfter"], f"{at}.notAfter"),
        namespace_proof=_namespace_proof(entry["namespaceProof"], f"{at}.namespaceProof"),
        rotated_from=_optional_keyid(entry.get("rotatedFrom"), f"{at}.rotatedFrom"),
        rotated_to=_optional_keyid(entry.get("rotatedTo"), f"{at}.rotatedTo"),
        revoked_at=None if revoked_at is None else _instant(revoked_at, f"{at}.revokedAt"),
        revocation_reason=reason if isinstance(reason, str) else None,
    )


def _namespace_proof(proof: Json, at: str) -> NamespaceProof:
    raw_method = proof.get("method") if isinstance(proof, dict) else None
    if (
        not isinstance(proof, dict)
        or not isinstance(raw_method, str)
        or raw_method not in _PROOF_MEMBERS
    ):
        raise TrustRegistryError(f"{at}.method must be dns-txt or github-oidc")
    method = ProofMethod(raw_method)
    members = _PROOF_MEMBERS[method.value]
    _exact_members(proof, required=members, allowed=members, at=at)
    verified_at = _instant(proof["verifiedAt"], f"{at}.verifiedAt")
    if method is ProofMethod.DNS_TXT:
        record = proof["txtRecord"]
        if not isinstance(record, str) or not record.startswith(TXT_PREFIX):
            raise TrustRegistryError(f"{at}.txtRecord must start with {TXT_PREFIX!r}")
        return NamespaceProof(method, verified_at, txt_record=record)
    subject, issuer = proof["oidcSubject"], proof["oidcIssuer"]
    if not isinstance(subject, str):
        raise TrustRegistryError(f"{at}.oidcSubject must be a string")
    if issuer != GITHUB_OIDC_ISSUER:
        raise TrustRegistryError(f"{at}.oidcIssuer must be {GITHUB_OIDC_ISSUER}")
    return NamespaceProof(method, verified_at, oidc_subject=subject, oidc_issuer=issuer)


def _exact_members(
    value: Mapping[str, Json],
    *,
    required: frozenset[str] | set[str],
    allowed: frozenset[str],
    at: str,
) -> None:
    missing = sorted(set(required) - set(value))
    if missing:
        raise TrustRegistryError(f"{at} lacks {', '.join(missing)}")
    unknown = sorted(set(value) - allowed)
    if unknown:
        raise TrustRegistryError(f"{at} has unknown member {unknown[0]!r}")


def _instant(value: Json, at: str) -> datetime:
    if not isinstance(value, str):
        raise TrustRegistryError(f"{at} must be an RFC 3339 date-time")
    try:
        return parse_instant(value)
    except InputError as e:
        raise TrustRegistryError(f"{at}: {e.message}") from e


def _optional_keyid(value: Json, at: str) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str) or not KEYID.fullmatch(value):
        raise TrustRegistryError(f"{at} must be a keyid or null")
    return value


def _namespace_labels(publisher_id: str) -> list[str]:
    """``com.example.team/sub`` -> ``["com", "example", "team"]``: the reverse-DNS part."""
    return publisher_id.split("/", 1)[0].lower().split(".")


def _oidc_owner(subject: str) -> str | None:
    """The owner in a GitHub OIDC subject ``repo:<owner>/<repo>:…``, lowercased."""
    match = re.fullmatch(r"repo:([A-Za-z0-9-]+)/[^:]+:.+", subject)
    return match.group(1).lower() if match else None


def _refuse_private_material(value: Json) -> None:
    stack: list[tuple[Json, str]] = [(value, "$")]
    while stack:
        item, path = stack.pop()
        if isinstance(item, dict):
            for name, member in item.items():
                if _PRIVATE_MEMBER.match(name):
                    raise TrustRegistryError(
                        f"trust registry holds private key material at {path}.{name}: "
                        "a registry publishes public keys only"
                    )
                stack.append((member, f"{path}.{name}"))
        elif isinstance(item, list):
            stack.extend((member, f"{path}[{i}]") for i, member in enumerate(item))
        elif isinstance(item, str) and _PRIVATE_TEXT.search(item):
            raise TrustRegistryError(
                f"trust registry holds private key material at {path}: "
                "a registry publishes public keys only"
            )


__all__ = [
    "GITHUB_OIDC_ISSUER",
    "MEDIA_TYPE",
    "REGISTRY_SCHEMA_VERSION",
    "WELL_KNOWN_PATH",
    "KeyStatus",
    "NamespaceProof",
    "ProofMethod",
    "TrustRegistry",
    "TrustRegistryError",
    "TrustedKey",
    "load_trust_registry",
]
