"""engram.provider: the Engram v0.1 context provider over HTTP (Tier 3, Full).

:func:`create_app` builds a Starlette ASGI app over a :class:`~engram.store.Store`;
:class:`ProviderConfig` holds its settings (``ProviderConfig.from_env`` reads ``ENGRAM_*``).
Routes and decisions: ``docs/spec/context-provider.md``.
"""

from typing import TYPE_CHECKING, Any

from engram.provider._app import create_app
from engram.provider._config import ProviderConfig
from engram.provider._factory import app_from_env
from engram.provider._openapi import openapi_document

if TYPE_CHECKING:
    from engram.provider._metrics import mark_process_dead

__all__ = [
    "ProviderConfig",
    "app_from_env",
    "create_app",
    "mark_process_dead",
    "openapi_document",
]


def __getattr__(name: str) -> Any:
    # prometheus-client loads only when metrics are on (docs/spec/provider-metrics.md), so the
    # one metrics hook the serve supervisor needs resolves on first use (PEP 562).
    if name == "mark_process_dead":
        from engram.provider._metrics import mark_process_dead

        return mark_process_dead
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
