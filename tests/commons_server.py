"""A Wikimedia Commons stand-in on 127.0.0.1 for tests: the MediaWiki action API calls the reference
builder makes, and the file server behind them.

``GET /w/api.php`` answers, in the API's JSON format (``formatversion=2``):

- ``action=query&list=categorymembers&cmtitle=Category:X&cmtype=file&cmlimit=N``: the category's files
  (``{"query": {"categorymembers": [{"pageid", "ns": 6, "title"}]}}``, with ``continue`` when cut);
- ``action=query&prop=imageinfo&titles=A|B&iiprop=...&iiurlwidth=W&iiurlheight=H``: one page per title,
  normalised as MediaWiki does (underscores to spaces, first letter upper case, listed in
  ``query.normalized``), ``"missing": true`` for unknown files, else ``imageinfo`` with url,
  descriptionurl, size, width, height, sha1, mime, timestamp, a thumbnail (thumburl / thumbwidth /
  thumbheight: the file's ``thumb`` when it has one, else the original when it fits the box) and
  ``extmetadata`` ({"value": ..., "source": ...} per field, HTML in Artist / Credit). With
  ``imageinfo_page`` set, only that many pages get their imageinfo per answer, and a ``continue`` with
  ``iicontinue`` asks for the rest.

``GET /files/NAME`` serves a file as its ``behaviour`` says: ``ok``; ``404``; ``html`` (an HTML page, as
a captive portal sends); ``redirect-offsite`` (302 to another host); ``redirect-same`` (302 to
``/files/moved/NAME`` on this server, then the file); ``503-once`` and ``slow-once`` (the first request
answered 503, or only after ``slow_seconds``; the next one served); ``drip`` (the right headers, then one byte
every ``drip_seconds``, as a stalled or hostile server does). ``GET /thumb/NAME`` serves ``thumb``.

Hostile answers: ``reshape`` (params, answer) -> another JSON value, or bytes sent as they are, replaces every API
answer; ``api_drip`` sends the API's answers a byte every ``drip_seconds``.
``requests`` records every path requested, ``user_agents`` every User-Agent.
"""

from __future__ import annotations

import hashlib
import io
import json
import threading
import time
import urllib.parse
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Self


@dataclass
class FakeFile:
    name: str  # without "File:", spaces as Commons writes them
    data: bytes
    license: str | None = "CC BY-SA 4.0"
    license_code: str | None = "cc-by-sa-4.0"
    license_url: str | None = "https://creativecommons.org/licenses/by-sa/4.0"
    artist: str | None = '<a href="//commons.wikimedia.org/wiki/User:Ann" title="User:Ann">Ann &amp; Bo</a>'
    credit: str | None = '<span class="int-own-work" lang="en">Own work</span>'
    attribution: str | None = None
    usage_terms: str | None = "Creative Commons Attribution-Share Alike 4.0"
    non_free: bool | str = False  # a string: NonFree's value as it is
    mime: str = "image/jpeg"
    behaviour: str = "ok"
    size: tuple[int, int] | None = None  # what Commons says; default: the real size of ``data``
    sha1: str | None = None  # what Commons says; default: the real SHA-1
    nbytes: int | None = None  # what Commons says; default: len(data)
    thumb: bytes | None = None

    def real_size(self, data: bytes) -> tuple[int, int]:
        from PIL import Image

        try:
            with Image.open(io.BytesIO(data)) as img:
                return img.size
        except Exception:  # noqa: BLE001 - a hostile file: Commons would still list some size
            return (640, 480)


def normalise(title: str) -> str:
    """MediaWiki's title normalisation, as far as file titles need it."""
    ns, _, rest = title.partition(":")
    rest = rest.replace("_", " ").strip()
    return f"{ns.capitalize()}:{rest[:1].upper()}{rest[1:]}"


