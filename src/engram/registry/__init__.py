"""engram.registry: the ACX git registry, its index, its PR gate and the static Exchange.

Spec: lboel/acx@85f1358 SPEC.md §17 (coordinates and immutable paths, SemVer, signed lineage,
pinned dependencies, the lifecycle ledger, the static build and browser-verification boundary,
sharing by pull request, namespace and commerce boundaries); our decisions are in
docs/spec/acx-registry.md. :func:`build_index` verifies every live artifact and projects the
accepted ones into ``acx.registry-index/1``; :func:`check_registry` is the gate a registry's CI
runs on a pull request (history included); :func:`share` places a verified artifact at its
coordinate; :func:`build_site` writes the static Exchange.
"""

from engram.registry._artifacts import LevelResolver, ResolvedLevel
from engram.registry._check import check_registry
from engram.registry._documents import lineage_problems
from engram.registry._history import history_problems
from engram.registry._index import SCHEMA_VERSION, IndexBuild, build_index, index_bytes
from engram.registry._layout import (
    AGENT,
    AGENT_GRAPH,
    ARTIFACT_TYPES,
    INDEX_FILE,
    WORKFLOW,
    Coordinate,
    canonical_path,
    semver_key,
)
from engram.registry._policy import policy_problems
from engram.registry._problems import Problem, RegistryRefused, problem_line, problem_wire
from engram.registry._remix import RELATIONS, remix_draft
from engram.registry._share import share
from engram.registry._site import build_site
from engram.registry._status import Ledger, load_ledger

__all__ = [
    "AGENT",
    "AGENT_GRAPH",
    "ARTIFACT_TYPES",
    "INDEX_FILE",
    "RELATIONS",
    "SCHEMA_VERSION",
    "WORKFLOW",
    "Coordinate",
    "IndexBuild",
    "Ledger",
    "LevelResolver",
    "Problem",
    "RegistryRefused",
    "ResolvedLevel",
    "build_index",
    "build_site",
    "canonical_path",
    "check_registry",
    "history_problems",
    "index_bytes",
    "lineage_problems",
    "load_ledger",
    "policy_problems",
    "problem_line",
    "problem_wire",
    "remix_draft",
    "semver_key",
    "share",
]
