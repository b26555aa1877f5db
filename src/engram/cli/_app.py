"""The root ``engram`` click group and the error boundary every command runs inside.

Whatever goes wrong reaches the user as one line on stderr and a non-zero exit: engram errors as
``error: <code>: <message>`` (2 for bad input, 1 otherwise), a bad command line (unknown option,
missing argument, a FILE that does not exist) as ``error: usage: <message> (see: <command>
--help)`` with exit 2, never a traceback (docs/spec/cli.md).
"""

from __future__ import annotations

import importlib
import os
import sys
from collections.abc import Mapping, MutableMapping

import click

from engram import DISTRIBUTION
from engram.errors import EngramError, InputError, MissingDependency

# Command name -> the private module that defines it. Modules are imported only when their
# command runs (or help lists it), for two reasons: `engram mcp` and `engram context fetch`
# start without importing the web server, numpy and the database drivers; and an
# `engram-memory-stack[runtime]` install, which has none of those, still runs the commands it can
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
    "erase": "engram.cli._lifecycle",
    "forget": "engram.cli._lifecycle",
    "graph": "engram.cli._graph",
    "init": "engram.cli._ote",
    "keys": "engram.cli._keys",
    "mcp": "engram.cli._mcp",
    "memory": "engram.cli._memory_io",
    "migrate": "engram.cli._ote",
    "ote": "engram.cli._ote",
    "outcome": "engram.cli._memory",
    "recall": "engram.cli._memory",
    "record": "engram.cli._memory",
    "registry": "engram.cli._registry",
    "restore": "engram.cli._lifecycle",
    "review-link": "engram.cli._review",
    "serve": "engram.cli._serve",
    "share": "engram.cli._share",
    "status": "engram.cli._memory",
    "subject": "engram.cli._subject",
    "token": "engram.cli._token",
    "workflow": "engram.cli._workflow",
}

# Groups owned by other modules than their parent's: parent -> {name: module whose COMMAND is the
# click command, or "module:attribute" for a module that defines several}. Attached when the
# parent is first looked up (`engram cartridge level ...`).
SUBCOMMAND_MODULES: dict[str, dict[str, str]] = {
    "memory": {"history": "engram.cli._lifecycle:history_command"},
    "cartridge": {
        "check": "engram.cli._cartridge_host:check_command",
        "activate": "engram.cli._cartridge_host:activate_command",
        "load": "engram.cli._cartridge_load:load_command",
        "import": "engram.cli._cartridge_host:import_command",
        "trust": "engram.cli._cartridge_trust",
        "level": "engram.cli._level",
        "policy": "engram.cli._policy",
        "push": "engram.cli._oci:push_command",
        "pull": "engram.cli._oci:pull_command",
        "discover": "engram.cli._oci:discover_command",
        "attach-level": "engram.cli._oci:attach_level_command",
        "new": "engram.cli._starters:cartridge_new",
    },
    "workflow": {"new": "engram.cli._starters:workflow_new"},
    "graph": {"new": "engram.cli._starters:graph_new"},
}


