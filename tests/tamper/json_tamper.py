"""A small JSON mutation kit for tamper suites: mutate signed JSON, judge by meaning, count.

The rule every tamper suite checks (issue 15, "Tests"): **accepted => the meaning is identical**.
A verifier may accept a mutated document only when it says exactly what the original says
(members reordered, whitespace added, ``1`` written ``1.0``, ``A`` written ``\\u0041``); any
mutation that changes what it says must be refused, and no mutation may crash the verifier.

Use it for any signed JSON artifact (exports, diffs, bundles here; workflows, graphs and
credentials later)::

    from json_tamper import mutations, run_tamper

    def accept(data: bytes) -> bytes:          # raise to refuse; return the meaning to accept
        return meaning_of(my_verifier(data))

    report = run_tamper("my artifact", original_bytes, accept, mutations(original_bytes, seed=1))
    print(report.summary())
    report.assert_sound()

``accept`` raises any exception in ``refusals`` (default: every ``Exception`` except the ones
that mean a crash: see :data:`CRASHES`) to refuse. :class:`TamperReport` counts what was tried,
refused, and accepted with the same meaning; an acceptance with another meaning or a crash is
kept with the mutation that caused it.

Mutations (:func:`mutations` mixes them; each family is also public):

- :func:`byte_mutations`: one byte flipped, replaced, inserted, deleted or doubled;
- :func:`structural_mutations`, on the parsed document and written back as JSON text:
  duplicate members (same or other value), members reordered, whitespace added, numbers
  re-spelled (``1.0``, ``1e0``, ``10E-1``), characters written as ``\\u`` escapes (surrogate
  pairs for astral ones), ``\\/``, and edits that change the meaning: a string, number, boolean
  or null changed, a member removed, added or renamed, an escaped lone surrogate, an integer of
  5,000 digits, a byte-order mark, data after the value.
"""

from __future__ import annotations

import json
import random
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

CRASHES: tuple[type[BaseException], ...] = (
    AssertionError,
    AttributeError,
    IndexError,
    KeyError,
    RecursionError,
    TypeError,
    UnboundLocalError,
    ZeroDivisionError,
)
"""Exceptions that mean the verifier broke rather than refused (a bare ValueError from int()
of 4,300 digits is caught as a crash by ``crash_on_value_error=True``)."""


@dataclass(frozen=True)
class Mutation:
    """One mutated document: what was done (``family``/``name``) and the bytes."""

    family: str
    name: str
    data: bytes


# -- a JSON tree that keeps spellings ---------------------------------------------------------


class Number(str):
    """A number as spelled in the text (so ``1.0`` stays ``1.0`` until a mutation says)."""


class Obj(list[tuple[str, Any]]):
    """An object as its member list: order and duplicates are kept."""


def parse_tree(data: bytes) -> Any:
    """The document as nested :class:`Obj`, lists, str, :class:`Number`, bool and None."""
    return json.loads(
        data,
        object_pairs_hook=Obj,
        parse_int=Number,
        parse_float=Number,
        parse_constant=Number,
    )


_ESCAPES = {
    '"': '\\"',
    "\\": "\\\\",
    "\b": "\\b",
    "\f": "\\f",
    "\n": "\\n",
    "\r": "\\r",
    "\t": "\\t",
}


def write_string(text: str, escape_at: int | None = None, solidus: bool = False) -> str:
    """A JSON string literal; ``escape_at`` writes that character as ``\\u`` escape(s)."""
    out = []
    for index, char in enumerate(text):
        if index == escape_at:
            code = ord(char)
            if code > 0xFFFF:
                code -= 0x10000
                out.append(f"\\u{0xD800 + (code >> 10):04x}\\u{0xDC00 + (code & 0x3FF):04X}")
            else:
                out.append(f"\\u{code:04X}")
        elif char == "/" and solidus:
            out.append("\\/")
        elif char in _ESCAPES:
            out.append(_ESCAPES[char])
        elif ord(char) < 0x20:
            out.append(f"\\u{ord(char):04x}")
        else:
            out.append(char)
    return '"' + "".join(out) + '"'


@dataclass
class _Writer:
    """Writes a tree back as text; ``raw`` replaces the node at one path by literal text."""

    raw: dict[tuple[Any, ...], str] = field(default_factory=dict)
    space: dict[tuple[Any, ...], str] = field(default_factory=dict)

    def write(self, node: Any, path: tuple[Any, ...] = ()) -> str:
        text = self.raw.get(path)
        if text is None:
            text = self._node(node, path)
        return self.space.get(path, "") + text

    def _node(self, node: Any, path: tuple[Any, ...]) -> str:
        if isinstance(node, Obj):
            parts = [
                write_string(name) + ":" + self.write(value, (*path, index))
                for index, (name, value) in enumerate(node)
            ]
            return "{" + ",".join(parts) + "}"
        if isinstance(node, list):
            return "[" + ",".join(self.write(v, (*path, i)) for i, v in enumerate(node)) + "]"
        if isinstance(node, Number):
            return str.__str__(node)
        if isinstance(node, str):
            return write_string(node)
        if node is True:
            return "true"
        if node is False:
            return "false"
        return "null"


