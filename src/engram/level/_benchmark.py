"""A versioned benchmark with a public slice and a sealed held-out slice (SPEC §10.2 step 1).

The rules (docs/spec/acx-levels.md §3; the reference's ``src/level/benchmark.mjs`` computes the
same digests, which the tests check against its published values):

- tasks are ``{id, difficulty, spec}`` (+ ``artifacts``: path -> full SHA-256 of each graded
  artifact, + ``publishedAt``), sorted by id; ``benchmarkDigest`` = ``sha256:`` + hex SHA-256 of
  JCS ``{id, version, tasks}``;
- the held-out slice is the first ``floor(n × heldOutFraction)`` tasks ranked by hex SHA-256 of
  ``<seal>|<task id>``; only ``heldOutSliceDigest`` = SHA-256 of JCS(sorted held-out ids) is
  published, never the tasks;
- a benchmark with a ``cutoff`` (the newest model cutoff it is meant for) refuses a held-out
  task not published after it (post-cutoff time-slicing, the SWE-bench "verified" pattern);
- the draw for a ROM digest D orders the held-out slice by hex SHA-256 of ``<D>|draw|<id>`` and
  plays a prefix, so a second verifier replays the very same games;
- at rest the verifier's file is sealed: ChaCha20-Poly1305 under a 32-byte key only the
  verifier holds, the public part (ids, digests, public slice) readable beside it.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import math
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers.aead import ChaCha20Poly1305

from engram.core.canonical import Json, JsonObject, canonicalize, parse_strict
from engram.core.clock import parse_instant
from engram.errors import CanonicalJsonError, InvalidRequest
from engram.level._errors import LevelRefused

BENCHMARK_VERSION = "engram.benchmark/1"
SEALED_VERSION = "engram.sealed-benchmark/1"
ARTIFACT_TYPE = "application/vnd.acx.benchmark.v1"
MAX_BENCHMARK_BYTES = 1 << 24


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class Task:
    id: str
    difficulty: float
    spec: str
    artifacts: Mapping[str, str] = field(default_factory=dict)
    published_at: str | None = None

    def to_wire(self) -> JsonObject:
        out: JsonObject = {
            "id": self.id,
            "difficulty": self.difficulty,
            "spec": self.spec,
        }
        if self.artifacts:
            out["artifacts"] = dict(self.artifacts)
        if self.published_at is not None:
            out["publishedAt"] = self.published_at
        return out


@dataclass(frozen=True)
class Benchmark:
    id: str
    version: str
    name: str
    tasks: tuple[Task, ...]
    seal: str = field(repr=False)
    held_out_fraction: float = 0.6
    cutoff: str | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "tasks", tuple(sorted(self.tasks, key=lambda t: t.id)))
        ids = [t.id for t in self.tasks]
        if len(set(ids)) != len(ids):
            raise InvalidRequest("benchmark task ids repeat")
        if not 0 < self.held_out_fraction < 1:
            raise InvalidRequest("heldOutFraction is between 0 and 1")
        if self.cutoff is not None:
            limit = parse_instant(self.cutoff)
            for task in self.held_out:
                if task.published_at is None or parse_instant(task.published_at) <= limit:
                    raise LevelRefused(
                        f"held-out task {task.id} is not published after the cutoff {self.cutoff}"
                    )

    @property
    def coordinate(self) -> str:
        return f"{self.id}@{self.version}"

    @cached_property
    def digest(self) -> str:
        body = {"id": self.id, "version": self.version, "tasks": [t.to_wire() for t in self.tasks]}
        return "sha256:" + hashlib.sha256(canonicalize(body)).hexdigest()

    @cached_property
    def held_out(self) -> tuple[Task, ...]:
        count = math.floor(len(self.tasks) * self.held_out_fraction)
        ranked = sorted(self.tasks, key=lambda t: _sha(f"{self.seal}|{t.id}"))
        return tuple(ranked[:count])

    @cached_property
    def public_slice(self) -> tuple[Task, ...]:
        sealed = {t.id for t in self.held_out}
        return tuple(t for t in self.tasks if t.id not in sealed)

    @cached_property
    def held_out_slice_digest(self) -> str:
        ids = sorted(t.id for t in self.held_out)
        return "sha256:" + hashlib.sha256(canonicalize(ids)).hexdigest()

    def draw(self, rom_digest: str, count: int) -> list[Task]:
        """The first ``count`` held-out tasks in the draw order keyed by ``rom_digest``."""
        if count < 1:
            raise InvalidRequest("draw at least one task")
        order = sorted(self.held_out, key=lambda t: _sha(f"{rom_digest}|draw|{t.id}"))
        return order[:count]

    def public_view(self) -> JsonObject:
        """What may be published: identity, digests and the public slice, never held-out tasks."""
        return {
            "id": self.id,
            "version": self.version,
            "name": self.name,
            "artifactType": ARTIFACT_TYPE,
            "benchmarkDigest": self.digest,
            "heldOutSliceDigest": self.held_out_slice_digest,
            "taskCount": len(self.tasks),
            "heldOutCount": len(self.held_out),
            "publicSlice": [t.to_wire() for t in self.public_slice],
        }

    def to_wire(self) -> JsonObject:
        """The verifier's private file (held-out tasks and the seal in the clear)."""
        out: JsonObject = {
            "schemaVersion": BENCHMARK_VERSION,
            "id": self.id,
            "version": self.version,
            "name": self.name,
            "seal": self.seal,
            "heldOutFraction": self.held_out_fraction,
            "tasks": [t.to_wire() for t in self.tasks],
        }
        if self.cutoff is not None:
            out["cutoff"] = self.cutoff
        return out


