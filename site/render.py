"""``cultureboard site build``: render the static leaderboard site from results, submissions and the dataset.

Layout of the output folder (every link is relative, so the site works opened from ``file://`` as well as
served; no page requests anything from another site)::

    index.html                        overview: per benchmark, one row per submission
    slices.html                       every slice page, by type
    country/<ISO>.html                one page per country,
    region/<slug>.html                per region group (gn, gs) and continent,
    era/<slug>.html                   per era,
    category/<slug>.html              per category: models ranked on that slice
    model/<id>.html                   model card, provenance, per-slice table
    model/<id>/images-<n>.html        image browser, ``page_size`` images a page, with prompts and scores
    metrics.html, metric/<name>.html  metric cards, leaderboards, correlation with human ratings
    data/<page>-<table>.csv|.json     every table of every page
    plots/<page>-<plot>.svg           heatmap model x country, Global North - South gap, per-era bars
    thumbs/<id>/<sha256>.webp         thumbnails, longer side ``thumb_px``
    static/style.css, static/app.js   table sorting and filtering (vanilla JS, no network access)

Comparability (DESIGN principle 6): the submissions of a prompt set are split into groups that share the
dataset revision, every scorer's checkpoint, revision and preprocessing, and the evaluator's settings (seed
and bootstrap count excepted); ranks are computed within a group only, and a page showing several groups of
one prompt set says what sets each apart.

Uncertainty (principle 4): every number is shown with its 95% CI, n images and n prompts; ranks are
ranges from :func:`cultureboard.evaluators.results.stats.rank_ties` (overlapping CIs are ties); a slice entry with
fewer than :data:`MIN_PROMPTS` prompts or an incomplete coverage carries a visible "too little data" badge,
and one with fewer prompts is not ranked.

Safety: Jinja autoescapes every template, pages carry a Content-Security-Policy that allows only the
site's own files, scripts are files (no inline script or event handler), and external links (model and
paper pages) are plain anchors with ``rel="noopener noreferrer"``; only http(s) links are linked.
"""

from __future__ import annotations

import csv
import dataclasses
import io
import json
import math
import os
import re
import shutil
import stat
import time
from collections import defaultdict
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlparse

import jinja2
import numpy as np
import pandas as pd
from cultureboard.evaluators.results.aggregate import SLICE_TYPES
from cultureboard.evaluators.engine.registry import family_of, load_families
from cultureboard.evaluators.results.stats import rank_ties
from cultureboard.evaluators.submission.format import (
    FIELDS,
    MAX_SUBMISSION_ID,
    METADATA,
    SUBMISSION_YAML,
    get,
    parse_location,
    read_metadata,
    read_spec,
)

from cultureboard.atomic import atomic_dir, check_replaceable, output_folders
from cultureboard.countries import load_countries
from cultureboard.dataset_folder import read_prompt_set
from cultureboard.errors import CultureboardError
from cultureboard.images import open_rgb
from cultureboard.naming import slug

from . import plots

HERE = Path(__file__).parent
CSP = ("default-src 'none'; img-src 'self' data:; style-src 'self'; script-src 'self'; base-uri 'none'; "
       "form-action 'none'")
#: A slice entry with fewer prompts than this gets the "too little data" badge and is not ranked.
MIN_PROMPTS = 5
#: slice type -> folder of its pages.
SLICE_FOLDERS = {"country": "country", "region_group": "region", "continent": "region", "era": "era",
                 "category": "category"}
SLICE_LABELS = {"overall": "Overall", "country": "Country", "region_group": "Region group", "continent": "Continent",
                "era": "Era", "category": "Category"}
REGION_NAMES = {"GN": "Global North", "GS": "Global South"}
ERA_ORDER = ("ancient", "medieval", "early modern", "modern", "contemporary", "traditional", "general")
THUMB = {"format": "WEBP", "quality": 80, "method": 2}  # method 2: near the speed of 0, files near the size of 4
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")  # submission ids and metric names, used in paths
_SHA256 = re.compile(r"[0-9a-f]{64}")


@dataclass
class Result:
    """One submission's results, its submission.yaml and metadata.jsonl."""

    sid: str
    summary: dict
    scores: pd.DataFrame
    spec: dict
    folder: Path  # the submission folder
    images: list[dict]  # metadata.jsonl rows, by prompt and sample
    entries: dict[tuple[str, str, str], dict]  # (metric, slice type, slice) -> summary entry

    @property
    def prompt_set(self) -> str:
        return self.summary["provenance"]["prompt_set"]

    def comparability(self) -> tuple[tuple[str, str], ...]:
        """What must be equal for two results to be ranked together, as (label, value) pairs."""
        p = self.summary["provenance"]
        key = [("prompt set", p["prompt_set"]), ("dataset revision", p["dataset"]["revision"]),
               ("reference images revision", str(p["dataset"].get("references_revision"))), ("dtype", p["dtype"])]
        for s in p["scorers"]:
            key += [(f"scorer {s['name']}", f"{s['model_id']} @ {s['revision']}"),
                    (f"scorer {s['name']} preprocessing", str(s.get("preprocessing")))]
        key += [(f"metric {m} version", str(v)) for m, v in sorted(p.get("metrics", {}).items())]
        key += [(f"option {k}", json.dumps(v)) for k, v in sorted(p.get("options", {}).items())]
        key += [(f"setting {k}", json.dumps(v)) for k, v in sorted(p["settings"].items()) if k not in ("seed", "n_boot")]
        return tuple(key)


