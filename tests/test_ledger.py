"""The requirement ledger keeps both directions honest (OpenWOP v2 Conformance §"Requirement ids").

Every id in the ledger is witnessed by at least one test's ``@pytest.mark.req(...)``; every id a
test or the runner names exists; ids are unique; every file matches requirements.schema.json.
The scan reads the tests' source with ``ast`` so it needs no collection run and sees every file.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from engram.conformance import Ledger, load_ledger
from engram.conformance.internals import (
    LEDGER_FILE,
    PROVIDER_WITNESSED,
    RUNTIME_WITNESSED,
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


# Tests that witness no ledger row, each with why. Add a row to the ledger rather than a line here
# when a spec sentence says what the test checks.
EXEMPT_TESTS: dict[str, str] = {
    "tests/memory/test_memory_distill_api.py::test_the_public_api_is_sorted_and_complete": (
        "the shape of engram.memory's __all__ is a development rule, not a spec requirement"
    ),
    "tests/context/test_context_domain.py::test_bad_beliefs_are_refused_and_nothing_is_stored": (
        "domain input validation with no ledger row of its own yet"
    ),
    "tests/context/test_context_domain.py::test_subjects_need_a_name_and_a_known_time_zone": (
        "domain input validation with no ledger row of its own yet"
    ),
    "tests/context/test_context_domain.py::test_a_correction_timestamp_must_be_plausible": (
        "domain input validation with no ledger row of its own yet"
    ),
    "tests/core/test_core_api.py::test_core_imports_nothing_from_higher_layers_or_network_libraries": (  # noqa: E501
        "the layer rule is a development rule (README, import-linter), not a spec requirement"
    ),
    "tests/core/test_core_canonical.py::test_parse_reports_the_first_fault_in_document_order": (
        "diagnostic quality of parse_strict's error position; no spec sentence"
    ),
    "tests/core/test_core_canonical.py::test_parse_refuses_syntax_errors_bom_and_trailing_data": (
        "plain JSON syntax (RFC 8259), below the I-JSON rows the ledger lists"
    ),
    "tests/core/test_core_canonical.py::test_parse_accepts_surrounding_whitespace": (
        "plain JSON syntax (RFC 8259), below the I-JSON rows the ledger lists"
    ),
    "tests/core/test_core_canonical.py::test_refusals_are_input_errors_with_the_spec_error_shape": (
        "the error class of a refusal; the error-shape rows are judged at the HTTP boundary"
    ),
    "tests/core/test_core_clock.py::test_instants_are_four_digit_year_utc_and_round_trip": (
        "instant formatting helper; the store's TEXT-instant rule is witnessed by the store suite"
    ),
    "tests/core/test_core_clock.py::test_precise_instants_sort_as_text_across_the_year_1000": (
        "instant formatting helper; the store's TEXT-instant rule is witnessed by the store suite"
    ),
    "tests/core/test_core_clock.py::test_a_naive_datetime_is_refused_and_a_malformed_text_is_invalid_request": (  # noqa: E501
        "instant parsing helper with no ledger row of its own"
    ),
    "tests/core/test_core_clock.py::test_an_instant_outside_datetimes_range_is_invalid_request_not_a_crash": (  # noqa: E501
        "instant parsing helper with no ledger row of its own"
    ),
    "tests/core/test_core_jsonio.py::test_compact_by_default_and_pretty_with_an_indent": (
        "display JSON (never signed) has no spec sentence"
    ),
    "tests/core/test_core_jsonio.py::test_values_other_parsers_refuse_are_not_written": (
        "display JSON (never signed) has no spec sentence"
    ),
    "tests/core/test_core_jsonio.py::test_the_indented_text_is_json_dumps_text": (
        "display JSON (never signed) has no spec sentence"
    ),
    "tests/core/test_core_jsonio.py::test_values_it_leaves_to_json_dumps_read_the_same": (
        "display JSON (never signed) has no spec sentence"
    ),
    "tests/core/test_core_jsonio.py::test_what_json_dumps_refuses_is_refused_the_same_way": (
        "display JSON (never signed) has no spec sentence"
    ),
    "tests/core/test_core_jsonio.py::test_the_compact_text_is_json_dumps_text": (
        "display JSON (never signed) has no spec sentence"
    ),
    "tests/core/test_core_keys.py::test_pem_round_trip_and_repr_hides_the_secret": (
        "key object hygiene; the key-file rows are witnessed by the key-file tests"
    ),
    "tests/core/test_core_keys.py::test_keys_of_other_algorithms_and_encrypted_keys_are_refused": (
        "key loading refusals with no ledger row of their own yet"
    ),
    "tests/review/test_review_api.py::test_the_provider_app_mounts_the_review_page": (
        "wiring smoke test; the review rows are witnessed through the mounted page"
    ),
    "tests/review/test_review_cli.py::test_without_subject_the_only_subject_is_used": (
        "a CLI convenience default with no ledger row"
    ),
    "tests/review/test_review_flow.py::test_another_subjects_correction_cannot_be_decided": (
        "subject isolation on the review page has no ledger row of its own yet"
    ),
    "tests/review/test_review_flow.py::test_deciding_twice_says_it_was_already_decided": (
        "a second decision's message has no ledger row of its own yet"
    ),
    "tests/store/test_store_changes.py::test_a_topic_that_could_be_confused_with_a_flush_is_refused": (  # noqa: E501
        "change-feed input validation with no ledger row of its own"
    ),
    "tests/test_public_api.py::test_the_walk_sees_every_layer": (
        "a self-check of the public-API walk itself"
    ),
}

# Folders other changes are rewriting at the time of writing; each exemption ends when that change
# lands with its markers.
EXEMPT_FOLDERS: dict[str, str] = {}


def _unmarked_tests(root: Path = TESTS, base: Path = REPO) -> list[str]:
    """``path::name`` of every test function with no req marker on it, its class or module."""

    def marked(decorators: list[ast.expr]) -> bool:
        return any(_is_req_marker(d.func if isinstance(d, ast.Call) else d) for d in decorators)

    def walk(body: list[ast.stmt], inherited: bool, where: str, out: list[str]) -> None:
        for node in body:
            if isinstance(node, ast.ClassDef) and node.name.startswith("Test"):
                walk(node.body, inherited or marked(node.decorator_list), where, out)
            elif (
                isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
                and node.name.startswith("test")
                and not (inherited or marked(node.decorator_list))
            ):
                out.append(f"{where}::{node.name}")

    unmarked: list[str] = []
    for file in sorted(root.rglob("test_*.py")):
        if "node_modules" in file.parts:
            continue
        tree = ast.parse(file.read_text(encoding="utf-8"), filename=str(file))
        module_marked = any(
            isinstance(node, ast.Assign)
            and any(isinstance(t, ast.Name) and t.id == "pytestmark" for t in node.targets)
            and any(
                isinstance(call, ast.Call) and _is_req_marker(call.func)
                for call in ast.walk(node.value)
            )
            for node in tree.body
        )
        walk(tree.body, module_marked, file.relative_to(base).as_posix(), unmarked)
    return unmarked


@pytest.mark.req("engram.conformance.ledger.tests-marked")
def test_every_test_carries_a_requirement_marker_or_a_listed_exemption() -> None:
    unmarked = _unmarked_tests()
    missing = [
        test
        for test in unmarked
        if test not in EXEMPT_TESTS and not test.startswith(tuple(EXEMPT_FOLDERS))
    ]
    assert not missing, "tests with no @pytest.mark.req(...) and no exemption:\n  " + (
        "\n  ".join(missing)
    )
    stale = sorted(set(EXEMPT_TESTS) - set(unmarked))
    assert not stale, f"exemptions for tests that are marked or gone: {stale}"
    assert all(reason.strip() for reason in [*EXEMPT_TESTS.values(), *EXEMPT_FOLDERS.values()])


@pytest.mark.req("engram.conformance.ledger.tests-marked")
def test_the_marker_scan_sees_function_class_and_module_markers(tmp_path: Path) -> None:
    # The check above trusts this scan, so it runs here on a tree whose answer is known.
    (tmp_path / "test_mixed.py").write_text(
        "import pytest\n"
        "@pytest.mark.req('x.a')\n"
        "@pytest.mark.parametrize('n', [1])\n"
        "def test_marked(n): ...\n"
        "async def test_bare(): ...\n"
        "def helper(): ...\n"
        "@pytest.mark.req('x.b')\n"
        "class TestGroup:\n"
        "    def test_inherits(self): ...\n"
        "class TestLoose:\n"
        "    def test_loose(self): ...\n",
        encoding="utf-8",
    )
    (tmp_path / "test_module.py").write_text(
        "import pytest\npytestmark = [pytest.mark.req('x.c')]\ndef test_by_module(): ...\n",
        encoding="utf-8",
    )
    (tmp_path / "kit.py").write_text("def test_not_a_test_file(): ...\n", encoding="utf-8")
    assert _unmarked_tests(tmp_path, tmp_path) == [
        "test_mixed.py::test_bare",
        "test_mixed.py::test_loose",
    ]
