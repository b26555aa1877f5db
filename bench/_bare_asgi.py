"""A bare ASGI app that replays fixed answers: the provider benchmark's ceiling.

``python -m bench provider`` captures two answers of the engram server it measures (``GET
/healthz`` and the 2,000-belief export with gzip: status, headers and body bytes) into the folder
named by ``ENGRAM_BENCH_BARE_DIR`` and serves them again from here, through the same uvicorn
(httptools, uvloop, two workers) under the same load: no routing, no authentication, no
middleware, no database. The ratio of its two routes is what a Python ASGI server reaches for
these bytes on this machine with this load generator, so engram's own ratio can be read
against it.
"""

from __future__ import annotations

import json
import os
from collections.abc import Awaitable, Callable, MutableMapping
from pathlib import Path
from typing import Any

Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ANSWERS = ("small", "big")  # /small: engram's /healthz answer; /big: its 2,000-belief export


def _load(folder: Path) -> dict[str, tuple[int, list[tuple[bytes, bytes]], bytes]]:
    routes = {}
    for name in ANSWERS:
        meta = json.loads((folder / f"{name}.json").read_text())
        headers = [(k.encode("latin-1"), v.encode("latin-1")) for k, v in meta["headers"]]
        routes[f"/{name}"] = (int(meta["status"]), headers, (folder / f"{name}.body").read_bytes())
    return routes


_ROUTES = _load(Path(os.environ["ENGRAM_BENCH_BARE_DIR"]))
_MISSING = (404, [(b"content-length", b"0")], b"")


async def app(scope: Message, receive: Receive, send: Send) -> None:
    if scope["type"] == "lifespan":
        while True:
            message = await receive()
            if message["type"] == "lifespan.startup":
                await send({"type": "lifespan.startup.complete"})
            elif message["type"] == "lifespan.shutdown":
                await send({"type": "lifespan.shutdown.complete"})
                return
    status, headers, body = _ROUTES.get(scope["path"], _MISSING)
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})
