"""Compare two models: compare.html, drawn in the browser (static/compare.js) from one data script per model,
``models/<key>.data.js``, so there is no page per pair and it works opened from ``file://`` (a page there may load a
sibling script but not ``fetch()`` a JSON file).

A model's data: per submission (prompt set) its headline over all prompts, per country and per category (with
the category's topic, :mod:`.topics`), each as [value, CI low, CI high, n prompts]. Two models are compared on
what both were scored on, prompt set by prompt set (each on its own headline and scale, never across sets): the
view says they differ where the two 95% CIs do not overlap, and which is better by the headline's direction; where
they overlap the difference is not established.
"""

from __future__ import annotations

from .board import Board
from .models import models_of
from .names import display_name, slice_name
from .search_index import safe_json
from .topics import load_topics, topic_of
from .write import Site

#: The global every data script adds its model to.
GLOBAL = "cultureboardModels"
PAGE = "compare.html"


def data_script(key: str) -> str:
    return f"models/{key}.data.js"


def _cell(entry: dict | None) -> list | None:
    if not entry or entry.get("value") is None:
        return None
    return [entry["value"], entry.get("ci_low"), entry.get("ci_high"), entry.get("n_prompts")]


def model_data(board: Board, key: str, results: list, topics) -> dict:
    """{key, name, prompt_sets: [{prompt_set, metric, title, direction, target, overall, countries: {name: cell},
    topics: {"topic: category": cell}}]}, a cell [value, ci_low, ci_high, n_prompts] (:func:`_cell`)."""
    out = []
    for r in results:
        metric = board.group_of[r.sid].metrics[0]
        card = board.cards[metric]
        countries, by_topic = {}, {}
        for (m, slice_type, slice_), entry in sorted(r.entries.items()):
            if m != metric or (cell := _cell(entry)) is None:
                continue
            if slice_type == "country":
                countries[slice_name("country", slice_)] = cell
            elif slice_type == "category":
                topic = topic_of(topics, slice_)
                by_topic[f"{topic.title if topic else 'no topic'}: {slice_}"] = cell
        out.append({"prompt_set": r.prompt_set, "metric": metric, "title": card["title"],
                    "direction": card["direction"], "target": card.get("target"),
                    "overall": _cell(r.entries.get((metric, "overall", "all"))), "countries": countries,
                    "topics": by_topic})
    return {"key": key, "name": display_name({**results[0].spec, "tag": None}, key), "prompt_sets": out}


def compare_pages(site: Site, board: Board) -> None:
    """models/<key>.data.js for every model, and compare.html listing them."""
    topics, _ = load_topics()
    choices = []
    for key, results in models_of(board).items():
        data = model_data(board, key, results, topics)
        site.write(data_script(key), f"window.{GLOBAL} = window.{GLOBAL} || {{}};\n"
                                     f"window.{GLOBAL}[{safe_json(key)}] = {safe_json(data)};\n")
        choices.append({"key": key, "name": data["name"], "src": data_script(key)})
    site.page(PAGE, "compare.html", "Compare two models", choices=choices)