# Parent -> {subcommand: its one-line help} for every subcommand in SUBCOMMAND_MODULES, so that
# `engram cartridge --help` lists them without importing their modules (httpx, jsonschema,
# cryptography: issue 33). tests/cli/test_cli_help.py fails when a line here and the
# subcommand's own help disagree.
SUBCOMMAND_HELP: dict[str, dict[str, str]] = {
    "memory": {
        "history": "A memory's history: recorded, outcomes, forgotten, restored, erased (who and "
        "when).",
    },
    "cartridge": {
        "check": "Harness preflight: would this host accept FILE's signed requirements? (writes "
        "nothing)",
        "activate": "The §8.5 handshake; only an accepted one writes SAVE "
        "(save/harness-compliance.json).",
        "load": "Install FILE's skills where HOST looks for them, byte for byte.",
        "import": "Verify FILE, apply the trust decision and merge its memories idempotently into "
        "a ring.",
        "trust": "Maintain a public-keys-only trust registry file (acx.trust-registry/1).",
        "level": "Provable levels: VC 2.0 / Open Badges 3.0 credentials, revocable by status list.",
        "policy": "Print the effective loop-context policy and where each value comes from.",
        "push": "Push FILE.acx to REGISTRY/REPO:TAG as one OCI artifact, its signature and levels "
        "attached.",
        "pull": "Pull a cartridge, check its manifest and layer digest, verify it, then write it "
        "to -o DIR.",
        "discover": "List a cartridge's referrers (DSSE signature, level credentials) and check "
        "each one.",
        "attach-level": "Attach CRED.json, a level credential bound to the cartridge's ROM, as a "
        "referrer, once it verifies and is not revoked.",
        "new": "Write an agent package to start from into FOLDER (absent or empty).",
    },
    "workflow": {"new": "Write a build-and-review workflow (acx.cal/1) to start from into FILE."},
    "graph": {"new": "Write an Agent Graph (a lead and a team) to start from into FILE."},
}


# Command name -> its one-line help, so that `engram --help` lists every command without
# importing any (0.8 s with every module, the MCP SDK and numpy among them, against about 50 ms).
# tests/cli/test_cli_help.py fails when a line here and the command's own help disagree.
COMMAND_HELP: dict[str, str] = {
    "belief": "Beliefs about a subject (categories: see `engram belief add --help`).",
    "canonicalize": "Print the RFC 8785 canonical form of the JSON in SOURCE (a file, or - for "
    "stdin).",
    "cartridge": "Agent Cartridges (.acx): signed SQLite files carrying skills, memory and a "
    "harness.",
    "chat": "Chat with an LLM that is given the user's verified Engram context.",
    "complete": "Apply the graduation rule to MEMORY_ID, or to every memory in the mounted rings.",
    "conformance": "Engram v0.1 conformance: probe a provider, run a runtime, verify a bundle.",
    "context": "Engram context as a runtime sees it (fetch and verify).",
    "correction": "Corrections proposed by runtimes; nothing changes until the subject confirms.",
    "db": "The database: schema migrations and status.",
    "default-ote": "Print the built-in engram.ote.v1 seat manifest.",
    "demo": "Create the demo subject if absent; print its id, where its token is, and the URL.",
    "distill": "Distill debugging episodes (files, or stdin) into a known_process or invariant "
    "memory.",
    "erase": "Erase memories for good: their words leave the database and the index; a "
    "tombstone (id, content hash) stays so an import cannot bring them back.",
    "forget": "Forget memories: out of recall, counts and exports until `engram restore`.",
    "graph": "ACX Agent Graphs (acx.agent-graph/1): lint, sign, verify, inspect, digest.",
    "init": "Write .engram/ote.toml for this repository (never rewrites an existing one).",
    "keys": "Signing keys: create, list, rotate, retire, export.",
    "mcp": "Serve the engram MCP tools and context resources over stdio.",
    "memory": "Memories in and out as Portable AI Memory (PAM) 1.0 documents; a memory's history.",
    "migrate": "Data migrations (schema migrations are `engram db migrate`).",
    "ote": "Seat manifests (engram.ote.v1).",
    "outcome": "Apply an outcome SIGNAL to MEMORY_ID's Beta posterior.",
    "recall": "Recall the best memories for QUERY within the seat's token budget.",
    "record": "Record one memory (TEXT --kind K), many (--from FILE.jsonl) or a chat (--from "
    "CHAT.json).",
    "registry": "The ACX git registry: rebuild its index, run its PR gate, build its static "
    "Exchange.",
    "restore": "Bring forgotten memories back into recall.",
    "review-link": "Print a single-use link that signs the subject in to /review or /memories.",
    "serve": "Serve the Engram context provider (Tier 3) over HTTP.",
    "share": "Share a signed agent, workflow or Agent Graph into a git registry folder.",
    "status": "Ring counts, graduation, attestation anchor, oracle split and vector coverage.",
    "subject": "Subjects: the people whose context the provider serves.",
    "token": "Bearer tokens bound to one subject and a set of permissions.",
    "workflow": "ACX Workflows (acx.cal/1): lint, staff from cartridges, sign, verify, inspect.",
}


