"""The ``/memories`` routes: what agents remember about the signed-in subject
(``docs/spec/review-page.md``, "Memories").

The same sign-in, sessions, CSRF checks, layout and error pages as ``/review`` (one session serves
both). Every handler acts through :func:`own_ring`: the engine acting for the signed-in subject
with only that subject's own ring mounted, so a list, a search, a history, a forget, a restore or
an erase can reach nothing else; another subject's memory id is ``not_found``, exactly as an id
that never existed. Each handler calls one domain function of ``engram.memory`` (or
``engram.transfer.erase_memories``) in Starlette's thread pool.
"""

from __future__ import annotations

import copy
import dataclasses
from collections.abc import Mapping, Sequence

from starlette.requests import Request
from starlette.responses import RedirectResponse, Response
from starlette.routing import BaseRoute, Route

from engram.errors import AuthError, InvalidRequest, TokenExpired
from engram.memory import (
    ListedMemory,
    Memory,
    MemoryEngine,
    MemoryHistory,
    forget,
    get_memory,
    history,
    list_memories,
    recall,
    restore,
    subject_ring_id,
    subject_view,
)
from engram.provider.review import _memory_pages as screens
from engram.provider.review._errors import Handler, Home, NotFoundPage, clear_cookie, cookie_names
from engram.provider.review._errors import endpoint as html_endpoint
from engram.provider.review._forms import check_same_origin, read_form
from engram.provider.review._html import Html, page
from engram.provider.review._pages import MEMORIES
from engram.provider.review._routes import ReviewPages, Signed
from engram.provider.review._sessions import check_csrf
from engram.transfer import erase_memories

PAGE_SIZE = 20
SEARCH_HITS = 20
MAX_QUERY = 500
MEMORIES_HOME = Home("memories", MEMORIES, "Back to your memories")

# Banners after a redirect: the query names one of these, so nothing the URL carries is echoed.
NOTICES: Mapping[str, str] = {
    "signed-in": "You are signed in.",
    "signed-out": "You are signed out.",
    "forgotten": "Forgotten. Agents no longer recall this memory; Restore brings it back.",
    "restored": "Restored. Agents recall this memory again.",
    "erased": "Erased. The memory's words are gone for good.",
}


def own_ring(engine: MemoryEngine, subject_id: str) -> MemoryEngine:
    """``engine`` acting for ``subject_id`` with only the subject's own ring mounted.

    :func:`engram.memory.subject_view` also mounts the shared rings (read-only): the page shows
    what agents remember about the person, so it narrows the view to their ring. The copy shares
    the engine's store, index and lock, as ``subject_view``'s own copy does."""
    view = subject_view(engine, subject_id)
    ring_id = subject_ring_id(subject_id)
    narrowed = copy.copy(view)
    mounts = tuple(m for m in view.spec.mounts if m.ring_id == ring_id)
    narrowed.spec = dataclasses.replace(view.spec, mounts=mounts)
    return narrowed


def page_actor(signed: Signed) -> str:
    """Who the history says acted: the session's token id (never the token), or the link."""
    token_id = signed.session.token_id
    return f"{screens.PAGE_ACTOR}token:{token_id}" if token_id else f"{screens.PAGE_ACTOR}link"


