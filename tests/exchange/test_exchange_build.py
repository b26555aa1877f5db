"""The static Exchange build (lboel/acx@85f1358 SPEC.md §17.6 items 1-8, §17.5, §17.8), without a
browser: what is copied, what is refused, what the pages say with no JavaScript."""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path

import pytest
from exchange_kit import built_site
from registry_kit import NOW, dump, make_registry

from engram.registry import RegistryRefused, build_site


def sha(data: bytes) -> str:
    return "sha256:" + hashlib.sha256(data).hexdigest()


@pytest.mark.req(
    "engram.registry.site-bytes", "engram.registry.site-manifest", "engram.registry.site-allowlist"
)
def test_the_site_copies_authoritative_bytes_and_lists_every_file_with_its_digest(
    tmp_path: Path,
) -> None:
    registry, site = built_site(tmp_path)
    index = json.loads((registry.root / "index.json").read_text())
    manifest = json.loads((site / "manifest.json").read_text())
    assert manifest["schemaVersion"] == "acx.static-exchange-manifest/1"
    assert manifest["builtAt"] == index["generatedAt"]
    listed = {f["path"]: f for f in manifest["files"]}
    on_disk = {p.relative_to(site).as_posix() for p in site.rglob("*") if p.is_file()}
    assert set(listed) == on_disk - {"manifest.json"}
    for path, entry in listed.items():
        data = (site / path).read_bytes()
        assert entry == {"path": path, "bytes": len(data), "digest": sha(data)}
    assert manifest["exchangeIndexDigest"] == sha((site / "data/index.json").read_bytes())
    exchange = json.loads((site / "data/index.json").read_text())
    assert exchange["exchangeSchemaVersion"] == "acx.static-exchange/1"
    # Exactly the allowlisted artifacts, byte for byte.
    paths = sorted(a["path"] for a in exchange["artifacts"] if a["artifactType"] != "template")
    expected = sorted(
        e["path"] for c in ("cartridges", "workflows", "agentGraphs") for e in index[c]
    )
    assert paths == expected
    for path in paths:
        assert (site / "files" / path).read_bytes() == (registry.root / path).read_bytes()
    assert (site / "data/registry-index.json").read_bytes() == (
        registry.root / "index.json"
    ).read_bytes()


@pytest.mark.req("engram.registry.site-manifest")
def test_the_build_is_deterministic(tmp_path: Path) -> None:
    registry, site = built_site(tmp_path)
    again = tmp_path / "again"
    build_site(registry.root, again, now=NOW.replace(hour=9))
    assert (site / "manifest.json").read_bytes() == (again / "manifest.json").read_bytes()


@pytest.mark.req(
    "engram.registry.site-relative",
    "engram.registry.site-no-secrets",
    "engram.registry.no-commerce",
)
def test_links_are_relative_and_nothing_secret_or_remote_is_shipped(tmp_path: Path) -> None:
    _registry, site = built_site(tmp_path)
    for page in site.rglob("*.html"):
        html = page.read_text()
        for link in re.findall(r'(?:href|src)="([^"]*)"', html):
            assert not re.match(r"^(?:[a-z]+:)?//|^/", link), (page, link)  # relative only
            if not link.startswith(("data:", "https://")):
                target = (page.parent / link).resolve()
                assert target.is_relative_to(site.resolve()), (page, link)
                assert target.exists(), (page, link)
        assert "<form" not in html or 'method="post"' not in html.lower()
        assert not re.search(r"\b(price|checkout|purchase|buy now)\b", html, re.I)
    for path in site.rglob("*"):
        if path.is_file():
            assert b"PRIVATE KEY" not in path.read_bytes()
    script = (site / "assets/exchange.js").read_text()
    assert "http://" not in script
    assert "https://" not in script.replace("https://in-toto.io", "").replace("https://acx.dev", "")
    assert not re.search(r"\b(XMLHttpRequest|sendBeacon|WebSocket)\b", script)
    assert re.findall(r"method:\s*\"(\w+)\"", script) == []  # fetch only GETs this site