@dataclass
class Group:
    """Results of one prompt set that may be ranked together."""

    prompt_set: str
    id: str  # g1, g2, ... in the prompt set
    results: list[Result]
    metrics: list[str]  # the main metric first
    differs: list[tuple[str, str]]  # (label, value) that set this group apart; empty when it is alone

    @property
    def name(self) -> str:
        return f"{self.prompt_set}-{self.id}"


@dataclass
class Column:
    key: str
    label: str
    kind: str  # text | link | rank | score | num | pct | thumb (not downloaded)
    title: str = ""


@dataclass
class Table:
    id: str
    columns: list[Column]
    rows: list[dict]
    csv: str  # site-relative paths of the downloads
    json: str
    partial: bool = False  # the downloads hold more rows than this table (image browser pages)


class Board:
    """Everything the pages show, loaded and checked once."""

    def __init__(self, results: list[Result], prompts: dict[str, dict], ratings: dict[str, list[dict]]):
        self.results = {r.sid: r for r in results}
        self.prompts = prompts
        self.ratings = ratings
        self.cards: dict[str, dict] = {}
        for r in results:
            for card in r.summary["metrics_info"]:
                self.cards.setdefault(card["name"], card)
        self.groups = _groups(results)
        self.group_of = {r.sid: g for gs in self.groups.values() for g in gs for r in g.results}
        self._ranks: dict[tuple, dict[str, dict]] = {}

    def ranks(self, group: Group, metric: str, slice_type: str, slice_: str) -> dict[str, dict]:
        """sid -> {rank, best, worst} on ``metric`` in the slice, among the group's results that have it from
        at least :data:`MIN_PROMPTS` prompts (fewer give CIs too unreliable to order by)."""
        key = (group.name, metric, slice_type, slice_)
        if key not in self._ranks:
            ranked = [r for r in group.results if r.entries.get((metric, slice_type, slice_), {}).get("n_prompts", 0)
                      >= MIN_PROMPTS]
            out = {}
            if ranked:
                e = [r.entries[(metric, slice_type, slice_)] for r in ranked]
                rr = rank_ties([x["value"] for x in e], [x["ci_low"] for x in e], [x["ci_high"] for x in e],
                               higher_is_better=self.cards[metric]["direction"] == "higher")
                out = {r.sid: {"rank": int(k), "best": int(b), "worst": int(w)}
                       for r, k, b, w in zip(ranked, rr.rank, rr.best, rr.worst)}
            self._ranks[key] = out
        return self._ranks[key]

    def slices(self) -> list[tuple[str, str]]:
        """Every (slice type, slice) with a page, in page order."""
        found = {k[1:] for r in self.results.values() for k in r.entries if k[1] in SLICE_FOLDERS}
        return sorted(found, key=lambda s: (list(SLICE_FOLDERS).index(s[0]), _slice_order(*s)))


def build_site(results: str | Path, dataset: str | Path, submissions: str | Path, out: str | Path, *,
               ratings: str | Path | None = None, page_size: int = 48, thumb_px: int = 256) -> dict:
    """Render the site from ``results`` (``<id>/summary.json`` and ``scores.parquet``), ``submissions``
    (``<id>/submission.yaml``, ``metadata.jsonl`` and images) and ``dataset`` (prompt texts) into ``out``.

    ``ratings``: an ``import-ratings`` output folder (or its ``validity.json``) whose correlations with human
    ratings are shown on the metric pages. Thumbnails of an earlier build in ``out`` are reused. ``out`` is
    replaced atomically. A result that cannot be shown is left out, named in every page's footer and in
    ``skipped`` (see :func:`_load_results`). Returns {out, pages, largest_page, largest_page_bytes,
    thumbnails, missing_images, skipped, seconds}.
    """
    start = time.perf_counter()
    results, out = Path(results), Path(out)
    check_replaceable(out, kind="site")  # before the work
    loaded, skipped = _load_results(results, Path(submissions))
    prompts = {p["prompt_id"]: p for ps in sorted({r.prompt_set for r in loaded}) for p in read_prompt_set(dataset, ps)}
    board = Board(loaded, prompts, _load_ratings(ratings))
    with atomic_dir(out, kind="site") as tmp:
        site = _Site(tmp, board)
        site.env.globals["skipped"] = skipped  # named in every page's footer
        shutil.copytree(HERE / "static", tmp / "static")
        thumbs = _thumbnails(board, out / "thumbs", tmp / "thumbs", thumb_px)
        _overview(site, board)
        _slice_pages(site, board)
        for r in board.results.values():
            _model_pages(site, board, r, thumbs, page_size)
        _metric_pages(site, board)
    largest = max(site.sizes, key=site.sizes.get)
    return {"out": str(out), "pages": len(site.sizes), "largest_page": largest,
            "largest_page_bytes": site.sizes[largest], "thumbnails": sum(s == "ok" for s in thumbs.values()),
            "missing_images": sum(s != "ok" for s in thumbs.values()), "skipped": skipped,
            "seconds": round(time.perf_counter() - start, 3)}


# --- loading


