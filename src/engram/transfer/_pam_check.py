"""The checks of a PAM document read a memory at a time (``_pam_read``), with the whole-document
checks' rules and words (``_pam_format.check_document``).

The whole-document reader applies its checks in stages (header, caps, shape, schema, instants,
unique ids, content hashes, integrity, cross references), each over the whole document, and
raises the first problem of the first stage that has one. Here every memory goes through each
stage as it is read and the first problem of each stage is kept (all of them for the schema,
which names the first five in path order and counts the rest); once a stage has failed, later
stages are skipped for the memories that follow, since they can no longer decide the outcome.
:meth:`FirstPass.verdict` then raises in stage order, with the members that are not memories,
which are held (the root's small members, relations, the conversations index).

What is kept per memory: its id (uniqueness and references), its shape violation if any (the
values cap applies to each memory alone, to the other members together: the reader holds one
memory at a time; ``check_shape`` visits the memories last to first), its references
when it has any, and its three checksum spellings folded into running SHA-256 hashes (§15.2
sorts the memories by id). The checksum of the memories as written is computed as they go; a
document not in id order, or whose checksum covers another spelling, takes one more pass
(:func:`spilled_sums`).
"""

from __future__ import annotations

import hashlib
import tempfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from functools import cache
from typing import Any

from engram.core.bounds import MAX_DEPTH, MAX_NUMBER_CHARS, MAX_STRING_CHARS
from engram.core.canonical import Json, JsonObject, canonicalize
from engram.core.schema_predicate import Predicate, compile_predicate
from engram.errors import EngramError, InvalidRequest
from engram.transfer import _pam_format as fmt
from engram.transfer import _wire as wire
from engram.transfer._pam_read import DEFAULT_LIMITS, PamLimits

_CAPS, _SHAPE, _SCHEMA, _INSTANTS, _UNIQUE, _CONTENT, _INTEGRITY = range(1, 8)
_NONE = 99
_MEMORY_SCHEMA = {"$ref": "#/$defs/MemoryObject"}
_SHAPE_WHAT = "the PAM document"
_HEADER = frozenset({"schema", "schema_version"})  # what the verdict reads before the shape
_INT_BITS = int(MAX_NUMBER_CHARS * 3.33) + 1  # check_shape's bound on an integer literal
Forms = tuple[bytes, bytes, bytes | None]


@cache
def fast_memory_check() -> Predicate | None:
    """The PAM memory schema compiled to a predicate whose yes is jsonschema's
    (engram.core.schema_predicate)."""
    return compile_predicate(_MEMORY_SCHEMA, root=fmt.validator().schema)


# --- check_shape, one subtree at a time ----------------------------------------------------


@dataclass(frozen=True)
class Shape:
    """One subtree's share of ``check_shape``: the values it counts, and its first violation
    as (the count at which check_shape meets it, the message)."""

    count: int
    violation: tuple[int, str] | None


def _scalar_problem(item: object) -> str | None:
    if isinstance(item, str) and len(item) > MAX_STRING_CHARS:
        return f"{_SHAPE_WHAT} has a string longer than {MAX_STRING_CHARS} characters"
    if isinstance(item, int) and not isinstance(item, bool) and item.bit_length() > _INT_BITS:
        return f"{_SHAPE_WHAT} has a number longer than {MAX_NUMBER_CHARS} digits"
    return None


def shape_of(value: Json, depth: int) -> Shape:
    """``check_shape``'s walk of ``value`` found at ``depth``, without the count limit (applied
    by :meth:`FirstPass.verdict`: to each memory, and to the other members together); the same
    order, so the same violation.

    ``value`` comes from ``parse_strict``, whose integers are within ±(2^53-1): no number can
    break the 64-digit cap, so scalar members are counted in place, as strings are, instead of
    pushed and popped one by one (check_shape's way; a memory of a million numbers took seconds).
    Only the count at which a violation is met can differ, and it decides nothing below the
    values cap, where the count was met first either way."""
    stack: list[tuple[Any, int]] = [(value, depth)]
    seen = 0
    while stack:
        item, level = stack.pop()
        seen += 1
        kind = type(item)
        if kind is dict or kind is list:
            if level >= MAX_DEPTH:
                return Shape(seen, (seen, f"{_SHAPE_WHAT} nests deeper than {MAX_DEPTH} levels"))
            if kind is dict:
                for key in item:
                    if len(key) > MAX_STRING_CHARS:
                        return Shape(seen, (seen, _scalar_problem(key) or ""))
            for member in item.values() if kind is dict else item:
                inner = type(member)
                if inner is dict or inner is list:
                    stack.append((member, level + 1))
                    continue
                seen += 1
                if inner is str and len(member) > MAX_STRING_CHARS:
                    return Shape(seen, (seen, _scalar_problem(member) or ""))
        else:
            problem = _scalar_problem(item)
            if problem is not None:
                return Shape(seen, (seen, problem))
    return Shape(seen, None)


