"""What a user installs: the wheel and sdist built from this tree (``python -m build``, checked by
``twine check --strict``), installed with each extra into a fresh virtual environment, running
the README's runtime, LangGraph and Agents examples against ``engram serve --demo`` from that
same install (docs/spec/cli.md "Installs and extras").

Each fresh environment sees the third-party packages of the interpreter running the tests
(``--system-site-packages`` and one ``.pth`` line naming this interpreter's site-packages, with
every ``engram`` distribution left out), and pip installs with ``--no-index``: so every extra's
requirements must already be met by what is installed, nothing is downloaded, and ``engram``
itself can only come from the built wheel. Marked ``slow`` (about a minute); CI runs it.
"""

from __future__ import annotations

import importlib.util
import os
import re
import socket
import subprocess
import sys
import sysconfig
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from engram import DISTRIBUTION
from process_kit import interrupt

REPO = Path(__file__).resolve().parents[2]
README = (REPO / "README.md").read_text(encoding="utf-8")
PIP = [sys.executable, "-m", "pip"]
QUIET = ["--disable-pip-version-check", "--quiet"]
EXTRAS = ("runtime", "server", "langgraph", "agents", "otel", "docs")

pytestmark = pytest.mark.slow


def _need(module: str) -> None:
    if importlib.util.find_spec(module) is None:
        reason = f"`{module}` is not installed (it is in the dev extra)"
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(f"{reason}; CI=true: the install test must run in CI", pytrace=False)
        pytest.skip(reason)


def _run(argv: list[str], *, env: dict[str, str] | None = None, timeout: float = 300) -> str:
    done = subprocess.run(
        argv, capture_output=True, text=True, env=env, timeout=timeout, check=False
    )
    assert done.returncode == 0, f"{argv[:4]} exit {done.returncode}\n{done.stderr[-3000:]}"
    return done.stdout


@dataclass(frozen=True)
class Built:
    wheel: Path
    sdist: Path


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Built:
    _need("build")
    out = tmp_path_factory.mktemp("dist")
    _run([sys.executable, "-m", "build", "--outdir", str(out), str(REPO)], timeout=600)
    (wheel,) = out.glob("*.whl")
    (sdist,) = out.glob("*.tar.gz")
    return Built(wheel, sdist)


def _overlay(root: Path) -> Path:
    """This interpreter's own site-packages as symlinks, minus every engram distribution (an
    editable install of this tree must not stand in for the wheel)."""
    overlay = root / "overlay"
    overlay.mkdir()
    sources = {sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]}
    if sys.prefix == sys.base_prefix:  # not a venv: --system-site-packages already sees them
        return overlay
    for source in sorted(sources):
        for entry in Path(source).iterdir():
            name = entry.name.lower()
            if "engram" in name or entry.suffix == ".pth" or name == "__pycache__":
                continue
            if not (overlay / entry.name).exists():
                (overlay / entry.name).symlink_to(entry)
    return overlay


class Environments:
    """One fresh environment per extra, made on first use."""

    def __init__(self, root: Path, wheel: Path) -> None:
        self.root = root
        self.wheel = wheel
        self.overlay = _overlay(root)
        self.made: dict[str, Path] = {}

    def bin(self, extra: str) -> Path:
        if extra not in self.made:
            venv = self.root / extra
            venv_args = ["--without-pip", "--system-site-packages", str(venv)]
            _run([sys.executable, "-m", "venv", *venv_args])
            (purelib,) = venv.glob("lib/python*/site-packages")
            (purelib / "_parent_site.pth").write_text(f"{self.overlay}\n", encoding="utf-8")
            python = str(venv / "bin" / "python")
            wheel = self.wheel
            _run(
                [*PIP, "--python", python, "install", "--no-index", *QUIET, f"{wheel}[{extra}]"],
                env=clean_env(self.root),
            )
            self.made[extra] = venv / "bin"
        return self.made[extra]


