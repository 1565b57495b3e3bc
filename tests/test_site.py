"""The static site built from real results of every family (tests/site_worlds.py: tiny stand-in scorers; a few
synthetic copies where a view needs several models): pages for every slice, family, prompt set, prompt, map and
metric, links that resolve offline, no external request, CSP and no inline code, hostile strings escaped, tied
ranks, comparability groups, badges, downloads equal to the tables, thumbnails and full-size images, the stand-in
banner, display names, nothing private published, controls, entanglement, disparity from results/disparity, the
generic family views, determinism and page size. No browser here: tests/test_site_browser.py has those."""

from __future__ import annotations

import csv
import gzip
import html
import itertools
import json
import re
import shutil
import subprocess
import sys
import textwrap
from html.parser import HTMLParser
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import yaml
from cultureboard.evaluators.engine.parity import is_parity
from cultureboard.evaluators.engine.registry import family_of, load_families
from cultureboard.evaluators.results.disparity import gaps
from cultureboard.evaluators.results.reported import DATA as REPORTED
from cultureboard.evaluators.results.reported import load_reported
from cultureboard.evaluators.results.stats import rank_ties
from cultureboard.site import entangle, plots, worldmap
from cultureboard.site.render import CSP, build_site
from cultureboard.site.topics import load_topics
from cultureboard.site.write import Column, Site
from PIL import Image
from site_worlds import HOSTILE, REFUSED, five_families, variant

from cultureboard.errors import CultureboardError

PROMPT_SET = "cube-awareness"
MAIN = family_of(PROMPT_SET)[0].primary(PROMPT_SET)
BUILT = "2026-01-02"
ALPHA, BETA, CONTROL = "lab__alpha__cube-awareness", "other-lab__beta", "control__text-only"
LAION = "a LAION-5B subset"  # what cure-ladder's second synthetic copy declares (OpenCLIP's laion2b backbone too)


@pytest.fixture(scope="module")
def world(tmp_path_factory, tiny_scorers):
    base = five_families(tmp_path_factory.getbasetemp(), tiny_scorers)
    root = tmp_path_factory.mktemp("site")
    results, submissions = root / "results", root / "submissions"
    shutil.copytree(base["results"], results)
    shutil.copytree(base["submissions"], submissions)
    variants = {}
    for k, (prompt_set, ids) in enumerate(sorted(base["ids"].items())):
        if prompt_set != PROMPT_SET:
            variants[prompt_set] = [variant(base["results"], base["submissions"], ids[0], f"{prompt_set}-v{i}", shift,
                                            10 * k + i, results, submissions, unflag=prompt_set == "cultivate",
                                            training_data=LAION if (prompt_set, i) == ("cure-ladder", 1) else None)
                                    for i, shift in enumerate((-0.05, 0.05))]
    for folder in results.iterdir():  # the board's rules are tried on each family's primary metric (MAIN for
        path = folder / "summary.json"  # cube-awareness) and its scorer variants as a ranked (validated) headline
        summary = json.loads(path.read_text())
        prompt_set = summary["provenance"]["prompt_set"]
        primary = family_of(prompt_set)[0].primary(prompt_set)
        for card in summary["metrics_info"]:
            if card["name"] == primary or card["name"].startswith(primary + ".") and not is_parity(card["name"]):
                card["tier"] = "validated"
        path.write_text(json.dumps(summary))
    summary = build_site(results, base["dataset"], submissions, root / "site", built=BUILT)
    hostile = next(i for i in base["ids"][PROMPT_SET] if i not in (ALPHA, BETA, CONTROL))
    return {"root": root, "base": base, "dataset": base["dataset"], "submissions": submissions, "results": results,
            "site": root / "site", "summary": summary, "ids": sorted(p.name for p in results.iterdir()),
            "hostile": hostile, "variants": variants}


def rebuild(world, tmp_path: Path, edit=None, scores=None, **options) -> Path:
    """Build again from a copy of the results, ``edit(id, summary)`` applied to each summary and
    ``scores(id, frame)`` to each scores table (it returns the table to write); the earlier site is copied first, so its thumbnails
    are reused."""
    results = tmp_path / "results"
    shutil.copytree(world["results"], results)
    for folder in sorted(p for p in results.iterdir() if p.is_dir()):
        if edit:
            summary = json.loads((folder / "summary.json").read_text())
            edit(folder.name, summary)
            (folder / "summary.json").write_text(json.dumps(summary))
        if scores:
            table = pq.read_table(folder / "scores.parquet")
            frame = table.to_pandas()
            frame = scores(folder.name, frame)
            pq.write_table(pa.Table.from_pandas(frame, schema=table.schema, preserve_index=False),
                           folder / "scores.parquet")
    site = tmp_path / "site"
    shutil.copytree(world["site"], site)
    build_site(results, world["dataset"], world["submissions"], site, **{"built": BUILT, **options})
    return site


#: The title of the stand-in mark (site/names.py STANDIN): a cell's text is read without it (``cell["standin"]``
#: says it was there), so the tests of ranks and values read the same whether stand-ins scored the world or not.
STANDIN_TITLE = "Scored by tiny random stand-in scorers"


class Page(HTMLParser):
    """A parsed page: its tags, script bodies, text, and each table's column keys, header cells and body cells."""

    def __init__(self, path: Path):
        super().__init__(convert_charrefs=True)
        self.path, self.source = path, path.read_text(encoding="utf-8")
        self.tags: list[tuple[str, dict]] = []
        self.scripts: list[str] = []
        self.text: list[str] = []
        self.tables: dict[str, dict] = {}
        self._table = self._cell = self._script = self._head = None
        self._body = self._mark = False
        self.feed(self.source)
        self.close()

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        self.tags.append((tag, attrs))
        if tag == "table":
            self._table = self.tables.setdefault(attrs.get("id"), {"keys": [], "heads": [], "rows": []})
        elif tag == "th" and self._table is not None:
            self._table["keys"].append(attrs.get("data-key"))
            self._head = {"attrs": attrs, "text": []}
            self._table["heads"].append(self._head)
        elif tag == "tbody":
            self._body = True
        elif tag == "tr" and self._body:
            self._table["rows"].append([])
            self._table.setdefault("row_attrs", []).append(attrs)
        elif tag == "td" and self._body:
            self._cell = {"attrs": attrs, "text": [], "tags": []}
            self._table["rows"][-1].append(self._cell)
        elif tag == "script":
            self._script = []
        if self._cell is not None and tag != "td":
            self._cell["tags"].append((tag, attrs))
            if tag == "span" and (attrs.get("title") or "").startswith(STANDIN_TITLE):
                self._cell["standin"] = self._mark = True
        if self._head is not None and tag != "th":
            self._head.setdefault("tags", []).append((tag, attrs))

    def handle_endtag(self, tag):
        if tag == "span" and self._mark:
            self._mark = False
        elif tag == "td" and self._cell is not None:
            self._cell["text"] = " ".join("".join(self._cell["text"]).split())
            self._cell = None
        elif tag == "th" and self._head is not None:
            self._head["text"] = " ".join("".join(self._head["text"]).split())
            self._head = None
        elif tag == "tbody":
            self._body = False
        elif tag == "table":
            self._table = None
        elif tag == "script":
            self.scripts.append("".join(self._script))
            self._script = None

    def handle_data(self, data):
        self.text.append(data)
        for sink in (None if self._mark else self._cell and self._cell["text"], self._head and self._head["text"],
                     self._script):
            if sink is not None:
                sink.append(data)

    def table(self, table_id: str) -> list[dict]:
        """Body rows as {column key: cell}."""
        t = self.tables[table_id]
        return [dict(zip(t["keys"], row)) for row in t["rows"]]

    def heads(self, table_id: str) -> dict[str, dict]:
        t = self.tables[table_id]
        return dict(zip(t["keys"], t["heads"]))

    def plain(self) -> str:
        return " ".join("".join(self.text).split())


def pages(site: Path) -> list[Page]:
    return [Page(p) for p in sorted(site.rglob("*.html"))]


def summaries(world) -> dict[str, dict]:
    return {sid: json.loads((world["results"] / sid / "summary.json").read_text()) for sid in world["ids"]}


def slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")


# --- structure


def test_pages_for_every_slice_family_prompt_set_metric_and_submission(world):
    site = world["site"]
    folders = {"country": "country", "region_group": "region", "continent": "region", "era": "era", "category": "category"}
    expected = {"index.html", "slices.html", "metrics.html", "trust.html", "submissions.html", "agreement.html",
                "evidence.html"}
    prompt_sets, families = set(), set()
    for sid, summary in summaries(world).items():
        expected |= {f"model/{sid}.html", f"model/{sid}/images-1.html"}
        if "__control__" not in sid and not sid.startswith("control__"):  # one overview page per model
            expected.add("models/{}__{}.html".format(*sid.split("__")[:2]))
        expected |= {f"metric/{card['name']}.html" for card in summary["metrics_info"]}
        prompt_sets.add(summary["provenance"]["prompt_set"])
        families.add(summary["provenance"]["family"])
        for e in summary["metrics"]:
            if e["slice_type"] in folders:
                name = e["slice"] if e["slice_type"] == "country" else slug(e["slice"])
                expected.add(f"{folders[e['slice_type']]}/{name}.html")
    assert families == {"cube", "cultdiff", "cultivate", "cure", "ecb"}
    expected |= {f"leaderboard/{ps}.html" for ps in prompt_sets} | {f"gallery/{ps}.html" for ps in prompt_sets}
    expected |= {f"family/{f}.html" for f in families}
    categories = {e["slice"] for s in summaries(world).values() for e in s["metrics"] if e["slice_type"] == "category"}
    expected |= {"topics.html", "compare.html"} | {f"topic/{t.slug}.html" for t in load_topics()[0] if categories & set(t.categories)}
    built = {p.relative_to(site).as_posix() for p in site.rglob("*.html")}
    assert expected <= built, sorted(expected - built)
    rest = {p for p in built - expected if not re.match(r"(model/[^/]+/images-\d+|prompt/[^/]+/[^/]+|map/[^/]+/[^/]+)\.html$", p)}
    assert not rest, rest
    assert world["summary"]["pages"] == len(built)
    it = Page(site / "country" / "IT.html")
    assert {row["submission"]["text"] for row in it.table(f"{PROMPT_SET}-g1")} >= {"lab / alpha (cube-awareness)",
                                                                                 "Other Lab / beta"}


