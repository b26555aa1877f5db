"""A small OCI registry written for the tests, importing nothing from engram.

It implements the parts of the OCI Distribution Specification 1.1 that Debian's
docker-registry 2.8 lacks, and makes the choices that spec leaves open differently from
distribution, so engram's client meets both:

- the referrers API (``GET /v2/<name>/referrers/<digest>``), with the ``artifactType`` filter and
  ``OCI-Filters-Applied``, one descriptor per page joined by ``Link: <…>; rel="next"``;
- ``OCI-Subject: <digest>`` on a manifest ``PUT`` that carries a ``subject``;
- single-``POST`` monolithic blob upload (``201``) besides ``POST``/``PATCH``/``PUT``;
- optional Bearer token auth: ``401`` with ``WWW-Authenticate: Bearer realm=…/token,
  service=…, scope=…``; the realm takes Basic credentials and answers ``access_token`` (not
  ``token``, the other spelling the token spec allows);
- ``corrupt``: serve other bytes than a blob's digest for the named digests, as a broken or
  hostile registry would.
"""

from __future__ import annotations

import base64
import hashlib
import json
import re
import secrets
import threading
import uuid
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

ROUTE = re.compile(
    r"^/v2/(?P<name>.+?)/(?P<kind>blobs/uploads|blobs|manifests|referrers)/?(?P<rest>[^/]*)$"
)
INDEX = "application/vnd.oci.image.index.v1+json"


@dataclass
class State:
    blobs: dict[str, bytes] = field(default_factory=dict)
    manifests: dict[str, tuple[str, bytes]] = field(default_factory=dict)
    tags: dict[tuple[str, str], str] = field(default_factory=dict)
    uploads: dict[str, bytearray] = field(default_factory=dict)
    subjects: dict[str, list[str]] = field(default_factory=dict)
    corrupt: set[str] = field(default_factory=set)
    users: dict[str, str] = field(default_factory=dict)
    tokens: set[str] = field(default_factory=set)
    requests: list[str] = field(default_factory=list)


def _dumps(value: Any) -> str:
    return json.dumps(value)  # noqa: TID251 - a test peer's wire bodies, not signed bytes


def digest_of(data: bytes) -> str:
    return "sha256:" + hashlib.sha256(data).hexdigest()


