"""The review page's routes: server-rendered HTML at ``/review`` (``docs/spec/review-page.md``).

Handlers are thin: read the form, check origin and CSRF, call one domain function of
``engram.context`` (or a session function), render a page or redirect (303) after a post.
Failures become HTML error pages in ``_errors``. Store calls run in Starlette's thread pool.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response
from starlette.routing import BaseRoute, Route

from engram.context import (
    Belief,
    Correction,
    EvolutionEntry,
    Subject,
    belief_history,
    confirm_correction,
    get_belief,
    get_subject,
    list_beliefs,
    list_pending_corrections,
    reject_correction,
)
from engram.context.internals import recent_decisions
from engram.errors import AuthError, BeliefNotFound, TokenExpired
from engram.provider._services import Services
from engram.provider.review import _pages
from engram.provider.review._errors import (
    Handler,
    NotFoundPage,
    clear_cookie,
    cookie_names,
    endpoint,
)
from engram.provider.review._forms import (
    check_login_token,
    check_same_origin,
    new_login_token,
    read_form,
    valid_login_token,
)
from engram.provider.review._html import Html, page
from engram.provider.review._sessions import (
    OpenedSession,
    ReviewConfig,
    ReviewSession,
    check_csrf,
    ensure_review_schema,
    inspect_link,
    redeem_review_link,
    resume_session,
    sign_in_with_token,
    sign_out,
)

if TYPE_CHECKING:
    from engram.memory import MemoryEngine

T = TypeVar("T")
RECENT_DECISIONS = 10
_ANY_METHOD = ("GET", "POST", "PUT", "PATCH", "DELETE", "OPTIONS")

# Banners after a redirect: the query names one of these, so nothing the URL carries is echoed.
NOTICES: Mapping[str, str] = {
    "signed-in": "You are signed in.",
    "signed-out": "You are signed out.",
    "confirmed": "Confirmed. The belief now has the new value, and its history records the change.",
    "rejected": "Rejected. The belief is unchanged.",
}
# Where a sign-in may lead (the form's ``next``): only these, so a link cannot send a signed-in
# browser anywhere else.
LANDINGS = (_pages.BASE, _pages.MEMORIES)


@dataclass(frozen=True)
class Signed:
    secret: str
    session: ReviewSession
    subject: Subject


class ReviewPages:
    """The handlers, bound to the provider's services and the review settings."""

    def __init__(self, services: Services, config: ReviewConfig, *, memories: bool = False) -> None:
        self.services = services
        self.config = config
        self.memories = memories  # whether /memories is served (the header links to it)

    # -- plumbing ---------------------------------------------------------------------------

    async def run(self, fn: Callable[..., T], *args: Any) -> T:
        return await run_in_threadpool(fn, *args)

    def _set_cookie(
        self, request: Request, response: Response, name: str, value: str, max_age: int
    ) -> None:
        response.set_cookie(
            name,
            value,
            max_age=max(1, max_age),
            path=cookie_names(request)[2],
            secure=request.url.scheme == "https",
            httponly=True,
            samesite="strict",
        )

    def _start_session(
        self, request: Request, opened: OpenedSession, notice: str, to: str = _pages.BASE
    ) -> Response:
        session_cookie, login_cookie, _ = cookie_names(request)
        landing = to if to in LANDINGS else _pages.BASE
        response = RedirectResponse(f"{landing}?notice={notice}", status_code=303)
        lifetime = opened.session.expires_at - self.services.clock.now()
        self._set_cookie(
            request, response, session_cookie, opened.secret, int(lifetime.total_seconds())
        )
        clear_cookie(request, response, login_cookie)
        request.state.subject_id = opened.session.subject_id
        return response

    def _login_token(self, request: Request) -> str:
        existing = request.cookies.get(cookie_names(request)[1])
        return existing if valid_login_token(existing) and existing else new_login_token()

    def _with_login_cookie(self, request: Request, response: Response, token: str) -> Response:
        self._set_cookie(request, response, cookie_names(request)[1], token, 3600)
        return response

    def _resume(self, secret: str) -> Signed:
        session = resume_session(self.services.store, self.services.clock, secret, self.config)
        return Signed(secret, session, get_subject(self.services.store, session.subject_id))

    async def signed_in(self, request: Request) -> Signed:
        """The request's session, or Unauthorized / TokenExpired (the wrapper clears the cookie)."""
        secret = request.cookies.get(cookie_names(request)[0], "")
        signed = await self.run(self._resume, secret)
        request.state.subject_id = signed.session.subject_id
        return signed

    def sign_in_page(
        self,
        request: Request,
        error: str | None = None,
        notice: str | None = None,
        status: int = 200,
        next_page: str = _pages.BASE,
    ) -> Response:
        """The sign-in form (with a fresh or the current login token) leading to ``next_page``."""
        token = self._login_token(request)
        section = "memories" if next_page == _pages.MEMORIES else "review"
        body = _pages.sign_in(token, next_page)
        response = page("Sign in", body, section=section, error=error, notice=notice, status=status)
        return self._with_login_cookie(request, response, token)

    def account(self, signed: Signed, current: str = _pages.BASE) -> Html:
        """The header of a signed-in page: the subject's pages, who is signed in, sign-out."""
        csrf = signed.session.csrf_token
        return _pages.account(signed.subject, csrf, current=current, memories=self.memories)

    # -- GET /review --------------------------------------------------------------------------

    def _dashboard_data(
        self, subject_id: str
    ) -> tuple[list[Correction], list[Belief], list[Correction]]:
        store = self.services.store
        pending = list_pending_corrections(store, subject_id)
        beliefs = list_beliefs(store, subject_id)
        resolved = recent_decisions(store, subject_id, RECENT_DECISIONS)
        return pending, beliefs, resolved

    async def home(self, request: Request) -> Response:
        notice = NOTICES.get(request.query_params.get("notice", ""))
        session_cookie = cookie_names(request)[0]
        if session_cookie not in request.cookies:
            return self.sign_in_page(request, notice=notice)
        try:
            signed = await self.signed_in(request)
        except AuthError as e:
            expired = isinstance(e, TokenExpired)
            response = self.sign_in_page(
                request,
                error="Your review session has expired; please sign in again." if expired else None,
                notice=None if expired else notice,
            )
            clear_cookie(request, response, session_cookie)
            return response
        pending, beliefs, resolved = await self.run(self._dashboard_data, signed.subject.id)
        body = _pages.dashboard(
            signed.subject, pending, beliefs, resolved, signed.session.csrf_token
        )
        return page(
            "Your corrections",
            body,
            account=self.account(signed),
            notice=notice,
        )

    # -- sign in / out ------------------------------------------------------------------------

    async def sign_in(self, request: Request) -> Response:
        form = await read_form(request)
        check_same_origin(request, self.services.config.base_url)
        check_login_token(request.cookies.get(cookie_names(request)[1]), form.get("login_csrf"))
        store, clock = self.services.store, self.services.clock
        try:
            opened = await self.run(
                sign_in_with_token, store, clock, form.get("token", ""), self.config
            )
        except AuthError as e:
            message = {
                "token_expired": "That token has expired. Create a new one with "
                "`engram token create --permissions confirm`.",
                "forbidden": "That token may not review corrections: it needs the confirm "
                "permission.",
            }.get(e.code, "That token was not recognised. Check it and try again.")
            request.state.error_code = e.code
            return self.sign_in_page(
                request, error=message, status=e.http_status, next_page=_landing(form)
            )
        return self._start_session(request, opened, "signed-in", _landing(form))

    async def link(self, request: Request) -> Response:
        code = request.query_params.get("code", "")
        store, clock = self.services.store, self.services.clock
        try:
            link = await self.run(inspect_link, store, clock, code)
        except AuthError as e:
            return self._link_refused(request, e)
        subject = await self.run(get_subject, store, link.subject_id)
        token = self._login_token(request)
        landing = _landing(request.query_params)  # ``&next=/memories`` leads there instead
        body = _pages.link_landing(subject, link.code, link.expires_at, token, landing)
        section = "memories" if landing == _pages.MEMORIES else "review"
        return self._with_login_cookie(request, page("Sign in", body, section=section), token)

    async def redeem(self, request: Request) -> Response:
        form = await read_form(request)
        check_same_origin(request, self.services.config.base_url)
        check_login_token(request.cookies.get(cookie_names(request)[1]), form.get("login_csrf"))
        store, clock = self.services.store, self.services.clock
        try:
            opened = await self.run(
                redeem_review_link, store, clock, form.get("code", ""), self.config
            )
        except AuthError as e:
            return self._link_refused(request, e)
        return self._start_session(request, opened, "signed-in", _landing(form))

    def _link_refused(self, request: Request, error: AuthError) -> Response:
        request.state.error_code = error.code
        body = _pages.problem(
            "This link cannot be used",
            f"{error.message[:1].upper()}{error.message[1:]}. Ask for a new one (it is made with "
            "`engram review-link`), or sign in with a token.",
            _pages.BASE,
            "Sign in with a token",
        )
        return page("Link refused", body, status=error.http_status)

    async def sign_out(self, request: Request) -> Response:
        form = await read_form(request)
        check_same_origin(request, self.services.config.base_url)
        session_cookie = cookie_names(request)[0]
        landing = _landing(form)  # the page signed out from shows the sign-in form again
        response = RedirectResponse(f"{landing}?notice=signed-out", status_code=303)
        try:
            signed = await self.signed_in(request)
        except AuthError:
            # Already signed out or expired: the outcome the user asked for.
            clear_cookie(request, response, session_cookie)
            return response
        check_csrf(signed.secret, form.get("csrf_token"))
        await self.run(sign_out, self.services.store, signed.secret)
        clear_cookie(request, response, session_cookie)
        return response

    # -- decisions and history ----------------------------------------------------------------

    async def decide(self, request: Request) -> Response:
        form = await read_form(request)
        check_same_origin(request, self.services.config.base_url)
        signed = await self.signed_in(request)
        check_csrf(signed.secret, form.get("csrf_token"))
        action = request.path_params["action"]
        decide = {"confirm": confirm_correction, "reject": reject_correction}.get(action)
        if decide is None:
            raise NotFoundPage()
        cid = request.path_params["cid"]
        store, clock = self.services.store, self.services.clock
        await self.run(decide, store, clock, signed.subject.id, cid)
        notice = "confirmed" if action == "confirm" else "rejected"
        return RedirectResponse(f"{_pages.BASE}?notice={notice}", status_code=303)

    def _history_data(
        self, subject_id: str, belief_id: str
    ) -> tuple[Belief | None, list[EvolutionEntry], list[Correction]]:
        store = self.services.store
        entries = belief_history(store, subject_id, belief_id)
        try:
            current: Belief | None = get_belief(store, subject_id, belief_id)
        except BeliefNotFound:
            current = None
        pending = [
            c for c in list_pending_corrections(store, subject_id) if c.belief_id == belief_id
        ]
        return current, entries, pending

    async def belief(self, request: Request) -> Response:
        if cookie_names(request)[0] not in request.cookies:
            return RedirectResponse(_pages.BASE, status_code=303)
        signed = await self.signed_in(request)
        bid = request.path_params["bid"]
        current, entries, pending = await self.run(self._history_data, signed.subject.id, bid)
        csrf = signed.session.csrf_token
        body = _pages.history(signed.subject, bid, current, entries, pending, csrf)
        return page("History", body, account=self.account(signed))

    async def unknown(self, request: Request) -> Response:
        if request.path_params.get("rest") == "" and request.method in ("GET", "HEAD"):
            return RedirectResponse(_pages.BASE, status_code=308)
        raise NotFoundPage()


