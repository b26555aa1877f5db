"""The memory REST API's part of the OpenAPI document (docs/spec/memory-rest.md).

Added to :func:`engram.provider.openapi_document` when the provider serves a memory engine
(``engram serve`` with a seat); the routes (``_routes_memory``) validate every request body
against the schemas here, so the document and the server cannot disagree on a body. The limits
are the engine's own (``engram.memory``: 100,000 characters of text, 200 of an id) and the MCP
tools' (4,000 characters of query, 16 KiB of provenance).
"""

from __future__ import annotations

from collections.abc import Sequence

from engram.context import Permission
from engram.context.internals import ENGRAM_VERSION
from engram.core.canonical import Json, JsonObject
from engram.memory import MAX_MESSAGES
from engram.memory.internals import SUBJECT_ID_PATTERN
from engram.provider import _openapi as doc

MAX_MEMORY_BODY_BYTES = 512 * 1024
"""A memory request body: 100,000 characters of text are up to 400 KB of UTF-8."""
MAX_CONVERSATION_BODY_BYTES = 8 * 1024 * 1024
"""A conversation body: send a longer chat in parts with the same ``thread``."""
MAX_TEXT = 100_000  # engram.memory._engine.MAX_TEXT, stated in the schema
MAX_QUERY = 4_000
MAX_ID = 200
MAX_KIND = 64
MAX_REASON = 500  # engram.memory._lifecycle.MAX_REASON
MAX_PROVENANCE_BYTES = 16_384
MAX_K = 100
MAX_PAGE = 200  # engram.memory._listing.MAX_PAGE
LIST_STATES = ("all", "current")

# A memory's text may span lines (a procedure, a conversation turn): tab, LF and CR are allowed,
# other control characters are not (PostgreSQL cannot store U+0000 in text), and it is not blank.
_MEMORY_CONTROLS = "\\u0000-\\u0008\\u000b\\u000c\\u000e-\\u001f"
_MEMORY_TEXT_PATTERN = f"^[^{_MEMORY_CONTROLS}]*[^{doc._SPACES}][^{_MEMORY_CONTROLS}]*$"
_ID_PATTERN = doc._TEXT_PATTERN  # one spelling of "not blank, no controls"

_STR = doc._STR
_INSTANT = doc._INSTANT
_MEMORY_ID: JsonObject = {
    "type": "string",
    "minLength": 1,
    "maxLength": MAX_ID,
    "pattern": _ID_PATTERN,
    "description": "A memory id as the API gave it (mem: and 64 hex digits).",
}


def _memory_properties() -> JsonObject:
    return {
        "id": _STR,
        "ring": _STR,
        "ring_id": _STR,
        "kind": _STR,
        "text": _STR,
        "entities": {"type": "array", "items": _STR},
        "provenance": {"type": "object"},
        "thread": _STR,
        "seat_id": _STR,
        "tokens": {"type": "integer", "minimum": 0},
        "alpha": {"type": "number"},
        "beta": {"type": "number"},
        "mean": {"type": "number", "minimum": 0, "maximum": 1},
        "status": {"type": "string", "enum": ["candidate", "graduated", "held_import"]},
        "graduated_at": {"type": ["string", "null"]},
        "origin": _STR,
        "created_at": _STR,
    }


def _kind(kinds: Sequence[str] | None) -> JsonObject:
    if kinds is not None:  # the served seat's own list
        return {
            "type": "string",
            "enum": list(kinds),
            "description": "One of this seat's allowed_kinds.",
        }
    return {
        "type": "string",
        "minLength": 1,
        "maxLength": MAX_KIND,
        "description": "One of the seat's allowed_kinds (a provider lists its seat's here; the "
        "default seat: invariant, architecture, decision, known_process, procedure, incident, "
        "episode, fact); another is 400 invalid_request.",
    }


