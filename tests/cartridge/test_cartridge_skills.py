"""Skills: wholly in ROM, six-key agentskills.io frontmatter, a re-derivable ``acx_skill`` index,
host fields only under reverse-DNS ``ext`` keys, and the progressive-disclosure budget.

SPEC §5.1-§5.5 and §12 item 7 (lboel/acx@85f1358).
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest
from cartridge_kit import (
    SKILL_MD,
    SKILL_PATH,
    build,
    check,
    execute,
    rows,
    write_package,
)

from engram.cartridge import Cartridge, derive_skills, install_skills, load_rom, spec_report
from engram.cartridge.internals import FRONTMATTER_KEYS
from engram.core.keys import PrivateKey
from engram.errors import CartridgeFormatError
from engram.trust import TrustState

EXT = b'{"com.anthropic.claude-code": {"model": "opus"}}'


def _skill(front: str, body: str = "Body.\n") -> bytes:
    return f"---\n{front}---\n{body}".encode()


def _one(name: str, skill_md: bytes, **more: bytes) -> dict[str, bytes]:
    files = {f"rom/skills/{name}/SKILL.md": skill_md}
    files.update({f"rom/skills/{name}/{k}": v for k, v in more.items()})
    return files


@pytest.fixture
def signed(tmp_path: Path) -> Path:
    return build(
        tmp_path / "c.acx", key=PrivateKey.generate(), package=write_package(tmp_path / "pkg")
    )


@pytest.mark.req("engram.cartridge.skills-frontmatter")
def test_the_six_frontmatter_keys() -> None:
    assert FRONTMATTER_KEYS == (
        "name",
        "description",
        "license",
        "compatibility",
        "metadata",
        "allowed-tools",
    )


@pytest.mark.req("engram.cartridge.skills-frontmatter", "engram.cartridge.skill-index")
def test_the_index_row_is_derived_from_the_skill_bytes(signed: Path) -> None:
    with Cartridge.open(signed) as cartridge:
        (skill,) = derive_skills(load_rom(cartridge).files)
    blame = b'#!/bin/sh\ngit blame -w "$1"\n'
    renames = b"# Renames\n\nSee git help log.\n"
    assert skill.to_wire() == {
        "name": "git-helper",
        "description": "Answers questions about a repository's git history.",
        "license": "Apache-2.0",
        "compatibility": "Requires git",
        "skill_version": "1.0",
        "sqlar_path": SKILL_PATH,
        "body_tokens": -(-len(SKILL_MD) // 4),
        "content_sha256": hashlib.sha256(SKILL_MD).hexdigest(),
        "schema_version": "acx.skill/1",
        "resources": [
            {
                "path": "rom/skills/git-helper/references/renames.md",
                "bytes": len(renames),
                "sha256": hashlib.sha256(renames).hexdigest(),
            },
            {
                "path": "rom/skills/git-helper/scripts/blame.sh",
                "bytes": len(blame),
                "sha256": hashlib.sha256(blame).hexdigest(),
            },
        ],
        "ext": {"com.anthropic.claude-code": {"model": "opus"}},
        "metadata": {"author": "acme", "version": "1.0"},
        "allowedTools": ["Bash(git:*)", "Read"],
    }


@pytest.mark.req("engram.cartridge.skill-index")
def test_the_stored_index_is_readable_by_sql_alone_and_matches_the_manifest(signed: Path) -> None:
    """§5.3: a host lists and matches skills from SQL rows without inflating any BLOB."""
    listed = rows(signed, "SELECT name, description, content_sha256, resources, ext FROM acx_skill")
    ((name, description, content_sha256, resources, ext),) = listed
    assert (name, description) == (
        "git-helper",
        "Answers questions about a repository's git history.",
    )
    ((oid,),) = rows(signed, "SELECT oid FROM objects WHERE source_ref = ?", (SKILL_PATH,))
    assert oid == "sha256:" + content_sha256 == "sha256:" + hashlib.sha256(SKILL_MD).hexdigest()
    assert [r["path"] for r in json.loads(resources)] == [
        "rom/skills/git-helper/references/renames.md",
        "rom/skills/git-helper/scripts/blame.sh",
    ]
    assert json.loads(ext) == json.loads(EXT)


@pytest.mark.req("engram.cartridge.skill-index", "engram.cartridge.skill-index-columns")
@pytest.mark.parametrize(
    "sql",
    [
        "UPDATE acx_skill SET description = 'Deletes your repository.'",
        "UPDATE acx_skill SET content_sha256 = '" + "0" * 64 + "'",
        "UPDATE acx_skill SET resources = '[]'",
        "UPDATE acx_skill SET license = 'MIT'",
        """UPDATE acx_skill SET ext = '{"com.anthropic.claude-code":{"model":"haiku"}}'""",
        "UPDATE acx_skill SET ext = NULL",
        "UPDATE acx_skill SET ext = 'not json'",
        "UPDATE acx_skill SET skill_version = '9.9.9'",
        "UPDATE acx_skill SET body_tokens = body_tokens + 1",
        "DELETE FROM acx_skill",
        "INSERT INTO acx_skill VALUES ('ghost', 'd', NULL, NULL, NULL, "
        "'rom/skills/ghost/SKILL.md', 1, '00', '[]', NULL, 'acx.skill/1')",
    ],
)
def test_an_index_that_disagrees_with_rom_is_tampered(signed: Path, sql: str) -> None:
    execute(signed, sql)
    report = check(signed)
    assert report.state is TrustState.TAMPERED
    assert any("acx_skill" in p for p in report.problems), report.problems


@pytest.mark.req("engram.cartridge.skills-frontmatter")
@pytest.mark.parametrize("extra", ["model: opus", "context: fork", "hooks: x", "when_to_use: x"])
def test_host_fields_at_top_level_are_refused(extra: str) -> None:
    data = _skill(f"name: demo\ndescription: A demo.\n{extra}\n")
    with pytest.raises(CartridgeFormatError, match=r"reverse-DNS key in acx\.ext\.json"):
        derive_skills(_one("demo", data))


@pytest.mark.req("engram.cartridge.skills-frontmatter")
@pytest.mark.parametrize(
    ("ext", "message"),
    [
        (b'{"claude": {"model": "opus"}}', "not a reverse-DNS namespace"),
        (b'{"com.anthropic.claude-code": "opus"}', "must hold a JSON object"),
        (b"[1]", "must be a JSON object"),
        (b'{"a.b": {}, "a.b": {}}', "duplicate"),
    ],
)
def test_ext_keys_are_reverse_dns_namespaces(ext: bytes, message: str) -> None:
    files = _one("demo", _skill("name: demo\ndescription: A demo.\n"), **{"acx.ext.json": ext})
    with pytest.raises(CartridgeFormatError, match=message):
        derive_skills(files)


@pytest.mark.req("engram.cartridge.skills-frontmatter")
def test_unknown_ext_namespaces_are_kept_for_hosts_that_know_them() -> None:
    ext = b'{"com.anthropic.claude-code": {"model": "opus"}, "dev.other.host": {"x": [1]}}'
    files = _one("demo", _skill("name: demo\ndescription: A demo.\n"), **{"acx.ext.json": ext})
    (skill,) = derive_skills(files)
    assert skill.ext == json.loads(ext)


@pytest.mark.req("engram.cartridge.skills-frontmatter")
@pytest.mark.parametrize(
    ("front", "message"),
    [
        ("description: no name\n", "non-empty 'name'"),
        ("name: demo\n", "non-empty 'description'"),
        ("name: other\ndescription: x\n", "does not match its directory"),
        ("name: demo\nname: demo\ndescription: x\n", "duplicate key"),
        ("name: demo\ndescription: &a x\n", "not supported"),
        ("name: demo\ndescription: [a, b]\n", "not supported"),
        ("name: demo\ndescription: x\nmetadata:\n  a:\n    b: c\n", "map|nested"),
        ("name: demo\ndescription: " + "x" * 1100 + "\n", "longer than 1024"),
        ("name: demo\ndescription: x\ncompatibility: " + "y" * 501 + "\n", "longer than 500"),
        ("name: demo\ndescription: x\n\tlicense: MIT\n", "tabs"),
        ("name: demo\ndescription: - a\n", "sequences"),
    ],
)
def test_malformed_frontmatter_is_refused(front: str, message: str) -> None:
    with pytest.raises(CartridgeFormatError, match=message):
        derive_skills(_one("demo", _skill(front)))


@pytest.mark.req("engram.cartridge.skills-frontmatter")
@pytest.mark.parametrize(
    "skill_md",
    [b"no frontmatter\n", b"---\nname: demo\ndescription: d\n", b"\xff\xfe---\n---\n"],
)
def test_a_skill_md_without_a_closed_frontmatter_or_utf8_is_refused(skill_md: bytes) -> None:
    with pytest.raises(CartridgeFormatError):
        derive_skills(_one("demo", skill_md))


@pytest.mark.req("engram.cartridge.skills-frontmatter")
def test_frontmatter_values_are_never_coerced() -> None:
    files = _one(
        "demo",
        _skill(
            "name: demo\ndescription: >\n  Folded text\n  over lines.\n"
            "metadata:\n  version: 1.0\n  enabled: yes\n  count: 010\n"
        ),
    )
    (skill,) = derive_skills(files)
    assert skill.description == "Folded text over lines.\n"
    assert skill.metadata == {"enabled": "yes", "version": "1.0", "count": "010"}
    assert skill.skill_version == "1.0"


@pytest.mark.req("engram.cartridge.skills-frontmatter")
@pytest.mark.parametrize("name", ["Bad_Name", "a--b", "-a", "a" * 65])
def test_a_bad_skill_name_is_refused_at_build(tmp_path: Path, name: str) -> None:
    package = write_package(tmp_path / "pkg", skills=False)
    skill = package / "skills" / name
    skill.mkdir(parents=True)
    (skill / "SKILL.md").write_bytes(_skill(f"name: {name}\ndescription: x\n"))
    with pytest.raises(CartridgeFormatError, match=r"lowercase|not portable|1-64"):
        build(tmp_path / "x.acx", key=None, package=package)
    assert not (tmp_path / "x.acx").exists()


@pytest.mark.req("engram.cartridge.skills-frontmatter")
@pytest.mark.parametrize(
    "extra",
    ["references/deep/nested.md", "notes.md", "examples/a.md", "scripts/sub/run.sh"],
)
def test_reference_chains_stay_one_level_deep(extra: str) -> None:
    files = _one("demo", _skill("name: demo\ndescription: d\n"), **{extra: b"x"})
    with pytest.raises(CartridgeFormatError, match="directly under references/, scripts/"):
        derive_skills(files)


@pytest.mark.req("engram.cartridge.skills-frontmatter")
def test_a_skill_directory_without_skill_md_is_refused() -> None:
    with pytest.raises(CartridgeFormatError, match=r"has no SKILL\.md"):
        derive_skills({"rom/skills/demo/references/a.md": b"x"})


@pytest.mark.req("engram.cartridge.skills-frontmatter")
def test_skills_live_wholly_in_rom(signed: Path, tmp_path: Path) -> None:
    names = [n for (n,) in rows(signed, "SELECT name FROM sqlar WHERE name LIKE '%skills%'")]
    assert names
    assert all(n.startswith("rom/skills/") for n in names)
    # A SAVE file shaped like a skill is never a skill: not listed, never installed.
    execute(
        signed, "INSERT INTO sqlar VALUES ('save/skills/evil/SKILL.md', 33188, 0, 4, x'65766c21')"
    )
    with Cartridge.open(signed) as cartridge:
        rom = load_rom(cartridge)
    assert [s.name for s in derive_skills(rom.files)] == ["git-helper"]
    installed = install_skills(rom, tmp_path / "host")
    assert all("evil" not in str(p) for p in installed)


@pytest.mark.req("engram.cartridge.skill-budget")
def test_the_progressive_disclosure_budget_is_reported(tmp_path: Path) -> None:
    long_body = "word " * 4200  # about 21,000 bytes: over 5000 tokens at ~4 bytes each
    many_lines = "line\n" * 520
    package = write_package(tmp_path / "pkg", skills=False)
    for name, body in (("long-body", long_body), ("many-lines", many_lines), ("fine", "Short.\n")):
        skill = package / "skills" / name
        skill.mkdir(parents=True)
        (skill / "SKILL.md").write_bytes(_skill(f"name: {name}\ndescription: d\n", body))
    path = build(tmp_path / "c.acx", key=None, package=package)
    with Cartridge.open(path) as cartridge:
        report = spec_report(load_rom(cartridge))
    assert not report.clean
    budget = [i for i in report.issues if "references/" in i or "under 500" in i]
    assert len(budget) == 2
    assert any("long-body" in i and "tokens" in i for i in budget)
    assert any("many-lines" in i and "lines" in i for i in budget)
    (l1,) = rows(path, "SELECT body_tokens FROM acx_skill WHERE name = 'fine'")
    assert l1[0] < 100  # L1 metadata stays small and is read from the row alone


@pytest.mark.req("engram.cartridge.skill-budget", "engram.cartridge.skill-index")
def test_level_3_resources_are_inventoried_with_size_and_digest(signed: Path) -> None:
    ((resources,),) = rows(signed, "SELECT resources FROM acx_skill")
    for item in json.loads(resources):
        ((sz, oid),) = rows(
            signed,
            "SELECT s.sz, o.oid FROM sqlar s JOIN objects o ON o.source_ref = s.name "
            "WHERE s.name = ?",
            (item["path"],),
        )
        assert item["bytes"] == sz
        assert "sha256:" + item["sha256"] == oid
