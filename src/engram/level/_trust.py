"""Who may issue levels: the issuer-key check and the self-issuance check (SPEC §10.1, §10.3).

"Verifiers MUST reject a credential whose ``issuer.id`` equals the ``credentialSubject.id``
controller, or whose issuer is not in the ACX trust registry." The trust registry itself
(SPEC §4.4, ``acx.trust-registry/1``) is ``engram.trust``'s; the check itself takes only the set
of published issuer key ids (``ed25519:<hex sha256(DER SPKI)>``, the registry's ``keyid``), and
:func:`registry_issuer_keys` computes that set from a registry (docs/spec/acx-levels.md §7): the
entries that make the issuer's did:web namespace ``trusted`` under the §4.5 rules (active, a
namespace proof covering it, valid when the proof was created, not compromised).
"""

from __future__ import annotations

from collections.abc import Collection
from datetime import datetime

from engram.core.keys import PublicKey
from engram.trust import TrustRegistry, TrustState, evaluate_signer

CARTRIDGE_SUBJECT_PREFIX = "urn:acx:cartridge:"


def issuer_key_published(key: PublicKey, published_keyids: Collection[str]) -> bool:
    """True when the key that signed the credential is a published issuer key."""
    return key.key_id in published_keyids


def registry_issuer_keys(
    registry: TrustRegistry, *, issuer_id: str, signed_at: datetime, now: datetime
) -> frozenset[str]:
    """The key ids of ``registry`` that vouch for levels issued by ``issuer_id``.

    A verifier ``did:web:verifier.example.org`` publishes its keys under the publisher id
    ``org.example.verifier``; an entry counts when :func:`engram.trust.evaluate_signer` finds it
    ``trusted`` (or ``local``) for that namespace at ``signed_at``.
    """
    namespace = did_web_namespace(issuer_id)
    if namespace is None:
        return frozenset()
    trusted = set()
    for entry in registry.keys:
        verdict = evaluate_signer(
            registry,
            publisher_id=namespace,
            keyid=entry.keyid,
            verified_with=entry.public_key,
            signed_at=signed_at,
            now=now,
        )
        if verdict.state in (TrustState.TRUSTED, TrustState.LOCAL):
            trusted.add(entry.keyid)
    return frozenset(trusted)


def did_web_namespace(did: str) -> str | None:
    """``did:web:verifier.acx.dev`` -> ``dev.acx.verifier`` (a reverse-DNS namespace), else None."""
    if not did.startswith("did:web:"):
        return None
    host = did[len("did:web:") :].split(":", 1)[0].split("%3A", 1)[0].lower()
    return ".".join(reversed(host.split("."))) if host else None


def subject_publisher(subject_id: str) -> str | None:
    """The publisher of an ``urn:acx:cartridge:<publisher>/<id>@<uuid>`` subject, else None."""
    if not subject_id.startswith(CARTRIDGE_SUBJECT_PREFIX):
        return None
    publisher = subject_id[len(CARTRIDGE_SUBJECT_PREFIX) :].split("/", 1)[0]
    return publisher or None


def self_issued(
    *,
    issuer_id: str,
    subject_id: str,
    issuer_key: PublicKey | None = None,
    publisher_id: str | None = None,
    publisher_keyids: Collection[str] = (),
) -> list[str]:
    """Why the issuer is the subject's own controller (empty when it is independent).

    The controller of a cartridge subject is its publisher: the issuer is the controller when
    its id is the subject's, when its did:web namespace is the publisher's namespace or inside
    it (``did:web:x.alice.github.io`` for ``io.github.alice``), or when its key is one of the
    publisher's keys.
    """
    reasons = []
    if issuer_id == subject_id:
        reasons.append("self-issuance rejected (issuer == subject)")
    publisher = publisher_id or subject_publisher(subject_id)
    namespace = did_web_namespace(issuer_id)
    if (
        publisher
        and namespace
        and (namespace == publisher or namespace.startswith(publisher + "."))
    ):
        reasons.append(
            f"self-issuance rejected (issuer {issuer_id} is in publisher {publisher}'s namespace)"
        )
    if issuer_key is not None and issuer_key.key_id in set(publisher_keyids):
        reasons.append("self-issuance rejected (the issuer key is the publisher's key)")
    return reasons


__all__ = [
    "CARTRIDGE_SUBJECT_PREFIX",
    "did_web_namespace",
    "issuer_key_published",
    "registry_issuer_keys",
    "self_issued",
    "subject_publisher",
]
