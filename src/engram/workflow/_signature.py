"""The self-contained signature of a JSON ACX artifact: JCS digest, in-toto Statement, DSSE.

Spec: lboel/acx@85f1358 SPEC.md §14.5 (``acx.workflow-signature/1``), §16.8
(``acx.agent-graph-signature/1``: "the same self-contained trust spine as workflows"), §4.2 (DSSE +
in-toto, Ed25519, content-addressed keyid, standard or URL-safe base64 accepted), §4.4-§4.5 (the
trust registry and taxonomy, through ``engram.trust``); docs/spec/acx-workflows.md §"Signature".

The digest is ``sha256:`` + hex SHA-256 of the RFC 8785 bytes of the document without its
top-level ``integrity`` (and nothing else removed). The signature is a DSSE envelope over the JCS
bytes of an in-toto Statement v1 with one subject ``urn:acx:<kind>:<id>@<version>`` and a
predicate binding the schema version, id, version, publisher, digest, signing time and the
artifact's counts. :func:`verify` recomputes every one of those from the live document, so
editing anything after signing, or re-pointing any binding, is ``tampered``; a signature that
holds is then ``portable``, ``trusted`` or ``local`` as ``engram.trust`` decides from the key it
verified under. A document without ``integrity`` is ``unsigned`` (there is no legacy form of a
signed workflow or graph).
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import re
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass
from datetime import datetime

from engram.core.canonical import Json, JsonObject, canonicalize
from engram.core.clock import format_instant, parse_instant
from engram.core.dsse import (
    PAYLOAD_TYPE_IN_TOTO,
    in_toto_statement,
    load_in_toto_statement,
    pae,
    sign_envelope,
    statement_subject,
)
from engram.core.keys import PrivateKey, PublicKey
from engram.errors import InputError, InvalidRequest, SignatureInvalid
from engram.trust import TrustRegistry, TrustState, evaluate_signer
from engram.workflow._issues import LintReport

PUBLISHER_ID = re.compile(
    r"(?:[a-z0-9](?:[a-z0-9-]*[a-z0-9])?\.)+[a-z0-9][a-z0-9-]*(?:[./][a-z0-9][a-z0-9._-]*)*"
)
"""The schemas' ``publisherId``: reverse-DNS labels, then an optional signed sub-namespace."""

_KEYID = re.compile(r"ed25519:[0-9a-f]{64}")
_DIGEST = re.compile(r"sha256:[0-9a-f]{64}")
_STANDARD_B64 = re.compile(r"[A-Za-z0-9+/]+={0,2}")
_URLSAFE_B64 = re.compile(r"[A-Za-z0-9_-]+={0,2}")
_INTEGRITY_MEMBERS = frozenset(
    {"schemaVersion", "digest", "publisherId", "keyid", "publicKeyPem", "signedAt", "envelope"}
)
_ENVELOPE_MEMBERS = frozenset({"payloadType", "payload", "signatures"})
_UNVERSIONED = "unversioned"


class SignError(InputError):
    """A document cannot be signed as asked (not publishable, bad publisher id)."""

    code = "cannot_sign"


@dataclass(frozen=True)
class ArtifactKind:
    """What differs between the workflow and the Agent Graph signature: names and counts."""

    label: str
    document_version: str
    signature_version: str
    subject_prefix: str
    predicate_type: str
    id_member: str
    version_member: str
    digest_member: str
    counts: tuple[tuple[str, str], ...]
    """(predicate member, document array member) pairs: the predicate binds each array's length."""

    def subject(self, document: Mapping[str, Json]) -> str:
        version = document.get("version")
        shown = version if isinstance(version, str) else _UNVERSIONED
        return f"{self.subject_prefix}{document.get('id')}@{shown}"

    def predicate(
        self, document: Mapping[str, Json], *, publisher_id: str, signed_at: str, digest: str
    ) -> JsonObject:
        predicate: JsonObject = {
            "acxSchemaVersion": document.get("schemaVersion"),
            self.id_member: document.get("id"),
            self.version_member: document.get("version"),
            "publisherId": publisher_id,
            self.digest_member: digest,
            "signedAt": signed_at,
        }
        for member, array in self.counts:
            items = document.get(array)
            predicate[member] = len(items) if isinstance(items, list) else 0
        return predicate


