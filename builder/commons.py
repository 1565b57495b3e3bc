"""A small client of the Wikimedia Commons API (the MediaWiki action API) and of its file servers.

Two queries, both ``action=query&format=json&formatversion=2``:

- ``list=categorymembers&cmtype=file&cmtitle=Category:NAME&cmlimit=N``: the first N files of a category,
  in the category's sort order;
- ``prop=imageinfo&iiprop=url|size|sha1|mime|timestamp|extmetadata&titles=File:A|File:B...`` (at most 50
  titles a query, continued while the API says ``continue``), with ``iiurlwidth`` / ``iiurlheight`` so
  that Commons also names a thumbnail that fits a ``side`` x ``side`` box.

A file's licence is judged from its ``extmetadata`` (Extension:CommonsMetadata, filled from the licence
templates of the file page): see :func:`license_problem`. Author, credit and attribution arrive as HTML
and are kept as plain text (:func:`plain_text`).

Downloads (:func:`download`) follow redirects only within the same scheme and host, stop reading after
``max_bytes`` and are retried through :func:`cultureboard.http.with_retries`; every other failure is a
:class:`Rejected` with a one-line reason. API failures (unreachable, HTTP errors after the retries, an
answer that is not API JSON, an API ``error``) are a :class:`~cultureboard.errors.CultureboardError`:
without the API nothing can be listed, so the whole command stops.
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
from cultureboard.http import is_transient, with_retries

COMMONS_API = "https://commons.wikimedia.org/w/api.php"
#: Titles per imageinfo query: the API's limit for clients without the apihighlimits right.
TITLES_PER_QUERY = 50
#: The extmetadata fields read (``iiextmetadatafilter``): licence, author and attribution.
EXTMETADATA = ("LicenseShortName", "LicenseUrl", "License", "Artist", "Credit", "Attribution", "NonFree",
               "UsageTerms")
#: MIME types kept: the formats a reference image may have (as submissions: PNG, JPEG, WebP).
IMAGE_MIMES = frozenset({"image/jpeg", "image/png", "image/webp"})

# Licences that forbid commercial use or derivatives, or are not free at all (checked first).
_NOT_FREE = re.compile(r"(^|[^a-z])(nc|nd)([^a-z]|$)|non-?commercial|no-?deriv|fair[ -]use|non-?free|"
                       r"all rights reserved", re.IGNORECASE)
# The Commons licence templates that allow redistribution and modification (short name or licence code).
_FREE = re.compile(r"^\s*(cc0|cc[ -]zero|cc[ -]by(-sa)?([^a-z]|$)|public domain|pd([^a-z]|$)|pdm([^a-z]|$)|gfdl|"
                   r"gnu free documentation|fal([^a-z]|$)|free art licen[cs]e|licence art libre|lal([^a-z]|$)|l?gpl|"
                   r"ogl([^a-z]|$)|open government licen[cs]e|attribution([^a-z-]|$)|copyrighted free use)", re.IGNORECASE)


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
    non_free: bool  # NonFree: Commons marks the file as not free


class Rejected(Exception):
    """A candidate image that cannot be used; ``str()`` is the one-line reason."""


def license_problem(f: CommonsFile) -> str | None:
    """Why ``f``'s licence does not allow redistribution (None when it does).

    Free: CC0, public domain (marks and templates), CC BY and CC BY-SA (any version, ported or not), GFDL,
    Free Art Licence, GPL / LGPL, the UK Open Government Licence, Attribution and Copyrighted free use.
    Not free: anything NonFree, NC (non-commercial) or ND (no derivatives), fair use, and a licence that is
    missing or not on that list."""
    names = [n for n in (f.license, f.license_code) if n]
    if f.non_free:
        return f"non-free (Commons marks it NonFree{': ' + names[0] if names else ''})"
    if not names:
        return "no licence in its Commons metadata"
    if any(_NOT_FREE.search(n) for n in names):
        return f"non-free licence ({names[0]})"
    if not any(_FREE.match(n) for n in names):
        return f"licence not known to be free ({names[0]})"
    return None


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


def _meta(ext: dict, key: str) -> str | None:
    item = ext.get(key)
    value = item.get("value") if isinstance(item, dict) else None
    return None if value is None or value == "" else str(value)


def _file(page: dict, info: dict) -> CommonsFile:
    ext = info.get("extmetadata") or {}
    return CommonsFile(
        title=page["title"], url=info["url"], file_page=info.get("descriptionurl") or "",
        width=int(info["width"]), height=int(info["height"]), size=int(info["size"]), sha1=str(info["sha1"]).lower(),
        mime=str(info.get("mime") or ""), timestamp=str(info.get("timestamp") or ""),
        thumb_url=info.get("thumburl"), thumb_width=info.get("thumbwidth"), thumb_height=info.get("thumbheight"),
        license=plain_text(_meta(ext, "LicenseShortName")), license_code=_meta(ext, "License"),
        license_url=_meta(ext, "LicenseUrl"), author=plain_text(_meta(ext, "Artist")),
        credit=plain_text(_meta(ext, "Credit")), attribution=plain_text(_meta(ext, "Attribution")),
        non_free=str(_meta(ext, "NonFree") or "").strip().lower() in ("true", "1", "yes"),
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

    def _get(self, params: dict) -> dict:
        query = urllib.parse.urlencode({**params, "format": "json", "formatversion": "2"})
        request = urllib.request.Request(f"{self.url}?{query}", headers={"User-Agent": self.user_agent,
                                                                          "Accept": "application/json"})

        def attempt() -> bytes:
            with urllib.request.urlopen(request, timeout=self.timeout) as response:
                return response.read()

        fix = f"check --commons-api (it must be a MediaWiki API endpoint such as {COMMONS_API}) and the network"
        try:
            body = with_retries(attempt, retries=self.retries, backoff=self.backoff, sleep=self.sleep)
        except urllib.error.HTTPError as exc:
            raise CultureboardError(f"--commons-api {self.url}", f"answered HTTP {exc.code} ({exc.reason})", fix) from None
        except (urllib.error.URLError, TimeoutError, ConnectionError, http.client.HTTPException) as exc:
            raise CultureboardError(f"--commons-api {self.url}", f"is unreachable ({getattr(exc, 'reason', exc)})",
                                    fix) from None
        self.queries += 1
        try:
            answer = json.loads(body)
        except ValueError:
            answer = None
        if not isinstance(answer, dict):
            raise CultureboardError(f"--commons-api {self.url}", "did not answer with MediaWiki API JSON", fix)
        if "error" in answer:
            err = answer["error"] if isinstance(answer["error"], dict) else {}
            raise CultureboardError(f"--commons-api {self.url}",
                                    f"refused a query ({err.get('code', '?')}: {err.get('info', '')})", fix)
        return answer

    def category_files(self, category: str, limit: int) -> list[str]:
        """Titles of the first ``limit`` files of ``category`` (at most 500), in the category's order;
        an empty list when the category has none or does not exist."""
        answer = self._get({"action": "query", "list": "categorymembers", "cmtitle": category_title(category),
                            "cmtype": "file", "cmlimit": str(max(1, min(limit, 500)))})
        members = (answer.get("query") or {}).get("categorymembers") or []
        return [m["title"] for m in members if isinstance(m, dict) and m.get("ns") == 6 and m.get("title")][:limit]

    def files(self, titles: list[str], side: int) -> dict[str, CommonsFile | str]:
        """For each requested title, its :class:`CommonsFile` or the reason there is none (missing,
        invalid title, no image information); ``side`` is the box the thumbnail URL fits in."""
        out: dict[str, CommonsFile | str] = {}
        unique = list(dict.fromkeys(titles))
        for i in range(0, len(unique), TITLES_PER_QUERY):
            out.update(self._files_batch(unique[i:i + TITLES_PER_QUERY], side))
        return out

    def _files_batch(self, titles: list[str], side: int) -> dict[str, CommonsFile | str]:
        params = {"action": "query", "prop": "imageinfo", "titles": "|".join(titles),
                  "iiprop": "url|size|sha1|mime|timestamp|extmetadata", "iiurlwidth": str(side),
                  "iiurlheight": str(side), "iiextmetadatafilter": "|".join(EXTMETADATA),
                  "iiextmetadatalanguage": "en"}
        pages: dict[str, dict] = {}
        renamed: dict[str, str] = {}
        cont: dict = {}
        for _ in range(len(titles) + 1):  # each continuation completes at least one file
            answer = self._get({**params, **cont})
            query = answer.get("query") or {}
            for key in ("normalized", "redirects"):
                for n in query.get(key) or []:
                    renamed[n["from"]] = n["to"]
            for page in query.get("pages") or []:
                merged = pages.setdefault(page.get("title"), {})
                infos = merged.get("imageinfo", []) + (page.get("imageinfo") or [])
                merged.update(page)
                if infos:
                    merged["imageinfo"] = infos
            cont = {k: v for k, v in (answer.get("continue") or {}).items()}
            if not cont:
                break
        out: dict[str, CommonsFile | str] = {}
        for title in titles:
            final = title
            while final in renamed and renamed[final] != final:
                final = renamed[final]
            page = pages.get(final)
            if page is None:
                out[title] = "no answer from Commons for this title"
            elif page.get("invalid"):
                out[title] = f"not a valid file name ({page.get('invalidreason', 'invalid title')})"
            elif page.get("missing") and not page.get("imageinfo"):
                out[title] = "not on Commons (no such file)"
            elif not page.get("imageinfo"):
                out[title] = "Commons has no image information for it"
            else:
                try:
                    out[title] = _file(page, page["imageinfo"][0])
                except (KeyError, TypeError, ValueError):
                    out[title] = "Commons answered incomplete image information"
        return out


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
             backoff: float = 1.0, sleep: Callable[[float], None] = time.sleep) -> Downloaded:
    """The bytes at ``url`` (at most ``max_bytes``), or :class:`Rejected` with the reason."""
    if urllib.parse.urlsplit(url).scheme not in ("http", "https"):
        raise Rejected(f"download failed (not an http(s) URL: {url})")
    request = urllib.request.Request(url, headers={"User-Agent": user_agent})

    def attempt() -> Downloaded:
        with _OPENER.open(request, timeout=timeout) as response:
            declared = response.headers.get("Content-Length")
            if declared and declared.isdigit() and int(declared) > max_bytes:
                raise Rejected(f"too large ({int(declared):,} bytes; the limit is {max_bytes:,})")
            data = response.read(max_bytes + 1)
            if len(data) > max_bytes:
                raise Rejected(f"too large (more than {max_bytes:,} bytes)")
            return Downloaded(data, response.headers.get("Content-Type") or "")

    try:
        return with_retries(attempt, retries=retries, backoff=backoff, sleep=sleep,
                            transient=lambda exc: not isinstance(exc, Rejected) and is_transient(exc))
    except Rejected:
        raise
    except urllib.error.HTTPError as exc:
        tries = f" after {retries + 1} attempts" if is_transient(exc) else ""
        raise Rejected(f"download failed (HTTP {exc.code}{tries})") from None
    except (urllib.error.URLError, TimeoutError, ConnectionError, http.client.HTTPException, OSError) as exc:
        reason = getattr(exc, "reason", None) or exc.__class__.__name__
        raise Rejected(f"download failed ({reason} after {retries + 1} attempts)") from None
