"""Benchmark ``canonical``: canonicalise + Ed25519-sign an export-sized document.

Workload: an Engram export (Engram v0.1 Conformance "Minimal valid export") carrying 10, 200 and
2,000 beliefs {id, category, statement, confidence, source, created_at, updated_at, version}.

Contenders, all timed in the same run:

- baseline: ``json.dumps(sort_keys=True, separators=(",", ":"), ensure_ascii=False)`` + sign.
  Not RFC 8785 (it writes ``1.0`` where JCS writes ``1``, sorts by code point, skips the I-JSON
  checks), so it is only the speed to aim at.
- engram: ``engram.core.canonicalize`` (I-JSON checks + RFC 8785 bytes) + sign.
- rfc8785: the ``rfc8785`` package alone (no I-JSON checks) + sign: the reference implementation.

Before timing, the run asserts that engram's bytes equal rfc8785's for every document.
"""

from __future__ import annotations

import json
import random
from collections.abc import Callable
from typing import Any

import rfc8785

from bench._harness import Case, Contender, measure, report
from engram.core.canonical import canonicalize
from engram.core.keys import PrivateKey

SIZES = (10, 200, 2000)
CATEGORIES = ("preferences", "work", "health", "financial", "relationships", "skills", "goals")
SOURCES = ("conversation", "user_edit", "import", "inference")
WORDS = (
    *("prefers", "concise", "answers", "works", "remotely", "from", "Lisbon", "café", "naïve"),
    *("résumé", "deadline", "Tuesday", "mornings", "vegetarian", "climbing", "Rust", "Python"),
    *("coffee", "東京", "tea", "avoids", "meetings", "after", "17:00", "—", "dark", "mode"),
)


def export_document(beliefs: int, seed: int = 8785) -> dict[str, Any]:
    """A deterministic export with ``beliefs`` beliefs, shaped like the spec's fixture."""
    rng = random.Random(seed)
    return {
        "engram_version": "0.1",
        "issued_at": "2026-01-01T10:00:00Z",
        "expires_at": "2026-01-01T22:00:00Z",
        "kid": "test-key-001",
        "issuer": {"name": "Test Provider", "url": "https://example.com"},
        "subject": {"id": "550e8400-e29b-41d4-a716-446655440000", "display_name": "Test User"},
        "scope": "full",
        "identity": {
            "display_name": "Test User",
            "timezone": "UTC",
            "created_at": "2026-01-01T00:00:00Z",
            "last_updated": "2026-01-01T00:00:00Z",
        },
        "beliefs": [
            {
                "id": f"b-{index:06d}",
                "category": rng.choice(CATEGORIES),
                "statement": " ".join(rng.choices(WORDS, k=rng.randint(6, 18))),
                # Mostly two-decimal confidences, some exactly 0 or 1 (integral floats).
                "confidence": rng.choice([1.0, 0.0]) if index % 10 == 0 else round(rng.random(), 2),
                "source": rng.choice(SOURCES),
                "created_at": f"2025-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}T08:00:00Z",
                "updated_at": "2026-01-01T00:00:00Z",
                "version": rng.randint(1, 5),
            }
            for index in range(beliefs)
        ],
        "corrections": [],
        "evolution": [],
        "system_prompt_injection": "User: Test User (UTC).",
    }


def _json_dumps_bytes(document: dict[str, Any]) -> bytes:
    # The baseline being measured, not signing code: never used to sign anything in engram.
    return json.dumps(  # noqa: TID251
        document, sort_keys=True, separators=(",", ":"), ensure_ascii=False
    ).encode("utf-8")


def _signing(key: PrivateKey, serialise: Callable[[Any], bytes], doc: Any) -> Callable[[], bytes]:
    return lambda: key.sign(serialise(doc))


def cases() -> list[Case]:
    key = PrivateKey.generate()
    result = []
    for size in SIZES:
        document = export_document(size)
        canonical = canonicalize(document)
        if canonical != rfc8785.dumps(document):
            raise SystemExit(f"engram and rfc8785 disagree on the {size}-belief document")
        result.append(
            Case(
                label=f"{size:,} beliefs ({len(canonical) / 1024:,.0f} KiB)",
                contenders=[
                    Contender("json.dumps + sign", _signing(key, _json_dumps_bytes, document)),
                    Contender("engram canonicalize + sign", _signing(key, canonicalize, document)),
                    Contender("rfc8785.dumps + sign", _signing(key, rfc8785.dumps, document)),
                ],
                note="bytes checked: engram == rfc8785",
            )
        )
    return result


def main(*, rounds: int = 7) -> list[Case]:
    measured = cases()
    for case in measured:
        measure(case, rounds=rounds)
    report("canonical: canonicalise + Ed25519-sign an Engram export", measured)
    return measured