def write_tree(node: Any) -> bytes:
    return _Writer().write(node).encode("utf-8")


def _paths(node: Any, path: tuple[Any, ...] = ()) -> Iterator[tuple[tuple[Any, ...], Any]]:
    yield path, node
    if isinstance(node, Obj):
        for index, (_, value) in enumerate(node):
            yield from _paths(value, (*path, index))
    elif isinstance(node, list):
        for index, value in enumerate(node):
            yield from _paths(value, (*path, index))


def _at(tree: Any, path: tuple[Any, ...]) -> Any:
    node = tree
    for step in path:
        node = node[step][1] if isinstance(node, Obj) else node[step]
    return node


def _replaced(tree: Any, path: tuple[Any, ...], value: Any) -> Any:
    if not path:
        return value
    head, rest = path[0], path[1:]
    if isinstance(tree, Obj):
        copy = Obj(tree)
        name, inner = copy[head]
        copy[head] = (name, _replaced(inner, rest, value))
        return copy
    copy_list = list(tree)
    copy_list[head] = _replaced(copy_list[head], rest, value)
    return copy_list


# -- mutation families ------------------------------------------------------------------------


def byte_mutations(data: bytes, rng: random.Random, count: int) -> Iterator[Mutation]:
    """``count`` single-byte edits at random offsets."""
    for _ in range(count):
        at = rng.randrange(len(data))
        kind = rng.choice(("flip", "replace", "insert", "delete", "double"))
        if kind == "flip":
            mutated = data[:at] + bytes([data[at] ^ (1 << rng.randrange(8))]) + data[at + 1 :]
        elif kind == "replace":
            mutated = data[:at] + bytes([rng.randrange(256)]) + data[at + 1 :]
        elif kind == "insert":
            mutated = data[:at] + bytes([rng.randrange(256)]) + data[at:]
        elif kind == "delete":
            mutated = data[:at] + data[at + 1 :]
        else:
            mutated = data[: at + 1] + data[at:]
        yield Mutation("byte", f"{kind}@{at}", mutated)


def _numbers_respelled(literal: str) -> list[str]:
    if any(c in literal for c in ".eE"):
        value = float(literal)
        return [
            repr(value),
            f"{value:e}",
            f"{value:E}",
            literal + "0" if "." in literal else literal,
        ]
    n = int(literal)
    spellings = [f"{literal}.0", f"{literal}e0", f"{literal}E+0", f"{literal}0e-1"]
    if n == 0:
        spellings.append("-0")
    return spellings


def structural_mutations(data: bytes, rng: random.Random, count: int) -> Iterator[Mutation]:
    """``count`` structural edits of the parsed document (see the module docstring)."""
    tree = parse_tree(data)
    nodes = list(_paths(tree))
    objects = [(p, n) for p, n in nodes if isinstance(n, Obj) and n]
    strings = [(p, n) for p, n in nodes if isinstance(n, str) and not isinstance(n, Number) and n]
    numbers = [(p, n) for p, n in nodes if isinstance(n, Number)]
    scalars = [(p, n) for p, n in nodes if p and not isinstance(n, Obj | list)]
    makers: list[Callable[[], Mutation | None]] = []

    def object_edit(kind: str) -> Mutation | None:
        path, node = rng.choice(objects)
        members = Obj(node)
        index = rng.randrange(len(members))
        name, value = members[index]
        if kind == "duplicate-same":
            members.insert(rng.randrange(len(members) + 1), (name, value))
        elif kind == "duplicate-other":
            members.append((name, Number("0") if not isinstance(value, Number) else "x"))
        elif kind == "reorder":
            rng.shuffle(members)
        elif kind == "remove":
            del members[index]
        elif kind == "add":
            members.append((f"tampered_{rng.randrange(1000)}", "x"))
        elif kind == "rename":
            members[index] = (name + "_", value)
        return Mutation("structural", f"{kind}@{path}", write_tree(_replaced(tree, path, members)))

    for kind in ("duplicate-same", "duplicate-other", "reorder", "remove", "add", "rename"):
        if objects:
            makers.append(lambda kind=kind: object_edit(kind))  # type: ignore[misc]

    def whitespace() -> Mutation:
        writer = _Writer()
        for _ in range(rng.randrange(1, 4)):
            path, _node = rng.choice(nodes)
            writer.space[path] = rng.choice((" ", "\n", "\t", "\r\n", "  "))
        return Mutation(
            "structural", "whitespace", (writer.write(tree) + rng.choice(("", "\n"))).encode()
        )

    def respell() -> Mutation | None:
        if not numbers:
            return None
        path, node = rng.choice(numbers)
        spelling = rng.choice(_numbers_respelled(str.__str__(node)))
        return Mutation(
            "structural", f"respell@{path}", _Writer(raw={path: spelling}).write(tree).encode()
        )

    def escape() -> Mutation | None:
        if not strings:
            return None
        path, node = rng.choice(strings)
        literal = write_string(node, escape_at=rng.randrange(len(node)), solidus=rng.random() < 0.3)
        return Mutation(
            "structural", f"escape@{path}", _Writer(raw={path: literal}).write(tree).encode()
        )

    def change() -> Mutation | None:
        if not scalars:
            return None
        path, node = rng.choice(scalars)
        if isinstance(node, Number):
            new: Any = Number(
                str(int(float(node)) + 1) if "." not in node else str(float(node) + 0.5)
            )
        elif isinstance(node, str):
            at = rng.randrange(len(node)) if node else 0
            new = node[:at] + chr(ord(node[at]) ^ 1 if node else 65) + node[at + 1 :]
        elif isinstance(node, bool):
            new = not node
        else:
            new = Number("0")
        return Mutation("structural", f"change@{path}", write_tree(_replaced(tree, path, new)))

    def hostile() -> Mutation | None:
        path, _node = rng.choice(scalars or nodes)
        kind = rng.choice(("lone-surrogate", "big-integer", "bom", "trailing", "nan", "deep"))
        if kind == "bom":
            return Mutation("structural", "bom", b"\xef\xbb\xbf" + write_tree(tree))
        if kind == "trailing":
            return Mutation("structural", "trailing", write_tree(tree) + b" {}")
        literal = {
            "lone-surrogate": '"\\ud800"',
            "big-integer": "9" * 5000,
            "nan": "NaN",
            "deep": "[" * 300 + "]" * 300,
        }[kind]
        return Mutation(
            "structural", f"{kind}@{path}", _Writer(raw={path: literal}).write(tree).encode()
        )

    makers += [whitespace, respell, escape, change, hostile]
    produced = 0
    while produced < count:
        mutation = rng.choice(makers)()
        if mutation is not None:
            produced += 1
            yield mutation


