"""Error pages and the endpoint wrapper of the review page (``docs/spec/review-page.md``, "Errors").

Every review endpoint dispatches on the method itself and turns every failure into an HTML page
with the right status, a sentence saying what happened and one link to go on, so the provider's
JSON error handlers never see a review request. 5xx pages name only the request id the access and
error logs carry: no exception text, SQL or path reaches the page. Also here: the cookie names,
which depend on the scheme (``__Host-`` over https).
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Mapping

from starlette.requests import Request
from starlette.responses import Response

from engram.errors import AuthError, EngramError, Forbidden, TokenExpired
from engram.provider.review import _pages
from engram.provider.review._html import page

LOG = logging.getLogger("engram.provider.review")
Handler = Callable[[Request], Awaitable[Response]]

_TITLES: Mapping[int, tuple[str, str]] = {
    400: ("That request could not be used", "Go to the review page"),
    401: ("Please sign in", "Sign in"),
    403: ("That was refused", "Back to review"),
    404: ("Not found", "Back to review"),
    405: ("Not possible here", "Back to review"),
    409: ("Already decided", "Back to review"),
}


def cookie_names(request: Request) -> tuple[str, str, str]:
    """(session cookie, login cookie, path): ``__Host-`` names over https, else under /review."""
    if request.url.scheme == "https":
        return "__Host-engram_review", "__Host-engram_review_login", "/"
    return "engram_review", "engram_review_login", _pages.BASE


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


def _explain(error: EngramError) -> str:
    if isinstance(error, TokenExpired):
        return "Your review session has expired. Sign in again to continue."
    if isinstance(error, Forbidden):
        return error.message[:1].upper() + error.message[1:] + "."
    if isinstance(error, AuthError):
        return "You are not signed in, or your session has ended. Sign in to continue."
    if error.code == "conflict":
        return (
            "This correction was already decided (perhaps in another tab); the review page "
            "shows its outcome."
        )
    return error.message[:1].upper() + error.message[1:] + "."


def error_page(
    request: Request, error: EngramError, headers: Mapping[str, str] | None = None
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
        )
        return page("Error", body, status=500, headers=headers)
    title, action = _TITLES.get(status, ("That did not work", "Back to review"))
    body = _pages.problem(title, _explain(error), _pages.BASE, action)
    return page(title, body, status=status, headers=headers)


def endpoint(handlers: Mapping[str, Handler]) -> Callable[[Request], Awaitable[Response]]:
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
            return error_page(request, e, {"Allow": allowed})
        except EngramError as e:
            if e.http_status >= 500:
                LOG.error(
                    "review request %s failed: %s",
                    getattr(request.state, "request_id", "-"),
                    type(e).__name__,
                )
            response = error_page(request, e)
            if isinstance(e, AuthError) and not isinstance(e, Forbidden):
                clear_cookie(request, response, cookie_names(request)[0])
            return response
        except Exception as e:
            LOG.exception(
                "review request %s failed unexpectedly", getattr(request.state, "request_id", "-")
            )
            return error_page(request, EngramError(type(e).__name__))

    return handle


__all__ = [
    "Handler",
    "MethodNotAllowed",
    "NotFoundPage",
    "clear_cookie",
    "cookie_names",
    "endpoint",
    "error_page",
]