def _load_results(results: Path, submissions: Path) -> tuple[list[Result], list[dict]]:
    """Every result of ``results`` with its submission, each loaded in isolation: an entry that cannot be
    shown (a name unfit for paths, a missing submission, an unreadable summary, scores, submission.yaml or
    metadata.jsonl) is left out and returned as {submission, file, source, problem, fix} (``file``: the last
    part of ``source``, for the pages); none usable is an error."""
    folders = ([p for p in output_folders(results) if (p / "summary.json").is_file()]
               if results.is_dir() else [])
    if not folders:
        raise CultureboardError(results, "holds no results (no <submission id>/summary.json)",
                                "pass the --out folder of `cultureboard evaluate`")
    loaded, skipped = [], []
    for folder in folders:
        sid, sub = folder.name, submissions / folder.name
        try:
            if not _NAME.fullmatch(sid) or len(sid) > MAX_SUBMISSION_ID:
                raise CultureboardError(folder, "is not named like a submission id", "keep only evaluator outputs there")
            if not all(os.path.isfile(sub / name) and not os.path.islink(sub / name) for name in (SUBMISSION_YAML, METADATA)):
                raise CultureboardError(folder, f"was scored from a submission that the submissions folder lacks ({sid})",
                                        "pass the --submissions folder that holds every scored submission")
            summary = _read_summary(folder / "summary.json")
            spec, images = read_spec(sub / SUBMISSION_YAML), read_metadata(sub / METADATA)
            for n, im in enumerate(images, 1):
                if not (_SHA256.fullmatch(str(im.get("sha256"))) and isinstance(im.get("prompt_id"), str)
                        and isinstance(im.get("file_name"), str) and type(im.get("sample_idx")) is int):
                    raise CultureboardError(f"{sub / METADATA}:{n}", "lacks a well-formed file_name, prompt_id, sample_idx "
                                            "or sha256", f"run `cultureboard validate {sub}` and fix what it reports")
            images.sort(key=lambda im: (im["prompt_id"], im["sample_idx"], im["file_name"]))
            try:
                scores = pd.read_parquet(folder / "scores.parquet")
            except (OSError, ValueError) as exc:  # pyarrow's errors derive from these
                raise CultureboardError(folder / "scores.parquet", f"cannot be read ({exc.__class__.__name__})",
                                        "rerun `cultureboard evaluate` for this submission") from None
            if missing := {"file_name", "metric", "value"} - set(scores.columns):
                raise CultureboardError(folder / "scores.parquet", f"lacks the columns {sorted(missing)}",
                                        "rerun `cultureboard evaluate` for this submission")
        except CultureboardError as exc:
            skipped.append({"submission": sid, "file": Path(exc.source).name, "source": exc.source, "problem": exc.problem,
                            "fix": exc.fix})
            continue
        entries = {(e["metric"], e["slice_type"], e["slice"]): e for e in summary["metrics"]}
        loaded.append(Result(sid, summary, scores, spec, sub, images, entries))
    if not loaded:
        first = skipped[0]
        raise CultureboardError(results, f"holds no usable result: all {len(skipped)} were left out (first: "
                                f"{first['source']}: {first['problem']})", first["fix"])
    return loaded, skipped


#: What the pages read from an evaluator summary: dotted path -> kind (a type, a tuple of types, None for
#: null, or ``object``: present, of any value). A summary that differs is left out; keep this in step with
#: the evaluator's summary and the templates (which fail on a missing key).
_SUMMARY_SHAPE = {
    "provenance.prompt_set": str, "provenance.dtype": str, "provenance.device": str, "provenance.dataset.revision": str,
    "provenance.dataset.folder": str, "provenance.submission.sha256": str, "provenance.code.cultureboard": str,
    "provenance.code.python": str, "provenance.code.git.commit": (str, None), "provenance.code.git.dirty": object,
    "provenance.code.packages": dict, "provenance.settings": dict, "provenance.metrics": dict,
    "provenance.options": dict, "provenance.scorers": list, "metrics": list, "metrics_info": list,
}
#: ... of each scorer of the provenance, each metric entry and each metric card.
_SCORER_SHAPE = {"name": str, "model_id": str, "revision": str}
_ENTRY_SHAPE = {"metric": str, "slice_type": str, "slice": str, "value": float, "ci_low": float, "ci_high": float,
                "n_images": int, "n_prompts": int, "coverage": float}
_CARD_SHAPE = {"name": str, "title": str, "direction": str, "family": str, "unit": str, "formula": str, "range": str,
               "source": str, "scorers": list, "version": int, "validity": list, "chance": object, "proxy_for": object}
_ABSENT = object()


def _shape_problem(summary) -> str | None:
    """The first part of ``summary`` that is not of its kind in the tables above (float: a finite number), or None."""
    def bad(value, kind) -> bool:
        if value is _ABSENT or kind is object:
            return value is _ABSENT
        kinds = kind if isinstance(kind, tuple) else (kind,)
        if value is None:
            return None not in kinds
        if isinstance(value, bool):
            return bool not in kinds
        if float in kinds and isinstance(value, (int, float)):
            return not math.isfinite(value)
        return not isinstance(value, tuple(k for k in kinds if k is not None))

    if not isinstance(summary, dict):
        return "it is not a JSON object"
    for path, kind in _SUMMARY_SHAPE.items():
        if bad(get(summary, path, _ABSENT), kind):
            return f"{path} is missing or not of the right kind"
    for key, shape in (("provenance.scorers", _SCORER_SHAPE), ("metrics", _ENTRY_SHAPE), ("metrics_info", _CARD_SHAPE)):
        for i, item in enumerate(get(summary, key)):
            wrong = [k for k, kind in shape.items() if not isinstance(item, dict) or bad(item.get(k, _ABSENT), kind)]
            if wrong:
                return f"{key}[{i}] lacks a well-formed {', '.join(wrong)}"
            if key == "metrics" and item["ci_low"] > item["ci_high"]:
                return f"metrics[{i}] has a CI whose low end is above its high end"
    return None


