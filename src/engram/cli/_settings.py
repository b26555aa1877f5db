"""What the environment configures, read once at the CLI's edge and passed in (issue 28).

``run_cli`` takes one snapshot of the environment when a command line starts and hands it to
every command as the click context's object; commands and the shared helpers ask
:func:`settings` for a value instead of reading ``os.environ`` each on its own, so one command
line sees one environment, and a test (or an embedder calling ``run_cli``) can give another.
Outside a command (a helper called from a test), :func:`settings` reads the environment then.

The named settings are the ones several commands share; any other variable a command documents
(``$ENGRAM_SCOPE``, ``$ENGRAM_OCI_USERNAME``, ``$OPENAI_API_KEY``, ...) is read through
:meth:`Settings.get`, from the same snapshot.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

import click

from engram.errors import InvalidRequest

HOME = "ENGRAM_HOME"
DATABASE_URL = "ENGRAM_DATABASE_URL"
OTE = "ENGRAM_OTE"
# `engram serve --no-seat` (or this set to 1): serve the context provider alone, no default seat.
NO_SEAT = "ENGRAM_NO_SEAT"
TOKEN = "ENGRAM_TOKEN"  # noqa: S105 - the name of a variable, not a secret
PROVIDER_URL = "ENGRAM_PROVIDER_URL"
PUBLIC_URL = "ENGRAM_PUBLIC_URL"
THALAMUS_URL = "THALAMUS_URL"


@dataclass(frozen=True)
class Settings:
    environ: Mapping[str, str] = field(default_factory=dict)
    """The snapshot, for library calls that take an environment mapping (``locate_seat``,
    ``database_url_from_env``, ``ProviderConfig.from_env``)."""

    @classmethod
    def from_environ(cls, environ: Mapping[str, str]) -> Settings:
        return cls(dict(environ))

    def get(self, name: str) -> str | None:
        """The variable ``name``, or None when it is unset or empty."""
        value = self.environ.get(name, "").strip()
        return value or None

    @property
    def home(self) -> Path:
        """``$ENGRAM_HOME``, else ``~/.engram`` (created 0700 when missing)."""
        from engram.store.internals import engram_home

        return engram_home(self.environ)

    @property
    def database_url(self) -> str | None:
        return self.get(DATABASE_URL)

    @property
    def ote(self) -> Path | None:
        named = self.get(OTE)
        return None if named is None else Path(named)

    @property
    def no_seat(self) -> bool:
        """``$ENGRAM_NO_SEAT`` is 1 (or true, yes, on): ``engram serve`` serves no seat, not
        even its default one. Read as ``ENGRAM_METRICS`` is: another word is refused."""
        value = (self.get(NO_SEAT) or "0").lower()
        if value not in ("1", "true", "yes", "on", "0", "false", "no", "off"):
            raise InvalidRequest(
                f"{NO_SEAT} must be 1 or 0 (true/false, yes/no, on/off), got {value!r}"
            )
        return value in ("1", "true", "yes", "on")

    @property
    def token(self) -> str | None:
        return self.get(TOKEN)

    @property
    def provider_url(self) -> str | None:
        return self.get(PROVIDER_URL)

    @property
    def public_url(self) -> str | None:
        return self.get(PUBLIC_URL)

    @property
    def thalamus_url(self) -> str | None:
        return self.get(THALAMUS_URL)


def settings() -> Settings:
    """The settings of the command line being run; outside one, the environment as it is now."""
    ctx = click.get_current_context(silent=True)
    found = ctx.find_object(Settings) if ctx is not None else None
    return found if found is not None else Settings.from_environ(os.environ)


def from_settings(name: str) -> Callable[[], str | None]:
    """A click ``default`` that reads ``name`` from :func:`settings` (where click's ``envvar``
    would read the environment again)."""
    return lambda: settings().get(name)


def given(ctx: click.Context, param: click.Parameter, value: str | None) -> str:
    """A click callback for a required option whose default comes from the settings: click
    does not hold a default that a function gives to ``required``, so a value neither given nor
    set is missing here, in click's own words."""
    if value is None:
        raise click.MissingParameter(ctx=ctx, param=param)
    return value


def setting_over_default(name: str) -> Callable[[click.Context, click.Parameter, str], str]:
    """A click callback: the option as given, else ``$name`` from the settings, else the
    option's (shown) default."""

    def choose(ctx: click.Context, param: click.Parameter, value: str) -> str:
        if ctx.get_parameter_source(param.name or "") is click.core.ParameterSource.DEFAULT:
            return settings().get(name) or value
        return value

    return choose


__all__ = [
    "DATABASE_URL",
    "HOME",
    "NO_SEAT",
    "OTE",
    "PROVIDER_URL",
    "PUBLIC_URL",
    "THALAMUS_URL",
    "TOKEN",
    "Settings",
    "from_settings",
    "given",
    "setting_over_default",
    "settings",
]
