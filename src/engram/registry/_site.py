"""``build-site``: the static ACX Exchange (HTML, one stylesheet, one script; no server).

Spec: lboel/acx@85f1358 SPEC.md §17.6 (all eight MUSTs of a static build, and the browser
verification boundary), §17.5 (non-active status shown before download), §17.7 (discover,
inspect, verify, download; the exact CLI command for every artifact), §17.8 (no commerce, no
namespace claim); docs/spec/acx-registry.md §10.

1. The allowlist is the validated registry index: a fresh :func:`build_index` with no problem,
   which must equal the committed ``index.json`` when there is one.
2. Every allowlisted path is the canonical one, inside the registry, with no symbolic link; a
   template file must be a text file (``.md``, ``.json``, ``.yaml``, ``.yml``, ``.txt``).
3. Each artifact's bytes are read once, written to the site, and **the written copy** is verified
   again (the same checks as the index) and must give the indexed digest.
4. Bytes are copied unchanged; 5. every link is relative; 6. ``data/index.json``
   (``acx.static-exchange/1``) and ``manifest.json`` (``acx.static-exchange-manifest/1``, every
   other output file with its size and sha256) are deterministic; 7. every page is useful without
   JavaScript; 8. nothing secret, no upload endpoint, no backend.

The output folder is built beside the target and swapped in whole; a folder that is neither
empty nor a previous Exchange build is refused.
"""

from __future__ import annotations

import hashlib
import shutil
import tempfile
from dataclasses import dataclass
from datetime import datetime
from importlib import resources
from pathlib import Path
from typing import Any

import jinja2

from engram.core.canonical import Json, JsonObject, parse_strict
from engram.core.jsonio import dumps_text
from engram.errors import CanonicalJsonError
from engram.registry._index import IndexBuild, build_index, index_bytes
from engram.registry._layout import (
    AGENT,
    AGENT_GRAPH,
    ARTIFACT,
    ARTIFACT_TYPES,
    ARTIFACTS,
    INDEX_FILE,
    TEMPLATES,
    WORKFLOW,
    Coordinate,
    canonical_path,
    inside,
)
from engram.registry._problems import RegistryRefused, problem_line
from engram.registry._summaries import SUMMARIZE
from engram.trust import TrustRegistry

EXCHANGE_VERSION = "acx.static-exchange/1"
MANIFEST_VERSION = "acx.static-exchange-manifest/1"
TEXT_FILES = (".md", ".json", ".yaml", ".yml", ".txt")
TEMPLATE = "template"
"""Templates are listed beside the artifact types, unsigned (§17.1 ``templates/``)."""
KIND_LABEL = {**{a.name: a.label for a in ARTIFACTS}, TEMPLATE: "Template"}
PAGE_KIND = {**{a.name: a.page for a in ARTIFACTS}, TEMPLATE: "templates"}
KINDS = (*ARTIFACT_TYPES, TEMPLATE)
TRUST_TEXT = {
    "portable": (
        "the signature holds under a key the registry does not vouch for (no namespace proof)"
    ),
    "trusted": "the signature holds under a trust-registry key with a namespace proof",
    "local": "signed by this registry's own key",
    "unsigned": "editable source, never signature-verified",
}


@dataclass(frozen=True)
class SiteBuild:
    out: Path
    artifacts: int
    files: int
    index_digest: str


def _sha(data: bytes) -> str:
    return "sha256:" + hashlib.sha256(data).hexdigest()


def _environment() -> jinja2.Environment:
    folder = resources.files("engram.registry").joinpath("site")
    templates = {
        name: folder.joinpath(name).read_text(encoding="utf-8")
        for name in ("base.html.j2", "listing.html.j2", "detail.html.j2")
    }
    return jinja2.Environment(
        loader=jinja2.DictLoader(templates),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
        keep_trailing_newline=True,
    )


def _asset(name: str) -> bytes:
    return resources.files("engram.registry").joinpath("site", name).read_bytes()


def _slug(*parts: str | None) -> str:
    return "__".join(p for p in parts if p)


