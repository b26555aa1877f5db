"""engram.registry: the ACX git registry, its index, its PR gate and the static Exchange.

Spec: lboel/acx@85f1358 SPEC.md §17 (coordinates and immutable paths, SemVer, signed lineage,
pinned dependencies, the lifecycle ledger, the static build and browser-verification boundary,
sharing by pull request, namespace and commerce boundaries); our decisions are in
docs/spec/acx-registry.md. :func:`build_index` verifies every live artifact and projects the
accepted ones into ``acx.registry-index/1``; :func:`check_registry` is the gate a registry's CI
runs on a pull request (history included); :func:`share` places a verified artifact at its
coordinate; :func:`build_site` writes the static Exchange.
"""

from typing import TYPE_CHECKING

from engram.core.lazy import lazy_attributes as _lazy_attributes

# Names bind on first use (engram.core.lazy): `engram cartridge level --help` and every other
# command's help import none of this package's modules (issue 33).
if TYPE_CHECKING:
    from engram.registry._artifacts import LevelResolver, ResolvedLevel
    from engram.registry._check import check_registry
    from engram.registry._index import IndexBuild, build_index
    from engram.registry._layout import Coordinate
    from engram.registry._problems import Problem, RegistryRefused
    from engram.registry._remix import remix_draft
    from engram.registry._share import share
    from engram.registry._site import build_site
    from engram.registry._status import Ledger, load_ledger

_LAZY: dict[str, str] = {
    "LevelResolver": "engram.registry._artifacts",
    "ResolvedLevel": "engram.registry._artifacts",
    "check_registry": "engram.registry._check",
    "IndexBuild": "engram.registry._index",
    "build_index": "engram.registry._index",
    "Coordinate": "engram.registry._layout",
    "Problem": "engram.registry._problems",
    "RegistryRefused": "engram.registry._problems",
    "remix_draft": "engram.registry._remix",
    "share": "engram.registry._share",
    "build_site": "engram.registry._site",
    "Ledger": "engram.registry._status",
    "load_ledger": "engram.registry._status",
}

__all__ = [
    "Coordinate",
    "IndexBuild",
    "Ledger",
    "LevelResolver",
    "Problem",
    "RegistryRefused",
    "ResolvedLevel",
    "build_index",
    "build_site",
    "check_registry",
    "load_ledger",
    "remix_draft",
    "share",
]

if not TYPE_CHECKING:  # type checkers read the imports above, so a misspelt name stays an error
    __getattr__ = _lazy_attributes(__name__, _LAZY, globals())