class Handler(BaseHTTPRequestHandler):
    state: State
    host: str

    def log_message(self, format: str, *args: Any) -> None:  # keep test output quiet
        pass

    def _reply(self, status: int, body: bytes = b"", headers: dict[str, str] | None = None) -> None:
        self.send_response(status)
        for key, value in (headers or {}).items():
            self.send_header(key, value)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def _error(self, status: int, code: str) -> None:
        body = _dumps({"errors": [{"code": code, "message": code.lower()}]}).encode()
        self._reply(status, body, {"Content-Type": "application/json"})

    def _body(self) -> bytes:
        length = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(length) if length else b""

    def _authorized(self) -> bool:
        if not self.state.users:
            return True
        header = self.headers.get("Authorization", "")
        if header.startswith("Bearer ") and header[7:] in self.state.tokens:
            return True
        challenge = (
            f'Bearer realm="http://{self.host}/token",service="test-registry",'
            f'scope="repository:{self._name()}:pull,push"'
        )
        self._reply(401, b"", {"WWW-Authenticate": challenge})
        return False

    def _name(self) -> str:
        match = ROUTE.match(urlsplit(self.path).path)
        return match.group("name") if match else ""

    def _token(self) -> None:
        header = self.headers.get("Authorization", "")
        if not header.startswith("Basic "):
            self._reply(401, b"")
            return
        user, _, password = base64.b64decode(header[6:]).decode().partition(":")
        if self.state.users.get(user) != password:
            self._reply(401, b"")
            return
        token = secrets.token_urlsafe(16)
        self.state.tokens.add(token)
        self._reply(
            200, _dumps({"access_token": token}).encode(), {"Content-Type": "application/json"}
        )

    def _dispatch(self) -> None:
        url = urlsplit(self.path)
        query = {k: v[0] for k, v in parse_qs(url.query).items()}
        self.state.requests.append(f"{self.command} {url.path}")
        if url.path == "/token":
            return self._token()
        if not self._authorized():
            return None
        if url.path == "/v2/":
            return self._reply(200, b"{}")
        match = ROUTE.match(url.path)
        if not match:
            return self._error(404, "NAME_UNKNOWN")
        name, kind, rest = match.group("name"), match.group("kind"), match.group("rest")
        if kind == "blobs":
            return self._blob(rest)
        if kind == "blobs/uploads":
            return self._upload(name, rest, query)
        if kind == "manifests":
            return self._manifest(name, rest)
        return self._referrers(name, rest, query)

    def _blob(self, digest: str) -> None:
        data = self.state.blobs.get(digest)
        if data is None:
            return self._error(404, "BLOB_UNKNOWN")
        if digest in self.state.corrupt:
            data = bytes([data[0] ^ 1]) + data[1:]
        return self._reply(
            200, data, {"Content-Type": "application/octet-stream", "Docker-Content-Digest": digest}
        )

    def _upload(self, name: str, session: str, query: dict[str, str]) -> None:
        if self.command == "POST":
            body = self._body()
            if "digest" in query and body:
                if digest_of(body) != query["digest"]:
                    return self._error(400, "DIGEST_INVALID")
                self.state.blobs[query["digest"]] = body
                return self._reply(201, b"", {"Location": f"/v2/{name}/blobs/{query['digest']}"})
            session = uuid.uuid4().hex
            self.state.uploads[session] = bytearray(body)
            return self._reply(202, b"", {"Location": f"/v2/{name}/blobs/uploads/{session}"})
        buffer = self.state.uploads.get(session)
        if buffer is None:
            return self._error(404, "BLOB_UPLOAD_UNKNOWN")
        body = self._body()
        if self.command == "PATCH":
            start = int((self.headers.get("Content-Range") or f"{len(buffer)}-").split("-")[0])
            if start != len(buffer):
                return self._reply(416, b"")
            buffer.extend(body)
            return self._reply(
                202,
                b"",
                {
                    "Location": f"/v2/{name}/blobs/uploads/{session}",
                    "Range": f"0-{len(buffer) - 1}",
                },
            )
        buffer.extend(body)
        data = bytes(buffer)
        if digest_of(data) != query.get("digest"):
            return self._error(400, "DIGEST_INVALID")
        self.state.blobs[query["digest"]] = data
        del self.state.uploads[session]
        return self._reply(201, b"", {"Location": f"/v2/{name}/blobs/{query['digest']}"})

    def _manifest(self, name: str, reference: str) -> None:
        if self.command == "PUT":
            body = self._body()
            digest = digest_of(body)
            media_type = self.headers.get("Content-Type", "")
            self.state.manifests[digest] = (media_type, body)
            if not reference.startswith("sha256:"):
                self.state.tags[(name, reference)] = digest
            elif reference != digest:
                return self._error(400, "DIGEST_INVALID")
            headers = {
                "Location": f"/v2/{name}/manifests/{digest}",
                "Docker-Content-Digest": digest,
            }
            document = json.loads(body)
            subject = (document.get("subject") or {}).get("digest")
            if subject:
                listed = self.state.subjects.setdefault(subject, [])
                if digest not in listed:
                    listed.append(digest)
                headers["OCI-Subject"] = subject
            return self._reply(201, b"", headers)
        found = (
            reference if reference.startswith("sha256:") else self.state.tags.get((name, reference))
        )
        stored = self.state.manifests.get(found or "")
        if stored is None:
            return self._error(404, "MANIFEST_UNKNOWN")
        media_type, body = stored
        return self._reply(
            200, body, {"Content-Type": media_type, "Docker-Content-Digest": str(found)}
        )

    def _referrers(self, name: str, digest: str, query: dict[str, str]) -> None:
        wanted = query.get("artifactType")
        entries = []
        for referrer in self.state.subjects.get(digest, []):
            media_type, body = self.state.manifests[referrer]
            document = json.loads(body)
            artifact_type = document.get("artifactType") or document["config"]["mediaType"]
            if wanted and artifact_type != wanted:
                continue
            entry = {
                "mediaType": media_type,
                "digest": referrer,
                "size": len(body),
                "artifactType": artifact_type,
            }
            if document.get("annotations"):
                entry["annotations"] = document["annotations"]
            entries.append(entry)
        page = int(query.get("page", "0"))
        headers = {"Content-Type": INDEX}
        if wanted:
            headers["OCI-Filters-Applied"] = "artifactType"
        if page + 1 < len(entries):
            following = f"/v2/{name}/referrers/{digest}?page={page + 1}"
            if wanted:
                following += f"&artifactType={wanted}"
            headers["Link"] = f'<{following}>; rel="next"'
        index = {"schemaVersion": 2, "mediaType": INDEX, "manifests": entries[page : page + 1]}
        return self._reply(200, _dumps(index).encode(), headers)

    do_GET = do_HEAD = do_PUT = do_POST = do_PATCH = _dispatch  # noqa: N815 - http.server's names


class ReferrersRegistry:
    """``with ReferrersRegistry() as registry:`` listens on a loopback port until the block ends."""

    def __init__(self, users: dict[str, str] | None = None) -> None:
        self.state = State(users=dict(users or {}))
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.host = f"127.0.0.1:{self._server.server_address[1]}"
        handler = type("BoundHandler", (Handler,), {"state": self.state, "host": self.host})
        self._server.RequestHandlerClass = handler
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    def __enter__(self) -> ReferrersRegistry:
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._server.shutdown()
        self._server.server_close()
