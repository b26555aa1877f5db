"""``app_from_env``: the app uvicorn workers build for ``engram serve`` (one per process).

Each worker opens its own store from ``ENGRAM_DATABASE_URL`` / ``ENGRAM_HOME`` and reads its
settings with :meth:`ProviderConfig.from_env`; the CLI puts ``--db`` and the public URL into
the environment before starting uvicorn, so every worker sees the same settings.
"""

from __future__ import annotations

import os

from starlette.applications import Starlette

from engram.provider._app import create_app
from engram.provider._config import ProviderConfig
from engram.store import database_url_from_env, open_store


def app_from_env() -> Starlette:
    """A provider app configured entirely from the process environment."""
    config = ProviderConfig.from_env(os.environ)
    store = open_store(database_url_from_env(os.environ))
    return create_app(config, store)


__all__ = ["app_from_env"]
