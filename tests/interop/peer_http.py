"""HTTP for the independent peers (no engram imports): a bare ASGI callable, a plain Starlette
app, and uvicorn on a loopback socket so subprocesses (``engram conformance provider``, a
``curl`` delete hook) reach the same in-memory peer as the tests do."""

from __future__ import annotations

import socket
import threading
from typing import Any

import uvicorn
from peers import Answer, Peer
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

Scope = dict[str, Any]


class BareAsgi:
    """The peer as an ASGI callable written against the ASGI spec alone."""

    def __init__(self, peer: Peer) -> None:
        self.peer = peer

    async def __call__(self, scope: Scope, receive: Any, send: Any) -> None:
        if scope["type"] == "lifespan":
            while True:
                message = await receive()
                if message["type"] == "lifespan.startup":
                    await send({"type": "lifespan.startup.complete"})
                elif message["type"] == "lifespan.shutdown":
                    await send({"type": "lifespan.shutdown.complete"})
                    return
        body = b""
        more = True
        while more:
            message = await receive()
            body += message.get("body", b"")
            more = message.get("more_body", False)
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]}
        answer = self.peer.handle(
            scope["method"], scope["path"], scope["query_string"].decode("latin-1"), headers, body
        )
        await send(
            {
                "type": "http.response.start",
                "status": answer.status,
                "headers": [
                    (b"content-type", answer.content_type.encode()),
                    (b"content-length", str(len(answer.body)).encode()),
                ],
            }
        )
        await send({"type": "http.response.body", "body": answer.body})


def starlette_app(peer: Peer) -> Starlette:
    """The peer as an ordinary Starlette application with one catch-all route per method."""

    async def endpoint(request: Request) -> Response:
        answer: Answer = peer.handle(
            request.method,
            request.url.path,
            request.url.query,
            {k.lower(): v for k, v in request.headers.items()},
            await request.body(),
        )
        return Response(answer.body, status_code=answer.status, media_type=answer.content_type)

    return Starlette(routes=[Route("/{path:path}", endpoint, methods=["GET", "POST", "DELETE"])])


def app_for(peer: Peer) -> Any:
    return BareAsgi(peer) if peer.profile.http == "asgi" else starlette_app(peer)


class Loopback:
    """uvicorn serving one peer on a pre-bound 127.0.0.1 socket, in a daemon thread."""

    def __init__(self, peer: Peer) -> None:
        self.peer = peer
        self._socket = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self._socket.bind(("127.0.0.1", 0))
        self._socket.listen(64)
        host, port = self._socket.getsockname()[:2]
        self.url = f"http://{host}:{port}"
        peer.base_url = self.url
        config = uvicorn.Config(
            app_for(peer), log_level="warning", lifespan="off", access_log=False
        )
        self._server = uvicorn.Server(config)
        self._thread = threading.Thread(
            target=self._server.run, kwargs={"sockets": [self._socket]}, daemon=True
        )

    def __enter__(self) -> Loopback:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.should_exit = True
        self._thread.join(timeout=10)
        self._socket.close()


__all__ = ["BareAsgi", "Loopback", "app_for", "starlette_app"]
