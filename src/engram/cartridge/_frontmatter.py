"""SKILL.md frontmatter: the strict YAML subset engram reads, and nothing more.

Spec: lboel/acx@85f1358 SPEC.md §12 item 7 (six-key agentskills.io frontmatter);
docs/spec/acx.md §5 "Skills". A general YAML loader is the wrong tool for untrusted files (aliases
expand without bound, ``yes`` turns into a boolean, ``1.0`` into a float), so the frontmatter is
parsed as the small subset agentskills.io examples use:

- ``key: value`` with a plain, ``"double-quoted"`` (JSON escapes) or ``'single-quoted'`` scalar;
  plain scalars may continue on more-indented lines (folded with single spaces);
- ``key: |`` / ``key: >`` block scalars (with ``-`` or ``+`` chomping);
- ``key:`` followed by one level of indented ``sub: value`` pairs (a string-to-string map);
- ``# comments`` and blank lines.

Every value is a string: nothing is coerced. Anything else (flow collections, anchors, tags,
sequences, duplicate keys, tabs used for indentation) is refused with the line number.
"""

from __future__ import annotations

import json
import re

from engram.errors import CartridgeFormatError

_KEY_LINE = re.compile(r"([A-Za-z0-9_.-]+):(?:[ ]+(.*))?")
_BLOCK = re.compile(r"[|>][+-]?")
Value = str | dict[str, str]


def split_frontmatter(text: str, where: str) -> tuple[str, str]:
    """``(frontmatter, body)`` of a SKILL.md; the file must open with a ``---`` fence."""
    lines = text.split("\n")
    if not lines or lines[0].rstrip("\r") != "---":
        raise CartridgeFormatError(f"{where}: SKILL.md must start with '---' frontmatter")
    for index in range(1, len(lines)):
        if lines[index].rstrip("\r") == "---":
            front = "\n".join(line.rstrip("\r") for line in lines[1:index])
            return front, "\n".join(lines[index + 1 :])
    raise CartridgeFormatError(f"{where}: SKILL.md frontmatter has no closing '---'")


def parse_frontmatter(text: str, where: str) -> dict[str, Value]:
    """Parse the frontmatter subset described in the module docstring."""
    lines = text.split("\n")
    result: dict[str, Value] = {}
    index = 0
    while index < len(lines):
        line = lines[index]
        index += 1
        if _blank(line):
            continue
        if "\t" in line[: len(line) - len(line.lstrip())]:
            raise _error(where, index, "tabs are not allowed for indentation")
        if line[0] == " ":
            raise _error(where, index, "unexpected indentation")
        match = _KEY_LINE.fullmatch(line.rstrip())
        if match is None:
            raise _error(where, index, "expected 'key: value'")
        key, rest = match.group(1), (match.group(2) or "").strip()
        if key in result:
            raise _error(where, index, f"duplicate key {key!r}")
        block, index = _indented(lines, index)
        if rest == "":
            result[key] = _mapping(block, where, index - len(block)) if block else ""
        elif _BLOCK.fullmatch(rest):
            result[key] = _block_scalar(rest, block)
        else:
            value = _scalar(rest, where, index - len(block))
            if block:
                if rest[0] in "\"'":
                    raise _error(where, index, "quoted scalars must fit on one line")
                value = " ".join([value, *(b.strip() for b in block if b.strip())])
            result[key] = value
    return result


def _blank(line: str) -> bool:
    stripped = line.strip()
    return not stripped or stripped.startswith("#")


def _indented(lines: list[str], index: int) -> tuple[list[str], int]:
    block: list[str] = []
    while index < len(lines) and (lines[index].startswith(" ") or lines[index].strip() == ""):
        block.append(lines[index])
        index += 1
    while block and block[-1].strip() == "":
        block.pop()
        index -= 1
    return block, index


def _mapping(block: list[str], where: str, first_line: int) -> dict[str, str]:
    result: dict[str, str] = {}
    indent: int | None = None
    for offset, line in enumerate(block):
        number = first_line + offset
        if _blank(line):
            continue
        width = len(line) - len(line.lstrip(" "))
        indent = width if indent is None else indent
        if width != indent:
            raise _error(where, number, "nested structures are not supported in frontmatter")
        match = _KEY_LINE.fullmatch(line.strip())
        if match is None or not (match.group(2) or "").strip():
            raise _error(where, number, "expected 'key: value' inside a map")
        key = match.group(1)
        if key in result:
            raise _error(where, number, f"duplicate key {key!r}")
        result[key] = _scalar(match.group(2).strip(), where, number)
    return result


def _block_scalar(indicator: str, block: list[str]) -> str:
    widths = [len(line) - len(line.lstrip(" ")) for line in block if line.strip()]
    indent = min(widths) if widths else 0
    body = [line[indent:] for line in block]
    if indicator[0] == "|":
        text = "\n".join(body)
    else:
        text = " ".join(line.strip() for line in body if line.strip())
    if indicator.endswith("-"):
        return text.rstrip("\n")
    return text + "\n"


def _scalar(text: str, where: str, line: int) -> str:
    if text.startswith('"'):
        try:
            value = json.loads(text)
        except ValueError as e:
            raise _error(where, line, f"bad double-quoted string ({e})") from e
        if not isinstance(value, str):
            raise _error(where, line, "bad double-quoted string")
        return value
    if text.startswith("'"):
        if len(text) < 2 or not text.endswith("'") or "'" in text[1:-1].replace("''", ""):
            raise _error(where, line, "bad single-quoted string")
        return text[1:-1].replace("''", "'")
    if text[0] in "[]{}&*!%@`":
        raise _error(where, line, f"YAML feature {text[0]!r} is not supported in frontmatter")
    plain = re.split(r"\s#", text, maxsplit=1)[0].rstrip()
    if plain.startswith("- ") or plain == "-":
        raise _error(where, line, "sequences are not supported in frontmatter")
    return plain


def _error(where: str, line: int, message: str) -> CartridgeFormatError:
    return CartridgeFormatError(f"{where}: frontmatter line {line}: {message}")


__all__ = ["Value", "parse_frontmatter", "split_frontmatter"]