class CommonsServer:
    def __init__(self, files: list[FakeFile] = (), categories: dict[str, list[str]] | None = None,
                 slow_seconds: float = 1.0, imageinfo_page: int | None = None):
        self.files = {f.name: f for f in files}
        self.categories = categories or {}  # category name (without "Category:") -> file names
        self.slow_seconds, self.imageinfo_page = slow_seconds, imageinfo_page
        self.api_status = 200  # another status breaks the API: it answers an HTML error page with it
        self.reshape = None
        self.api_drip = False
        self.drip_seconds = 0.2
        self.requests: list[str] = []
        self.user_agents: list[str] = []
        self._seen: set[str] = set()
        self._lock = threading.Lock()
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), _handler(self))
        self._httpd.daemon_threads = True
        self.base = f"http://127.0.0.1:{self._httpd.server_address[1]}"
        self.api = f"{self.base}/w/api.php"
        self._thread = threading.Thread(target=self._httpd.serve_forever, args=(0.05,), daemon=True)

    def __enter__(self) -> Self:
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()
        self._thread.join()

    def file_requests(self, name: str | None = None) -> list[str]:
        """Paths of file downloads (originals and thumbnails), of one file when ``name`` is given."""
        with self._lock:
            paths = [p for p in self.requests if p.startswith(("/files/", "/thumb/"))]
        if name is None:
            return paths
        quoted = urllib.parse.quote(name)
        return [p for p in paths if p.rsplit("/", 1)[1] == quoted]

    def first_time(self, key: str) -> bool:
        with self._lock:
            new = key not in self._seen
            self._seen.add(key)
            return new

    # --- the API

    def api_answer(self, params: dict[str, str]) -> dict:
        if params.get("action") != "query" or params.get("format") != "json":
            return {"error": {"code": "badparams", "info": "only action=query&format=json is served here"}}
        if params.get("list") == "categorymembers":
            return self.category_members(params)
        if params.get("prop") == "imageinfo":
            return self.image_info(params)
        return {"error": {"code": "badparams", "info": "unknown query"}}

    def category_members(self, params: dict[str, str]) -> dict:
        assert params.get("cmtype") == "file"
        name = normalise(params["cmtitle"]).split(":", 1)[1]
        limit = int(params.get("cmlimit", "10"))
        members = self.categories.get(name, [])
        answer = {"batchcomplete": True, "query": {"categorymembers": [
            {"pageid": 1000 + i, "ns": 6, "title": f"File:{m}"} for i, m in enumerate(members[:limit])]}}
        if len(members) > limit:
            answer["continue"] = {"cmcontinue": f"file|{limit}", "continue": "-||"}
        return answer

    def image_info(self, params: dict[str, str]) -> dict:
        assert set(params["iiprop"].split("|")) >= {"url", "size", "sha1", "mime", "extmetadata"}
        titles = params["titles"].split("|")
        box = (int(params.get("iiurlwidth", 0)), int(params.get("iiurlheight", 0)))
        normalized, pages = [], []
        start = int(params.get("iicontinue", 0))
        for i, title in enumerate(titles):
            final = normalise(title)
            if final != title:
                normalized.append({"fromencoded": False, "from": title, "to": final})
            f = self.files.get(final.split(":", 1)[1])
            if f is None:
                pages.append({"ns": 6, "title": final, "missing": True, "known": False})
                continue
            page = {"pageid": 5000 + i, "ns": 6, "title": final, "imagerepository": "local"}
            if self.imageinfo_page is None or start <= i < start + self.imageinfo_page:
                page["imageinfo"] = [self.info(f, box)]
            pages.append(page)
        answer: dict = {"batchcomplete": True, "query": {"pages": pages}}
        if normalized:
            answer["query"]["normalized"] = normalized
        if self.imageinfo_page is not None and start + self.imageinfo_page < len(titles):
            answer["continue"] = {"iicontinue": str(start + self.imageinfo_page), "continue": "||"}
            del answer["batchcomplete"]
        return answer

    def info(self, f: FakeFile, box: tuple[int, int]) -> dict:
        quoted = urllib.parse.quote(f.name)
        width, height = f.size or f.real_size(f.data)
        info = {
            "timestamp": "2021-05-04T10:20:30Z", "size": f.nbytes if f.nbytes is not None else len(f.data),
            "width": width, "height": height, "sha1": f.sha1 or hashlib.sha1(f.data).hexdigest(), "mime": f.mime,
            "url": f"{self.base}/files/{quoted}",
            "descriptionurl": f"https://commons.wikimedia.org/wiki/File:{quoted}",
            "descriptionshorturl": "https://commons.wikimedia.org/w/index.php?curid=5000",
            "extmetadata": self.extmetadata(f),
        }
        if box[0] and box[1]:
            if f.thumb is not None:
                tw, th = f.real_size(f.thumb)
                info.update(thumburl=f"{self.base}/thumb/{quoted}", thumbwidth=tw, thumbheight=th)
            elif width <= box[0] and height <= box[1]:  # MediaWiki does not upscale: the original is the thumbnail
                info.update(thumburl=info["url"], thumbwidth=width, thumbheight=height)
        return info

    @staticmethod
    def extmetadata(f: FakeFile) -> dict:
        fields = {"DateTime": "2021-05-04 10:20:30", "ObjectName": f.name.rsplit(".", 1)[0],
                  "LicenseShortName": f.license, "License": f.license_code, "LicenseUrl": f.license_url,
                  "Artist": f.artist, "Credit": f.credit, "Attribution": f.attribution,
                  "UsageTerms": f.usage_terms,
                  "NonFree": f.non_free if isinstance(f.non_free, str) else ("true" if f.non_free else None), "Copyrighted": "True"}
        return {k: {"value": v, "source": "commons-desc-page", "hidden": ""} for k, v in fields.items() if v is not None}