class _Site:
    """What is written, by output-relative path (then written in one go)."""

    def __init__(self) -> None:
        self.files: dict[str, bytes] = {}

    def put(self, path: str, data: bytes) -> None:
        assert path not in self.files, path
        self.files[path] = data


def _allowlist(registry: Path, now: datetime, trust: TrustRegistry | None) -> IndexBuild:
    build = build_index(registry, now=now, trust=trust)
    if not build.ok:
        shown = "; ".join(problem_line(p) for p in build.problems[:5])
        raise RegistryRefused(f"the registry does not pass its gate, so no site is built: {shown}")
    committed = registry / INDEX_FILE
    if committed.is_file() and committed.read_bytes() != build.to_bytes():
        raise RegistryRefused(
            "index.json is not the fresh build of the registry's bytes: "
            "run `engram registry index` first"
        )
    return build


def _reverify(
    kind: str,
    copy: Path,
    relative: str,
    entry: dict[str, Any],
    now: datetime,
    trust: TrustRegistry | None,
) -> None:
    summary = SUMMARIZE[kind](copy.parent, None, trust=trust, now=now, source=copy)
    if (
        summary.problems
        or summary.coordinate is None
        or summary.coordinate.digest != entry["digest"]
    ):
        reason = "; ".join(problem_line(p) for p in summary.problems[:3]) or "another digest"
        raise RegistryRefused(f"{relative} did not verify again when it was copied: {reason}")
    if summary.coordinate.path != relative:
        raise RegistryRefused(f"{relative} is not the canonical path of the artifact it holds")


def _read_canonical(registry: Path, relative: str) -> bytes:
    try:
        path = inside(registry, relative)
    except ValueError as e:
        raise RegistryRefused(str(e)) from e
    if not path.is_file():
        raise RegistryRefused(f"{relative}: not a regular file")
    return path.read_bytes()


def _level_text(entry: dict[str, Any]) -> str:
    if entry.get("level"):
        return f"{entry['level']['careerTier']} · Lv.{entry['level']['acxLevel']} (proven)"
    claim = entry.get("levelClaim") or {}
    if claim.get("acxLevel") is not None:
        return f"Lv.{claim['acxLevel']} {claim.get('careerTier') or ''} claimed, unproven".replace(
            "  ", " "
        )
    return "none claimed"


def download_name(kind: str, entry: dict[str, Any]) -> str:
    """A file name for the download that says what it is (the registry path's last segment
    is only ``1.0.0.cal.json`` or ``cartridge.acx``)."""
    return f"{entry['id']}-{entry['version']}{ARTIFACT[kind].file_suffix}"


def _cli(kind: str, name: str) -> tuple[str, str]:
    if kind == AGENT:
        return (
            "A matching download digest proves only that you got the recorded file. "
            "These commands verify the cartridge itself.",
            f"engram cartridge verify {name}\nengram cartridge spec {name}\n"
            f"# the reference tool:\nacx verify {name} && acx spec {name}",
        )
    if kind == WORKFLOW:
        return (
            "Repeat the browser check before you staff or run the workflow.",
            f"engram workflow verify {name}\nengram workflow digest {name}",
        )
    if kind == AGENT_GRAPH:
        return (
            "Repeat the browser check before you use the graph.",
            f"engram graph verify {name}\nengram graph digest {name}",
        )
    return (
        "Templates are unsigned: inspect every file, then export your own signed cartridge.",
        "engram cartridge export . -o my-agent.acx --publisher io.github.you --sign-key KEY",
    )


