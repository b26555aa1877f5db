"""engram.oci's names for other engram packages, benchmarks and tests: not public API.

The manifest builders and checks, the bearer challenge parser, the referrers fallback tag and the
pull defaults, for the CLI and the tests.

They import them from here rather than from the private modules, so those modules can be rearranged
with one place to keep working. Nothing here is a stable API: names may change or go in any
release. Applications use ``engram.oci`` (its ``__all__``).
"""

from typing import TYPE_CHECKING

from engram.core.lazy import lazy_attributes as _lazy_attributes

if TYPE_CHECKING:
    from engram.oci._auth import parse_challenge
    from engram.oci._distribute import DEFAULT_PULL_ACCEPT
    from engram.oci._limits import DEFAULT_MAX_LAYER
    from engram.oci._manifest import cartridge_manifest, check_cartridge_manifest
    from engram.oci._media import referrers_tag

# Bound on first use (engram.core.lazy), as the package's own names are: importing this module
# loads none of the modules it names.
_LAZY = {
    "parse_challenge": "engram.oci._auth",
    "DEFAULT_PULL_ACCEPT": "engram.oci._distribute",
    "DEFAULT_MAX_LAYER": "engram.oci._limits",
    "cartridge_manifest": "engram.oci._manifest",
    "check_cartridge_manifest": "engram.oci._manifest",
    "referrers_tag": "engram.oci._media",
}

__all__ = [
    "DEFAULT_MAX_LAYER",
    "DEFAULT_PULL_ACCEPT",
    "cartridge_manifest",
    "check_cartridge_manifest",
    "parse_challenge",
    "referrers_tag",
]

if not TYPE_CHECKING:  # type checkers read the imports above, so a misspelt name stays an error
    __getattr__ = _lazy_attributes(__name__, _LAZY, globals())
