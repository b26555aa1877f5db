"""W3C Bitstring Status List v1.0: revocation as one bit in a signed, GZIP-compressed list.

Spec: W3C Bitstring Status List v1.0 (§2 data model, §3.1 generation, §3.2 validation, §3.3
bitstring generation/expansion, §3.6 processing errors); SPEC §10.1/§10.3 (lboel/acx@85f1358):
``credentialStatus`` is a ``BitstringStatusListEntry`` with ``statusPurpose: revocation``, and on
discovered contamination the verifier flips the bit.

- the list has at least 131,072 entries (16 KiB uncompressed, the spec's herd-privacy minimum);
- bit *i* is the most significant bit of byte *i // 8* counted from the left (index 0 = the
  left-most bit of byte 0);
- ``encodedList`` = ``u`` + base64url without padding of the GZIP bytes (``mtime`` 0, so one
  list has one encoding);
- revocation cannot be undone: :meth:`StatusList.set` refuses to clear a revocation bit;
- a status list credential is signed with the same ``eddsa-jcs-2022`` proof as the level.

Validation fails closed with :class:`StatusCheckError` carrying the spec's error code: the list
cannot be fetched or parsed (``STATUS_RETRIEVAL_ERROR``), its proof or type or purpose or
validity does not hold (``STATUS_VERIFICATION_ERROR``), it is shorter than the minimum
(``STATUS_LIST_LENGTH_ERROR``), or the index is outside it (``RANGE_ERROR``). Fetching is the
caller's (``fetch``): a file path or an HTTP URL are both just bytes here.
"""

from __future__ import annotations

import base64
import binascii
import gzip
import io
import zlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime

from engram.core.canonical import Json, JsonObject, parse_strict
from engram.core.clock import parse_instant
from engram.core.keys import PrivateKey
from engram.errors import CanonicalJsonError, EngramError, InvalidRequest
from engram.level._defaults import MIN_ENTRIES
from engram.level._errors import ProofInvalid, StatusCheckError
from engram.level._proof import KeyResolver, add_proof, verify_proof

MAX_LIST_BYTES = 1 << 24
"""16 MiB: 128 Mi entries. Bounds what a hostile list can make us inflate (a GZIP bomb)."""
MAX_CREDENTIAL_BYTES = 1 << 24
VC_V2 = "https://www.w3.org/ns/credentials/v2"
PURPOSES = frozenset({"revocation", "suspension", "refresh", "message"})

Fetch = Callable[[str], bytes]
"""statusListCredential URL -> the credential's bytes; raises on any failure to retrieve."""