def memory_schemas(kinds: Sequence[str] | None = None) -> JsonObject:
    """The component schemas of the memory routes' bodies and answers; ``kinds``: the served
    seat's allowed_kinds (None: any kind name, as the checked-in document says)."""
    memory = _memory_properties()
    listed: JsonObject = {
        **memory,
        "state": {
            "type": "string",
            "description": "current, forgotten or superseded (a PAM import's own withdrawal "
            "reason otherwise).",
        },
        "withdrawn_at": {"type": ["string", "null"]},
    }
    return {
        "Memory": doc._obj(memory),
        "ListedMemory": doc._obj(listed),
        "MemoryPage": doc._obj(
            {
                "memories": {"type": "array", "items": doc._ref("ListedMemory")},
                "next_cursor": {
                    "type": ["string", "null"],
                    "description": "Pass as cursor for the next page; null on the last page.",
                },
            }
        ),
        "MemoryRecorded": doc._obj(
            {
                "memory": doc._ref("Memory"),
                "created": {
                    "type": "boolean",
                    "description": "false: the same words were already this subject's memory.",
                },
                "dense": _STR,
                "supersedes": _STR,
                "changed": {"type": "boolean"},
            },
            required=["memory", "created", "dense"],
        ),
        "MemorySearch": doc._obj(
            {
                "query": _STR,
                "hits": {
                    "type": "array",
                    "items": doc._obj(
                        {
                            "memory": doc._ref("Memory"),
                            "score": {"type": "number"},
                            "components": {
                                "type": "object",
                                "additionalProperties": {"type": "number"},
                            },
                        }
                    ),
                },
                "stages": {"type": "object", "additionalProperties": _STR},
                "degraded": {"type": "boolean"},
                "budget_tokens": {"type": "integer"},
                "used_tokens": {"type": "integer"},
            }
        ),
        "MemoryLifecycle": doc._obj(
            {
                "memory_id": _STR,
                "action": {"type": "string", "enum": ["forget", "restore", "erase"]},
                "changed": {
                    "type": "boolean",
                    "description": "false: it already was in that state (a repeat).",
                },
                "state": {"type": "string", "enum": ["active", "forgotten", "erased"]},
                "at": _STR,
            }
        ),
        "MemoryHistory": doc._obj(
            {
                "memory_id": _STR,
                "state": {
                    "type": "string",
                    "enum": ["active", "forgotten", "superseded", "erased"],
                },
                "history": {
                    "type": "array",
                    "items": doc._obj({"event": _STR, "at": _STR, "actor": _STR, "detail": _STR}),
                },
            }
        ),
        "MemoryRequest": {
            **doc._obj(
                {
                    "text": {
                        "type": "string",
                        "minLength": 1,
                        "maxLength": MAX_TEXT,
                        "pattern": _MEMORY_TEXT_PATTERN,
                        "description": "The memory: one self-contained fact, decision or "
                        "procedure. Not blank; tab and line breaks allowed, no other control "
                        "characters; kept as sent.",
                    },
                    "kind": _kind(kinds),
                    "thread": {
                        "type": "string",
                        "maxLength": MAX_ID,
                        "description": "Optional conversation or episode id.",
                    },
                    "provenance": {
                        "type": "object",
                        "additionalProperties": doc._ref("IJsonValue"),
                        "description": "Optional: where it came from (file, URL, speaker, …); "
                        f"at most {MAX_PROVENANCE_BYTES} bytes as RFC 8785 JSON.",
                    },
                    "supersedes": doc._nullable(
                        {
                            **_MEMORY_ID,
                            "description": "Optional id of this subject's memory that this one "
                            "replaces (the fact changed): search then serves this one, the old "
                            "one stays in its history.",
                        }
                    ),
                    "engram_version": {"type": "string", "const": ENGRAM_VERSION},
                },
                required=["text", "kind"],
            ),
            "additionalProperties": False,
        },
        "ConversationRequest": {
            **doc._obj(
                {
                    "messages": {
                        "type": "array",
                        "minItems": 1,
                        "maxItems": MAX_MESSAGES,
                        "items": doc._ref("ChatMessage"),
                        "description": "The chat in the OpenAI messages format, oldest first. "
                        "user and assistant turns become memories; system, developer and tool "
                        "messages are skipped (and counted). At most 8 MiB of text in all.",
                    },
                    "thread": {
                        "type": "string",
                        "minLength": 1,
                        "maxLength": MAX_ID,
                        "description": "The conversation's id. Default: derived from the first "
                        "turn, so re-sending or extending the same chat lands in the same "
                        "thread; give one when sending a long chat in parts.",
                    },
                    "kind": {
                        **_kind(kinds),
                        "description": "The kind of each turn's memory (default episode).",
                    },
                    "engram_version": {"type": "string", "const": ENGRAM_VERSION},
                },
                required=["messages"],
            ),
            "additionalProperties": False,
        },
        "ChatMessage": {
            "type": "object",
            "required": ["role"],
            "description": "One OpenAI chat message. Other members (tool_calls, ids) are "
            "accepted and ignored.",
            "properties": {
                "role": {
                    "type": "string",
                    "description": "user, assistant, system, developer or tool (LangChain's "
                    "human and ai too).",
                },
                "content": {
                    "type": ["string", "array", "null"],
                    "description": "The text, or a list of parts whose text parts are joined.",
                },
                "name": {"type": "string", "description": "The speaker (default: the role)."},
                "timestamp": {
                    "type": ["string", "number"],
                    "description": "When it was said: RFC 3339 / ISO 8601 (no offset: UTC) "
                    "or epoch seconds; created_at and create_time are read too.",
                },
            },
        },
        "ConversationRecorded": doc._obj(
            {
                "thread": _STR,
                "ring_id": _STR,
                "counts": {"type": "object", "additionalProperties": {"type": "integer"}},
                "messages": {
                    "type": "array",
                    "items": doc._obj(
                        {
                            "index": {"type": "integer"},
                            "status": _STR,
                            "memory_id": _STR,
                            "speaker": _STR,
                            "occurred_at": _STR,
                            "reason": _STR,
                        },
                        required=["index", "status"],
                    ),
                },
                "facts": {"type": "array", "items": doc._ref("MemoryRecorded")},
                "extraction": _STR,
                "dense": _STR,
            }
        ),
        "ForgetRequest": {
            **doc._obj(
                {
                    "reason": {
                        "type": "string",
                        "maxLength": MAX_REASON,
                        "description": "Why (kept in the memory's history until an erase).",
                    },
                    "engram_version": {"type": "string", "const": ENGRAM_VERSION},
                },
                required=[],
            ),
            "additionalProperties": False,
        },
    }


