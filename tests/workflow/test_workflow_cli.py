"""``engram workflow ...`` from a shell: tables, --json, exit codes, one error line."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from acx_json_kit import REFERENCE_CAL, index_digest, registry_for, workflow
from engram.core.keys import PrivateKey, save_private_key

Shell = Callable[..., "subprocess.CompletedProcess[str]"]


def _write(path: Path, value: object) -> Path:
    path.write_text(json.dumps(value, indent=2), encoding="utf-8")  # noqa: TID251
    return path


@pytest.mark.req("engram.workflow.cli", "engram.workflow.sign-publishable")
def test_lint_sign_verify_digest_round_trip(tmp_path: Path, engram_shell: Shell) -> None:
    source = _write(tmp_path / "team.cal.json", workflow())
    key = tmp_path / "publisher.key"
    save_private_key(key, PrivateKey.generate())
    lint = engram_shell("workflow", "lint", str(source), "--publish")
    assert lint.returncode == 0, lint.stderr
    signed = tmp_path / "team.signed.cal.json"
    done = engram_shell("workflow", "sign", str(source), "--publisher", "io.github.example",
                        "--sign-key", str(key), "-o", str(signed))  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "PRIVATE" not in signed.read_text()
    verify = engram_shell("workflow", "verify", str(signed), "--json")
    assert verify.returncode == 0, verify.stdout + verify.stderr
    result = json.loads(verify.stdout)
    assert result["ok"] is True
    assert result["verdict"] == "portable"
    pem = json.loads(signed.read_text())["integrity"]["publicKeyPem"]
    registry = tmp_path / "trust.json"
    registry.write_bytes(registry_for(pem, "io.github.example"))
    trusted = engram_shell("workflow", "verify", str(signed), "--registry", str(registry))
    assert trusted.returncode == 0
    assert "trusted" in trusted.stdout
    digest = engram_shell("workflow", "digest", str(signed))
    assert digest.stdout.strip() == result["digest"]


@pytest.mark.req("engram.workflow.cli")
def test_verdicts_exit_1_and_bad_input_exits_2(tmp_path: Path, engram_shell: Shell) -> None:
    broken = workflow()
    broken["nodes"][0]["agent"] = "ghost"
    lint = engram_shell("workflow", "lint", str(_write(tmp_path / "b.cal.json", broken)))
    assert lint.returncode == 1
    assert "engram.workflow.references" in lint.stdout
    assert "ghost" in lint.stdout
    as_json = engram_shell("workflow", "lint", str(tmp_path / "b.cal.json"), "--json")
    assert json.loads(as_json.stdout)["errors"][0]["rule"] == "engram.workflow.references"
    unsigned = engram_shell("workflow", "verify", str(_write(tmp_path / "u.cal.json", workflow())))
    assert unsigned.returncode == 1
    assert "unsigned" in unsigned.stdout
    tampered = json.loads(REFERENCE_CAL.read_text())
    tampered["limits"]["maxSteps"] = 99
    result = engram_shell("workflow", "verify", str(_write(tmp_path / "t.cal.json", tampered)))
    assert result.returncode == 1
    assert "tampered" in result.stdout
    (tmp_path / "dup.cal.json").write_text('{"id": "a", "id": "b"}')
    bad = engram_shell("workflow", "lint", str(tmp_path / "dup.cal.json"))
    assert bad.returncode == 2
    assert bad.stderr.count("\n") == 1
    assert "duplicate_member" in bad.stderr
    assert "Traceback" not in bad.stderr
    notpub = workflow()
    del notpub["license"]
    key = tmp_path / "k.key"
    save_private_key(key, PrivateKey.generate())
    refused = engram_shell("workflow", "sign", str(_write(tmp_path / "n.cal.json", notpub)),
                           "--publisher", "io.github.x", "--sign-key", str(key))  # fmt: skip
    assert refused.returncode == 2
    assert "not publishable" in refused.stderr


@pytest.mark.req("engram.workflow.cli")
def test_inspect_and_ready_on_the_reference(tmp_path: Path, engram_shell: Shell) -> None:
    card = engram_shell("workflow", "inspect", str(REFERENCE_CAL), "--json")
    assert card.returncode == 0, card.stderr
    value = json.loads(card.stdout)
    assert value["digest"] == index_digest("workflows", "ship-a-feature")
    assert value["verdict"] == "portable"
    assert [p["alias"] for p in value["participants"]] == ["architect", "builder", "reviewer"]
    table = engram_shell("workflow", "inspect", str(REFERENCE_CAL))
    assert "Ship a data-pipeline feature" in table.stdout
    assert "design-api" in table.stdout
    roster = tmp_path / "roster"
    roster.mkdir()
    ready = engram_shell("workflow", "ready", str(REFERENCE_CAL), "--cartridges", str(roster))
    assert ready.returncode == 1
    assert "not ready" in ready.stdout
    assert "no usable cartridge" in ready.stdout
    as_json = json.loads(engram_shell("workflow", "ready", str(REFERENCE_CAL), "--json").stdout)
    assert as_json["ready"] is False
    assert len(as_json["rac"]) == 3
