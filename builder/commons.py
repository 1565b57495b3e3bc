"""A small client of the Wikimedia Commons API (the MediaWiki action API) and of its file servers.

Two queries, both ``action=query&format=json&formatversion=2``:

- ``list=categorymembers&cmtype=file&cmtitle=Category:NAME&cmlimit=N``: the first N files of a category,
  in the category's sort order;
- ``prop=imageinfo&iiprop=url|size|sha1|mime|timestamp|extmetadata&titles=File:A|File:B...`` (at most 50
  titles a query, continued while the API says ``continue``), with ``iiurlwidth`` / ``iiurlheight`` so
  that Commons also names a thumbnail that fits a ``side`` x ``side`` box.

A file's licence is judged from its ``extmetadata`` (Extension:CommonsMetadata, filled from the licence
templates of the file page): see :func:`license_problem` (an allow-list, :mod:`.licences`). Author, credit
and attribution arrive as HTML and are kept as plain text (:func:`plain_text`).

Downloads (:func:`download`) follow redirects only within the same scheme and host, stop reading after
``max_bytes`` or :data:`FILE_SECONDS` (all attempts together, however slowly the server sends) and are retried
through :func:`cultureboard.http.with_retries`; every other failure is a :class:`Rejected` with a one-line reason.
API failures (unreachable, HTTP errors after the retries, an answer slower than :data:`API_SECONDS` or past
:data:`API_RUN_SECONDS` of answers in the run, an answer
that is not API JSON or has another shape than the API gives, an API ``error``, a continuation that repeats) are a
:class:`~cultureboard.errors.CultureboardError`: without the API nothing can be listed, so the whole command
stops and the dataset keeps its references. Strings of an answer lose lone surrogates, and only http(s) URLs are
kept.
"""

from __future__ import annotations

import html
import http.client
import json
import re
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass
from html.parser import HTMLParser

from cultureboard.errors import CultureboardError
from cultureboard.http import DeadlinePassed, Deadlines, is_transient, open_by, read_body, with_retries

from .licences import licence_problem

COMMONS_API = "https://commons.wikimedia.org/w/api.php"
#: Titles per imageinfo query: the API's limit for clients without the apihighlimits right.
TITLES_PER_QUERY = 50
#: The extmetadata fields read (``iiextmetadatafilter``): licence, author and attribution.
EXTMETADATA = ("LicenseShortName", "LicenseUrl", "License", "Artist", "Credit", "Attribution", "NonFree",
               "UsageTerms")
#: MIME types kept: the formats a reference image may have (as submissions: PNG, JPEG, WebP).
IMAGE_MIMES = frozenset({"image/jpeg", "image/png", "image/webp"})
#: Overall time limits in seconds, whatever the server's pace: one API answer, one file download (all its attempts).
API_SECONDS, FILE_SECONDS = 120.0, 300.0
#: The overall limit of every API answer of one run together (``cultureboard.http.Deadlines``).
API_RUN_SECONDS = 6 * 3600.0
#: The largest API answer read.
API_MAX_BYTES = 64 * 2**20
#: Renames (``normalized`` / ``redirects``) followed from one title before the chain counts as a cycle.
MAX_RENAMES = 10

@dataclass(frozen=True)
class CommonsFile:
    """One Commons file as imageinfo describes its current version."""

    title: str  # "File:Name.jpg", as Commons normalises it
    url: str  # the original file
    file_page: str  # the description page
    width: int
    height: int
    size: int  # bytes of the original
    sha1: str  # hex SHA-1 of the original
    mime: str
    timestamp: str  # upload time of the current version: with sha1, the file's revision
    thumb_url: str | None  # a version that fits the requested box (Commons renders it)
    thumb_width: int | None
    thumb_height: int | None
    license: str | None  # LicenseShortName, e.g. "CC BY-SA 4.0"
    license_code: str | None  # License, e.g. "cc-by-sa-4.0"
    license_url: str | None
    author: str | None  # Artist, as plain text
    credit: str | None  # Credit (the source), as plain text
    attribution: str | None  # Attribution: a credit line the licensor asks for, as plain text
    non_free: bool  # NonFree: Commons marks the file as not free (any value but false / 0 / no)
    usage_terms: str | None = None  # UsageTerms, e.g. "Creative Commons Attribution-Share Alike 4.0", as plain text


class Rejected(Exception):
    """A candidate image that cannot be used; ``str()`` is the one-line reason."""


def license_problem(f: CommonsFile) -> str | None:
    """Why ``f``'s licence does not allow redistribution (None when it does): decided from every structured
    licence field Commons gives (short name, licence code, usage terms, the NonFree mark) by
    :func:`cultureboard.builder.licences.licence_problem` (an allow-list of free licences)."""
    return licence_problem({"LicenseShortName": f.license, "License": f.license_code, "UsageTerms": f.usage_terms},
                           f.non_free)