EXAMPLES: dict[str, JsonObject] = {
    "MemoryRequest": {
        "record-a-fact": {
            "summary": "an app records what a user said",
            "value": {
                "text": "Prefers train travel to flying for trips under five hours.",
                "kind": "decision",
                "thread": "chat-2026-03-01",
                "provenance": {"speaker": "user", "source": "chat"},
            },
        },
        "a-fact-changed": {
            "summary": "the user moved: the new memory supersedes the old one",
            "value": {
                "text": "Lives in Leeds since March 2026.",
                "kind": "decision",
                "supersedes": "mem:" + "3f" * 32,
            },
        },
    },
    "ConversationRequest": {
        "a-chat": {
            "summary": "an app sends a chat; each turn is remembered with speaker and time",
            "value": {
                "messages": [
                    {
                        "role": "user",
                        "name": "Ada",
                        "content": "I moved to Leeds last month.",
                        "timestamp": "2026-03-14T09:30:00Z",
                    },
                    {
                        "role": "assistant",
                        "content": "Noted: you live in Leeds now.",
                        "timestamp": "2026-03-14T09:30:05Z",
                    },
                ],
                "thread": "chat-2026-03-14",
            },
        }
    },
    "ForgetRequest": {
        "forget-with-a-reason": {
            "summary": "the user asked to forget it (restore brings it back)",
            "value": {"reason": "the user asked"},
        }
    },
}


def _subject_header() -> Json:
    return {
        "name": "Engram-Subject",
        "in": "header",
        "required": False,
        "description": "An admin token acts for this subject; any other token naming a subject "
        "not its own is 403 forbidden.",
        "schema": {"type": "string", "pattern": SUBJECT_ID_PATTERN},
    }