def _read_summary(path: Path) -> dict:
    """summary.json (never through a link), checked for what the pages rely on: the shape above, names safe
    in paths, a card for every metric."""
    fix = "rerun `cultureboard evaluate` for this submission"
    try:
        with open(os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK), encoding="utf-8") as fh:
            summary = json.load(fh)
    except OSError as exc:
        raise CultureboardError(path, f"cannot be read ({exc.strerror})", fix) from None
    except (ValueError, RecursionError) as exc:
        raise CultureboardError(path, f"is not JSON ({exc.__class__.__name__}: {str(exc)[:80]})", fix) from None
    if problem := _shape_problem(summary):
        raise CultureboardError(path, f"is not an evaluator summary: {problem}", fix)
    names = {card["name"] for card in summary["metrics_info"]} | {summary["provenance"]["prompt_set"]}
    uncarded = {e["metric"] for e in summary["metrics"]} - names
    if uncarded or not all(_NAME.fullmatch(n) for n in names):
        raise CultureboardError(path, f"has metrics without a card {sorted(uncarded)} or names unfit for file names "
                                f"{sorted(n for n in names if not _NAME.fullmatch(n))}", fix)
    return summary


def _load_ratings(ratings: str | Path | None) -> dict[str, list[dict]]:
    """metric -> correlation rows of ``validity.json`` (see ``evaluators.ratings.validity``)."""
    if ratings is None:
        return {}
    path = Path(ratings)
    path = path / "validity.json" if path.is_dir() else path
    if not path.is_file():
        raise CultureboardError(ratings, "has no validity.json",
                                "pass the --out folder of `cultureboard import-ratings` run with --scores")
    by_metric = defaultdict(list)
    for row in json.loads(path.read_text(encoding="utf-8"))["correlations"]:
        by_metric[row["metric"]].append(row)
    return by_metric


def _groups(results: list[Result]) -> dict[str, list[Group]]:
    """prompt set -> comparability groups, largest first."""
    by_key: dict[tuple, list[Result]] = defaultdict(list)
    for r in results:
        by_key[r.comparability()].append(r)
    out: dict[str, list[Group]] = defaultdict(list)
    for key, members in sorted(by_key.items(), key=lambda kv: (kv[0][0], -len(kv[1]), kv[0])):
        prompt_set = key[0][1]
        metrics = sorted({m for r in members for m, _, _ in r.entries})
        main = _headline(prompt_set, metrics)
        out[prompt_set].append(Group(prompt_set, f"g{len(out[prompt_set]) + 1}", members,
                                     [main] + [m for m in metrics if m != main], list(key)))
    for groups in out.values():  # keep only what tells the groups apart
        shared = set.intersection(*(set(g.differs) for g in groups))
        for g in groups:
            g.differs = [item for item in g.differs if item not in shared]
    return dict(sorted(out.items()))


def _type_order(slice_type: str) -> tuple:
    """The standard slice types first, in their order, then a family's own (an edit step, a ladder axis)."""
    return (SLICE_TYPES.index(slice_type), "") if slice_type in SLICE_TYPES else (len(SLICE_TYPES), slice_type)


def _type_label(slice_type: str) -> str:
    return SLICE_LABELS.get(slice_type) or slice_type.replace("_", " ").capitalize()


def _headline(prompt_set: str, metrics: list[str]) -> str:
    """The metric a prompt set is ranked by: its family's primary metric (the first one if unregistered)."""
    try:
        family, _ = family_of(prompt_set)
    except CultureboardError:
        return metrics[0]
    main = family.primary(prompt_set)
    return main if main in metrics else metrics[0]


def _papers(family: str) -> dict:
    """The paper and code links of a registered family, for its metric pages."""
    return dict(load_families().get(family).papers) if family in load_families() else {}


# --- names and formats


def _slice_order(slice_type: str, slice_: str) -> tuple:
    """Eras in time order, other slices by name."""
    era = ERA_ORDER.index(slice_) if slice_type == "era" and slice_ in ERA_ORDER else len(ERA_ORDER)
    return (era, _slice_name(slice_type, slice_))


def _slice_name(slice_type: str, slice_: str) -> str:
    if slice_type == "country":
        country = load_countries().lookup(slice_)
        return f"{country.name} ({slice_})" if country else slice_
    if slice_type == "region_group":
        return f"{REGION_NAMES.get(slice_, slice_)} ({slice_})"
    return "all prompts" if slice_type == "overall" else slice_


def _slice_path(slice_type: str, slice_: str) -> str | None:
    if slice_type not in SLICE_FOLDERS:
        return None
    name = slice_ if slice_type == "country" and _NAME.fullmatch(slice_) else slug(slice_)
    return f"{SLICE_FOLDERS[slice_type]}/{name}.html"


