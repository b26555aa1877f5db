"""The OpenAPI 3.1 description of the provider, served at ``/openapi.json`` and checked in.

Built from data here (the routes are plain Starlette), so a test compares it with the checked-in
``openapi.json`` and with the app's route table: when either drifts, the test fails. Regenerate
with ``engram serve --print-openapi > openapi.json``.

The request side says what the server enforces (issue 15, found with schemathesis's
positive-data and negative-data checks and by reading the routes): the closed scope and status
registries, text without control characters that is not blank, the body as an I-JSON object
(RFC 7493: integers within +/-(2^53-1), no duplicate members), which bodies accept unknown
members (a correction: yes, a belief: no), optional members that may be null, the
``Engram-Version`` and ``Idempotency-Key`` headers, the size and media type of a body; and which
permission each operation needs. Request-body examples show both POSTs.
"""

from __future__ import annotations

from collections.abc import Sequence

from engram.context import CATEGORIES, CorrectionStatus, Permission
from engram.context.internals import ENGRAM_VERSION, SCOPES
from engram.core.canonical import Json, JsonObject
from engram.provider._config import ProviderConfig

MAX_SAFE_INTEGER = 2**53 - 1
# Text the domain accepts (engram.context._validate.text): no control characters except tab,
# and, once what str.strip() removes is gone, something left. The middle class is Python's
# whitespace spelled out (ECMA-262's \\s differs from it in U+0085 and U+FEFF).
_CONTROLS = "\\u0000-\\u0008\\u000a-\\u001f"
_SPACES = "\\u0000-\\u0020\\u0085\\u00a0\\u1680\\u2000-\\u200a\\u2028\\u2029\\u202f\\u205f\\u3000"
_TEXT_PATTERN = f"^[^{_CONTROLS}]*[^{_SPACES}][^{_CONTROLS}]*$"

_INSTANT: JsonObject = {"type": "string", "format": "date-time"}
_NULLABLE_INSTANT: JsonObject = {"type": ["string", "null"], "format": "date-time"}
_STR: JsonObject = {"type": "string"}
_NULLABLE_STR: JsonObject = {"type": ["string", "null"]}


def _ref(name: str) -> JsonObject:
    return {"$ref": f"#/components/schemas/{name}"}


def _text(max_length: int, description: str = "") -> JsonObject:
    schema: JsonObject = {
        "type": "string",
        "minLength": 1,
        "maxLength": max_length,
        "pattern": _TEXT_PATTERN,
    }
    note = (
        "Not blank; no control characters or line breaks (tab allowed); the limit counts the "
        "text without surrounding whitespace, which is removed."
    )
    schema["description"] = f"{description} {note}".strip()
    return schema


def _nullable(schema: JsonObject) -> JsonObject:
    return {"anyOf": [schema, {"type": "null"}]}


def _obj(props: JsonObject, required: list[str] | None = None) -> JsonObject:
    names: list[Json] = [*(sorted(props) if required is None else required)]
    return {"type": "object", "properties": props, "required": names}


def _schemas() -> JsonObject:
    issuer = _obj({"name": _STR, "url": _STR})
    envelope_head: JsonObject = {
        "engram_version": {"type": "string", "const": ENGRAM_VERSION},
        "issued_at": _INSTANT,
        "expires_at": _INSTANT,
        "kid": _STR,
        "issuer": issuer,
        "subject": _obj({"id": _STR, "display_name": _STR}),
        "scope": {"type": "string", "enum": [*sorted(SCOPES)]},
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
        "IJsonValue": {
            "description": "Any I-JSON value (RFC 7493): integers within +/-(2^53-1), no "
            "duplicate member names, no lone surrogates.",
            "anyOf": [
                {"type": ["string", "boolean", "null"]},
                {"type": "number", "minimum": -MAX_SAFE_INTEGER, "maximum": MAX_SAFE_INTEGER},
                {"type": "array", "items": _ref("IJsonValue")},
                {"type": "object", "additionalProperties": _ref("IJsonValue")},
            ],
        },
        "CorrectionRequest": {
            **_obj(
                {
                    "belief_id": _text(200, "The belief to correct (or a new id: a new belief)."),
                    "new_value": _text(2000, "The proposed statement."),
                    "runtime_id": _text(200, "Who proposes it (required, Engram v0.1 Tier 2)."),
                    "timestamp": _nullable(
                        {
                            **_INSTANT,
                            "description": "When the runtime saw the correction (default: "
                            "now); between 1970-01-01 and one day after the server's now.",
                        }
                    ),
                    "reason": _nullable(
                        {
                            "type": "string",
                            "maxLength": 2000,
                            "description": "A note for the subject.",
                        }
                    ),
                    "engram_version": {"type": "string", "const": ENGRAM_VERSION},
                },
                required=["belief_id", "new_value", "runtime_id"],
            ),
            # Other members are ignored (runtimes send more than the spec's minimum), but the
            # whole body must be I-JSON.
            "additionalProperties": _ref("IJsonValue"),
        },
        "BeliefRequest": {
            **_obj(
                {
                    "category": {"type": "string", "enum": list(CATEGORIES)},
                    "statement": _text(2000),
                    "confidence": {
                        "type": "number",
                        "minimum": 0,
                        "maximum": 1,
                        "description": "Default 0.8.",
                    },
                    "source": _nullable(
                        {
                            "anyOf": [{"type": "string", "const": ""}, _text(100)],
                            "description": "Where it comes from; empty or null: admin_api.",
                        }
                    ),
                    "engram_version": {"type": "string", "const": ENGRAM_VERSION},
                },
                required=["category", "statement"],
            ),
            "additionalProperties": False,
        },
    }


