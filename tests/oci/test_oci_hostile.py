"""``engram cartridge pull | discover`` against a hostile registry and token realm (issue 31).

Each case is one misbehaviour of ``hostile_registry`` (a loopback server importing nothing of
engram). The command runs in a child process with the fetch deadline shortened through its setting
(``$ENGRAM_FETCH_DEADLINE``, docs/spec/limits.md §1) so the suite stays quick; each case must end
with one ``error: …`` line naming the problem, no traceback, within a wall-clock bound and a
peak-RSS bound of the child's own program (``peak_kit``: VmHWM, not a fork's copy), and leave no
file behind (no staging folder in its ``TMPDIR``, nothing in the output folder).
"""

from __future__ import annotations

import hashlib
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from hostile_registry import HostileRegistry, Hostility, gzip_bomb

from engram.oci.internals import cartridge_manifest
from peak_kit import run_python_peak

DEADLINE = 3.0
WALL_BOUND = 10.0
RSS_BOUND_KIB = 300 * 1024
CLI = "import sys; from engram.cli import cli, run_cli; sys.exit(run_cli(cli, sys.argv[1:]))"
BLOB = bytes(range(256)) * 16
ROM = "sha256:" + "ab" * 32
FIGURES: dict[str, tuple[float, int]] = {}


def _manifest(blob: bytes) -> bytes:
    built = cartridge_manifest(
        layer_digest="sha256:" + hashlib.sha256(blob).hexdigest(),
        layer_size=len(blob),
        rom_hash=ROM,
        spec_version="0.1.0",
        title="agent.acx",
    )
    return built.body


@pytest.fixture(scope="module")
def bombs() -> dict[str, bytes]:
    zstandard = pytest.importorskip("zstandard")
    packer = zstandard.ZstdCompressor(level=3).compressobj()
    spaces = b" " * (1 << 20)
    zstd = b"".join(packer.compress(spaces) for _ in range(1024)) + packer.flush()  # 1 GiB
    return {"zstd": zstd, "gzip": gzip_bomb(64 << 20)}


