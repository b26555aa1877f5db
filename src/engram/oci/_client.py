"""A client for the OCI Distribution Specification 1.1 API, over httpx.

Only what ACX distribution needs, each call checked against the spec: blob existence (``HEAD``),
blob upload (``POST`` then ``PUT``, or ``PATCH`` chunks for large files; a registry that takes
a single ``POST ?digest=`` is used that way), manifest ``PUT``/``GET`` (the bytes are hashed
here, never taken on the registry's word), blob download streamed to a file with its digest and
size checked as it arrives, and the referrers API with the spec's fallback to the
``<alg>-<ref>`` tag when ``/referrers/`` answers ``404``. Every exchange goes through
``engram.fetch`` (a deadline, bounded bodies and encodings, redirects and the auth
challenge handled without reading their bodies); a referrers listing is capped at
:data:`MAX_REFERRERS` descriptors.

Why not oras-py here (docs/spec/acx-oci.md §7): oras-py 0.2.43 builds push manifests itself with
no ``artifactType``, has no referrers API, writes downloaded blobs without checking their
digest, and runs on ``requests``, a second HTTP stack beside the httpx engram already uses; the
tests use oras-py as an independent client of what engram pushes instead.
"""

from __future__ import annotations

import contextlib
import hashlib
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO

import httpx

from engram.core.canonical import JsonObject, parse_strict
from engram.errors import CanonicalJsonError
from engram.fetch import Fetcher, FetchError, FetchSettings
from engram.oci._auth import Credentials, RegistryAuth
from engram.oci._errors import RegistryAuthFailed, RegistryError
from engram.oci._media import IMAGE_INDEX, MANIFEST_ACCEPT, referrers_tag

MAX_MANIFEST_BYTES = 4 << 20
"""Distribution spec: clients and registries SHOULD support manifests of at least 4 MB."""
MAX_REFERRER_PAGES = 64
MAX_REFERRERS = 256
"""Descriptors one referrers listing may name in all (its pages together); more is refused
before any is fetched (docs/spec/limits.md)."""
CHUNK_BYTES = 16 << 20
MONOLITHIC_LIMIT = 64 << 20
"""Blobs up to this size go in one ``PUT``; larger ones in ``CHUNK_BYTES`` ``PATCH`` chunks."""
READ_BLOCK = 1 << 20


@dataclass(frozen=True)
class Fetched:
    """A manifest (or index) as served: its bytes, the digest computed from them, its type."""

    media_type: str
    body: bytes
    digest: str

    def json(self) -> JsonObject:
        try:
            value = parse_strict(self.body)
        except CanonicalJsonError as e:
            raise RegistryError(f"manifest {self.digest} is not strict JSON: {e.message}") from e
        if not isinstance(value, dict):
            raise RegistryError(f"manifest {self.digest} is not a JSON object")
        return value


@dataclass(frozen=True)
class Referrers:
    descriptors: list[JsonObject]
    via: str
    """``api`` (the registry's referrers API) or ``tag`` (the referrers tag schema)."""
    filtered: bool = False
    """True when the registry said it applied the ``artifactType`` filter."""
    notes: list[str] = field(default_factory=list)


def sha256_digest(data: bytes) -> str:
    return "sha256:" + hashlib.sha256(data).hexdigest()