def build_site(
    registry: Path, out: Path, *, now: datetime, trust: TrustRegistry | None = None
) -> SiteBuild:
    build = _allowlist(registry, now, trust)
    index = build.index
    index_digest = _sha(index_bytes(index))
    site = _Site()
    views: list[dict[str, Any]] = []
    pages: dict[Coordinate, str] = {}
    with tempfile.TemporaryDirectory(prefix="engram-exchange-") as scratch:
        for kind, collection in ((a.name, a.index_key) for a in ARTIFACTS):
            for entry in index[collection]:
                relative = entry["path"]
                publisher = entry["publisher"]
                if relative != canonical_path(kind, publisher, entry["id"], entry["version"]):
                    raise RegistryRefused(f"{relative}: not the canonical path of its coordinate")
                data = _read_canonical(registry, relative)
                copy = (
                    Path(scratch)
                    / _slug(kind, publisher, entry["id"], entry["version"])
                    / relative.rsplit("/", 1)[-1]
                )
                copy.parent.mkdir(parents=True)
                copy.write_bytes(data)
                _reverify(kind, copy, relative, entry, now, trust)
                slug = _slug(publisher, entry["id"], entry["version"])
                page = f"artifacts/{PAGE_KIND[kind]}/{slug}/index.html"
                pages[
                    Coordinate(kind, publisher, entry["id"], entry["version"], entry["digest"])
                ] = page
                site.put(f"files/{relative}", data)
                views.append(
                    {"kind": kind, "entry": entry, "page": page, "files": [(relative, data)]}
                )
        for entry in index["templates"]:
            folder = entry["path"].rsplit("/", 1)[0]
            if not folder.startswith(f"{TEMPLATES}/") or folder.count("/") != 1:
                raise RegistryRefused(f"{entry['path']}: not a template folder")
            files = []
            for name in entry["files"]:
                if not name.endswith(TEXT_FILES):
                    raise RegistryRefused(
                        f"{folder}/{name}: only text files are published from templates"
                    )
                data = _read_canonical(registry, f"{folder}/{name}")
                site.put(f"files/{folder}/{name}", data)
                files.append((f"{folder}/{name}", data))
            page = f"artifacts/{PAGE_KIND[TEMPLATE]}/{entry['id']}/index.html"
            views.append({"kind": TEMPLATE, "entry": entry, "page": page, "files": files})

    environment = _environment()
    common = {"index_digest": index_digest, "generated_at": index["generatedAt"]}
    cards = [_view(v, pages, "") for v in views]
    counts = {k: sum(1 for v in views if v["kind"] == k) for k in KINDS}
    kinds = [(k, KIND_LABEL[k] + "s") for k in KINDS]
    site.put(
        "index.html",
        environment.get_template("listing.html.j2")
        .render(root="", artifacts=cards, counts=counts, kinds=kinds, **common)
        .encode(),
    )
    for view in views:
        detail = _view(view, pages, "../../../")
        site.put(
            view["page"],
            environment.get_template("detail.html.j2")
            .render(root="../../../", a=detail, **common)
            .encode(),
        )
    site.put("assets/exchange.css", _asset("exchange.css"))
    site.put("assets/exchange.js", _asset("exchange.js"))
    data_index: JsonObject = {
        "exchangeSchemaVersion": EXCHANGE_VERSION,
        "generatedAt": index["generatedAt"],
        "registryIndexDigest": index_digest,
        "artifacts": [
            {
                "artifactType": v["kind"],
                "page": v["page"],
                "path": v["entry"]["path"],
                "digest": v["entry"].get("digest"),
                "files": [
                    {"path": f"files/{p}", "bytes": len(d), "digest": _sha(d)}
                    for p, d in v["files"]
                ],
                "entry": v["entry"],
            }
            for v in views
        ],
    }
    site.put("data/index.json", (dumps_text(data_index, indent=2, sort_keys=False) + "\n").encode())
    site.put("data/registry-index.json", index_bytes(index))
    manifest = {
        "schemaVersion": MANIFEST_VERSION,
        "builtAt": index["generatedAt"],
        "exchangeIndexDigest": _sha(site.files["data/index.json"]),
        "artifacts": [
            {"artifactType": v["kind"], "path": v["entry"]["path"], "page": v["page"]}
            for v in views
        ],
        "files": [
            {"path": p, "bytes": len(d), "digest": _sha(d)} for p, d in sorted(site.files.items())
        ],
    }
    site.put("manifest.json", (dumps_text(manifest, indent=2, sort_keys=False) + "\n").encode())
    _write(out, site.files)
    return SiteBuild(out, len(views), len(site.files), index_digest)


