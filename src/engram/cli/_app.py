"""The root ``engram`` click group and the error boundary every command runs inside.

Whatever goes wrong reaches the user as one line on stderr and a non-zero exit: engram errors as
``error: <code>: <message>`` (2 for bad input, 1 otherwise), a bad command line (unknown option,
missing argument, a FILE that does not exist) as ``error: usage: <message> (see: <command>
--help)`` with exit 2, never a traceback (docs/spec/cli.md).
"""

from __future__ import annotations

import sys

import click

from engram import __version__
from engram.errors import EngramError, InputError


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
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


__all__ = ["cli", "fail", "main", "run_cli"]
