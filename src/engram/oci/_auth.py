"""Registry authentication as registries ask for it: HTTP Basic, or the Bearer token flow.

The token flow is the one Docker's registry token specification defines and every OCI registry
in use follows: a request answered ``401`` with ``WWW-Authenticate: Bearer realm="…",
service="…", scope="…"`` is retried with a token fetched from ``realm`` (``GET`` with the
``service`` and ``scope`` parameters, with Basic credentials when the user gave some, anonymous
otherwise); the token comes back as ``token`` or ``access_token``. ``Basic realm="…"`` is
answered with the credentials directly. A second ``401`` after that is
:class:`RegistryAuthFailed`. Credentials are never logged and never sent to a token realm on
another host over plain HTTP.
"""

from __future__ import annotations

import base64
import re
from collections.abc import Generator
from dataclasses import dataclass
from urllib.parse import urlsplit

import httpx

from engram.core.canonical import Json, parse_strict
from engram.errors import CanonicalJsonError
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


class RegistryAuth(httpx.Auth):
    """An ``httpx.Auth`` that answers Basic and Bearer challenges and reuses the last token."""

    def __init__(self, credentials: Credentials | None = None) -> None:
        self._credentials = credentials
        self._authorization: str | None = None

    def sync_auth_flow(
        self, request: httpx.Request
    ) -> Generator[httpx.Request, httpx.Response, None]:
        if self._authorization is not None:
            request.headers["Authorization"] = self._authorization
        response = yield request
        if response.status_code != 401:
            return
        challenge = parse_challenge(response.headers.get("WWW-Authenticate", ""))
        if challenge is None:
            raise RegistryAuthFailed(
                f"{request.url.host} asked for credentials without a challenge"
            )
        if challenge.scheme == "basic":
            if self._credentials is None:
                raise RegistryAuthFailed(
                    f"{request.url.host} needs a username and password "
                    "(--username and --password-file, or $ENGRAM_OCI_USERNAME/$ENGRAM_OCI_PASSWORD)"
                )
            self._authorization = self._credentials.basic()
        elif challenge.scheme == "bearer":
            token_request = self._token_request(request, challenge)
            token_response = yield token_request
            token_response.read()
            self._authorization = "Bearer " + _token(token_response, token_request)
        else:
            raise RegistryAuthFailed(
                f"{request.url.host} asks for {challenge.scheme!r} authentication, which engram "
                "does not speak (Basic and Bearer only)"
            )
        request.headers["Authorization"] = self._authorization
        retried = yield request
        if retried.status_code == 401:
            raise RegistryAuthFailed(f"{request.url.host} refused the credentials")

    def _token_request(self, request: httpx.Request, challenge: Challenge) -> httpx.Request:
        realm = challenge.params.get("realm")
        if not realm:
            raise RegistryAuthFailed(f"{request.url.host}: Bearer challenge without a realm")
        target = urlsplit(realm)
        if target.scheme not in ("http", "https") or not target.netloc:
            raise RegistryAuthFailed(f"{request.url.host}: token realm {realm!r} is not a URL")
        params: dict[str, str] = {
            k: challenge.params[k] for k in ("service", "scope") if k in challenge.params
        }
        headers = {}
        if self._credentials is not None:
            same_host = target.hostname == request.url.host
            if target.scheme == "https" or same_host:
                headers["Authorization"] = self._credentials.basic()
        return httpx.Request("GET", realm, params=params, headers=headers)


def _token(response: httpx.Response, request: httpx.Request) -> str:
    if response.status_code != 200:
        raise RegistryAuthFailed(
            f"token realm {request.url.host} answered {response.status_code}: credentials refused"
        )
    if len(response.content) > MAX_TOKEN_RESPONSE:
        raise RegistryAuthFailed(f"token realm {request.url.host} sent an oversized answer")
    try:
        body: Json = parse_strict(response.content)
    except CanonicalJsonError as e:
        raise RegistryAuthFailed(f"token realm {request.url.host} sent no JSON token") from e
    token = body.get("token") or body.get("access_token") if isinstance(body, dict) else None
    if not isinstance(token, str) or not token or any(c in token for c in "\r\n "):
        raise RegistryAuthFailed(f"token realm {request.url.host} sent no usable token")
    return token


__all__ = ["Challenge", "Credentials", "RegistryAuth", "parse_challenge"]