@dataclass(frozen=True)
class Verification:
    """What a signature check found. ``state`` is None for a document with no signature."""

    state: TrustState | None
    reason: str
    digest: str
    publisher_id: str | None = None
    keyid: str | None = None
    signed_at: str | None = None
    warnings: tuple[str, ...] = ()

    @property
    def verdict(self) -> str:
        """``unsigned``, ``tampered``, ``portable``, ``trusted`` or ``local``."""
        return "unsigned" if self.state is None else self.state.value

    @property
    def tampered(self) -> bool:
        return self.state is TrustState.TAMPERED

    @property
    def signed(self) -> bool:
        return self.state is not None and not self.tampered

    def to_wire(self) -> JsonObject:
        return {
            "verdict": self.verdict,
            "reason": self.reason,
            "digest": self.digest,
            "publisherId": self.publisher_id,
            "keyid": self.keyid,
            "signedAt": self.signed_at,
            "warnings": list(self.warnings),
        }


@dataclass(frozen=True)
class ArtifactCheck:
    """``verify``'s whole answer: the signature verdict and the publishable-profile lint.

    Both must hold for ``ok``: a valid signature over content that is not publishable, and
    publishable content whose signature fails, are each refused, and each fact is reported.
    """

    verification: Verification
    lint: LintReport

    @property
    def ok(self) -> bool:
        return self.verification.signed and self.lint.ok

    def to_wire(self) -> JsonObject:
        return {"ok": self.ok, **self.verification.to_wire(), "lint": self.lint.to_wire()}


def unsigned(document: Mapping[str, Json]) -> JsonObject:
    """The document without its top-level ``integrity`` (and nothing else removed)."""
    return {k: v for k, v in document.items() if k != "integrity"}


def document_digest(document: Mapping[str, Json]) -> str:
    """``sha256:`` + hex SHA-256 of the RFC 8785 bytes of :func:`unsigned` (§14.5 steps 1-3)."""
    return "sha256:" + hashlib.sha256(canonicalize(unsigned(document))).hexdigest()


def sign_document(
    kind: ArtifactKind,
    document: Mapping[str, Json],
    key: PrivateKey,
    *,
    publisher_id: str,
    signed_at: datetime,
) -> JsonObject:
    """``document`` with a fresh ``integrity`` block by ``key`` for ``publisher_id``.

    Any previous ``integrity`` is dropped first. The caller checks publishability.
    """
    if not isinstance(publisher_id, str) or not PUBLISHER_ID.fullmatch(publisher_id):
        raise SignError(f"publisher id {publisher_id!r} is not a reverse-DNS identifier")
    body = unsigned(document)
    digest = document_digest(body)
    when = format_instant(signed_at)
    statement = in_toto_statement(
        [statement_subject(kind.subject(body), digest.removeprefix("sha256:"))],
        kind.predicate_type,
        kind.predicate(body, publisher_id=publisher_id, signed_at=when, digest=digest),
    )
    envelope = sign_envelope(canonicalize(statement), PAYLOAD_TYPE_IN_TOTO, key)
    public = key.public_key()
    integrity: JsonObject = {
        "schemaVersion": kind.signature_version,
        "digest": digest,
        "publisherId": publisher_id,
        "keyid": public.key_id,
        "publicKeyPem": public.to_pem().decode("ascii"),
        "signedAt": when,
        "envelope": envelope,
    }
    return {**body, "integrity": integrity}


Linter = Callable[..., LintReport]
"""``lint(document, publish=..., publisher_id=...)`` of one artifact kind."""


def sign_publishable(
    kind: ArtifactKind,
    lint: Linter,
    document: Mapping[str, Json],
    key: PrivateKey,
    *,
    publisher_id: str,
    signed_at: datetime,
) -> JsonObject:
    """:func:`sign_document` after ``lint --publish`` passes; :class:`SignError` otherwise."""
    report = lint(document, publish=True, publisher_id=publisher_id)
    if not report.ok:
        first = "; ".join(str(i) for i in report.errors[:3])
        more = f" (and {len(report.errors) - 3} more)" if len(report.errors) > 3 else ""
        raise SignError(f"the {kind.label} is not publishable: {first}{more}")
    return sign_document(kind, document, key, publisher_id=publisher_id, signed_at=signed_at)


