"""engram: a memory stack for AI agents that can prove what it serves."""

from typing import TYPE_CHECKING

__all__ = ["DISTRIBUTION", "__version__"]

# The name pip installs engram under. `engram` on PyPI is an unrelated project (differentiable
# rendering), so every install instruction, extra and missing-dependency hint names this one
# (docs/spec/cli.md "Installs and extras").
DISTRIBUTION = "engram-memory-stack"

if TYPE_CHECKING:  # type checkers see the attribute; at run time it is bound on first use
    __version__: str


def _version_on_first_use(name: str) -> str:
    """``__version__`` on first use (PEP 562): ``importlib.metadata`` costs about 20 ms of
    every CLI start, and most commands never print the version (issue 16, cold CLI start)."""
    if name != "__version__":
        raise AttributeError(f"module 'engram' has no attribute {name!r}")
    from importlib.metadata import PackageNotFoundError, version

    try:
        found = version(DISTRIBUTION)
    except PackageNotFoundError:  # pragma: no cover - running from a source tree without install
        found = "0.0.0"
    globals()["__version__"] = found
    return found


if not TYPE_CHECKING:
    __getattr__ = _version_on_first_use