def _landing(form: Mapping[str, str]) -> str:
    wanted = form.get("next", _pages.BASE)
    return wanted if wanted in LANDINGS else _pages.BASE


def review_routes(
    services: Services,
    config: ReviewConfig | None = None,
    *,
    memory: MemoryEngine | None = None,
) -> list[BaseRoute]:
    """The ``/review`` routes for the provider app (the review tables are migrated here), and
    the ``/memories`` routes over ``memory`` when the app has a memory engine."""
    ensure_review_schema(services.store)
    pages = ReviewPages(services, config or ReviewConfig(), memories=memory is not None)
    base = _pages.BASE
    table: list[tuple[str, Mapping[str, Handler]]] = [
        (base, {"GET": pages.home}),
        (f"{base}/signin", {"POST": pages.sign_in}),
        (f"{base}/link", {"GET": pages.link, "POST": pages.redeem}),
        (f"{base}/signout", {"POST": pages.sign_out}),
        (f"{base}/corrections/{{cid}}/{{action}}", {"POST": pages.decide}),
        (f"{base}/beliefs/{{bid}}", {"GET": pages.belief}),
        (f"{base}/{{rest:path}}", dict.fromkeys(_ANY_METHOD, pages.unknown)),
    ]
    # Every method reaches the endpoint, so a wrong one gets an HTML 405 page, not the JSON one.
    methods = [*_ANY_METHOD, "HEAD"]
    routes: list[BaseRoute] = [
        Route(path, endpoint(handlers), methods=methods) for path, handlers in table
    ]
    if memory is not None:
        # Imported only here: a provider without a memory engine never loads it.
        from engram.provider.review._memory_routes import memory_routes

        routes += memory_routes(pages, memory, methods=methods, any_method=_ANY_METHOD)
    return routes


__all__ = ["LANDINGS", "NOTICES", "ReviewPages", "Signed", "review_routes"]
