"""``create_server``: one MCPServer with the six engram tools and the context resources.

engram.ote.v1 & MCP contract (Part V, Plate 03, §3.2) ("Engram MCP Tools (engram mcp)");
``docs/spec/mcp.md`` documents the tool contract, the limits, the resources and both transports. The
same server object is run over stdio (``engram mcp``) and mounted over Streamable HTTP
(``engram serve``, see ``_http``).
"""

from __future__ import annotations

import inspect
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import mcp.types as mt
from mcp.server.context import CallNext, HandlerResult, ServerRequestContext
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ResourceError
from mcp.shared.exceptions import MCPError

from engram import __version__
from engram.context import Permission
from engram.context.internals import TokenGrant
from engram.errors import EngramError, InputError
from engram.mcp._context import (
    CALLER,
    CALLER_TOKEN,
    CONTEXT_TEMPLATE,
    CONTEXT_URI,
    ContextSource,
    context_document,
)
from engram.mcp._declare import SeatWords, declared_tools, runner
from engram.mcp._tools import EngramTools
from engram.memory.internals import SUBJECT_HEADER, http_caller

if TYPE_CHECKING:  # the engine (numpy) loads when a tool first runs (issue 33)
    import jsonschema
    import jsonschema.protocols

    from engram.memory import Distiller, MemoryEngine
    from engram.memory.internals import SeatSource

SERVER_NAME = "engram"
TOOL_NAMES = tuple(declaration.name for declaration in declared_tools(EngramTools))
INSTRUCTIONS = (
    "engram is this agent's long-term memory for one seat. Call engram_recall before working on "
    "something you may have met before; engram_record what a later session should know; "
    "engram_outcome after a recalled memory helped or misled you; engram_status to see the seat. "
    "Read engram://context for the user's verified context (signed by their Engram provider)."
)
NO_PROVIDER = (
    "no context provider is configured: set ENGRAM_PROVIDER_URL and ENGRAM_TOKEN for "
    "`engram mcp`, or use the /mcp endpoint of `engram serve`"
)


def _bearer(request: Any) -> str | None:
    headers = getattr(request, "headers", None)
    value = headers.get("authorization") if headers is not None else None
    if isinstance(value, str) and value[:7].lower() == "bearer ":
        return value[7:].strip() or None
    return None


def _caller_of(request: Any) -> tuple[tuple[str, str] | None, str | None]:
    """Whom an HTTP tool call acts for, from the grant the provider's auth guard left in the
    request (docs/spec/memory-ownership.md "Who is the caller"): the token's own subject, or,
    for an ``admin`` token only, the subject named by the ``Engram-Subject`` header. Returns
    (subject, actor) or a refusal line; a request without a grant is refused, never served as
    the seat."""
    state = getattr(request, "scope", {}).get("state", {})
    grant = state.get("grant") if isinstance(state, Mapping) else None
    if not isinstance(grant, TokenGrant):
        return None, "Error executing tool: unauthorized: no token grant for this request"
    try:
        caller = http_caller(
            grant.subject_id,
            grant.token_id,
            admin=grant.allows(Permission.ADMIN),
            named=request.headers.get(SUBJECT_HEADER),
        )
    except EngramError as e:
        return None, f"Error executing tool: {e.code}: {e.message}"
    return (caller.subject, caller.actor), None


class _Guard:
    """MCP middleware for ``tools/call`` (docs/spec/mcp.md, "Errors") and the caller's token.

    - An unknown tool is a JSON-RPC error ``-32602`` (invalid params), as the MCP specification
      says, not a tool result.
    - Arguments are validated against the tool's published ``inputSchema`` with JSON Schema's
      own types before the SDK sees them: ``"3"`` is not an integer (the SDK would coerce it),
      and a refusal is a tool error in engram's shape, ``Error executing tool <name>:
      invalid_request: <what>``, naming the argument and never echoing a long value.
    - An argument the tool does not have is refused, not silently dropped.
    - The HTTP caller's bearer token is exposed to the context resources for one message, and
      the subject its grant names to the tools (``CALLER``).
    """

    def __init__(self, server: MCPServer, parameters: Mapping[str, frozenset[str]]) -> None:
        self.server = server
        self.parameters = parameters
        self._validators: dict[str, jsonschema.protocols.Validator] | None = None

    async def __call__(
        self, ctx: ServerRequestContext[Any, Any], call_next: CallNext
    ) -> HandlerResult:
        caller: tuple[str, str] | None = None
        if ctx.method == "tools/call" and isinstance(ctx.params, Mapping):
            refusal = await self._refusal(ctx.params)
            if refusal is None and ctx.request is not None:
                caller, refusal = _caller_of(ctx.request)
            if refusal is not None:
                return mt.CallToolResult(
                    content=[mt.TextContent(type="text", text=refusal)], is_error=True
                )
        reset = CALLER_TOKEN.set(_bearer(ctx.request))
        reset_caller = CALLER.set(caller)
        try:
            return await call_next(ctx)
        finally:
            CALLER.reset(reset_caller)
            CALLER_TOKEN.reset(reset)

    async def _refusal(self, params: Mapping[str, Any]) -> str | None:
        name, arguments = params.get("name"), params.get("arguments")
        validators = await self._tool_validators()
        if not isinstance(name, str) or name not in validators:
            raise MCPError(
                code=mt.INVALID_PARAMS, message=f"Unknown tool: {str(name)[:100]}", data=None
            )
        arguments = {} if arguments is None else arguments
        if not isinstance(arguments, dict):
            return f"Error executing tool {name}: invalid_request: arguments must be an object"
        expected = self.parameters.get(name, frozenset())
        unknown = sorted(set(arguments) - expected)
        if unknown:
            takes = ", ".join(sorted(expected)) or "no arguments"
            return (
                f"Error executing tool {name}: invalid_request: unknown argument "
                f"{unknown[0][:100]!r}; {name} takes {takes}"
            )
        from jsonschema.exceptions import best_match  # loaded with the validators (issue 33)

        error = best_match(validators[name].iter_errors(arguments))
        if error is None:
            return None
        return f"Error executing tool {name}: invalid_request: {_argument_problem(error)}"

    async def _tool_validators(self) -> dict[str, jsonschema.protocols.Validator]:
        if self._validators is None:
            # jsonschema loads at the first tool call, not before initialize (issue 33).
            from jsonschema import Draft202012Validator

            self._validators = {
                tool.name: Draft202012Validator(tool.input_schema)
                for tool in await self.server.list_tools()
            }
        return self._validators


