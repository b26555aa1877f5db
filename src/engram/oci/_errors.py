"""The errors of OCI distribution, in engram's error shape (``error: <code>: <message>``)."""

from __future__ import annotations

from engram.errors import AuthError, InputError, RemoteError, VerificationError


class BadReference(InputError):
    """``REGISTRY/REPO:TAG`` or ``REGISTRY/REPO@sha256:…`` could not be read."""

    code = "invalid_reference"


class RegistryError(RemoteError):
    """The registry answered with an error, or with something the distribution spec forbids."""

    code = "registry_error"


class RegistryAuthFailed(AuthError):
    """The registry asked for credentials and refused the ones given (or none were given)."""

    code = "registry_unauthorized"


class ArtifactRefused(VerificationError):
    """What a registry served is not a cartridge engram may hand over: shape, digest or trust."""

    code = "artifact_refused"


__all__ = ["ArtifactRefused", "BadReference", "RegistryAuthFailed", "RegistryError"]