def demo_benchmark() -> Benchmark:
    """The reference's ``demoDagBenchmark()``: 160 DAG tasks of difficulty 15 + (i mod 34)."""
    tasks = tuple(
        Task(
            id=f"dag-task-{i:03d}",
            difficulty=15 + (i % 34),
            spec=f"build+backfill a partitioned Airflow DAG, variant {i}",
        )
        for i in range(160)
    )
    return Benchmark(
        id="acx-bench-dag-de",
        version="2026.07.1",
        name="Data-Engineering DAG Construction (Airflow+Snowflake)",
        tasks=tasks,
        seal="held-out-sealed-key-7f3a",
        held_out_fraction=0.6,
    )


def load_benchmark(data: bytes, *, key: bytes | None = None) -> Benchmark:
    """Read a verifier's benchmark file, plain or sealed (then ``key`` opens it)."""
    document = _object(data, "benchmark")
    if document.get("schemaVersion") == SEALED_VERSION:
        if key is None:
            raise LevelRefused("the benchmark is sealed: give the verifier's benchmark key")
        return _open_sealed(document, key)
    if document.get("schemaVersion") != BENCHMARK_VERSION:
        raise InvalidRequest(
            f"benchmark schemaVersion {document.get('schemaVersion')!r} is not {BENCHMARK_VERSION}"
        )
    return _from_wire(document)


def seal_benchmark(benchmark: Benchmark, key: bytes, *, nonce: bytes | None = None) -> bytes:
    """The sealed file: public view in the clear, the whole benchmark encrypted under ``key``."""
    if len(key) != 32:
        raise InvalidRequest("a benchmark key is 32 bytes")
    nonce = nonce if nonce is not None else os.urandom(12)
    plaintext = canonicalize(benchmark.to_wire())
    sealed = ChaCha20Poly1305(key).encrypt(nonce, plaintext, benchmark.coordinate.encode("utf-8"))
    document = {
        "schemaVersion": SEALED_VERSION,
        **benchmark.public_view(),
        "sealed": base64.urlsafe_b64encode(nonce + sealed).rstrip(b"=").decode("ascii"),
    }
    return canonicalize(document)


