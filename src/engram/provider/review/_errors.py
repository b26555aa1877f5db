"""Error pages and the endpoint wrapper of the review page (``docs/spec/review-page.md``, "Errors").

Every review endpoint dispatches on the method itself and turns every failure into an HTML page
with the right status, a sentence saying what happened and one link to go on, so the provider's
JSON error handlers never see a review request. 5xx pages name only the request id the access and
error logs carry: no exception text, SQL or path reaches the page. Also here: the cookie names,
which depend on the scheme (``__Host-`` over https). The ``/memories`` pages use the same
wrapper with their own :class:`Home` (where an error page sends the reader back to).
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass

from starlette.requests import Request
from starlette.responses import Response

from engram.errors import AuthError, EngramError, Forbidden, TokenExpired
from engram.provider.review import _pages
from engram.provider.review._html import page

LOG = logging.getLogger("engram.provider.review")
Handler = Callable[[Request], Awaitable[Response]]


@dataclass(frozen=True)
class Home:
    """Where an error page of one section sends the reader: its page and the link's words."""

    section: str  # a key of _html.SECTIONS
    href: str
    back: str


REVIEW_HOME = Home("review", _pages.BASE, "Back to review")

# Titles per status; None as the action: the section's own "back" link.
_TITLES: Mapping[int, tuple[str, str | None]] = {
    400: ("That request could not be used", None),
    401: ("Please sign in", "Sign in"),
    403: ("That was refused", None),
    404: ("Not found", None),
    405: ("Not possible here", None),
    409: ("Already decided", None),
}


def cookie_names(request: Request) -> tuple[str, str, str]:
    """(session cookie, login cookie, path): ``__Host-`` names over https. The path is ``/`` on
    both schemes, because one session serves ``/review`` and ``/memories``."""
    if request.url.scheme == "https":
        return "__Host-engram_review", "__Host-engram_review_login", "/"
    return "engram_review", "engram_review_login", "/"


def clear_cookie(request: Request, response: Response, name: str) -> None:
    response.delete_cookie(
        name,
        path=cookie_names(request)[2],
        secure=request.url.scheme == "https",
        httponly=True,
        samesite="strict",
    )


class NotFoundPage(EngramError):
    code = "not_found"
    http_status = 404

    def __init__(self) -> None:
        super().__init__("there is no such page")


class MethodNotAllowed(EngramError):
    code = "method_not_allowed"
    http_status = 405

    def __init__(self, method: str) -> None:
        super().__init__(f"{method} is not possible at this address")


def _explain(error: EngramError, home: Home) -> str:
    if isinstance(error, TokenExpired):
        return "Your review session has expired. Sign in again to continue."
    if isinstance(error, Forbidden):
        return error.message[:1].upper() + error.message[1:] + "."
    if isinstance(error, AuthError):
        return "You are not signed in, or your session has ended. Sign in to continue."
    if error.code == "conflict" and home.section == "review":
        return (
            "This correction was already decided (perhaps in another tab); the review page "
            "shows its outcome."
        )
    return error.message[:1].upper() + error.message[1:] + "."


def error_page(
    request: Request,
    error: EngramError,
    headers: Mapping[str, str] | None = None,
    home: Home = REVIEW_HOME,
) -> Response:
    """The HTML page for an engram error: a title, what happened, and where to go next."""
    status = error.http_status
    request.state.error_code = error.code if status < 500 else "server_error"
    if status >= 500:
        reference = getattr(request.state, "request_id", "-")
        body = _pages.problem(
            "Something went wrong on our side",
            f"Nothing was changed by this failure. Try again in a moment; if it keeps happening, "
            f"give the administrator this reference: {reference}",
            home.href,
            home.back,
        )
        return page("Error", body, section=home.section, status=500, headers=headers)
    title, action = _TITLES.get(status, ("That did not work", None))
    if status == 409 and home.section != "review":
        title = "Not possible now"
    body = _pages.problem(title, _explain(error, home), home.href, action or home.back)
    return page(title, body, section=home.section, status=status, headers=headers)


def endpoint(
    handlers: Mapping[str, Handler], home: Home = REVIEW_HOME
) -> Callable[[Request], Awaitable[Response]]:
    """One path: dispatch on the method; every failure becomes an HTML error page."""
    allowed = ", ".join(sorted({*handlers, "HEAD"} if "GET" in handlers else set(handlers)))

    async def handle(request: Request) -> Response:
        method = "GET" if request.method == "HEAD" else request.method
        handler = handlers.get(method)
        try:
            if handler is None:
                raise MethodNotAllowed(request.method)
            return await handler(request)
        except MethodNotAllowed as e:
            return error_page(request, e, {"Allow": allowed}, home)
        except EngramError as e:
            if e.http_status >= 500:
                LOG.error(
                    "review request %s failed: %s",
                    getattr(request.state, "request_id", "-"),
                    type(e).__name__,
                )
            response = error_page(request, e, home=home)
            if isinstance(e, AuthError) and not isinstance(e, Forbidden):
                clear_cookie(request, response, cookie_names(request)[0])
            return response
        except Exception as e:
            LOG.exception(
                "review request %s failed unexpectedly", getattr(request.state, "request_id", "-")
            )
            return error_page(request, EngramError(type(e).__name__), home=home)

    return handle


__all__ = [
    "REVIEW_HOME",
    "Handler",
    "Home",
    "MethodNotAllowed",
    "NotFoundPage",
    "clear_cookie",
    "cookie_names",
    "endpoint",
    "error_page",
]
