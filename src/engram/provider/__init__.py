"""engram.provider: the Engram v0.1 context provider over HTTP (Tier 3, Full).

:func:`create_app` builds a Starlette ASGI app over a :class:`~engram.store.Store`;
:class:`ProviderConfig` holds its settings (``ProviderConfig.from_env`` reads ``ENGRAM_*``).
Routes and decisions: ``docs/spec/context-provider.md``.
"""

from engram.provider._app import create_app
from engram.provider._auth import parse_trusted_proxies
from engram.provider._config import MAX_EXPORT_TTL, ProviderConfig
from engram.provider._factory import app_from_env
from engram.provider._limits import RateLimiter
from engram.provider._openapi import openapi_document
from engram.provider._routes_read import CLAIMED_TIER, discovery_document
from engram.provider._signer import signed_bytes

__all__ = [
    "CLAIMED_TIER",
    "MAX_EXPORT_TTL",
    "ProviderConfig",
    "RateLimiter",
    "app_from_env",
    "create_app",
    "discovery_document",
    "openapi_document",
    "parse_trusted_proxies",
    "signed_bytes",
]
