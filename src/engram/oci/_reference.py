"""``REGISTRY/REPO:TAG`` and ``REGISTRY/REPO@sha256:<hex>`` references.

OCI Distribution Specification 1.1 "Pulling manifests" (the ``<name>`` and tag grammars) and the
reference grammar container tools share (``distribution/reference``): the first path segment is
a registry host only when it holds a ``.`` or a ``:`` or is ``localhost``, so engram never
guesses a default registry (docs/spec/acx-oci.md §2).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from engram.oci._errors import BadReference
from engram.oci._media import DIGEST

_NAME = re.compile(
    r"[a-z0-9]+(?:(?:\.|_|__|-+)[a-z0-9]+)*(?:/[a-z0-9]+(?:(?:\.|_|__|-+)[a-z0-9]+)*)*"
)
_TAG = re.compile(r"[a-zA-Z0-9_][a-zA-Z0-9._-]{0,127}")
_HOST = re.compile(
    r"(?:[a-zA-Z0-9](?:[a-zA-Z0-9-]*[a-zA-Z0-9])?(?:\.[a-zA-Z0-9-]+)*|\[[0-9a-fA-F:]+\])(?::[0-9]{1,5})?"
)
_LOOPBACK = re.compile(r"(?:localhost|127(?:\.[0-9]{1,3}){3}|\[::1\])(?::[0-9]+)?")


@dataclass(frozen=True)
class Reference:
    registry: str
    """``host[:port]`` as written."""
    repository: str
    tag: str | None = None
    digest: str | None = None

    @property
    def reference(self) -> str:
        """What ``/v2/<name>/manifests/<reference>`` takes: the digest if pinned, else the tag."""
        value = self.digest or self.tag
        assert value is not None
        return value

    @property
    def loopback(self) -> bool:
        return _LOOPBACK.fullmatch(self.registry) is not None

    def with_digest(self, digest: str) -> Reference:
        return Reference(self.registry, self.repository, self.tag, digest)

    def __str__(self) -> str:
        text = f"{self.registry}/{self.repository}"
        if self.tag:
            text += f":{self.tag}"
        if self.digest:
            text += f"@{self.digest}"
        return text


def parse_reference(text: str, *, require_tag: bool = False) -> Reference:
    """Read a reference; :class:`BadReference` names what is wrong with it."""
    if not isinstance(text, str) or not text or len(text) > 512 or text != text.strip():
        raise BadReference(f"{text!r} is not a registry reference (REGISTRY/REPO:TAG)")
    rest, _, digest = text.partition("@")
    host, slash, path = rest.partition("/")
    if not slash or not path:
        raise BadReference(f"{text!r} names no repository: write REGISTRY/REPO:TAG")
    if not ("." in host or ":" in host or host == "localhost") or not _HOST.fullmatch(host):
        raise BadReference(
            f"{host!r} is not a registry host: write it in full, e.g. 127.0.0.1:5000/team/agent:1.0"
        )
    name, tag = path, None
    last = path.rsplit("/", 1)[-1]
    if ":" in last:
        name, _, tag = path.rpartition(":")
        if not _TAG.fullmatch(tag):
            raise BadReference(f"{tag!r} is not a valid tag")
    if not _NAME.fullmatch(name) or len(name) > 255:
        raise BadReference(f"{name!r} is not a valid repository name (lowercase, / separated)")
    if digest and not DIGEST.fullmatch(digest):
        raise BadReference(f"{digest!r} is not a sha256 digest")
    if require_tag and not tag:
        raise BadReference(f"{text!r} needs a tag to push to (REGISTRY/REPO:TAG)")
    if not tag and not digest:
        raise BadReference(f"{text!r} needs a tag or a digest (REPO:TAG or REPO@sha256:...)")
    return Reference(host, name, tag, digest or None)


__all__ = ["Reference", "parse_reference"]