class StatusList:
    """A bitstring of ``length`` one-bit entries (``statusSize`` 1)."""

    __slots__ = ("_bits", "length")

    def __init__(self, length: int = MIN_ENTRIES, bits: bytes | None = None) -> None:
        if length < MIN_ENTRIES or length % 8:
            raise InvalidRequest(
                f"a status list has a multiple of 8 entries, at least {MIN_ENTRIES}"
            )
        self.length = length
        self._bits = bytearray(length // 8) if bits is None else bytearray(bits)
        if len(self._bits) * 8 != length:
            raise InvalidRequest("the bitstring does not have `length` bits")

    def get(self, index: int) -> bool:
        self._check(index)
        return bool(self._bits[index // 8] & (0x80 >> (index % 8)))

    def set(self, index: int, value: bool = True, *, purpose: str = "revocation") -> None:
        """Set entry ``index``. Clearing a revocation bit is refused: revocation is final."""
        self._check(index)
        if not value and purpose == "revocation" and self.get(index):
            raise InvalidRequest(f"entry {index} is revoked: revocation cannot be undone")
        if value:
            self._bits[index // 8] |= 0x80 >> (index % 8)
        else:
            self._bits[index // 8] &= ~(0x80 >> (index % 8)) & 0xFF

    def _check(self, index: int) -> None:
        if isinstance(index, bool) or not isinstance(index, int) or not 0 <= index < self.length:
            raise InvalidRequest(f"index {index} is outside the list (0..{self.length - 1})")

    def encode(self) -> str:
        buffer = io.BytesIO()
        with gzip.GzipFile(fileobj=buffer, mode="wb", mtime=0) as out:
            out.write(bytes(self._bits))
        return "u" + base64.urlsafe_b64encode(buffer.getvalue()).rstrip(b"=").decode("ascii")

    @classmethod
    def decode(cls, encoded: object) -> StatusList:
        """Expand an ``encodedList`` (multibase base64url of GZIP bytes), bounded in size."""
        if not isinstance(encoded, str) or not encoded.startswith("u"):
            raise InvalidRequest("encodedList is multibase base64url (a 'u' prefix)")
        body = encoded[1:]
        try:
            compressed = base64.urlsafe_b64decode(body + "=" * (-len(body) % 4))
        except (binascii.Error, ValueError) as e:
            raise InvalidRequest("encodedList is not base64url") from e
        inflater = zlib.decompressobj(wbits=16 + zlib.MAX_WBITS)  # GZIP framing only
        try:
            bits = inflater.decompress(compressed, MAX_LIST_BYTES + 1)
        except zlib.error as e:
            raise InvalidRequest(f"encodedList is not GZIP: {e}") from e
        if len(bits) > MAX_LIST_BYTES or inflater.unconsumed_tail:
            raise InvalidRequest(f"encodedList expands beyond {MAX_LIST_BYTES} bytes")
        if not inflater.eof:
            raise InvalidRequest("encodedList is a truncated GZIP stream")
        return cls.__new__(cls)._load(bits)

    def _load(self, bits: bytes) -> StatusList:
        self._bits = bytearray(bits)
        self.length = len(bits) * 8
        return self


def status_list_credential(
    *,
    list_id: str,
    issuer: str,
    valid_from: str,
    status_list: StatusList | None = None,
    purpose: str = "revocation",
    valid_until: str | None = None,
) -> JsonObject:
    """An unsigned ``BitstringStatusListCredential`` (§2.2) whose subject is ``list_id#list``."""
    if purpose not in PURPOSES:
        raise InvalidRequest(f"statusPurpose {purpose!r} is not one of {sorted(PURPOSES)}")
    bits = status_list or StatusList()
    credential: JsonObject = {
        "@context": [VC_V2],
        "id": list_id,
        "type": ["VerifiableCredential", "BitstringStatusListCredential"],
        "issuer": issuer,
        "validFrom": valid_from,
        "credentialSubject": {
            "id": f"{list_id}#list",
            "type": "BitstringStatusList",
            "statusPurpose": purpose,
            "encodedList": bits.encode(),
        },
    }
    if valid_until is not None:
        credential["validUntil"] = valid_until
    return credential


def set_entry(
    list_credential: Mapping[str, Json],
    index: int,
    key: PrivateKey,
    *,
    verification_method: str,
    created: str,
) -> JsonObject:
    """The list credential with entry ``index`` set, re-signed (``revoke`` flips the bit)."""
    unsigned = {k: v for k, v in list_credential.items() if k != "proof"}
    listed = unsigned["credentialSubject"]
    if not isinstance(listed, dict):
        raise InvalidRequest("the status list credential has no credentialSubject object")
    subject = dict(listed)
    encoded, purpose = subject["encodedList"], subject["statusPurpose"]
    if not isinstance(encoded, str) or not isinstance(purpose, str):
        raise InvalidRequest("the status list's encodedList and statusPurpose are strings")
    bits = StatusList.decode(encoded)
    bits.set(index, True, purpose=purpose)
    subject["encodedList"] = bits.encode()
    unsigned["credentialSubject"] = subject
    return add_proof(unsigned, key, verification_method=verification_method, created=created)


@dataclass(frozen=True)
class StatusResult:
    """A concluded check: ``status`` True means the bit is set (for revocation: revoked)."""

    purpose: str
    index: int
    status: bool
    list_url: str


def check_status(
    entry: Mapping[str, Json],
    fetch: Fetch,
    resolve: KeyResolver,
    *,
    now: datetime,
    expected_issuer: str | None = None,
) -> StatusResult:
    """Run the §3.2 validation for one ``BitstringStatusListEntry``; fail closed."""
    if entry.get("type") != "BitstringStatusListEntry":
        raise StatusCheckError(
            "STATUS_VERIFICATION_ERROR", "the entry is not a BitstringStatusListEntry"
        )
    purpose = entry.get("statusPurpose")
    index_text = entry.get("statusListIndex")
    url = entry.get("statusListCredential")
    if not isinstance(url, str) or not url:
        raise StatusCheckError("STATUS_RETRIEVAL_ERROR", "statusListCredential is not a URL")
    if not isinstance(index_text, str) or not index_text.isdigit() or not index_text.isascii():
        raise StatusCheckError(
            "RANGE_ERROR", f"statusListIndex {index_text!r} is not a decimal string"
        )
    size = entry.get("statusSize", 1)
    if size != 1:
        raise StatusCheckError(
            "STATUS_VERIFICATION_ERROR", f"statusSize {size!r}: engram reads 1-bit lists"
        )
    try:
        raw = fetch(url)
    except (EngramError, OSError) as e:
        raise StatusCheckError("STATUS_RETRIEVAL_ERROR", f"{url}: {e}") from e
    if len(raw) > MAX_CREDENTIAL_BYTES:
        raise StatusCheckError(
            "STATUS_RETRIEVAL_ERROR", f"{url}: more than {MAX_CREDENTIAL_BYTES} bytes"
        )
    try:
        credential = parse_strict(raw)
    except CanonicalJsonError as e:
        raise StatusCheckError("STATUS_RETRIEVAL_ERROR", f"{url}: not I-JSON: {e.message}") from e
    if not isinstance(credential, dict):
        raise StatusCheckError("STATUS_RETRIEVAL_ERROR", f"{url}: not a JSON object")
    subject = _verify_list_credential(credential, url, resolve, now, expected_issuer)
    listed = subject.get("statusPurpose")
    purposes = listed if isinstance(listed, list) else [listed]
    if purpose not in purposes:
        raise StatusCheckError(
            "STATUS_VERIFICATION_ERROR",
            f"the entry's purpose {purpose!r} is not the list's {listed!r}",
        )
    try:
        bits = StatusList.decode(subject.get("encodedList"))
    except InvalidRequest as e:
        raise StatusCheckError("STATUS_VERIFICATION_ERROR", f"encodedList: {e.message}") from e
    if bits.length < MIN_ENTRIES:
        raise StatusCheckError(
            "STATUS_LIST_LENGTH_ERROR", f"{bits.length} entries < the minimum {MIN_ENTRIES}"
        )
    index = int(index_text)
    if index >= bits.length:
        raise StatusCheckError("RANGE_ERROR", f"index {index} is outside the list of {bits.length}")
    return StatusResult(str(purpose), index, bits.get(index), url)


def _verify_list_credential(
    credential: JsonObject,
    url: str,
    resolve: KeyResolver,
    now: datetime,
    expected_issuer: str | None,
) -> JsonObject:
    """Check the list credential; return its ``credentialSubject`` (a BitstringStatusList)."""

    def fail(detail: str) -> StatusCheckError:
        return StatusCheckError("STATUS_VERIFICATION_ERROR", f"{url}: {detail}")

    types = credential.get("type")
    if not isinstance(types, list) or "BitstringStatusListCredential" not in types:
        raise fail("the list's type does not include BitstringStatusListCredential")
    subject = credential.get("credentialSubject")
    if not isinstance(subject, dict) or subject.get("type") != "BitstringStatusList":
        raise fail("the list's credentialSubject is not a BitstringStatusList")
    if credential.get("id") not in (None, url):
        raise fail(f"the list credential's id {credential.get('id')!r} is not the URL it came from")
    try:
        proof = verify_proof(credential, resolve)
    except ProofInvalid as e:
        raise fail(f"proof: {e.message}") from e
    issuer = credential.get("issuer")
    issuer_id = issuer.get("id") if isinstance(issuer, dict) else issuer
    if expected_issuer is not None and issuer_id != expected_issuer:
        raise fail(f"the list is issued by {issuer_id!r}, not by the credential's issuer")
    if not isinstance(issuer_id, str) or not proof.verification_method.startswith(issuer_id + "#"):
        raise fail("the list's proof is not by a key of its issuer")
    for name, later in (("validFrom", False), ("validUntil", True)):
        value = credential.get(name)
        if value is None:
            continue
        try:
            if not isinstance(value, str):
                raise InvalidRequest("not an RFC 3339 date-time string")
            moment = parse_instant(value)
        except InvalidRequest as e:
            raise fail(f"{name}: {e.message}") from e
        if (later and now > moment) or (not later and now < moment):
            raise fail(f"the list is not valid now ({name} {value})")
    return subject


__all__ = [
    "MIN_ENTRIES",
    "Fetch",
    "StatusList",
    "StatusResult",
    "check_status",
    "set_entry",
    "status_list_credential",
]