def _json(schema: str, description: str) -> JsonObject:
    return {"description": description, "content": {"application/json": {"schema": _ref(schema)}}}


def _errors(*statuses: int) -> JsonObject:
    always = {400, 429, 500, 503}
    return {
        str(s): _json("Error", "error (spec error shape)") for s in sorted(always | set(statuses))
    }


_EXAMPLES: dict[str, JsonObject] = {
    "CorrectionRequest": {
        "correct-a-belief": {
            "summary": "a runtime proposes a new value for a belief it was served",
            "value": {
                "belief_id": "8a0c1f52-3c55-4d2e-9a1b-6f0e2d7c4b11",
                "new_value": "Lives in Leeds and cycles to work.",
                "runtime_id": "my-assistant/1.4",
                "timestamp": "2026-01-01T09:30:00Z",
                "reason": "The user said they moved last month.",
            },
        },
        "checklist": {
            "summary": "the spec's self-certification checklist (an unknown id: a new belief)",
            "value": {
                "belief_id": "test",
                "new_value": "test",
                "runtime_id": "test",
                "timestamp": "2026-01-01T00:00:00Z",
            },
        },
    },
    "BeliefRequest": {
        "add-a-belief": {
            "summary": "the subject (or an admin) states a belief directly",
            "value": {
                "category": "preference",
                "statement": "Prefers concise answers with code examples in Python.",
                "confidence": 0.9,
                "source": "user",
            },
        }
    },
}

_BODY_NOTE = (
    "An I-JSON object (RFC 7493), Content-Type application/json (or none), at most 65536 bytes "
    "(ENGRAM_MAX_BODY_BYTES); anything else is 400 invalid_request."
)


def _op(
    summary: str,
    ok: tuple[int, str],
    errors: tuple[int, ...],
    *,
    permission: Permission | None = None,
    params: list[Json] | None = None,
    body: str | None = None,
    examples: JsonObject | None = None,
) -> JsonObject:
    auth = permission is not None
    responses = _errors(*errors, *((401, 403, 404) if auth else ()))
    responses[str(ok[0])] = _json(ok[1], summary)
    if auth:
        responses["401"] = {
            **_json("Error", "no, unknown, revoked or expired token (spec error shape)"),
            "headers": {
                "WWW-Authenticate": {
                    "description": 'Bearer realm="engram" (RFC 6750; error="invalid_token" '
                    "when a token was presented)",
                    "schema": {"type": "string"},
                }
            },
        }
    op: JsonObject = {"summary": summary, "responses": responses}
    if permission is not None:
        alternative = "" if permission is Permission.ADMIN else " (or 'admin')"
        op["description"] = (
            f"Needs a bearer token with the {permission.value!r} permission{alternative}."
        )
    op["security"] = [{"bearer": []}] if auth else []
    parameters: list[Json] = [*(params or [])]
    if auth:
        parameters.append(_version_header())
    if body is not None:
        parameters.append(_idempotency_header())
        op["requestBody"] = {
            "required": True,
            "description": _BODY_NOTE,
            "content": {
                "application/json": {
                    "schema": _ref(body),
                    "examples": _EXAMPLES[body] if examples is None else examples,
                }
            },
        }
    if parameters:
        op["parameters"] = parameters
    return op


def _version_header() -> Json:
    return {
        "name": "Engram-Version",
        "in": "header",
        "required": False,
        "description": "The protocol version the client speaks; another one is 400 "
        "unsupported_version.",
        "schema": {"type": "string", "const": ENGRAM_VERSION},
    }


def _query(name: str, schema: JsonObject, required: bool = False) -> Json:
    return {"name": name, "in": "query", "required": required, "schema": schema}


def _path(name: str) -> Json:
    return {"name": name, "in": "path", "required": True, "schema": {"type": "string"}}


