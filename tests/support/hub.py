"""A Hugging Face model repository imitated on :class:`tests.support.httpserver.HTTPTestServer`.

The shapes the Hub serves: ``/api/models/<repo>/tree/<revision>`` lists the files (``oid`` is
the git blob id; LFS files add ``lfs.oid``, their sha256), ``/<repo>/resolve/<revision>/<path>``
serves a file — an LFS file by a 302 to a CDN path (``/cdn/<sha256>``) whose ETag is the
sha256, as the Hub's own CDN does. The routes serving the bytes are returned by path, to be
throttled, cut or corrupted by a test.
"""

from __future__ import annotations

import hashlib
import json

from tests.support.httpserver import HTTPTestServer, Route

#: Files every Hub repository has, that a model download must skip.
EXTRAS = {".gitattributes": b"*.bin filter=lfs diff=lfs merge=lfs -text\n", "README.md": b"# m\n"}


def git_blob_id(data: bytes) -> str:
    return hashlib.sha1(b"blob %d\0" % len(data) + data, usedforsecurity=False).hexdigest()


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def serve_model(
    http: HTTPTestServer,
    repository: str,
    files: dict[str, bytes],
    *,
    revision: str = "main",
    lfs: tuple[str, ...] = ("model.bin",),
) -> dict[str, Route]:
    """Publish ``files`` (plus README and .gitattributes) as ``repository`` at ``revision``."""
    listing = []
    served: dict[str, Route] = {}
    for path, body in {**EXTRAS, **files}.items():
        entry: dict[str, object] = {
            "type": "file",
            "oid": git_blob_id(body),
            "size": len(body),
            "path": path,
        }
        resolve = f"/{repository}/resolve/{revision}/{path}"
        if path in lfs:
            digest = sha256(body)
            entry["lfs"] = {"oid": digest, "size": len(body), "pointerSize": 134}
            http.routes[resolve] = Route(location=http.url(f"/cdn/{digest}"))
            served[path] = http.routes[f"/cdn/{digest}"] = Route(body=body, etag=f'"{digest}"')
        else:
            kind = "application/json" if path.endswith(".json") else "text/plain; charset=utf-8"
            served[path] = http.routes[resolve] = Route(
                body=body, content_type=kind, etag=f'"{entry["oid"]}"'
            )
        listing.append(entry)
    listing.append({"type": "directory", "oid": "0" * 40, "size": 0, "path": "extra"})
    http.routes[f"/api/models/{repository}/tree/{revision}"] = Route(
        body=json.dumps(listing).encode(), content_type="application/json", etag=None
    )
    return served
