"""The memory REST API: a subject's memories over HTTP (docs/spec/memory-rest.md).

Beyond Engram v0.1 (issue 29). Mounted by :func:`engram.provider.create_app` when it is given a
memory engine (``engram serve`` with a seat, the engine ``/mcp`` serves). Each route is a thin
adapter over one function of ``engram.memory`` (``engram.transfer`` for erase), acting for one
subject through :func:`engram.memory.subject_view`:

- ``GET /v1/memories[?limit=&cursor=&state=]``: :func:`~engram.memory.list_memories`, the
  subject's own memories newest first.
- ``GET /v1/memories/search?q=[&k=&as_of=]``: :func:`~engram.memory.recall`.
- ``POST /v1/memories``: :func:`~engram.memory.record`, or :func:`~engram.memory.supersede`
  with ``supersedes``.
- ``POST /v1/memories/conversations``: :func:`~engram.memory.record_conversation`, a chat in
  the OpenAI messages format, one memory per turn with its speaker and time (the turns are the
  memories: fact extraction needs a model, which the CLI's ``record --from`` offers).
- ``GET /v1/memories/{id}``: :func:`~engram.memory.get_memory`.
- ``POST /v1/memories/{id}/forget`` | ``/restore``: :func:`~engram.memory.forget`,
  :func:`~engram.memory.restore`.
- ``DELETE /v1/memories/{id}``: :func:`engram.transfer.erase_memories`.
- ``GET /v1/memories/{id}/history``: :func:`~engram.memory.history`.

Every route needs the ``memory`` permission and acts for the token's own subject; an ``admin`` token
may name another in ``Engram-Subject`` (:func:`engram.memory.internals.http_caller`, the rule /mcp
uses). Another subject's memory is ``not_found`` worded as an id that never existed. Request bodies
are checked for shape (``engram.core.bounds``) and validated against the served OpenAPI schemas
before any domain call; POSTs honour ``Idempotency-Key``.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Awaitable, Callable
from datetime import datetime
from typing import TYPE_CHECKING, Any

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import request_response
from starlette.types import ASGIApp

from engram.context import Permission, get_subject
from engram.context.internals import ENGRAM_VERSION
from engram.core.bounds import check_shape
from engram.core.canonical import Json, JsonObject, canonicalize
from engram.core.clock import parse_instant
from engram.errors import InputError, InvalidRequest, ResourceNotFound, UnsupportedVersion
from engram.memory import (
    MemoryEngine,
    RecordInput,
    forget,
    get_memory,
    history,
    list_memories,
    recall,
    record_conversation,
    record_many,
    restore,
    subject_view,
    supersede,
)
from engram.memory.internals import SUBJECT_HEADER, Caller, http_caller
from engram.provider._auth import AuthGuard
from engram.provider._openapi import _TEXT_PATTERN
from engram.provider._openapi_memory import (
    LIST_STATES,
    MAX_CONVERSATION_BODY_BYTES,
    MAX_ID,
    MAX_K,
    MAX_MEMORY_BODY_BYTES,
    MAX_PAGE,
    MAX_PROVENANCE_BYTES,
    MAX_QUERY,
)
from engram.provider._routes_read import _plus_restored
from engram.provider._services import Services, grant_of
from engram.provider._wire import check_version_header, json_object, json_response
from engram.transfer import erase_memories

if TYPE_CHECKING:
    import jsonschema
    import jsonschema.protocols

_PRIVATE = {"Cache-Control": "no-store"}
_NOT_BLANK = re.compile(_TEXT_PATTERN)  # the documented pattern of ids and queries
_INTEGER = re.compile(r"^-?[0-9]{1,9}$")
MAX_INSTANT_CHARS = 64


@functools.cache
def _validator(schema: str) -> jsonschema.protocols.Validator:
    """A validator of one request-body schema of the served document (built once)."""
    from jsonschema import Draft202012Validator
    from referencing import Registry, Resource
    from referencing.jsonschema import DRAFT202012

    from engram.provider._openapi import openapi_document

    root = "urn:engram:openapi"
    registry: Registry[Any] = Registry().with_resource(
        root, Resource.from_contents(openapi_document(), default_specification=DRAFT202012)
    )
    ref = {"$ref": f"{root}#/components/schemas/{schema}"}
    return Draft202012Validator(ref, registry=registry)


def _problem(error: jsonschema.ValidationError) -> str:
    """One line naming the member and the rule it broke, never echoing a long value."""
    where = "/".join(str(p) for p in error.absolute_path) or "request body"
    keyword, limit = error.validator, error.validator_value
    if keyword == "additionalProperties" and isinstance(error.instance, dict):
        known = error.schema.get("properties", {}) if isinstance(error.schema, dict) else {}
        unknown = sorted(str(k) for k in error.instance if k not in known)
        return f"{where}: unknown member {unknown[0][:80]!r}" if unknown else where
    if keyword == "required":
        return f"{where}: {error.message[:200]}"
    rules = {
        "type": f"expected {limit}",
        "minLength": f"at least {limit} character(s)",
        "maxLength": f"at most {limit} characters",
        "pattern": "must not be blank or hold control characters",
        "const": f"must be {limit!r}",
    }
    return f"{where}: {rules.get(str(keyword), 'not a valid value')}"


def _checked_body(body: JsonObject, schema: str) -> JsonObject:
    version = body.get("engram_version")
    if version is not None and version != ENGRAM_VERSION:
        raise UnsupportedVersion(f"engram_version {version!r} not supported; use 0.1")
    check_shape(body, "request body")  # before the recursive validator (docs/spec/limits.md)
    from jsonschema.exceptions import best_match

    error = best_match(_validator(schema).iter_errors(body))
    if error is not None:
        raise InvalidRequest(_problem(error))
    return body


def _memory_id(request: Request) -> str:
    value: str = request.path_params["mid"]
    if len(value) > MAX_ID or not _NOT_BLANK.fullmatch(value):
        raise InvalidRequest(f"memory id: expected an id such as mem:…, got {value[:80]!r}")
    return value


def _integer(request: Request, name: str, default: int, highest: int) -> int:
    text = request.query_params.get(name)
    if text is None:
        return default
    if not _INTEGER.fullmatch(text) or not 1 <= int(text) <= highest:
        raise InvalidRequest(f"{name}: expected an integer from 1 to {highest}")
    return int(text)


def _text_param(request: Request, name: str, limit: int) -> str:
    text = request.query_params.get(name)
    if text is None:
        raise InvalidRequest(f"the {name} query parameter is required")
    if len(text) > limit or not _NOT_BLANK.fullmatch(text):
        raise InvalidRequest(
            f"{name}: at most {limit} characters, not blank, no control characters"
        )
    return text


def _instant(text: str) -> datetime:
    if len(text) > MAX_INSTANT_CHARS:
        raise InvalidRequest("as_of: expected an RFC 3339 instant")
    try:
        return parse_instant(_plus_restored(text))
    except InputError as e:
        raise InvalidRequest(f"as_of: {e.message}") from e


Endpoint = Callable[[Request], Awaitable[Response]]


class MemoryRoutes:
    """The memory routes over one engine (the seat's; each request acts for one subject)."""

    def __init__(self, engine: MemoryEngine) -> None:
        self.engine = engine

    def table(self) -> list[tuple[str, str, ASGIApp]]:
        """``(method, path, app)`` rows for the app's route table; ``search`` and
        ``conversations`` before ``{mid}``."""

        def guarded(endpoint: Endpoint) -> ASGIApp:
            return AuthGuard(request_response(endpoint), Permission.MEMORY)

        return [
            ("GET", "/v1/memories", guarded(self.list_route)),
            ("POST", "/v1/memories", guarded(self.record_route)),
            ("GET", "/v1/memories/search", guarded(self.search_route)),
            ("POST", "/v1/memories/conversations", guarded(self.conversation_route)),
            ("GET", "/v1/memories/{mid}", guarded(self.get_route)),
            ("DELETE", "/v1/memories/{mid}", guarded(self.erase_route)),
            ("POST", "/v1/memories/{mid}/forget", guarded(self.forget_route)),
            ("POST", "/v1/memories/{mid}/restore", guarded(self.restore_route)),
            ("GET", "/v1/memories/{mid}/history", guarded(self.history_route)),
        ]

    def _acting(self, request: Request, services: Services) -> tuple[MemoryEngine, Caller]:
        """The engine acting for this request's subject, and who acts (for the history)."""
        check_version_header(request)
        grant = grant_of(request)  # AuthGuard checked the memory permission
        caller = http_caller(
            grant.subject_id,
            grant.token_id,
            admin=grant.allows(Permission.ADMIN),
            named=request.headers.get(SUBJECT_HEADER),
        )
        if caller.subject != grant.subject_id:
            get_subject(services.store, caller.subject)  # a misspelt id is user_not_found
        return subject_view(self.engine, caller.subject), caller

    @staticmethod
    def _services(request: Request) -> Services:
        services: Services = request.app.state.services
        return services

    async def _read(self, request: Request, answer: Callable[[MemoryEngine], Json]) -> Response:
        services = self._services(request)
        engine, _ = await run_in_threadpool(self._acting, request, services)
        value = await run_in_threadpool(answer, engine)
        return json_response(value, headers=_PRIVATE)

    async def list_route(self, request: Request) -> Response:
        limit = _integer(request, "limit", 50, MAX_PAGE)
        cursor = request.query_params.get("cursor")
        state = request.query_params.get("state", "all")
        if state not in LIST_STATES:
            raise InvalidRequest(f"state: one of {', '.join(LIST_STATES)}")

        def answer(engine: MemoryEngine) -> Json:
            return list_memories(
                engine,
                limit=limit,
                cursor=cursor,
                own_only=True,
                include_withdrawn=state == "all",
            ).to_wire()

        return await self._read(request, answer)

    async def search_route(self, request: Request) -> Response:
        query = _text_param(request, "q", MAX_QUERY)
        k = _integer(request, "k", 10, MAX_K)
        as_of_text = request.query_params.get("as_of")
        as_of = None if as_of_text is None else _instant(as_of_text)

        def answer(engine: MemoryEngine) -> Json:
            return recall(engine, query, k, as_of=as_of).to_wire()

        return await self._read(request, answer)

    async def get_route(self, request: Request) -> Response:
        memory_id = _memory_id(request)

        def answer(engine: MemoryEngine) -> Json:
            memory = get_memory(engine, memory_id)
            if memory is None:
                raise ResourceNotFound(f"no memory {memory_id!r}")  # as lifecycle words it
            return memory.to_wire()

        return await self._read(request, answer)

    async def history_route(self, request: Request) -> Response:
        memory_id = _memory_id(request)
        return await self._read(request, lambda engine: history(engine, memory_id).to_wire())

    async def record_route(self, request: Request) -> Response:
        services = self._services(request)
        engine, caller = await run_in_threadpool(self._acting, request, services)
        body = _checked_body(await json_object(request, MAX_MEMORY_BODY_BYTES), "MemoryRequest")
        provenance = body.get("provenance") or {}
        assert isinstance(provenance, dict)
        if len(canonicalize(provenance)) > MAX_PROVENANCE_BYTES:
            raise InvalidRequest(f"provenance: at most {MAX_PROVENANCE_BYTES} bytes")
        item = RecordInput(
            text=str(body["text"]),
            kind=str(body["kind"]),
            provenance=provenance,
            thread=str(body.get("thread") or ""),
        )
        old = body.get("supersedes")

        def handle() -> tuple[int, Json]:
            if isinstance(old, str):
                replaced = supersede(engine, old, item, actor=caller.actor)
                return (201 if replaced.record.created else 200), replaced.to_wire()
            recorded = record_many(engine, [item])[0]
            return (201 if recorded.created else 200), recorded.to_wire()

        return await run_in_threadpool(
            services.idempotent_apart, request, caller.subject, body, handle
        )

    async def conversation_route(self, request: Request) -> Response:
        services = self._services(request)
        engine, caller = await run_in_threadpool(self._acting, request, services)
        raw = await json_object(request, MAX_CONVERSATION_BODY_BYTES)
        body = _checked_body(raw, "ConversationRequest")
        messages = body["messages"]
        assert isinstance(messages, list)  # the schema says so
        thread = body.get("thread")
        kind = str(body.get("kind") or "episode")

        def handle() -> tuple[int, Json]:
            result = record_conversation(
                engine, messages, thread=None if thread is None else str(thread), kind=kind
            )
            return (201 if result.count("recorded") else 200), result.to_wire()

        return await run_in_threadpool(
            services.idempotent_apart, request, caller.subject, body, handle
        )

    async def _lifecycle(
        self,
        request: Request,
        body: JsonObject,
        act: Callable[[MemoryEngine, str, Caller], Json],
    ) -> Response:
        services = self._services(request)
        memory_id = _memory_id(request)
        engine, caller = await run_in_threadpool(self._acting, request, services)
        return await run_in_threadpool(
            services.idempotent_apart,
            request,
            caller.subject,
            {**body, "memory_id": memory_id},
            lambda: (200, act(engine, memory_id, caller)),
        )

    async def forget_route(self, request: Request) -> Response:
        body = await json_object(request, MAX_MEMORY_BODY_BYTES, empty_is_object=True)
        body = _checked_body(body, "ForgetRequest")
        reason = str(body.get("reason", ""))

        def act(engine: MemoryEngine, memory_id: str, caller: Caller) -> Json:
            return forget(engine, [memory_id], actor=caller.actor, reason=reason)[0].to_wire()

        return await self._lifecycle(request, body, act)

    async def restore_route(self, request: Request) -> Response:
        def act(engine: MemoryEngine, memory_id: str, caller: Caller) -> Json:
            return restore(engine, [memory_id], actor=caller.actor)[0].to_wire()

        return await self._lifecycle(request, {}, act)

    async def erase_route(self, request: Request) -> Response:
        services = self._services(request)
        memory_id = _memory_id(request)
        engine, caller = await run_in_threadpool(self._acting, request, services)
        erased = await run_in_threadpool(erase_memories, engine, [memory_id], actor=caller.actor)
        return json_response(erased[0].to_wire())


__all__ = ["MemoryRoutes"]