def test_links_resolve_and_nothing_is_fetched_from_elsewhere(world):
    site = world["site"].resolve()
    for page in pages(site):
        for tag, attrs in page.tags:
            assert "srcset" not in attrs and tag not in ("iframe", "object", "embed", "form", "base", "style")
            for name in ("href", "src"):
                value = attrs.get(name)
                if value is None:
                    continue
                if value.startswith(("http://", "https://")):
                    assert tag == "a", f"{page.path}: <{tag} {name}={value}> fetches from another site"
                    assert {"noopener", "noreferrer"} <= set(attrs.get("rel", "").split())
                elif value.startswith("data:"):
                    assert (tag, attrs.get("rel"), value) == ("link", "icon", "data:,")
                elif value.startswith("#"):
                    assert any(a.get("id") == value[1:] for _, a in page.tags), f"{page.path}: {value} names no element"
                else:
                    assert not re.match(r"^([a-z]+:|/)", value), f"{page.path}: {name}={value} is not relative"
                    target = (page.path.parent / re.split("[?#]", value)[0]).resolve()
                    assert target.is_file() and target.is_relative_to(site), f"{page.path}: {value} is missing"
    for path in [site / "static" / "app.js", site / "static" / "search.js", site / "search-index.js",
                 site / "static" / "style.css", *site.glob("plots/*.svg")]:
        text = path.read_text()
        assert not re.search(r"url\(|@import|fetch\(|XMLHttpRequest|https?://(?!www\.w3\.org/)", text), path


def test_csp_on_every_page_and_no_inline_code(world):
    for page in pages(world["site"]):
        csp = [a for t, a in page.tags if t == "meta" and a.get("http-equiv") == "Content-Security-Policy"]
        assert [a["content"] for a in csp] == [CSP], page.path
        for tag, attrs in page.tags:
            assert not [a for a in attrs if a.startswith("on") or a == "style"], f"{page.path}: <{tag} {attrs}>"
            if tag == "script":
                assert attrs.get("src", "").endswith(("static/app.js", "static/search.js", "search-index.js",
                                                      "static/compare.js", "static/filters.js", ".data.js"))
            if tag == "a":
                assert not attrs.get("href", "").lower().startswith("javascript:")
        assert all(body.strip() == "" for body in page.scripts), page.path


def test_hostile_strings_appear_only_escaped(world):
    hostile_page = Page(world["site"] / "model" / f"{world['hostile']}.html")
    text = "".join(hostile_page.text)
    for s in HOSTILE:
        assert s in text  # shown, as text
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in hostile_page.source
    assert "javascript:alert(1)" in text and 'https://example.org/"onmouseover="x' in text
    for page in pages(world["site"]):
        for s in HOSTILE:
            assert s not in page.source, f"{page.path} holds {s!r} unescaped"
        assert not [a for t, a in page.tags if t == "img" and a.get("src") == "x"]
    index = Page(world["site"] / "index.html").table(f"{PROMPT_SET}-g1")
    assert f"{HOSTILE[0]} / {HOSTILE[1]} ({HOSTILE[2]})" in {row["submission"]["text"] for row in index}


def test_nothing_private_or_local_is_published(world):
    """No contact address and no path of the machine that built or scored anywhere in the site."""
    private = ["lab@example.org", str(world["root"]), str(world["base"]["root"]), str(Path.home()), "/tmp/"]
    for path in sorted(world["site"].rglob("*")):
        if path.is_file() and path.suffix in (".html", ".csv", ".json", ".svg"):
            text = path.read_text(encoding="utf-8")
            for needle in private:
                assert needle not in text, f"{path} publishes {needle!r}"
    card = Page(world["site"] / "model" / f"{ALPHA}.html").plain()
    listed = card.split("Model card")[1].split("Provenance")[0]
    assert "model.name" in listed and "contact" not in listed.replace("contact details are not published", "")


def test_display_names_stand_in_banner_and_footer(world, tmp_path):
    index = Page(world["site"] / "index.html")
    names = {row["submission"]["text"] for row in index.table(f"{PROMPT_SET}-g1")}
    assert "lab / alpha (cube-awareness)" in names and ALPHA not in names
    assert "Other Lab / beta" in names  # the organisation as written, not its slug
    for page in pages(world["site"])[:40] + [index]:
        banner = [a for t, a in page.tags if a.get("class") == "banner"]
        assert banner, f"{page.path} lacks the stand-in banner"
        assert f"Built on {BUILT} by cultureboard" in page.plain()
    assert "tiny random stand-in" in index.plain()

    def no_standin(sid, summary):
        for s in summary["provenance"]["scorers"]:
            s.pop("standin", None)

    # every shown rank of a stand-in row carries the stand-in mark beside it: boards, answers, model pages
    ranked = 0
    for page in pages(world["site"]):
        for tid in page.tables:
            for row in page.table(tid):
                for key, cell in row.items():
                    if key in ("rank", "level_rank") and cell["attrs"].get("class", "").startswith("rank"):
                        ranked += 1
                        assert cell.get("standin"), f"{page.path}: rank {cell['text']!r} without the stand-in mark"
    assert ranked > 20
    country = (world["site"] / "country" / "NG.html").read_text()
    answer = country.split('id="answer"')[1].split("</section>")[0]
    # beside every board of the country page: the chance level (CUBE's, recorded as 1/3 for its 3 countries) and
    # each control's value at its interval's precision
    besides = re.findall(r'<p class="note beside">(.*?)</p>', country, flags=re.S)
    assert len(besides) >= 2 and any('chance level <strong class="chance">0.333</strong> (1 / number of countries'
                                     in b for b in besides)
    assert all('<strong class="chance"></strong>' not in b for b in besides)
    assert any(re.search(r'control <span class="control-value">text-only: \d\.\d+ \[\d\.\d+, \d\.\d+\]</span>', b)
               for b in besides)
    eras = (world["site"] / "plots" / f"leaderboard-{PROMPT_SET}-{PROMPT_SET}-g1-eras.svg").read_text()
    assert 'class="chance"' in eras and "chance 0.33" in eras  # the figure's reference line
    assert answer.count(">stand-in</span>") == answer.count("</a>") > 0  # one mark per model named in the answer
    assert "<span class=\"badge\">stand-in</span> the row was scored by tiny random stand-in" in index.source
    site = rebuild(world, tmp_path, no_standin)
    assert "class=\"banner\"" not in (site / "index.html").read_text()
    assert ">stand-in</span> " not in (site / "index.html").read_text().split("</details>", 1)[1]
    assert ">stand-in</span>" not in (site / "country" / "NG.html").read_text().split('id="answer"')[1].split("</section>")[0]


# --- leaderboards


def test_overlapping_cis_are_tied_ranks_and_controls_are_not_ranked(world, tmp_path):
    values = {ALPHA: (0.90, 0.85, 0.95), BETA: (0.88, 0.80, 0.91), world["hostile"]: (0.50, 0.45, 0.55),
              CONTROL: (0.89, 0.88, 0.90)}  # below the best model: a cheat on top would unrank the board

    def edit(sid, summary):
        for e in summary["metrics"]:
            if (e["metric"], e["slice_type"]) == (MAIN, "overall") and sid in values:
                e["value"], e["ci_low"], e["ci_high"] = values[sid]

    site = rebuild(world, tmp_path, edit)
    page = Page(site / "leaderboard" / f"{PROMPT_SET}.html")
    rows = page.table(f"{PROMPT_SET}-g1")
    assert [r["rank"]["text"] for r in rows] == ["1–2", "1–2", "3", "—"]
    assert [r["submission"]["text"].split(" control")[0] for r in rows][-1].startswith("control / text-only")
    assert "control: text-only" in rows[-1]["submission"]["text"]
    assert page.tables[f"{PROMPT_SET}-g1"]["row_attrs"][-1].get("class") == "control"
    assert "tie" in rows[0]["rank"]["attrs"]["class"] and "overlaps" in rows[0]["rank"]["attrs"]["title"]
    expected = rank_ties(*zip(*list(values.values())[:3]))
    assert list(expected.best) == [1, 1, 3] and list(expected.worst) == [2, 2, 3]
    downloaded = list(csv.DictReader((site / "data" / f"leaderboard-{PROMPT_SET}-{PROMPT_SET}-g1.csv").open()))
    assert [(r["rank_best"], r["rank_worst"], r["control"]) for r in downloaded] == [
        ("1", "2", ""), ("1", "2", ""), ("3", "3", ""), ("", "", "text-only")]
    # the text-only control scores above a ranked model: the metric is flagged where it is shown, with its tier
    heads = page.heads(f"{PROMPT_SET}-g1")
    assert "validated" in heads[MAIN]["text"] and "arrow only" in heads["cube.quality"]["text"]
    assert "text-only control scores high" in heads[MAIN]["text"]
    assert "text-only control scores high" in Page(site / "metric" / f"{MAIN}.html").plain()


