"""The static site built from real results of three submissions (tiny scorers, two countries): pages for
every slice, links that resolve offline, no external request, CSP and no inline code, hostile strings
escaped, tied ranks, comparability groups, the too-little-data badge, downloads equal to the tables,
thumbnails, determinism and page size. No browser here: browser tests live elsewhere."""

from __future__ import annotations

import csv
import json
import re
import shutil
from html.parser import HTMLParser
from pathlib import Path

import pytest
import yaml
from PIL import Image

from cultureboard.errors import CultureboardError
from cultureboard.evaluators.results.stats import rank_ties
from cultureboard.evaluators.engine.registry import family_of
from cultureboard.site.render import CSP, build_site
from results_factory import WIDTH, evaluate_all, make_dataset, make_submission

PROMPT_SET = "cube-awareness"
MAIN = family_of(PROMPT_SET)[0].primary(PROMPT_SET)
HOSTILE = ("<script>alert(1)</script>", '"><img src=x onerror=alert(1)>', "' onmouseover='x")
HOSTILE_SPEC = {"model": {"training_data": HOSTILE[0], "links": ["javascript:alert(1)", 'https://example.org/"onmouseover="x']}}


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    root = tmp_path_factory.mktemp("site")
    dataset = make_dataset(root / "dataset")
    subs = [make_submission(root / "submissions", dataset, PROMPT_SET, model=m) for m in ("alpha", "beta")]
    subs.append(make_submission(root / "submissions", dataset, PROMPT_SET, organization=HOSTILE[0], model=HOSTILE[1],
                                tag=HOSTILE[2], spec=HOSTILE_SPEC))
    results = evaluate_all(subs, dataset, root / "results", root / "work")
    summary = build_site(results, dataset, root / "submissions", root / "site", page_size=48)
    return {"root": root, "dataset": dataset, "submissions": root / "submissions", "results": results,
            "site": root / "site", "summary": summary, "ids": sorted(s.name for s in subs), "hostile": subs[2].name}


def rebuild(world, tmp_path: Path, edit=None, **options) -> Path:
    """Build again from a copy of the results, ``edit(id, summary)`` applied to each; the earlier site is
    copied first, so its thumbnails are reused."""
    results = tmp_path / "results"
    shutil.copytree(world["results"], results)
    for folder in sorted(p for p in results.iterdir() if p.is_dir()):
        if edit:
            summary = json.loads((folder / "summary.json").read_text())
            edit(folder.name, summary)
            (folder / "summary.json").write_text(json.dumps(summary))
    site = tmp_path / "site"
    shutil.copytree(world["site"], site)
    build_site(results, world["dataset"], world["submissions"], site, **options)
    return site


class Page(HTMLParser):
    """A parsed page: its tags, script bodies, text, and each table's column keys and body cells."""

    def __init__(self, path: Path):
        super().__init__(convert_charrefs=True)
        self.path, self.source = path, path.read_text(encoding="utf-8")
        self.tags: list[tuple[str, dict]] = []
        self.scripts: list[str] = []
        self.text: list[str] = []
        self.tables: dict[str, dict] = {}
        self._table = self._cell = self._script = None
        self._body = False
        self.feed(self.source)
        self.close()

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        self.tags.append((tag, attrs))
        if tag == "table":
            self._table = self.tables.setdefault(attrs.get("id"), {"keys": [], "rows": []})
        elif tag == "th" and self._table is not None:
            self._table["keys"].append(attrs.get("data-key"))
        elif tag == "tbody":
            self._body = True
        elif tag == "tr" and self._body:
            self._table["rows"].append([])
        elif tag == "td" and self._body:
            self._cell = {"attrs": attrs, "text": []}
            self._table["rows"][-1].append(self._cell)
        elif tag == "script":
            self._script = []

    def handle_endtag(self, tag):
        if tag == "td" and self._cell is not None:
            self._cell["text"] = "".join(self._cell["text"]).strip()
            self._cell = None
        elif tag == "tbody":
            self._body = False
        elif tag == "table":
            self._table = None
        elif tag == "script":
            self.scripts.append("".join(self._script))
            self._script = None

    def handle_data(self, data):
        self.text.append(data)
        for sink in (self._cell and self._cell["text"], self._script):
            if sink is not None:
                sink.append(data)

    def table(self, table_id: str) -> list[dict]:
        """Body rows as {column key: cell}."""
        t = self.tables[table_id]
        return [dict(zip(t["keys"], row)) for row in t["rows"]]


