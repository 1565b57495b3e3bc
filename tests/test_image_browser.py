"""The image browser and the prompt pages' values (site/gallery.py, site/load.py Result.image_values): each image's
value of a metric is the mean of its rows with a value; its explanations, one per (merged) metric, in metric
order; each row links its prompt. Fast: a hand-made result, no evaluator."""

from __future__ import annotations

import csv
import gzip
from pathlib import Path
from types import SimpleNamespace

import pandas as pd
import pytest

from cultureboard.site import gallery
from cultureboard.site.load import Result
from cultureboard.site.write import Site

NAN = float("nan")
#: (metric, file, value, flag, detail): b.png's "m.b" rows average 2 and 4 (the NaN row left out); a row without a
#: file (a prompt-level row) counts nowhere (m.z has no other: no column); a.png's two flags are one note naming
#: both metrics.
ROWS = [("m.b", "b.png", 2.0, None, None), ("m.a", "b.png", 1.0, None, '{"seen": ["x", "y"]}'),
        ("m.b", "b.png", 4.0, None, None), ("m.b", "b.png", NAN, None, None), ("m.a", "a.png", 0.5, None, None),
        ("m.b", None, 100.0, None, None), ("m.z", None, 9.0, None, None), ("m.c", "a.png", NAN, "no reference", None),
        ("m.b", "a.png", 6.0, "no reference", None)]
IMAGES = [{"prompt_id": "p1", "sample_idx": 0, "file_name": "a.png", "sha256": "a" * 64},
          {"prompt_id": "p1", "sample_idx": 1, "file_name": "b.png", "sha256": "b" * 64}]


def result(rows=ROWS) -> Result:
    scores = pd.DataFrame(rows, columns=["metric", "file_name", "value", "flag", "detail"]).astype(
        {"metric": "str", "file_name": "str", "flag": "str", "detail": "str"})
    summary = {"provenance": {"prompt_set": "ps"}}
    return Result("lab__m", summary, scores, {}, Path("lab__m"), IMAGES, {}, display="Lab / M")


def test_an_images_value_is_the_mean_of_its_rows_with_a_value():
    assert result().image_values() == {("b.png", "m.b"): 3.0, ("b.png", "m.a"): 1.0, ("a.png", "m.a"): 0.5,
                                       ("a.png", "m.b"): 6.0}


def test_the_browser_shows_each_metrics_value_the_notes_in_metric_order_and_the_prompt(tmp_path):
    board = SimpleNamespace(group_of={"lab__m": SimpleNamespace(metrics=["m.b", "m.a", "m.c", "m.z"])},
                            cards={m: {"title": m.upper(), "direction": "higher"} for m in ("m.a", "m.b", "m.c")},
                            prompts={"p1": {"text": "A <dish>"}})
    site, pages = Site(tmp_path), []
    site.page = lambda path, template, title, **context: pages.append((path, context))
    found = gallery.image_pages(site, board, result(), {}, page_size=48)
    assert found["image_pages"] == ["model/lab__m/images-1.html"] and found["n_images"] == 2
    table = pages[0][1]["table"]
    assert [c.key for c in table.columns] == ["image", "prompt", "sample_idx", "m.b", "m.a", "m.c", "notes"]
    a, b = table.rows
    assert (a["m.a"], a["m.b"], a["m.c"], b["m.a"], b["m.b"], b["m.c"]) == (0.5, 6.0, None, 1.0, 3.0, None)
    assert a["prompt"] == b["prompt"] == {"text": "A <dish>", "href": gallery.prompt_page("ps", "p1")}
    # a.png: m.b and m.c gave the same flag and no explanation: one note naming both, in metric order
    assert a["notes"] == [{"metric": "M.B, M.C", "flag": "no reference", "explained": []}]
    assert b["notes"] == [{"metric": "M.A", "flag": None, "explained": [{"label": "seen", "entries": ["x", "y"]}]}]
    with gzip.open(tmp_path / "data" / "model-lab__m-images.csv.gz", "rt", encoding="utf-8") as fh:
        rows = list(csv.DictReader(fh))
    assert [(r["file_name"], r["m.b"]) for r in rows] == [("a.png", "6.0"), ("b.png", "3.0")]
    assert table.csv == "data/model-lab__m-images.csv.gz" and table.json is None  # every image's table: one gzip CSV
    assert not (tmp_path / "data" / "model-lab__m-images.json").exists()


@pytest.mark.parametrize("order", [[0, 1], [1, 0]])
def test_notes_follow_the_metric_order_whatever_the_rows_order(order, tmp_path):
    rows = [("m.b", "a.png", 1.0, "late", None), ("m.a", "a.png", 1.0, "early", None)]
    board = SimpleNamespace(group_of={"lab__m": SimpleNamespace(metrics=["m.a", "m.b"])},
                            cards={m: {"title": m, "direction": "none"} for m in ("m.a", "m.b")}, prompts={})
    site, pages = Site(tmp_path), []
    site.page = lambda path, template, title, **context: pages.append(context)
    gallery.image_pages(site, board, result([rows[k] for k in order]), {}, page_size=48)
    notes = pages[0]["table"].rows[0]["notes"]
    assert [n["flag"] for n in notes] == ["early", "late"]


@pytest.mark.parametrize(("headline", "values"), [("m.b", [6.0, 3.0]), ("m.a", [0.5, 1.0])])
def test_a_prompt_page_captions_each_image_with_its_headline_value(headline, values, tmp_path):
    r = result()
    board = SimpleNamespace(group_of={r.sid: "g"}, cards={headline: {"title": headline}}, order=lambda *a: [r],
                            prompts={"p1": {"text": "A dish"}})
    site, pages = Site(tmp_path), []
    site.page = lambda path, template, title, **context: pages.append(context)
    gallery._prompt_pages(site, board, "ps", ["p1"], [r], headline, {}, page_size=48)
    [line] = pages[0]["lines"]
    assert [im["value"] for im in line["images"]] == values and line["browser"] == "model/lab__m/images-1.html"


def test_a_prompt_page_shows_the_first_submissions_and_every_control_and_links_the_others(monkeypatch, tmp_path):
    """A prompt page does not grow with every submission: the first PROMPT_ROWS in leaderboard order get images,
    every control too, and the rest are links to their image browsers, in leaderboard order."""
    import dataclasses

    first, second, third = (dataclasses.replace(result(), sid=f"lab__{n}", display=f"Lab / {n}") for n in "xyz")
    control = dataclasses.replace(result(), sid="control__t", display="text-only", control="text-only")
    ordered = [second, first, third]
    board = SimpleNamespace(group_of={r.sid: "g" for r in (first, second, third, control)},
                            cards={"m.b": {"title": "m.b"}}, order=lambda *a: ordered, prompts={"p1": {"text": "A dish"}})
    site, pages = Site(tmp_path), []
    site.page = lambda path, template, title, **context: pages.append(context)
    monkeypatch.setattr(gallery, "PROMPT_ROWS", 1)
    gallery._prompt_pages(site, board, "ps", ["p1"], [first, second, control, third], "m.b", {}, page_size=48)
    [page] = pages
    assert [line["r"].sid for line in page["lines"]] == ["lab__y", "control__t"]
    assert [(o["r"].sid, o["browser"]) for o in page["others"]] == [("lab__x", "model/lab__x/images-1.html"),
                                                                    ("lab__z", "model/lab__z/images-1.html")]