def _set_main(values, **card):
    """An edit that gives the headline's overall entries ``values`` (sid -> value, low, high) and its card ``card``."""
    def edit(sid, summary):
        for c in summary["metrics_info"]:
            if c["name"] == MAIN:
                c.update(card)
        for e in summary["metrics"]:
            if (e["metric"], e["slice_type"]) == (MAIN, "overall") and sid in values:
                e["value"], e["ci_low"], e["ci_high"] = values[sid]
    return edit


def test_a_target_metric_ranks_by_the_distance_to_its_target(world, tmp_path):
    """Closer to 0.9 is better: the submission at 0.9 first, then 0.7 (0.2 away), then 1.2 (0.3 away), where
    "higher" would put 1.2 first and "lower" 0.7; the column sorts by the distance and says what is better."""
    values = {ALPHA: (1.2, 1.19, 1.21), BETA: (0.9, 0.89, 0.91), world["hostile"]: (0.7, 0.69, 0.71)}
    site = rebuild(world, tmp_path, _set_main(values, direction="target", target=0.9))
    page = Page(site / "leaderboard" / f"{PROMPT_SET}.html")
    rows = page.table(f"{PROMPT_SET}-g1")
    order = [r["submission"]["text"] for r in rows[:3]]
    assert order[0].startswith("Other Lab / beta") and order[2].startswith("lab / alpha")
    assert [r["rank"]["text"] for r in rows[:3]] == ["1", "2", "3"]
    head = page.heads(f"{PROMPT_SET}-g1")[MAIN]
    assert head["attrs"]["data-better"] == "lower" and "closer to 0.9 is better" in head["attrs"]["title"]
    assert [float(r[MAIN]["attrs"]["data-sort"]) for r in rows[:3]] == pytest.approx([0.0, 0.2, 0.3])
    assert "closer to 0.9 is better" in Page(site / "metric" / f"{MAIN}.html").plain()


def test_order_lcb_puts_a_surely_good_submission_before_a_wide_one(world, tmp_path):
    """By value alpha (0.90, CI down to 0.60) leads beta (0.85, CI 0.84-0.86); by the lower bound beta leads. The
    rank range is the same tie either way, and the footer says which order the build uses."""
    values = {ALPHA: (0.90, 0.60, 0.99), BETA: (0.85, 0.84, 0.86), world["hostile"]: (0.2, 0.15, 0.25),
              CONTROL: (0.1, 0.05, 0.15)}
    first = {}
    for order in ("value", "lcb"):
        site = rebuild(world, tmp_path / order, _set_main(values), order=order)
        page = Page(site / "leaderboard" / f"{PROMPT_SET}.html")
        rows = page.table(f"{PROMPT_SET}-g1")
        first[order] = rows[0]["submission"]["text"]
        assert [r["rank"]["text"] for r in rows[:2]] == ["1–2", "1–2"]
        assert ("pessimistic end of the 95% CI" in page.plain()) == (order == "lcb")
    assert first["value"].startswith("lab / alpha") and first["lcb"].startswith("Other Lab / beta")


def test_a_text_only_control_below_every_model_flags_nothing(world, tmp_path):
    def edit(sid, summary):
        for e in summary["metrics"]:
            if e["slice_type"] == "overall" and e["value"] is not None:
                low = sid == CONTROL
                e["value"], e["ci_low"], e["ci_high"] = (-9.0, -9.1, -8.9) if low else (e["value"], e["ci_low"], e["ci_high"])

    site = rebuild(world, tmp_path, edit)
    page = Page(site / "leaderboard" / f"{PROMPT_SET}.html")
    assert "text-only control scores high" not in page.source
    flagged = Page(world["site"] / "leaderboard" / f"{PROMPT_SET}.html")  # the real stand-in values, as scored
    higher = {m: e for m, e in ((e["metric"], e) for e in summaries(world)[CONTROL]["metrics"]) if e["slice_type"] == "overall"}
    ranked = [summaries(world)[s] for s in (ALPHA, BETA, world["hostile"])]
    for metric, heads in flagged.heads(f"{PROMPT_SET}-g1").items():
        if metric in higher:
            others = [next(e["value"] for e in s["metrics"] if (e["metric"], e["slice_type"]) == (metric, "overall"))
                      for s in ranked]
            assert ("text-only control scores high" in heads["text"]) == (higher[metric]["value"] >= min(others)), metric


@pytest.mark.parametrize("key", ["scorer revision", "dtype", "metric version"])
def test_results_of_other_scorer_checkpoints_are_ranked_apart(world, tmp_path, key):
    """A result whose scorer checkpoint, dtype or metric version differs is ranked in a group of its own, and the
    page names only what differs."""
    label, value = {"scorer revision": ("scorer siglip2-so400m", "local:another-checkpoint"),
                    "dtype": ("dtype", "bfloat16"), "metric version": (f"metric {MAIN} version", "99")}[key]

    def edit(sid, summary):
        if sid == world["hostile"]:
            provenance = summary["provenance"]
            if key == "dtype":
                provenance["dtype"] = value
            elif key == "metric version":
                provenance["metrics"][MAIN] = int(value)
            else:
                next(s for s in provenance["scorers"] if s["name"] == "siglip2-so400m")["revision"] = value

    site = rebuild(world, tmp_path, edit)
    page = Page(site / "leaderboard" / f"{PROMPT_SET}.html")
    first = [r["submission"]["text"] for r in page.table(f"{PROMPT_SET}-g1")]
    assert len(first) == 3 and not any(HOSTILE[1] in t for t in first)
    apart = page.table(f"{PROMPT_SET}-g2")
    assert [r["rank"]["text"] for r in apart] == ["1"] and HOSTILE[1] in apart[0]["submission"]["text"]
    assert "Ranked separately" in page.plain()
    differs = re.findall(r"<dt>([^<]*)</dt><dd>([^<]*)</dd>", page.source.split('<dl class="differs">', 1)[1])
    assert {dt for dt, _ in differs} == {label} and any(value in dd for _, dd in differs)  # only what differs
    metric = Page(site / "metric" / f"{MAIN}.html")
    assert {f"{PROMPT_SET}-g1", f"{PROMPT_SET}-g2"} <= set(metric.tables)


def test_too_little_data_badge(world, tmp_path):
    era = Page(world["site"] / "era" / "ancient.html")  # one prompt of the dataset is of the ancient era
    rows = era.table(f"{PROMPT_SET}-g1")
    badges = [a for t, a in era.tags if t == "span" and a.get("class") == "badge" and "title" in a]
    assert all("1 prompt: not ranked" in row[MAIN]["text"] for row in rows)
    assert any("fewer than the 5" in b["title"] for b in badges)
    assert all("(no CI: 1 prompt)" in row[MAIN]["text"] and "[" not in row[MAIN]["text"] for row in rows)
    assert {row["rank"]["text"] for row in rows} == {"—"}  # too few prompts to be ranked
    italy = Page(world["site"] / "country" / "IT.html").table(f"{PROMPT_SET}-g1")
    assert all("not ranked" not in row[MAIN]["text"] and "incomplete" not in row[MAIN]["text"] for row in italy)

    def edit(sid, summary):
        for e in summary["metrics"]:
            if sid == ALPHA and (e["metric"], e["slice_type"], e["slice"]) == (MAIN, "country", "IT"):
                e["coverage"], e["complete"] = 0.5, False

    site = rebuild(world, tmp_path, edit)
    page = Page(site / "country" / "IT.html")
    row = next(r for r in page.table(f"{PROMPT_SET}-g1") if r["submission"]["text"].startswith("lab / alpha"))
    assert "incomplete" in row[MAIN]["text"]
    assert any("coverage 50%" in a.get("title", "") for t, a in page.tags if a.get("class") == "badge")


def test_declared_refusals_are_counted_where_they_are_shown(world):
    """CULTIVate's submission declares its first prompt refused (tests/site_worlds.REFUSED): its leaderboard cells
    say "1 refused" (a prompt not scored, and not missing), and its model page counts the refused images."""
    sid = world["base"]["ids"]["cultivate"][0]
    refused = summaries(world)[sid]["provenance"]["refused"]
    assert refused and len({pid for pid, _, _ in refused}) == REFUSED["cultivate"]
    row = next(r for r in Page(world["site"] / "leaderboard" / "cultivate.html").table("cultivate-g1")
               if r["submission"]["text"].startswith("lab / alpha"))
    assert "1 refused" in row[family_of("cultivate")[0].primary("cultivate")]["text"]
    assert f"{len(refused)} image(s) were declared refused" in Page(world["site"] / "model" / f"{sid}.html").plain()
    other = next(r for r in Page(world["site"] / "leaderboard" / f"{PROMPT_SET}.html").table(f"{PROMPT_SET}-g1"))
    assert "refused" not in other[MAIN]["text"]


def test_metric_pages_state_the_chance_level(world):
    """A card's chance level (CUBE's relevance: 1 / number of countries) shows on its metric page; a card
    without one (CUBE's quality) shows none."""
    cards = {c["name"]: c for s in summaries(world).values() for c in s["metrics_info"]}
    assert cards[MAIN]["chance"] == "1 / number of countries of the prompt set" and not cards["cube.quality"].get("chance")
    for name, card in cards.items():
        source = (world["site"] / "metric" / f"{name}.html").read_text(encoding="utf-8")
        shown = re.search(r"<dt>Chance level</dt><dd>([^<]*)</dd>", source)
        assert (shown and html.unescape(shown.group(1))) == (card.get("chance") or None), name