def check_document(
    kind: ArtifactKind,
    lint: Linter,
    document: Mapping[str, Json],
    *,
    registry: TrustRegistry | None = None,
    now: datetime,
    local_keyids: Collection[str] = (),
) -> ArtifactCheck:
    """``verify``: the signature verdict first, then ``lint --publish`` of what it vouches for."""
    verification = verify_document(
        kind, document, registry=registry, now=now, local_keyids=local_keyids
    )
    return ArtifactCheck(verification, lint(document, publish=True))


class _Tampered(Exception):
    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


def verify_document(
    kind: ArtifactKind,
    document: Mapping[str, Json],
    *,
    registry: TrustRegistry | None = None,
    now: datetime,
    local_keyids: Collection[str] = (),
) -> Verification:
    """The §4.5 verdict of ``document``'s signature, every binding recomputed from live bytes."""
    digest = document_digest(document)
    integrity = document.get("integrity")
    if integrity is None:
        return Verification(None, f"the {kind.label} carries no integrity signature", digest)
    try:
        key, publisher_id, keyid, signed_at = _check(kind, document, integrity, digest)
    except _Tampered as e:
        return Verification(
            TrustState.TAMPERED,
            e.reason,
            digest,
            publisher_id=_text(integrity, "publisherId"),
            keyid=_text(integrity, "keyid"),
            signed_at=_text(integrity, "signedAt"),
        )
    decision = evaluate_signer(
        registry if registry is not None else TrustRegistry.empty(),
        publisher_id=publisher_id,
        keyid=keyid,
        verified_with=key,
        signed_at=parse_instant(signed_at),
        now=now,
        local_keyids=local_keyids,
    )
    return Verification(
        decision.state,
        decision.reason,
        digest,
        publisher_id=publisher_id,
        keyid=keyid,
        signed_at=signed_at,
        warnings=decision.warnings,
    )


def _check(
    kind: ArtifactKind, document: Mapping[str, Json], integrity: Json, digest: str
) -> tuple[PublicKey, str, str, str]:
    """Every §14.5 / §16.8 binding; raises :class:`_Tampered` naming the first that fails."""
    if not isinstance(integrity, dict):
        raise _Tampered("integrity is not a JSON object")
    if _carries_private_key(integrity):
        raise _Tampered("integrity carries private key material")
    if set(integrity) != _INTEGRITY_MEMBERS:
        extra = sorted(set(integrity) - _INTEGRITY_MEMBERS)
        missing = sorted(_INTEGRITY_MEMBERS - set(integrity))
        raise _Tampered(f"integrity members: unexpected {extra}, missing {missing}")
    if integrity["schemaVersion"] != kind.signature_version:
        raise _Tampered(f"integrity.schemaVersion is not {kind.signature_version}")
    publisher_id = _required(integrity, "publisherId", PUBLISHER_ID)
    keyid = _required(integrity, "keyid", _KEYID)
    signed_at = _required(integrity, "signedAt", None)
    try:
        parse_instant(signed_at)
    except InvalidRequest as e:
        raise _Tampered(f"integrity.signedAt is not an RFC 3339 date-time ({signed_at!r})") from e
    if integrity["digest"] != digest:
        raise _Tampered(
            f"digest mismatch: signed {integrity['digest']!r}, computed {digest} from live content"
        )
    pem = integrity["publicKeyPem"]
    try:
        key = PublicKey.from_pem(pem.encode("ascii") if isinstance(pem, str) else b"")
    except (InvalidRequest, UnicodeEncodeError) as e:
        raise _Tampered("integrity.publicKeyPem is not an Ed25519 SPKI public key") from e
    if key.key_id != keyid:
        raise _Tampered(f"integrity.keyid {keyid} is not the id of publicKeyPem ({key.key_id})")
    payload = _verify_envelope(integrity["envelope"], key, keyid)
    _check_statement(kind, document, payload, publisher_id, signed_at, digest)
    return key, publisher_id, keyid, signed_at


