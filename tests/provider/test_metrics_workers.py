"""``engram serve --workers 2 --metrics`` in a subprocess on a real port: whichever worker answers
a scrape reports what both served (prometheus-client's multiprocess mode), and a worker that
exits has its live gauges dropped (``mark_process_dead``). The scrape is read with
prometheus-client's parser."""

from __future__ import annotations

import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest
from prometheus_client import CollectorRegistry
from prometheus_client.multiprocess import MultiProcessCollector
from prometheus_client.parser import text_string_to_metric_families

from engram.cli.internals import metrics_environment

ENGRAM = [sys.executable, "-c", "from engram.cli import main; main()"]
_PID_FILE = re.compile(r"^(counter|histogram|gauge_livesum)_(\d+)\.db$")


@dataclass
class Served:
    url: str
    token: str
    directory: Path
    process: subprocess.Popen[str]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture
def served(tmp_path: Path) -> Iterator[Served]:
    port = _free_port()
    directory = tmp_path / "prometheus"
    directory.mkdir()
    env = {
        **os.environ,
        "ENGRAM_HOME": str(tmp_path / "home"),
        "PROMETHEUS_MULTIPROC_DIR": str(directory),
        "ENGRAM_RATE_LIMIT_BURST": "100000",
    }
    for name in ("ENGRAM_DATABASE_URL", "ENGRAM_PUBLIC_URL", "ENGRAM_OTE", "ENGRAM_METRICS"):
        env.pop(name, None)
    process = subprocess.Popen(
        [*ENGRAM, "serve", "--demo", "--port", str(port), "--workers", "2", "--metrics"],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        cwd=tmp_path,  # no .engram/ote.toml upwards
    )
    assert process.stdout is not None
    banner: list[str] = []
    for line in process.stdout:
        banner.append(line.rstrip("\n"))
        if line.startswith("serving ") or process.poll() is not None:
            break
    files = [line.split()[2] for line in banner if line.startswith("token:")]
    assert files, "\n".join(banner)
    token = Path(files[0]).read_text(encoding="ascii").strip()
    try:
        yield Served(f"http://127.0.0.1:{port}", token, directory, process)
    finally:
        if process.poll() is None:
            process.send_signal(signal.SIGINT)
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
        process.stdout.close()


def _pids(directory: Path, kind: str) -> set[int]:
    found = set()
    for path in directory.iterdir():
        match = _PID_FILE.match(path.name)
        if match and match.group(1) == kind:
            found.add(int(match.group(2)))
    return found


def _healthz_total(served: Served) -> float:
    # A fresh connection each time: the kernel hands it to either worker.
    response = httpx.get(
        f"{served.url}/metrics", headers={"Authorization": f"Bearer {served.token}"}, timeout=60
    )
    assert response.status_code == 200, response.text
    for family in text_string_to_metric_families(response.text):
        for sample in family.samples:
            labels = sample.labels
            if (
                sample.name == "engram_http_request_duration_seconds_count"
                and labels.get("route") == "/healthz"
                and labels.get("status") == "200"
            ):
                return sample.value
    return 0.0


def _hit(url: str) -> int:
    return httpx.get(url, timeout=60).status_code


def _per_worker_healthz(directory: Path, pid: int, scratch: Path) -> float:
    """What one worker alone counted: its histogram file read by a collector of its own."""
    alone = scratch / str(pid)
    alone.mkdir()
    shutil.copy(directory / f"histogram_{pid}.db", alone / f"histogram_{pid}.db")
    registry = CollectorRegistry()
    MultiProcessCollector(registry, path=str(alone))  # type: ignore[no-untyped-call]
    labels = {"method": "GET", "route": "/healthz", "status": "200"}
    value = registry.get_sample_value("engram_http_request_duration_seconds_count", labels)
    return value or 0.0


@pytest.mark.req("engram.provider.metrics-multiprocess")
@pytest.mark.slow
def test_two_workers_aggregate_and_dead_workers_lose_their_gauges(
    served: Served, tmp_path: Path
) -> None:
    # Both workers write their files when their app is built: wait until both are up.
    deadline = time.monotonic() + 120
    while len(_pids(served.directory, "counter")) < 2 and time.monotonic() < deadline:
        time.sleep(0.2)
    workers = _pids(served.directory, "counter")
    assert len(workers) == 2, f"workers that started: {workers}"
    sent = 0
    with ThreadPoolExecutor(max_workers=8) as pool:
        for _ in range(10):
            statuses = list(pool.map(_hit, [f"{served.url}/healthz"] * 16))
            assert statuses == [200] * 16
            sent += 16
    # Each scrape is answered by one worker or the other; every one sees all requests.
    totals = [_healthz_total(served) for _ in range(6)]
    assert totals == [float(sent)] * 6
    alone = {pid: _per_worker_healthz(served.directory, pid, tmp_path) for pid in workers}
    assert sum(alone.values()) == sent
    assert all(count > 0 for count in alone.values()), f"one worker served all: {alone}"
    time.sleep(1.5)  # both samplers have written their live gauges
    assert _pids(served.directory, "gauge_livesum") >= workers

    served.process.send_signal(signal.SIGINT)
    served.process.wait(timeout=30)
    # Counters outlive their workers (a restarted worker's scrape still adds them); live
    # gauges do not.
    assert _pids(served.directory, "counter") == workers
    assert _pids(served.directory, "histogram") == workers
    assert not (_pids(served.directory, "gauge_livesum") & workers)


@pytest.mark.req("engram.provider.metrics-multiprocess")
def test_serve_makes_and_removes_a_private_directory_for_several_workers(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("PROMETHEUS_MULTIPROC_DIR", raising=False)
    with metrics_environment(True, 2):
        made = Path(os.environ["PROMETHEUS_MULTIPROC_DIR"])
        assert made.is_dir()
        assert not any(made.iterdir())
    assert not made.exists()
    assert "PROMETHEUS_MULTIPROC_DIR" not in os.environ
    with metrics_environment(True, 1):  # one process needs no directory
        assert "PROMETHEUS_MULTIPROC_DIR" not in os.environ
    monkeypatch.setenv("PROMETHEUS_MULTIPROC_DIR", "/operator/chose/this")
    with metrics_environment(True, 2):
        assert os.environ["PROMETHEUS_MULTIPROC_DIR"] == "/operator/chose/this"