def clean_env(home: Path, **extra: str) -> dict[str, str]:
    """No PYTHONPATH (it would import this tree instead of the wheel), an empty HOME."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "ENGRAM_"))}
    env.update(HOME=str(home), ENGRAM_HOME=str(home / ".engram"), PYTHONUNBUFFERED="1", **extra)
    return env


@pytest.fixture(scope="module")
def environments(built: Built, tmp_path_factory: pytest.TempPathFactory) -> Environments:
    return Environments(tmp_path_factory.mktemp("venvs"), built.wheel)


@pytest.mark.req("engram.cli.distribution-name", "engram.cli.wheel-installs")
def test_the_wheel_and_sdist_are_ours_and_pass_twine_check(built: Built) -> None:
    _need("twine")
    assert built.wheel.name.startswith("engram_memory_stack-")
    assert built.sdist.name.startswith("engram_memory_stack-")
    _run([sys.executable, "-m", "twine", "check", "--strict", str(built.wheel), str(built.sdist)])
    with zipfile.ZipFile(built.wheel) as wheel:
        (metadata,) = (n for n in wheel.namelist() if n.endswith(".dist-info/METADATA"))
        text = wheel.read(metadata).decode()
        names = set(wheel.namelist())
    assert f"Name: {DISTRIBUTION}\n" in text
    for extra in (*EXTRAS, "dev"):
        assert f"Provides-Extra: {extra}\n" in text
    # An extra that builds on another (langgraph on server) carries its requirements, and no
    # requirement names PyPI's other `engram`.
    requires = re.findall(r"^Requires-Dist: (.*)$", text, re.MULTILINE)
    assert not [r for r in requires if re.match(r"engram\b(?!-memory-stack)", r)]
    assert "starlette>=0.37; extra == 'langgraph'" in requires
    assert "engram/conformance/_data/requirements.json" in names
    assert "engram/__init__.py" in names


@pytest.mark.req("engram.cli.wheel-installs")
@pytest.mark.parametrize("extra", EXTRAS)
def test_each_extra_installs_from_the_wheel(environments: Environments, extra: str) -> None:
    bin_dir = environments.bin(extra)
    env = clean_env(environments.root)
    probe = (
        "import engram, importlib.metadata as m; "
        f"print(engram.__file__); print(m.version({DISTRIBUTION!r}), engram.__version__)"
    )
    where, versions = _run([str(bin_dir / "python"), "-c", probe], env=env).splitlines()
    assert where.startswith(str(bin_dir.parent)), where
    version = versions.split()[0]
    assert versions == f"{version} {version}"
    shown = _run([str(bin_dir / "engram"), "--version"], env=env)
    assert version in shown


def _python_block(containing: str) -> str:
    blocks: list[str] = re.findall(r"```python\n(.*?)```", README, re.DOTALL)
    (block,) = (b for b in blocks if containing in b)
    return block


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass(frozen=True)
class Served:
    url: str
    token: str


@pytest.fixture(scope="module")
def served(environments: Environments) -> Iterator[Served]:
    """``engram serve --demo`` from the wheel installed with the server extra."""
    bin_dir = environments.bin("server")
    home = environments.root / "serve-home"
    home.mkdir()
    port = _free_port()
    process = subprocess.Popen(
        [str(bin_dir / "engram"), "serve", "--demo", "--port", str(port)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=clean_env(home),
    )
    assert process.stdout is not None
    try:
        banner: list[str] = []
        for line in process.stdout:
            banner.append(line)
            if line.startswith("serving "):
                break
        token_lines = [line for line in banner if line.startswith("token:")]
        assert token_lines, "".join(banner) + (process.stderr.read() if process.stderr else "")
        token = Path(token_lines[0].split()[2]).read_text(encoding="ascii").strip()
        yield Served(f"http://127.0.0.1:{port}", token)
    finally:
        interrupt(process)


RUNTIME_HARNESS = """
import json
def my_llm(messages):
    return messages
{block}
print(json.dumps(reply))
"""


@pytest.mark.req("engram.cli.wheel-installs")
def test_the_readmes_runtime_example_runs_on_the_wheel(
    environments: Environments, served: Served
) -> None:
    code = RUNTIME_HARNESS.format(block=_python_block("from engram.runtime import EngramClient"))
    env = clean_env(environments.root, ENGRAM_PROVIDER_URL=served.url, ENGRAM_TOKEN=served.token)
    out = _run([str(environments.bin("runtime") / "python"), "-c", code], env=env)
    assert '"role": "system"' in out
    assert "Ada Example" in out  # the demo subject's verified context reached the prompt


LANGGRAPH_HARNESS = """
from typing import TypedDict
from langgraph.graph import START, StateGraph