def _num(x) -> str:
    return "—" if x is None or (isinstance(x, float) and math.isnan(x)) else f"{x:.3f}"


def _pct(x) -> str:
    return "unknown" if x is None else f"{100 * x:.0f}%"


def caveat(entry: dict) -> dict | None:
    """The "too little data" badge of a summary entry: {label, title}, or None when it has enough."""
    labels, reasons = [], []
    if entry["n_prompts"] < MIN_PROMPTS:
        labels.append("few prompts")
        reasons.append(f"only {entry['n_prompts']} prompt(s) (fewer than {MIN_PROMPTS}): the CI is unreliable, "
                       "so it is not ranked")
    if not entry.get("complete"):
        labels.append("incomplete")
        reasons.append(f"coverage {_pct(entry.get('coverage'))}: not every prompt of this slice was scored, "
                       "so the value is not over the whole slice")
    return {"label": " · ".join(labels), "title": "Too little data: " + "; ".join(reasons)} if labels else None


def _link(url) -> str | None:
    """``url`` when it is an http(s) address (anything else is shown as text, never linked)."""
    parsed = urlparse(str(url))
    return str(url) if parsed.scheme in ("http", "https") and parsed.netloc else None


def _environment() -> jinja2.Environment:
    env = jinja2.Environment(loader=jinja2.FileSystemLoader(HERE / "templates"), autoescape=True,
                             undefined=jinja2.StrictUndefined, trim_blocks=True, lstrip_blocks=True)
    env.filters.update(num=_num, pct=_pct)
    env.globals.update(csp=CSP, caveat=caveat, link=_link)
    return env


def _footer(board: Board) -> dict:
    """The provenance summary every page shows."""
    code, datasets, devices = set(), set(), set()
    for r in board.results.values():
        p = r.summary["provenance"]
        git = p["code"]["git"]
        commit = (git.get("commit") or "unknown")[:12] + (" with uncommitted changes" if git.get("dirty") else "")
        code.add(f"cultureboard {p['code']['cultureboard']} (git {commit})")
        datasets.add(p["dataset"]["revision"])
        devices.add(f"{p['device']} {p['dtype']}")
    return {"results": len(board.results), "code": sorted(code), "datasets": sorted(datasets), "devices": sorted(devices)}


# --- writing


class _Site:
    """Writes pages and their tables' downloads into the (temporary) output folder."""

    def __init__(self, root: Path, board: Board):
        self.root = root
        self.env = _environment()
        self.env.globals["footer"] = _footer(board)
        self.sizes: dict[str, int] = {}

    def page(self, path: str, template: str, title: str, **context) -> None:
        html = self.env.get_template(template).render(root="../" * path.count("/"), path=path, title=title, **context)
        self._write(path, html)
        self.sizes[path] = len(html.encode("utf-8"))

    def table(self, page: str, name: str, columns: list[Column], rows: list[dict]) -> Table:
        """A table of ``page``, with its downloads written to data/<page>-<name>.csv and .json."""
        stem = f"data/{page.removesuffix('.html').replace('/', '-')}-{name}"
        flat = [_flatten(columns, row) for row in rows]
        keys = list(flat[0]) if flat else [c.key for c in columns if c.kind != "thumb"]
        buffer = io.StringIO()
        writer = csv.writer(buffer, lineterminator="\n")
        writer.writerow(keys)
        writer.writerows([_csv_cell(row[k]) for k in keys] for row in flat)
        self._write(stem + ".csv", buffer.getvalue())
        self._write(stem + ".json", json.dumps({"page": page, "table": name, "columns": keys, "rows": flat},
                                               ensure_ascii=False, allow_nan=False) + "\n")
        return Table(name, columns, rows, stem + ".csv", stem + ".json")

    def plot(self, page: str, name: str, svg: str) -> str:
        path = f"plots/{page.removesuffix('.html').replace('/', '-')}-{name}.svg"
        self._write(path, svg)
        return path

    def _write(self, path: str, text: str) -> None:
        target = self.root / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text, encoding="utf-8", newline="\n")


def _flatten(columns: list[Column], row: dict) -> dict:
    """A table row as plain values: a score becomes value, CI, n and coverage columns; a rank its range."""
    flat: dict = {}
    for c in columns:
        v = row[c.key]
        if c.kind == "link":
            flat[c.key] = v["text"]
        elif c.kind == "rank":
            flat |= {f"{c.key}_best": v and v["best"], f"{c.key}_worst": v and v["worst"]}
        elif c.kind == "score":
            note = v and caveat(v)
            flat |= {c.key: v and v["value"], f"{c.key}_ci_low": v and v["ci_low"], f"{c.key}_ci_high": v and v["ci_high"],
                     f"{c.key}_n_images": v and v["n_images"], f"{c.key}_n_prompts": v and v["n_prompts"],
                     f"{c.key}_coverage": v and v.get("coverage"), f"{c.key}_caveat": note and note["title"]}
        elif c.kind != "thumb":
            flat[c.key] = v
    return flat


def _csv_cell(value):
    """Text that a spreadsheet would run as a formula gets a leading apostrophe (CSV injection)."""
    return "'" + value if isinstance(value, str) and value[:1] in ("=", "+", "-", "@", "\t", "\r") else value


