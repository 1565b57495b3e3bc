"""Writing the site: pages through Jinja (autoescaped), every table with its CSV and JSON download, plots.

Safety: Jinja autoescapes every template, pages carry a Content-Security-Policy that allows only the site's own
files, scripts are files (no inline script, style or event handler), external links (model and paper pages) are
plain anchors with ``rel="noopener noreferrer"``, and a downloaded CSV cell that a spreadsheet would run as a
formula gets a leading apostrophe. The same inputs give the same bytes.

A build given the previous site reuses each of its files that holds the very bytes it would write (compared
byte for byte): a hard link, so nothing is written, and nothing is freed when the previous site is removed. A page
is not even rendered, nor a table's downloads made, when the previous build recorded the same key for it (a hash
of everything its bytes depend on: :meth:`Site.page_key`, :meth:`Site.table`) in its :data:`MANIFEST` and its
file there still holds the bytes recorded beside the key.
"""

from __future__ import annotations

import csv
import dataclasses
import gzip
import hashlib
import importlib.metadata
import importlib.util
import io
import json
import operator
import os
import pickle
import re
import stat
import sys
import types
import unicodedata
from dataclasses import dataclass, field
from pathlib import Path

import jinja2

from . import cells
from .load import Result
from .names import STANDIN, caveat, direction_text, link, num, pct

HERE = Path(__file__).parent
#: What a build records of each page and table download it made, {path: [key, sha256 of the file's bytes]}: the
#: next build into the same folder links a file whose key is unchanged instead of making it again.
MANIFEST = "cache/pages.json"
#: The libraries that render a page or format its values (their versions are part of every page's key).
LIBRARIES = ("jinja2", "markupsafe", "numpy", "pandas", "pyarrow")
#: A result's fields that take part in its equality (its lazily built index is a cache of the others).
_COMPARED = operator.attrgetter(*(f.name for f in dataclasses.fields(Result) if f.compare))
CSP = ("default-src 'none'; img-src 'self' data:; style-src 'self'; script-src 'self'; base-uri 'none'; "
       "form-action 'none'")


@dataclass
class Column:
    key: str
    label: str
    kind: str  # text | link | rank | score | range | num | pct | notes (explanations) | thumb (not downloaded)
    title: str = ""
    better: str | None = None  # "higher" or "lower": the first click on the header puts the best first
    target: float | None = None  # a score column of a target metric: sorted by |value - target| (better "lower")
    badges: list[dict] = field(default_factory=list)  # [{label, title}] shown in the header (a flagged metric)
    muted: bool = False  # the column's metric is only a diagnostic here: greyed
    hidden: bool = False  # in the downloads only (e.g. an image's sha256 in the image browser)
    sticky: bool = False  # stays in view while the table scrolls sideways (a row's name, the headline)
    href: str | None = None  # a metric column: its metric page; the header links it and the trust page


@dataclass
class Table:
    id: str
    columns: list[Column]
    rows: list[dict]  # column key -> value; "_marks": {key: [{label, title}]}, "_control": kind of a control row
    csv: str  # site-relative paths of the downloads
    json: str | None
    partial: bool = False  # the downloads hold more rows than this table (image browser pages)
    filters: bool = False  # a leaderboard: filters by weights, release date and size (static/filters.js)
    caption: str = ""


