"""Portable AI Memory (PAM) 1.0 documents as bytes and rules: hashes, the integrity checksum,
instants, the Ed25519 signature and validation against the published schema.

Spec: Portable AI Memory (PAM) Specification v1.0 (portable-ai-memory.org/spec/v1.0): §6 content
hash normalisation, §15 the integrity checksum (RFC 8785 over the memories sorted by id), §18 the
signature (Ed25519 over the RFC 8785 bytes of ``{checksum, export_id, export_date, owner_id}``,
base64url), §4-§14 the memory object; the schema in ``_pam_schema/`` (copied unchanged from PyPI
``portable-ai-memory`` 1.0.0). Our decisions where the spec leaves room: docs/spec/pam.md.

A PAM writer and reader must agree on one spelling of each memory or the checksum differs. The
PAM SDK checksums what its models serialise: no ``null`` members, defaults written out
(``status``, ``tags``, the ``access`` members) and instants re-spelt (``Z`` for UTC, six
fractional digits or none). :func:`normal_memory` produces exactly that form, so what engram
writes validates with the SDK; :func:`checksum_matches` accepts the raw, null-free or normal
form of a document written by anyone else.
"""

from __future__ import annotations

import hashlib
import re
import unicodedata
from collections.abc import Iterable, Mapping, Sequence
from datetime import UTC, datetime, timedelta
from functools import cache
from importlib import resources

import jsonschema

from engram.core.bounds import check_shape
from engram.core.canonical import Json, JsonObject, canonicalize, parse_strict
from engram.errors import CanonicalJsonError, DigestMismatch, InvalidRequest, UnsupportedVersion
from engram.transfer import _wire as wire

SCHEMA_NAME = "portable-ai-memory"
SCHEMA_VERSION = "1.0"
SPEC_URI = "https://portable-ai-memory.org/spec/v1.0"
PAM_TYPES = frozenset(
    {
        "fact",
        "preference",
        "skill",
        "context",
        "relationship",
        "goal",
        "instruction",
        "identity",
        "environment",
        "project",
    }
)
SERVED_STATUSES = frozenset({"active", "deprecated"})  # the rest are kept, never recalled
TAG = re.compile(r"^[a-z0-9][a-z0-9_-]*$")
_INSTANT = re.compile(r"^(\d{4}-\d{2}-\d{2})[Tt](\d{2}:\d{2}:\d{2})(\.\d+)?([Zz]|[+-]\d{2}:\d{2})$")
_WHITESPACE = re.compile(r"\s+")
MAX_PROBLEMS = 5
MAX_MEMORIES = 50_000
"""Memories of a PAM document parsed whole (``import_pam``, ``check_document``; docs/spec/limits.md
§2). A file read a memory at a time (``import_pam_file``, what ``engram memory import`` calls)
has its own caps (``_pam_read.PamLimits``)."""
MAX_CONTENT_CHARS = 100_000
"""Characters of one memory's ``content``: a memory is a statement, not a file. The text engram
itself records is capped at the same 100,000 (``engram.memory``'s record cap), so every memory
engram exports imports again."""
MAX_ID_CHARS = 256
"""Characters of a memory's ``id`` (a UUID is 36)."""


# --- §6 content hash ---------------------------------------------------------------------


def normalize_content(content: str) -> str:
    """§6.1: trim, lower-case, NFC, collapse whitespace (the order the PAM SDK applies)."""
    text = unicodedata.normalize("NFC", content.strip().lower())
    return _WHITESPACE.sub(" ", text)


def content_hash(content: str) -> str:
    """§6.2: ``sha256:`` + hex SHA-256 of the UTF-8 normalised content."""
    return "sha256:" + hashlib.sha256(normalize_content(content).encode("utf-8")).hexdigest()


# --- instants ------------------------------------------------------------------------------


def parse_instant(text: Json, where: str) -> datetime:
    """An RFC 3339 date-time (the schema's ``date-time``) as an aware datetime, offset kept.

    Digits past microseconds are dropped, as every PAM implementation in Python does.
    """
    match = _INSTANT.match(text) if isinstance(text, str) else None
    if match is None:
        raise InvalidRequest(f"{where}: expected an RFC 3339 date-time, got {text!r}")
    day, clock, fraction, offset = match.groups()
    fraction = (fraction or "")[:7]
    offset = "+00:00" if offset in ("Z", "z") else offset
    try:
        return datetime.fromisoformat(f"{day}T{clock}{fraction}{offset}")
    except ValueError as e:
        raise InvalidRequest(f"{where}: not a valid date-time: {text!r}") from e