def _string_shape(value: Json) -> Shape:
    """A string counted where it stands (check_shape measures strings in place)."""
    problem = _scalar_problem(value)
    return Shape(1, None if problem is None else (1, problem))


# --- the checksum's three spellings --------------------------------------------------------


def forms(memory: JsonObject, i: int) -> Forms:
    """The RFC 8785 bytes of a memory as written, without nulls, and in the normal form (None
    when it has none): what ``checksum_matches`` tries, in that order."""
    raw = fmt.canonical_memory(memory, i)
    stripped = fmt.strip_object(memory)
    bare = raw if stripped == memory else canonicalize(stripped)  # equal only if none dropped
    try:
        normal = fmt.normal_memory(memory, f"memories[{i}]")
    except InvalidRequest:
        return raw, bare, None
    if normal == memory:
        return raw, bare, raw
    return raw, bare, bare if normal == stripped else canonicalize(normal)


class Sums:
    """Running §15.2 checksums of the three spellings over memories met in id order."""

    def __init__(self) -> None:
        self._hashes = [hashlib.sha256(b"[") for _ in range(3)]
        self._normal = True
        self._first = True

    def add(self, spelled: Forms) -> None:
        for h, data in zip(self._hashes, spelled, strict=True):
            if data is None:
                self._normal = False
                continue
            if not self._first:
                h.update(b",")
            h.update(data)
        self._first = False

    def digests(self) -> list[str]:
        out = []
        for n, h in enumerate(self._hashes):
            if n == 2 and not self._normal:
                break
            done = h.copy()
            done.update(b"]")
            out.append("sha256:" + done.hexdigest())
        return out


def spilled_sums(memories: Iterator[tuple[int, JsonObject]]) -> Sums:
    """:class:`Sums` of memories that are not in id order: their spellings spilled to a private
    temporary file, then read back sorted by id (an index of offsets is all that is held)."""
    index: list[tuple[str, int, int, int, int]] = []
    with tempfile.TemporaryFile() as spill:
        offset = 0
        for i, memory in memories:
            raw, bare, normal = forms(memory, i)
            parts = (raw, bare, normal if normal is not None else b"")
            for part in parts:
                spill.write(part)
            ident = str(memory.get("id", ""))
            normal_len = -1 if normal is None else len(normal)
            index.append((ident, offset, len(raw), len(bare), normal_len))
            offset += len(raw) + len(bare) + max(normal_len, 0)
        index.sort(key=lambda entry: entry[0])
        sums = Sums()
        for _, at, raw_len, bare_len, normal_len in index:
            spill.seek(at)
            raw = spill.read(raw_len)
            bare = spill.read(bare_len)
            normal = spill.read(normal_len) if normal_len >= 0 else None
            sums.add((raw, bare, normal))
    return sums


# --- the first pass ------------------------------------------------------------------------