def _env(tmp: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ENGRAM_", "OPENAI_"))}
    (tmp / "staging").mkdir(exist_ok=True)
    env.update(
        ENGRAM_HOME=str(tmp / "home"),
        TMPDIR=str(tmp / "staging"),
        ENGRAM_FETCH_DEADLINE=str(DEADLINE),
        ENGRAM_FETCH_READ_TIMEOUT=str(DEADLINE),
    )
    return env


def _args(command: str, ref: str, out: Path) -> list[str]:
    if command == "pull":
        return ["cartridge", "pull", ref, "-o", str(out)]
    return ["cartridge", "discover", ref]


def _check_one_line(name: str, done: subprocess.CompletedProcess[str], expected: str) -> str:
    assert "Traceback" not in done.stderr, done.stderr[-2000:]
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, (name, done.stderr[-2000:])
    assert lines[0].startswith("error: "), (name, lines[0])
    assert done.returncode in (1, 2), (name, done.returncode)
    assert expected in lines[0], (name, lines[0])
    assert len(lines[0]) < 400, lines[0]
    return lines[0]


CASES = [
    # (behaviour, command, a fragment of the one error line)
    ("error-endless", "pull", "answered 500"),
    ("redirect-endless", "pull", "answered 500"),
    ("challenge-endless", "pull", "needs a username and password"),
    ("token-endless", "pull", "larger than 1048576 bytes"),
    ("token-drip", "pull", "within the deadline"),
    ("zstd-bomb", "pull", "Content-Encoding 'zstd'"),
    ("gzip-bomb", "pull", "larger than 4194304 bytes"),
    ("gzip-not-gzip", "pull", "says gzip but is not gzip"),
    ("stacked-gzip", "pull", "Content-Encoding 'gzip, gzip'"),
    ("redirect-loop", "pull", "more than 5 redirects"),
    ("drip-headers", "pull", "within the deadline"),
    ("drip-body", "pull", "within the deadline"),
    ("referrers-one-page-20000", "discover", "larger than 4194304 bytes"),
    ("referrers-one-page-2000", "discover", "more than 256 descriptors"),
    ("referrers-pages", "discover", "more than 256 descriptors"),
    ("referrers-endless", "discover", "larger than 4194304 bytes"),
]


@pytest.mark.req(
    "engram.limits.fetch-deadline",
    "engram.limits.fetch-body-cap",
    "engram.limits.fetch-encoding",
    "engram.limits.fetch-redirects",
    "engram.limits.fetch-errors",
    "engram.limits.referrer-count",
)
@pytest.mark.parametrize(("behaviour", "command", "expected"), CASES, ids=[c[0] for c in CASES])
def test_a_hostile_registry_gets_one_error_line_in_bounded_time_and_memory(
    behaviour: str, command: str, expected: str, bombs: dict[str, bytes], tmp_path: Path
) -> None:
    hostility = Hostility(behaviour, manifest=_manifest(BLOB), blob=BLOB, zstd_bomb=bombs["zstd"])
    hostility.gzip_bomb = bombs["gzip"]
    out = tmp_path / "out"
    with HostileRegistry(hostility) as registry:
        started = time.monotonic()
        done, rss_kib = run_python_peak(
            CLI,
            _args(command, f"{registry.host}/team/agent:1.0.0", out),
            timeout=30,
            env=_env(tmp_path),
        )
        elapsed = time.monotonic() - started
    line = _check_one_line(behaviour, done, expected)
    FIGURES[f"{command} {behaviour}"] = (elapsed, rss_kib)
    print(f"\n{command} {behaviour}: {elapsed:.2f} s, {rss_kib // 1024} MiB: {line}")
    assert elapsed < WALL_BOUND, (behaviour, elapsed)
    assert 0 < rss_kib < RSS_BOUND_KIB, (behaviour, rss_kib)
    assert list((tmp_path / "staging").iterdir()) == []
    assert not out.exists() or list(out.iterdir()) == []


@pytest.mark.req("engram.limits.staging")
def test_a_pull_killed_mid_blob_leaves_staging_that_the_next_run_removes(tmp_path: Path) -> None:
    slow = BLOB * 256  # 1 MiB at 1 KiB per 100 ms: minutes, so the kill lands mid-blob
    env = _env(tmp_path)
    env["ENGRAM_FETCH_DEADLINE"] = "600"
    staging = tmp_path / "staging"
    ref_path = "team/agent:1.0.0"
    with HostileRegistry(Hostility("slow-blob", manifest=_manifest(slow), blob=slow)) as registry:
        child = subprocess.Popen(
            [
                sys.executable,
                "-c",
                CLI,
                *_args("pull", f"{registry.host}/{ref_path}", tmp_path / "out"),
            ],
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )
        try:
            staged = _wait_for_staged_bytes(staging, 20.0)
        finally:
            child.send_signal(signal.SIGKILL)
            child.wait()
            assert child.stderr is not None
            child.stderr.close()
    assert staged is not None, "the pull never staged a byte"
    assert list(staging.iterdir()), "SIGKILL runs no cleanup: the staging folder is still there"
    with HostileRegistry(Hostility("stacked-gzip", manifest=_manifest(BLOB), blob=BLOB)) as again:
        done, _ = run_python_peak(
            CLI, _args("pull", f"{again.host}/{ref_path}", tmp_path / "out"), timeout=30, env=env
        )
    _check_one_line("after the kill", done, "gzip, gzip")
    assert list(staging.iterdir()) == []
    assert not (tmp_path / "out").exists() or list((tmp_path / "out").iterdir()) == []


def _wait_for_staged_bytes(staging: Path, seconds: float) -> Path | None:
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        for folder in staging.glob("engram-oci-*"):
            for file in folder.iterdir():
                if file.stat().st_size > 0:
                    return file
        time.sleep(0.05)
    return None