def test_metric_pages_say_what_is_checked_and_what_a_spelling_image_does(world):
    """Every metric page states the copy rule and its threshold; exactly the metrics whose scorer reads text (the
    results' provenance ``written.reads_text``) say what the OCR check does to them."""
    reads = {m for s in summaries(world).values() for m in (s["provenance"].get("written") or {}).get("reads_text", [])}
    cards = {c["name"] for s in summaries(world).values() for c in s["metrics_info"]}
    assert MAIN in reads and "cultdiff.ssim" in cards and "cultdiff.ssim" not in reads
    for name in cards:
        source = (world["site"] / "metric" / f"{name}.html").read_text(encoding="utf-8")
        assert "perceptual-hash distance at most 36 bits" in source, name
        assert ("<em>Spells prompt</em>" in source) == (name in reads), name
    # the text-only control spells its prompts: its page gives those metrics with and without the spelling images
    page = next(p for p in pages(world["site"]) if p.path.name == "control__text-only.html")
    rows = page.table("written")
    assert rows and all(row["with"]["text"] not in ("", "—") for row in rows)


def test_a_slice_without_a_value_is_shown_as_flagged_not_zero():
    """A slice whose every row was flagged (no reference photograph, an unreadable answer) has no value: it shows
    as a dash with "no value" and the flagged count, never as 0. (The stand-in judge now always answers, so the
    five-family world has no such slice: the cell's parts are checked directly.)"""
    from cultureboard.site.names import caveat, num

    entry = {"value": None, "ci_low": None, "ci_high": None, "n_prompts": 6, "complete": True, "n_flagged": 12,
             "flags": {"no reference photograph": 12}}
    badge = caveat(entry)
    assert num(entry["value"]) == "—" and num(0.0) == "0.000"
    assert badge["label"].startswith("no value") and "12 flagged" in badge["label"]
    assert "no reference photograph" in badge["title"]


def test_leaderboards_show_the_headline_and_a_few_readable_metrics(world):
    """Readable titles, not metric names; at most the headline and three others (the rest on the metric pages)."""
    for prompt_set in ("cube-awareness", "cultdiff", "cure-ladder", "cultivate", "ecb"):
        family, spec = family_of(prompt_set)
        page = Page(world["site"] / "leaderboard" / f"{prompt_set}.html")
        heads = page.heads(f"{prompt_set}-g1")
        metrics = [k for k in heads if k in spec.metrics]
        assert metrics[0] == family.primary(prompt_set) and 1 <= len(metrics) <= 4
        for m in metrics:
            assert heads[m]["text"].startswith(family.card(m).title), (m, heads[m]["text"])
            assert not re.search(r"\d\.\d+\s*[,_]\s*\d\.\d+", heads[m]["text"]), heads[m]["text"]
            # a target metric sorts by its distance to the target: lower is better
            assert heads[m]["attrs"].get("data-better") == {"higher": "higher", "lower": "lower",
                                                           "target": "lower"}.get(family.card(m).direction)
        assert heads["rank"]["attrs"]["data-better"] == "lower"
        for m in metrics:  # each metric's name links its page, then the trust page
            assert [a["href"] for t, a in heads[m].get("tags", []) if t == "a"] == [f"../metric/{m}.html", "../trust.html"]
        # the submission and the headline stay in view while the table scrolls sideways (style.css, app.js)
        table = page.tables[f"{prompt_set}-g1"]
        keys = table["keys"]
        assert keys[:3] == ["rank", "submission", metrics[0]]  # the headline beside the submission: on a phone's screen
        assert [(k, h["attrs"].get("class")) for k, h in zip(keys, table["heads"]) if "sticky" in (h["attrs"].get("class") or "")] \
            == [("submission", "sticky s0"), (metrics[0], "sticky s1")]
        for row in table["rows"]:
            assert [c["attrs"]["class"].split()[:2] for c in row[1:3]] == [["sticky", "s0"], ["sticky", "s1"]]
            assert not any("sticky" in (c["attrs"].get("class") or "") for c in row[:1] + row[3:])
        for m in set(spec.metrics) - set(metrics):
            assert (world["site"] / "metric" / f"{m}.html").is_file() or not any(
                m in summaries(world)[s]["provenance"]["metrics"] for s in world["ids"])


def test_scorer_variants_are_shown_as_a_rank_spread(world, tmp_path):
    """CuRe's ITA per OpenCLIP backbone (metrics named <headline>.<backbone>): the spread is the range of a
    submission's ranks over the variants, never of their values, whose scales differ. Each variant here is the
    headline plus its own constant, except that the first two submissions swap places on the WIT backbone."""
    sids = [world["base"]["ids"]["cure-ladder"][0], *world["variants"]["cure-ladder"]]
    variants = sorted(m for m in summaries(world)[sids[0]]["provenance"]["metrics"] if m.startswith("cure.ita.cr"))
    assert len(variants) == 5
    offsets = dict(zip(variants, (0.0, 0.12, -0.3, 0.25, 0.4)))  # cure.ita.cr, .datacomp, .dfn5b, .laion2b, .wit
    headline = dict(zip(sids, (0.3, 0.2, 0.1)))

    def edit(sid, summary):
        for e in summary["metrics"]:
            if sid in headline and e["metric"] in offsets and e["slice_type"] == "overall":
                value = headline[sid] + offsets[e["metric"]]
                if e["metric"] == "cure.ita.cr.wit" and sid in sids[:2]:
                    value = headline[sids[1 - sids.index(sid)]] + offsets[e["metric"]]
                e.update(value=value, ci_low=value - 0.01, ci_high=value + 0.01)

    site = rebuild(world, tmp_path, edit)
    page = Page(site / "leaderboard" / "cure-ladder.html")
    assert page.heads("cure-ladder-g1")["spread"]["text"] == "Rank spread over 5 scorers"
    rows = {Path(next(a["href"] for t, a in r["submission"]["tags"] if t == "a")).stem: r
            for r in page.table("cure-ladder-g1")}
    assert {sid: int(rows[sid]["spread"]["attrs"]["data-sort"]) for sid in sids} == {sids[0]: 1, sids[1]: 1, sids[2]: 0}
    assert "(ranks 1–2, 5 scorers)" in rows[sids[0]]["spread"]["text"]
    assert "worst rank 2 with cure.ita.cr.wit" in rows[sids[0]]["spread"]["attrs"]["title"]
    assert "(ranks 3–3, 5 scorers)" in rows[sids[2]]["spread"]["text"]
    # the second copy declares LAION-5B data: its spread cell (the laion2b backbone's) is badged, no other
    assert [sid for sid in sids if "entangled" in rows[sid]["spread"]["text"]] == [sids[2]]
    assert "entangled" not in rows[sids[2]]["cure.ita.cr"]["text"]  # SigLIP 2 (WebLI) shares nothing with it
    downloaded = {r["submission"]: r for r in csv.DictReader(
        (site / "data" / "leaderboard-cure-ladder-cure-ladder-g1.csv").open(encoding="utf-8"))}
    third = next(r for r in downloaded.values() if r["spread"] == "0")
    assert (third["spread_best_rank"], third["spread_worst_rank"]) == ("3", "3")
    assert "openclip-h14-laion2b was trained on LAION-2B" in third["spread_badges"]


def test_entangled_scores_carry_a_badge(world):
    """beta declares LAION-5B data; HPS v2.1 (cube.quality) was trained on LAION-2B: that cell, and only beta's."""
    assert entangle.overlap(["LAION-2B", "HPDv2"], "a LAION-5B subset") == ["LAION-2B"]
    assert entangle.overlap(["WIT-400M"], "trained with a wit of wisdom") == ["WIT-400M"]  # whole words only
    assert entangle.overlap(["WIT-400M"], "with care") == [] and entangle.overlap(["LAION-2B"], None) == []
    page = Page(world["site"] / "leaderboard" / f"{PROMPT_SET}.html")
    for row in page.table(f"{PROMPT_SET}-g1"):
        beta = row["submission"]["text"] == "Other Lab / beta"
        assert ("entangled" in row["cube.quality"]["text"]) == beta
        assert "entangled" not in row[MAIN]["text"]  # SigLIP 2 (WebLI) shares nothing with it
    assert "LAION-2B" in Page(world["site"] / "model" / f"{BETA}.html").plain()


# --- disparity


def test_disparity_comes_from_results_disparity_and_is_ranked(world):
    """The GN - GS gap of the table equals disparity.gaps on the units' means (paired bootstrap, the evaluator's
    seed and n_boot); the disparity rank is rank_ties on |gap| with the interval of |gap|."""
    page = Page(world["site"] / "leaderboard" / "cure-ladder.html")
    table = page.table("cure-ladder-g1-disparity")
    assert table and (world["site"] / "plots" / "leaderboard-cure-ladder-cure-ladder-g1-frontier.svg").is_file()
    found = {}
    for sid in [world["base"]["ids"]["cure-ladder"][0], *world["variants"]["cure-ladder"]]:
        scores = pd.read_parquet(world["results"] / sid / "scores.parquet")
        summary = summaries(world)[sid]
        rows = scores[(scores["metric"] == "cure.ita.cr") & scores["flag"].isna() & scores["country"].notna()]
        units = rows.groupby("unit_id").agg(value=("value", "mean"), country=("country", "first"),
                                            region=("region_group", "first"))
        settings = summary["provenance"]["settings"]
        gap = next(g for g in gaps(units["value"].to_numpy(), units["country"].to_numpy(), list(units["region"]),
                                   n_boot=settings["n_boot"], seed=settings["seed"]) if g.kind == "region_group")
        found[sid] = gap
    shown = {}
    for row in table:
        link = next(a["href"] for t, a in row["submission"]["tags"] if t == "a")
        shown[Path(link).stem] = (float(row["gap"]["attrs"]["data-sort"]), row["rank"]["text"])
    assert set(shown) == set(found)
    for sid, gap in found.items():
        assert shown[sid][0] == pytest.approx(gap.value)
    spans = {s: (abs(g.value), 0.0 if g.low <= 0 <= g.high else min(abs(g.low), abs(g.high)), max(abs(g.low), abs(g.high)))
             for s, g in found.items()}
    order = sorted(spans)
    ranks = rank_ties(*zip(*(spans[s] for s in order)), higher_is_better=False)
    for s, best, worst in zip(order, ranks.best, ranks.worst):
        assert shown[s][1] == (str(best) if best == worst else f"{best}–{worst}")