def format_instant(moment: datetime) -> str:
    """The spelling the PAM SDK writes: ``Z`` for UTC, otherwise the offset; six fractional
    digits when there are microseconds, none otherwise."""
    if type(moment) is datetime and moment.tzinfo is not None:
        # isoformat writes exactly that, but "+00:00" for "Z", when the offset is whole minutes
        # (25 or 32 characters: with no fraction, or six digits of one); the rest is spelt below.
        text = moment.isoformat()
        if len(text) == 25 or len(text) == 32:
            return text[:-6] + "Z" if text.endswith("+00:00") else text
    offset = moment.utcoffset()
    base = moment.replace(tzinfo=None).isoformat(timespec="seconds")
    if moment.microsecond:
        base += f".{moment.microsecond:06d}"
    if offset is None:
        return base
    if offset == timedelta(0):
        return base + "Z"
    sign = "-" if offset < timedelta(0) else "+"
    minutes = abs(int(offset.total_seconds())) // 60
    return f"{base}{sign}{minutes // 60:02d}:{minutes % 60:02d}"


# What format_instant writes, each field in its range: such a text is its own normal form.
_NORMAL_INSTANT = re.compile(
    r"[0-9]{4}-[0-9]{2}-[0-9]{2}T(?:[01][0-9]|2[0-3]):[0-5][0-9]:[0-5][0-9]"
    r"(?:\.(?!000000)[0-9]{6})?(?:Z|[+-](?!00:00)(?:[01][0-9]|2[0-3]):[0-5][0-9])"
)


def normal_instant(text: Json, where: str) -> str:
    """``text`` as format_instant spells it; refused as parse_instant refuses it."""
    moment = parse_instant(text, where)
    if isinstance(text, str) and _NORMAL_INSTANT.fullmatch(text):
        return text  # already so spelt (most are): the same text without writing it again
    return format_instant(moment)


def utc(moment: datetime) -> datetime:
    return moment.astimezone(UTC)


# --- the normal form and §15 integrity -----------------------------------------------------


# Values strip_nulls hands back as they are: kept without a call (a memory holds dozens).
_LEAVES = frozenset({str, int, float, bool})


def strip_nulls(value: Json) -> Json:
    """``value`` with every ``null`` member removed, at every depth (arrays keep their items)."""
    if isinstance(value, dict):
        return strip_object(value)
    if isinstance(value, list):
        return [v if type(v) in _LEAVES else strip_nulls(v) for v in value]
    return value


def strip_object(value: Mapping[str, Json]) -> JsonObject:
    """:func:`strip_nulls` for an object, typed as one."""
    return {
        k: v if type(v) in _LEAVES else strip_nulls(v) for k, v in value.items() if v is not None
    }


_INSTANT_MEMBERS: dict[str, tuple[str, ...]] = {
    "temporal": ("created_at", "updated_at", "valid_from", "valid_until"),
    "confidence": ("last_reinforced",),
    "provenance": ("extracted_at",),
}


def normal_memory(memory: Mapping[str, Json], where: str = "memory") -> JsonObject:
    """A memory object in the form the PAM SDK serialises (see the module docstring).

    ``metadata`` is the one open block: its own null members go, but the values of its
    extension members are kept exactly as they are (the SDK keeps nulls inside them).
    """
    metadata = memory.get("metadata")
    out: JsonObject = strip_object({k: v for k, v in memory.items() if k != "metadata"})
    if isinstance(metadata, dict):
        out["metadata"] = {k: v for k, v in metadata.items() if v is not None}
    out.setdefault("status", "active")
    out.setdefault("tags", [])
    for block, members in _INSTANT_MEMBERS.items():
        inner = out.get(block)
        if isinstance(inner, dict):
            for member in members:
                if member in inner:
                    inner[member] = normal_instant(inner[member], f"{where}.{block}.{member}")
    access = out.get("access")
    if isinstance(access, dict):
        access.setdefault("visibility", "private")
        access.setdefault("exportable", True)
        access.setdefault("shared_with", [])
    return out


def error_detail(error: CanonicalJsonError) -> str:
    """The parenthesised detail of ``error``'s message, to re-raise it at another position."""
    head = f"not I-JSON: {error.reason} at {error.position}"
    return error.message[len(head) + 2 : -1] if len(error.message) > len(head) else ""


