"""W3C Data Integrity ``eddsa-jcs-2022``: RFC 8785 + SHA-256 + Ed25519 + base58-btc.

Spec: W3C Data Integrity EdDSA Cryptosuites v1.0, §3.3 "eddsa-jcs-2022" (create proof,
verify proof, transformation, hashing, proof serialization), checked byte for byte against the
W3C test vectors (tests/vectors/w3c-eddsa-jcs-2022/):

- proof configuration = the proof options (``type``, ``cryptosuite``, ``created``,
  ``verificationMethod``, ``proofPurpose``) plus, on creation, the document's ``@context``;
- hashData = SHA-256(JCS(proof configuration)) ‖ SHA-256(JCS(document without ``proof``));
- ``proofValue`` = ``z`` + base58-btc(Ed25519(hashData)).

Verifying: the proof options are the proof minus ``proofValue``; if they carry ``@context`` the
document's ``@context`` must start with it, item for item. A proof without ``@context`` (as the
ACX reference writes them) verifies too. JCS comes only from :mod:`engram.core.canonical`.
"""

from __future__ import annotations

import copy
import hashlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from engram.core.canonical import Json, JsonObject, canonicalize
from engram.core.keys import PrivateKey, PublicKey
from engram.errors import CanonicalJsonError, EngramError
from engram.level._errors import ProofInvalid
from engram.level._multikey import base58btc_decode, base58btc_encode, public_from_multikey

CRYPTOSUITE = "eddsa-jcs-2022"
PROOF_TYPE = "DataIntegrityProof"

KeyResolver = Callable[[str], PublicKey]
"""verificationMethod URL -> its Ed25519 key; raises when it cannot resolve (did:web needs a
fetch, which is the caller's: this package does no I/O)."""


@dataclass(frozen=True)
class VerifiedProof:
    verification_method: str
    proof_purpose: str
    created: str | None
    key: PublicKey


def hash_data(document: Mapping[str, Json], proof_config: Mapping[str, Json]) -> bytes:
    """SHA-256(JCS(proof config)) ‖ SHA-256(JCS(document)): what the Ed25519 key signs."""
    unsecured = {k: v for k, v in document.items() if k != "proof"}
    return (
        hashlib.sha256(canonicalize(dict(proof_config))).digest()
        + hashlib.sha256(canonicalize(unsecured)).digest()
    )


def add_proof(
    document: Mapping[str, Json],
    key: PrivateKey,
    *,
    verification_method: str,
    created: str,
    proof_purpose: str = "assertionMethod",
    with_context: bool = True,
) -> JsonObject:
    """``document`` with an ``eddsa-jcs-2022`` DataIntegrityProof (a new dict).

    ``with_context`` copies the document's ``@context`` into the proof, as the suite's
    create-proof algorithm does; the W3C vectors carry it.
    """
    if "proof" in document:
        raise ProofInvalid("the document already carries a proof")
    config: JsonObject = {
        "type": PROOF_TYPE,
        "cryptosuite": CRYPTOSUITE,
        "created": created,
        "verificationMethod": verification_method,
        "proofPurpose": proof_purpose,
    }
    if with_context and "@context" in document:
        config["@context"] = copy.deepcopy(document["@context"])
    signature = key.sign(hash_data(document, config))
    secured = copy.deepcopy(dict(document))
    secured["proof"] = {**config, "proofValue": base58btc_encode(signature)}
    return secured