def test_model_page_marks_under_represented_countries_by_the_bh_q(world, tmp_path):
    """CultDiff's model ranks countries by their gap to its own mean: the model page marks, for each metric it
    shows, exactly the gaps of cultdiff.leaderboard.underrepresented's rows that disparity.under_represented
    calls served worse (Benjamini-Hochberg q < 0.05 on the worse side: below zero for a similarity, above it for
    a distance). The six prompts are spread over three countries here and copied four times (8 prompts a country),
    Italy's made worse on every metric."""
    from cultureboard.evaluators.families.cultdiff.leaderboard import underrepresented
    from cultureboard.evaluators.results.disparity import under_represented

    sid = world["base"]["ids"]["cultdiff"][0]
    summary = summaries(world)[sid]
    directions = {c["name"]: c["direction"] for c in summary["metrics_info"]}

    def spread_countries(s, frame):
        if s != sid:
            return frame
        prompts = sorted(frame["prompt_id"].unique())
        assert len(prompts) == 6
        place = {p: c for p, c in zip(prompts, ["IT", "IT", "NG", "NG", "ES", "ES"])}
        # four copies of each prompt, 8 a country: with 2 no permutation p can reach q < 0.05 (1 in C(6, 2) = 15)
        frame = pd.concat([frame.assign(prompt_id=frame["prompt_id"] + f"~{k}", unit_id=frame["unit_id"] + f"~{k}",
                                        value=frame["value"] + 0.01 * k) for k in range(4)], ignore_index=True)
        frame["country"] = frame["prompt_id"].str.split("~").str[0].map(place)
        frame["region_group"] = frame["country"].map({"IT": "GN", "NG": "GS", "ES": "GN"})
        worse = frame["metric"].map({m: 0.6 if d == "lower" else -0.6 for m, d in directions.items()})
        frame["value"] = frame["value"] + worse.where(frame["country"] == "IT", 0.0)
        return frame

    site = rebuild(world, tmp_path, scores=spread_countries)
    settings = summary["provenance"]["settings"]
    titles = {c["name"]: c["title"] for c in summary["metrics_info"]}
    page = Page(site / "model" / f"{sid}.html")
    rows = page.table("gaps")
    shown = {titles[m] for m in directions if titles[m] in {r["metric"]["text"] for r in rows}}
    expected = {(titles[g["metric"]], g["name"]) for g in underrepresented(tmp_path / "results" / sid,
                                                                          n_boot=settings["n_boot"], seed=settings["seed"])
                if under_represented(g["kind"], g["value"], g["p_adjusted"], g["direction"])
                and titles[g["metric"]] in shown}
    marked = {(r["metric"]["text"], re.search(r"\((\w\w)\)", r["kind"]["text"]).group(1)) for r in rows
              if "under-represented" in r["gap"]["text"]}
    assert marked == expected
    assert {("DINOv2 similarity to real photographs", "IT"), ("LPIPS distance to real photographs", "IT")} <= marked
    assert len(shown) == 4 and not any(country != "IT" for _, country in marked)


# --- figures and family views


def test_family_slice_types_are_drawn_generically(world):
    """ECB's edit step (integer slices) is a curve per submission; a crossed slice type is a heatmap."""
    ecb = (world["site"] / "plots" / "leaderboard-ecb-ecb-g1-edit_step.svg").read_text()
    lines = re.findall(r'<path class="line"', ecb)
    assert len(lines) == 3 and "Edit step" in ecb  # alpha and its two copies
    assert (world["site"] / "plots" / "leaderboard-ecb-ecb-g1-country_x_edit_step.svg").is_file()
    sid = world["base"]["ids"]["cultdiff"][0]
    model = Page(world["site"] / "model" / f"{sid}.html")
    crossed = [a["src"] for t, a in model.tags if t == "img" and "country_x_category" in a.get("src", "")]
    assert crossed
    svg = (world["site"] / "model" / crossed[0]).resolve().read_text()
    summary = summaries(world)[sid]
    cells = [e for e in summary["metrics"] if e["slice_type"] == "country_x_category" and e["metric"] == "cultdiff.dino"]
    assert cells and len(re.findall(r'class="cell"', svg)) == sum(e["value"] is not None for e in cells)


def test_explanations_of_image_rows_are_labelled_lists(world):
    sid = world["base"]["ids"]["cultivate"][0]
    scores = pd.read_parquet(world["results"] / sid / "scores.parquet")
    row = scores[scores["detail"].notna() & scores["file_name"].notna()].iloc[0]
    detail = json.loads(row["detail"])
    metadata = [json.loads(line) for line in (world["submissions"] / sid / "metadata.jsonl").read_text().splitlines()]
    sha = next(m["sha256"] for m in metadata if m.get("file_name") == row["file_name"])  # the thumbnail is named by it
    page = next(p for p in map(Page, sorted((world["site"] / "model" / sid).glob("images-*.html"))) if sha in p.source)
    cell = next(r["notes"] for r in page.table("images") if sha in str(r["image"]["tags"]))
    labels = [t for t, a in cell["tags"] if t == "dt"]
    assert labels and all(str(k).replace("_", " ") in cell["text"] for k in detail)
    # the cell shows every row of the image: "flagged" when one of them is
    assert ("flagged" in cell["text"]) == scores.loc[scores["file_name"] == row["file_name"], "flag"].notna().any()


def test_explanations_show_the_edit_instruction_whole_and_matches_readably(world, tmp_path):
    """AHEaD's explanation of an image (cultivate.faith's detail): the descriptor-guided edit instruction whole,
    with its line breaks, and each matched descriptor as "reference ← nearest (similarity)", never JSON."""
    from cultureboard.evaluators.families.cultivate.explain import edit_instruction

    lists = {"aligned": [{"dimension": "objects", "reference": "roast turkey", "nearest": "Roast Turkey", "similarity": 0.8123},
                         *({"dimension": "setting", "reference": f"a long table set for a large family, {k}",
                            "nearest": "table", "similarity": 0.61} for k in range(4))],
             "missing": [{"dimension": "attire", "reference": "autumn sweaters", "nearest": None, "similarity": None}],
             "hallucinated": [{"dimension": "attire", "descriptor": "neon club wear", "nearest": "autumn sweaters",
                               "similarity": 0.2149}]}
    instruction = edit_instruction("a family celebrating Thanksgiving", "the United States", lists)
    assert len(instruction) > 300 and instruction.count("\n") == 3 and instruction.endswith("Add: autumn sweaters.")
    sid = world["variants"]["cultivate"][0]
    images = [im for im in map(json.loads, (world["submissions"] / sid / "metadata.jsonl").open()) if "file_name" in im]
    first = min(im["file_name"] for im in images)

    def explained(s, frame):
        rows = (frame["metric"] == "cultivate.faith") & (frame["file_name"] == first)
        if s == sid:
            frame.loc[rows, "detail"] = json.dumps({**lists, "edit_instruction": instruction})
            # the image's other rows (ALIGN's and HAL's own lists) left out: the cell shows this explanation alone
            frame.loc[(frame["file_name"] == first) & ~rows, "detail"] = None
        return frame

    site = rebuild(world, tmp_path, scores=explained)
    sha = next(im["sha256"] for im in images if im["file_name"] == first)
    page = next(p for p in map(Page, sorted((site / "model" / sid).glob("images-*.html"))) if sha in p.source)
    cell = next(r["notes"] for r in page.table("images") if sha in str(r["image"]["tags"]))
    assert " ".join(instruction.split()) in cell["text"] and "…" not in cell["text"]
    assert f'<dd class="text">{instruction}</dd>' in page.source  # line breaks kept (white-space: pre-line)
    items = [t for t, a in cell["tags"] if t == "li"]
    assert len(items) == 7 and "{" not in cell["text"] and "similarity" not in cell["text"]
    for shown in ("objects: roast turkey ← Roast Turkey (0.8123)", "attire: autumn sweaters ← nothing",
                  "attire: neon club wear ← autumn sweaters (0.2149)"):
        assert shown in cell["text"]


def test_family_pages_explain_and_keep_reported_numbers_apart(world):
    for name, family in load_families().items():
        path = world["site"] / "family" / f"{name}.html"
        if not path.is_file():
            continue
        page = Page(path)
        text = page.plain()
        assert family.description[:60] in text and family.title in text
        assert all(any(a.get("href") == url for t, a in page.tags if t == "a") for url in family.papers.values())
        for card in family.metrics:
            assert card.title in text
        reported = load_reported(name) if (REPORTED / f"{name}.yaml").is_file() else []
        for k, table in enumerate(reported, 1):
            shown = page.table(f"reported-{k}")
            assert len(shown) == len(table.rows)
            assert not {"rank", "submission"} & set(page.tables[f"reported-{k}"]["keys"])  # never mixed with ranks
            first = table.printed[0]
            assert all(shown[0][c]["text"] == (first[c] or "—") for c in table.numbers)
        if reported:
            assert "Reported in the paper" in text and "never ranked" in text


