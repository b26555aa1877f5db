"""engram.ote.v1 seat manifests: parse and validate every key, with errors naming file and key.

Spec: engram.ote.v1 & MCP contract (Part V, Plate 03, §3.1) "engram.ote.v1 TOML Schema". Our
decisions where the schema is silent (ranges, ring-id prefixes, unknown keys refused, endpoints) are
in ``docs/spec/memory-manifest.md``.
"""

from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any, Literal

import re2  # type: ignore[import-untyped]

from engram.errors import ManifestError
from engram.memory._toml_reader import TableReader

SCHEMA_VERSION = "engram.ote.v1"
RINGS: tuple[str, ...] = ("M0", "M1", "M2", "M3", "M4")
WRITABLE_RINGS = frozenset({"M2", "M3", "M4"})
# A ring id says what it names; pre-S2 stores used canon:fleet for M0 (`engram migrate --rings`).
RING_PREFIX = {"M0": "canon:", "M1": "archetype:", "M2": "repo:", "M3": "team:", "M4": "seat:"}
# "minilm-l6-v2" is engram's addition: the bundled offline model (engram.memory._minilm);
# "minilm-l6-v2-static" too: a static embedding distilled from it (engram.memory._static).
EMBEDDING_PROVIDERS = ("local-hash-128", "remote-openai", "minilm-l6-v2", "minilm-l6-v2-static")
RERANK_PROVIDERS = ("vllm-rerank", "remote-openai")
MAX_DENSE_CONTEXT = 8

Access = Literal["read_only", "read_write"]
_ID = re.compile(r"^[a-z][a-z0-9_-]*:[A-Za-z0-9][A-Za-z0-9._-]{0,127}$")
_DOMAIN = re.compile(r"^[a-z0-9][a-z0-9._-]{0,63}$")
_KIND = re.compile(r"^[a-z][a-z0-9_]{0,63}$")
# A manifest is untrusted input (it may come with a cloned repository): bounded in size, in
# nesting (tomllib recurses), and its entity_patterns run on RE2, in time linear in the text.
MAX_MANIFEST_BYTES = 1 << 20
MAX_PATTERNS = 64
MAX_PATTERN_CHARS = 1_000
_RE2_MEMORY = 8 << 20


def _re2_options() -> Any:
    options = re2.Options()
    options.log_errors = False  # a refused pattern is our error message, not a line on stderr
    options.max_mem = _RE2_MEMORY
    return options


@lru_cache(maxsize=256)
def compile_pattern(pattern: str) -> Any:
    """An entity pattern compiled by RE2 (raises ``re2.error`` for what RE2 refuses:
    backreferences, lookaround, and programs over the memory bound)."""
    return re2.compile(pattern, _re2_options())


@dataclass(frozen=True)
class Seat:
    seat_id: str
    archetype: str
    keyspace_budget_tokens: int


@dataclass(frozen=True)
class Ontology:
    domain: str
    allowed_kinds: tuple[str, ...]
    entity_patterns: tuple[str, ...]

    def compiled_patterns(self) -> tuple[Any, ...]:
        """The entity patterns as RE2 programs (linear-time matching; compiled once)."""
        return tuple(compile_pattern(p) for p in self.entity_patterns)


@dataclass(frozen=True)
class Mount:
    ring: str
    ring_id: str
    access: Access
    budget_share_pct: int

    @property
    def writable(self) -> bool:
        return self.access == "read_write" and self.ring in WRITABLE_RINGS


@dataclass(frozen=True)
class Epistemology:
    credible_z: float = 1.96
    graduation_lcb_threshold: float = 0.78
    graduation_min_samples: float = 8.0
    nomination_lcb_threshold: float = 0.85
    nomination_min_verifications: int = 5


@dataclass(frozen=True)
class Attestation:
    allowed_signers: Path  # resolved: absolute, or relative to the manifest's directory
    allowed_signers_text: str  # as written in the manifest
    reverify_fraction: float


