"""Compare two models: compare.html, drawn in the browser (static/compare.js) from one data script per model,
``models/<key>.data.js``, so there is no page per pair and it works opened from ``file://`` (a page there may load a
sibling script but not ``fetch()`` a JSON file).

A model's data: per submission (prompt set) its headline over all prompts, per country and per category (with
the category's topic, :mod:`.topics`), each as [value, CI low, CI high, n prompts], the headline's chance level
where its card states one, whether the row was scored by tiny stand-ins (shown marked), and the thumbnails of its first
images on the prompt set's first :data:`SAMPLE_PROMPTS` prompts (by prompt id, so two models of one prompt set show
the same prompts side by side). Two models are compared on
what both were scored on, prompt set by prompt set (each on its own headline and scale, never across sets): the
view says they differ where the two 95% CIs do not overlap, and which is better by the headline's direction; where
they overlap the difference is not established.
"""

from __future__ import annotations

from .board import Board
from .gallery import thumb_of
from .models import models_of
from .names import display_name, slice_name
from .search_index import safe_json
from .topics import load_topics, topic_of
from .write import Site

#: The global every data script adds its model to.
GLOBAL = "cultureboardModels"
PAGE = "compare.html"
#: How many prompts of each prompt set a model's data shows images of (sample 0 of each).
SAMPLE_PROMPTS = 6


def data_script(key: str) -> str:
    return f"models/{key}.data.js"


def _cell(entry: dict | None) -> list | None:
    if not entry or entry.get("value") is None:
        return None
    return [entry["value"], entry.get("ci_low"), entry.get("ci_high"), entry.get("n_prompts")]


def sample_images(board: Board, r, media: dict) -> dict[str, list[str]]:
    """prompt id -> [thumbnail path, prompt text] of sample 0 of the first :data:`SAMPLE_PROMPTS` prompts of ``r``'s
    prompt set (by id) that ``r`` has a published thumbnail for (``media``: (sid, sha256) -> {status})."""
    first = {}
    for im in r.images:  # sorted by prompt and sample
        if im["sample_idx"] == 0 and media.get((r.sid, im["sha256"]), {}).get("status") == "ok":
            first.setdefault(im["prompt_id"], im)
    return {p: [thumb_of(r.sid, first[p]["sha256"], media[r.sid, first[p]["sha256"]]),
                board.prompts.get(p, {}).get("text") or p] for p in sorted(first)[:SAMPLE_PROMPTS]}


def model_data(board: Board, key: str, results: list, topics, media: dict | None = None) -> dict:
    """{key, name, prompt_sets: [{prompt_set, metric, title, direction, target, chance, standin, overall,
    countries: {name: cell},
    topics: {"topic: category": cell}, images: {prompt id: [thumbnail, prompt text]}}]}, a cell [value, ci_low,
    ci_high, n_prompts] (:func:`_cell`); ``images`` from :func:`sample_images` (empty without ``media``)."""
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
                    "direction": card["direction"], "target": card.get("target"), "chance": card.get("chance"),
                    "standin": r.sid in board.standin,
                    "overall": _cell(r.entries.get((metric, "overall", "all"))), "countries": countries,
                    "topics": by_topic, "images": sample_images(board, r, media or {})})
    return {"key": key, "name": display_name({**results[0].spec, "tag": None}, key), "prompt_sets": out}


def compare_pages(site: Site, board: Board, media: dict | None = None) -> None:
    """models/<key>.data.js for every model, and compare.html listing them; ``media``: the build's image files
    ((sid, sha256) -> {status}), whose thumbnails the comparison shows."""
    topics, _ = load_topics()
    choices = []
    for key, results in models_of(board).items():
        data = model_data(board, key, results, topics, media)
        site.write(data_script(key), f"window.{GLOBAL} = window.{GLOBAL} || {{}};\n"
                                     f"window.{GLOBAL}[{safe_json(key)}] = {safe_json(data)};\n")
        choices.append({"key": key, "name": data["name"], "src": data_script(key)})
    site.page(PAGE, "compare.html", "Compare two models", choices=choices)
