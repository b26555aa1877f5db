"""Registry authentication as registries ask for it: HTTP Basic, or the Bearer token flow.

The token flow is the one Docker's registry token specification defines and every OCI registry
in use follows: a request answered ``401`` with ``WWW-Authenticate: Bearer realm="…",
service="…", scope="…"`` is retried with a token fetched from ``realm`` (``GET`` with the
``service`` and ``scope`` parameters, with Basic credentials when the user gave some, anonymous
otherwise); the token comes back as ``token`` or ``access_token``. ``Basic realm="…"`` is
answered with the credentials directly. A second ``401`` after that is
:class:`RegistryAuthFailed`. The token answer is read through the fetch discipline
(``engram.fetch``) and a cap of :data:`MAX_TOKEN_RESPONSE` bytes. Credentials are never
logged and never sent to a token realm on another host over plain HTTP.
"""

from __future__ import annotations

import base64
import re
from dataclasses import dataclass
from urllib.parse import urlsplit

from engram.core.canonical import Json, parse_strict
from engram.errors import CanonicalJsonError
from engram.fetch import Fetcher
from engram.oci._errors import RegistryAuthFailed

_PARAM = re.compile(r'([A-Za-z][A-Za-z0-9_-]*)\s*=\s*(?:"((?:[^"\\]|\\.)*)"|([^\s,]+))')
MAX_TOKEN_RESPONSE = 1 << 20


@dataclass(frozen=True)
class Credentials:
    username: str
    password: str

    def __repr__(self) -> str:  # never show the password
        return f"Credentials(username={self.username!r}, password=<hidden>)"

    def basic(self) -> str:
        raw = f"{self.username}:{self.password}".encode()
        return "Basic " + base64.b64encode(raw).decode("ascii")


@dataclass(frozen=True)
class Challenge:
    scheme: str
    params: dict[str, str]


def parse_challenge(header: str) -> Challenge | None:
    """The first challenge of a ``WWW-Authenticate`` value (RFC 7235 ``auth-param`` list)."""
    scheme, _, rest = header.strip().partition(" ")
    if not scheme:
        return None
    params = {
        m.group(1).lower(): (m.group(2) if m.group(2) is not None else m.group(3)).replace(
            '\\"', '"'
        )
        for m in _PARAM.finditer(rest)
    }
    return Challenge(scheme.lower(), params)


class RegistryAuth:
    """Answers Basic and Bearer challenges and keeps the last ``Authorization`` for reuse.

    Not an ``httpx.Auth``: httpx reads every ``401`` body whole before handing the next
    request to an auth flow, which an endless challenge body turns into unbounded memory; the
    registry client calls :meth:`answer` itself, with the challenge's body never read."""

    def __init__(self, credentials: Credentials | None = None) -> None:
        self._credentials = credentials
        self.authorization: str | None = None

    def answer(self, host: str, www_authenticate: str, fetcher: Fetcher) -> None:
        """Set :attr:`authorization` for ``host``'s challenge (fetching a token if Bearer)."""
        challenge = parse_challenge(www_authenticate)
        if challenge is None:
            raise RegistryAuthFailed(f"{host} asked for credentials without a challenge")
        if challenge.scheme == "basic":
            if self._credentials is None:
                raise RegistryAuthFailed(
                    f"{host} needs a username and password "
                    "(--username and --password-file, or $ENGRAM_OCI_USERNAME/$ENGRAM_OCI_PASSWORD)"
                )
            self.authorization = self._credentials.basic()
        elif challenge.scheme == "bearer":
            self.authorization = "Bearer " + self._token(host, challenge, fetcher)
        else:
            raise RegistryAuthFailed(
                f"{host} asks for {challenge.scheme[:40]!r} authentication, which engram "
                "does not speak (Basic and Bearer only)"
            )

    def _token(self, host: str, challenge: Challenge, fetcher: Fetcher) -> str:
        realm = challenge.params.get("realm")
        if not realm:
            raise RegistryAuthFailed(f"{host}: Bearer challenge without a realm")
        target = urlsplit(realm)
        if target.scheme not in ("http", "https") or not target.netloc:
            raise RegistryAuthFailed(f"{host}: token realm {realm[:200]!r} is not a URL")
        params: dict[str, str] = {
            k: challenge.params[k] for k in ("service", "scope") if k in challenge.params
        }
        headers = {}
        if self._credentials is not None:
            same_host = target.hostname == urlsplit(f"//{host}").hostname
            if target.scheme == "https" or same_host:
                headers["Authorization"] = self._credentials.basic()
        realm_host = target.hostname or realm
        with fetcher.stream("GET", realm, params=params, headers=headers) as response:
            if response.status_code != 200:
                raise RegistryAuthFailed(
                    f"token realm {realm_host} answered {response.status_code}: credentials refused"
                )
            body = fetcher.read(
                response, MAX_TOKEN_RESPONSE, f"the answer of token realm {realm_host}"
            )
        return _token(body, realm_host)


def _token(answer: bytes, realm_host: str) -> str:
    try:
        body: Json = parse_strict(answer)
    except CanonicalJsonError as e:
        raise RegistryAuthFailed(f"token realm {realm_host} sent no JSON token") from e
    token = body.get("token") or body.get("access_token") if isinstance(body, dict) else None
    if not isinstance(token, str) or not token or any(c in token for c in "\r\n "):
        raise RegistryAuthFailed(f"token realm {realm_host} sent no usable token")
    return token


__all__ = ["Challenge", "Credentials", "RegistryAuth", "parse_challenge"]
