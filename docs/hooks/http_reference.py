"""MkDocs hook: the HTTP API page, generated as Markdown from the checked-in ``openapi.json``.

Why Markdown rather than an OpenAPI viewer (docs/spec/docs-site.md "The HTTP API page"): the
page is then part of the site like any other, found by its search, readable in light and dark,
with no script at view time and nothing fetched from elsewhere; the viewers we tried either needed
a large JavaScript bundle in an iframe (Swagger UI, whose "try it out" would send requests from
the docs to a provider), or invented example values (a confidence of 10.12, a "JWT" bearer token)
where the document has none. This page shows only what the document says: each operation's
parameters, request body, responses and the document's own examples, and each schema's fields.

The document is read from the repository root when the site is built, so the page follows
``openapi.json`` as the provider's owners change it; the document itself is published beside the
page (``openapi.json``) for tools.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from mkdocs.config.defaults import MkDocsConfig
from mkdocs.structure.files import File, Files

from engram.core.jsonio import dumps_text

PAGE = "http-api.md"
DOCUMENT = "openapi.json"
METHODS = ("get", "put", "post", "patch", "delete", "head", "options", "trace")
Schema = dict[str, Any]


def anchor(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")


def operation_anchor(method: str, path: str) -> str:
    return anchor(f"{method} {path}")


def schema_anchor(name: str) -> str:
    return f"schema-{anchor(name)}"


def cell(text: str) -> str:
    """Text that is safe inside a Markdown table cell."""
    return " ".join(str(text).split()).replace("|", "\\|")


def ref_name(ref: str) -> str:
    return ref.rsplit("/", 1)[-1]


def type_of(schema: Schema) -> str:
    """A short, linked description of a schema's type: `string`, array of [Belief](#...)."""
    if "$ref" in schema:
        name = ref_name(schema["$ref"])
        return f"[{name}](#{schema_anchor(name)})"
    for combinator, word in (("oneOf", "one of"), ("anyOf", "any of"), ("allOf", "all of")):
        if combinator in schema:
            return f"{word} " + ", ".join(type_of(s) for s in schema[combinator])
    kind = schema.get("type")
    if isinstance(kind, list):
        return " or ".join(f"`{k}`" for k in kind)
    if kind == "array":
        items = schema.get("items")
        return f"array of {type_of(items)}" if isinstance(items, dict) else "`array`"
    if kind is None:
        return "any JSON value" if not schema.get("properties") else "`object`"
    return f"`{kind}`"


CONSTRAINTS = (
    ("format", "format {}"),
    ("minimum", "≥ {}"),
    ("exclusiveMinimum", "> {}"),
    ("maximum", "≤ {}"),
    ("exclusiveMaximum", "< {}"),
    ("minLength", "at least {} characters"),
    ("maxLength", "at most {} characters"),
    ("minItems", "at least {} items"),
    ("maxItems", "at most {} items"),
    ("pattern", "matches `{}`"),
)


def notes(schema: Schema, description: str = "") -> str:
    """A member's or parameter's description, then its constraints as a sentence."""
    said = constraints(schema)
    if not said:
        return cell(description)
    sentence = f"{said[0].upper()}{said[1:]}."
    return cell(f"{description} {sentence}" if description else sentence)


def constraints(schema: Schema) -> str:
    said = [template.format(schema[key]) for key, template in CONSTRAINTS if key in schema]
    if "minLength" in schema and "maxLength" in schema:
        said = [s for s in said if not s.endswith(" characters")]
        said.append(f"{schema['minLength']} to {schema['maxLength']} characters")
    if "enum" in schema:
        said.append("one of " + ", ".join(f"`{v}`" for v in schema["enum"]))
    if "const" in schema:
        said.append(f"always `{schema['const']}`")
    if "default" in schema:
        said.append(f"default `{schema['default']}`")
    if schema.get("additionalProperties") is False:
        said.append("no other members")
    return "; ".join(said)


def field_rows(schema: Schema, prefix: str = "") -> list[str]:
    """Table rows for an object schema's members; inline objects are flattened (`a.b`)."""
    rows = []
    required = set(schema.get("required", ()))
    for name, member in schema.get("properties", {}).items():
        path = f"{prefix}{name}"
        rows.append(
            f"| `{path}` | {type_of(member)} | {'yes' if name in required else ''} | "
            f"{notes(member, member.get('description', ''))} |"
        )
        if member.get("type") == "object" and "properties" in member:
            rows += field_rows(member, f"{path}.")
        items = member.get("items")
        if member.get("type") == "array" and isinstance(items, dict) and "properties" in items:
            rows += field_rows(items, f"{path}[].")
    return rows


def fields_table(schema: Schema) -> list[str]:
    rows = field_rows(schema)
    if not rows:
        return []
    return ["| member | type | required | notes |", "|---|---|---|---|", *rows, ""]


def json_block(value: Any) -> list[str]:
    return ["```json", *dumps_text(value, indent=2).splitlines(), "```", ""]


def examples(media: Schema) -> list[str]:
    """The document's own examples of a body, never invented ones."""
    lines: list[str] = []
    if "example" in media:
        lines += ["Example:", "", *json_block(media["example"])]
    for name, example in media.get("examples", {}).items():
        if "value" not in example:
            continue
        title = example.get("summary") or name
        lines += [f'??? example "{cell(title)}"', ""]
        lines += ["    " + line if line else "" for line in json_block(example["value"])]
    return lines


