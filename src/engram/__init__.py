"""engram: a memory stack for AI agents that can prove what it serves.

Three products share one trust spine (docs/concepts/packages.md has the full map):

- **The context protocol** (Engram v0.1): ``engram.context`` (the domain: subjects, beliefs,
  corrections, signed exports), ``engram.provider`` (it over HTTP, with the review page) and
  ``engram.runtime`` (the SDK an LLM runtime uses to fetch, verify and inject; core only).
- **The memory engine** (engram.ote.v1): ``engram.memory`` (seats, rings M0-M4, hybrid recall,
  confidence, ownership) and ``engram.mcp`` (its tools for any MCP client);
  ``engram.integrations`` puts it inside LangGraph and the OpenAI Agents SDK.
- **Agent Cartridges** (.acx): ``engram.cartridge`` (the format), ``engram.trust`` (trust
  registry), ``engram.policy``, ``engram.level`` (credentials), ``engram.workflow``,
  ``engram.graph``, ``engram.registry`` (git registry, Exchange) and ``engram.oci``.

Beneath them: ``engram.core`` (canonical JSON, signatures, clocks, bounds), ``engram.store``
(SQLite and PostgreSQL), ``engram.fetch`` (every remote read) and ``engram.errors``. Bridges and
tools above them: ``engram.transfer`` (memories into and out of cartridges),
``engram.conformance`` (requirement ids, runners, signed bundles) and ``engram.cli``. Import-linter
contracts in pyproject.toml keep the layers one-way and the three products apart.

What each package makes public is its ``__all__``: what a user of the library calls or types
against (entry points, the types they take and return, the errors to catch). What engram's own
packages, the benchmarks and the tests share besides is in the package's ``internals`` module,
which is not public API; everything else stays private (docs/concepts/packages.md, "What is
public").
"""

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
