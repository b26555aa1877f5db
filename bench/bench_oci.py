"""OCI round trip: push + pull of a 1 MB and a 50 MB cartridge through a local registry.

Run: ``python -m bench oci [--rounds N]``. Needs Debian's ``docker-registry`` (CNCF distribution
2.8) and ``skopeo`` on PATH; the benchmark starts the registry on a loopback port with a
temporary storage folder and stops it afterwards. Each contender moves the same bytes into a
fresh repository every time (so the registry's blob deduplication never skips an upload):

- baseline "blob upload + download": the layer alone, ``POST``/``PUT`` then ``GET`` over httpx
  with no checks at all: what the transport costs;
- "skopeo copy": skopeo copies the pushed artifact from the registry into an ``oci:`` layout (one
  direction, stock tooling);
- "engram push + pull": the whole of lboel/acx@85f1358 SPEC.md §11 as ``engram cartridge push``
  and ``pull`` run it: verify a private copy, upload config and layer, put the manifest, attach
  the DSSE referrer through the fallback tag index; then fetch and check the manifest, stream
  and hash the layer, verify the cartridge, write it.
"""

from __future__ import annotations

import hashlib
import itertools
import os
import shutil
import socket
import subprocess
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

import httpx

from bench._harness import Case, Contender, measure, report
from engram.cartridge import ExportOptions, package_contents, write
from engram.core.keys import PrivateKey
from engram.oci import RegistryClient, parse_reference, pull_cartridge, push_cartridge

HERE = Path(__file__).resolve().parent
SAMPLE = HERE.parent / "tests/vectors/acx-reference/examples/sample-agent-package"
NOW = datetime(2026, 7, 20, tzinfo=UTC)
SIZES = (("1 MB", 1_000_000), ("50 MB", 50_000_000))


def _cartridge(folder: Path, padding: int) -> Path:
    contents, _ = package_contents(SAMPLE, ExportOptions("io.github.bench", NOW))
    skill = next(k for k in contents.files if k.startswith("rom/skills/")).split("/")[2]
    contents.files[f"rom/skills/{skill}/assets/weights.bin"] = (os.urandom(padding), 0o644, 0)
    out = folder / f"agent-{padding}.acx"
    write(out, contents, key=PrivateKey.generate(), signed_at=NOW)
    return out


def _start_registry(folder: Path) -> tuple[subprocess.Popen[bytes], str]:
    binary = shutil.which("docker-registry")
    if binary is None:
        raise SystemExit(
            "bench oci needs docker-registry (Debian: apt-get install docker-registry)"
        )
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    (folder / "storage").mkdir()
    config = folder / "config.yml"
    config.write_text(
        f"version: 0.1\nlog:\n  level: error\nstorage:\n  filesystem:\n"
        f"    rootdirectory: {folder / 'storage'}\nhttp:\n  addr: 127.0.0.1:{port}\n"
    )
    process = subprocess.Popen(
        [binary, "serve", str(config)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    host = f"127.0.0.1:{port}"
    for _ in range(300):
        try:
            if httpx.get(f"http://{host}/v2/", timeout=1).status_code == 200:
                return process, host
        except httpx.TransportError:
            time.sleep(0.05)
    process.kill()
    raise SystemExit("docker-registry did not start")


def main(*, rounds: int = 5) -> list[Case]:
    skopeo = shutil.which("skopeo")
    work = Path(tempfile.mkdtemp(prefix="bench-oci-"))
    process, host = _start_registry(work)
    counter = itertools.count()
    cases: list[Case] = []
    try:
        client = RegistryClient(host, plain_http=True)
        http = httpx.Client(base_url=f"http://{host}", timeout=120)
        for label, size in SIZES:
            acx = _cartridge(work, size)
            data = acx.read_bytes()
            digest = "sha256:" + hashlib.sha256(data).hexdigest()
            pushed_ref = parse_reference(f"{host}/bench/skopeo-{size}:1")
            push_cartridge(acx, pushed_ref, client, now=NOW)

            def blob_round_trip(data: bytes = data, digest: str = digest) -> None:
                repo = f"bench/blob-{next(counter)}"
                started = http.post(f"/v2/{repo}/blobs/uploads/")
                location = httpx.URL(started.headers["Location"])
                done = http.put(location.copy_merge_params({"digest": digest}), content=data)
                assert done.status_code == 201
                assert len(http.get(f"/v2/{repo}/blobs/{digest}").content) == len(data)

            def skopeo_copy(ref: str = str(pushed_ref)) -> None:
                target = work / f"layout-{next(counter)}"
                subprocess.run(
                    [
                        str(skopeo),
                        "copy",
                        "-q",
                        "--src-tls-verify=false",
                        f"docker://{ref}",
                        f"oci:{target}:1",
                    ],
                    check=True,
                    capture_output=True,
                )
                shutil.rmtree(target)

            def engram_round_trip(acx: Path = acx) -> None:
                ref = parse_reference(f"{host}/bench/engram-{next(counter)}:1")
                out = work / f"out-{next(counter)}"
                push_cartridge(acx, ref, client, now=NOW)
                pulled = pull_cartridge(ref, out, client, now=NOW)
                assert pulled.path.stat().st_size == acx.stat().st_size
                shutil.rmtree(out)

            contenders = [Contender("blob upload + download (httpx, no checks)", blob_round_trip)]
            if skopeo:
                contenders.append(Contender("skopeo copy registry -> oci: layout", skopeo_copy))
            contenders.append(
                Contender("engram push + pull (verified both ends)", engram_round_trip)
            )
            case = Case(f"{label} cartridge ({len(data):,} bytes)", contenders)
            measure(
                case, rounds=rounds if size < 10_000_000 else min(rounds, 3), sample_seconds=0.05
            )
            cases.append(case)
        report("oci: one round trip through a local docker-registry 2.8", cases)
        client.close()
        http.close()
    finally:
        process.terminate()
        process.wait(timeout=10)
        shutil.rmtree(work, ignore_errors=True)
    return cases


if __name__ == "__main__":
    main()