class RegistryClient:
    """One registry host; ``repository`` is passed to each call."""

    def __init__(
        self,
        registry: str,
        *,
        plain_http: bool = False,
        credentials: Credentials | None = None,
        settings: FetchSettings | None = None,
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        scheme = "http" if plain_http else "https"
        self.registry = registry
        self._auth = RegistryAuth(credentials)
        self._fetch = Fetcher(
            registry,
            base_url=f"{scheme}://{registry}",
            headers={"User-Agent": "engram-oci"},
            settings=settings,
            transport=transport,
        )

    def close(self) -> None:
        self._fetch.close()

    def __enter__(self) -> RegistryClient:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    # -- requests ---------------------------------------------------------------------------

    # Any: the keyword arguments go straight to httpx.Client.build_request (params, content),
    # whose many options are typed there; repeating its signature here would only drift.
    @contextlib.contextmanager
    def _exchange(
        self,
        method: str,
        url: str | httpx.URL,
        *,
        headers: dict[str, str] | None = None,
        expected_bytes: int = 0,
        **kwargs: Any,
    ) -> Iterator[httpx.Response]:
        """One request under one deadline, a ``401`` challenge answered once (body unread).

        A :class:`FetchError` (transport, deadline, size, encoding) becomes a
        :class:`RegistryError` with the same line: the registry failed."""
        try:
            with self._fetch.budget(expected_bytes):
                with self._fetch.stream(
                    method, url, headers=self._headers(headers), **kwargs
                ) as got:
                    if got.status_code != 401:
                        yield got
                        return
                    challenge = got.headers.get("WWW-Authenticate", "")
                self._auth.answer(self.registry, challenge, self._fetch)
                with self._fetch.stream(
                    method, url, headers=self._headers(headers), **kwargs
                ) as got:
                    if got.status_code == 401:
                        raise RegistryAuthFailed(f"{self.registry} refused the credentials")
                    yield got
        except FetchError as e:
            raise RegistryError(e.message) from e

    def _headers(self, extra: dict[str, str] | None) -> dict[str, str]:
        headers = dict(extra or {})
        if self._auth.authorization is not None:
            headers["Authorization"] = self._auth.authorization
        return headers

    def _status(
        self, method: str, url: str | httpx.URL, what: str, **kwargs: Any
    ) -> httpx.Response:
        """A request whose answer matters by status and headers; an error's body is quoted."""
        with self._exchange(method, url, **kwargs) as response:
            if response.status_code >= 300 and response.status_code != 404:
                raise self._fail(response, what)
            return response

    def _fail(self, response: httpx.Response, what: str) -> RegistryError:
        detail = ""
        try:
            body = parse_strict(self._fetch.excerpt(response))
            errors = body.get("errors") if isinstance(body, dict) else None
            if isinstance(errors, list) and errors and isinstance(errors[0], dict):
                code, message = errors[0].get("code"), errors[0].get("message") or ""
                detail = " ".join(f": {code} {message}"[:300].split())
        except CanonicalJsonError:
            pass
        return RegistryError(f"{what}: {self.registry} answered {response.status_code}{detail}")

    # -- blobs ------------------------------------------------------------------------------

    def blob_exists(self, repository: str, digest: str) -> bool:
        what = f"HEAD blob {digest}"
        response = self._status("HEAD", f"/v2/{repository}/blobs/{digest}", what)
        if response.status_code == 200:
            return True
        if response.status_code == 404:
            return False
        raise RegistryError(f"{what}: {self.registry} answered {response.status_code}")

    def push_blob(self, repository: str, source: bytes | Path, digest: str, size: int) -> bool:
        """Upload a blob unless the registry has it; True when bytes were sent."""
        if self.blob_exists(repository, digest):
            return False
        what = f"upload blob {digest}"
        uploads = f"/v2/{repository}/blobs/uploads/"
        if isinstance(source, bytes) and size <= MONOLITHIC_LIMIT:
            started = self._status(
                "POST",
                uploads,
                what,
                params={"digest": digest},
                content=source,
                headers={"Content-Type": "application/octet-stream"},
                expected_bytes=size,
            )
            if started.status_code == 201:
                return True
            location = self._location(started, what)
            self._finish(location, digest, source, what)
            return True
        started = self._status("POST", uploads, what, headers={"Content-Length": "0"})
        location = self._location(started, what)
        if size <= MONOLITHIC_LIMIT:
            data = source if isinstance(source, bytes) else Path(source).read_bytes()
            self._finish(location, digest, data, what)
            return True
        offset = 0
        for chunk in _chunks(source):
            response = self._status(
                "PATCH",
                location,
                what,
                content=chunk,
                headers={
                    "Content-Type": "application/octet-stream",
                    "Content-Range": f"{offset}-{offset + len(chunk) - 1}",
                },
                expected_bytes=len(chunk),
            )
            location = self._location(response, what)
            offset += len(chunk)
        if offset != size:
            raise RegistryError(f"{what}: the file changed size while it was read")
        self._finish(location, digest, b"", what)
        return True

    def _location(self, response: httpx.Response, what: str) -> httpx.URL:
        if response.status_code != 202 or "Location" not in response.headers:
            raise RegistryError(
                f"{what}: {self.registry} answered {response.status_code} without an upload "
                "location"
            )
        return response.url.join(response.headers["Location"])

    def _finish(self, location: httpx.URL, digest: str, data: bytes, what: str) -> None:
        response = self._status(
            "PUT",
            location.copy_merge_params({"digest": digest}),
            what,
            content=data,
            headers={"Content-Type": "application/octet-stream"},
            expected_bytes=len(data),
        )
        if response.status_code != 201:
            raise RegistryError(f"{what}: {self.registry} answered {response.status_code}")

    def fetch_blob(self, repository: str, digest: str, *, max_bytes: int) -> bytes:
        """A small blob, read whole (bounded) and checked against its digest."""
        chunks: list[bytes] = []
        for block in self._stream_blob(repository, digest, max_bytes):
            chunks.append(block)
        return b"".join(chunks)

    def fetch_blob_to(self, repository: str, digest: str, size: int, out: BinaryIO) -> None:
        """Stream a blob of exactly ``size`` bytes into ``out``, checking size and digest."""
        written = 0
        for block in self._stream_blob(repository, digest, size):
            out.write(block)
            written += len(block)
        if written != size:
            raise RegistryError(
                f"blob {digest} is {written} bytes, not the {size} its descriptor says"
            )

    def _stream_blob(self, repository: str, digest: str, max_bytes: int) -> Iterator[bytes]:
        hasher = hashlib.sha256()
        url = f"/v2/{repository}/blobs/{digest}"
        with self._exchange("GET", url, expected_bytes=max_bytes) as response:
            if response.status_code != 200:
                raise self._fail(response, f"GET blob {digest}")
            for block in self._fetch.iter_body(response, max_bytes, f"blob {digest}"):
                hasher.update(block)
                yield block
        got = "sha256:" + hasher.hexdigest()
        if got != digest:
            raise RegistryError(f"blob {digest} arrived as {got}: the registry served other bytes")

    # -- manifests --------------------------------------------------------------------------

    def put_manifest(
        self, repository: str, reference: str, body: bytes, media_type: str
    ) -> httpx.Response:
        what = f"PUT manifest {repository}:{reference}"
        response = self._status(
            "PUT",
            f"/v2/{repository}/manifests/{reference}",
            what,
            content=body,
            headers={"Content-Type": media_type},
        )
        if response.status_code != 201:
            raise RegistryError(f"{what}: {self.registry} answered {response.status_code}")
        expected = sha256_digest(body)
        served = response.headers.get("Docker-Content-Digest")
        if served is not None and served != expected:
            raise RegistryError(
                f"{self.registry} stored manifest {repository}:{reference} as {served[:80]}, "
                f"not {expected}: it did not keep the bytes as sent"
            )
        return response

    def get_manifest(self, repository: str, reference: str) -> Fetched | None:
        """The manifest or index at ``reference``; None when the registry answers 404."""
        with self._exchange(
            "GET", f"/v2/{repository}/manifests/{reference}", headers={"Accept": MANIFEST_ACCEPT}
        ) as response:
            if response.status_code == 404:
                return None
            if response.status_code != 200:
                raise self._fail(response, f"GET manifest {repository}:{reference}")
            what = f"manifest {repository}:{reference}"
            body = self._fetch.read(response, MAX_MANIFEST_BYTES, what)
            media_type = response.headers.get("Content-Type", "").split(";")[0].strip()
            served = response.headers.get("Docker-Content-Digest")
        digest = sha256_digest(body)
        if reference.startswith("sha256:") and digest != reference:
            raise RegistryError(f"manifest {reference} arrived as {digest}: other bytes")
        if served is not None and served.startswith("sha256:") and served != digest:
            raise RegistryError(
                f"{self.registry} said manifest {repository}:{reference} is {served[:80]}, "
                f"but its bytes hash to {digest}"
            )
        return Fetched(media_type[:200], body, digest)

    # -- referrers --------------------------------------------------------------------------

    def referrers(
        self, repository: str, digest: str, *, artifact_type: str | None = None
    ) -> Referrers:
        """Every referrer of ``digest``: the API, or on ``404`` the referrers tag's index."""
        params = {"artifactType": artifact_type} if artifact_type else None
        url: str | httpx.URL = f"/v2/{repository}/referrers/{digest}"
        descriptors: list[JsonObject] = []
        filtered = True
        for page in range(MAX_REFERRER_PAGES):
            with self._exchange(
                "GET", url, params=params if page == 0 else None, headers={"Accept": IMAGE_INDEX}
            ) as response:
                if response.status_code == 404 and page == 0:
                    return self._referrers_by_tag(repository, digest, artifact_type)
                if response.status_code != 200:
                    raise self._fail(response, f"GET referrers of {digest}")
                body = self._fetch.read(response, MAX_MANIFEST_BYTES, "referrers list")
                applied = response.headers.get("OCI-Filters-Applied", "")
                link = response.headers.get("Link")
                base = response.url
            filtered = filtered and "artifactType" in [p.strip() for p in applied.split(",")]
            descriptors += _index_manifests(Fetched(IMAGE_INDEX, body, sha256_digest(body)))
            _cap_referrers(len(descriptors), digest)
            following = _next_link(link)
            if following is None:
                break
            url = base.join(following)
        result = Referrers(descriptors, "api", filtered=bool(artifact_type) and filtered)
        return _filter(result, artifact_type)

    def _referrers_by_tag(
        self, repository: str, digest: str, artifact_type: str | None
    ) -> Referrers:
        tagged = self.get_manifest(repository, referrers_tag(digest))
        if tagged is None:
            return Referrers([], "tag")
        if tagged.media_type != IMAGE_INDEX:
            # distribution-spec: a tag that is no valid index means "no referrers".
            return Referrers([], "tag", notes=[f"{referrers_tag(digest)} is not an image index"])
        listed = _index_manifests(tagged)
        _cap_referrers(len(listed), digest)
        return _filter(Referrers(listed, "tag"), artifact_type)


def _cap_referrers(count: int, digest: str) -> None:
    if count > MAX_REFERRERS:
        raise RegistryError(
            f"the referrers of {digest} name more than {MAX_REFERRERS} descriptors; "
            "engram reads no further"
        )


def _index_manifests(index: Fetched) -> list[JsonObject]:
    document = index.json()
    manifests = document.get("manifests", [])
    if document.get("schemaVersion") != 2 or not isinstance(manifests, list):
        raise RegistryError(f"referrers list {index.digest} is not an OCI image index")
    return [m for m in manifests if isinstance(m, dict)]


def _filter(result: Referrers, artifact_type: str | None) -> Referrers:
    if not artifact_type or result.filtered:
        return result
    kept = [d for d in result.descriptors if d.get("artifactType") == artifact_type]
    return Referrers(kept, result.via, filtered=False, notes=result.notes)


def _next_link(header: str | None) -> str | None:
    if not header:
        return None
    for part in header.split(","):
        url, _, rest = part.strip().partition(";")
        if 'rel="next"' in rest.replace(" ", "") and url.startswith("<") and url.endswith(">"):
            return url[1:-1]
    return None


def _chunks(source: bytes | Path) -> Iterator[bytes]:
    if isinstance(source, bytes):
        for start in range(0, len(source), CHUNK_BYTES):
            yield source[start : start + CHUNK_BYTES]
        return
    with Path(source).open("rb") as handle:
        while block := handle.read(CHUNK_BYTES):
            yield block


__all__ = ["Fetched", "Referrers", "RegistryClient", "sha256_digest"]
