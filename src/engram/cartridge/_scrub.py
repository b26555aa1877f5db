"""The fail-closed scrub gate that runs over every ROM byte before anything is signed.

Spec: lboel/acx@85f1358 SPEC.md §7.5 and §12 item 8 (the fail-closed scrub gate runs before
signing); docs/spec/acx.md §7. A signed cartridge is meant to travel, so secrets must never enter
one: private keys, API tokens, credentials in URLs, password assignments and absolute home
paths (which leak a user name and a machine layout). The gate scans raw bytes - names included
- so a binary file, a compressed row or odd encoding cannot slip past a text decoder, and any
finding blocks the build or signature. Findings name the object, line and rule, never the value.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping

from engram.cartridge._errors import ScrubBlocked
from engram.core import findings as core_findings
from engram.core.canonical import JsonObject

_RULES: tuple[tuple[str, re.Pattern[bytes]], ...] = (
    ("private-key", re.compile(rb"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----")),
    ("aws-access-key-id", re.compile(rb"\b(?:AKIA|ASIA)[0-9A-Z]{16}\b")),
    ("aws-secret-key", re.compile(rb"(?i)aws_secret_access_key\s*[=:]\s*[A-Za-z0-9/+=]{20,}")),
    ("github-token", re.compile(rb"\b(?:gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{22,})")),
    ("gitlab-token", re.compile(rb"\bglpat-[A-Za-z0-9_-]{20,}")),
    ("slack-token", re.compile(rb"\bxox[abposr]-[A-Za-z0-9-]{10,}")),
    ("api-key-sk", re.compile(rb"\bsk-(?:ant-|proj-|live-)?[A-Za-z0-9_-]{20,}")),
    ("google-api-key", re.compile(rb"\bAIza[0-9A-Za-z_-]{35}")),
    ("stripe-key", re.compile(rb"\b[rs]k_(?:live|test)_[0-9A-Za-z]{16,}")),
    ("jwt", re.compile(rb"\beyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}")),
    (
        "authorization-header",
        re.compile(rb"(?i)\bauthorization\s*:\s*(?:bearer|basic|token)\s+[A-Za-z0-9._~+/=-]{12,}"),
    ),
    (
        "secret-assignment",
        re.compile(
            rb"(?i)\b(?:password|passwd|pwd|secret|api[_-]?key|access[_-]?token|auth[_-]?token"
            rb"|client[_-]?secret|private[_-]?key)[\"']?\s*[=:]\s*[\"']?(?![<$%{(\[*.])(?!x{4})"
            rb"[^\s\"'<>]{8,}"
        ),
    ),
    ("url-credentials", re.compile(rb"\b[a-z][a-z0-9+.-]*://[^/\s:@\"']+:[^/\s@\"']+@")),
    (
        "absolute-home-path",
        re.compile(
            rb"(?<![A-Za-z0-9_.~-])(?:/home/[A-Za-z0-9._-]+|/Users/[A-Za-z0-9._-]+|/root/"
            rb"|/var/home/[A-Za-z0-9._-]+)"
        ),
    ),
    (
        "windows-home-path",
        re.compile(rb"(?i)\b[a-z]:[\\/]+(?:Users|Documents and Settings)[\\/]+[^\\/\s]+"),
    ),
)


_NEEDLES: dict[str, tuple[bytes, ...]] = {
    "private-key": (b"private key",),
    "aws-access-key-id": (b"akia", b"asia"),
    "aws-secret-key": (b"aws_secret_access_key",),
    "github-token": (b"ghp_", b"gho_", b"ghu_", b"ghs_", b"ghr_", b"github_pat_"),
    "gitlab-token": (b"glpat-",),
    "slack-token": (b"xox",),
    "api-key-sk": (b"sk-",),
    "google-api-key": (b"aiza",),
    "stripe-key": (b"k_live_", b"k_test_"),
    "jwt": (b"eyj",),
    "authorization-header": (b"authorization",),
    "secret-assignment": (
        b"passw",
        b"pwd",
        b"secret",
        b"api",
        b"access",
        b"auth",
        b"client",
        b"private",
    ),
    "url-credentials": (b"://",),
    "absolute-home-path": (b"/home/", b"/users/", b"/root/"),
    "windows-home-path": (b"users", b"documents and settings"),
}
"""For each rule, lowercase literals of which every match contains at least one.