def _memory_op(
    summary: str,
    ok: tuple[int, str],
    errors: tuple[int, ...] = (),
    *,
    params: list[Json] | None = None,
    body: str | None = None,
    body_required: bool = True,
    body_bytes: int = MAX_MEMORY_BODY_BYTES,
) -> JsonObject:
    op = doc._op(
        summary,
        ok,
        errors,
        permission=Permission.MEMORY,
        params=[*(params or []), _subject_header()],
        body=body,
        examples=EXAMPLES.get(body or ""),
    )
    if body is not None:
        request = op["requestBody"]
        assert isinstance(request, dict)
        request["required"] = body_required
        request["description"] = (
            "An I-JSON object (RFC 7493), Content-Type application/json (or none), at most "
            f"{body_bytes} bytes, validated against this schema; anything else is "
            "400 invalid_request."
        )
    return op


def memory_paths() -> JsonObject:
    """The memory routes (``/v1/memories...``), the conversation route among them."""
    mid: Json = {"name": "mid", "in": "path", "required": True, "schema": _MEMORY_ID}
    query = doc._query
    page = [
        query(
            "limit",
            {"type": "integer", "minimum": 1, "maximum": MAX_PAGE, "description": "Default 50."},
        ),
        query(
            "cursor",
            {
                "type": "string",
                "pattern": "^[0-9]{1,19}$",
                "description": "The next_cursor of the previous page, as it was given.",
            },
        ),
        query(
            "state",
            {
                "type": "string",
                "enum": list(LIST_STATES),
                "description": "all (default): forgotten and superseded memories too, each "
                "with its state; current: only what search serves.",
            },
        ),
    ]
    search = [
        query(
            "q",
            {"type": "string", "minLength": 1, "maxLength": MAX_QUERY, "pattern": _ID_PATTERN},
            required=True,
        ),
        query(
            "k",
            {"type": "integer", "minimum": 1, "maximum": MAX_K, "description": "Default 10."},
        ),
        query(
            "as_of",
            {
                **_INSTANT,
                "description": "Answer from what was current at this RFC 3339 instant: before "
                "the first memory, nothing; in the future, what is current.",
            },
        ),
    ]
    record = _memory_op(
        "record a memory (201; 200 when the same words were already recorded)",
        (201, "MemoryRecorded"),
        (409, 422),
        body="MemoryRequest",
    )
    responses = record["responses"]
    assert isinstance(responses, dict)
    responses["200"] = doc._json("MemoryRecorded", "the same words were already recorded")
    conversation = _memory_op(
        "record a conversation, one memory per turn (201; 200 when every turn was a duplicate)",
        (201, "ConversationRecorded"),
        (409, 422),
        body="ConversationRequest",
        body_bytes=MAX_CONVERSATION_BODY_BYTES,
    )
    answers = conversation["responses"]
    assert isinstance(answers, dict)
    answers["200"] = doc._json("ConversationRecorded", "every turn was already remembered")
    return {
        "/v1/memories": {
            "get": _memory_op(
                "the subject's memories, newest first", (200, "MemoryPage"), params=page
            ),
            "post": record,
        },
        "/v1/memories/search": {
            "get": _memory_op(
                "hybrid recall over the subject's memories and the seat's shared rings",
                (200, "MemorySearch"),
                params=search,
            )
        },
        "/v1/memories/conversations": {
            "post": conversation,
        },
        "/v1/memories/{mid}": {
            "get": _memory_op("one memory", (200, "Memory"), params=[mid]),
            "delete": _memory_op(
                "erase a memory for good (the words leave the database and the index)",
                (200, "MemoryLifecycle"),
                params=[mid],
            ),
        },
        "/v1/memories/{mid}/forget": {
            "post": _memory_op(
                "forget a memory (out of search; restore brings it back)",
                (200, "MemoryLifecycle"),
                (409, 422),
                params=[mid],
                body="ForgetRequest",
                body_required=False,
            )
        },
        "/v1/memories/{mid}/restore": {
            "post": _memory_op(
                "serve a forgotten memory again",
                (200, "MemoryLifecycle"),
                (409, 422),
                params=[mid, doc._idempotency_header()],
            )
        },
        "/v1/memories/{mid}/history": {
            "get": _memory_op(
                "a memory's history: recorded, superseded, forgotten, restored, erased",
                (200, "MemoryHistory"),
                params=[mid],
            )
        },
    }


__all__ = [
    "LIST_STATES",
    "MAX_CONVERSATION_BODY_BYTES",
    "MAX_MEMORY_BODY_BYTES",
    "memory_paths",
    "memory_schemas",
]