# --- pages


def _leaderboard(site: _Site, board: Board, page: str, group: Group, slice_type: str, slice_: str,
                 metrics: list[str] | None = None) -> Table | None:
    """Submissions of ``group`` ranked on the first of ``metrics`` in one slice; None when none has it."""
    metrics = metrics or group.metrics
    members = [r for r in group.results if any((m, slice_type, slice_) in r.entries for m in metrics)]
    if not members:
        return None
    ranks = board.ranks(group, metrics[0], slice_type, slice_)
    members.sort(key=lambda r: (ranks[r.sid]["rank"] if r.sid in ranks else math.inf, r.sid))
    main = board.cards[metrics[0]]
    columns = [Column("rank", "Rank", "rank", f"Rank range on {main['title']}: entries whose 95% CIs overlap are tied"),
               Column("submission", "Submission", "link"), Column("model", "Model", "text"),
               Column("weights", "Weights", "text"),
               Column("coverage", "Coverage", "pct", f"Share of the slice's prompts scored for {main['title']}")]
    columns += [Column(m, board.cards[m]["title"], "score",
                       f"{m}: {board.cards[m]['direction']} is better; value [95% CI], n = images / prompts")
                for m in metrics]
    rows = [{"rank": ranks.get(r.sid), "submission": {"text": r.sid, "href": f"model/{r.sid}.html"},
             "model": str(get(r.spec, "model.id")), "weights": str(get(r.spec, "model.weights")),
             "coverage": r.entries.get((metrics[0], slice_type, slice_), {}).get("coverage"),
             **{m: r.entries.get((m, slice_type, slice_)) for m in metrics}} for r in members]
    return site.table(page, group.name, columns, rows)


def _sections(site: _Site, board: Board, page: str, slice_type: str, slice_: str) -> list[dict]:
    """One section per prompt set with entries in the slice, one leaderboard per comparability group."""
    sections = []
    for prompt_set, groups in board.groups.items():
        tables = [(g, _leaderboard(site, board, page, g, slice_type, slice_)) for g in groups]
        tables = [{"group": g, "table": t, "plots": _plots(site, board, page, g) if slice_type == "overall" else []}
                  for g, t in tables if t is not None]
        if tables:
            sections.append({"prompt_set": prompt_set, "main": board.cards[groups[0].metrics[0]], "groups": tables,
                             "several": len(groups) > 1})
    return sections


def _plots(site: _Site, board: Board, page: str, group: Group) -> list[dict]:
    """Heatmap model x country, Global North - South gap and per-era bars of the group's main metric."""
    metric = group.metrics[0]
    title = f"{board.cards[metric]['title']}, {group.prompt_set}" + (f" (group {group.id})" if group.differs else "")
    cells, eras, gaps = [], [], []
    for r in group.results:
        for (m, slice_type, slice_), e in sorted(r.entries.items()):
            if m == metric and slice_type == "country":
                cells.append({"model": r.sid, "country": _slice_name("country", slice_), "value": e["value"]})
            elif m == metric and slice_type == "era":
                eras.append({"model": r.sid, "era": slice_, "value": e["value"], "low": e["ci_low"], "high": e["ci_high"]})
        gap = _gap(r, metric)
        if gap:
            gaps.append((r, gap))
    out = []
    if cells:
        out.append({"src": site.plot(page, f"{group.name}-heatmap", plots.heatmap_svg(cells, f"{title} by country")),
                    "alt": f"Heatmap of {title}, submissions by country", "table": None})
    if gaps:
        svg = plots.gap_svg([{"model": r.sid, "gap": g["value"], "low": g["ci_low"], "high": g["ci_high"]}
                             for r, g in gaps], f"{title}: Global North minus Global South")
        out.append({"src": site.plot(page, f"{group.name}-gap", svg),
                    "alt": f"Global North minus Global South gap of {title}, with 95% CIs", "table": None})
        columns = [Column("submission", "Submission", "link"),
                   Column("GN", "Global North", "score"), Column("GS", "Global South", "score"),
                   Column("gap", "Gap (GN - GS)", "score", "Difference of the region groups' values; 95% CI from an "
                          "independent bootstrap over the prompts of each group")]
        rows = [{"submission": {"text": r.sid, "href": f"model/{r.sid}.html"},
                 "GN": r.entries[(metric, "region_group", "GN")], "GS": r.entries[(metric, "region_group", "GS")],
                 "gap": g} for r, g in gaps]
        out[-1]["table"] = site.table(page, f"{group.name}-gap", columns, rows)
    if eras:
        out.append({"src": site.plot(page, f"{group.name}-eras", plots.era_bars_svg(eras, f"{title} by era")),
                    "alt": f"Bars of {title} per era, with 95% CIs", "table": None})
    return out