A rule's regular expression runs only over data whose ASCII-lowercased bytes contain one of its
needles (a fast substring search); data holding none cannot match, so the gate finds exactly
what the full scan would, in a fraction of the time on large memory baselines.
"""


_HIGH_ENTROPY = re.compile(rb"[A-Za-z0-9+/_=-]{20,}")
_HEX = re.compile(rb"[0-9a-fA-F]+")
_DIGIT = re.compile(rb"[0-9]")


def _entropy(token: bytes) -> float:
    counts: dict[int, int] = {}
    for byte in token:
        counts[byte] = counts.get(byte, 0) + 1
    return -sum(c / len(token) * math.log2(c / len(token)) for c in counts.values())


def _high_entropy(data: bytes) -> list[int]:
    """Offsets of blobs that look random (§7.5: >= 4.0 bits/char over >= 20 chars).

    Pure hex is left out (a digest tops out at 4.0 bits/char and every signed ACX document
    carries digests), as are identifiers without digits or without mixed case.
    """
    found = []
    for match in _HIGH_ENTROPY.finditer(data):
        token = match.group()
        if _HEX.fullmatch(token.rstrip(b"=")):
            continue
        # The token is ASCII ([A-Za-z0-9+/_=-]): it has an upper-case letter exactly when
        # lowering changes it, a lower-case one when upper-casing does.
        if not (_DIGIT.search(token) and token.lower() != token and token.upper() != token):
            continue
        if _entropy(token) >= 4.0:
            found.append(match.start())
    return found


def _class_table() -> bytes:
    table = bytearray(b" " * 256)
    kinds = (
        (b"ABCDEFGHIJKLMNOPQRSTUVWXYZ", b"U"),
        (b"abcdefghijklmnopqrstuvwxyz", b"l"),
        (b"0123456789", b"d"),
        (b"+/_=-", b"o"),
    )
    for members, kind in kinds:
        for byte in members:
            table[byte] = kind[0]
    return bytes(table)


_KINDS = _class_table()
"""Each byte of ``_HIGH_ENTROPY``'s class as its kind (``U`` upper, ``l`` lower, ``d`` digit,
``o`` one of ``+/_=-``); every other byte a space."""


def _may_be_random(data: bytes) -> bool:
    """False only when :func:`_high_entropy` finds nothing in ``data``, decided in C.

    Its tokens are the maximal runs of 20 or more bytes of its class (the regular expression is
    greedy), which are the words of ``data`` with every other byte made a space; a finding needs
    one holding an upper-case letter, a lower-case one and a digit. Most groups of memory
    payloads have none (their long tokens are lower-case hex ids), and running the regular
    expression over them was a third of the gate (issue 33)."""
    for token in data.translate(_KINDS).split():
        if len(token) >= 20 and b"U" in token and b"l" in token and b"d" in token:
            return True
    return False


class Finding(core_findings.Finding):
    """One blocked match: where it is and which rule matched (never the matched bytes).

    engram's one finding type (``engram.core.findings``, issue 28) with the scrub gate's own
    constructor ``Finding(path, line, rule, offset)``, text ``path:line: rule`` and JSON:
    ``to_wire()`` is §7.5's ``{file, byteOffset, ruleId}`` report entry.
    """

    def __init__(self, path: str, line: int, rule: str, offset: int = 0) -> None:
        super().__init__(rule, path, line=line, offset=offset)

    def __str__(self) -> str:
        return f"{self.path}:{self.line}: {self.rule}"

    def to_wire(self, *members: str, **renamed: str) -> JsonObject:
        if members or renamed:
            return super().to_wire(*members, **renamed)
        return super().to_wire(file="path", byteOffset="offset", ruleId="rule")


def scan(objects: Mapping[str, bytes], literals: Iterable[str] = ()) -> list[Finding]:
    """Every finding in ``objects`` (path -> content) and in the paths themselves.

    ``literals`` are raw repository identifiers that must not survive the §7.4 export boundary.
    """
    needles = [(lit, lit.lower().encode("utf-8")) for lit in literals if lit]
    findings: list[Finding] = []
    paths = sorted(objects)
    for at in range(0, len(paths), _GROUP):
        group = paths[at : at + _GROUP]
        names, datas = _Group(p.encode("utf-8") for p in group), _Group(objects[p] for p in group)
        for path in group:
            if names.may_match:
                findings.extend(_scan_one(path, path.encode("utf-8"), names.rules, name_only=True))
            data = objects[path]
            if datas.may_match:
                findings.extend(_scan_one(path, data, datas.rules, name_only=False))
            if datas.may_be_random:
                for offset in _high_entropy(data):
                    line = data.count(b"\n", 0, offset) + 1
                    findings.append(Finding(path, line, "high-entropy", offset))
            if not any(needle in datas.lowered for _lit, needle in needles):
                continue
            lowered = data.lower()
            for _lit, needle in needles:
                found = lowered.find(needle)
                if found >= 0:
                    findings.append(
                        Finding(
                            path, data.count(b"\n", 0, found) + 1, "repo-identifier-leak", found
                        )
                    )
    return findings


_GROUP = 512
"""Objects whose bytes are screened together (a cartridge of 100,000 memories has 100,000)."""


class _Group:
    """What can be ruled out for a whole group of objects at once, exactly.

    The group's bytes are joined with NUL, which no needle, no rule match and no high-entropy
    token contains, so a needle or token absent from the join is absent from every member: the
    per-object scan then skips it, and finds exactly what it would have found without the screen.
    """

    def __init__(self, parts: Iterable[bytes]) -> None:
        joined = b"\0".join(parts)
        self.lowered = joined.lower()
        self.rules = frozenset(
            rule for rule, _ in _RULES if any(n in self.lowered for n in _NEEDLES[rule])
        )
        self.may_match = bool(self.rules)
        self.may_be_random = _may_be_random(joined)


def _scan_one(path: str, data: bytes, rules: frozenset[str], *, name_only: bool) -> list[Finding]:
    found: list[Finding] = []
    lowered = data.lower()
    for rule, pattern in _RULES:
        if rule not in rules or not any(needle in lowered for needle in _NEEDLES[rule]):
            continue
        for match in pattern.finditer(data):
            line = 0 if name_only else data.count(b"\n", 0, match.start()) + 1
            found.append(Finding(path, line, rule, match.start()))
    return found


def require_clean(objects: Mapping[str, bytes], literals: Iterable[str] = ()) -> None:
    """Raise :class:`ScrubBlocked` if :func:`scan` finds anything; return only when clean."""
    require_none(scan(objects, literals))


def require_none(findings: list[Finding]) -> None:
    """Raise :class:`ScrubBlocked` naming ``findings`` (in their order), if there are any."""
    if findings:
        shown = "; ".join(str(f) for f in findings[:10])
        more = f" (and {len(findings) - 10} more)" if len(findings) > 10 else ""
        raise ScrubBlocked(
            f"scrub gate blocked signing: {len(findings)} finding(s): {shown}{more}; "
            "remove the secret or path and build again"
        )


__all__ = ["Finding", "require_clean", "require_none", "scan"]