class LazyGroup(click.Group):
    """A click group whose commands register themselves when their module is first imported."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(set(super().list_commands(ctx)) | set(COMMAND_MODULES))

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        """Like click's, but a command not yet imported is listed from COMMAND_HELP."""
        _format_listing(self, ctx, formatter, COMMAND_HELP)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        module = COMMAND_MODULES.get(cmd_name)
        if cmd_name not in self.commands and module is not None:
            try:
                importlib.import_module(module)
            except ModuleNotFoundError as e:
                if (e.name or "").partition(".")[0] == "engram":
                    raise
                return _needs_extra(cmd_name, e.name or "?")
        return super().get_command(ctx, cmd_name)


class LazySubgroup(click.Group):
    """A group whose subcommands listed in SUBCOMMAND_MODULES under its name are imported only
    when one of them is run or the group's help lists them: `engram cartridge verify` then loads
    neither the level, policy nor OCI commands (httpx, jsonschema, PyYAML)."""

    def _elsewhere(self) -> dict[str, str]:
        return SUBCOMMAND_MODULES.get(self.name or "", {})

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(set(super().list_commands(ctx)) | set(self._elsewhere()))

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        """Like click's, but a subcommand not yet imported is listed from SUBCOMMAND_HELP."""
        _format_listing(self, ctx, formatter, SUBCOMMAND_HELP.get(self.name or "", {}))

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        sub = self._elsewhere().get(cmd_name)
        if cmd_name not in self.commands and sub is not None:
            module, _, attribute = sub.partition(":")
            found = getattr(importlib.import_module(module), attribute or "COMMAND")
            self.add_command(found, cmd_name)
        return super().get_command(ctx, cmd_name)


def _format_listing(
    group: click.Group,
    ctx: click.Context,
    formatter: click.HelpFormatter,
    summaries: dict[str, str],
) -> None:
    """click's command listing, with a command not yet imported shown from ``summaries``."""
    names = [n for n in group.list_commands(ctx) if n in group.commands or n in summaries]
    if not names:
        return
    limit = formatter.width - 6 - max(len(n) for n in names)
    rows = []
    for name in names:
        command = group.commands.get(name)
        if command is not None:
            if command.hidden:
                continue
            rows.append((name, command.get_short_help_str(limit)))
        else:
            # A bare Command only to reuse click's shortening of help to the column width.
            stand_in = click.Command(name, help=summaries[name])
            rows.append((name, stand_in.get_short_help_str(limit)))
    with formatter.section("Commands"):
        formatter.write_dl(rows)


def _needs_extra(name: str, missing: str) -> click.Command:
    """What stands in for a command whose dependencies are not installed: it says so."""
    hint = f"pip install '{DISTRIBUTION}[server]'"

    def refuse() -> None:
        raise MissingDependency(f"`engram {name}` needs the server extra ({hint}): no {missing}")

    return click.Command(
        name,
        callback=refuse,
        help=f"Not available in this install: {hint}.",
        short_help=f"(needs {hint})",
        context_settings={"ignore_unknown_options": True, "allow_extra_args": True},
    )


def _print_version(ctx: click.Context, _param: click.Parameter, value: bool) -> None:
    """``--version``, as click's version_option prints it; the version is looked up only here
    (``importlib.metadata`` costs every other command about 20 ms of start-up)."""
    if not value or ctx.resilient_parsing:
        return
    from engram import __version__

    click.echo(f"engram, version {__version__}")
    ctx.exit()


