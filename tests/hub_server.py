"""A loopback stand-in of the Hugging Face Hub's HTTP API, on 127.0.0.1, for the real ``huggingface_hub`` client
(``HF_ENDPOINT`` pointed at it): enough for ``snapshot_download`` / ``hf download`` of a dataset at a revision (a
branch, a tag or a commit), and for ``create_repo`` + ``upload_folder`` (regular uploads; the stub asks for no LFS).

Every repository is a list of commits, each the whole tree ``{path: bytes}``, and refs (``main``, tags); a commit's
id is the sha1 of its tree, so the same files give the same commit. :meth:`HubServer.seed` puts a folder's files in
a repository as one commit, as a maintainer's ``publish dataset`` would."""

from __future__ import annotations

import base64
import hashlib
import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import parse_qs, unquote, urlparse


class HubServer:
    def __init__(self):
        self.repos: dict[str, dict] = {}  # "datasets/ORG/NAME" -> {"commits": {sha: {path: bytes}}, "refs": {name: sha}}
        self.calls: list[tuple[str, str]] = []
        hub = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_HEAD(self):
                hub._route(self, "HEAD")

            def do_GET(self):
                hub._route(self, "GET")

            def do_POST(self):
                hub._route(self, "POST")

        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self._httpd.server_address[1]}"
        self._thread = threading.Thread(target=self._httpd.serve_forever, daemon=True)

    def __enter__(self) -> HubServer:
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()

    def env(self) -> dict[str, str]:
        """The environment that points the huggingface_hub client (and ``hf``) at this server."""
        return {"HF_ENDPOINT": self.url, "HF_HUB_OFFLINE": "0", "HF_TOKEN": "hf_loopback", "HF_HUB_DISABLE_XET": "1",
                "HF_HUB_ETAG_TIMEOUT": "10", "HF_HUB_DOWNLOAD_TIMEOUT": "10"}

    # ------------------------------------------------------------------------------------------ the store

    def commit(self, repo: str, files: dict[str, bytes], ref: str = "main", tags: tuple[str, ...] = ()) -> str:
        """Make ``files`` (on top of ``ref``'s tree) a commit of the dataset ``repo``; returns its id."""
        store = self.repos.setdefault(f"datasets/{repo}", {"commits": {}, "refs": {}})
        tree = dict(store["commits"].get(store["refs"].get(ref), {}))
        tree.update(files)
        sha = hashlib.sha1(b"".join(p.encode() + b"\0" + hashlib.sha1(d).digest() for p, d in sorted(tree.items()))).hexdigest()
        store["commits"][sha] = tree
        store["refs"][ref] = sha
        for tag in tags:
            store["refs"][tag] = sha
        return sha

    def seed(self, repo: str, folder: Path, tags: tuple[str, ...] = ()) -> str:
        """Commit every file of ``folder`` (hidden ones left out) to the dataset ``repo``."""
        files = {p.relative_to(folder).as_posix(): p.read_bytes() for p in sorted(folder.rglob("*"))
                 if p.is_file() and not any(part.startswith(".") for part in p.relative_to(folder).parts)}
        return self.commit(repo, files, tags=tags)

    def files(self, repo: str, ref: str = "main") -> dict[str, bytes]:
        store = self.repos[f"datasets/{repo}"]
        return store["commits"][store["refs"].get(ref, ref)]

    def _tree(self, key: str, rev: str) -> tuple[str, dict[str, bytes]] | None:
        store = self.repos.get(key)
        if store is None:
            return None
        sha = store["refs"].get(rev, rev)
        return (sha, store["commits"][sha]) if sha in store["commits"] else None

    # ------------------------------------------------------------------------------------------ the API

    def _route(self, h: BaseHTTPRequestHandler, method: str) -> None:
        url = urlparse(h.path)
        parts = [unquote(p) for p in url.path.strip("/").split("/")]
        self.calls.append((method, url.path))
        body = h.rfile.read(int(h.headers.get("Content-Length") or 0)) if method == "POST" else b""
        try:
            if parts[:1] == ["api"]:
                return self._api(h, method, parts[1:], parse_qs(url.query), body)
            if len(parts) >= 6 and parts[0] == "datasets" and parts[3] == "resolve":
                return self._resolve(h, method, f"datasets/{parts[1]}/{parts[2]}", parts[4], "/".join(parts[5:]))
        except (KeyError, ValueError, IndexError) as exc:
            return self._json(h, 400, {"error": f"bad request: {exc}"})
        self._json(h, 404, {"error": "not found"})

    def _api(self, h, method: str, parts: list[str], query: dict, body: bytes) -> None:
        if method == "POST" and parts == ["repos", "create"]:
            payload = json.loads(body)
            key = f"{payload.get('type', 'model')}s/{payload['organization']}/{payload['name']}"
            if key in self.repos:
                return self._json(h, 409, {"error": "You already created this repo", "url": f"{self.url}/{key}"})
            self.repos[key] = {"commits": {}, "refs": {}, "private": payload.get("visibility", "public") != "public" or bool(payload.get("private"))}
            return self._json(h, 200, {"url": f"{self.url}/{key}"})
        if method == "POST" and parts == ["validate-yaml"]:
            return self._json(h, 200, {"errors": [], "warnings": []})
        if method == "GET" and len(parts) == 3:  # repo_info without a revision: the repository's visibility
            key = "/".join(parts)
            if key not in self.repos:
                return self._json(h, 404, {"error": "Repository not found"}, {"X-Error-Code": "RepoNotFound"})
            return self._json(h, 200, {"id": f"{parts[1]}/{parts[2]}", "private": self.repos[key].get("private", False)})
        kind, org, name, action, *rest = parts
        key = f"{kind}/{org}/{name}"
        if method == "GET" and action == "revision":
            found = self._tree(key, rest[0])
            if found is None:
                return self._json(h, 404, {"error": "Revision Not Found"}, {"X-Error-Code": "RevisionNotFound"})
            sha, tree = found
            return self._json(h, 200, {"id": f"{org}/{name}", "sha": sha, "private": self.repos[key].get("private", False),
                                       "siblings": [{"rfilename": p} for p in sorted(tree)]})
        if method == "GET" and action == "tree":
            found = self._tree(key, rest[0])
            if found is None:
                return self._json(h, 404, {"error": "Revision Not Found"}, {"X-Error-Code": "RevisionNotFound"})
            entries = [{"type": "file", "path": p, "size": len(d), "oid": hashlib.sha1(d).hexdigest()}
                       for p, d in sorted(found[1].items())]
            return self._json(h, 200, entries)
        if method == "POST" and action == "preupload":
            files = json.loads(body)["files"]
            return self._json(h, 200, {"files": [{"path": f["path"], "uploadMode": "regular", "shouldIgnore": False}
                                                 for f in files]})
        if method == "POST" and action == "commit":
            if key not in self.repos:
                return self._json(h, 404, {"error": "Repository not found"}, {"X-Error-Code": "RepoNotFound"})
            files, message = {}, ""
            for line in body.splitlines():
                item = json.loads(line)
                if item["key"] == "header":
                    message = item["value"].get("summary", "")
                elif item["key"] == "file":
                    files[item["value"]["path"]] = base64.b64decode(item["value"]["content"])
            sha = self.commit(key.split("/", 1)[1], files, ref=unquote(rest[0]) if rest else "main")
            self.repos[key].setdefault("messages", {})[sha] = message
            return self._json(h, 200, {"commitOid": sha, "commitUrl": f"{self.url}/{key}/commit/{sha}",
                                       "pullRequestUrl": None})
        self._json(h, 404, {"error": "not found"})

    def _resolve(self, h, method: str, key: str, rev: str, path: str) -> None:
        found = self._tree(key, rev)
        if found is None or path not in found[1]:
            return self._json(h, 404, {"error": "Entry not found"}, {"X-Error-Code": "EntryNotFound"})
        sha, tree = found
        data = tree[path]
        h.send_response(200)
        h.send_header("X-Repo-Commit", sha)
        h.send_header("ETag", f'"{hashlib.sha1(data).hexdigest()}"')
        h.send_header("Content-Length", str(len(data)))
        h.send_header("Content-Type", "application/octet-stream")
        h.end_headers()
        if method == "GET":
            h.wfile.write(data)

    @staticmethod
    def _json(h, status: int, payload, headers: dict | None = None) -> None:
        data = json.dumps(payload).encode()
        h.send_response(status)
        h.send_header("Content-Type", "application/json")
        h.send_header("Content-Length", str(len(data)))
        for k, v in (headers or {}).items():
            h.send_header(k, v)
        h.end_headers()
        h.wfile.write(data)
