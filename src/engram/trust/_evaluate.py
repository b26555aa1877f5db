"""The ACX trust taxonomy, and the registry half of a trust decision.

Spec: lboel/acx@85f1358 SPEC.md §4.4 (rotation, expiry, revocation) and §4.5 (the taxonomy and
its evaluation order); decisions in docs/spec/acx-trust.md.

Every signed ACX artifact (cartridge, workflow, Agent Graph, and the credentials and registry
entries that point at them) is judged in the §4.5 order:

1. ``tampered`` - the signature does not verify over the recomputed digest, or the digest the
   signature covers is not the one recomputed from live bytes. Reject.
2. ``legacy``   - no signature envelope at all.
3. ``portable`` - the signature verifies, but the registry does not make its key trusted now.
4. ``trusted``  - the signature verifies under a registry key that is listed for the artifact's
   publisher, whose namespace proof covers that publisher, and which is neither expired nor
   revoked (nor signed outside its validity).
5. ``local``    - as ``trusted``, and the key is one of the verifying host's own.

Steps 1 and 2 need the artifact's own bytes and are decided by the artifact's verifier; this
module decides steps 3-5 with :func:`evaluate_signer`, given the key that actually verified the
signature. The ``keyid`` an envelope carries is a lookup hint only: a registry entry counts only
when its public key is the very key the signature verified under.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum

from engram.core.keys import PublicKey
from engram.trust._registry import KeyStatus, TrustedKey, TrustRegistry


class TrustState(StrEnum):
    TAMPERED = "tampered"
    LEGACY = "legacy"
    PORTABLE = "portable"
    TRUSTED = "trusted"
    LOCAL = "local"


TRUST_ORDER: tuple[TrustState, ...] = tuple(TrustState)
"""The §4.5 evaluation order: the first state whose condition holds is the verdict."""


@dataclass(frozen=True)
class SignerTrust:
    """What the registry says about a signature that verified.

    ``state`` is ``portable``, ``trusted`` or ``local``; ``reason`` is one sentence a person can
    act on; ``warnings`` are facts that did not change the state (a key since rotated or revoked
    for a reason other than compromise); ``entry`` is the registry entry that was consulted.
    """

    state: TrustState
    reason: str
    warnings: tuple[str, ...] = ()
    entry: TrustedKey | None = None


def evaluate_signer(
    registry: TrustRegistry,
    *,
    publisher_id: str,
    keyid: str,
    verified_with: PublicKey,
    signed_at: datetime,
    now: datetime,
    local_keyids: Collection[str] = (),
) -> SignerTrust:
    """Steps 3-5 of §4.5 for a signature by ``verified_with`` over an intact artifact.

    ``publisher_id`` and ``signed_at`` come from the signed statement (never from unsigned
    metadata); ``now`` is the verifier's clock. Each condition that keeps a key from granting
    trust yields ``portable`` with that condition as the reason.
    """
    entry = registry.key(keyid)
    if entry is None or entry.public_key != verified_with:
        entry = next((k for k in registry.keys if k.public_key == verified_with), None)
    if entry is None:
        return SignerTrust(
            TrustState.PORTABLE,
            f"the signature holds, but key {verified_with.key_id} is not in the trust registry",
        )
    refusal = _refusal(entry, publisher_id=publisher_id, signed_at=signed_at, now=now)
    if refusal is not None:
        return SignerTrust(TrustState.PORTABLE, refusal, entry=entry)
    warnings = _warnings(entry)
    if entry.keyid in local_keyids:
        return SignerTrust(
            TrustState.LOCAL,
            f"signed by this host's own key {entry.keyid}, listed for {entry.publisher_id}",
            warnings,
            entry,
        )
    return SignerTrust(
        TrustState.TRUSTED,
        f"signed by {entry.keyid}, listed for {entry.publisher_id} in the trust registry",
        warnings,
        entry,
    )


def _refusal(
    entry: TrustedKey, *, publisher_id: str, signed_at: datetime, now: datetime
) -> str | None:
    """Why ``entry`` does not make the signature trusted now, or None if it does."""
    if not entry.lists(publisher_id):
        return (
            f"key {entry.keyid} is listed for {entry.publisher_id}, not for the artifact's "
            f"publisher {publisher_id}"
        )
    proof = entry.namespace_proof
    if not proof.covers(publisher_id):
        method = proof.method.value
        return f"the {method} namespace proof of {entry.keyid} does not cover {publisher_id}"
    if proof.verified_at > now:
        return f"the namespace proof of {entry.keyid} is dated in the future"
    revoked = entry.status is KeyStatus.REVOKED or entry.revoked_at is not None
    if revoked:
        if entry.revocation_reason == "key-compromise":
            return f"key {entry.keyid} is revoked for key compromise"
        if entry.revoked_at is None or signed_at >= entry.revoked_at:
            return f"key {entry.keyid} was revoked before this artifact was signed"
    if entry.status is KeyStatus.EXPIRED or now > entry.not_after:
        return f"key {entry.keyid} expired (notAfter {entry.not_after.isoformat()})"
    if now < entry.not_before:
        return f"key {entry.keyid} is not valid yet (notBefore {entry.not_before.isoformat()})"
    if not entry.not_before <= signed_at <= entry.not_after:
        return f"the artifact was signed outside the validity of key {entry.keyid}"
    if signed_at > now:
        return "the artifact's signedAt lies in the future"
    return None


def _warnings(entry: TrustedKey) -> tuple[str, ...]:
    out: list[str] = []
    if entry.status is KeyStatus.REVOKED or entry.revoked_at is not None:
        out.append(
            f"key {entry.keyid} has since been revoked ({entry.revocation_reason or 'no reason'});"
            " the artifact was signed before that"
        )
    if entry.rotated_to is not None:
        out.append(f"key {entry.keyid} has been rotated to {entry.rotated_to}")
    return tuple(out)


__all__ = ["TRUST_ORDER", "SignerTrust", "TrustState", "evaluate_signer"]