@dataclass
class FirstPass:
    """What one strict pass over a document learnt, and the problems it found, by stage."""

    limits: PamLimits = DEFAULT_LIMITS
    members: dict[str, Json] = field(default_factory=dict)
    count: int = 0
    ids: list[str] = field(default_factory=list)
    id_set: set[str] = field(default_factory=set)
    refs: list[fmt.MemoryReferences] = field(default_factory=list)
    # check_shape's walk, a member at a time: the shape of each member but the memories, the
    # values they hold together, and the first shape violation among the memories in the order
    # check_shape meets them (string items first, then the others last to first).
    member_shapes: dict[str, Shape] = field(default_factory=dict)
    string_members: set[str] = field(default_factory=set)  # check_shape counts them in place
    held: int = 1  # the root object itself
    string_violation: str | None = None
    object_violation: str | None = None
    schema_errors: list[tuple[list[Any], int, str, str]] = field(default_factory=list)
    schema_total: int = 0
    first: dict[int, EngramError] = field(default_factory=dict)
    doomed: int = _NONE  # the earliest stage known to fail
    # The checksum of the memories as written, the spelling engram, the SDK and the spec's
    # examples write; the other two are computed by another pass only when it does not match.
    raw: Any = field(default_factory=lambda: hashlib.sha256(b"["))
    in_order: bool = True
    streamed: bool = False

    def member(self, name: str, value: Json) -> None:
        if type(value) is str:
            shape = _string_shape(value)
            self.string_members.add(name)
        else:
            shape = shape_of(value, 1)
        self.member_shapes[name] = shape
        self.held += shape.count
        if self.held > self.limits.max_member_values and name not in _HEADER:
            value = None  # refused by its count (the verdict says so): not worth holding
        self.members[name] = value

    def memories_begin(self) -> None:
        self.members["memories"] = []
        self.held += 1  # the array
        self.streamed = True

    def _fail(self, stage: int, error: EngramError) -> None:
        self.first.setdefault(stage, error)
        self.doomed = min(self.doomed, stage)

    def memory(self, i: int, memory: Json) -> None:
        self.count = i + 1
        if i >= self.limits.max_memories or self.doomed <= _CAPS:
            return  # the count (or an earlier memory's cap) refuses the document
        try:
            fmt.memory_caps(memory, i)
        except InvalidRequest as e:
            self._fail(_CAPS, e)
            return
        if type(memory) is str:
            violation = _string_shape(memory).violation
            if violation is not None and self.string_violation is None:
                self.string_violation = violation[1]
        else:
            # Each memory on its own: the reader holds one at a time, so the values cap that
            # protects a whole parsed document applies per memory (docs/spec/limits.md §2).
            shape = shape_of(memory, 2)
            cap = self.limits.max_member_values
            if shape.count > cap:
                self.object_violation = f"$.memories[{i}] has more than {cap} values"
            elif shape.violation is not None:
                self.object_violation = shape.violation[1]  # the last: met first
        if self.string_violation is not None or self.object_violation is not None:
            self.doomed = min(self.doomed, _SHAPE)
        if self.doomed < _SCHEMA:
            return
        self._schema(i, memory)
        if self.doomed <= _INSTANTS:
            return
        assert isinstance(memory, dict)  # the schema says so
        self._contents(i, memory)

    def _schema(self, i: int, memory: Json) -> None:
        fast = fast_memory_check()
        if fast is not None and fast(memory):
            return  # a yes the compiled predicate can give; else jsonschema decides and words
        validator = fmt.validator()
        errors = list(validator.descend(memory, _MEMORY_SCHEMA, path=i))
        if not errors:
            return
        self.doomed = min(self.doomed, _SCHEMA)
        self.schema_total += len(errors)
        for e in errors:
            key = ["memories", *e.absolute_path]
            self.schema_errors.append(
                (key, len(self.schema_errors), fmt.error_path(key), e.message)
            )
        # Only the first five in path order are named: keep no more than that.
        self.schema_errors.sort(key=lambda x: (x[0], x[1]))
        del self.schema_errors[fmt.MAX_PROBLEMS :]

    def _contents(self, i: int, m: JsonObject) -> None:
        try:
            for where, value in fmt.memory_instants(m, i):
                fmt.parse_instant(value, where)
        except InvalidRequest as e:
            self._fail(_INSTANTS, e)
            return
        if self.doomed <= _UNIQUE:
            return
        ident = wire.text(m.get("id"), "memories id")
        if ident in self.id_set:
            self._fail(_UNIQUE, InvalidRequest(f"two memories share the id {ident!r}"))
            return
        self.id_set.add(ident)
        if self.ids and ident < self.ids[-1]:
            self.in_order = False
        self.ids.append(ident)
        if self.doomed <= _CONTENT:
            return
        try:
            fmt.check_memory_content(m, i)
        except EngramError as e:
            self._fail(_CONTENT, e)
            return
        if self.in_order:
            try:
                data = fmt.canonical_memory(m, i)
            except EngramError as e:
                self._fail(_INTEGRITY, e)
            else:
                if len(self.ids) > 1:
                    self.raw.update(b",")
                self.raw.update(data)
        refs = fmt.memory_references(m, i)
        if refs[1] is not None or refs[2] is not None:
            self.refs.append(refs)

    # --- the verdict, in the whole-document reader's order --------------------------------

    def verdict(
        self,
        known_ids: Callable[[set[str]], set[str]],
        resum: Callable[[], Sums],
    ) -> JsonObject:
        """Raise the document's first problem as ``check_document`` would, else return the
        root's members (``memories`` empty). ``known_ids``: which of a set of ids the store
        holds; ``resum``: the three checksums, by another pass (a document not in id order, or
        whose checksum is not over the memories as written)."""
        doc = fmt.check_header(self.members)
        if self.count > self.limits.max_memories:
            raise fmt.too_many_memories(self.limits.max_memories)
        if _CAPS in self.first:
            raise self.first[_CAPS]
        self._shape(doc)
        self._schema_verdict(doc)
        for where, value in fmt.head_instants(doc):
            fmt.parse_instant(value, where)
        if _INSTANTS in self.first:
            raise self.first[_INSTANTS]
        for where, value in fmt.tail_instants(doc):
            fmt.parse_instant(value, where)
        if _UNIQUE in self.first:
            raise self.first[_UNIQUE]
        relations = wire.objects(doc.get("relations"), "relations")
        index = wire.objects(doc.get("conversations_index"), "conversations_index")
        fmt.unique_ids(relations, "relations")
        conversations = fmt.unique_ids(index, "conversations")
        if _CONTENT in self.first:
            raise self.first[_CONTENT]
        integrity = doc.get("integrity")
        if isinstance(integrity, dict):
            fmt.check_total(integrity, self.count)
            if _INTEGRITY in self.first:
                raise self.first[_INTEGRITY]
            declared = wire.text(integrity["checksum"], "integrity.checksum")
            raw = self.raw.copy()
            raw.update(b"]")
            matches = self.in_order and declared == "sha256:" + raw.hexdigest()
            if not matches and declared not in resum().digests():
                raise fmt.checksum_refusal()
        fmt.check_references(
            relations, self.refs, index, self.id_set | known_ids(self.references()), conversations
        )
        return doc

    def references(self) -> set[str]:
        """Ids the document names that are not its memories' (the store may hold them)."""
        refs: set[str] = set()
        for i, r in enumerate(wire.objects(self.members.get("relations"), "relations")):
            refs.update(wire.text(r[end], f"relations[{i}].{end}") for end in ("from", "to"))
        for i, successor, _ in self.refs:
            if successor is not None:
                refs.add(wire.text(successor, f"memories[{i}].temporal.superseded_by"))
        index = wire.objects(self.members.get("conversations_index"), "conversations_index")
        for i, c in enumerate(index):
            refs.update(wire.texts(c.get("derived_memories"), f"conversations_index[{i}]"))
        return refs - self.id_set

    def _shape(self, doc: JsonObject) -> None:
        # check_shape pops the root, checks its member names and counts its string members,
        # then pops the other members last to first; the memories array counts its string
        # items, then pops its memories last to first. Each is walked whole before the next.
        # The values of the members but the memories are counted together, each memory alone.
        cap = self.limits.max_member_values
        long_name = next((_scalar_problem(k) for k in doc if len(k) > MAX_STRING_CHARS), None)
        if long_name is not None:
            raise InvalidRequest(long_name)
        names = [n for n in doc if n in self.string_members]
        names += [n for n in reversed(list(doc)) if n not in self.string_members]
        held = 1
        for name in names:
            if name == "memories" and self.streamed:
                held += 1
                for violation in (self.string_violation, self.object_violation):
                    if violation is not None:
                        raise InvalidRequest(violation)
                continue
            shape = self.member_shapes.get(name) or shape_of(doc[name], 1)
            if shape.violation is not None and held + shape.violation[0] <= cap:
                raise InvalidRequest(shape.violation[1])
            held += shape.count
            if held > cap:
                raise InvalidRequest(f"{_SHAPE_WHAT} has more than {cap} values")

    def _schema_verdict(self, doc: JsonObject) -> None:
        validator = fmt.validator()
        top = [] if validator.is_valid(doc) else list(validator.iter_errors(doc))
        if not top and not self.schema_errors:
            return
        found = [
            (list(e.absolute_path), n, fmt.error_path(list(e.absolute_path)), e.message)
            for n, e in enumerate(top)
        ]
        found += [(k, len(top) + n, p, m) for k, n, p, m in self.schema_errors]
        found.sort(key=lambda x: (x[0], x[1]))
        raise fmt.schema_refusal([(p, m) for _, _, p, m in found], len(top) + self.schema_total)


__all__ = ["FirstPass", "Shape", "Sums", "forms", "shape_of", "spilled_sums"]
