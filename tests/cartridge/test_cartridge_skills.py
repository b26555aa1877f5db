"""Skills: wholly in ROM, six-key agentskills.io frontmatter, re-derivable acx_skill index."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest
from acx_kit import SKILL_MD, build, check, execute, rows

from engram.cartridge import Cartridge, TrustState, load_rom
from engram.cartridge._skills import FRONTMATTER_KEYS, skill_row
from engram.errors import CartridgeFormatError


def _skill(front: str, body: str = "Body.\n") -> bytes:
    return f"---\n{front}---\n{body}".encode()


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
def test_index_row_is_derived_from_the_skill_bytes(signed: Path) -> None:
    with Cartridge.open(signed) as cartridge:
        (row,) = load_rom(cartridge).skills
    assert row.to_json() == {
        "name": "git-helper",
        "path": "rom/skills/git-helper/SKILL.md",
        "description": "Answers questions about a repository's git history.",
        "license": "Apache-2.0",
        "compatibility": "Requires git",
        "metadata": {"author": "acme", "version": "1.0"},
        "allowedTools": ["Bash(git:*)", "Read"],
        "ext": {"com.anthropic.claude-code": {"model": "opus"}},
        "contentSha256": hashlib.sha256(SKILL_MD).hexdigest(),
        "schemaVersion": "acx.skill/1",
    }


@pytest.mark.req("engram.cartridge.skill-index")
def test_stored_index_content_sha256_matches_the_manifest(signed: Path) -> None:
    ((stored,),) = rows(signed, "SELECT content_sha256 FROM acx_skill")
    ((oid,),) = rows(signed, "SELECT oid FROM acx_object WHERE path LIKE '%/SKILL.md'")
    assert stored == oid == hashlib.sha256(SKILL_MD).hexdigest()


@pytest.mark.req("engram.cartridge.skill-index")
def test_an_edited_index_is_tampered(signed: Path) -> None:
    execute(signed, "UPDATE acx_skill SET description = 'Deletes your repository.'")
    report = check(signed)
    assert report.state is TrustState.TAMPERED
    assert "acx_skill" in report.reason


@pytest.mark.req("engram.cartridge.skill-index")
def test_a_deleted_index_row_is_tampered(signed: Path) -> None:
    execute(signed, "DELETE FROM acx_skill")
    assert check(signed).state is TrustState.TAMPERED


@pytest.mark.req("engram.cartridge.skills-frontmatter")
@pytest.mark.parametrize("extra", ["model: opus", "context: fork", "hooks: x"])
def test_host_fields_at_top_level_are_refused(extra: str) -> None:
    data = _skill(f"name: demo\ndescription: A demo.\n{extra}\n")
    with pytest.raises(CartridgeFormatError, match=r"reverse-DNS key in acx\.ext\.json"):
        skill_row("demo", data, None)


@pytest.mark.req("engram.cartridge.skills-frontmatter")
@pytest.mark.parametrize(
    ("ext", "message"),
    [
        (b'{"claude": {"model": "opus"}}', "not a reverse-DNS namespace"),
        (b'{"com.anthropic.claude-code": "opus"}', "must hold a JSON object"),
        (b"[1]", "must be a JSON object"),
    ],
)
def test_ext_keys_must_be_reverse_dns(ext: bytes, message: str) -> None:
    with pytest.raises(CartridgeFormatError, match=message):
        skill_row("demo", _skill("name: demo\ndescription: A demo.\n"), ext)


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
        ("name: demo\ndescription: x\nmetadata:\n  a:\n    b: c\n", "map"),
        ("name: demo\ndescription: " + "x" * 1100 + "\n", "longer than 1024"),
    ],
)
def test_malformed_frontmatter_is_refused(front: str, message: str) -> None:
    with pytest.raises(CartridgeFormatError, match=message):
        skill_row("demo", _skill(front), None)


@pytest.mark.req("engram.cartridge.skills-frontmatter")
def test_frontmatter_values_are_never_coerced() -> None:
    row = skill_row(
        "demo",
        _skill(
            "name: demo\ndescription: >\n  Folded text\n  over lines.\n"
            "metadata:\n  version: 1.0\n  enabled: yes\n"
        ),
        None,
    )
    assert row.description == "Folded text over lines.\n"
    assert json.loads(row.metadata) == {"enabled": "yes", "version": "1.0"}


@pytest.mark.req("engram.cartridge.skills-frontmatter")
def test_a_bad_skill_name_is_refused_at_build(tmp_path: Path) -> None:
    skill = tmp_path / "skills" / "Bad_Name"
    skill.mkdir(parents=True)
    (skill / "SKILL.md").write_bytes(_skill("name: Bad_Name\ndescription: x\n"))
    with pytest.raises(CartridgeFormatError, match="lowercase"):
        build(tmp_path / "x.acx", key=None, skills=tmp_path / "skills")
    assert not (tmp_path / "x.acx").exists()


@pytest.mark.req("engram.cartridge.skills-frontmatter")
def test_skills_live_wholly_in_rom(signed: Path) -> None:
    names = [n for (n,) in rows(signed, "SELECT name FROM sqlar WHERE name LIKE '%skills%'")]
    assert names
    assert all(n.startswith("rom/skills") for n in names)
