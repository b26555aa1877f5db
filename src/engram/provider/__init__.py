"""engram.provider: the Engram v0.1 context provider over HTTP (Tier 3, Full).

:func:`create_app` builds a Starlette ASGI app over a :class:`~engram.store.Store`;
:class:`ProviderConfig` holds its settings (``ProviderConfig.from_env`` reads ``ENGRAM_*``).
Routes and decisions: ``docs/spec/context-provider.md``.
"""

from typing import TYPE_CHECKING, Any

from engram.provider._app import create_app
from engram.provider._auth import parse_trusted_proxies
from engram.provider._config import MAX_EXPORT_TTL, ProviderConfig
from engram.provider._factory import app_from_env
from engram.provider._limits import RateLimiter
from engram.provider._middleware import ProviderMiddleware
from engram.provider._openapi import openapi_document
from engram.provider._routes_read import CLAIMED_TIER, discovery_document
from engram.provider._signer import signed_bytes

if TYPE_CHECKING:
    from engram.provider._metrics import mark_process_dead

__all__ = [
    "CLAIMED_TIER",
    "MAX_EXPORT_TTL",
    "ProviderConfig",
    "ProviderMiddleware",
    "RateLimiter",
    "app_from_env",
    "create_app",
    "discovery_document",
    "mark_process_dead",
    "openapi_document",
    "parse_trusted_proxies",
    "signed_bytes",
]


def __getattr__(name: str) -> Any:
    # prometheus-client loads only when metrics are on (docs/spec/provider-metrics.md), so the
    # one metrics hook the serve supervisor needs resolves on first use (PEP 562).
    if name == "mark_process_dead":
        from engram.provider._metrics import mark_process_dead

        return mark_process_dead
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