def _is_previous_build(out: Path) -> bool:
    try:
        manifest: Json = parse_strict((out / "manifest.json").read_bytes())
    except (OSError, CanonicalJsonError):
        return False
    return isinstance(manifest, dict) and manifest.get("schemaVersion") == MANIFEST_VERSION


def _write(out: Path, files: dict[str, bytes]) -> None:
    if out.is_symlink() or (out.exists() and not out.is_dir()):
        raise RegistryRefused(f"{out} is not a folder")
    if out.exists() and any(out.iterdir()) and not _is_previous_build(out):
        raise RegistryRefused(f"{out} holds other files: give an empty or new folder")
    out.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{out.name}.", dir=out.parent))
    try:
        for relative, data in files.items():
            target = staging / relative
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(data)
        if out.exists():
            shutil.rmtree(out)
        staging.rename(out)
    finally:
        if staging.exists():
            shutil.rmtree(staging)


def _view(view: dict[str, Any], pages: dict[Coordinate, str], root: str) -> dict[str, Any]:
    kind = view["kind"]
    entry = view["entry"]
    status = entry.get("registryStatus") or {"status": "active"}
    relative, data = next(
        ((p, d) for p, d in view["files"] if p == entry["path"]), view["files"][0]
    )
    capabilities = [
        c["taskType"] for c in entry.get("capabilities", []) if isinstance(c, dict)
    ] or [c for c in entry.get("capabilities", []) if isinstance(c, str)]
    search = " ".join(
        str(x)
        for x in (
            entry.get("name"),
            entry.get("publisher"),
            entry.get("id"),
            entry.get("description"),
            *entry.get("tags", []),
            *capabilities,
        )
        if x
    ).lower()
    label = download_name(kind, entry) if kind != TEMPLATE else relative.rsplit("/", 1)[-1]
    note, cli = _cli(kind, label)
    successor = status.get("successor")
    successor_view = None
    if isinstance(successor, dict):
        target = Coordinate(
            successor.get("artifactType", ""),
            successor.get("publisherId", ""),
            successor.get("id", ""),
            successor.get("version", ""),
            successor.get("digest", ""),
        )
        text = f"{target.publisher_id}/{target.id}@{target.version}"
        successor_view = {"text": text, "href": root + pages[target] if target in pages else None}
    facts, sections = _details(kind, entry, pages, root)
    noscript = (
        "This check needs JavaScript. Without it, use the CLI commands below."
        if kind in (WORKFLOW, AGENT_GRAPH)
        else "A browser can only compare the download's digest; verify the file with the CLI below."
    )
    return {
        "kind": kind,
        "kind_label": KIND_LABEL[kind],
        "name": entry.get("name") or entry.get("id"),
        "id": entry.get("id"),
        "description": entry.get("description") or "",
        "publisher": entry.get("publisher"),
        "version": entry.get("version"),
        "license": entry.get("license"),
        "tags": entry.get("tags", []),
        "trust": entry.get("trust"),
        "trust_text": TRUST_TEXT.get(str(entry.get("trust")), str(entry.get("trustStatus"))),
        "status": status.get("status", "active"),
        "status_reason": status.get("reason"),
        "status_recorded": status.get("recordedAt"),
        "successor": successor_view,
        "advisory": status.get("advisory"),
        "latest": entry.get("latest", False),
        "digest": entry.get("digest"),
        "level_text": _level_text(entry) if kind == AGENT else "",
        "capabilities": capabilities,
        "search": search,
        "page": root + view["page"],
        "file_digest": _sha(data),
        "verify_src": root + "files/" + relative,
        "downloads": [
            {
                "href": root + "files/" + p,
                "label": label if kind != TEMPLATE else p.rsplit("/", 1)[-1],
                "bytes": len(d),
            }
            for p, d in view["files"]
            if kind != TEMPLATE
        ],
        "noscript_verdict": noscript,
        "cli_note": note,
        "cli": cli,
        "facts": facts,
        "sections": sections,
    }