def _handler(server: CommonsServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args) -> None:  # quiet
            pass

        def send(self, status: int, body: bytes, content_type: str, headers: dict | None = None,
                 drip: bool = False) -> None:
            try:
                self.send_response(status)
                self.send_header("Content-Type", content_type)
                self.send_header("Content-Length", str(len(body)))
                for k, v in (headers or {}).items():
                    self.send_header(k, v)
                self.end_headers()
                if not drip:
                    return self.wfile.write(body)
                for i in range(len(body)):
                    self.wfile.write(body[i:i + 1])
                    self.wfile.flush()
                    time.sleep(server.drip_seconds)
            except (BrokenPipeError, ConnectionResetError):  # the client gave up (a timeout test)
                pass

        def do_GET(self) -> None:
            url = urllib.parse.urlsplit(self.path)
            with server._lock:
                server.requests.append(url.path)
                server.user_agents.append(self.headers.get("User-Agent", ""))
            if url.path == "/w/api.php":
                if server.api_status != 200:
                    return self.send(server.api_status, b"<html>server error</html>", "text/html")
                params = dict(urllib.parse.parse_qsl(url.query))
                answer = server.api_answer(params)
                if server.reshape is not None:
                    answer = server.reshape(params, answer)
                body = answer if isinstance(answer, bytes) else json.dumps(answer).encode()
                return self.send(200, body, "application/json; charset=utf-8", drip=server.api_drip)
            prefix, _, quoted = url.path.rpartition("/")
            f = server.files.get(urllib.parse.unquote(quoted))
            if f is None or prefix not in ("/files", "/files/moved", "/thumb"):
                return self.send(404, b"not found", "text/plain")
            if prefix == "/thumb":
                return self.send(200, f.thumb or b"", "image/jpeg")
            b = f.behaviour
            if b == "404":
                return self.send(404, b"<html>404 Not Found</html>", "text/html")
            if b == "html":
                return self.send(200, b"<!DOCTYPE html><html><body>Please log in</body></html>", "text/html; charset=utf-8")
            if b == "redirect-offsite":
                return self.send(302, b"", "text/plain", {"Location": f"http://elsewhere.invalid/{quoted}"})
            if b == "redirect-same" and prefix == "/files":
                return self.send(302, b"", "text/plain", {"Location": f"/files/moved/{quoted}"})
            if b == "503-once" and server.first_time(url.path):
                return self.send(503, b"busy", "text/plain", {"Retry-After": "0"})
            if b == "slow-once" and server.first_time(url.path):
                time.sleep(server.slow_seconds)
            return self.send(200, f.data, f.mime, drip=b == "drip")

    return Handler