def pages(site: Path) -> list[Page]:
    return [Page(p) for p in sorted(site.rglob("*.html"))]


def slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")


def summaries(world) -> dict[str, dict]:
    return {sid: json.loads((world["results"] / sid / "summary.json").read_text()) for sid in world["ids"]}


def test_pages_for_every_slice_model_image_page_and_metric(world):
    site = world["site"]
    folders = {"country": "country", "region_group": "region", "continent": "region", "era": "era", "category": "category"}
    expected = {"index.html", "slices.html", "metrics.html"}
    for sid, summary in summaries(world).items():
        expected |= {f"model/{sid}.html"} | {f"model/{sid}/images-{n}.html" for n in range(1, 5)}  # 176 images / 48
        expected |= {f"metric/{card['name']}.html" for card in summary["metrics_info"]}
        for e in summary["metrics"]:
            if e["slice_type"] in folders:
                name = e["slice"] if e["slice_type"] == "country" else slug(e["slice"])
                expected.add(f"{folders[e['slice_type']]}/{name}.html")
    assert {"country/IT.html", "country/NG.html", "region/gn.html", "region/gs.html", "region/europe.html",
            "region/africa.html", "category/cuisine.html", "era/medieval.html"} <= expected
    built = {p.relative_to(site).as_posix() for p in site.rglob("*.html")}
    assert built == expected
    assert world["summary"]["pages"] == len(expected)
    it = Page(site / "country" / "IT.html")
    assert {row["submission"]["text"] for row in it.table(f"{PROMPT_SET}-g1")} == set(world["ids"])
    assert not (site / "model" / world["ids"][0] / "images-5.html").exists()


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
                else:
                    assert not re.match(r"^([a-z]+:|/)", value), f"{page.path}: {name}={value} is not relative"
                    target = (page.path.parent / value.split("#")[0]).resolve()
                    assert target.is_file() and target.is_relative_to(site), f"{page.path}: {value} is missing"
    for path in [site / "static" / "app.js", site / "static" / "style.css", *site.glob("plots/*.svg")]:
        text = path.read_text()
        assert not re.search(r"url\(|@import|fetch\(|XMLHttpRequest|https?://(?!www\.w3\.org/)", text), path


def test_csp_on_every_page_and_no_inline_code(world):
    for page in pages(world["site"]):
        csp = [a for t, a in page.tags if t == "meta" and a.get("http-equiv") == "Content-Security-Policy"]
        assert [a["content"] for a in csp] == [CSP], page.path
        for tag, attrs in page.tags:
            assert not [a for a in attrs if a.startswith("on") or a == "style"], f"{page.path}: <{tag} {attrs}>"
            if tag == "script":
                assert attrs.get("src", "").endswith("static/app.js")
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
    assert {row["model"]["text"] for row in index} >= {f"{HOSTILE[0]}/{HOSTILE[1]}"}


def test_overlapping_cis_are_tied_ranks(world, tmp_path):
    values = {"lab__alpha": (0.90, 0.85, 0.95), "lab__beta": (0.88, 0.80, 0.91), world["hostile"]: (0.50, 0.45, 0.55)}

    def edit(sid, summary):
        for e in summary["metrics"]:
            if (e["metric"], e["slice_type"]) == (MAIN, "overall"):
                e["value"], e["ci_low"], e["ci_high"] = values[sid]

    site = rebuild(world, tmp_path, edit)
    rows = Page(site / "index.html").table(f"{PROMPT_SET}-g1")
    assert [(r["submission"]["text"], r["rank"]["text"]) for r in rows] == [
        ("lab__alpha", "1–2"), ("lab__beta", "1–2"), (world["hostile"], "3")]
    assert "tie" in rows[0]["rank"]["attrs"]["class"] and "overlaps" in rows[0]["rank"]["attrs"]["title"]
    expected = rank_ties(*zip(*values.values()))
    assert list(expected.best) == [1, 1, 3] and list(expected.worst) == [2, 2, 3]
    downloaded = list(csv.DictReader((site / "data" / f"index-{PROMPT_SET}-g1.csv").open()))
    assert [(r["rank_best"], r["rank_worst"]) for r in downloaded] == [("1", "2"), ("1", "2"), ("3", "3")]