class State(TypedDict):
    question: str

builder = StateGraph(State)
builder.add_node("answer", lambda state: state)
builder.add_edge(START, "answer")
{block}
print(hits[0].value["text"], type(graph).__name__)
"""


@pytest.mark.req("engram.cli.wheel-installs")
def test_the_readmes_langgraph_example_runs_on_the_wheel(environments: Environments) -> None:
    code = LANGGRAPH_HARNESS.format(block=_python_block("EngramStore.open()"))
    home = environments.root / "langgraph-home"
    (home / ".engram").mkdir(parents=True)
    out = _run([str(environments.bin("langgraph") / "python"), "-c", code], env=clean_env(home))
    assert out.strip() == "Ada drinks green tea, never coffee CompiledStateGraph"


# A chat-completions endpoint for the Agents example's model: it keeps the system prompt it is
# sent and answers one fixed line.
AGENTS_HARNESS = """
import asyncio, json, os, threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from agents import OpenAIChatCompletionsModel, set_tracing_disabled
from openai import AsyncOpenAI
from engram.runtime import AsyncEngramClient, RuntimeConfig

seen = []

class Chat(BaseHTTPRequestHandler):
    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        seen.extend(m["content"] for m in body["messages"] if m["role"] == "system")
        answer = json.dumps({{
            "id": "c1", "object": "chat.completion", "created": 0, "model": body["model"],
            "choices": [{{"index": 0, "finish_reason": "stop",
                         "message": {{"role": "assistant", "content": "Try a green curry."}}}}],
            "usage": {{"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}},
        }}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(answer)))
        self.end_headers()
        self.wfile.write(answer)

    def log_message(self, *args):
        pass

server = ThreadingHTTPServer(("127.0.0.1", 0), Chat)
threading.Thread(target=server.serve_forever, daemon=True).start()
set_tracing_disabled(True)
client = AsyncOpenAI(base_url=f"http://127.0.0.1:{{server.server_port}}/v1", api_key="sk-x")
model = OpenAIChatCompletionsModel(model="fake", openai_client=client)

async def main():
    config = RuntimeConfig(os.environ["ENGRAM_PROVIDER_URL"], os.environ["ENGRAM_TOKEN"], "bot")
    async with AsyncEngramClient(config) as engram:
{block}
        print(result.final_output)

asyncio.run(main())
print("Ada Example" in seen[0])
"""


@pytest.mark.req("engram.cli.wheel-installs")
def test_the_readmes_agents_example_runs_on_the_wheel(
    environments: Environments, served: Served
) -> None:
    block = _python_block("from agents import Agent, Runner")
    indented = "".join(f"        {line}\n" for line in block.splitlines())
    code = AGENTS_HARNESS.format(block=indented)
    home = environments.root / "agents-home"
    (home / ".engram").mkdir(parents=True)
    env = clean_env(home, ENGRAM_PROVIDER_URL=served.url, ENGRAM_TOKEN=served.token)
    out = _run([str(environments.bin("agents") / "python"), "-c", code], env=env)
    assert out.splitlines() == ["Try a green curry.", "True"]
