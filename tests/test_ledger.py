"""The requirement ledger keeps both directions honest (OpenWOP v2 Conformance §"Requirement ids").

Every id in the ledger is witnessed by at least one test's ``@pytest.mark.req(...)``; every id a
test or the runner names exists; ids are unique; every file matches requirements.schema.json.
The scan reads the tests' source with ``ast`` so it needs no collection run and sees every file.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from engram.conformance import (
    LEDGER_FILE,
    PROVIDER_WITNESSED,
    RUNTIME_WITNESSED,
    Ledger,
    load_ledger,
    validate_document,
)
from engram.core.jsonio import dumps_text
from engram.errors import InvalidRequest

TESTS = Path(__file__).resolve().parent
REPO = TESTS.parent


def _named_ids() -> dict[str, list[str]]:
    """Requirement id -> the test files whose ``req(...)`` markers name it."""
    named: dict[str, list[str]] = {}
    for file in sorted(TESTS.rglob("*.py")):
        tree = ast.parse(file.read_text(encoding="utf-8"), filename=str(file))
        for node in ast.walk(tree):
            if not (isinstance(node, ast.Call) and _is_req_marker(node.func)):
                continue
            for arg in node.args:
                if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
                    named.setdefault(arg.value, []).append(str(file.relative_to(REPO)))
    return named


def _is_req_marker(func: ast.expr) -> bool:
    # pytest.mark.req(...) or mark.req(...)
    if not isinstance(func, ast.Attribute) or func.attr != "req":
        return False
    owner = func.value
    return (isinstance(owner, ast.Attribute) and owner.attr == "mark") or (
        isinstance(owner, ast.Name) and owner.id == "mark"
    )


@pytest.fixture(scope="module")
def ledger() -> Ledger:
    return load_ledger()


@pytest.mark.req("engram.conformance.ledger.witness-class", "engram.conformance.ledger.ids-unique")
def test_every_ledger_file_matches_the_schema(ledger: Ledger) -> None:
    assert (REPO / LEDGER_FILE).is_file(), "the ledger is one requirements.json at the root"
    assert len(load_ledger(REPO / LEDGER_FILE)) == len(ledger) == len(ledger.ids)
    assert all(row.witness != "unwitnessable" or row.rationale for row in ledger)


@pytest.mark.req("engram.conformance.ledger.ids-witnessed")
def test_every_requirement_is_witnessed_by_a_test(ledger: Ledger) -> None:
    named = _named_ids()
    unwitnessed = sorted(
        row.id for row in ledger if row.witness != "unwitnessable" and row.id not in named
    )
    assert not unwitnessed, "requirement ids no test marks with @pytest.mark.req:\n  " + (
        "\n  ".join(unwitnessed)
    )


@pytest.mark.req("engram.conformance.ledger.ids-witnessed")
def test_every_id_a_test_names_exists(ledger: Ledger) -> None:
    unknown = {rid: files for rid, files in _named_ids().items() if rid not in ledger.ids}
    assert not unknown, "tests name ids missing from the ledger:\n  " + "\n  ".join(
        f"{rid} (in {', '.join(sorted(set(files)))})" for rid, files in sorted(unknown.items())
    )


@pytest.mark.req("engram.conformance.ledger.ids-witnessed")
def test_every_id_the_runner_and_harness_judge_exists(ledger: Ledger) -> None:
    unknown = sorted((set(PROVIDER_WITNESSED) | set(RUNTIME_WITNESSED)) - ledger.ids)
    assert not unknown, f"the runner or harness judges ids missing from the ledger: {unknown}"
    provider = {r.id for r in ledger.select(party="provider")}
    runtime = {r.id for r in ledger.select(party="runtime")}
    assert set(PROVIDER_WITNESSED) == provider
    assert set(RUNTIME_WITNESSED) | {"engram.context.r1.docs-link"} >= runtime


def _row(**overrides: object) -> dict[str, object]:
    row: dict[str, object] = {
        "id": "engram.demo.thing",
        "source": "docs/spec/demo.md",
        "section": "Demo",
        "text": "A demo requirement",
        "level": "MUST",
        "witness": "witnessable-unaided",
    }
    row.update(overrides)
    return row


@pytest.mark.req("engram.conformance.ledger.witness-class")
@pytest.mark.parametrize(
    ("row", "complaint"),
    [
        (_row(witness="observed"), "observed"),
        (_row(witness="unwitnessable"), "rationale"),
        (_row(id="engram.Demo"), "engram.Demo"),
        (_row(id="openwop.core.x"), "openwop.core.x"),
        (_row(tier=4), "4"),
        (_row(party="client"), "client"),
    ],
)
def test_the_schema_refuses_rows_outside_the_closed_sets(
    row: dict[str, object], complaint: str
) -> None:
    with pytest.raises(InvalidRequest, match=complaint):
        validate_document([row], "area.json")


@pytest.mark.req("engram.conformance.ledger.witness-class")
def test_an_unwitnessable_row_with_a_rationale_is_accepted() -> None:
    rows = validate_document([_row(witness="unwitnessable", rationale="no observation path")])
    assert rows[0]["rationale"] == "no observation path"


@pytest.mark.req("engram.conformance.ledger.ids-unique")
def test_a_duplicate_id_across_area_files_is_named(tmp_path: Path) -> None:
    (tmp_path / "a.json").write_text(dumps_text([_row()]), encoding="utf-8")
    (tmp_path / "b.json").write_text(dumps_text([_row(), _row(id="engram.demo.other")]))
    with pytest.raises(InvalidRequest, match=r"duplicate requirement ids: engram\.demo\.thing"):
        load_ledger(tmp_path)


@pytest.mark.req("engram.conformance.ledger.ids-unique")
def test_a_merged_ledger_and_the_area_directory_read_alike(tmp_path: Path) -> None:
    rows = [_row(), _row(id="engram.demo.other", tier=2, party="provider")]
    merged = tmp_path / "requirements.json"
    merged.write_text(dumps_text({"requirements": rows}), encoding="utf-8")
    directory = tmp_path / "requirements"
    directory.mkdir()
    (directory / "demo.json").write_text(dumps_text(rows), encoding="utf-8")
    assert load_ledger(merged) == load_ledger(directory)
    assert [r.id for r in load_ledger(merged).select(party="provider")] == ["engram.demo.other"]