def canonical_memory(memory: Mapping[str, Json], i: int) -> bytes:
    """The RFC 8785 bytes of the document's memory ``i``; a value that has none is refused at
    ``$.memories[i]...``, wherever the memory sorts and whichever reader (whole or streamed)
    meets it first, so both say the same words."""
    try:
        return canonicalize(memory)
    except CanonicalJsonError as e:
        where = f"$.memories[{i}]{str(e.position).removeprefix('$')}"
        raise CanonicalJsonError(e.reason, where, error_detail(e)) from None


def checksum(memories: Sequence[Mapping[str, Json]]) -> str:
    """§15.2: ``sha256:`` over the RFC 8785 bytes of the memories sorted by ``id`` (code points,
    as the PAM SDK and the spec's Appendix C sort): the bytes of the sorted array, written a
    member at a time (an array's canonical form is its members' joined by commas)."""
    ordered = sorted(enumerate(memories), key=lambda pair: str(pair[1].get("id", "")))
    digest = hashlib.sha256(b"[")
    for n, (i, memory) in enumerate(ordered):
        if n:
            digest.update(b",")
        digest.update(canonical_memory(memory, i))
    digest.update(b"]")
    return "sha256:" + digest.hexdigest()


def checksum_matches(memories: Sequence[Mapping[str, Json]], declared: str) -> bool:
    """The declared checksum covers the memories as written, without their nulls, or in the
    normal form: three spellings of the same content (null and absent mean the same in PAM)."""
    if checksum(memories) == declared:
        return True
    stripped = [strip_object(m) for m in memories]
    if checksum(stripped) == declared:
        return True
    try:
        normal = [normal_memory(m, f"memories[{i}]") for i, m in enumerate(memories)]
    except InvalidRequest:
        return False
    return checksum(normal) == declared


# --- validation ----------------------------------------------------------------------------


@cache
def _validator() -> jsonschema.Draft202012Validator:
    text = resources.files("engram.transfer").joinpath("_pam_schema/portable-ai-memory.schema.json")
    schema = parse_strict(text.read_bytes())
    assert isinstance(schema, dict)
    return jsonschema.Draft202012Validator(schema)


def validator() -> jsonschema.Draft202012Validator:
    """The PAM 1.0 schema, compiled once."""
    return _validator()


def error_path(parts: Iterable[str | int]) -> str:
    """A schema problem's JSON path as the refusal names it (``$.memories[3].content``)."""
    out = "$"
    for part in parts:
        out += f"[{part}]" if isinstance(part, int) else f".{part}"
    return out


def _path(error: jsonschema.ValidationError) -> str:
    return error_path(error.absolute_path)


def _check_caps(document: JsonObject) -> None:
    memories = document.get("memories")
    if not isinstance(memories, list):
        return  # the schema names it
    if len(memories) > MAX_MEMORIES:
        raise too_many_memories(MAX_MEMORIES)
    for i, memory in enumerate(memories):
        memory_caps(memory, i)


def check_header(document: Json) -> JsonObject:
    """The root is an object naming this format and a 1.x version; returned narrowed."""
    if not isinstance(document, dict):
        raise InvalidRequest("a PAM document is a JSON object")
    if document.get("schema") != SCHEMA_NAME:
        raise InvalidRequest(
            f"$.schema: expected {SCHEMA_NAME!r} (a PAM memory store), got "
            f"{document.get('schema')!r}"
        )
    version = document.get("schema_version")
    if not isinstance(version, str) or version.split(".", 1)[0] != "1":
        raise UnsupportedVersion(f"$.schema_version: engram reads PAM 1.x, got {version!r}")
    return document


def memory_caps(memory: Json, i: int) -> None:
    """The caps of one memory (its id, then its content), before the generic string cap."""
    if not isinstance(memory, dict):
        return
    ident, content = memory.get("id"), memory.get("content")
    if isinstance(ident, str) and len(ident) > MAX_ID_CHARS:
        raise InvalidRequest(f"$.memories[{i}].id: longer than {MAX_ID_CHARS} characters")
    if isinstance(content, str) and len(content) > MAX_CONTENT_CHARS:
        raise InvalidRequest(f"$.memories[{i}].content: longer than {MAX_CONTENT_CHARS} characters")