def _gap(result: Result, metric: str) -> dict | None:
    """Global North minus Global South as a summary entry, or None without both.

    Value: the difference of the two slices' values (means over units of per-unit means). CI: percentile
    bootstrap of that difference, resampling the units of each region group independently (the evaluator's
    seed, n_boot and level).
    """
    gn, gs = (result.entries.get((metric, "region_group", k)) for k in ("GN", "GS"))
    if not gn or not gs:
        return None
    rows = result.scores[(result.scores["metric"] == metric) & result.scores["region_group"].isin(["GN", "GS"])]
    units = rows.groupby(["region_group", "unit_id"], sort=True)["value"].mean()
    settings = result.summary["provenance"]["settings"]
    rng, n_boot, level = np.random.default_rng(settings["seed"]), settings["n_boot"], settings["ci_level"]
    a, b = units["GN"].to_numpy(), units["GS"].to_numpy()
    reps = (a[rng.integers(0, len(a), (n_boot, len(a)))].mean(axis=1)
            - b[rng.integers(0, len(b), (n_boot, len(b)))].mean(axis=1))
    low, high = np.quantile(reps, [(1 - level) / 2, (1 + level) / 2])
    coverage = None if gn["coverage"] is None or gs["coverage"] is None else min(gn["coverage"], gs["coverage"])
    return {"value": float(a.mean() - b.mean()), "ci_low": float(low), "ci_high": float(high),
            "n_images": gn["n_images"] + gs["n_images"], "n_prompts": gn["n_prompts"] + gs["n_prompts"],
            "coverage": coverage, "complete": gn["complete"] and gs["complete"]}


def _overview(site: _Site, board: Board) -> None:
    site.page("index.html", "index.html", "Leaderboard", sections=_sections(site, board, "index.html", "overall", "all"))


def _slice_pages(site: _Site, board: Board) -> None:
    listing = []
    for slice_type, slice_ in board.slices():
        path = _slice_path(slice_type, slice_)
        if path in site.sizes:
            raise CultureboardError(f"slice {slice_!r}", f"has the same page name as another {slice_type} ({path})",
                                    "rename one of them in the dataset")
        title = f"{_type_label(slice_type)}: {_slice_name(slice_type, slice_)}"
        site.page(path, "slice.html", title, sections=_sections(site, board, path, slice_type, slice_))
        listing.append({"type": _type_label(slice_type), "slice": {"text": _slice_name(slice_type, slice_), "href": path},
                        "results": sum(any(k[1:] == (slice_type, slice_) for k in r.entries)
                                       for r in board.results.values())})
    columns = [Column("type", "Type", "text"), Column("slice", "Slice", "link"),
               Column("results", "Submissions", "num", "Submissions with scores on this slice")]
    site.page("slices.html", "slices.html", "Slices", table=site.table("slices.html", "slices", columns, listing))


def _model_pages(site: _Site, board: Board, r: Result, thumbs: dict, page_size: int) -> None:
    """The submission's page (model card, provenance, per-slice table) and its image browser."""
    page, group = f"model/{r.sid}.html", board.group_of[r.sid]
    card = [{"field": f.path, "help": f.help, "value": get(r.spec, f.path)} for f in FIELDS
            if get(r.spec, f.path) is not None]
    slices = sorted({k[1:] for k in r.entries}, key=lambda s: (_type_order(s[0]), _slice_order(*s)))
    columns = [Column("slice_type", "Slice type", "text"), Column("slice", "Slice", "link"),
               Column("rank", "Rank", "rank", f"Rank range on {board.cards[group.metrics[0]]['title']} among "
                      "the comparable submissions")]
    columns += [Column(m, board.cards[m]["title"], "score", f"{m}: {board.cards[m]['direction']} is better")
                for m in group.metrics]
    rows = [{"slice_type": _type_label(st),
             "slice": {"text": _slice_name(st, s), "href": _slice_path(st, s) or "index.html"},
             "rank": board.ranks(group, group.metrics[0], st, s).get(r.sid),
             **{m: r.entries.get((m, st, s)) for m in group.metrics}} for st, s in slices]
    images = _image_pages(site, board, r, thumbs, page_size)
    site.page(page, "model.html", f"Submission {r.sid}", r=r, group=group, card=card,
              per_slice=site.table(page, "slices", columns, rows), provenance=r.summary["provenance"],
              images_at=str(get(r.spec, "images.location")), **images)


def _image_pages(site: _Site, board: Board, r: Result, thumbs: dict, page_size: int) -> dict:
    """model/<id>/images-<n>.html: each image with its thumbnail, prompt and per-image scores; returns what
    the model page says about them."""
    scored = r.scores[r.scores["file_name"].notna()]
    metrics = sorted(set(scored["metric"]))
    values = scored.groupby(["file_name", "metric"])["value"].mean().to_dict()
    columns = [Column("image", "Image", "thumb"), Column("prompt", "Prompt", "text"),
               Column("sample_idx", "Sample", "num")]
    columns += [Column(m, board.cards[m]["title"], "num") for m in metrics]
    columns += [Column("prompt_id", "Prompt id", "text"), Column("file_name", "File", "text"),
                Column("sha256", "sha256", "text")]
    rows = [{"image": {"status": thumbs.get((r.sid, im["sha256"]), "not fetched"),
                       "src": f"thumbs/{r.sid}/{im['sha256']}.webp"},
             "prompt": board.prompts.get(im["prompt_id"], {}).get("text"), "sample_idx": im["sample_idx"],
             **{m: values.get((im["file_name"], m)) for m in metrics},
             "prompt_id": im["prompt_id"], "file_name": im["file_name"], "sha256": im["sha256"]} for im in r.images]
    table = site.table(f"model/{r.sid}.html", "images", columns, rows)
    count = max(1, math.ceil(len(rows) / page_size))
    links = [f"model/{r.sid}/images-{n}.html" for n in range(1, count + 1)]
    for n, path in enumerate(links, 1):
        part = dataclasses.replace(table, rows=rows[(n - 1) * page_size: n * page_size], partial=count > 1)
        site.page(path, "images.html", f"Images of {r.sid}, page {n} of {count}", r=r, table=part, pages=links,
                  current=n)
    statuses = [row["image"]["status"] for row in rows]
    return {"image_pages": links, "n_images": len(rows), "fetched": "not fetched" not in statuses,
            "missing": sum(s in ("missing", "unreadable") for s in statuses)}


