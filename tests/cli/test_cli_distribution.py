"""engram installs as ``engram-memory-stack``: ``engram`` on PyPI is an unrelated project, so an
instruction or hint naming ``engram[...]`` would install someone else's code (issue 32, point 1;
docs/spec/cli.md "Installs and extras"). The built wheel itself is checked in tests/install/.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from engram import DISTRIBUTION

REPO = Path(__file__).resolve().parents[2]
# `engram[...]` or `pip install engram` as an instruction; the spec and README sentences that
# warn against exactly that quote it after "so never" / "so".
WRONG = re.compile(r"(?<![\w-])engram\[|pip install ['\"]?engram(?![\w-])")
WARNINGS = ("so never `pip install engram`", "so `pip install engram[...]` would install")


def _texts() -> list[Path]:
    files = [REPO / "README.md", REPO / "pyproject.toml"]
    files += sorted((REPO / "docs").rglob("*.md"))
    files += sorted((REPO / "src").rglob("*.py"))
    return files


@pytest.mark.req("engram.cli.distribution-name")
def test_no_instruction_names_the_other_projects_engram() -> None:
    wrong = []
    for path in _texts():
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if WRONG.search(line) and not any(warning in line for warning in WARNINGS):
                wrong.append(f"{path.relative_to(REPO)}:{number}: {line.strip()}")
    assert wrong == []


# `engram serve` in a process where uvicorn cannot be imported, as in a runtime-only install.
WITHOUT_UVICORN = (
    "import sys; sys.modules['uvicorn'] = None; sys.argv = ['engram', 'serve', '--demo']; "
    "from engram.cli import main; main()"
)


@pytest.mark.req("engram.cli.distribution-name")
def test_a_missing_extra_names_this_distribution() -> None:
    assert DISTRIBUTION == "engram-memory-stack"
    done = subprocess.run(
        [sys.executable, "-c", WITHOUT_UVICORN],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 1
    assert done.stderr == (
        "error: missing_dependency: `engram serve` needs the server extra "
        "(pip install 'engram-memory-stack[server]'): no uvicorn\n"
    )