@click.group(cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.option(
    "--version",
    is_flag=True,
    expose_value=False,
    is_eager=True,
    callback=_print_version,
    help="Show the version and exit.",
)
def cli() -> None:
    """engram: signed context for AI agents, a memory engine, MCP tools and cartridges."""


INTERRUPTED = 130  # 128 + SIGINT, as shells report a command stopped by Ctrl-C


def fail(error: EngramError) -> int:
    """Print one line for an engram error and return its exit code (2 = bad input, 1 = other)."""
    click.echo(f"error: {error.code}: {error.message}", err=True)
    return 2 if isinstance(error, InputError) else 1


def _command_path(group: click.Group, args: list[str]) -> str:
    """``engram cartridge import``: the command the arguments name, for a usage line."""
    path = ["engram"]
    current: click.Command = group
    for token in args:
        if not isinstance(current, click.Group) or token.startswith("-"):
            break
        found = current.get_command(click.Context(current), token)
        if found is None:
            break
        path.append(token)
        current = found
    return " ".join(path)


def run_cli(
    group: click.Group, args: list[str] | None = None, environ: Mapping[str, str] | None = None
) -> int:
    """Run the CLI; engram errors become one line on stderr, never a traceback. ``environ`` is
    what the command line's settings are read from (default: this process's environment)."""
    try:
        # Without standalone mode click returns a command's ctx.exit(code) instead of exiting.
        # The environment is read here, once, into the settings every command is handed.
        from engram.cli._settings import Settings

        returned = group.main(
            args=args,
            prog_name="engram",
            standalone_mode=False,
            obj=Settings.from_environ(os.environ if environ is None else environ),
        )
    except EngramError as e:
        return fail(e)
    except click.exceptions.Abort as e:
        # click turns Ctrl-C into Abort (from the KeyboardInterrupt); a declined prompt or an
        # end of input is an Abort too, but not an interrupt.
        if isinstance(e.__cause__ or e.__context__, KeyboardInterrupt):
            return INTERRUPTED
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
        return INTERRUPTED
    except (FileNotFoundError, NotADirectoryError) as e:
        # A path on the command line that does not exist, met by a command that opens it
        # itself: the same usage error, exit 2, as a FILE argument click checks (cli.md).
        command = _command_path(group, sys.argv[1:] if args is None else args)
        click.echo(
            f"error: usage: no such file or directory: {e.filename} (see: {command} --help)",
            err=True,
        )
        return 2
    except OSError as e:
        click.echo(f"error: {e.strerror or e}: {e.filename or ''}".rstrip(": "), err=True)
        return 1
    return returned if isinstance(returned, int) else 0


# OpenBLAS starts a pool of spinning threads when numpy is imported. engram makes no BLAS
# calls (vector products go through numpy's own loops: memory-retrieval.md "Recall pipeline"),
# so the pool only costs: about 40 ms of a cold `engram recall`'s CPU, more when the other core
# is busy (bench/README.md "recall"). The CLI owns its process, so it asks for one thread
# unless the user chose otherwise; a library import of engram leaves the environment alone.
BLAS_THREAD_VARIABLES = ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS")


def one_blas_thread(environ: MutableMapping[str, str] = os.environ) -> None:
    """Ask numpy's BLAS for one thread unless the user set a thread count."""
    if not any(name in environ for name in BLAS_THREAD_VARIABLES):
        environ["OPENBLAS_NUM_THREADS"] = "1"


def main() -> None:
    one_blas_thread()  # before any command imports numpy
    sys.exit(run_cli(cli))


__all__ = [
    "COMMAND_HELP",
    "COMMAND_MODULES",
    "INTERRUPTED",
    "SUBCOMMAND_HELP",
    "SUBCOMMAND_MODULES",
    "LazyGroup",
    "LazySubgroup",
    "cli",
    "fail",
    "main",
    "run_cli",
]