@dataclass
class Site:
    """Writes pages and their tables' downloads into the (temporary) output folder."""

    root: Path
    globals: dict = field(default_factory=dict)
    previous: Path | None = None  # the site this build replaces: its unchanged files are linked, not written

    def __post_init__(self):
        self.env = jinja2.Environment(loader=jinja2.FileSystemLoader(HERE / "templates"), autoescape=True,
                                      undefined=jinja2.StrictUndefined, trim_blocks=True, lstrip_blocks=True)
        self.env.filters.update(num=num, pct=pct, direction=direction_text)
        self.env.globals.update(csp=CSP, caveat=caveat, link=link, table_head=cells.head, table_body=cells.body, image_list=cells.image_list,
                                standin_mark=STANDIN, **self.globals)
        self.sizes: dict[str, int] = {}
        self.keys: dict[str, list[str]] = {}  # path -> [key, sha256 of its bytes]: this build's MANIFEST
        self._folders: set[Path] = set()
        self._code = code_digest([HERE, *_other_sources()])
        self._results: dict[int, tuple[tuple, str | None]] = {}  # id(Result) -> (its field values, digest)
        recorded = self.previous is not None and _json(self._previous(MANIFEST))
        self._recorded = recorded if isinstance(recorded, dict) else {}  # the previous build's MANIFEST

    def page(self, path: str, template: str, title: str, **context) -> None:
        """Render ``template`` as ``path``, or link the previous site's page when the previous build recorded this
        page's key for it and its file still holds the bytes recorded beside the key."""
        key = self.page_key(path, template, title, context)
        sizes = self._linked([path], key)
        if sizes:
            self.sizes[path] = sizes[0]
        else:
            html = self.env.get_template(template).render(root="../" * path.count("/"), path=path, title=title,
                                                          **context)
            self.sizes[path] = self._put_keyed(path, html, key)

    def page_key(self, path: str, template: str, title: str, context: dict) -> str | None:
        """The sha256 of everything a page's bytes depend on: the source of the templates and of the code they call
        (:func:`code_digest`), the Jinja globals at render time (they hold data: ``galleries`` is set after the
        Site is made; the filters are code), the path, template, title and context, pickled (:class:`_KeyPickler`).
        None when a value cannot be pickled: the page is then rendered."""
        return self._key("page", self.env.globals, path, template, title, context)

    def finish(self) -> None:
        """Write :data:`MANIFEST` (call it once, after the last page)."""
        self.write(MANIFEST, json.dumps(self.keys, sort_keys=True, indent=0) + "\n")

    def _key(self, *values) -> str | None:
        """The sha256 of the code digest and ``values``, pickled by :class:`_KeyPickler`; None when they cannot be."""
        buffer = io.BytesIO()
        try:
            _KeyPickler(buffer, self).dump((self._code, *values))
        except (pickle.PicklingError, TypeError, ValueError, AttributeError, RecursionError):
            return None  # an object pickle cannot write (a generator, a lock), or a cycle
        return _sha256(buffer.getvalue())

    def _linked(self, paths: list[str], key: str | None) -> list[int] | None:
        """Link the previous site's ``paths`` into this build when the previous build recorded ``key`` for each and
        each file still holds the bytes recorded beside the key (all or none); returns their sizes, else None."""
        entries = [self._recorded.get(path) for path in paths]
        if key is None or not all(isinstance(entry, list) and entry[:1] == [key] for entry in entries):
            return None
        found = [self._previous(path) for path in paths]
        if not all(data is not None and entry == [key, _sha256(data)] for data, entry in zip(found, entries)):
            return None
        linked = []
        for path in paths:
            target = self._target(path)
            if not self._link(path, target):
                for made in linked:  # never write into a file linked to the previous site's
                    made.unlink()
                return None
            linked.append(target)
        self.keys.update(zip(paths, entries))
        return [len(data) for data in found]

    def _put_keyed(self, path: str, text: str | bytes, key: str | None) -> int:
        """:meth:`write` (text as UTF-8), recording ``key`` and the bytes' sha256 for the next build."""
        data = text.encode("utf-8") if isinstance(text, str) else text
        if key is not None:
            self.keys[path] = [key, _sha256(data)]
        return self._put(path, data)

    def result_digest(self, r: Result) -> str | None:
        """The sha256 of ``r``'s fields that take part in its equality (not its lazily built index; None when they
        cannot be pickled), made once a build: a result is loaded before the pages and no page changes it in
        place; a field set anew (another object) is noticed and the digest made again."""
        values = _COMPARED(r)
        known = self._results.get(id(r))
        if known is None or not all(map(operator.is_, known[0], values)):
            known = self._results[id(r)] = (values, self._key(values))
        return known[1]

    def table(self, page: str, name: str, columns: list[Column], rows: list[dict], caption: str = "",
              compact: bool = False) -> Table:
        """A table of ``page``, with its downloads written to data/<page>-<name>.csv and .json, or linked from the
        previous site when the previous build recorded the same key for them (the code, ``page``, ``name``,
        ``columns``, ``rows`` and whether the site carries the stand-in banner: all that :func:`_downloads`
        reads). ``compact``: the CSV alone, gzipped (``.csv.gz``, with no name or time in its header): a table of
        every image, whose two plain downloads at 1,000 submissions would be a third of the site."""
        stem = f"data/{page.removesuffix('.html').replace('/', '-')}-{name}"
        files = [stem + ".csv.gz"] if compact else [stem + ".csv", stem + ".json"]
        standin = bool((self.globals.get("banner") or {}).get("count"))
        key = self._key("table", page, name, columns, rows, standin, compact)
        if not self._linked(files, key):
            texts = _downloads(page, name, columns, rows, standin)
            if compact:
                self._put_keyed(files[0], gzip.compress(texts[0].encode("utf-8"), mtime=0), key)
            else:
                for path, text in zip(files, texts):
                    self._put_keyed(path, text, key)
        return Table(name, [c for c in columns if not c.hidden], rows, files[0],
                     None if compact else files[1], caption=caption)

    def plot(self, page: str, name: str, svg: str) -> str:
        path = f"plots/{page.removesuffix('.html').replace('/', '-')}-{name}.svg"
        self.write(path, svg)
        return path

    def write(self, path: str, text: str) -> int:
        """Write ``text`` as UTF-8 to ``path`` (site-relative), or link the previous site's file of these very bytes;
        returns the size in bytes."""
        return self._put(path, text.encode("utf-8"))

    def write_bytes(self, path: str, data: bytes) -> int:
        """Write ``data`` to ``path`` (site-relative), or link the previous site's file of these very bytes; returns
        the size in bytes."""
        return self._put(path, data)

    def _put(self, path: str, data: bytes) -> int:
        target = self._target(path)
        if not (self._previous(path, len(data)) == data and self._link(path, target)):
            with open(target, "wb") as fh:
                fh.write(data)
        return len(data)

    def _target(self, path: str) -> Path:
        """Where ``path`` goes in this build, its folder made."""
        target = self.root / path
        if target.parent not in self._folders:
            target.parent.mkdir(parents=True, exist_ok=True)
            self._folders.add(target.parent)
        return target

    def _previous(self, path: str, size: int | None = None) -> bytes | None:
        """The bytes of the previous site's ``path`` when it is a regular file (never read through a link), of
        ``size`` bytes when given; else None."""
        if self.previous is None:
            return None
        try:
            fd = os.open(self.previous / path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
        except OSError:
            return None
        try:
            st = os.fstat(fd)
            if not stat.S_ISREG(st.st_mode) or size not in (None, st.st_size):
                return None
            with open(fd, "rb", closefd=False) as fh:
                return fh.read()
        except OSError:
            return None
        finally:
            os.close(fd)

    def _link(self, path: str, target: Path) -> bool:
        """Hard-link the previous site's ``path`` as ``target`` (never through a link)."""
        try:
            os.link(self.previous / path, target, follow_symlinks=False)
        except OSError:  # e.g. another file system: written instead
            return False
        return True


def code_digest(folders: list[Path]) -> str:
    """The sha256 of every file under ``folders`` (by its path in its folder; bytecode caches left out), of the
    Python version and of the :data:`LIBRARIES`' versions: the code that turns a page's context into its bytes."""
    digest = hashlib.sha256(json.dumps([sys.version, *(importlib.metadata.version(n) for n in LIBRARIES)]).encode())
    for k, folder in enumerate(folders):
        for file in sorted(p for p in folder.rglob("*") if "__pycache__" not in p.parts and p.is_file()):
            data = file.read_bytes()
            digest.update(f"\n{k} {file.relative_to(folder).as_posix()} {len(data)}\n".encode())
            digest.update(data)
    return digest.hexdigest()


def _other_sources() -> list[Path]:
    """The folders of cultureboard's other packages, whose code the site's filters, globals and shown objects call
    (the whole of it: what a page calls is not known in advance)."""
    return [Path(p) for name in ("cultureboard", "cultureboard.builder", "cultureboard.evaluators")
            for p in importlib.util.find_spec(name).submodule_search_locations]


class _KeyPickler(pickle.Pickler):
    """Pickles the inputs of a page for its key. Pickle writes what it takes to rebuild each value (text and
    ``Markup``, tuples and lists, a dict's order, a float's every bit, a dataclass's fields, a data frame's blocks
    and index), and classes and named functions by their module and name (their source is in the key); here a
    function is written with its line and the values it holds (defaults, closure), and a :class:`.load.Result`
    (a submission's data, shown on many pages) as its :meth:`Site.result_digest`. A set is written in its
    iteration order, which for text changes from one run to the next: a page given a set of text is rendered
    again (never served stale)."""

    def __init__(self, file, site: Site):
        super().__init__(file, protocol=5)
        self.fast = True  # every value written whole, never as a reference to an earlier one: the bytes depend on
        self.site = site  # the values alone, not on which of them happen to be one object (a cycle is refused)

    def reducer_override(self, value):
        if isinstance(value, Result):
            digest = self.site.result_digest(value)
            if digest is None:
                raise pickle.PicklingError(f"result {value.sid} cannot be pickled")
            return tuple, (("Result", digest),)
        if isinstance(value, types.FunctionType):
            return tuple, (("function", value.__module__, value.__qualname__, value.__code__.co_firstlineno,
                            value.__defaults__, value.__kwdefaults__,
                            tuple(c.cell_contents for c in value.__closure__ or ())),)
        return NotImplemented


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _json(data: bytes | None):
    """``data`` parsed as JSON; None when there is none or it is not JSON (nested too deep for the parser too)."""
    try:
        return None if data is None else json.loads(data)
    except (ValueError, RecursionError):
        return None


def _downloads(page: str, name: str, columns: list[Column], rows: list[dict], standin: bool) -> tuple[str, str]:
    """A table's CSV and JSON downloads: its rows flattened (:func:`_flatten`) with their provenance."""
    flat = [_flatten(columns, row) | _provenance(columns, row, standin) for row in rows]
    keys = (list(flat[0]) if flat else
            [c.key for c in columns if c.kind != "thumb"] + list(_provenance([], {}, standin)))
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(keys)
    writer.writerows([csv_cell(row[k]) for k in keys] for row in flat)
    return buffer.getvalue(), json.dumps({"page": page, "table": name, "columns": keys, "rows": flat},
                                         ensure_ascii=False, allow_nan=False) + "\n"


def _flatten(columns: list[Column], row: dict) -> dict:
    """A table row as plain values: a score becomes value, CI, n, coverage, caveat and badge columns; a rank its
    range; a rank spread its width, ends and badges."""
    flat: dict = {}
    marks = row.get("_marks") or {}
    for c in columns:
        v = row[c.key]
        if c.kind == "link":
            flat[c.key] = v and v["text"]
        elif c.kind == "rank":
            flat |= {f"{c.key}_best": v and v["best"], f"{c.key}_worst": v and v["worst"]}
        elif c.kind == "score":
            note = v and caveat(v)
            flat |= {c.key: v and v["value"], f"{c.key}_ci_low": v and v["ci_low"], f"{c.key}_ci_high": v and v["ci_high"],
                     f"{c.key}_n_images": v and v["n_images"], f"{c.key}_n_prompts": v and v["n_prompts"],
                     f"{c.key}_coverage": v and v.get("coverage"), f"{c.key}_caveat": note and note["title"],
                     f"{c.key}_badges": "; ".join(m["title"] for m in marks.get(c.key, ())) or None}
        elif c.kind == "range":
            flat |= {c.key: v and v["value"], f"{c.key}_best_rank": v and v["best"][1],
                     f"{c.key}_best_metric": v and v["best"][0], f"{c.key}_worst_rank": v and v["worst"][1],
                     f"{c.key}_worst_metric": v and v["worst"][0],
                     f"{c.key}_badges": "; ".join(m["title"] for m in marks.get(c.key, ())) or None}
        elif c.kind == "notes":
            flat[c.key] = json.dumps(v, ensure_ascii=False, sort_keys=True) if v else None
        elif c.kind != "thumb":
            flat[c.key] = v
    return flat


def _provenance(columns: list[Column], row: dict, site_standin: bool) -> dict:
    """What every downloaded row carries so that it cannot be taken for real scores out of context:
    ``stand_in`` (its scores come from tiny random stand-in scorers; a row without a score cell says whether any
    result of the build does), ``control`` (the control's kind, or empty), ``badges`` (every mark's label on the
    row), ``metric_version`` (``metric=version`` of each score cell, as its provenance recorded it), who generated
    the images and who scored them (``generated_by``, ``scored_by``: site/load.py ``made_by``; empty on a row that
    is no submission's) and the submission that replaces it (``superseded_by``, empty when none)."""
    scores = [row[c.key] for c in columns if c.kind == "score" and row[c.key]]
    versions = sorted({f"{e['metric']}={e['metric_version']}" for e in scores if "metric_version" in e})
    marks = [m["label"] for key in sorted(row.get("_marks") or {}) for m in row["_marks"][key]]
    return {"stand_in": any(e.get("standin") for e in scores) if scores else site_standin,
            "control": row.get("_control") or "", "badges": "; ".join(dict.fromkeys(marks)),
            "metric_version": "; ".join(versions), "generated_by": row.get("_generated_by") or "",
            "scored_by": row.get("_scored_by") or "", "superseded_by": row.get("_superseded_by") or ""}


_NUMBER = re.compile(r"[+-]?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?\*?")


def csv_cell(value):
    """Text that a spreadsheet would run as a formula gets a leading apostrophe (CSV injection): text that starts
    with a tab, a carriage return or a line feed, or whose first character after any leading whitespace, in its
    NFKC form (full-width ＝ ＋ － ＠ are = + - @), is = + - or @. A plain signed number such as a paper's printed
    "-0.1078" is left as it is."""
    if not isinstance(value, str):
        return value
    head = unicodedata.normalize("NFKC", value).lstrip()
    if value[:1] in ("\t", "\r", "\n") or (head[:1] in ("=", "+", "-", "@") and not _NUMBER.fullmatch(value)):
        return "'" + value
    return value
