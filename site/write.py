"""Writing the site: pages through Jinja (autoescaped), every table with its CSV and JSON download, plots.

Safety: Jinja autoescapes every template, pages carry a Content-Security-Policy that allows only the site's own
files, scripts are files (no inline script, style or event handler), external links (model and paper pages) are
plain anchors with ``rel="noopener noreferrer"``, and a downloaded CSV cell that a spreadsheet would run as a
formula gets a leading apostrophe. The same inputs give the same bytes.

A build given the previous site reuses each of its files that holds the very bytes it would write (compared
byte for byte): a hard link, so nothing is written, and nothing is freed when the previous site is removed.
"""

from __future__ import annotations

import csv
import io
import json
import os
import re
import stat
import unicodedata
from dataclasses import dataclass, field
from pathlib import Path

import jinja2

from . import cells
from .names import caveat, direction_text, link, num, pct

HERE = Path(__file__).parent
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
    json: str
    partial: bool = False  # the downloads hold more rows than this table (image browser pages)
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
                                **self.globals)
        self.sizes: dict[str, int] = {}
        self._folders: set[Path] = set()

    def page(self, path: str, template: str, title: str, **context) -> None:
        html = self.env.get_template(template).render(root="../" * path.count("/"), path=path, title=title, **context)
        self.sizes[path] = self.write(path, html)

    def table(self, page: str, name: str, columns: list[Column], rows: list[dict], caption: str = "") -> Table:
        """A table of ``page``, with its downloads written to data/<page>-<name>.csv and .json."""
        stem = f"data/{page.removesuffix('.html').replace('/', '-')}-{name}"
        standin = bool(self.globals.get("banner"))
        flat = [_flatten(columns, row) | _provenance(columns, row, standin) for row in rows]
        keys = (list(flat[0]) if flat else
                [c.key for c in columns if c.kind != "thumb"] + list(_provenance([], {}, standin)))
        buffer = io.StringIO()
        writer = csv.writer(buffer, lineterminator="\n")
        writer.writerow(keys)
        writer.writerows([_csv_cell(row[k]) for k in keys] for row in flat)
        self.write(stem + ".csv", buffer.getvalue())
        self.write(stem + ".json", json.dumps({"page": page, "table": name, "columns": keys, "rows": flat},
                                              ensure_ascii=False, allow_nan=False) + "\n")
        return Table(name, [c for c in columns if not c.hidden], rows, stem + ".csv", stem + ".json", caption=caption)

    def plot(self, page: str, name: str, svg: str) -> str:
        path = f"plots/{page.removesuffix('.html').replace('/', '-')}-{name}.svg"
        self.write(path, svg)
        return path

    def write(self, path: str, text: str) -> int:
        """Write ``text`` as UTF-8 to ``path`` (site-relative), or link the previous site's file of these very bytes;
        returns the size in bytes."""
        data = text.encode("utf-8")
        target = self.root / path
        if target.parent not in self._folders:
            target.parent.mkdir(parents=True, exist_ok=True)
            self._folders.add(target.parent)
        if not (self.previous is not None and self._reuse(path, data, target)):
            with open(target, "wb") as fh:
                fh.write(data)
        return len(data)

    def _reuse(self, path: str, data: bytes, target: Path) -> bool:
        """Link the previous site's ``path`` as ``target`` when it is a regular file (never through a link) holding
        ``data``."""
        source = self.previous / path
        try:
            fd = os.open(source, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
        except OSError:
            return False
        try:
            st = os.fstat(fd)
            if not (stat.S_ISREG(st.st_mode) and st.st_size == len(data)):
                return False
            with open(fd, "rb", closefd=False) as fh:
                if fh.read(len(data) + 1) != data:
                    return False
            os.link(source, target, follow_symlinks=False)
        except OSError:  # e.g. another file system: written instead
            return False
        finally:
            os.close(fd)
        return True


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
    row) and ``metric_version`` (``metric=version`` of each score cell, as its provenance recorded it)."""
    scores = [row[c.key] for c in columns if c.kind == "score" and row[c.key]]
    versions = sorted({f"{e['metric']}={e['metric_version']}" for e in scores if "metric_version" in e})
    marks = [m["label"] for key in sorted(row.get("_marks") or {}) for m in row["_marks"][key]]
    return {"stand_in": any(e.get("standin") for e in scores) if scores else site_standin,
            "control": row.get("_control") or "", "badges": "; ".join(dict.fromkeys(marks)),
            "metric_version": "; ".join(versions)}


_NUMBER = re.compile(r"[+-]?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?\*?")


def _csv_cell(value):
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