@pytest.mark.req(
    "engram.registry.site-no-js",
    "engram.registry.status-display",
    "engram.registry.browser-cartridge",
)
def test_pages_say_what_they_must_without_javascript(tmp_path: Path) -> None:
    registry = make_registry(tmp_path)
    registry.index()
    index = json.loads((registry.root / "index.json").read_text())
    flow = next(w for w in index["workflows"] if w["id"] == "review-loop")
    identity = {
        k: flow[v]
        for k, v in (
            ("publisherId", "publisher"),
            ("id", "id"),
            ("version", "version"),
            ("digest", "digest"),
        )
    }
    dump(
        registry.root / "status.json",
        {
            "schemaVersion": "acx.registry-status/1",
            "updatedAt": "2026-09-03T00:00:00Z",
            "entries": [
                {
                    "artifact": {"artifactType": "workflow", **identity},
                    "status": "deprecated",
                    "reason": "Prefer the research council for new teams.",
                    "recordedAt": "2026-09-03T00:00:00Z",
                    "advisory": "https://example.com/advisory",
                }
            ],
        },
    )
    registry.index()
    site = tmp_path / "site"
    build_site(registry.root, site, now=NOW)
    pages = {
        p.relative_to(site).as_posix(): p.read_text()
        for p in (site / "artifacts").rglob("index.html")
    }
    flow_page = pages["artifacts/workflows/io.github.example__review-loop__1.2.0/index.html"]
    notice = flow_page.index("Prefer the research council")
    assert notice < flow_page.index('class="download"')  # non-active status before the download
    assert "engram workflow verify review-loop-1.2.0.cal.json" in flow_page
    cartridge_page = next(
        v for k, v in pages.items() if k.startswith("artifacts/agents/io.github.acme")
    )
    assert "engram cartridge verify" in cartridge_page
    assert "engram cartridge spec" in cartridge_page
    assert (
        "not verified" in cartridge_page.lower()
        or "only that you got the recorded file" in cartridge_page
    )
    assert (
        "claimed, unproven"
        in pages["artifacts/agents/io.github.ridgeworks__ada-ridge__1.0.0/index.html"]
    )
    listing = (site / "index.html").read_text()
    assert listing.count('class="card"') == 8
    assert "deprecated" in listing


@pytest.mark.req("engram.registry.site-paths", "engram.registry.site-reverify")
def test_a_registry_that_fails_its_gate_or_changes_during_the_build_is_refused(
    tmp_path: Path,
) -> None:
    registry = make_registry(tmp_path, with_reference=False)
    registry.index()
    link = registry.root / "cals" / "escape.cal.json"
    link.symlink_to("/etc/hostname")
    with pytest.raises(RegistryRefused, match="symbolic links"):
        build_site(registry.root, tmp_path / "s1", now=NOW)
    link.unlink()
    registry.workflow.write_text(
        registry.workflow.read_text().replace("Build and review", "Build and rebuild")
    )
    with pytest.raises(RegistryRefused):
        build_site(registry.root, tmp_path / "s2", now=NOW)
    assert not (tmp_path / "s2").exists()


@pytest.mark.req("engram.registry.site-reverify")
def test_the_copied_bytes_are_verified_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from engram.registry import _site

    registry = make_registry(tmp_path, with_reference=False)
    registry.index()
    real = _site._read_canonical

    def swapped(root: Path, relative: str) -> bytes:
        data = real(root, relative)
        return (
            data.replace(b"Build and review", b"Build and rebuild")
            if relative.endswith(".cal.json")
            else data
        )

    monkeypatch.setattr(_site, "_read_canonical", swapped)  # the file changes after the index
    with pytest.raises(RegistryRefused, match="did not verify again"):
        build_site(registry.root, tmp_path / "site", now=NOW)


@pytest.mark.req("engram.registry.site-no-secrets")
def test_an_occupied_output_folder_is_refused(tmp_path: Path) -> None:
    registry = make_registry(tmp_path, with_reference=False)
    registry.index()
    occupied = tmp_path / "occupied"
    occupied.mkdir()
    (occupied / "keep.txt").write_text("mine")
    with pytest.raises(RegistryRefused, match="holds other files"):
        build_site(registry.root, occupied, now=NOW)
    assert (occupied / "keep.txt").read_text() == "mine"
    build_site(registry.root, tmp_path / "site", now=NOW)
    build_site(registry.root, tmp_path / "site", now=NOW)  # a previous build is replaced whole


@pytest.mark.req("engram.registry.artifact-types-one-source")
def test_the_browser_check_reads_the_same_signature_kinds_as_the_library() -> None:
    # exchange.js re-verifies a workflow's or Agent Graph's signature in the reader's browser, so
    # it carries its own copy of each signed kind's names (JavaScript cannot import Python): this
    # holds that copy to the ArtifactKind declarations the library signs and verifies with.
    from engram.graph.internals import AGENT_GRAPH
    from engram.workflow.internals import WORKFLOW

    script = (
        Path(__file__).resolve().parents[2] / "src/engram/registry/site/exchange.js"
    ).read_text(encoding="utf-8")
    block = script[
        script.index("const KINDS = {") : script.index("};", script.index("const KINDS"))
    ]
    for name, kind in (("workflow", WORKFLOW), ("agent-graph", AGENT_GRAPH)):
        start = block.index(f'"{name}": {{' if "-" in name else f"{name}: {{")
        spec = block[start : block.index("},\n", block.index("counts:", start)) + 1]
        assert f'subject: "{kind.subject_prefix}"' in spec, name
        assert f'predicateType: "{kind.predicate_type}"' in spec, name
        assert f'schema: "{kind.signature_version}"' in spec, name
        members = [kind.id_member, kind.version_member, kind.digest_member]
        assert "members: [" + ", ".join(f'"{m}"' for m in members) + "]" in spec, name
        counts = ", ".join(f'{member}: "{array}"' for member, array in kind.counts)
        assert f"counts: {{ {counts} }}" in spec, name