def mutations(data: bytes, *, seed: int = 0, count: int = 1000) -> Iterator[Mutation]:
    """``count`` mutations, half single-byte and half structural, reproducible from ``seed``."""
    rng = random.Random(seed)
    yield from byte_mutations(data, rng, count // 2)
    yield from structural_mutations(data, rng, count - count // 2)


# -- running and counting ---------------------------------------------------------------------


@dataclass
class TamperReport:
    """What one artifact's tamper run tried and how each mutation was answered."""

    artifact: str
    tried: int = 0
    refused: int = 0
    accepted_same: int = 0
    unchanged: int = 0
    accepted_different: list[Mutation] = field(default_factory=list)
    crashed: list[tuple[Mutation, str]] = field(default_factory=list)
    seconds: float = 0.0

    def summary(self) -> str:
        return (
            f"{self.artifact}: tried {self.tried}, refused {self.refused}, accepted with the "
            f"same meaning {self.accepted_same} (of which {self.unchanged} byte-identical), "
            f"accepted with another meaning {len(self.accepted_different)}, crashed "
            f"{len(self.crashed)} ({self.seconds:.2f} s)"
        )

    def assert_sound(self) -> None:
        """The rule: nothing accepted with another meaning, nothing crashed."""
        problems = [f"accepted {m.name}: {m.data[:200]!r}" for m in self.accepted_different[:5]]
        problems += [f"crashed on {m.name}: {why}" for m, why in self.crashed[:5]]
        assert not problems, self.summary() + "\n" + "\n".join(problems)


def run_tamper(
    artifact: str,
    original: bytes,
    accept: Callable[[bytes], Any],
    candidates: Iterable[Mutation],
    *,
    time_budget: float | None = None,
    crash_on_value_error: bool = True,
) -> TamperReport:
    """Judge every mutation by ``accept`` (raise = refused, return = its meaning) against the
    original's meaning; stop early when ``time_budget`` seconds have passed."""
    crashes = CRASHES + ((ValueError,) if crash_on_value_error else ())
    meaning = accept(original)
    report = TamperReport(artifact)
    started = time.perf_counter()
    for mutation in candidates:
        if time_budget is not None and time.perf_counter() - started > time_budget:
            break
        report.tried += 1
        if mutation.data == original:
            report.unchanged += 1
        try:
            got = accept(mutation.data)
        except crashes as e:
            if _is_refusal_class(e):
                report.refused += 1
            else:
                report.crashed.append((mutation, f"{type(e).__name__}: {e}"[:300]))
            continue
        except Exception:
            report.refused += 1
            continue
        if got == meaning:
            report.accepted_same += 1
        else:
            report.accepted_different.append(mutation)
    report.seconds = time.perf_counter() - started
    return report


def _is_refusal_class(error: BaseException) -> bool:
    # A library's own error type that happens to subclass ValueError (e.g. a refusal class
    # deriving from it) is a refusal; only the built-in classes themselves are crashes.
    return type(error) not in CRASHES and type(error) is not ValueError


__all__ = [
    "CRASHES",
    "Mutation",
    "Number",
    "Obj",
    "TamperReport",
    "byte_mutations",
    "mutations",
    "parse_tree",
    "run_tamper",
    "structural_mutations",
    "write_string",
    "write_tree",
]