def _open_sealed(document: JsonObject, key: bytes) -> Benchmark:
    if len(key) != 32:
        raise InvalidRequest("a benchmark key is 32 bytes")
    try:
        sealed = document["sealed"]
        if not isinstance(sealed, str):
            raise TypeError("sealed is not a string")
        blob = base64.urlsafe_b64decode(sealed + "=" * (-len(sealed) % 4))
        coordinate = f"{document['id']}@{document['version']}".encode()
        plaintext = ChaCha20Poly1305(key).decrypt(blob[:12], blob[12:], coordinate)
    except (KeyError, TypeError, binascii.Error, ValueError, InvalidTag) as e:
        raise LevelRefused("the sealed benchmark does not open with this key") from e
    benchmark = _from_wire(_object(plaintext, "sealed benchmark"))
    if (benchmark.digest, benchmark.held_out_slice_digest) != (
        document.get("benchmarkDigest"),
        document.get("heldOutSliceDigest"),
    ):
        raise LevelRefused("the sealed benchmark's digests differ from its public part")
    return benchmark


def _object(data: bytes, what: str) -> JsonObject:
    if len(data) > MAX_BENCHMARK_BYTES:
        raise InvalidRequest(f"{what}: more than {MAX_BENCHMARK_BYTES} bytes")
    try:
        value = parse_strict(data)
    except CanonicalJsonError as e:
        raise InvalidRequest(f"{what} is not I-JSON: {e.message}") from e
    if not isinstance(value, dict):
        raise InvalidRequest(f"{what} is not a JSON object")
    return value


def _from_wire(document: Mapping[str, Json]) -> Benchmark:
    try:
        listed, fraction = document["tasks"], document.get("heldOutFraction", 0.6)
        if not isinstance(listed, list):
            raise TypeError("tasks is not a list")
        if not isinstance(fraction, int | float | str):
            raise TypeError("heldOutFraction is not a number")
        cutoff = document.get("cutoff")
        if cutoff is not None and not isinstance(cutoff, str):
            raise TypeError("cutoff is not a string")
        tasks = [_task(t) for t in listed]
        return Benchmark(
            id=_text(document["id"], "id"),
            version=_text(document["version"], "version"),
            name=_text(document.get("name", document["id"]), "name"),
            tasks=tuple(tasks),
            seal=_text(document["seal"], "seal"),
            held_out_fraction=float(fraction),
            cutoff=cutoff,
        )
    except (KeyError, TypeError) as e:
        raise InvalidRequest(f"benchmark: missing or mistyped member {e}") from e


def _task(item: Json) -> Task:
    if not isinstance(item, dict):
        raise InvalidRequest("a benchmark task is an object")
    difficulty = item["difficulty"]
    if isinstance(difficulty, bool) or not isinstance(difficulty, int | float):
        raise InvalidRequest(f"task {item.get('id')!r}: difficulty is a number")
    artifacts = item.get("artifacts", {})
    if not isinstance(artifacts, dict) or not all(
        isinstance(v, str) and len(v) == 64 and all(c in "0123456789abcdef" for c in v)
        for v in artifacts.values()
    ):
        raise InvalidRequest(f"task {item.get('id')!r}: artifacts map paths to full SHA-256 hex")
    published_at = item.get("publishedAt")
    if published_at is not None and not isinstance(published_at, str):
        raise InvalidRequest(f"task {item.get('id')!r}: publishedAt is a date-time string")
    return Task(
        id=_text(item["id"], "task id"),
        difficulty=difficulty,
        spec=_text(item["spec"], "task spec"),
        artifacts={path: digest for path, digest in artifacts.items() if isinstance(digest, str)},
        published_at=published_at,
    )


def _text(value: Json, what: str) -> str:
    if not isinstance(value, str) or not value:
        raise InvalidRequest(f"benchmark {what} is a non-empty string")
    return value


def tasks_by_id(tasks: Sequence[Task]) -> dict[str, Task]:
    return {t.id: t for t in tasks}


__all__ = [
    "ARTIFACT_TYPE",
    "BENCHMARK_VERSION",
    "SEALED_VERSION",
    "Benchmark",
    "Task",
    "demo_benchmark",
    "load_benchmark",
    "seal_benchmark",
    "tasks_by_id",
]