@dataclass(frozen=True)
class Reranker:
    enabled: bool = False
    provider: str = "vllm-rerank"
    model: str = ""
    prompt_template: str = ""
    candidates_k: int = 20
    guaranteed_dense_k: int = 5
    endpoint: str | None = None


@dataclass(frozen=True)
class Retrieval:
    embedding_provider: str = "local-hash-128"
    embedding_model: str = ""
    embedding_dims: int = 128
    fail_open: bool = True
    embedding_endpoint: str | None = None
    timeout_seconds: float = 5.0
    reranker: Reranker = field(default_factory=Reranker)
    # Earlier memories of the same thread the dense model reads before a memory (engram's
    # addition; docs/spec/memory-retrieval.md "Dense context").
    dense_context: int = 2

    @property
    def dense_enabled(self) -> bool:
        """A remote /v1/embeddings endpoint computes the dense vectors."""
        return self.embedding_provider == "remote-openai"

    @property
    def local_dense(self) -> bool:
        """The bundled all-MiniLM-L6-v2 model, or its distilled static table, computes them,
        offline."""
        return self.embedding_provider in ("minilm-l6-v2", "minilm-l6-v2-static")


@dataclass(frozen=True)
class OteSpec:
    """One validated seat manifest."""

    seat: Seat
    ontology: Ontology
    mounts: tuple[Mount, ...]
    epistemology: Epistemology
    attestation: Attestation | None
    retrieval: Retrieval
    source: str  # the file it came from, for messages

    def mount_for(self, ring_or_id: str) -> Mount | None:
        for m in self.mounts:
            if ring_or_id in (m.ring, m.ring_id):
                return m
        return None

    @property
    def ring_ids(self) -> tuple[str, ...]:
        return tuple(m.ring_id for m in self.mounts)


def _url(reader: TableReader, key: str) -> str | None:
    value = reader.string(
        key,
        required=False,
        default="",
        what="an http(s) URL",
        pattern=re.compile(r"^https?://[^\s]+$"),
    )
    return value.rstrip("/") or None


def _allowed_signers(reader: TableReader, base: Path | None) -> tuple[Path, str]:
    text = reader.string(
        "allowed_signers", what="a file path (absolute or relative to the manifest)"
    )
    # Never a git ref: a ref could be moved by whoever can push, so the anchor must be a file.
    if ":" in text or text.startswith("refs/") or text in ("HEAD", "FETCH_HEAD") or "@{" in text:
        raise reader.fail("allowed_signers", "a file path, never a git ref", text)
    path = Path(text)
    if not path.is_absolute():
        path = (base or Path.cwd()) / path
    return path, text


def _mount(source: str, index: int, raw: object, seat_id: str) -> Mount:
    if not isinstance(raw, dict):
        raise ManifestError(f"{source}: topology.mounts[{index}]: expected a table, got {raw!r}")
    r = TableReader(source, raw, f"topology.mounts[{index}].")
    ring = r.choice("ring", RINGS)
    ring_id = r.string("ring_id", pattern=_ID, what="a ring id such as 'repo:0123abcd'")
    if not ring_id.startswith(RING_PREFIX[ring]):
        raise r.fail(
            "ring_id", f"an id starting with {RING_PREFIX[ring]!r} for ring {ring}", ring_id
        )
    access = r.choice("access", ("read_only", "read_write"))
    if access == "read_write" and ring not in WRITABLE_RINGS:
        raise r.fail("access", f"'read_only' (ring {ring} is canon: no seat writes it)", access)
    if ring == "M4" and access == "read_write" and ring_id != seat_id:
        # Engram scopes M4 evidence to the seat whose id equals the ring id.
        raise r.fail(
            "access", f"'read_only' for another seat's M4 ring (seat is {seat_id!r})", access
        )
    share = r.integer("budget_share_pct", 0, 100)
    r.done()
    return Mount(
        ring=ring,
        ring_id=ring_id,
        access=access,  # type: ignore[arg-type]
        budget_share_pct=share,
    )