class _Text(HTMLParser):
    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.parts: list[str] = []

    def handle_data(self, data: str) -> None:
        self.parts.append(data)


def plain_text(value) -> str | None:
    """The text of an extmetadata HTML value: tags dropped, entities decoded, whitespace collapsed."""
    if value is None:
        return None
    parser = _Text()
    parser.feed(str(value))
    parser.close()
    text = " ".join(html.unescape("".join(parser.parts)).split())
    return text or None


_SURROGATE = re.compile("[\ud800-\udfff]")


def _text(value) -> str | None:
    """A string of an API answer with any lone surrogate (which JSON can carry and UTF-8 cannot) replaced by U+FFFD;
    None for anything but a non-empty string."""
    return _SURROGATE.sub("\ufffd", value) if isinstance(value, str) and value else None


def _http_url(value) -> str | None:
    """``value`` when it is an http(s) URL (after :func:`_text`), else None: no other scheme reaches the card."""
    url = _text(value)
    return url if url and urllib.parse.urlsplit(url).scheme in ("http", "https") and " " not in url else None


def _meta(ext: dict, key: str) -> str | None:
    item = ext.get(key)
    value = item.get("value") if isinstance(item, dict) else None
    return None if value is None or value == "" else _text(str(value))


def _size(value) -> int:
    """A count of the answer (pixels, bytes): a non-negative int, not a bool, a float or a string."""
    if type(value) is not int or value < 0:
        raise ValueError(value)
    return value


def _file(page: dict, info: dict) -> CommonsFile:
    ext = info.get("extmetadata") or {}
    if not isinstance(ext, dict) or not isinstance(info.get("sha1"), str):
        raise ValueError("extmetadata or sha1")
    thumb, url = _http_url(info.get("thumburl")), _http_url(info["url"])
    if url is None:
        raise ValueError("url")
    return CommonsFile(
        title=_text(page["title"]), url=url, file_page=_http_url(info.get("descriptionurl")) or "",
        width=_size(info["width"]), height=_size(info["height"]), size=_size(info["size"]), sha1=info["sha1"].lower(),
        mime=_text(info.get("mime")) or "", timestamp=_text(info.get("timestamp")) or "",
        thumb_url=thumb, thumb_width=_size(info["thumbwidth"]) if thumb else None,
        thumb_height=_size(info["thumbheight"]) if thumb else None,
        license=plain_text(_meta(ext, "LicenseShortName")), license_code=_meta(ext, "License"),
        license_url=_http_url(_meta(ext, "LicenseUrl")), author=plain_text(_meta(ext, "Artist")),
        credit=plain_text(_meta(ext, "Credit")), attribution=plain_text(_meta(ext, "Attribution")),
        non_free=str(_meta(ext, "NonFree") or "").strip().lower() not in ("", "false", "0", "no"),
        usage_terms=plain_text(_meta(ext, "UsageTerms")),
    )


def file_title(name: str) -> str:
    """``File:NAME`` for a P18 value (a file name without the namespace)."""
    name = name.strip()
    return name if name.lower().startswith("file:") else f"File:{name}"


def category_title(name: str) -> str:
    """``Category:NAME`` for a P373 value (a category name without the namespace)."""
    name = name.strip()
    return name if name.lower().startswith("category:") else f"Category:{name}"


