"""The root ``engram`` click group and the error boundary every command runs inside.

Whatever goes wrong reaches the user as one line on stderr and a non-zero exit: engram errors as
``error: <code>: <message>`` (2 for bad input, 1 otherwise), a bad command line (unknown option,
missing argument, a FILE that does not exist) as ``error: usage: <message> (see: <command>
--help)`` with exit 2, never a traceback (docs/spec/cli.md).
"""

from __future__ import annotations

import importlib
import sys

import click

from engram import __version__
from engram.errors import EngramError, InputError, MissingDependency

# Command name -> the private module that defines it. Modules are imported only when their
# command runs (or help lists it), for two reasons: `engram mcp` and `engram context fetch`
# start without importing the web server, numpy and the database drivers; and an
# `engram[runtime]` install, which has none of those, still runs the commands it can
# (canonicalize, context, chat) and says what to install for the rest.
COMMAND_MODULES: dict[str, str] = {
    "belief": "engram.cli._belief",
    "canonicalize": "engram.cli._canonicalize",
    "cartridge": "engram.cli._cartridge",
    "chat": "engram.cli._chat",
    "complete": "engram.cli._memory",
    "conformance": "engram.cli._conformance",
    "context": "engram.cli._context",
    "correction": "engram.cli._correction",
    "db": "engram.cli._db",
    "default-ote": "engram.cli._ote",
    "demo": "engram.cli._demo",
    "distill": "engram.cli._memory",
    "graph": "engram.cli._graph",
    "init": "engram.cli._ote",
    "keys": "engram.cli._keys",
    "mcp": "engram.cli._mcp",
    "migrate": "engram.cli._ote",
    "ote": "engram.cli._ote",
    "outcome": "engram.cli._memory",
    "recall": "engram.cli._memory",
    "record": "engram.cli._memory",
    "review-link": "engram.cli._review",
    "serve": "engram.cli._serve",
    "status": "engram.cli._memory",
    "subject": "engram.cli._subject",
    "token": "engram.cli._token",
    "workflow": "engram.cli._workflow",
}

# Groups owned by other modules than their parent's: parent -> {name: module whose COMMAND is the
# click command}. Attached when the parent is first looked up (`engram cartridge level ...`).
SUBCOMMAND_MODULES: dict[str, dict[str, str]] = {
    "cartridge": {"level": "engram.cli._level", "policy": "engram.cli._policy"},
}


class LazyGroup(click.Group):
    """A click group whose commands register themselves when their module is first imported."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(set(super().list_commands(ctx)) | set(COMMAND_MODULES))

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        module = COMMAND_MODULES.get(cmd_name)
        if cmd_name not in self.commands and module is not None:
            try:
                importlib.import_module(module)
            except ModuleNotFoundError as e:
                if (e.name or "").partition(".")[0] == "engram":
                    raise
                return _needs_extra(cmd_name, e.name or "?")
        command = super().get_command(ctx, cmd_name)
        if isinstance(command, click.Group):
            for name, sub in SUBCOMMAND_MODULES.get(cmd_name, {}).items():
                if name not in command.commands:
                    command.add_command(importlib.import_module(sub).COMMAND, name)
        return command


def _needs_extra(name: str, missing: str) -> click.Command:
    """What stands in for a command whose dependencies are not installed: it says so."""
    hint = "pip install 'engram[server]'"

    def refuse() -> None:
        raise MissingDependency(f"`engram {name}` needs the server extra ({hint}): no {missing}")

    return click.Command(
        name,
        callback=refuse,
        help=f"Not available in this install: {hint}.",
        short_help=f"(needs {hint})",
        context_settings={"ignore_unknown_options": True, "allow_extra_args": True},
    )


@click.group(cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="engram")
def cli() -> None:
    """engram: signed context for AI agents, a memory engine, MCP tools and cartridges."""


def fail(error: EngramError) -> int:
    """Print one line for an engram error and return its exit code (2 = bad input, 1 = other)."""
    click.echo(f"error: {error.code}: {error.message}", err=True)
    return 2 if isinstance(error, InputError) else 1


def run_cli(group: click.Group, args: list[str] | None = None) -> int:
    """Run the CLI; engram errors become one line on stderr, never a traceback."""
    try:
        # Without standalone mode click returns a command's ctx.exit(code) instead of exiting.
        returned = group.main(args=args, prog_name="engram", standalone_mode=False)
    except EngramError as e:
        return fail(e)
    except click.exceptions.Abort:
        click.echo("aborted", err=True)
        return 1
    except click.exceptions.NoArgsIsHelpError as e:
        e.show()  # a group run bare: its help is the answer, not an error line
        return e.exit_code
    except click.UsageError as e:
        # click's own rendering is four lines (usage, hint, blank, error); ours is one, naming
        # the command whose --help explains it.
        command = e.ctx.command_path if e.ctx is not None else "engram"
        click.echo(f"error: usage: {e.format_message()} (see: {command} --help)", err=True)
        return e.exit_code
    except click.ClickException as e:
        click.echo(f"error: {e.format_message()}", err=True)
        return e.exit_code
    except click.exceptions.Exit as e:
        return e.exit_code
    except KeyboardInterrupt:
        return 130
    except OSError as e:
        click.echo(f"error: {e.strerror or e}: {e.filename or ''}".rstrip(": "), err=True)
        return 1
    return returned if isinstance(returned, int) else 0


def main() -> None:
    sys.exit(run_cli(cli))


__all__ = ["COMMAND_MODULES", "SUBCOMMAND_MODULES", "LazyGroup", "cli", "fail", "main", "run_cli"]