def parse_manifest(text: str, source: str = "<ote>", base_dir: Path | None = None) -> OteSpec:
    """Parse and validate engram.ote.v1 TOML text; raise ManifestError naming source and key."""
    if len(text) > MAX_MANIFEST_BYTES:
        raise ManifestError(f"{source}: a manifest is at most {MAX_MANIFEST_BYTES:,} characters")
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise ManifestError(f"{source}: not valid TOML: {e}") from e
    except RecursionError as e:
        raise ManifestError(f"{source}: not valid TOML: arrays or tables nested too deeply") from e
    top = TableReader(source, data, "")
    version = top.raw("schema_version", True)
    if version != SCHEMA_VERSION:
        raise top.fail("schema_version", repr(SCHEMA_VERSION), version)

    seat_t = top.table_of("seat", required=True)
    assert seat_t is not None
    s = TableReader(source, seat_t, "seat.")
    seat = Seat(
        seat_id=s.string("seat_id", pattern=_ID, what="an id such as 'seat:core-exec-01'"),
        archetype=s.string("archetype", pattern=_ID, what="an id such as 'archetype:general'"),
        keyspace_budget_tokens=s.integer("keyspace_budget_tokens", 1, 1_000_000),
    )
    if not seat.seat_id.startswith("seat:"):
        raise s.fail("seat_id", "an id starting with 'seat:'", seat.seat_id)
    if not seat.archetype.startswith("archetype:"):
        raise s.fail("archetype", "an id starting with 'archetype:'", seat.archetype)
    s.done()

    onto_t = top.table_of("ontology", required=True)
    assert onto_t is not None
    o = TableReader(source, onto_t, "ontology.")
    domain = o.string(
        "domain", pattern=_DOMAIN, what="a lower-case domain name such as 'acme-core'"
    )
    kinds = o.strings("allowed_kinds", pattern=_KIND, nonempty=True, what="kind names ([a-z_])")
    patterns = o.strings(
        "entity_patterns", nonempty=False, what="regular expressions", required=False
    )
    if len(patterns) > MAX_PATTERNS:
        raise o.fail("entity_patterns", f"at most {MAX_PATTERNS} patterns", len(patterns))
    for p in patterns:
        if len(p) > MAX_PATTERN_CHARS:
            raise o.fail(
                "entity_patterns", f"patterns of at most {MAX_PATTERN_CHARS} characters", p[:40]
            )
        try:
            compile_pattern(p)
        except re2.error as e:
            reason = (
                e.args[0].decode("utf-8", "replace")
                if e.args and isinstance(e.args[0], bytes)
                else str(e)
            )
            raise o.fail(
                "entity_patterns",
                f"valid regular expressions in RE2 syntax (linear time: no backreferences or "
                f"lookaround; {reason})",
                p,
            ) from e
    o.done()
    ontology = Ontology(domain=domain, allowed_kinds=kinds, entity_patterns=patterns)

    topo_t = top.table_of("topology", required=True)
    assert topo_t is not None
    t = TableReader(source, topo_t, "topology.")
    raw_mounts = t.raw("mounts", True)
    t.done()
    if not isinstance(raw_mounts, list) or not raw_mounts:
        raise t.fail("mounts", "a non-empty array of tables ([[topology.mounts]])", raw_mounts)
    mounts = tuple(_mount(source, i, m, seat.seat_id) for i, m in enumerate(raw_mounts))
    ids = [m.ring_id for m in mounts]
    if len(set(ids)) != len(ids):
        raise t.fail("mounts", "each ring_id mounted once", ids)
    if sum(m.budget_share_pct for m in mounts) > 100:
        raise t.fail(
            "mounts",
            "budget_share_pct values that add up to at most 100",
            sum(m.budget_share_pct for m in mounts),
        )

    epi = Epistemology()
    epi_t = top.table_of("epistemology", required=True)
    if epi_t is not None:
        ep = TableReader(source, epi_t, "epistemology.")
        epi = Epistemology(
            credible_z=ep.number("credible_z", 0.0, 10.0, open_low=True),
            graduation_lcb_threshold=ep.number(
                "graduation_lcb_threshold", 0.0, 1.0, open_low=True, open_high=True
            ),
            graduation_min_samples=ep.number("graduation_min_samples", 0.0, 1e6),
            nomination_lcb_threshold=ep.number(
                "nomination_lcb_threshold", 0.0, 1.0, open_low=True, open_high=True
            ),
            nomination_min_verifications=ep.integer("nomination_min_verifications", 0, 1_000_000),
        )
        ep.done()

    attestation = None
    att_t = top.table_of("attestation", required=False)
    if att_t is not None:
        a = TableReader(source, att_t, "attestation.")
        path, as_written = _allowed_signers(a, base_dir)
        attestation = Attestation(
            path, as_written, a.number("reverify_fraction", 0.0, 1.0, required=False, default=0.0)
        )
        a.done()

    retrieval = Retrieval()
    ret_t = top.table_of("retrieval", required=False)
    if ret_t is not None:
        r = TableReader(source, ret_t, "retrieval.")
        reranker = Reranker()
        rr_t = r.table_of("reranker", required=False)
        if rr_t is not None:
            k = TableReader(source, rr_t, "retrieval.reranker.")
            candidates = k.integer("candidates_k", 1, 1000, required=False, default=20)
            reranker = Reranker(
                enabled=k.boolean("enabled", required=False, default=False),
                provider=k.choice(
                    "provider", RERANK_PROVIDERS, required=False, default="vllm-rerank"
                ),
                model=k.string("model", required=False),
                prompt_template=k.string("prompt_template", required=False),
                candidates_k=candidates,
                guaranteed_dense_k=k.integer(
                    "guaranteed_dense_k", 0, candidates, required=False, default=min(5, candidates)
                ),
                endpoint=_url(k, "endpoint"),
            )
            if reranker.enabled and not reranker.model:
                raise k.fail("model", "a model name when the reranker is enabled")
            k.done()
        provider = r.choice(
            "embedding_provider", EMBEDDING_PROVIDERS, required=False, default="local-hash-128"
        )
        retrieval = Retrieval(
            embedding_provider=provider,
            embedding_model=r.string("embedding_model", required=provider == "remote-openai"),
            embedding_dims=r.integer("embedding_dims", 1, 65536, required=False, default=128),
            fail_open=r.boolean("fail_open", required=False, default=True),
            embedding_endpoint=_url(r, "embedding_endpoint"),
            timeout_seconds=r.number(
                "timeout_seconds", 0.0, 600.0, required=False, default=5.0, open_low=True
            ),
            reranker=reranker,
            dense_context=r.integer(
                "dense_context", 0, MAX_DENSE_CONTEXT, required=False, default=2
            ),
        )
        r.done()
    top.done()
    return OteSpec(seat, ontology, mounts, epi, attestation, retrieval, source)


