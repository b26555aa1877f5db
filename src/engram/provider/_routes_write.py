"""Write routes: corrections (Engram v0.1 Tier 2) and the subject's belief administration.

- ``POST /v1/context/correct`` (``correct``): record a pending correction; ``202`` with
  ``status: "pending_user_confirmation"``. ``runtime_id`` is required.
- ``GET /v1/corrections[?status=]``, ``GET /v1/corrections/{id}`` (``confirm``).
- ``POST /v1/corrections/{id}/confirm`` | ``/reject`` (``confirm``): the subject decides.
- ``GET /v1/beliefs``, ``GET /v1/beliefs/{id}/history`` (``read``).
- ``POST /v1/beliefs``, ``DELETE /v1/beliefs/{id}`` (``admin``): add, tombstone.

Every POST honours ``Idempotency-Key`` (``docs/spec/context-provider.md``).
"""

from __future__ import annotations

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import Response

from engram.context import (
    CorrectionStatus,
    add_belief,
    belief_history,
    confirm_correction,
    delete_belief,
    get_correction,
    list_beliefs,
    list_corrections,
    propose_correction,
    reject_correction,
)
from engram.context.internals import ENGRAM_VERSION, TokenGrant, check_confidence
from engram.core.canonical import Json, JsonObject
from engram.core.clock import parse_instant
from engram.errors import InvalidRequest, UnsupportedVersion
from engram.provider._services import Services, grant_of
from engram.provider._wire import check_version_header, json_object, json_response
from engram.store import Tx

_BELIEF_FIELDS = {"category", "statement", "confidence", "source"}


def _services(request: Request) -> Services:
    services: Services = request.app.state.services
    return services


def _optional(body: JsonObject, name: str) -> str | None:
    value = body.get(name)
    if value is None:
        return None
    if not isinstance(value, str):
        raise InvalidRequest(f"{name} must be a string")
    return value


def _required(body: JsonObject, name: str) -> str:
    value = _optional(body, name)
    if value is None:
        raise InvalidRequest(f"{name} is required")
    return value


def _check_body_version(body: JsonObject) -> None:
    version = body.get("engram_version")
    if version is not None and version != ENGRAM_VERSION:
        raise UnsupportedVersion(f"engram_version {version!r} not supported; use 0.1")


async def _prelude(request: Request, with_body: bool) -> tuple[Services, TokenGrant, JsonObject]:
    check_version_header(request)
    services = _services(request)
    grant = grant_of(request)  # AuthGuard checked the route's permission
    body = await json_object(request, services.config.max_body_bytes) if with_body else {}
    _check_body_version(body)
    return services, grant, body


async def post_correct(request: Request) -> Response:
    services, grant, body = await _prelude(request, with_body=True)
    # runtime_id is checked first: the spec makes it the one mandatory member (Tier 2).
    runtime_id = _required(body, "runtime_id")
    belief_id = _required(body, "belief_id")
    new_value = _required(body, "new_value")
    stamp = _optional(body, "timestamp")
    reason = _optional(body, "reason") or ""
    timestamp = None if stamp is None else parse_instant(stamp)

    def handle(tx: Tx | None) -> tuple[int, Json]:
        correction = propose_correction(
            services.store,
            services.clock,
            grant.subject_id,
            belief_id,
            new_value,
            runtime_id,
            timestamp,
            reason,
            tx=tx,
        )
        return 202, {**correction.to_wire(), "correction_id": correction.id}

    return await run_in_threadpool(services.idempotent, request, grant, body, handle)


def list_corrections_route(request: Request) -> Response:
    services = _services(request)
    check_version_header(request)
    grant = grant_of(request)
    wanted = request.query_params.get("status")
    try:
        status = None if wanted is None else CorrectionStatus(wanted)
    except ValueError as e:
        names = ", ".join(s.value for s in CorrectionStatus)
        raise InvalidRequest(f"status must be one of {names}") from e
    items = list_corrections(services.store, grant.subject_id, status)
    return json_response({"corrections": [c.to_wire() for c in items]})


def get_correction_route(request: Request) -> Response:
    services = _services(request)
    check_version_header(request)
    grant = grant_of(request)
    correction = get_correction(services.store, grant.subject_id, request.path_params["cid"])
    return json_response(correction.to_wire())


async def _decide(request: Request, confirm: bool) -> Response:
    services, grant, _ = await _prelude(request, with_body=False)
    cid: str = request.path_params["cid"]

    def handle(tx: Tx | None) -> tuple[int, Json]:
        decide = confirm_correction if confirm else reject_correction
        return 200, decide(services.store, services.clock, grant.subject_id, cid, tx=tx).to_wire()

    return await run_in_threadpool(services.idempotent, request, grant, {"id": cid}, handle)


async def confirm_route(request: Request) -> Response:
    return await _decide(request, confirm=True)


async def reject_route(request: Request) -> Response:
    return await _decide(request, confirm=False)


def list_beliefs_route(request: Request) -> Response:
    services = _services(request)
    check_version_header(request)
    grant = grant_of(request)
    beliefs = list_beliefs(services.store, grant.subject_id)
    return json_response({"beliefs": [b.to_wire() for b in beliefs]})


def belief_history_route(request: Request) -> Response:
    services = _services(request)
    check_version_header(request)
    grant = grant_of(request)
    bid: str = request.path_params["bid"]
    history = belief_history(services.store, grant.subject_id, bid)
    return json_response({"belief_id": bid, "history": [e.to_wire() for e in history]})


async def post_belief(request: Request) -> Response:
    services, grant, body = await _prelude(request, with_body=True)
    unknown = set(body) - _BELIEF_FIELDS - {"engram_version"}
    if unknown:
        raise InvalidRequest("unknown fields: " + ", ".join(sorted(unknown)))
    category = _required(body, "category")
    statement = _required(body, "statement")
    source = _optional(body, "source") or "admin_api"
    confidence = check_confidence(body.get("confidence", 0.8))  # a number in [0, 1]

    def handle(tx: Tx | None) -> tuple[int, Json]:
        belief = add_belief(
            services.store,
            services.clock,
            grant.subject_id,
            category,
            statement,
            confidence,
            source,
            tx=tx,
        )
        return 201, belief.to_wire()

    return await run_in_threadpool(services.idempotent, request, grant, body, handle)


def delete_belief_route(request: Request) -> Response:
    services = _services(request)
    check_version_header(request)
    grant = grant_of(request)
    tombstone = delete_belief(
        services.store, services.clock, grant.subject_id, request.path_params["bid"]
    )
    return json_response(tombstone.tombstone_wire())


__all__ = [
    "belief_history_route",
    "confirm_route",
    "delete_belief_route",
    "get_correction_route",
    "list_beliefs_route",
    "list_corrections_route",
    "post_belief",
    "post_correct",
    "reject_route",
]
