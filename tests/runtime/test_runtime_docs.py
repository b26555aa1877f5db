"""The runtime documentation keeps its promises: the engramspec.org link, a five-line example
that runs as written, and a public API that is exactly what ``__all__`` says.

The example is taken from docs/spec/runtime.md, and from README.md too once the README carries a
runtime section, and executed against the real provider on loopback with only the environment
variables it reads set.
"""

from __future__ import annotations

import re
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from runtime_harness import LoopbackServer, RealProvider

import engram.runtime

REPO = Path(__file__).resolve().parents[2]
DOCS = [REPO / "docs" / "spec" / "runtime.md", REPO / "README.md"]
SNIPPET = re.compile(r"```python\n(.*?from engram\.runtime import .*?)```", re.DOTALL)


def examples() -> list[tuple[str, str]]:
    found = []
    for path in DOCS:
        if path.exists():
            found += [(path.name, code) for code in SNIPPET.findall(path.read_text("utf-8"))]
    return found


@pytest.mark.req("engram.context.r1.docs-link")
def test_the_integration_docs_link_to_engramspec_org() -> None:
    runtime_doc = (REPO / "docs" / "spec" / "runtime.md").read_text("utf-8")
    assert "https://engramspec.org" in runtime_doc
    assert "https://engramspec.org" in (engram.runtime.__doc__ or "")
    readme = (REPO / "README.md").read_text("utf-8")
    if "engram.runtime" in readme:
        assert "https://engramspec.org" in readme


@pytest.mark.req("engram.runtime.readme-example", "engram.context.r1.inject")
@pytest.mark.parametrize(("where", "code"), examples())
def test_the_five_line_example_runs_as_written(
    where: str, code: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert len(code.strip().splitlines()) <= 5 + 1, f"{where}: the example grew past five lines"
    received: list[list[dict[str, Any]]] = []

    def my_llm(messages: list[dict[str, Any]]) -> str:
        received.append(messages)
        return "Pasta."

    with (
        RealProvider.start(now=datetime.now(UTC)) as provider,
        LoopbackServer(provider.app) as server,
    ):
        monkeypatch.setenv("ENGRAM_PROVIDER_URL", server.url)
        monkeypatch.setenv("ENGRAM_TOKEN", provider.demo.token)
        namespace: dict[str, Any] = {"my_llm": my_llm}
        exec(compile(code, where, "exec"), namespace)  # noqa: S102 - the documented example
    assert namespace["reply"] == "Pasta."
    [messages] = received
    assert messages[0]["role"] == "system"
    assert messages[0]["content"].startswith("User: Ada Example (Europe/London).")
    assert messages[1:] == [{"role": "user", "content": "What should I cook tonight?"}]


@pytest.mark.req("engram.package.public-api")
def test_the_public_api_is_sorted_and_complete() -> None:
    names = engram.runtime.__all__

    def isort_style(name: str) -> tuple[int, str]:
        # The order ruff's RUF022 keeps: CONSTANTS, then Classes, then functions.
        return (0 if name.isupper() else 1 if name[0].isupper() else 2, name)

    assert list(names) == sorted(names, key=isort_style)
    # A public submodule (engram.runtime.testing) becomes an attribute once something imports
    # it; it is imported by name, not part of the package's own namespace.
    public = {
        n
        for n, v in vars(engram.runtime).items()
        if not n.startswith("_") and not isinstance(v, ModuleType)
    }
    assert public - {"annotations"} == set(names)


@pytest.mark.req("engram.runtime.core-only-install")
def test_importing_the_runtime_loads_no_server_or_database_code() -> None:
    # (click is not on the list: httpx itself imports it for its optional CLI when it is there.)
    probe = (
        "import sys, engram.runtime\n"
        "banned = ('starlette', 'uvicorn', 'psycopg', 'mcp', 'engram.store',"
        " 'engram.context', 'engram.provider')\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in banned or m in banned"
        " or any(m.startswith(b + '.') for b in banned)))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True, timeout=60
    )
    assert done.stdout.strip() == "[]"