def test_world_map_page_colours_countries_by_value(world):
    page = Page(world["site"] / "map" / f"{PROMPT_SET}-g1" / f"{MAIN}.html")
    figure = next(a for t, a in page.tags if t == "figure" and a.get("id") == "worldmap")
    data = json.loads(figure["data-map"])
    assert data["choices"][0]["label"].startswith("Mean") and len(data["choices"]) == 5  # mean, 3 ranked, control
    paths = {a["data-iso"]: a["fill"] for t, a in page.tags if t == "path" and "data-iso" in a}
    assert set(paths) == set(data["countries"]) == {"IT", "NG", "ES"}
    every = [v for choice in data["choices"] for v in choice["values"] if v is not None]
    assert (data["vmin"], data["vmax"]) == (min(every), max(every))  # one scale for every choice
    values = dict(zip(data["countries"], data["choices"][0]["values"]))
    cis = dict(zip(data["countries"], zip(data["choices"][0]["low"], data["choices"][0]["high"])))
    assert paths == worldmap.colours(values, data["vmin"], data["vmax"], cis, data["smallest"], data["centre"])
    mean = np.mean([next(e["value"] for e in summaries(world)[s]["metrics"]
                         if (e["metric"], e["slice_type"], e["slice"]) == (MAIN, "country", "IT"))
                    for s in (ALPHA, BETA, world["hostile"])])
    assert values["IT"] == pytest.approx(mean, abs=1e-6)
    svg = (world["site"] / "plots" / f"leaderboard-{PROMPT_SET}-{PROMPT_SET}-g1-map.svg").read_text()
    assert svg.count('class="country"') == 3 and svg.count('class="outside"') > 150
    fills = dict(re.findall(r'data-iso="(\w\w)" d="[^"]*" fill="(#[0-9a-f]{6})"', svg))
    low, high = min(values, key=values.get), max(values, key=values.get)
    assert worldmap.noise(values, cis) is None  # the tiny scorers' countries differ by more than their CIs are wide
    assert fills == worldmap.colours(values, min(values.values()), max(values.values()), cis, data["smallest"])
    mean = np.mean(list(values.values()))  # the static map spans the means: viridis' ends, where they clear d
    for iso, end in ((low, "#440154"), (high, "#fde725")):
        clear = plots.meaningful(values[iso], *cis[iso], mean, data["smallest"])
        assert fills[iso] == (end if clear else worldmap.UNCOLOURED)


def test_map_shapes_cover_the_countries_and_cross_the_antimeridian_cleanly():
    paths, width, _ = worldmap.shapes()
    assert {"IT", "NG", "ES", "JP", "BR", "US", "RU", "FJ"} <= set(paths) and "AQ" not in paths
    for iso in ("RU", "FJ"):  # cut at the 180th meridian: no stroke spans the map
        xs = [float(x) for x in re.findall(r"[ML](-?[\d.]+) ", paths[iso])]
        ring_spans = [max(r) - min(r) for r in ([float(x) for x in re.findall(r"[ML](-?[\d.]+) ", part)]
                                                 for part in paths[iso].split("Z") if part)]
        assert max(xs) <= width and max(ring_spans) < width / 2, iso
    assert worldmap.equal_earth(0, 0) == (0.0, 0.0)
    x, y = worldmap.equal_earth(180, 0)
    assert x == pytest.approx(2.7066297, abs=1e-6) and y == 0  # Equal Earth's half width at the equator
    assert worldmap.split_at_antimeridian([(170, 60), (-170, 60), (-170, 70), (170, 70)]) == [
        [(180.0, 60.0), (180.0, 70.0), (170, 70), (170, 60)], [(-180.0, 60.0), (-170, 60), (-170, 70), (-180.0, 70.0)]]


def test_gallery_per_prompt_shows_every_submission_side_by_side(world):
    gallery = Page(world["site"] / "gallery" / f"{PROMPT_SET}.html")
    selects = {a["data-field"] for t, a in gallery.tags if t == "select"}
    assert selects == {"country", "category", "era"}
    items = [a for t, a in gallery.tags if t == "li" and "data-country" in a]
    prompts = {p["prompt_id"]: p for p in pd.read_parquet(next((world["dataset"] / "data" / PROMPT_SET).glob("*.parquet"))).to_dict("records")}
    assert len(items) == len(prompts) and {a["data-country"] for a in items} == {"IT", "NG", "ES"}
    link = next(a["href"] for t, a in gallery.tags if t == "a" and "prompt/" in a.get("href", ""))
    page = Page((gallery.path.parent / link).resolve())
    text = page.text
    prompt = next(p for p in prompts.values() if p["text"] in "".join(text))
    images = [a for t, a in page.tags if t == "img"]
    assert len(images) == 4 * prompt["images_per_prompt"]  # alpha, beta, the hostile one and the control
    assert all(a["alt"].startswith(prompt["text"]) for a in images)
    full = [a["href"] for t, a in page.tags if t == "a" and "/images/" in a.get("href", "")]
    assert len(full) == len(images)
    for href in full:
        target = (page.path.parent / href).resolve()
        sid = target.parent.name
        meta = [json.loads(line) for line in (world["submissions"] / sid / "metadata.jsonl").read_text().splitlines()]
        source = next(m for m in meta if m.get("sha256") == target.stem)
        assert target.read_bytes() == (world["submissions"] / sid / source["file_name"]).read_bytes()


def test_the_flat_file_holds_the_boards_values(world):
    """data/scores.csv.gz and .parquet (linked from the home page) hold the same rows, and every score cell of every
    leaderboard and country board download is the flat file's row of that submission, group, metric and slice."""
    site = world["site"]
    links = [a["href"] for t, a in Page(site / "index.html").tags if t == "a"]
    assert "data/scores.csv.gz" in links and "data/scores.parquet" in links
    flat = pd.read_parquet(site / "data" / "scores.parquet")
    from_csv = pd.read_csv(site / "data" / "scores.csv.gz", keep_default_na=False, dtype=str)
    assert list(from_csv.columns) == list(flat.columns) and len(from_csv) == len(flat)
    assert from_csv["value"].tolist() == ["" if pd.isna(v) else repr(float(v)) for v in flat["value"]]
    rows = {(r.display_name, r.group, r.metric, r.slice_type, r.slice): r for r in flat.itertuples()}
    assert len(rows) == len(flat), "two flat rows for one (submission, group, metric, slice)"
    checked = 0
    for path in sorted((site / "data").glob("*.json")):
        data = json.loads(path.read_text(encoding="utf-8"))
        page = data["page"]
        if page.startswith("leaderboard/"):
            slice_type, slice_ = "overall", "all"
        elif page.startswith("country/"):
            slice_type, slice_ = "country", page.removeprefix("country/").removesuffix(".html")
        else:
            continue
        if data["table"] not in set(flat["group"]):  # a disparity table: gaps, not scores
            continue
        metrics = [c.removesuffix("_ci_low") for c in data["columns"] if c.endswith("_ci_low")]
        for row in data["rows"]:
            for m in metrics:
                if row.get(m) is None:
                    continue
                r = rows[(row["submission"], data["table"], m, slice_type, slice_)]
                got = tuple(None if pd.isna(v) else v for v in (r.value, r.ci_low, r.ci_high, r.n_images, r.n_prompts))
                assert got == (
                    row[m], row[f"{m}_ci_low"], row[f"{m}_ci_high"], row[f"{m}_n_images"], row[f"{m}_n_prompts"]), (path.name, m)
                who = [k for k in ("generated_by", "scored_by", "release_date", "parameters") if k in row]
                assert who[:2] == ["generated_by", "scored_by"], path.name
                assert tuple(None if pd.isna(getattr(r, k)) else getattr(r, k) for k in who) == tuple(
                    row.get(k) or None for k in who), (path.name, m)
                checked += 1
    assert checked > 50, checked


def test_downloads_match_the_tables(world):
    site = world["site"]
    checked = 0
    targets = {c.name: c.target for f in load_families().values() for c in f.metrics if c.direction == "target"}
    for page in pages(site):
        links = [a["href"] for t, a in page.tags
                 if t == "a" and a.get("href", "").endswith((".csv", ".csv.gz", ".json"))]
        for table_id in page.tables:
            csv_href = next(h for h in links if h.endswith((f"-{table_id}.csv", f"-{table_id}.csv.gz")))
            csv_path = (page.path.parent / csv_href).resolve()
            if csv_href.endswith(".gz"):  # a table of every image: one gzipped CSV, no JSON
                assert table_id == "images" and not csv_path.with_name(f"{csv_path.name[:-7]}.json").exists()
                with gzip.open(csv_path, "rt", encoding="utf-8") as fh:
                    downloaded = list(csv.DictReader(fh))
            else:
                downloaded = list(csv.DictReader(csv_path.open(encoding="utf-8")))
                data = json.loads(csv_path.with_suffix(".json").read_text(encoding="utf-8"))
                assert data["columns"] == list(downloaded[0]) and len(data["rows"]) == len(downloaded)
                assert [{k: "" if v is None else str(v) for k, v in r.items()} for r in data["rows"]] == downloaded
            rows = page.table(table_id)
            if "images-" in page.path.name:  # a page of the image browser shows a part of the download
                offset = 48 * (int(page.path.stem.split("-")[1]) - 1)
                downloaded = downloaded[offset: offset + len(rows)]
            elif page.path.name == "index.html":  # the overview shows the top of each leaderboard
                downloaded = downloaded[: len(rows)]
            assert len(rows) == len(downloaded), (page.path, table_id)
            for shown, row in zip(rows, downloaded):
                for key, cell in shown.items():
                    if f"{key}_best" in row:
                        best, worst = row[f"{key}_best"], row[f"{key}_worst"]
                        assert cell["text"] == ("—" if not best else best if best == worst else f"{best}–{worst}")
                    elif key in ("image", "notes"):
                        continue
                    elif "data-sort" in cell["attrs"] and key in targets:  # sorted by the distance to the target
                        assert float(cell["attrs"]["data-sort"]) == pytest.approx(abs(float(row[key]) - targets[key]))
                    elif "data-sort" in cell["attrs"]:
                        assert cell["attrs"]["data-sort"] == row[key], (page.path, key)
                    elif cell["text"] and not [t for t, a in cell["tags"] if t == "span"]:
                        assert cell["text"] == (row[key] or "—"), (page.path, key)
            checked += 1
    assert checked > 60


