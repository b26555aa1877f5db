"""One exception tree for all of engram, split by who is at fault.

::

    EngramError                      code="server_error"  (never raised bare)
    ├── InputError                   the caller sent something we refuse      -> 4xx
    │   ├── CanonicalJsonError       not I-JSON / not canonicalisable         invalid_request
    │   ├── InvalidRequest           malformed request body or parameter      invalid_request
    │   ├── InvalidScope             unknown or malformed scope               invalid_scope
    │   ├── UnsupportedVersion       engram_version not supported             unsupported_version
    │   ├── ManifestError            a seat manifest (TOML) is invalid        invalid_manifest
    │   └── CartridgeFormatError     a file is not a well-formed .acx         invalid_cartridge
    ├── AuthError                    who is asking                            -> 401/403
    │   ├── Unauthorized             token missing or invalid                 unauthorized
    │   │   └── MissingCredentials   no bearer token was presented at all     unauthorized
    │   ├── TokenExpired             token has expired                        token_expired
    │   └── Forbidden                valid token, insufficient permission     forbidden
    ├── NotFound                                                              -> 404
    │   ├── UserNotFound             no record for this subject               user_not_found
    │   ├── BeliefNotFound           belief id does not exist                 belief_not_found
    │   └── ResourceNotFound         any other missing thing                  not_found
    ├── ConflictError                state forbids the operation              -> 409 conflict
    │   └── IdempotencyConflict      same Idempotency-Key, other body         idempotency_conflict
    ├── VerificationError            a signature, digest or expiry check failed
    │   ├── SignatureInvalid         bytes do not verify under the key        signature_invalid
    │   ├── UnknownKeyId             kid not published                        unknown_kid
    │   ├── ExportExpired            expires_at in the past                   export_expired
    │   ├── ExpiryTooLong            expires_at > issued_at + 24 h            expiry_too_long
    │   ├── MalformedExport          a signed document is not well-formed     malformed_export
    │   ├── KeyExpired               the key expired before the document      key_expired
    │   ├── KeyNotPinned             a key list or kid the runtime did not pin key_not_pinned
    │   ├── ScopeMismatch            not the scope asked for (or leaks one)   scope_mismatch
    │   ├── SubjectMismatch          a document for another subject           subject_mismatch
    │   ├── RollbackRefused          older than a document already accepted   rollback_refused
    │   └── DigestMismatch           a content hash does not match            digest_mismatch
    ├── KeyFileError                 a key file is missing, unsafe or corrupt key_file_error
    ├── MissingDependency            an extra is not installed                missing_dependency
    ├── StoreError                   the database failed                      -> 500 server_error
    ├── RemoteError                  a remote endpoint failed or was refused  -> 502 remote_error
    └── CapacityError                at capacity / rate limited               -> 429 / 503
        └── Busy                     another writer holds the lock; retry     busy (503)

Every class carries a stable wire ``code`` and ``http_status``; adapters map them to the error
shape ``{"error": {"code", "message", "status"}}`` without inspecting anything else.
Foreign exceptions are wrapped at each seam with ``raise ... from e``.
"""

from __future__ import annotations

from typing import ClassVar


class EngramError(Exception):
    """Root of every error engram raises on purpose."""

    code: ClassVar[str] = "server_error"
    http_status: ClassVar[int] = 500

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message

    def to_wire(self) -> dict[str, dict[str, object]]:
        """The spec's error shape (Engram v0.1, "Error Code Reference")."""
        return {"error": {"code": self.code, "message": self.message, "status": self.http_status}}


class InputError(EngramError):
    code = "invalid_request"
    http_status = 400


class CanonicalJsonError(InputError):
    """A value is not I-JSON (RFC 7493) or cannot be canonicalised (RFC 8785).

    ``reason`` is a short stable token (``duplicate_member``, ``lone_surrogate``, ``invalid_utf8``,
    ``non_finite_number``, ``integer_out_of_range``, ``not_json``, ``syntax``); ``position`` is a
    character offset into the parsed text or a JSON-pointer-like path into a Python value.
    """

    def __init__(self, reason: str, position: str | int, detail: str = "") -> None:
        text = f"not I-JSON: {reason} at {position}"
        if detail:
            text += f" ({detail})"
        super().__init__(text)
        self.reason = reason
        self.position = position


class InvalidRequest(InputError):
    code = "invalid_request"


class InvalidScope(InputError):
    code = "invalid_scope"


class UnsupportedVersion(InputError):
    code = "unsupported_version"


