"""The public discovery profile and signed lineage, shared by workflows and Agent Graphs.

Spec: lboel/acx@85f1358 SPEC.md §14.1 and §16.1 (a published workflow or graph carries a SemVer
``version``, a human ``name``, a useful ``description``, an SPDX ``license``, a named author, a
lowercase tag; ``homepage`` an absolute URI; ``extensions`` reverse-DNS keyed and ignored when
unknown), §17.3 (lineage: one to eight parents, no duplicates, no parent that is the child's own
coordinate); docs/spec/acx-workflows.md §"Publication" and §"Lineage".

The schema already fixes the shapes (patterns, lengths, ``uniqueItems``); this module adds what
it cannot say: that the publication members are present at all, that text is not blank, that
``license`` parses as an SPDX expression (AboutCode's ``license-expression`` with its bundled
SPDX list; ``LicenseRef-`` identifiers are SPDX too), that URIs are absolute, and the lineage
rules. ``prefix`` is ``engram.workflow`` or ``engram.graph``: each artifact's issues name its
own requirement ids.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from functools import cache

from license_expression import Licensing, get_spdx_licensing

from engram.core.canonical import Json
from engram.workflow._issues import Accepted, Issue, member_path
from engram.workflow._secrets import private_keys, scan_document

_ABSOLUTE_URI = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*:[^\s]+$")
_LICENSE_REF = re.compile(r"^(?:DocumentRef-[A-Za-z0-9.-]+:)?LicenseRef-[A-Za-z0-9.-]+$")
_LINEAGE_TYPE = {"engram.workflow": "workflow", "engram.graph": "agent-graph"}


@cache
def _licensing() -> Licensing:
    return get_spdx_licensing()


def spdx_problem(expression: str) -> str | None:
    """Why ``expression`` is not a valid SPDX license expression, or None if it is."""
    if not expression.strip():
        return "is empty"
    try:
        result = _licensing().validate(expression)
    except Exception as e:  # license-expression raises bare errors for some malformed input
        return f"is not an SPDX expression ({type(e).__name__})"
    unknown = [s for s in result.invalid_symbols if not _LICENSE_REF.match(str(s))]
    syntax = [e for e in result.errors if not e.startswith("Unknown license key")]
    if syntax:
        return f"is not an SPDX expression ({syntax[0]})"
    if unknown:
        return f"names license(s) not on the SPDX list: {', '.join(map(str, unknown))}"
    return None


def is_absolute_uri(text: str) -> bool:
    return bool(_ABSOLUTE_URI.match(text))


def metadata_issues(document: Accepted, *, prefix: str, what: str) -> list[Issue]:
    """§14.1 / §16.1: the discovery members a published document must carry."""
    rule = f"{prefix}.publish-metadata"
    out: list[Issue] = []
    for member, minimum in (("version", 1), ("name", 3), ("description", 20)):
        value = document.get(member)
        if not isinstance(value, str) or len(value.strip()) < minimum:
            need = "a SemVer" if member == "version" else f"a {minimum}+ character"
            out.append(Issue(rule, f"$.{member}", f"a published {what} needs {need} {member}"))
    license_text = document.get("license")
    if not isinstance(license_text, str):
        out.append(Issue(rule, "$.license", f"a published {what} needs an SPDX license"))
    elif (problem := spdx_problem(license_text)) is not None:
        out.append(Issue(rule, "$.license", f"license {license_text!r} {problem}"))
    authors = document.get("authors")
    if not isinstance(authors, list) or not authors:
        out.append(Issue(rule, "$.authors", f"a published {what} needs at least one author"))
    else:
        for index, author in enumerate(authors):
            if not str(author.get("name", "")).strip():
                out.append(Issue(rule, member_path("$.authors", index, "name"), "blank name"))
    if not document.get("tags"):
        out.append(Issue(rule, "$.tags", f"a published {what} needs at least one discovery tag"))
    return out


def uri_issues(document: Accepted, *, prefix: str) -> list[Issue]:
    """``homepage`` and author ``url`` must be absolute URIs (the schema's ``format: uri``)."""
    rule = f"{prefix}.publish-metadata"
    out: list[Issue] = []
    homepage = document.get("homepage")
    if isinstance(homepage, str) and not is_absolute_uri(homepage):
        out.append(Issue(rule, "$.homepage", "homepage must be an absolute URI"))
    for index, author in enumerate(document.get("authors") or []):
        url = author.get("url") if isinstance(author, dict) else None
        if isinstance(url, str) and not is_absolute_uri(url):
            path = member_path("$.authors", index, "url")
            out.append(Issue(rule, path, "an author url must be an absolute URI"))
    return out


def secret_issues(document: Accepted, *, prefix: str, pinned: Callable[[str], bool]) -> list[Issue]:
    """The fail-closed scan of §16.1 over all public metadata, plus credential-named members."""
    rule = f"{prefix}.publish-secret-scan"
    out = [
        Issue(rule, f.path, f"secret-like public metadata ({f.rule}); remove it before publishing")
        for f in scan_document(document, pinned=pinned)
    ]
    extensions = document.get("extensions")
    if isinstance(extensions, dict):
        out.extend(
            Issue(rule, path, "an extension member named like private content or a credential")
            for path in private_keys(extensions, "$.extensions")
        )
    return out


def profile_issues(
    document: Accepted, *, prefix: str, what: str, command: str, pinned: Callable[[str], bool]
) -> list[Issue]:
    """The discovery profile, absolute URIs, the secret scan and the not-signed-yet warning."""
    issues = metadata_issues(document, prefix=prefix, what=what)
    issues += uri_issues(document, prefix=prefix)
    issues += secret_issues(document, prefix=prefix, pinned=pinned)
    if "integrity" not in document:
        issues.append(
            Issue(
                f"{prefix}.publish-signed",
                "$.integrity",
                f"not signed yet: run `{command}` before publishing",
                "warning",
            )
        )
    return issues


def lineage_issues(document: Accepted, *, prefix: str, publisher_id: str | None) -> list[Issue]:
    """§17.3: no duplicate parents, and no parent that is this very artifact's coordinate.

    The child's coordinate includes its publisher, known once it is signed (or being signed):
    with ``publisher_id`` None only duplicates are checked, since a fork under another
    publisher may keep the parent's id and version.
    """
    lineage = document.get("lineage")
    if not isinstance(lineage, dict):
        return []
    rule = f"{prefix}.lineage"
    own_type = _LINEAGE_TYPE[prefix]
    out: list[Issue] = []
    seen: set[tuple[Json, ...]] = set()
    for index, parent in enumerate(lineage.get("parents") or []):
        path = member_path("$.lineage.parents", index)
        coordinate = tuple(
            parent.get(k) for k in ("artifactType", "publisherId", "id", "version", "digest")
        )
        if coordinate in seen:
            out.append(Issue(rule, path, "the same parent is listed twice"))
        seen.add(coordinate)
        if (
            parent.get("artifactType") == own_type
            and parent.get("id") == document.get("id")
            and parent.get("version") == document.get("version")
            and publisher_id is not None
            and parent.get("publisherId") == publisher_id
        ):
            out.append(Issue(rule, path, "a lineage parent cannot be this artifact itself"))
    return out


__all__ = [
    "is_absolute_uri",
    "lineage_issues",
    "metadata_issues",
    "profile_issues",
    "secret_issues",
    "spdx_problem",
    "uri_issues",
]
