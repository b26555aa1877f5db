"""Attested outcomes: OpenSSH signatures (``ssh-keygen -Y sign``) checked against the seat's
``[attestation].allowed_signers`` trust anchor.

Spec: engram.ote.v1 & MCP contract (Part V, Plate 03, §3.1) ``[attestation]`` and §3.2
engram_outcome ("sealed_* / human_* ... are recorded only by engram outcome --attestation
<ssh-signature> against the trust anchor"). The signature is made over :func:`attestation_message`
in the namespace :data:`NAMESPACE`. ``sshsig`` checks the SSHSIG cryptography; its allowed_signers
reader only understands git's subset, so the file format (principals, ``namespaces=``,
``valid-after=``/``valid-before=``, ``cert-authority`` refused) is parsed here to match
``ssh-keygen -Y verify``. Decisions: ``docs/spec/memory-attestation.md``.
"""

from __future__ import annotations

import fnmatch
import hashlib
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from engram.core.canonical import canonicalize
from engram.errors import ManifestError, SignatureInvalid

NAMESPACE = "engram-outcome@v1"
ATTESTATION_NAMESPACE = NAMESPACE  # the name engram.memory exports it under


@dataclass(frozen=True)
class Signer:
    principals: tuple[str, ...]  # patterns, as ssh-keygen matches them
    namespaces: tuple[str, ...] | None  # None: any namespace
    valid_after: datetime | None
    valid_before: datetime | None
    key: str  # "ssh-ed25519 AAAA..."
    fingerprint: str  # "SHA256:..."


@dataclass(frozen=True)
class Anchor:
    """A loaded trust anchor: the file, its sha256 and its signers."""

    path: Path
    sha256: str
    signers: tuple[Signer, ...]

    @property
    def fingerprints(self) -> list[str]:
        return sorted({s.fingerprint for s in self.signers})


@dataclass(frozen=True)
class Attestor:
    principal: str
    fingerprint: str


def attestation_message(memory_id: str, decision_id: str, signal: str, weight: float) -> bytes:
    """The bytes an attestor signs: RFC 8785 JSON binding memory, decision, signal and weight."""
    return canonicalize(
        {
            "decision_id": decision_id,
            "memory_id": memory_id,
            "namespace": NAMESPACE,
            "signal": signal,
            "weight": weight,
        }
    )


def _instant(path: Path, line_no: int, text: str) -> datetime:
    raw = text.rstrip("Zz")
    formats = {8: "%Y%m%d", 12: "%Y%m%d%H%M", 14: "%Y%m%d%H%M%S"}
    fmt = formats.get(len(raw))
    try:
        if fmt is None or not raw.isdigit():
            raise ValueError(text)
        # ssh-keygen reads a time without Z as local time; engram reads every time as UTC.
        return datetime.strptime(raw, fmt).replace(tzinfo=UTC)
    except ValueError as e:
        raise ManifestError(
            f"{path}:{line_no}: expected a time YYYYMMDD[HHMM[SS]][Z], got {text!r}"
        ) from e


def _signer(path: Path, line_no: int, line: str) -> Signer | None:
    # sshsig (and the cryptography under it) only when an anchor is read: a recall never needs
    # it, and its import is a measurable share of a cold `engram recall` (issue 16).
    import sshsig
    from sshsig.allowed_signers import AllowedSigner as _RawSigner

    try:
        raw = _RawSigner.parse(line)
        key = sshsig.PublicKey.from_openssh_str(f"{raw.key_type} {raw.base64_key}")
    except (ValueError, NotImplementedError) as e:
        raise ManifestError(f"{path}:{line_no}: not an allowed_signers line ({e})") from e
    options = {k.lower(): v for k, v in (raw.options or {}).items()}
    if "cert-authority" in options:
        return None  # certificates are not accepted as attestors: the line grants nothing
    namespaces = options.get("namespaces")
    return Signer(
        principals=tuple(p for p in raw.principals.split(",") if p),
        namespaces=None if namespaces is None else tuple(namespaces.split(",")),
        valid_after=_instant(path, line_no, options["valid-after"])
        if "valid-after" in options
        else None,
        valid_before=_instant(path, line_no, options["valid-before"])
        if "valid-before" in options
        else None,
        key=key.openssh_str(),
        fingerprint=key.sha256_str(),
    )


def load_anchor(path: Path) -> Anchor:
    """Read an OpenSSH allowed_signers file; a malformed line is an error naming file and line."""
    try:
        data = path.read_bytes()
    except OSError as e:
        raise ManifestError(f"{path}: cannot read the attestation anchor: {e.strerror or e}") from e
    signers: list[Signer] = []
    for number, line in enumerate(data.decode("utf-8", "replace").splitlines(), start=1):
        stripped = line.strip()
        if not stripped or stripped.startswith("#"):
            continue
        signer = _signer(path, number, stripped)
        if signer is not None:
            signers.append(signer)
    return Anchor(path, hashlib.sha256(data).hexdigest(), tuple(signers))


def _matches(patterns: tuple[str, ...], name: str) -> bool:
    """ssh's pattern-list: any positive match and no negated (!pattern) match."""
    positive = False
    for pattern in patterns:
        if pattern.startswith("!"):
            if fnmatch.fnmatchcase(name, pattern[1:]):
                return False
        elif fnmatch.fnmatchcase(name, pattern):
            positive = True
    return positive


def verify_attestation(
    anchor: Anchor, message: bytes, signature: str, now: datetime, principal: str | None = None
) -> Attestor:
    """Verify an armored SSHSIG over ``message`` in :data:`NAMESPACE`; raise SignatureInvalid.

    The signing key must be on a line of the anchor whose namespaces allow ours, whose validity
    covers ``now`` and, when ``principal`` is given, whose principals match it.
    """
    import sshsig

    try:
        key = sshsig.check_signature(message, signature, namespace=NAMESPACE)
    except (
        sshsig.InvalidSignature,
        ValueError,
        NotImplementedError,
        IndexError,
        # sshsig checks the signature blob's algorithm name with ``assert``: a tampered name
        # would otherwise escape as a crash instead of a refusal.
        AssertionError,
    ) as e:
        reason = str(e) or (
            "malformed signature"
            if isinstance(e, AssertionError)
            else "the signature does not match the message"
        )
        raise SignatureInvalid(f"attestation does not verify: {reason}") from e
    presented = key.openssh_str()
    for s in anchor.signers:
        if s.key != presented:
            continue
        if s.namespaces is not None and not _matches(s.namespaces, NAMESPACE):
            continue
        if (s.valid_after and now < s.valid_after) or (s.valid_before and now >= s.valid_before):
            continue
        if principal is not None and not _matches(s.principals, principal):
            continue
        return Attestor(principal or ",".join(s.principals), s.fingerprint)
    raise SignatureInvalid(
        f"attestation key {key.sha256_str()} is not an allowed signer for "
        f"namespace {NAMESPACE!r} in {anchor.path}"
    )


__all__ = [
    "ATTESTATION_NAMESPACE",
    "NAMESPACE",
    "Anchor",
    "Attestor",
    "Signer",
    "attestation_message",
    "load_anchor",
    "verify_attestation",
]