def too_many_memories(cap: int) -> InvalidRequest:
    return InvalidRequest(f"$.memories: more than {cap} memories in one document")


def schema_refusal(errors: Sequence[tuple[str, str]], total: int) -> InvalidRequest:
    """The refusal naming the first problems (``(path, message)``, in path order) of ``total``."""
    shown = "; ".join(f"{path}: {message}" for path, message in errors[:MAX_PROBLEMS])
    more = f" (and {total - MAX_PROBLEMS} more)" if total > MAX_PROBLEMS else ""
    return InvalidRequest(f"not a valid PAM 1.0 document: {shown}{more}")


def check_schema(document: Json) -> JsonObject:
    """The document against the PAM 1.0 schema; the first problems named by JSON path.

    Returns the document, narrowed to the object it now is known to be."""
    document = check_header(document)
    _check_caps(document)  # before the generic string cap, so the message names the field
    check_shape(document, "the PAM document")
    validator = _validator()
    if validator.is_valid(document):  # the common case, without collecting every error
        return document
    errors = sorted(validator.iter_errors(document), key=lambda e: list(e.absolute_path))
    if errors:
        raise schema_refusal([(_path(e), e.message) for e in errors[:MAX_PROBLEMS]], len(errors))
    return document  # pragma: no cover - is_valid is False only when there are errors


def head_instants(document: JsonObject) -> Iterable[tuple[str, Json]]:
    """The instants of the root and its owner, the first the reader checks."""
    for member in ("export_date", "since"):
        if document.get(member) is not None:
            yield member, document[member]
    owner = wire.block(document, "owner")
    if owner.get("created_at") is not None:
        yield "owner.created_at", owner["created_at"]


def memory_instants(memory: JsonObject, i: int) -> Iterable[tuple[str, Json]]:
    for block, members in _INSTANT_MEMBERS.items():
        inner = wire.block(memory, block, f"memories[{i}].")
        for member in members:
            if inner.get(member) is not None:
                yield f"memories[{i}].{block}.{member}", inner[member]


def tail_instants(document: JsonObject) -> Iterable[tuple[str, Json]]:
    """The instants after the memories: relations, conversations, the signature."""
    for i, r in enumerate(wire.objects(document.get("relations"), "relations")):
        yield f"relations[{i}].created_at", r.get("created_at")
    conversations = wire.objects(document.get("conversations_index"), "conversations_index")
    for i, c in enumerate(conversations):
        temporal = wire.block(c, "temporal", f"conversations_index[{i}].")
        for member in ("created_at", "updated_at"):
            value = temporal.get(member)
            if value is not None:
                yield f"conversations_index[{i}].temporal.{member}", value
    signature = document.get("signature")
    if isinstance(signature, dict):
        yield "signature.signed_at", signature.get("signed_at")


def _instants(document: JsonObject) -> Iterable[tuple[str, Json]]:
    yield from head_instants(document)
    for i, m in enumerate(wire.objects(document.get("memories"), "memories")):
        yield from memory_instants(m, i)
    yield from tail_instants(document)


def unique_ids(items: Iterable[JsonObject], what: str) -> set[str]:
    seen: set[str] = set()
    for item in items:
        ident = wire.text(item.get("id"), f"{what} id")
        if ident in seen:
            raise InvalidRequest(f"two {what} share the id {ident!r}")
        seen.add(ident)
    return seen


def check_document(document: Json, known_memory_ids: Iterable[str] = ()) -> None:
    """Everything a reader checks before it imports a byte of ``document``.

    The schema; every instant; unique ids; each memory's content hash (§6); the integrity block
    (§15.4); cross references (relations, ``superseded_by``, ``derived_memories`` and
    ``conversation_ref``, which may also name memories the store already holds, for incremental
    documents); created ≤ updated and valid_from ≤ valid_until. The signature is checked by
    :func:`verify_signature`, which the importer calls when one is present.
    """
    _check_contents(check_schema(document), known_memory_ids)


def check_contents(document: JsonObject, known_memory_ids: Iterable[str] = ()) -> None:
    """:func:`check_document` for a document that already passed :func:`check_schema`."""
    _check_contents(document, known_memory_ids)


