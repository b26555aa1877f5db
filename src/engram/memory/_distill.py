"""``distill``: raw debugging episodes become one reusable ``known_process`` or ``invariant``.

Spec: engram.ote.v1 & MCP contract (Part V, Plate 03, §3.2) engram_distill. Offline the distiller is
extractive and deterministic: it splits the episodes into sentences, scores each by how many
distinct episodes share its terms (what recurs is what generalises) plus cue words (cause, fix,
steps for a process; must/always/never for an invariant), and keeps the best few in their original
order. With an OpenAI-compatible chat endpoint configured, an LLM writes the text instead; a failure
of that endpoint falls back to the extractive text when ``fail_open`` is true. The result is
recorded like any memory, with provenance naming the episodes' digests and the distiller.
"""

from __future__ import annotations

import hashlib
import re
from collections import Counter
from collections.abc import Sequence
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:  # httpx costs 70 ms to import: only a remote stage needs it
    import httpx

from engram.errors import InvalidRequest, RemoteError
from engram.memory._chat import ChatModel
from engram.memory._engine import MemoryEngine, record
from engram.memory._models import RecordResult
from engram.memory._text import terms

KINDS = ("known_process", "invariant")
_SENTENCE = re.compile(r"(?<=[.!?])\s+|\n+")
_CUES = {
    "known_process": re.compile(
        r"\b(because|root cause|caused|fix(ed|es)?|solv|resolv|workaround|"
        r"run|ran|set|use|restart|clear|upgrade|pin|error|fail)",
        re.I,
    ),
    "invariant": re.compile(
        r"\b(must|always|never|should|only|requires?|invariant|guarantee)", re.I
    ),
}


class Distiller(Protocol):
    name: str

    def distill(self, episodes: Sequence[str], kind: str) -> str: ...


class ExtractiveDistiller:
    """Deterministic, offline: the best-supported sentences of the episodes."""

    name = "extractive-v1"

    def __init__(self, max_sentences: int = 5) -> None:
        self.max_sentences = max_sentences

    def distill(self, episodes: Sequence[str], kind: str) -> str:
        sentences: list[tuple[int, int, str]] = []
        support: Counter[str] = Counter()
        for e_index, episode in enumerate(episodes):
            for s_index, raw in enumerate(_SENTENCE.split(episode)):
                text = raw.strip(" -*\t")
                if len(text) >= 8:
                    sentences.append((e_index, s_index, text))
            support.update(set(terms(episode)))
        scored = []
        for position, (_, _, text) in enumerate(sentences):
            ts = set(terms(text))
            if not ts:
                continue
            shared = sum(support[t] - 1 for t in ts) / len(ts)
            cue = 1.5 if _CUES[kind].search(text) else 0.0
            scored.append((shared + cue, -position, text))
        best = sorted(scored, reverse=True)[: self.max_sentences]
        chosen: list[str] = []
        for _, neg_pos, text in sorted(best, key=lambda item: -item[1]):
            del neg_pos
            if text not in chosen:
                chosen.append(text)
        if not chosen:
            raise InvalidRequest("episodes: nothing to distill (no sentence with content words)")
        if kind == "invariant":
            return "Invariant: " + " ".join(chosen)
        return "Known process: " + " ".join(f"({i}) {t}" for i, t in enumerate(chosen, 1))


class ChatDistiller:
    """An OpenAI-compatible ``/v1/chat/completions`` endpoint writes the distilled text."""

    name = "llm"

    def __init__(
        self,
        endpoint: str,
        model: str,
        timeout: float = 60.0,
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        self._model = ChatModel(endpoint, model, timeout, transport)
        self.url = self._model.url
        self.model = model
        self.name = f"llm:{model}"

    def distill(self, episodes: Sequence[str], kind: str) -> str:
        goal = (
            "a reusable known process: the symptom, the cause and the numbered steps that fix it"
            if kind == "known_process"
            else "one invariant that must always hold"
        )
        prompt = (
            f"Distill these debugging episodes into {goal}. Answer with the text only, at "
            "most 120 words.\n\n" + "\n\n---\n\n".join(episodes)
        )
        text = self._model.complete(prompt, "distillation")
        if not text.strip():
            raise RemoteError(f"{self.url}: no distilled text in the response")
        return text.strip()


def distill(
    engine: MemoryEngine,
    episodes: Sequence[str],
    kind: str = "known_process",
    ring: str = "M4",
    *,
    llm: Distiller | None = None,
) -> RecordResult:
    """Distill ``episodes`` into one memory of ``kind`` recorded into ``ring``."""
    if kind not in KINDS:
        raise InvalidRequest(f"kind: expected one of {', '.join(KINDS)}, got {kind!r}")
    if not episodes or not all(isinstance(e, str) and e.strip() for e in episodes):
        raise InvalidRequest("episodes: expected one or more non-empty texts")
    distiller: Distiller = llm or ExtractiveDistiller()
    try:
        text = distiller.distill(episodes, kind)
    except RemoteError:
        if not engine.spec.retrieval.fail_open:
            raise
        distiller = ExtractiveDistiller()
        text = distiller.distill(episodes, kind)
    provenance = {
        "distiller": distiller.name,
        "episodes": ["sha256:" + hashlib.sha256(e.encode("utf-8")).hexdigest() for e in episodes],
    }
    return record(engine, text, kind, ring, provenance)


__all__ = ["ChatDistiller", "Distiller", "ExtractiveDistiller", "distill"]