def _argument_problem(error: jsonschema.ValidationError) -> str:
    """One short line saying which argument breaks which rule (values are not echoed)."""
    path = "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in error.absolute_path)
    where = f"argument {path.lstrip('.')!r}" if path else "the arguments"
    rule = error.validator
    limit: Any = error.validator_value
    instance: Any = error.instance
    if rule == "required":
        missing = next((n for n in limit if n not in instance), "?")
        return f"missing required argument {missing!r}"
    if rule == "type":
        kinds = " or ".join(limit) if isinstance(limit, list) else limit
        return f"{where} must be of JSON type {kinds}, not {_json_type(instance)}"
    if rule == "enum" and isinstance(limit, list):
        return f"{where} must be one of {', '.join(map(str, limit))}"
    phrases = {
        "maxLength": "must be at most {} characters",
        "minLength": "must be at least {} characters",
        "maximum": "must be at most {}",
        "minimum": "must be at least {}",
        "exclusiveMaximum": "must be less than {}",
        "exclusiveMinimum": "must be greater than {}",
        "maxItems": "must have at most {} items",
        "minItems": "must have at least {} items",
    }
    phrase = phrases.get(str(rule))
    if phrase is not None:
        return f"{where} {phrase.format(limit)}"
    return f"{where} does not match its schema ({rule})"


def _json_type(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int | float):
        return "number"
    names: dict[type, str] = {str: "string", list: "array", dict: "object"}
    return names.get(type(value), type(value).__name__)


def create_server(
    engine: MemoryEngine,
    seat: SeatSource,
    *,
    context: ContextSource | None = None,
    distiller: Distiller | None = None,
    subject: str | None = None,
    for_subjects: bool = False,
) -> MCPServer:
    """The engram MCP server for one seat's engine; ``context`` feeds the context resources.

    ``subject``: over stdio, act for this subject instead of the seat. ``for_subjects``: the
    server is mounted at ``/mcp``, where every call acts for its token's subject; the tool
    descriptions then name the rings such a caller mounts."""
    tools = EngramTools(engine, seat, distiller, subject=subject)
    server: MCPServer = MCPServer(
        SERVER_NAME,
        title="engram memory",
        instructions=INSTRUCTIONS,
        version=__version__,
        website_url="https://engramspec.org",
        log_level="WARNING",
    )
    seat_words = SeatWords.of(engine.spec, for_subjects=for_subjects or subject is not None)
    for declaration in declared_tools(EngramTools):
        server.add_tool(
            runner(declaration, getattr(tools, declaration.name), tools.local),
            name=declaration.name,
            title=declaration.title,
            description=declaration.description(seat_words),
            annotations=declaration.annotations(distiller=distiller is not None),
            structured_output=True,
        )
    parameters = {
        name: frozenset(inspect.signature(getattr(tools, name)).parameters) for name in TOOL_NAMES
    }
    server.middleware.append(_Guard(server, parameters))
    _add_resources(server, context)
    return server


def _add_resources(server: MCPServer, source: ContextSource | None) -> None:
    async def read(scope: str | None) -> str:
        if source is None:
            raise ResourceError(NO_PROVIDER)
        try:
            view = await source.fetch(scope)
        except InputError as e:
            # The caller named something that does not exist (an unknown scope): the request's
            # parameters are wrong, a JSON-RPC -32602, not an internal error.
            uri = CONTEXT_URI if scope is None else f"{CONTEXT_URI}/{scope}"
            raise MCPError(
                code=mt.INVALID_PARAMS, message=f"{e.code}: {e.message}", data={"uri": uri}
            ) from e
        except EngramError as e:
            raise ResourceError(f"{e.code}: {e.message}") from e
        return context_document(view)

    where = source.describe() if source is not None else "not configured"

    @server.resource(
        CONTEXT_URI,
        name="context",
        title="Verified context (default scope)",
        description="The subject's signed Engram export, verified against the provider's "
        f"published key, with its system prompt. Provider: {where}.",
        mime_type="application/json",
    )
    async def context_default() -> str:
        return await read(None)

    @server.resource(
        CONTEXT_TEMPLATE,
        name="context-scoped",
        title="Verified context for one scope",
        description="The same, restricted to one scope (e.g. professional, which leaves out "
        "health and financial beliefs); an unknown scope is an invalid_scope error.",
        mime_type="application/json",
    )
    async def context_scoped(scope: str) -> str:
        return await read(scope)


__all__ = ["INSTRUCTIONS", "SERVER_NAME", "TOOL_NAMES", "create_server"]