def test_csv_cells_that_a_spreadsheet_would_run_are_quoted(tmp_path):
    site = Site(tmp_path)
    rows = [{"x": text} for text in ("=1+1", "-2+3", "@SUM(A1)", "+1", "\tx", "-0.1078", "+0.4", "0.019*", "plain")]
    table = site.table("p.html", "t", [Column("x", "X", "text")], rows)
    cells = [row[0] for row in csv.reader((tmp_path / table.csv).open())][1:]
    assert cells == ["'=1+1", "'-2+3", "'@SUM(A1)", "+1", "'\tx", "-0.1078", "+0.4", "0.019*", "plain"]
    assert [r["x"] for r in json.loads((tmp_path / table.json).read_text())["rows"]][:2] == ["=1+1", "-2+3"]


def test_thumbnails_are_webp_and_link_to_the_full_size_file(world):
    for sid in (ALPHA, BETA):
        thumbs = sorted((world["site"] / "thumbs" / sid).glob("*.webp"))
        metadata = (world["submissions"] / sid / "metadata.jsonl").read_text().splitlines()
        assert len(thumbs) == len(metadata) == len(list((world["site"] / "images" / sid).glob("*.png")))
        for path in thumbs[:10]:
            with Image.open(path) as img:
                assert img.format == "WEBP" and max(img.size) <= 256
    page = Page(world["site"] / "model" / ALPHA / "images-1.html")
    shown = [a["src"] for t, a in page.tags if t == "img" and a["src"].startswith("../../thumbs/")]
    metadata = (world["submissions"] / ALPHA / "metadata.jsonl").read_text().splitlines()
    assert len(shown) == min(48, len(metadata)) and all((page.path.parent / src).is_file() for src in shown)
    pairs = [(t, a) for t, a in page.tags if t in ("a", "img")]
    for (t1, a1), (t2, a2) in itertools.pairwise(pairs):
        if t2 == "img" and a2["src"].startswith("../../thumbs/"):
            assert t1 == "a" and Path(a1["href"]).stem == Path(a2["src"]).stem and a2["alt"]


def test_submissions_still_validate_after_a_site_build(world):
    """The site copies full-size images: a hard link would give every submitted file a second link, which the
    validator refuses."""
    from cultureboard.evaluators.submission.validate import validate

    for sid in (ALPHA, BETA):
        files = [p for p in (world["submissions"] / sid).rglob("*") if p.is_file()]
        assert files and all(p.stat().st_nlink == 1 for p in files)
        report = validate(world["submissions"] / sid, world["dataset"])
        assert not [p for p in report.problems if p.severity == "error"], report.problems[:3]


def test_two_builds_are_identical(world, tmp_path):
    site = rebuild(world, tmp_path)  # the build replaces the copied folder whole; only thumbnails are reused
    files = sorted(p.relative_to(world["site"]) for p in world["site"].rglob("*")
                   if p.is_file() and "thumbs" not in p.parts)
    assert [p for p in files if p.suffix == ".html"]
    for rel in files:
        assert (site / rel).read_bytes() == (world["site"] / rel).read_bytes(), rel


def test_a_rebuild_links_unchanged_files_and_writes_changed_ones(world, tmp_path):
    """A build into the earlier site links each file whose bytes are unchanged (the same inode) and writes the
    others: a changed value and metric version reach the pages and downloads that show them."""
    site = shutil.copytree(world["site"], tmp_path / "site")
    results = shutil.copytree(world["results"], tmp_path / "results")
    files = lambda: {p.relative_to(site): p.stat().st_ino for p in site.rglob("*")  # noqa: E731
                     if p.is_file() and p.parts[len(site.parts)] in ("model", "family", "data", "leaderboard")}
    before = files()
    build_site(results, world["dataset"], world["submissions"], site, built=BUILT)
    assert files() == before
    path = results / ALPHA / "summary.json"
    summary = json.loads(path.read_text())
    entry = next(e for e in summary["metrics"]
                 if (e["metric"], e["slice_type"], e["slice"]) == (MAIN, "overall", "all"))
    entry.update(value=0.4321, ci_low=0.4, ci_high=0.45)
    summary["provenance"]["metrics"][MAIN] = 99
    path.write_text(json.dumps(summary))
    build_site(results, world["dataset"], world["submissions"], site, built=BUILT)
    after = files()
    model = Path("model") / f"{ALPHA}.html"
    assert after[model] != before[model] and "0.432" in (site / model).read_text()
    assert any(f"{MAIN}=99" in p.read_text() for p in (site / "data").glob(f"model-{ALPHA}-*.json"))
    assert after[Path("family") / "ecb.html"] == before[Path("family") / "ecb.html"]
    build_site(results, world["dataset"], world["submissions"], site, built=BUILT)
    assert files() == after
    entry["value"] = 0.4287  # the same number of characters: the page keeps its size, not its bytes
    path.write_text(json.dumps(summary))
    build_site(results, world["dataset"], world["submissions"], site, built=BUILT)
    assert "0.429" in (site / model).read_text() and "0.432" not in (site / model).read_text()


# --- trust


def test_ratings_grey_a_diagnostic_metric_and_keep_it_from_the_headline(world, tmp_path):
    ratings = tmp_path / "ratings"
    ratings.mkdir()
    rows = [  # the trust-map layout (results/trust.py): Italy too few items, Nigeria a CI that rules agreement out
        {"metric": MAIN, "human": "cultural relevance", "slice_type": "overall", "slice": "all", "n": 60, "rho": 0.45,
         "rho_low": 0.2, "rho_high": 0.62, "diagnostic": False, "reason": "x"},
        {"metric": MAIN, "human": "cultural relevance", "slice_type": "country", "slice": "IT", "n": 12, "rho": 0.5,
         "rho_low": 0.1, "rho_high": 0.8, "diagnostic": True, "reason": "x"},
        {"metric": MAIN, "human": "cultural relevance", "slice_type": "country", "slice": "NG", "n": 40, "rho": 0.02,
         "rho_low": -0.2, "rho_high": 0.25, "diagnostic": True, "reason": "x"}]
    (ratings / "validity.json").write_text(json.dumps({"validity": rows}))
    old = tmp_path / "old.json"  # the ratings import's own layout: Pearson and Spearman per country, no CI
    old.write_text(json.dumps({"n_items": 12, "correlations": [
        {"metric": "cube.faithfulness", "target": "faithfulness", "country": None, "n": 12, "pearson": 0.41,
         "pearson_p": 0.18, "spearman": 0.38, "spearman_p": 0.22}]}))
    site = rebuild(world, tmp_path, ratings=[ratings, old])
    for country, diagnostic in (("IT", True), ("NG", True), ("ES", False)):
        page = Page(site / "country" / f"{country}.html")
        heads = page.heads(f"{PROMPT_SET}-g1")
        assert ("diagnostic here" in heads[MAIN]["text"]) == diagnostic, country
        ranks = {row["rank"]["text"] for row in page.table(f"{PROMPT_SET}-g1")}
        assert (ranks == {"—"}) == diagnostic, (country, ranks)  # never ranked by a diagnostic headline
        if diagnostic:
            assert "muted" in heads[MAIN]["attrs"].get("class", "")
    badge = next(a["title"] for t, a in Page(site / "country" / "NG.html").tags
                 if t == "span" and a.get("title", "").startswith("Only a diagnostic"))
    assert "0.25 < 0.3" in badge
    metric = Page(site / "metric" / f"{MAIN}.html").table("human-ratings")
    assert [r["slice"]["text"] for r in metric] == ["all", "Italy (IT)", "Nigeria (NG)"]
    assert [r["verdict"]["text"].split(":")[0] for r in metric] == ["usable", "diagnostic only", "diagnostic only"]
    trust = Page(site / "trust.html")
    assert len(trust.table("trust")) == 4
    nigeria = next(r for r in trust.table("trust") if r["slice"]["text"] == "Nigeria (NG)")
    assert nigeria["verdict"]["text"].startswith("diagnostic only")
    assert any(a.get("href") == "trust.html" for t, a in Page(site / "index.html").tags if t == "a")
    faith = Page(site / "metric" / "cube.faithfulness.html").table("human-ratings")
    assert [(r["n"]["text"], r["rho"]["text"]) for r in faith] == [("12", "0.380")]
    assert "too few rated items" in faith[0]["verdict"]["text"]


# --- scale, input checks, callers


def test_fifty_submissions_keep_pages_small(world, tmp_path):
    """50 submissions of cube-awareness (images left on the Hub, so no thumbnails): every page under 200 KB."""
    results, submissions = tmp_path / "results", tmp_path / "submissions"
    for k in range(50):
        source = (ALPHA, BETA, world["hostile"])[k % 3]
        sid = f"org{k:02d}__model"
        shutil.copytree(world["results"] / source, results / sid)
        (submissions / sid).mkdir(parents=True)
        spec = yaml.safe_load((world["submissions"] / source / "submission.yaml").read_text())
        spec["images"]["location"] = "hf://datasets/org/images@main"
        (submissions / sid / "submission.yaml").write_text(yaml.safe_dump(spec))
        shutil.copy(world["submissions"] / source / "metadata.jsonl", submissions / sid)
    summary = build_site(results, world["dataset"], submissions, tmp_path / "site", built=BUILT)
    assert summary["thumbnails"] == 0 and summary["largest_page_bytes"] < 200_000
    assert len(Page(tmp_path / "site" / "leaderboard" / f"{PROMPT_SET}.html").table(f"{PROMPT_SET}-g1")) == 50
    assert len(Page(tmp_path / "site" / "index.html").table(f"{PROMPT_SET}-g1")) == 10
    model = (tmp_path / "site" / "model" / "org00__model.html").read_text()
    assert "on the Hub" in model
    image = Page(tmp_path / "site" / "model" / "org00__model" / "images-1.html")
    hub = [a["href"] for t, a in image.tags if t == "a" and a.get("href", "").startswith("https://huggingface.co/")]
    assert hub and hub[0].startswith("https://huggingface.co/datasets/org/images/resolve/main/images/")