def _check_contents(doc: JsonObject, known_memory_ids: Iterable[str]) -> None:
    for where, value in _instants(doc):
        parse_instant(value, where)
    memories = wire.objects(doc["memories"], "memories")
    relations = wire.objects(doc.get("relations"), "relations")
    conversations_index = wire.objects(doc.get("conversations_index"), "conversations_index")
    ids = unique_ids(memories, "memories")
    unique_ids(relations, "relations")
    conversations = unique_ids(conversations_index, "conversations")
    for i, m in enumerate(memories):
        check_memory_content(m, i)
    integrity = doc.get("integrity")
    if isinstance(integrity, dict):
        check_total(integrity, len(memories))
        if not checksum_matches(memories, wire.text(integrity["checksum"], "integrity.checksum")):
            raise checksum_refusal()
    check_references(
        relations,
        (memory_references(m, i) for i, m in enumerate(memories)),
        conversations_index,
        ids | set(known_memory_ids),
        conversations,
    )


def check_memory_content(m: JsonObject, i: int) -> None:
    """§6: the content hash; created ≤ updated; valid_from ≤ valid_until."""
    ident = m["id"]
    if content_hash(wire.text(m["content"], f"memories[{i}].content")) != m["content_hash"]:
        raise DigestMismatch(
            f"memories[{i}] ({ident}): content_hash is not the §6 hash of its content"
        )
    temporal = wire.obj(m["temporal"], f"memories[{i}].temporal")
    created = parse_instant(temporal["created_at"], f"memories[{i}].temporal.created_at")
    if temporal.get("updated_at") is not None:
        updated = parse_instant(temporal["updated_at"], "updated_at")
        if updated < created:
            raise InvalidRequest(f"memories[{i}] ({ident}): updated_at is before created_at")
    if temporal.get("valid_from") is not None and temporal.get("valid_until") is not None:
        start = parse_instant(temporal["valid_from"], "valid_from")
        if parse_instant(temporal["valid_until"], "valid_until") < start:
            raise InvalidRequest(f"memories[{i}] ({ident}): valid_until is before valid_from")


def check_total(integrity: JsonObject, count: int) -> None:
    if integrity["total_memories"] != count:
        raise DigestMismatch(
            f"integrity.total_memories is {integrity['total_memories']}, the document "
            f"carries {count} memories"
        )


def checksum_refusal() -> DigestMismatch:
    return DigestMismatch(
        "integrity.checksum does not match the memories (§15.2): the document was "
        "altered or written without RFC 8785"
    )


MemoryReferences = tuple[int, Json, Json]
"""A memory's index, its ``temporal.superseded_by`` and its ``provenance.conversation_ref``."""


def memory_references(m: JsonObject, i: int) -> MemoryReferences:
    return (
        i,
        wire.block(m, "temporal").get("superseded_by"),
        wire.block(m, "provenance").get("conversation_ref"),
    )


def check_references(
    relations: Sequence[JsonObject],
    memory_refs: Iterable[MemoryReferences],
    conversations_index: Sequence[JsonObject],
    known: set[str],
    conversations: set[str],
) -> None:
    """Cross references: relation ends, ``superseded_by``, ``conversation_ref`` and
    ``derived_memories`` name memories of the document or of the store."""
    for i, r in enumerate(relations):
        for end in ("from", "to"):
            if r[end] not in known:
                raise InvalidRequest(f"relations[{i}].{end}: no memory {r[end]!r}")
    for i, successor, ref in memory_refs:
        if successor is not None and successor not in known:
            raise InvalidRequest(f"memories[{i}].temporal.superseded_by: no memory {successor!r}")
        if ref is not None and conversations and ref not in conversations:
            raise InvalidRequest(
                f"memories[{i}].provenance.conversation_ref: {ref!r} is not in conversations_index"
            )
    for i, c in enumerate(conversations_index):
        for derived in wire.arr(c.get("derived_memories") or [], "derived_memories"):
            if derived not in known:
                raise InvalidRequest(
                    f"conversations_index[{i}].derived_memories: no memory {derived!r}"
                )


__all__ = [
    "PAM_TYPES",
    "SCHEMA_NAME",
    "SCHEMA_VERSION",
    "SERVED_STATUSES",
    "SPEC_URI",
    "TAG",
    "check_contents",
    "check_document",
    "check_schema",
    "checksum",
    "checksum_matches",
    "content_hash",
    "format_instant",
    "normal_instant",
    "normal_memory",
    "normalize_content",
    "parse_instant",
    "strip_nulls",
    "strip_object",
    "utc",
]