def _details(
    kind: str, entry: dict[str, Any], pages: dict[Coordinate, str], root: str
) -> tuple[list[tuple[str, str]], list[dict[str, Any]]]:
    facts: list[tuple[str, str]] = []
    sections: list[dict[str, Any]] = []
    if kind == AGENT:
        facts = [
            ("Role", entry["role"]),
            ("Model", f"{entry['provider']} · {entry['model']}".strip(" ·")),
            ("Level", _level_text(entry)),
            ("Package spec", "clean" if entry["specClean"] else "not clean"),
            ("Size", f"{entry['bytes']} bytes"),
        ]
        sections.append(
            {
                "title": "Capabilities (claims)",
                "note": "A stored “verified” flag is never proof: a capability counts as "
                "verified only when a level credential it references resolves. None here did.",
                "items": [
                    {
                        "text": f"{c['taskType']} — {', '.join(c['stack']) or 'no stack'}"
                        + (" (claimed verified)" if c["claimedVerified"] else "")
                    }
                    for c in entry["capabilities"]
                ],
            }
        )
    elif kind == WORKFLOW:
        facts = [
            ("Team", f"{entry['participantCount']} participants"),
            ("Steps", f"{entry['nodeCount']} nodes"),
        ]
        sections.append(
            {
                "title": "Participants",
                "note": None,
                "items": [
                    {"text": f"{p['alias']} — {p['role'] or p['bind']}"}
                    for p in entry["participants"]
                ],
            }
        )
        sections.append(
            {
                "title": "Capabilities required",
                "note": None,
                "items": [{"text": c} for c in entry["capabilities"]],
            }
        )
    elif kind == AGENT_GRAPH:
        facts = [
            ("Actors · knowledge", f"{entry['actorCount']} · {entry['knowledgeCount']}"),
            (
                "Routes · loops · convergence",
                f"{entry['routeCount']} · {entry['loopCount']} · {entry['convergenceCount']}",
            ),
            ("Intents", ", ".join(entry["intents"])),
        ]
        sections.append(
            {
                "title": "Pinned workflow dependencies",
                "note": "Each loop pins a workflow by publisher, id, version and digest; the "
                "registry build resolved exactly these bytes, never a “latest”.",
                "items": [
                    {
                        "text": f"{d['loopId']}: {d['publisherId']}/{d['id']}@{d['version']} "
                        f"({d['digest'][:19]}…, {d['registryStatus']})",
                        "href": root
                        + pages.get(
                            Coordinate(
                                WORKFLOW, d["publisherId"], d["id"], d["version"], d["digest"]
                            ),
                            "",
                        )
                        or None,
                    }
                    for d in entry["dependencies"]
                ],
            }
        )
        sections.append(
            {
                "title": "Actors",
                "note": None,
                "items": [{"text": f"{a['name']} ({a['kind']})"} for a in entry["actors"]],
            }
        )
    else:
        facts = [("Files", f"{entry['fileCount']}")]
        sections.append(
            {
                "title": "Files",
                "note": "Unsigned editable source.",
                "items": [
                    {"text": f, "href": root + "files/" + entry["path"].rsplit("/", 1)[0] + "/" + f}
                    for f in entry["files"]
                ],
            }
        )
    if kind in (WORKFLOW, AGENT_GRAPH):
        sections.append(
            {
                "title": "Signed lineage",
                "note": "Lineage preserves attribution; it does not pass on trust, "
                "namespace, licence or permission.",
                "items": [
                    {
                        "text": f"{p['relation']} of {p['artifactType']} {p['publisherId']}/"
                        f"{p['id']}@{p['version'] or '?'} ({p['digest']})"
                    }
                    for p in entry["lineage"]
                ],
            }
        )
    return facts, sections


__all__ = ["EXCHANGE_VERSION", "MANIFEST_VERSION", "SiteBuild", "build_site"]
