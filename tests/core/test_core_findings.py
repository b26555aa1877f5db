"""One finding type (issue 28): every package that reports findings reports
:class:`engram.core.findings.Finding`, and each keeps the JSON it publishes."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from engram import level, policy, registry, workflow
from engram.cartridge.internals import scan
from engram.core.findings import Finding, verdict
from engram.core.keys import PublicKey
from engram.level.internals import finding_wire
from engram.registry.internals import problem_line, problem_wire
from engram.workflow import lint_workflow


def _no_key(method: str) -> PublicKey:
    raise AssertionError(f"no key is looked up for a credential that is not an object: {method}")


@pytest.mark.req("engram.core.one-finding-type")
def test_every_package_reports_the_one_finding_type() -> None:
    assert workflow.Issue is Finding
    assert policy.Problem is Finding
    assert registry.Problem is Finding
    assert level.Finding is Finding
    report = level.verify_level(b"[]", resolve=_no_key, now=datetime.now(UTC))
    assert report.findings
    assert all(type(f) is Finding for f in report.findings)
    lint = lint_workflow({"acx": "nonsense"})
    assert lint.issues
    assert all(type(i) is Finding for i in lint.issues)
    # The scrub gate keeps its own constructor, text and §7.5 JSON over the same type.
    (blocked,) = scan({"rom/x.md": b"ok\nAKIAIOSFODNN7EXAMPLE\n"})
    assert isinstance(blocked, Finding)
    assert (blocked.rule, blocked.path, blocked.line, blocked.offset, blocked.ok) == (
        "aws-access-key-id",
        "rom/x.md",
        2,
        3,
        False,
    )
    assert str(blocked) == "rom/x.md:2: aws-access-key-id"


@pytest.mark.req("engram.core.one-finding-type")
def test_each_report_keeps_its_published_shape() -> None:
    broken = Finding("registry.site-paths", "graphs/a.json", "a symbolic link")
    assert broken.to_wire() == {
        "rule": "registry.site-paths",
        "path": "graphs/a.json",
        "message": "a symbolic link",
        "severity": "error",
    }
    assert list(problem_wire(broken)) == ["path", "rule", "message"]
    assert problem_line(broken) == "graphs/a.json: [registry.site-paths] a symbolic link"
    assert str(broken) == "graphs/a.json: a symbolic link [registry.site-paths]"
    for ok, severity in ((True, "passed"), (False, "error"), (None, "unchecked")):
        found = verdict("proof", ok, "$.proof", "why")
        assert (found.severity, found.ok, found.check) == (severity, ok, "proof")
        assert finding_wire(found) == {
            "check": "proof",
            "ok": ok,
            "path": "$.proof",
            "message": "why",
        }
    assert Finding("x", "$", severity="warning").ok is True