def load_manifest(path: Path) -> OteSpec:
    """Read and validate a manifest file; relative anchors resolve against its directory."""
    try:
        if path.stat().st_size > MAX_MANIFEST_BYTES or not path.is_file():
            raise ManifestError(
                f"{path}: not a manifest (a regular file of at most {MAX_MANIFEST_BYTES:,} bytes)"
            )
        text = path.read_text(encoding="utf-8")
    except OSError as e:
        raise ManifestError(f"{path}: cannot read the manifest: {e.strerror or e}") from e
    except UnicodeDecodeError as e:
        raise ManifestError(f"{path}: not UTF-8 text") from e
    return parse_manifest(text, str(path), path.resolve().parent)


def find_manifest(start: Path) -> Path | None:
    """The nearest ``.engram/ote.toml`` at or above ``start``."""
    for directory in (start.resolve(), *start.resolve().parents):
        candidate = directory / ".engram" / "ote.toml"
        if candidate.is_file():
            return candidate
    return None


__all__ = [
    "RINGS",
    "SCHEMA_VERSION",
    "Attestation",
    "Epistemology",
    "Mount",
    "Ontology",
    "OteSpec",
    "Reranker",
    "Retrieval",
    "Seat",
    "find_manifest",
    "load_manifest",
    "parse_manifest",
]