def security_line(operation: Schema, document: Schema) -> str:
    requirements = operation.get("security", document.get("security", []))
    if not requirements:
        return "**Authentication:** none."
    schemes = document.get("components", {}).get("securitySchemes", {})
    said = []
    for requirement in requirements:
        for name in requirement:
            scheme = schemes.get(name, {})
            if scheme.get("type") == "http" and scheme.get("scheme") == "bearer":
                said.append("a bearer token (`Authorization: Bearer <token>`)")
            else:
                said.append(f"`{name}`")
    return (
        f"**Authentication:** {' or '.join(said)}; the permission it needs is in the "
        "[table of routes](spec/context-provider.md#routes)."
    )


def parameter_rows(parameters: list[Schema]) -> list[str]:
    if not parameters:
        return []
    lines = [
        "**Parameters**",
        "",
        "| name | in | required | type | notes |",
        "|---|---|---|---|---|",
    ]
    for parameter in parameters:
        schema = parameter.get("schema", {})
        lines.append(
            f"| `{parameter['name']}` | {parameter['in']} | "
            f"{'yes' if parameter.get('required') else ''} | {type_of(schema)} | "
            f"{notes(schema, parameter.get('description', ''))} |"
        )
    return [*lines, ""]


def body_lines(body: Schema) -> list[str]:
    lines = []
    for media_type, media in body.get("content", {}).items():
        required = "required" if body.get("required") else "optional"
        schema = media.get("schema", {})
        lines += [f"**Request body** (`{media_type}`, {required}): {type_of(schema)}.", ""]
        if body.get("description"):
            lines += [body["description"], ""]
        lines += examples(media)
    return lines


def response_lines(responses: Schema) -> list[str]:
    """One row per answer; statuses that say the same (the error shape) share a row."""
    rows: dict[tuple[str, str], list[str]] = {}
    shown: list[str] = []
    for status, response in responses.items():
        bodies = [type_of(m.get("schema", {})) for m in response.get("content", {}).values()]
        answer = (cell(response.get("description", "")), ", ".join(bodies))
        rows.setdefault(answer, []).append(str(status))
        for media in response.get("content", {}).values():
            shown += examples(media)
    lines = ["**Responses**", "", "| status | meaning | body |", "|---|---|---|"]
    for (meaning, body), statuses in rows.items():
        lines.append(f"| {', '.join(statuses)} | {meaning} | {body} |")
    return [*lines, "", *shown]


def operation_lines(method: str, path: str, operation: Schema, document: Schema) -> list[str]:
    title = f"`{method.upper()} {path}`"
    lines = [f"### {title} {{ #{operation_anchor(method, path)} }}", ""]
    if operation.get("summary"):
        lines += [f"{operation['summary'][0].upper()}{operation['summary'][1:]}.", ""]
    if operation.get("description"):
        lines += [operation["description"], ""]
    lines += [security_line(operation, document), ""]
    lines += parameter_rows(operation.get("parameters", []))
    if "requestBody" in operation:
        lines += body_lines(operation["requestBody"])
    lines += response_lines(operation.get("responses", {}))
    return lines


def render(document: Schema) -> str:
    info = document.get("info", {})
    servers = ", ".join(f"`{s['url']}`" for s in document.get("servers", []) if "url" in s)
    lines = [
        "# HTTP API",
        "",
        "<!-- Generated from openapi.json by docs/hooks/http_reference.py. -->",
        "",
        f"{info.get('title', 'The API')} {info.get('version', '')}: {info.get('description', '')}",
        "",
        f"This page is generated from [the OpenAPI {document.get('openapi', '')} document]"
        f"({DOCUMENT}) that `engram serve` serves at `/openapi.json` (checked in as "
        "`openapi.json`; `engram serve --print-openapi` prints it). What each route does, the "
        "permission it needs, the error codes and the production behaviour (idempotency, rate "
        "limits, backpressure) are in [the provider's decisions](spec/context-provider.md); "
        "the export itself in [the export envelope](spec/context-export.md).",
        "",
    ]
    if servers:
        lines += [f"Default server: {servers}.", ""]
    lines += ["| method | path | what it does |", "|---|---|---|"]
    operations = [
        (method, path, operation)
        for path, item in document.get("paths", {}).items()
        for method, operation in item.items()
        if method in METHODS
    ]
    for method, path, operation in operations:
        link = f"[`{path}`](#{operation_anchor(method, path)})"
        lines.append(f"| {method.upper()} | {link} | {cell(operation.get('summary', ''))} |")
    lines += ["", "## Operations", ""]
    for method, path, operation in operations:
        lines += operation_lines(method, path, operation, document)
    schemas = document.get("components", {}).get("schemas", {})
    if schemas:
        lines += ["## Schemas", ""]
    for name, schema in schemas.items():
        lines += [f"### {name} {{ #{schema_anchor(name)} }}", ""]
        if schema.get("description"):
            lines += [schema["description"], ""]
        table = fields_table(schema)
        lines += table or [f"{type_of(schema)}. {notes(schema)}", ""]
        lines += ['??? note "JSON Schema"', ""]
        lines += ["    " + line if line else "" for line in json_block(schema)]
    return "\n".join(lines)


def on_files(files: Files, config: MkDocsConfig) -> Files:
    source = Path(config.config_file_path).resolve().parent / DOCUMENT
    document = json.loads(source.read_text(encoding="utf-8"))
    files.append(File.generated(config, PAGE, content=render(document)))
    files.append(File.generated(config, DOCUMENT, abs_src_path=str(source)))
    return files