def test_results_of_other_scorer_checkpoints_are_ranked_apart(world, tmp_path):
    def edit(sid, summary):
        if sid == world["hostile"]:
            for s in summary["provenance"]["scorers"]:
                if s["name"] == "siglip2-so400m":
                    s["revision"] = "local:another-checkpoint"

    site = rebuild(world, tmp_path, edit)
    index = Page(site / "index.html")
    assert [r["submission"]["text"] for r in index.table(f"{PROMPT_SET}-g1")] == ["lab__alpha", "lab__beta"]
    apart = index.table(f"{PROMPT_SET}-g2")
    assert [(r["submission"]["text"], r["rank"]["text"]) for r in apart] == [(world["hostile"], "1")]
    text = " ".join("".join(index.text).split())
    assert "Ranked separately" in text and "local:another-checkpoint" in text
    assert "scorer siglip2-so400m" in text and "scorer hpsv2.1" not in text  # only what differs
    metric = Page(site / "metric" / f"{MAIN}.html")
    assert {f"{PROMPT_SET}-g1", f"{PROMPT_SET}-g2"} <= set(metric.tables)


def test_too_little_data_badge(world, tmp_path):
    era = Page(world["site"] / "era" / "ancient.html")  # one prompt of the dataset is of the ancient era
    rows = era.table(f"{PROMPT_SET}-g1")
    badges = [a for t, a in era.tags if t == "span" and a.get("class") == "badge" and "title" in a]
    assert all("few prompts" in row[MAIN]["text"] for row in rows) and "fewer than 5" in badges[0]["title"]
    assert {row["rank"]["text"] for row in rows} == {"—"}  # too few prompts to be ranked
    italy = Page(world["site"] / "country" / "IT.html").table(f"{PROMPT_SET}-g1")
    assert all("few prompts" not in row[MAIN]["text"] and "incomplete" not in row[MAIN]["text"] for row in italy)

    def edit(sid, summary):
        for e in summary["metrics"]:
            if sid == "lab__alpha" and (e["metric"], e["slice_type"], e["slice"]) == (MAIN, "country", "IT"):
                e["coverage"], e["complete"] = 0.5, False

    site = rebuild(world, tmp_path, edit)
    page = Page(site / "country" / "IT.html")
    row = next(r for r in page.table(f"{PROMPT_SET}-g1") if r["submission"]["text"] == "lab__alpha")
    assert "incomplete" in row[MAIN]["text"]
    assert any("coverage 50%" in a.get("title", "") for t, a in page.tags if a.get("class") == "badge")


def test_downloads_match_the_tables(world):
    site = world["site"]
    checked = 0
    for page in pages(site):
        links = [a["href"] for t, a in page.tags if t == "a" and a.get("href", "").endswith((".csv", ".json"))]
        for table_id, table in page.tables.items():
            csv_href = next(h for h in links if h.endswith(f"-{table_id}.csv"))
            csv_path = (page.path.parent / csv_href).resolve()
            downloaded = list(csv.DictReader(csv_path.open(encoding="utf-8")))
            data = json.loads(csv_path.with_suffix(".json").read_text(encoding="utf-8"))
            assert data["columns"] == list(downloaded[0]) and len(data["rows"]) == len(downloaded)
            assert [{k: "" if v is None else str(v) for k, v in r.items()} for r in data["rows"]] == downloaded
            rows = page.table(table_id)
            if "images-" in page.path.name:  # a page of the image browser shows a part of the download
                offset = 48 * (int(page.path.stem.split("-")[1]) - 1)
                downloaded = downloaded[offset: offset + len(rows)]
            assert len(rows) == len(downloaded), (page.path, table_id)
            for shown, row in zip(rows, downloaded):
                for key, cell in shown.items():
                    if f"{key}_best" in row:
                        best, worst = row[f"{key}_best"], row[f"{key}_worst"]
                        assert cell["text"] == ("—" if not best else best if best == worst else f"{best}–{worst}")
                    elif key == "image":
                        assert cell["attrs"]["class"].startswith("thumb")
                    elif "data-sort" in cell["attrs"]:
                        assert cell["attrs"]["data-sort"] == row[key], (page.path, key)
                    else:
                        assert cell["text"] == (row[key] or "—"), (page.path, key)
            checked += 1
    assert checked > 30


