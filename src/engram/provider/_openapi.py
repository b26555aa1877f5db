"""The OpenAPI 3.1 description of the provider, served at ``/openapi.json`` and checked in.

Built from data here (the routes are plain Starlette), so a test compares it with the checked-in
``openapi.json`` and with the app's route table: when either drifts, the test fails. Regenerate
with ``engram serve --print-openapi > openapi.json``.
"""

from __future__ import annotations

from engram.context import CATEGORIES, ENGRAM_VERSION, SCOPES, CorrectionStatus
from engram.core.canonical import JsonValue
from engram.provider._config import ProviderConfig

_INSTANT: dict[str, JsonValue] = {"type": "string", "format": "date-time"}
_NULLABLE_INSTANT: dict[str, JsonValue] = {"type": ["string", "null"], "format": "date-time"}
_STR: dict[str, JsonValue] = {"type": "string"}
_NULLABLE_STR: dict[str, JsonValue] = {"type": ["string", "null"]}


def _ref(name: str) -> dict[str, JsonValue]:
    return {"$ref": f"#/components/schemas/{name}"}


def _obj(props: dict[str, JsonValue], required: list[str] | None = None) -> dict[str, JsonValue]:
    return {
        "type": "object",
        "properties": props,
        "required": sorted(props) if required is None else required,
    }


def _schemas() -> dict[str, JsonValue]:
    issuer = _obj({"name": _STR, "url": _STR})
    envelope_head: dict[str, JsonValue] = {
        "engram_version": {"type": "string", "const": ENGRAM_VERSION},
        "issued_at": _INSTANT,
        "expires_at": _INSTANT,
        "kid": _STR,
        "issuer": issuer,
        "subject": _obj({"id": _STR, "display_name": _STR}),
        "scope": {"type": "string", "enum": sorted(SCOPES)},
        "signature": _STR,
    }
    return {
        "Error": _obj(
            {
                "error": _obj(
                    {"code": _STR, "message": _STR, "status": {"type": "integer"}},
                )
            }
        ),
        "Belief": _obj(
            {
                "id": _STR,
                "category": {"type": "string", "enum": list(CATEGORIES)},
                "statement": _STR,
                "confidence": {"type": "number", "minimum": 0, "maximum": 1},
                "source": _STR,
                "created_at": _INSTANT,
                "updated_at": _INSTANT,
                "version": {"type": "integer", "minimum": 1},
            }
        ),
        "Tombstone": _obj(
            {
                "id": _STR,
                "deleted": {"type": "boolean", "const": True},
                "deleted_at": _INSTANT,
                "version": {"type": "integer"},
            }
        ),
        "Correction": _obj(
            {
                "id": _STR,
                "belief_id": _STR,
                "new_value": _STR,
                "reason": _STR,
                "runtime_id": _STR,
                "timestamp": _INSTANT,
                "received_at": _INSTANT,
                "status": {"type": "string", "enum": [s.value for s in CorrectionStatus]},
                "resolved_at": _NULLABLE_INSTANT,
                "applied_belief_id": _NULLABLE_STR,
            }
        ),
        "EvolutionEntry": _obj(
            {
                "belief_id": _STR,
                "version": {"type": "integer"},
                "change": {"type": "string", "enum": ["created", "corrected", "deleted"]},
                "previous": _NULLABLE_STR,
                "value": _NULLABLE_STR,
                "at": _INSTANT,
                "correction_id": _NULLABLE_STR,
                "runtime_id": _NULLABLE_STR,
            }
        ),
        "Export": _obj(
            {
                **envelope_head,
                "identity": _obj(
                    {
                        "display_name": _STR,
                        "timezone": _STR,
                        "created_at": _INSTANT,
                        "last_updated": _INSTANT,
                    }
                ),
                "beliefs": {"type": "array", "items": _ref("Belief")},
                "corrections": {"type": "array", "items": _ref("Correction")},
                "evolution": {"type": "array", "items": _ref("EvolutionEntry")},
                "system_prompt_injection": _STR,
            }
        ),
        "Diff": _obj(
            {
                **envelope_head,
                "since": _INSTANT,
                "until": _INSTANT,
                "changes": {"type": "array", "items": _ref("Belief")},
                "tombstones": {"type": "array", "items": _ref("Tombstone")},
            }
        ),
        "Discovery": _obj(
            {
                "engram_version": {"type": "string", "const": ENGRAM_VERSION},
                "issuer": issuer,
                "tier": {"type": "integer", "enum": [1, 2, 3]},
                "endpoints": {"type": "object", "additionalProperties": _STR},
                "keys_url": _STR,
                "scopes_supported": {"type": "array", "items": _STR},
                "signingKeys": {"type": "array", "items": {"type": "object"}},
            }
        ),
        "Key": _obj(
            {
                "kid": _STR,
                "alg": {"type": "string", "const": "Ed25519"},
                "public_key": _STR,
                "created_at": _INSTANT,
                "expires_at": _INSTANT,
            }
        ),
        "Keys": _obj({"keys": {"type": "array", "items": _ref("Key")}}),
        "Health": _obj({"status": {"type": "string", "const": "ok"}}),
        "BeliefList": _obj({"beliefs": {"type": "array", "items": _ref("Belief")}}),
        "CorrectionList": _obj({"corrections": {"type": "array", "items": _ref("Correction")}}),
        "BeliefHistory": _obj(
            {"belief_id": _STR, "history": {"type": "array", "items": _ref("EvolutionEntry")}}
        ),
        "CorrectionRequest": {
            **_obj(
                {
                    "belief_id": {"type": "string", "minLength": 1, "maxLength": 200},
                    "new_value": {"type": "string", "minLength": 1, "maxLength": 2000},
                    "runtime_id": {"type": "string", "minLength": 1, "maxLength": 200},
                    "timestamp": _INSTANT,
                    "reason": {"type": "string", "maxLength": 2000},
                },
                required=["belief_id", "new_value", "runtime_id"],
            )
        },
        "BeliefRequest": _obj(
            {
                "category": {"type": "string", "enum": list(CATEGORIES)},
                "statement": {"type": "string", "minLength": 1, "maxLength": 2000},
                "confidence": {"type": "number", "minimum": 0, "maximum": 1},
                "source": {"type": "string", "minLength": 1, "maxLength": 100},
            },
            required=["category", "statement"],
        ),
    }


