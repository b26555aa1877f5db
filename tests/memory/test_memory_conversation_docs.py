"""The README's record_conversation example runs as written, on an engine of every backend."""

from __future__ import annotations

import contextlib
import io
import re
from pathlib import Path

import pytest

from engram.memory import MemoryEngine

README = Path(__file__).resolve().parents[2] / "README.md"
BLOCK = re.compile(r"```python\n(.*?)```", re.DOTALL)


@pytest.mark.req("engram.memory.conversation.turns", "engram.memory.conversation.dedupe")
def test_the_readme_example_records_two_turns_then_nothing(engine: MemoryEngine) -> None:
    [code] = [c for c in BLOCK.findall(README.read_text()) if "record_conversation" in c]
    for expected in ("'recorded': 2, 'duplicate': 0", "'recorded': 0, 'duplicate': 2"):
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            exec(code, {"engine": engine})  # noqa: S102 - the README's own example, run as written
        assert expected in out.getvalue()