def test_thumbnails_are_webp_with_the_longer_side_capped(world):
    for sid in world["ids"]:
        thumbs = sorted((world["site"] / "thumbs" / sid).glob("*.webp"))
        metadata = (world["submissions"] / sid / "metadata.jsonl").read_text().splitlines()
        assert len(thumbs) == len(metadata) == 176
        for path in thumbs[:20]:
            with Image.open(path) as img:
                assert img.format == "WEBP" and max(img.size) == 256 and img.size[1] == round(256 * 192 / WIDTH)
    images = Page(world["site"] / "model" / "lab__alpha" / "images-1.html")
    assert sum(t == "img" and a["src"].startswith("../../thumbs/lab__alpha/") for t, a in images.tags) == 48


def test_two_builds_are_identical(world, tmp_path):
    site = rebuild(world, tmp_path)  # the build replaces the copied folder whole; only thumbnails are reused
    files = sorted(p.relative_to(world["site"]) for p in world["site"].rglob("*")
                   if p.is_file() and "thumbs" not in p.parts)
    assert [p for p in files if p.suffix == ".html"]
    for rel in files:
        assert (site / rel).read_bytes() == (world["site"] / rel).read_bytes(), rel


def test_ratings_on_the_metric_page(world, tmp_path):
    ratings = tmp_path / "ratings"
    ratings.mkdir()
    row = {"metric": "cube.faithfulness", "target": "faithfulness", "country": None, "n": 12, "pearson": 0.41,
           "pearson_p": 0.18, "spearman": 0.38, "spearman_p": 0.22}
    (ratings / "validity.json").write_text(json.dumps({"n_items": 12, "correlations": [row]}))
    site = rebuild(world, tmp_path, ratings=ratings)
    page = Page(site / "metric" / "cube.faithfulness.html")
    shown = page.table("human-ratings")
    assert [(r["country"]["text"], r["n"]["text"], r["pearson"]["text"]) for r in shown] == [("all", "12", "0.410")]
    assert "No human ratings" in "".join(Page(site / "metric" / "cube.quality.html").text)


def test_fifty_submissions_keep_pages_small(world, tmp_path):
    """50 submissions (images left on the Hub, so no thumbnails): every page stays under 200 KB."""
    results, submissions = tmp_path / "results", tmp_path / "submissions"
    for k in range(50):
        source = world["ids"][k % 3]
        sid = f"org{k:02d}__model"
        shutil.copytree(world["results"] / source, results / sid)
        (submissions / sid).mkdir(parents=True)
        spec = yaml.safe_load((world["submissions"] / source / "submission.yaml").read_text())
        spec["images"]["location"] = "hf://datasets/org/images@main"
        (submissions / sid / "submission.yaml").write_text(yaml.safe_dump(spec))
        shutil.copy(world["submissions"] / source / "metadata.jsonl", submissions / sid)
    summary = build_site(results, world["dataset"], submissions, tmp_path / "site")
    assert summary["pages"] == 3 + 12 + 4 + 50 * 5 and summary["thumbnails"] == 0
    assert summary["largest_page_bytes"] < 200_000
    assert len(Page(tmp_path / "site" / "index.html").table(f"{PROMPT_SET}-g1")) == 50
    assert "not fetched" in (tmp_path / "site" / "model" / "org00__model.html").read_text()


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
    assert not (tmp_path / "out").exists()