def _metric_pages(site: _Site, board: Board) -> None:
    listing = []
    for name, card in sorted(board.cards.items()):
        page = f"metric/{name}.html"
        groups = [g for gs in board.groups.values() for g in gs if name in g.metrics]
        boards = [{"group": g, "several": len(board.groups[g.prompt_set]) > 1,
                   "table": _leaderboard(site, board, page, g, "overall", "all", [name])} for g in groups]
        boards = [b for b in boards if b["table"]]
        checkpoints = sorted({(s["name"], s["model_id"], s["revision"]) for g in groups for r in g.results
                              for s in r.summary["provenance"]["scorers"] if s["name"] in card["scorers"]})
        columns = [Column(k, label, "text" if k in ("target", "country") else "num") for k, label in (
            ("target", "Human rating"), ("country", "Country"), ("n", "n images"), ("pearson", "Pearson r"),
            ("pearson_p", "p"), ("spearman", "Spearman rho"), ("spearman_p", "p"))]
        rows = [{**{c.key: row.get(c.key) for c in columns}, "country": row.get("country") or "all"}
                for row in board.ratings.get(name, [])]
        ratings = site.table(page, "human-ratings", columns, rows) if rows else None
        site.page(page, "metric.html", f"Metric {card['title']}", card=card, boards=boards, checkpoints=checkpoints,
                  ratings=ratings, papers=_papers(card["family"]))
        listing.append({"metric": {"text": name, "href": page}, "title": card["title"], "family": card["family"],
                        "direction": f"{card['direction']} is better", "scorer": ", ".join(card["scorers"]), "unit": card["unit"],
                        "results": sum(len(g.results) for g in groups)})
    columns = [Column("metric", "Metric", "link"), Column("title", "Title", "text"), Column("family", "Family", "text"),
               Column("direction", "Direction", "text"), Column("scorer", "Scorer", "text"),
               Column("unit", "Unit", "text"), Column("results", "Submissions", "num")]
    site.page("metrics.html", "metrics.html", "Metrics", table=site.table("metrics.html", "metrics", columns, listing))


# --- thumbnails


def _thumbnails(board: Board, old: Path, new: Path, px: int) -> dict[tuple[str, str], str]:
    """Write a WebP thumbnail (longer side at most ``px``) of every local image, its pixels read as the
    scorers read them (:func:`~cultureboard.images.open_rgb`: EXIF orientation applied): (sid, sha256) ->
    "ok", "missing" or "unreadable". A thumbnail of an earlier build with the same settings is copied, not
    redone, when it is a regular file in real folders (a link is never followed nor copied)."""
    params = {**THUMB, "max_side": px}
    reuse = _real_dir(old) and _regular(old / "params.json") and _json_or_none(old / "params.json") == params
    jobs = {}
    for r in board.results.values():
        location = parse_location(str(get(r.spec, "images.location", "")))
        if location is None or location.kind != "local":
            continue
        root = r.folder.resolve()
        for im in r.images:
            source = (r.folder / im["file_name"]).resolve()
            jobs[(r.sid, im["sha256"])] = source if source.is_relative_to(root) else None
        (new / r.sid).mkdir(parents=True, exist_ok=True)
    reusable = {sid for sid, _ in jobs if reuse and _real_dir(old / sid)}

    def make(job) -> str:
        (sid, sha), source = job
        target, earlier = new / sid / f"{sha}.webp", old / sid / f"{sha}.webp"
        if sid in reusable and _regular(earlier):
            try:
                os.link(earlier, target, follow_symlinks=False)  # same file system (the output's parent): no copy
            except OSError:
                shutil.copyfile(earlier, target, follow_symlinks=False)
            return "ok"
        if source is None or not source.is_file():
            return "missing"
        try:
            img = open_rgb(source)
            img.thumbnail((px, px))
            img.save(target, **THUMB)
        except Exception:  # noqa: BLE001 - a decoder's reaction to hostile bytes can be any exception
            return "unreadable"
        return "ok"

    items = sorted(jobs.items(), key=lambda kv: kv[0])
    with ThreadPoolExecutor() as pool:
        status = dict(zip((k for k, _ in items), pool.map(make, items)))
    new.mkdir(parents=True, exist_ok=True)
    (new / "params.json").write_text(json.dumps(params, sort_keys=True) + "\n")
    return status


def _real_dir(path: Path) -> bool:
    return stat.S_ISDIR(st.st_mode) if (st := _lstat(path)) else False


def _regular(path: Path) -> bool:
    return stat.S_ISREG(st.st_mode) if (st := _lstat(path)) else False


def _lstat(path: Path) -> os.stat_result | None:
    try:
        return os.lstat(path)
    except OSError:
        return None


def _json_or_none(path: Path):
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
