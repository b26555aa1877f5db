"""The errors of provable levels (SPEC §10; docs/spec/acx-levels.md)."""

from __future__ import annotations

from typing import ClassVar

from engram.errors import InputError, VerificationError


class LevelRefused(InputError):
    """Issuance refused before anything is run or signed: self-issuance, cooldown, bad input."""

    code = "level_refused"


class LevelUnverified(VerificationError):
    """A level credential that must verify before it is used (attached to a cartridge) does
    not: revoked, a proof no known key verifies, a status that cannot be read, or a failed
    check."""

    code = "level_unverified"


class ProofInvalid(VerificationError):
    """A Data Integrity proof is malformed or does not verify (vc-di-eddsa §3.3)."""

    code = "proof_invalid"


class StatusCheckError(VerificationError):
    """A Bitstring Status List check that cannot conclude: the credential's status is unknown.

    ``status_code`` is the processing error the Bitstring Status List v1.0 spec defines
    (§3.6 "Processing Errors"): ``STATUS_RETRIEVAL_ERROR``, ``STATUS_VERIFICATION_ERROR``,
    ``STATUS_LIST_LENGTH_ERROR`` or ``RANGE_ERROR``. Callers fail closed: unknown is not valid.
    """

    code = "status_unknown"
    CODES: ClassVar[dict[str, int]] = {
        "STATUS_RETRIEVAL_ERROR": -128,
        "STATUS_VERIFICATION_ERROR": -129,
        "STATUS_LIST_LENGTH_ERROR": -130,
        "RANGE_ERROR": -67,
    }

    def __init__(self, status_code: str, detail: str) -> None:
        assert status_code in self.CODES
        super().__init__(f"{status_code}: {detail}")
        self.status_code = status_code
        self.detail = detail

    def problem_details(self) -> dict[str, object]:
        """The error as the spec's ProblemDetails object."""
        return {
            "type": f"https://www.w3.org/ns/credentials/status-list#{self.status_code}",
            "code": self.CODES[self.status_code],
            "title": self.status_code,
            "detail": self.detail,
        }


__all__ = ["LevelRefused", "LevelUnverified", "ProofInvalid", "StatusCheckError"]