def _idempotency_header() -> Json:
    return {
        "name": "Idempotency-Key",
        "in": "header",
        "required": False,
        "description": "A retry with the same key and body within 24 h gets the first answer "
        "(Idempotent-Replayed: true); another body is 422 idempotency_conflict.",
        "schema": {
            "type": "string",
            "minLength": 1,
            "maxLength": 255,
            # What the server accepts (engram.store.idempotency: str.isprintable() of the value
            # as Starlette decodes header bytes, ISO-8859-1): visible ASCII and space, and
            # Latin-1 but for C1 controls, NO-BREAK SPACE and SOFT HYPHEN (issue 31: schemathesis
            # sent U+00A0, which the old range U+00A0-U+FFFF allowed and the server refused).
            "pattern": "^[\\u0020-\\u007e\\u00a1-\\u00ac\\u00ae-\\u00ff]+$",
        },
    }


def openapi_document(
    config: ProviderConfig | None = None,
    *,
    memory: bool = True,
    memory_kinds: Sequence[str] | None = None,
) -> JsonObject:
    """The OpenAPI document for a provider with ``config`` (its URL goes into ``servers``);
    ``memory``: with the memory REST API (served when the provider has a memory engine), whose
    ``kind`` lists ``memory_kinds`` (the served seat's) when given."""
    base = (config or ProviderConfig()).base_url
    schemas, paths = _schemas(), _paths()
    if memory:
        from engram.provider._openapi_memory import memory_paths, memory_schemas

        schemas.update(memory_schemas(memory_kinds))
        paths.update(memory_paths())
    return {
        "openapi": "3.1.0",
        "info": {
            "title": "engram context provider",
            "version": ENGRAM_VERSION,
            "description": "Engram v0.1 provider (Tier 3): signed, expiring context exports.",
        },
        "servers": [{"url": base}],
        "components": {
            "schemas": schemas,
            "securitySchemes": {"bearer": {"type": "http", "scheme": "bearer"}},
        },
        "paths": paths,
    }


def _paths() -> JsonObject:
    scope = _query("scope", {"type": "string", "enum": [*sorted(SCOPES)]})
    corrections_status = _query(
        "status", {"type": "string", "enum": [s.value for s in CorrectionStatus]}
    )
    read, correct, confirm, admin = (
        Permission.READ,
        Permission.CORRECT,
        Permission.CONFIRM,
        Permission.ADMIN,
    )
    return {
        "/healthz": {"get": _op("liveness", (200, "Health"), ())},
        "/.well-known/engram": {"get": _op("discovery document", (200, "Discovery"), ())},
        "/.well-known/engram-keys": {"get": _op("published signing keys", (200, "Keys"), ())},
        "/v1/context": {
            "get": _op(
                "signed context export", (200, "Export"), (), permission=read, params=[scope]
            )
        },
        "/v1/context/diff": {
            "get": _op(
                "signed changes since an instant",
                (200, "Diff"),
                (),
                permission=read,
                params=[_query("since", _INSTANT, required=True), scope],
            )
        },
        "/v1/context/correct": {
            "post": _op(
                "propose a correction (pending until the subject confirms)",
                (202, "Correction"),
                (409, 422),
                permission=correct,
                body="CorrectionRequest",
            )
        },
        "/v1/corrections": {
            "get": _op(
                "the subject's corrections",
                (200, "CorrectionList"),
                (),
                permission=confirm,
                params=[corrections_status],
            )
        },
        "/v1/corrections/{cid}": {
            "get": _op(
                "one correction",
                (200, "Correction"),
                (),
                permission=confirm,
                params=[_path("cid")],
            )
        },
        "/v1/corrections/{cid}/confirm": {
            "post": _op(
                "the subject confirms a pending correction",
                (200, "Correction"),
                (409, 422),
                permission=confirm,
                params=[_path("cid"), _idempotency_header()],
            )
        },
        "/v1/corrections/{cid}/reject": {
            "post": _op(
                "the subject rejects a pending correction",
                (200, "Correction"),
                (409, 422),
                permission=confirm,
                params=[_path("cid"), _idempotency_header()],
            )
        },
        "/v1/beliefs": {
            "get": _op("the subject's live beliefs", (200, "BeliefList"), (), permission=read),
            "post": _op(
                "add a belief (admin)",
                (201, "Belief"),
                (409, 422),
                permission=admin,
                body="BeliefRequest",
            ),
        },
        "/v1/beliefs/{bid}": {
            "delete": _op(
                "tombstone a belief (admin)",
                (200, "Tombstone"),
                (),
                permission=admin,
                params=[_path("bid")],
            )
        },
        "/v1/beliefs/{bid}/history": {
            "get": _op(
                "a belief's evolution history",
                (200, "BeliefHistory"),
                (),
                permission=read,
                params=[_path("bid")],
            )
        },
    }


__all__ = ["MAX_SAFE_INTEGER", "openapi_document"]