def _verify_envelope(envelope: Json, key: PublicKey, keyid: str) -> bytes:
    if not isinstance(envelope, dict) or set(envelope) != _ENVELOPE_MEMBERS:
        raise _Tampered("the DSSE envelope is not exactly {payloadType, payload, signatures}")
    if envelope["payloadType"] != PAYLOAD_TYPE_IN_TOTO:
        raise _Tampered(f"DSSE payloadType is not {PAYLOAD_TYPE_IN_TOTO}")
    signatures = envelope["signatures"]
    if not isinstance(signatures, list) or len(signatures) != 1:
        raise _Tampered("the DSSE envelope must carry exactly one signature")
    entry = signatures[0]
    if not isinstance(entry, dict) or set(entry) != {"keyid", "sig"}:
        raise _Tampered("the DSSE signature is not exactly {keyid, sig}")
    if entry["keyid"] != keyid:
        raise _Tampered("the DSSE signature's keyid is not integrity.keyid")
    payload = _b64decode(envelope["payload"], "payload")
    signature = _b64decode(entry["sig"], "sig")
    try:
        key.verify(signature, pae(PAYLOAD_TYPE_IN_TOTO, payload))
    except SignatureInvalid as e:
        raise _Tampered(f"the DSSE signature does not verify: {e.message}") from e
    return payload


def _check_statement(
    kind: ArtifactKind,
    document: Mapping[str, Json],
    payload: bytes,
    publisher_id: str,
    signed_at: str,
    digest: str,
) -> None:
    try:
        statement = load_in_toto_statement(payload)
    except InvalidRequest as e:
        raise _Tampered(f"the signed payload is not an in-toto Statement: {e.message}") from e
    subjects = statement["subject"]
    if len(subjects) != 1:
        raise _Tampered(f"the Statement must name exactly one subject, not {len(subjects)}")
    subject = subjects[0]
    if subject["name"] != kind.subject(document):
        raise _Tampered(f"Statement subject {subject['name']!r} is not {kind.subject(document)!r}")
    if subject["digest"].get("sha256") != digest.removeprefix("sha256:"):
        raise _Tampered("the Statement subject's sha256 is not the live digest")
    if statement["predicateType"] != kind.predicate_type:
        raise _Tampered(f"predicateType is not {kind.predicate_type}")
    predicate = statement.get("predicate")
    if not isinstance(predicate, dict):
        raise _Tampered("the Statement has no predicate object")
    expected = kind.predicate(
        document, publisher_id=publisher_id, signed_at=signed_at, digest=digest
    )
    for member, value in expected.items():
        # Compared as canonical JSON: Python's True == 1 must not make a count match a flag.
        if member not in predicate or canonicalize(predicate[member]) != canonicalize(value):
            shown = predicate.get(member, "<missing>")
            raise _Tampered(
                f"predicate {member} is {shown!r}; the live {kind.label} says {value!r}"
            )


def _required(integrity: Mapping[str, Json], member: str, pattern: re.Pattern[str] | None) -> str:
    value = integrity[member]
    if not isinstance(value, str) or (pattern is not None and not pattern.fullmatch(value)):
        raise _Tampered(f"integrity.{member} is malformed")
    return value


def _text(integrity: Json, member: str) -> str | None:
    value = integrity.get(member) if isinstance(integrity, dict) else None
    return value if isinstance(value, str) else None


def _b64decode(text: Json, what: str) -> bytes:
    """Standard or URL-safe base64, padded or not (§4.2: verifiers accept either alphabet)."""
    if not isinstance(text, str) or not (
        _STANDARD_B64.fullmatch(text) or _URLSAFE_B64.fullmatch(text)
    ):
        raise _Tampered(f"DSSE {what} is not base64")
    body = text.rstrip("=").replace("-", "+").replace("_", "/")
    try:
        return base64.b64decode(body + "=" * (-len(body) % 4), validate=True)
    except (binascii.Error, ValueError) as e:
        raise _Tampered(f"DSSE {what} is not base64") from e


def _carries_private_key(value: Json) -> bool:
    if isinstance(value, str):
        return "PRIVATE KEY" in value
    if isinstance(value, dict):
        return any(_carries_private_key(v) for v in value.values())
    if isinstance(value, list):
        return any(_carries_private_key(v) for v in value)
    return False


__all__ = [
    "PUBLISHER_ID",
    "ArtifactCheck",
    "ArtifactKind",
    "Linter",
    "SignError",
    "Verification",
    "check_document",
    "document_digest",
    "sign_document",
    "sign_publishable",
    "unsigned",
    "verify_document",
]