class MemoryPages:
    """The handlers, bound to the review page's sign-in and the provider's memory engine."""

    def __init__(self, review: ReviewPages, engine: MemoryEngine) -> None:
        self.review = review
        self.engine = engine

    def _show(self, request: Request, signed: Signed, title: str, body: Html) -> Response:
        notice = NOTICES.get(request.query_params.get("notice", ""))
        account = self.review.account(signed, MEMORIES)
        return page(title, body, section="memories", account=account, notice=notice)

    # -- GET /memories ------------------------------------------------------------------------

    def _listing(
        self, subject_id: str, query: str, cursor: str | None
    ) -> tuple[Sequence[ListedMemory], str | None]:
        view = own_ring(self.engine, subject_id)
        if query:
            hits = recall(view, query, SEARCH_HITS).hits
            return [ListedMemory(h.memory, screens.CURRENT, None) for h in hits], None
        try:
            listed = list_memories(view, limit=PAGE_SIZE, cursor=cursor, own_only=True)
        except InvalidRequest as e:  # the API's wording names next_cursor: say it for a reader
            raise InvalidRequest(
                "that link to older memories was not made by this page; start again from your "
                "newest memories"
            ) from e
        return listed.items, listed.next_cursor

    async def home(self, request: Request) -> Response:
        session_cookie = cookie_names(request)[0]
        if session_cookie not in request.cookies:
            notice = NOTICES.get(request.query_params.get("notice", ""))
            return self.review.sign_in_page(request, notice=notice, next_page=MEMORIES)
        try:
            signed = await self.review.signed_in(request)
        except AuthError as e:
            expired = isinstance(e, TokenExpired)
            response = self.review.sign_in_page(
                request,
                error="Your review session has expired; please sign in again." if expired else None,
                next_page=MEMORIES,
            )
            clear_cookie(request, response, session_cookie)
            return response
        query = request.query_params.get("q", "").strip()
        if len(query) > MAX_QUERY:
            raise InvalidRequest(f"a search has at most {MAX_QUERY} characters")
        cursor = request.query_params.get("cursor") or None
        items, next_cursor = await self.review.run(
            self._listing, signed.subject.id, query, None if query else cursor
        )
        body = screens.memory_list(
            signed.subject,
            items,
            signed.session.csrf_token,
            query=query,
            searched=bool(query),
            cursor=cursor,
            next_cursor=next_cursor,
        )
        return self._show(request, signed, "Your memories", body)

    # -- one memory ---------------------------------------------------------------------------

    def _story(self, subject_id: str, memory_id: str) -> tuple[Memory | None, MemoryHistory]:
        view = own_ring(self.engine, subject_id)
        story = history(view, memory_id)  # not_found unless the memory is (or was) in the ring
        return get_memory(view, memory_id), story

    async def _signed_or_home(self, request: Request) -> Signed | Response:
        if cookie_names(request)[0] not in request.cookies:
            return RedirectResponse(MEMORIES, status_code=303)
        return await self.review.signed_in(request)

    async def memory(self, request: Request) -> Response:
        signed = await self._signed_or_home(request)
        if isinstance(signed, Response):
            return signed
        mid = request.path_params["mid"]
        memory, story = await self.review.run(self._story, signed.subject.id, mid)
        body = screens.history_page(signed.subject, memory, story, signed.session.csrf_token)
        return self._show(request, signed, "History of a memory", body)

    async def erase_question(self, request: Request) -> Response:
        signed = await self._signed_or_home(request)
        if isinstance(signed, Response):
            return signed
        return await self._ask_before_erasing(request, signed, request.path_params["mid"])

    async def _ask_before_erasing(self, request: Request, signed: Signed, mid: str) -> Response:
        memory, story = await self.review.run(self._story, signed.subject.id, mid)
        if memory is None:  # already erased: its history says so
            return RedirectResponse(screens.memory_path(mid), status_code=303)
        csrf = signed.session.csrf_token
        body = screens.erase_confirmation(signed.subject, memory, story.state, csrf)
        return self._show(request, signed, "Erase a memory?", body)

    # -- forget, restore, erase ---------------------------------------------------------------

    async def erase(self, request: Request) -> Response:
        return await self._change(request, "erase")

    async def change(self, request: Request) -> Response:
        return await self._change(request, request.path_params["action"])

    async def _change(self, request: Request, action: str) -> Response:
        """Forget, restore or (after the second question) erase one memory; then a redirect."""
        form = await read_form(request)
        check_same_origin(request, self.review.services.config.base_url)
        signed = await self.review.signed_in(request)
        check_csrf(signed.secret, form.get("csrf_token"))
        mid = request.path_params["mid"]
        view_of = (self.engine, signed.subject.id)
        actor = page_actor(signed)
        if action == "forget":
            await self.review.run(lambda: forget(own_ring(*view_of), [mid], actor=actor))
            notice = "forgotten"
        elif action == "restore":
            await self.review.run(lambda: restore(own_ring(*view_of), [mid], actor=actor))
            notice = "restored"
        elif action == "erase":
            if form.get("confirm") != "erase":  # the second question was not answered
                return await self._ask_before_erasing(request, signed, mid)
            await self.review.run(lambda: erase_memories(own_ring(*view_of), [mid], actor=actor))
            return RedirectResponse(f"{MEMORIES}?notice=erased", status_code=303)
        else:
            raise NotFoundPage()
        if form.get("from") == "list":
            return RedirectResponse(f"{MEMORIES}?notice={notice}", status_code=303)
        return RedirectResponse(f"{screens.memory_path(mid)}?notice={notice}", status_code=303)

    async def unknown(self, request: Request) -> Response:
        if request.path_params.get("rest") == "" and request.method in ("GET", "HEAD"):
            return RedirectResponse(MEMORIES, status_code=308)
        raise NotFoundPage()


def memory_routes(
    review: ReviewPages,
    engine: MemoryEngine,
    *,
    methods: Sequence[str],
    any_method: Sequence[str],
) -> list[BaseRoute]:
    """The ``/memories`` routes, signed in through ``review``'s sessions."""
    pages = MemoryPages(review, engine)
    table: list[tuple[str, Mapping[str, Handler]]] = [
        (MEMORIES, {"GET": pages.home}),
        (f"{MEMORIES}/{{mid}}", {"GET": pages.memory}),
        (f"{MEMORIES}/{{mid}}/erase", {"GET": pages.erase_question, "POST": pages.erase}),
        (f"{MEMORIES}/{{mid}}/{{action}}", {"POST": pages.change}),
        (f"{MEMORIES}/{{rest:path}}", dict.fromkeys(any_method, pages.unknown)),
    ]
    return [
        Route(path, html_endpoint(handlers, MEMORIES_HOME), methods=list(methods))
        for path, handlers in table
    ]


__all__ = ["MEMORIES_HOME", "NOTICES", "MemoryPages", "memory_routes", "own_ring", "page_actor"]
