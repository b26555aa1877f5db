"""The fail-closed secret scan every published workflow and Agent Graph passes before signing.

Spec: lboel/acx@85f1358 SPEC.md §16.1 ("Before publication, all public metadata MUST pass a
fail-closed secret scan. Credential-like values, private keys, tokens, and other secret-like
metadata MUST be rejected; pinned sha256 workflow digests are identifiers and are excluded"),
§14.4 (RAC is a description, never content) and §7.5 (the cartridge scrub gate, whose rules are
reused here); docs/spec/acx-workflows.md §"Publication".

Every string value and every member name outside ``integrity`` is scanned, with its path. The
pattern rules are the cartridge scrub gate's (``engram.cartridge.internals.scan``: private keys,
cloud and forge tokens, JWTs, credentials in URLs, secret assignments, home paths); on top of those
a token that looks random enough to be a key (hex of 32+ characters, or base64-like text of 24+ with
high entropy) is refused, because a generic API key has no prefix a pattern could know. Pinned
digests at the places a caller names (workflow pins, lineage parents, ROM digests) are identifiers
and skipped; a ``sha256:<hex>`` anywhere else is scanned without its prefix. Findings name the path
and the rule, never the value.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterator

from engram.cartridge.internals import scan as pattern_scan
from engram.core.canonical import Json, JsonObject
from engram.core.findings import Finding
from engram.workflow._issues import member_path

_DIGEST = re.compile(r"sha256:[0-9a-f]{64}")
_TOKEN_SPLIT = re.compile(r"[\s\"'`,;()\[\]{}<>]+")
_HEX = re.compile(r"[0-9a-fA-F]{32,}")
_B64ISH = re.compile(r"[A-Za-z0-9+/_=-]{24,}")

_CONTENT_KEY = re.compile(r"^(?:content|body|message|messages|payload|transcript|token|data|raw)$")
_CREDENTIAL_KEY = re.compile(
    r"credential|password|passwd|secret|privatekey|apikey|accesstoken|authtoken|bearertoken"
    r"|refreshtoken|clienttoken|apitoken|^(?:knowledge|private|source|task)content$"
)


def scan_document(document: JsonObject, *, pinned: Callable[[str], bool]) -> list[Finding]:
    """Findings in every member name and string of ``document`` except ``integrity``.

    ``pinned(path)`` says whether the string at ``path`` is a pinned digest (an identifier the
    scan skips when it has the exact ``sha256:<64 hex>`` form).
    """
    texts: dict[str, bytes] = {}
    findings: list[Finding] = []
    for path, text in _strings(document):
        if _DIGEST.fullmatch(text):
            if pinned(path):
                continue
            text = text[len("sha256:") :]
        texts[path] = text.encode("utf-8", "surrogatepass")
        rule = _random_token(text)
        if rule is not None:
            findings.append(Finding(rule, path))
    # One pass over everything joined first: any match inside one string is a match in the
    # join, so a clean document (the usual case) is cleared in one scan instead of hundreds;
    # only when the join matches are the strings scanned one by one to say where.
    joined = b"\n".join([*(p.encode("utf-8", "surrogatepass") for p in texts), *texts.values()])
    if pattern_scan({"$": joined}):
        findings.extend(Finding(f.rule, f.path) for f in pattern_scan(texts))
    return sorted(set(findings), key=lambda f: (f.path, f.rule))


def private_keys(value: Json, path: str) -> Iterator[str]:
    """Paths of member names under ``value`` that name private content or a credential."""
    if isinstance(value, dict):
        for key, child in value.items():
            here = member_path(path, key)
            if is_private_key_name(key):
                yield here
            yield from private_keys(child, here)
    elif isinstance(value, list):
        for index, child in enumerate(value):
            yield from private_keys(child, member_path(path, index))


def is_private_key_name(key: str) -> bool:
    """``content``, ``transcript``, ``apiKey``, ``client_secret``, ... (case and separators
    ignored)."""
    normalised = re.sub(r"[^A-Za-z0-9]", "", key).lower()
    return bool(_CONTENT_KEY.match(normalised) or _CREDENTIAL_KEY.search(normalised))


def _strings(document: JsonObject) -> Iterator[tuple[str, str]]:
    def walk(value: Json, path: str) -> Iterator[tuple[str, str]]:
        if isinstance(value, str):
            yield path, value
        elif isinstance(value, dict):
            for key, child in value.items():
                here = member_path(path, key)
                yield f"{here}#name", key
                yield from walk(child, here)
        elif isinstance(value, list):
            for index, child in enumerate(value):
                yield from walk(child, member_path(path, index))

    for key, child in document.items():
        if key != "integrity":
            yield from walk(child, member_path("$", key))


def _random_token(text: str) -> str | None:
    for token in _TOKEN_SPLIT.split(text):
        token = token.removeprefix("sha256:")  # an unpinned digest is scanned as its hex
        if _HEX.fullmatch(token):
            return "high-entropy-hex"
        if _B64ISH.fullmatch(token) and (any(c.isdigit() for c in token) or len(token) >= 40):
            bits = _entropy(token)
            alphabet = len(set(token))
            if bits >= 4.0 and bits / math.log2(max(2, alphabet)) >= 0.85:
                return "high-entropy-token"
    return None


def _entropy(token: str) -> float:
    counts: dict[str, int] = {}
    for char in token:
        counts[char] = counts.get(char, 0) + 1
    n = len(token)
    return -sum(c / n * math.log2(c / n) for c in counts.values())


__all__ = ["is_private_key_name", "private_keys", "scan_document"]