class CommonsAPI:
    """The Commons API at ``url``; ``user_agent`` names the tool and a contact, as Wikimedia's policy asks.

    Queries are sent one at a time (the API's etiquette); transient failures are retried ``retries``
    times with a doubling wait from ``backoff`` seconds."""

    def __init__(self, url: str = COMMONS_API, *, user_agent: str, timeout: float = 30.0, retries: int = 3,
                 backoff: float = 1.0, sleep: Callable[[float], None] = time.sleep):
        if urllib.parse.urlsplit(url).scheme not in ("http", "https"):
            raise CultureboardError(f"--commons-api {url}", "is not an http(s) URL",
                                    f"pass the API endpoint, e.g. {COMMONS_API}", exit_code=2)
        self.url, self.user_agent, self.timeout = url, user_agent, timeout
        self.retries, self.backoff, self.sleep = retries, backoff, sleep
        self.queries = 0
        self.deadlines = Deadlines(API_SECONDS, API_RUN_SECONDS)

    def _get(self, params: dict) -> dict:
        query = urllib.parse.urlencode({**params, "format": "json", "formatversion": "2"})
        request = urllib.request.Request(f"{self.url}?{query}", headers={"User-Agent": self.user_agent,
                                                                          "Accept": "application/json"})

        def attempt() -> bytes:
            with open_by(urllib.request.urlopen, request, timeout=self.timeout, deadline=deadline) as response:
                return read_body(response, max_bytes=API_MAX_BYTES, deadline=deadline)

        try:
            deadline = self.deadlines.next()  # this answer's limit, or what is left of the run's
            body = with_retries(attempt, retries=self.retries, backoff=self.backoff, sleep=self.sleep)
        except urllib.error.HTTPError as exc:
            raise self._error(f"answered HTTP {exc.code} ({exc.reason})") from None
        except DeadlinePassed as exc:
            raise self._error(f"answered a query too slowly: {exc}; {self.deadlines.limits()}") from None
        except (urllib.error.URLError, TimeoutError, ConnectionError, http.client.HTTPException) as exc:
            raise self._error(f"is unreachable ({getattr(exc, 'reason', exc)})") from None
        self.queries += 1
        try:
            answer = json.loads(body) if len(body) <= API_MAX_BYTES else None
        except (ValueError, RecursionError):
            answer = None
        if not isinstance(answer, dict):
            raise self._error("did not answer with MediaWiki API JSON")
        if "error" in answer:
            err = answer["error"] if isinstance(answer["error"], dict) else {}
            code, info = _text(str(err.get("code", "?"))), _text(str(err.get("info", "")))
            raise self._error(f"refused a query ({code}: {info})")
        return answer

    def _error(self, problem: str) -> CultureboardError:
        """The one-line error that stops the run: nothing is written, the dataset keeps what it has."""
        return CultureboardError(f"--commons-api {self.url}", problem,
                                 f"check --commons-api (it must be a MediaWiki API endpoint such as {COMMONS_API}) "
                                 "and the network, then run again")

    def _shape(self, what: str, ok: bool) -> None:
        """A :meth:`_error` unless ``ok``: an answer of another shape is not "no files"."""
        if not ok:
            raise self._error(f"answered a {what} query in a shape the MediaWiki API never gives")

    def category_files(self, category: str, limit: int) -> list[str]:
        """Titles of the first ``limit`` files of ``category`` (at most 500), in the category's order;
        an empty list when the category has none or does not exist. An answer without a list of members
        (each a mapping with a string title) stops the run."""
        answer = self._get({"action": "query", "list": "categorymembers", "cmtitle": category_title(category),
                            "cmtype": "file", "cmlimit": str(max(1, min(limit, 500)))})
        query = answer.get("query")
        members = query.get("categorymembers") if isinstance(query, dict) else None
        self._shape("categorymembers", isinstance(members, list) and all(
            isinstance(m, dict) and isinstance(m.get("title"), str) for m in members))
        return [_text(m["title"]) for m in members if m.get("ns") == 6 and m["title"]][:limit]

    def files(self, titles: list[str], side: int) -> dict[str, CommonsFile | str]:
        """For each requested title, its :class:`CommonsFile` or the reason there is none (missing,
        invalid title, no image information); ``side`` is the box the thumbnail URL fits in."""
        out: dict[str, CommonsFile | str] = {}
        unique = list(dict.fromkeys(titles))
        for i in range(0, len(unique), TITLES_PER_QUERY):
            out.update(self._files_batch(unique[i:i + TITLES_PER_QUERY], side))
        return out

    def _files_batch(self, titles: list[str], side: int) -> dict[str, CommonsFile | str]:
        """One imageinfo query, continued while the API says ``continue`` (each continuation must be new: one
        that repeats, or more continuations than titles, stops the run, as does an answer of another shape)."""
        params = {"action": "query", "prop": "imageinfo", "titles": "|".join(titles),
                  "iiprop": "url|size|sha1|mime|timestamp|extmetadata", "iiurlwidth": str(side),
                  "iiurlheight": str(side), "iiextmetadatafilter": "|".join(EXTMETADATA),
                  "iiextmetadatalanguage": "en"}
        pages: dict[str, dict] = {}
        renamed: dict[str, str] = {}
        cont: dict = {}
        seen: list[dict] = []
        while True:
            answer = self._get({**params, **cont})
            query = answer.get("query")
            self._shape("imageinfo", isinstance(query, dict) and _imageinfo_shaped(query)
                        and isinstance(answer.get("continue", {}), dict))
            for key in ("normalized", "redirects"):
                for n in query.get(key) or []:
                    renamed[n["from"]] = n["to"]
            for page in query["pages"]:
                merged = pages.setdefault(page["title"], {})
                infos = merged.get("imageinfo", []) + (page.get("imageinfo") or [])
                merged.update(page)
                if infos:
                    merged["imageinfo"] = infos
            cont = {k: str(v) for k, v in (answer.get("continue") or {}).items()}
            if not cont:
                break
            self._shape("continued imageinfo", cont not in seen and len(seen) < len(titles))
            seen.append(cont)
        return {title: self._describe(title, renamed, pages) for title in titles}

    def _describe(self, title: str, renamed: dict[str, str], pages: dict[str, dict]) -> CommonsFile | str:
        final = title
        for _ in range(MAX_RENAMES + 1):  # a chain of MAX_RENAMES renames, then the check that ends it
            if renamed.get(final, final) == final:
                break
            final = renamed[final]
        else:
            return f"its renames on Commons form a cycle or a chain of more than {MAX_RENAMES}"
        page = pages.get(final)
        if page is None:
            return "no answer from Commons for this title"
        if page.get("invalid"):
            return f"not a valid file name ({_text(str(page.get('invalidreason'))) or 'invalid title'})"
        if page.get("missing") and not page.get("imageinfo"):
            return "not on Commons (no such file)"
        if not page.get("imageinfo"):
            return "Commons has no image information for it"
        try:
            return _file(page, page["imageinfo"][0])
        except (KeyError, TypeError, ValueError):
            return "Commons answered incomplete image information"