def verify_proof(document: Mapping[str, Json], resolve: KeyResolver) -> VerifiedProof:
    """Verify the document's one ``eddsa-jcs-2022`` proof; :class:`ProofInvalid` says why not."""
    proof = document.get("proof")
    if isinstance(proof, list):
        if len(proof) != 1:
            raise ProofInvalid(f"{len(proof)} proofs: engram verifies a document with one proof")
        proof = proof[0]
    if not isinstance(proof, Mapping):
        raise ProofInvalid("no proof object")
    if proof.get("type") != PROOF_TYPE:
        raise ProofInvalid(f"proof type {proof.get('type')!r} is not {PROOF_TYPE}")
    if proof.get("cryptosuite") != CRYPTOSUITE:
        raise ProofInvalid(f"cryptosuite {proof.get('cryptosuite')!r} is not {CRYPTOSUITE}")
    method = proof.get("verificationMethod")
    purpose = proof.get("proofPurpose")
    value = proof.get("proofValue")
    if not isinstance(method, str) or not isinstance(purpose, str) or not isinstance(value, str):
        raise ProofInvalid("verificationMethod, proofPurpose and proofValue are strings")
    options = {k: v for k, v in proof.items() if k != "proofValue"}
    unsecured = {k: v for k, v in document.items() if k != "proof"}
    if "@context" in options:
        ctx, doc_ctx = _as_list(options["@context"]), _as_list(unsecured.get("@context"))
        if doc_ctx[: len(ctx)] != ctx:
            raise ProofInvalid("the document's @context does not start with the proof's @context")
    try:
        signature = base58btc_decode(value)
        key = resolve(method)
        data = hash_data(unsecured, options)
    except CanonicalJsonError as e:
        raise ProofInvalid(f"not canonicalisable: {e.message}") from e
    except EngramError as e:
        raise ProofInvalid(e.message) from e
    try:
        key.verify(signature, data)
    except EngramError as e:
        raise ProofInvalid(f"the signature does not verify: {e.message}") from e
    created = proof.get("created")
    return VerifiedProof(method, purpose, created if isinstance(created, str) else None, key)


def _as_list(value: Json) -> list[Json]:
    return list(value) if isinstance(value, list) else [value]


def did_key_resolver(method: str) -> PublicKey:
    """Resolve a ``did:key:z6Mk...#z6Mk...`` method (the key is in the identifier itself)."""
    if not method.startswith("did:key:"):
        raise ProofInvalid(f"{method!r} is not a did:key method")
    identifier, _, fragment = method[len("did:key:") :].partition("#")
    if fragment and fragment != identifier:
        raise ProofInvalid("a did:key fragment names the key of the identifier")
    return public_from_multikey(identifier)


def static_resolver(keys: Mapping[str, PublicKey]) -> KeyResolver:
    """A resolver over known verification methods (e.g. a did:web document read elsewhere)."""

    def resolve(method: str) -> PublicKey:
        if method in keys:
            return keys[method]
        if method.startswith("did:key:"):
            return did_key_resolver(method)
        raise ProofInvalid(f"verification method {method!r} is not known to this verifier")

    return resolve


def did_document_resolver(document: Mapping[str, Json]) -> KeyResolver:
    """A resolver over the Multikey verification methods of one DID document (e.g. did:web).

    Relative ids (``#key-1``) are taken against the document's ``id``; a method whose
    ``controller`` is not the document's subject is ignored.
    """
    subject = document.get("id")
    keys: dict[str, PublicKey] = {}
    methods = document.get("verificationMethod")
    for method in methods if isinstance(methods, list) else []:
        if not isinstance(method, Mapping) or not isinstance(subject, str):
            continue
        ident = method.get("id")
        if isinstance(ident, str) and ident.startswith("#"):
            ident = subject + ident
        if method.get("controller", subject) != subject or not isinstance(ident, str):
            continue
        if method.get("type") in ("Multikey", "Ed25519VerificationKey2020"):
            multibase = method.get("publicKeyMultibase", "")
            if not isinstance(multibase, str):
                continue
            try:
                keys[ident] = public_from_multikey(multibase)
            except EngramError:
                continue
    return static_resolver(keys)


__all__ = [
    "CRYPTOSUITE",
    "PROOF_TYPE",
    "KeyResolver",
    "VerifiedProof",
    "add_proof",
    "did_document_resolver",
    "did_key_resolver",
    "hash_data",
    "static_resolver",
    "verify_proof",
]