def _json(schema: str, description: str) -> dict[str, JsonValue]:
    return {"description": description, "content": {"application/json": {"schema": _ref(schema)}}}


def _errors(*statuses: int) -> dict[str, JsonValue]:
    always = {400, 429, 500, 503}
    return {
        str(s): _json("Error", "error (spec error shape)") for s in sorted(always | set(statuses))
    }


def _op(
    summary: str,
    ok: tuple[int, str],
    errors: tuple[int, ...],
    *,
    auth: bool = True,
    params: list[JsonValue] | None = None,
    body: str | None = None,
) -> dict[str, JsonValue]:
    responses = _errors(*errors, *((401, 403, 404) if auth else ()))
    responses[str(ok[0])] = _json(ok[1], summary)
    op: dict[str, JsonValue] = {"summary": summary, "responses": responses}
    op["security"] = [{"bearer": []}] if auth else []
    parameters: list[JsonValue] = [*(params or [])]
    if body is not None:
        parameters.append(_idempotency_header())
        op["requestBody"] = {
            "required": True,
            "content": {"application/json": {"schema": _ref(body)}},
        }
    if parameters:
        op["parameters"] = parameters
    return op


def _query(name: str, schema: dict[str, JsonValue], required: bool = False) -> JsonValue:
    return {"name": name, "in": "query", "required": required, "schema": schema}


def _path(name: str) -> JsonValue:
    return {"name": name, "in": "path", "required": True, "schema": {"type": "string"}}


def _idempotency_header() -> JsonValue:
    return {
        "name": "Idempotency-Key",
        "in": "header",
        "required": False,
        "schema": {"type": "string", "minLength": 1, "maxLength": 255},
    }


def openapi_document(config: ProviderConfig | None = None) -> dict[str, JsonValue]:
    """The OpenAPI document for a provider with ``config`` (its URL goes into ``servers``)."""
    base = (config or ProviderConfig()).base_url
    scope = _query("scope", {"type": "string"})
    corrections_status = _query("status", {"type": "string"})
    return {
        "openapi": "3.1.0",
        "info": {
            "title": "engram context provider",
            "version": ENGRAM_VERSION,
            "description": "Engram v0.1 provider (Tier 3): signed, expiring context exports.",
        },
        "servers": [{"url": base}],
        "components": {
            "schemas": _schemas(),
            "securitySchemes": {"bearer": {"type": "http", "scheme": "bearer"}},
        },
        "paths": {
            "/healthz": {"get": _op("liveness", (200, "Health"), (), auth=False)},
            "/.well-known/engram": {
                "get": _op("discovery document", (200, "Discovery"), (), auth=False)
            },
            "/.well-known/engram-keys": {
                "get": _op("published signing keys", (200, "Keys"), (), auth=False)
            },
            "/v1/context": {
                "get": _op("signed context export", (200, "Export"), (), params=[scope])
            },
            "/v1/context/diff": {
                "get": _op(
                    "signed changes since an instant",
                    (200, "Diff"),
                    (),
                    params=[_query("since", _INSTANT, required=True), scope],
                )
            },
            "/v1/context/correct": {
                "post": _op(
                    "propose a correction (pending until the subject confirms)",
                    (202, "Correction"),
                    (409, 422),
                    body="CorrectionRequest",
                )
            },
            "/v1/corrections": {
                "get": _op(
                    "the subject's corrections",
                    (200, "CorrectionList"),
                    (),
                    params=[corrections_status],
                )
            },
            "/v1/corrections/{cid}": {
                "get": _op("one correction", (200, "Correction"), (), params=[_path("cid")])
            },
            "/v1/corrections/{cid}/confirm": {
                "post": _op(
                    "the subject confirms a pending correction",
                    (200, "Correction"),
                    (409, 422),
                    params=[_path("cid"), _idempotency_header()],
                )
            },
            "/v1/corrections/{cid}/reject": {
                "post": _op(
                    "the subject rejects a pending correction",
                    (200, "Correction"),
                    (409, 422),
                    params=[_path("cid"), _idempotency_header()],
                )
            },
            "/v1/beliefs": {
                "get": _op("the subject's live beliefs", (200, "BeliefList"), ()),
                "post": _op(
                    "add a belief (admin)", (201, "Belief"), (409, 422), body="BeliefRequest"
                ),
            },
            "/v1/beliefs/{bid}": {
                "delete": _op(
                    "tombstone a belief (admin)", (200, "Tombstone"), (), params=[_path("bid")]
                )
            },
            "/v1/beliefs/{bid}/history": {
                "get": _op(
                    "a belief's evolution history",
                    (200, "BeliefHistory"),
                    (),
                    params=[_path("bid")],
                )
            },
        },
    }


__all__ = ["openapi_document"]