def test_thumbnail_workers_do_not_need_the_callers_main_module(world, tmp_path):
    """A build started from a script read on stdin (no importable __main__) makes its thumbnails in worker
    processes all the same; each submission's pages, rendered as soon as the workers have done its images, are
    those of a build whose few images were made by threads, before any page."""
    script = textwrap.dedent(f"""
        from cultureboard.site import thumbs
        from cultureboard.site.render import build_site
        thumbs.PROCESS_THRESHOLD = 1
        info = build_site({str(world['results'])!r}, {str(world['dataset'])!r}, {str(world['submissions'])!r},
                          {str(tmp_path / 'site')!r}, built={BUILT!r}, workers=2)
        print(info["thumbnails"], info["missing_images"])
    """)
    done = subprocess.run([sys.executable, "-"], input=script, capture_output=True, text=True, timeout=600,
                          cwd=tmp_path, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    made, missing = map(int, done.stdout.split()[-2:])
    assert made == world["summary"]["thumbnails"] and missing == 0
    for path in sorted((tmp_path / "site" / "thumbs" / ALPHA).glob("*.webp"))[:5]:
        assert path.read_bytes() == (world["site"] / "thumbs" / ALPHA / path.name).read_bytes()
    pages = sorted(p.relative_to(tmp_path / "site") for p in (tmp_path / "site").rglob("*.html"))
    assert pages == sorted(p.relative_to(world["site"]) for p in world["site"].rglob("*.html"))
    assert [p for p in pages if (tmp_path / "site" / p).read_bytes() != (world["site"] / p).read_bytes()] == []


def test_a_thumbnail_worker_sends_its_statuses_batched_but_often(monkeypatch):
    """A worker writes a status line per job and sends them (flushes) once FLUSH_SECONDS have passed since it last
    did (the rest as it exits): the parent is not woken for every image, and a working worker is never silent for long.
    (A clock advancing 0.1 s at each look stands in for the jobs' time.) The lines are held by the worker itself, so an
    unbuffered stdout (PYTHONUNBUFFERED) still gets one write a batch."""
    import io
    import json
    import types

    from cultureboard.site import thumbs

    ticks = iter(range(1000))
    monkeypatch.setattr(thumbs, "time", types.SimpleNamespace(monotonic=lambda: next(ticks) / 10))
    monkeypatch.setattr(thumbs, "FLUSH_SECONDS", 0.25)
    monkeypatch.setattr(thumbs, "media", lambda *job: (f"ok {job[0]}", None))

    class Stdout(io.StringIO):
        sent: list[int] = []  # the lines written at each flush
        writes = 0  # unbuffered (PYTHONUNBUFFERED, -u), each write reaches the parent at once

        def flush(self):
            self.sent.append(self.getvalue().count("\n"))

        def write(self, text):
            Stdout.writes += 1
            return super().write(text)

    out = Stdout()
    monkeypatch.setattr(sys, "stdin", io.StringIO(json.dumps({"px": 64, "jobs": [[k] for k in range(10)]})))
    monkeypatch.setattr(sys, "stdout", out)
    thumbs.main()
    assert [json.loads(line) for line in out.getvalue().splitlines()] == [[f"ok {k}", None] for k in range(10)]
    assert out.sent == [3, 6, 9]  # the clock: 0 at the start, then 0.1 after each job, 0.1 more after a flush
    assert Stdout.writes == 4  # the lines are held by the worker, not by the stream: three batches and the rest


def test_gallery_links_name_the_galleries_before_any_image_is_made():
    """The pages rendered while the thumbnails are made link the galleries from gallery_links: a gallery for each
    prompt set with images (build_site checks that gallery_pages wrote exactly those), none for one without."""
    import types

    from cultureboard.site.gallery import gallery_links

    def group(*image_counts):
        return types.SimpleNamespace(everyone=[types.SimpleNamespace(images=[{}] * n) for n in image_counts])

    board = types.SimpleNamespace(groups={"a": [group(0, 0)], "b": [group(0), group(0, 3)], "c": [group(2)]})
    assert gallery_links(board) == {"b": "gallery/b.html", "c": "gallery/c.html"}


def test_refuses_bad_input_and_foreign_folders(world, tmp_path):
    foreign = tmp_path / "mine"
    foreign.mkdir()
    (foreign / "notes.txt").write_text("keep me")
    with pytest.raises(CultureboardError, match="will not be overwritten"):
        build_site(world["results"], world["dataset"], world["submissions"], foreign)
    assert (foreign / "notes.txt").read_text() == "keep me"
    with pytest.raises(CultureboardError, match="holds no results"):
        build_site(tmp_path / "empty", world["dataset"], world["submissions"], tmp_path / "out")
    with pytest.raises(CultureboardError, match="lacks"):
        build_site(world["results"], world["dataset"], tmp_path, tmp_path / "out")
    with pytest.raises(CultureboardError, match="has none of validity.json, correlations.json"):
        build_site(world["results"], world["dataset"], world["submissions"], tmp_path / "out", ratings=tmp_path)
    assert not (tmp_path / "out").exists()


def test_every_page_links_the_trust_page_and_metric_pages_say_why_their_direction(world):
    site = world["site"]
    for page in (Page(site / "index.html"), Page(site / "country" / "IT.html")):
        assert any(t == "a" and a.get("href", "").endswith("trust.html") for t, a in page.tags)
    metric = Page(site / "metric" / f"{family_of('cure-ladder')[0].primary('cure-ladder')}.html")
    assert any(t == "a" and a.get("href", "").endswith("trust.html") for t, a in metric.tags)
    card = family_of("cure-ladder")[0].card(family_of("cure-ladder")[0].primary("cure-ladder"))
    assert html.escape(card.direction_evidence[:40], quote=False) in (site / "metric" / f"{card.name}.html").read_text()


def test_the_evidence_page_lists_every_card_with_its_tier_and_the_rule(world):
    from cultureboard.evaluators.engine.registry import metric_cards
    from cultureboard.evaluators.results.tiers import RULE

    page = Page(world["site"] / "evidence.html")
    rows = {r["metric"]["text"]: r for r in page.table("evidence")}
    assert sorted(rows) == sorted(metric_cards())
    assert rows["cultivate.faith"]["tier"]["text"] == "validated" and "0.72 of the human-human 0.58" in rows[
        "cultivate.faith"]["why"]["text"]
    assert rows["cube.within.vs.artifact"]["tier"]["text"] == "diagnostic"
    assert " ".join(RULE.split()) in page.plain()
    assert 'href="evidence.html"' in (world["site"] / "index.html").read_text()


def test_near_reference_images_are_counted_on_the_board_the_model_page_and_the_flat_file(world, tmp_path):
    """CultDiff's results record the near-reference check (evaluators/engine/near_reference.py): a result that left
    two images out says "2 of N" in its board row's Near reference cell and on its model page, the flat file's row
    of each checked metric over all prompts holds the count, and the metric pages say what the flag does. A board
    of a family without similarity-to-reference metrics has no such column."""
    sid = world["base"]["ids"]["cultdiff"][0]
    block = summaries(world)[sid]["near_reference"]
    assert set(block) == {"cultdiff.dino", "cultdiff.clip", "cultdiff.lpips", "cultdiff.dreamsim", "cultdiff.ssim",
                          "cultdiff.learned"} and {b["status"] for b in block.values()} == {"checked"}

    def edit(s, summary):
        if s == sid:
            for entry in summary["near_reference"].values():
                entry["left_out"] = 2

    site = rebuild(world, tmp_path, edit)
    page = Page(site / "leaderboard" / "cultdiff.html")
    table = next(t for t in page.tables if t and t.startswith("cultdiff-g"))
    cells = [row["near_reference"]["text"] for row in page.table(table)]
    checked = block["cultdiff.dino"]["checked"]
    assert f"2 of {checked}" in cells and all(c.endswith(f" of {checked}") for c in cells), cells
    assert "near_reference" not in Page(site / "leaderboard" / f"{PROMPT_SET}.html").tables[f"{PROMPT_SET}-g1"]["keys"]
    text = Page(site / "model" / f"{sid}.html").plain()
    assert "left out of every similarity-to-reference metric as near_reference" in text and "cultdiff.dino (2)" in text
    flat = pd.read_parquet(site / "data" / "scores.parquet")
    mine = flat[(flat.submission == sid) & (flat.metric == "cultdiff.dino")]
    assert mine[mine.slice_type == "overall"].near_reference_left_out.tolist() == [2]
    assert mine[mine.slice_type != "overall"].near_reference_left_out.isna().all()
    assert flat[flat.family == "cube"].near_reference_left_out.isna().all()
    metric_page = (site / "metric" / "cultdiff.dino.html").read_text(encoding="utf-8")
    assert "<em>near_reference</em> and left out of this metric" in metric_page and "checked (cosine at least" in metric_page
    assert "near_reference" not in (site / "metric" / f"{MAIN}.html").read_text(encoding="utf-8")
