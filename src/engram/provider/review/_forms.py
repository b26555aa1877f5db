"""Reading and guarding the review page's form posts (``docs/spec/review-page.md``, "CSRF").

A post is accepted only if it is ``application/x-www-form-urlencoded`` UTF-8 within a small size
limit, without repeated fields, and does not come from another origin: browsers mark cross-site
requests (``Sec-Fetch-Site``) and name their ``Origin``; either being foreign is refused before
the synchronizer token is even looked at. Before sign-in there is no session to bind a token to,
so the sign-in forms use a double-submit token: a random value in a SameSite=Strict, HttpOnly
cookie that the form must echo.
"""

from __future__ import annotations

import hmac
import re
import secrets
from urllib.parse import parse_qsl, urlsplit

from starlette.requests import Request

from engram.core.encoding import b64url_encode
from engram.errors import Forbidden, InvalidRequest

MAX_FORM_BYTES = 8192
MAX_FIELDS = 16
_LOGIN_TOKEN = re.compile(r"^[A-Za-z0-9_-]{43}$")


async def read_form(request: Request) -> dict[str, str]:
    """The posted fields, or InvalidRequest for anything but a small urlencoded UTF-8 form."""
    kind = request.headers.get("content-type", "").split(";")[0].strip().lower()
    if kind != "application/x-www-form-urlencoded":
        raise InvalidRequest("the review page accepts only its own HTML forms")
    body = bytearray()
    async for chunk in request.stream():
        body.extend(chunk)
        if len(body) > MAX_FORM_BYTES:
            raise InvalidRequest(f"form larger than {MAX_FORM_BYTES} bytes")
    try:
        pairs = parse_qsl(
            bytes(body).decode("utf-8"),
            keep_blank_values=True,
            max_num_fields=MAX_FIELDS,
            encoding="utf-8",
            errors="strict",
        )
    except (UnicodeDecodeError, ValueError) as e:
        raise InvalidRequest("the form is not valid UTF-8 form data") from e
    fields: dict[str, str] = {}
    for name, value in pairs:
        if name in fields:
            raise InvalidRequest(f"the form repeats the field {name!r}")
        fields[name] = value
    return fields


def _origin(url: str) -> str:
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}".lower()


def check_same_origin(request: Request, public_url: str) -> None:
    """Forbidden when the browser says the post came from another site or origin."""
    site = request.headers.get("sec-fetch-site")
    if site is not None and site.lower() not in ("same-origin", "none"):
        raise Forbidden("this form was sent from another site; open the review page and retry")
    origin = request.headers.get("origin")
    if origin is None:
        return
    own = {_origin(str(request.base_url)), _origin(public_url)}
    if origin.lower() not in own:
        raise Forbidden("this form was sent from another site; open the review page and retry")


def new_login_token() -> str:
    return b64url_encode(secrets.token_bytes(32))


def valid_login_token(value: str | None) -> bool:
    return value is not None and bool(_LOGIN_TOKEN.match(value))


def check_login_token(cookie: str | None, submitted: str | None) -> None:
    """Forbidden unless the sign-in form echoes the login cookie (double submit)."""
    if not (valid_login_token(cookie) and submitted and cookie is not None):
        raise Forbidden("the sign-in form has expired; reload the page and sign in again")
    if not hmac.compare_digest(cookie.encode(), submitted.encode()):
        raise Forbidden("the sign-in form has expired; reload the page and sign in again")


__all__ = [
    "MAX_FORM_BYTES",
    "check_login_token",
    "check_same_origin",
    "new_login_token",
    "read_form",
    "valid_login_token",
]