def _imageinfo_shaped(query: dict) -> bool:
    """Whether an imageinfo answer's ``query`` has the shape the API gives: a list of pages (mappings with a string
    title, ``imageinfo`` a list of mappings when present) and renames as lists of {from, to} strings."""
    pages = query.get("pages")
    return (isinstance(pages, list)
            and all(isinstance(p, dict) and isinstance(p.get("title"), str) and isinstance(p.get("imageinfo", []), list)
                    and all(isinstance(i, dict) for i in p.get("imageinfo", [])) for p in pages)
            and all(isinstance(query.get(key, []), list)
                    and all(isinstance(n, dict) and isinstance(n.get("from"), str) and isinstance(n.get("to"), str)
                            for n in query.get(key, []))
                    for key in ("normalized", "redirects")))


class _SameHostOnly(urllib.request.HTTPRedirectHandler):
    """Follow a redirect only to the same scheme and host (and port); any other is refused."""

    def redirect_request(self, req, fp, code, msg, headers, newurl):
        old, new = urllib.parse.urlsplit(req.full_url), urllib.parse.urlsplit(newurl)
        if (old.scheme, old.netloc) != (new.scheme, new.netloc):
            raise Rejected(f"download failed (redirect to another site refused: {newurl})")
        return super().redirect_request(req, fp, code, msg, headers, newurl)


_OPENER = urllib.request.build_opener(_SameHostOnly)


@dataclass(frozen=True)
class Downloaded:
    data: bytes
    content_type: str


def download(url: str, *, user_agent: str, max_bytes: int, timeout: float = 30.0, retries: int = 3,
             backoff: float = 1.0, sleep: Callable[[float], None] = time.sleep,
             deadline: float | None = None) -> Downloaded:
    """The bytes at ``url`` (at most ``max_bytes``), or :class:`Rejected` with the reason. Every attempt together
    ends within :data:`FILE_SECONDS` (and by ``deadline``, a ``time.monotonic()`` value: the run's limit), plus
    one socket timeout, however slowly the server sends."""
    if urllib.parse.urlsplit(url).scheme not in ("http", "https"):
        raise Rejected(f"download failed (not an http(s) URL: {url})")
    request = urllib.request.Request(url, headers={"User-Agent": user_agent})
    ends = min(time.monotonic() + FILE_SECONDS, deadline if deadline is not None else float("inf"))

    def attempt() -> Downloaded:
        with open_by(_OPENER.open, request, timeout=timeout, deadline=ends) as response:
            declared = response.headers.get("Content-Length")
            if declared and declared.isdigit() and int(declared) > max_bytes:
                raise Rejected(f"too large ({int(declared):,} bytes; the limit is {max_bytes:,})")
            data = read_body(response, max_bytes=max_bytes, deadline=ends)
            if len(data) > max_bytes:
                raise Rejected(f"too large (more than {max_bytes:,} bytes)")
            return Downloaded(data, response.headers.get("Content-Type") or "")

    try:
        return with_retries(attempt, retries=retries, backoff=backoff, sleep=sleep,
                            transient=lambda exc: not isinstance(exc, Rejected) and is_transient(exc))
    except Rejected:
        raise
    except DeadlinePassed as exc:
        raise Rejected(f"download failed (the server was {exc})") from None
    except urllib.error.HTTPError as exc:
        tries = f" after {retries + 1} attempts" if is_transient(exc) else ""
        raise Rejected(f"download failed (HTTP {exc.code}{tries})") from None
    except (urllib.error.URLError, TimeoutError, ConnectionError, http.client.HTTPException, OSError) as exc:
        reason = getattr(exc, "reason", None) or exc.__class__.__name__
        raise Rejected(f"download failed ({reason} after {retries + 1} attempts)") from None