class ManifestError(InputError):
    code = "invalid_manifest"


class CartridgeFormatError(InputError):
    code = "invalid_cartridge"


class AuthError(EngramError):
    code = "unauthorized"
    http_status = 401


class Unauthorized(AuthError):
    code = "unauthorized"


class MissingCredentials(Unauthorized):
    """No ``Authorization: Bearer`` credential at all (RFC 6750 §3.1: the challenge then
    carries no error code), as opposed to a presented token that is unknown or revoked."""

    code = "unauthorized"


class TokenExpired(AuthError):
    code = "token_expired"


class Forbidden(AuthError):
    code = "forbidden"
    http_status = 403


class NotFound(EngramError):
    code = "not_found"
    http_status = 404


class UserNotFound(NotFound):
    code = "user_not_found"


class BeliefNotFound(NotFound):
    code = "belief_not_found"


class ResourceNotFound(NotFound):
    code = "not_found"


class ConflictError(EngramError):
    code = "conflict"
    http_status = 409


class IdempotencyConflict(ConflictError):
    code = "idempotency_conflict"
    http_status = 422


class VerificationError(EngramError):
    code = "verification_failed"
    http_status = 422


class SignatureInvalid(VerificationError):
    code = "signature_invalid"


class UnknownKeyId(VerificationError):
    code = "unknown_kid"


class ExportExpired(VerificationError):
    code = "export_expired"


class ExpiryTooLong(VerificationError):
    code = "expiry_too_long"


class MalformedExport(VerificationError):
    """A signed export or diff is not I-JSON or lacks a member it must carry: it is unusable."""

    code = "malformed_export"


class KeyExpired(VerificationError):
    """The published key's own ``expires_at`` lies before the document's ``issued_at``."""

    code = "key_expired"


class KeyNotPinned(VerificationError):
    """The runtime pins its provider's keys and this key list or kid is not the pinned one."""

    code = "key_not_pinned"


class ScopeMismatch(VerificationError):
    """A validly signed export for another scope than the one asked for, or one whose beliefs
    the scope it names must leave out."""

    code = "scope_mismatch"


class SubjectMismatch(VerificationError):
    """A validly signed document about another subject than the session's."""

    code = "subject_mismatch"


class RollbackRefused(VerificationError):
    """A validly signed document issued before one already accepted (a replayed old export)."""

    code = "rollback_refused"


class DigestMismatch(VerificationError):
    code = "digest_mismatch"


class KeyFileError(EngramError):
    code = "key_file_error"
    http_status = 500


class MissingDependency(EngramError):
    """A command needs a package the installed extras do not carry (e.g. only the ``runtime``
    extra of engram-memory-stack is installed)."""

    code = "missing_dependency"


class StoreError(EngramError):
    code = "server_error"
    http_status = 500


class RemoteError(EngramError):
    code = "remote_error"
    http_status = 502


class CapacityError(EngramError):
    """The service is at capacity (503) or the caller is over its rate (429)."""

    code = "service_unavailable"
    http_status = 503

    def __init__(self, message: str, retry_after_seconds: int) -> None:
        super().__init__(message)
        self.retry_after_seconds = retry_after_seconds


class RateLimited(CapacityError):
    code = "rate_limited"
    http_status = 429


class Busy(CapacityError):
    """Another writer held the store's write lock past the busy timeout: nothing was written,
    and the same call may simply be retried (``retry_after_seconds``)."""

    code = "busy"
    http_status = 503


__all__ = [
    "AuthError",
    "BeliefNotFound",
    "Busy",
    "CanonicalJsonError",
    "CapacityError",
    "CartridgeFormatError",
    "ConflictError",
    "DigestMismatch",
    "EngramError",
    "ExpiryTooLong",
    "ExportExpired",
    "Forbidden",
    "IdempotencyConflict",
    "InputError",
    "InvalidRequest",
    "InvalidScope",
    "KeyExpired",
    "KeyFileError",
    "KeyNotPinned",
    "MalformedExport",
    "ManifestError",
    "MissingCredentials",
    "MissingDependency",
    "NotFound",
    "RateLimited",
    "RemoteError",
    "ResourceNotFound",
    "RollbackRefused",
    "ScopeMismatch",
    "SignatureInvalid",
    "StoreError",
    "SubjectMismatch",
    "TokenExpired",
    "Unauthorized",
    "UnknownKeyId",
    "UnsupportedVersion",
    "UserNotFound",
    "VerificationError",
]
