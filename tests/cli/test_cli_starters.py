"""Starters (issue 32, point 4): ``engram cartridge new DIR``, ``engram workflow new FILE`` and
``engram graph new FILE`` write small, commented starting points that the next commands accept
as written: the package exports to a cartridge that verifies, is spec-clean and passes the
harness check; the workflow and the graph pass lint's publication profile and sign and verify.
Nothing is ever written over an existing target."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from engram.cli import cli, run_cli


def _run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = run_cli(cli, list(args))
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture
def key(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> Path:
    path = tmp_path / "publisher.pem"
    assert _run(capsys, "cartridge", "keygen", "-o", str(path))[0] == 0
    return path


@pytest.mark.req("engram.cli.starters")
def test_cartridge_new_exports_to_a_clean_verifying_cartridge(
    tmp_path: Path, key: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    package = tmp_path / "pkg"
    code, out, _ = _run(capsys, "cartridge", "new", str(package), "--name", "Data Helper")
    assert code == 0
    assert "skills/data-helper-basics/SKILL.md" in out
    assert "engram cartridge export" in (package / "README.md").read_text()
    assert json.loads((package / "manifest.json").read_text())["artifactId"] == "data-helper"
    acx = tmp_path / "dh.acx"
    export = ["cartridge", "export", str(package), "-o", str(acx), "--publisher", "io.github.you"]
    code, _, err = _run(capsys, *export, "--sign-key", str(key))
    assert code == 0, err
    code, out, _ = _run(capsys, "cartridge", "verify", str(acx), "--json")
    assert (code, json.loads(out)["trust"], json.loads(out)["signatureVerified"]) == (
        0,
        "portable",
        True,
    )
    code, out, _ = _run(capsys, "cartridge", "spec", str(acx))
    assert (code, out.splitlines()[-1]) == (0, "validation: CLEAN")
    assert _run(capsys, "cartridge", "check", str(acx), "--all-tools")[0] == 0


@pytest.mark.req("engram.cli.starters")
@pytest.mark.parametrize(("group", "name"), [("workflow", "w.cal.json"), ("graph", "g.json")])
def test_workflow_and_graph_new_pass_lint_publish_and_sign(
    group: str, name: str, tmp_path: Path, key: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    file = tmp_path / name
    assert _run(capsys, group, "new", str(file))[0] == 0
    code, out, _ = _run(capsys, group, "lint", str(file), "--publish", "--json")
    assert code == 0
    assert json.loads(out)["ok"] is True
    assert "STARTER" in json.loads(file.read_text())["description"]
    signed = tmp_path / f"signed-{name}"
    sign = [group, "sign", str(file), "--publisher", "io.github.you", "--sign-key", str(key)]
    assert _run(capsys, *sign, "-o", str(signed))[0] == 0
    code, out, _ = _run(capsys, group, "verify", str(signed), "--json")
    assert code == 0, out


@pytest.mark.req("engram.cli.starters")
def test_a_starter_never_overwrites(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    file = tmp_path / "w.cal.json"
    file.write_text("mine")
    code, _, err = _run(capsys, "workflow", "new", str(file))
    assert (code, file.read_text()) == (2, "mine")
    assert err == f"error: invalid_request: {file} exists: nothing was written\n"
    folder = tmp_path / "pkg"
    folder.mkdir()
    (folder / "notes.md").write_text("mine")
    assert _run(capsys, "cartridge", "new", str(folder))[0] == 2
    assert sorted(p.name for p in folder.iterdir()) == ["notes.md"]
