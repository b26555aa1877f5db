"""engram: a memory stack for AI agents that can prove what it serves."""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("engram")
except PackageNotFoundError:  # pragma: no cover - running from a source tree without install
    __version__ = "0.0.0"

__all__ = ["__version__"]
