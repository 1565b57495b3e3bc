"""What the pages call things: slice names and page paths, submission display names, number formats and the
"too little data" badge.

Nothing here knows a family: slice types beyond the standard ones (an edit step, a CuRe category, a crossed
``country_x_category``) get a label from their name, and a family slice type whose values are all integers is
*ordered* (drawn as a curve, in numeric order).
"""

from __future__ import annotations

import math
import re
from urllib.parse import urlparse

from cultureboard.evaluators.results.aggregate import SLICE_TYPES
from cultureboard.evaluators.submission.format import get

from cultureboard.countries import load_countries
from cultureboard.naming import MAX_SLUG, slug

#: A slice entry with fewer prompts (units) than this gets the "too little data" badge and is not ranked.
MIN_PROMPTS = 5
#: slice type -> folder of its pages (other slice types have no page of their own: tables and plots show them).
SLICE_FOLDERS = {"country": "country", "region_group": "region", "continent": "region", "era": "era",
                 "category": "category"}
SLICE_LABELS = {"overall": "Overall", "country": "Country", "region_group": "Region group", "continent": "Continent",
                "era": "Era", "category": "Category", "subcategory": "Subcategory"}
REGION_NAMES = {"GN": "Global North", "GS": "Global South"}
ERA_ORDER = ("ancient", "medieval", "early modern", "modern", "contemporary", "traditional", "general")
#: Submission ids and metric names, used in paths.
NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")
CROSS = "_x_"  # the engine's name of a crossed slice type: "<a>_x_<b>", slices "<value a> x <value b>"


def type_order(slice_type: str) -> tuple:
    """The standard slice types first, in their order, then a family's own (an edit step, a ladder axis)."""
    return (SLICE_TYPES.index(slice_type), "") if slice_type in SLICE_TYPES else (len(SLICE_TYPES), slice_type)


def type_label(slice_type: str) -> str:
    if CROSS in slice_type:
        return " × ".join(type_label(part) for part in slice_type.split(CROSS, 1))
    return SLICE_LABELS.get(slice_type) or slice_type.replace("_", " ").capitalize()


def is_cross(slice_type: str) -> bool:
    return CROSS in slice_type


def is_ordered(values) -> bool:
    """Whether a family slice type's values are all integers (an edit step, a ladder level): a curve, not bars."""
    values = list(values)
    return bool(values) and all(re.fullmatch(r"-?\d+", str(v)) for v in values)


def slice_order(slice_type: str, slice_: str) -> tuple:
    """Eras in time order, integer slices numerically, other slices by name."""
    era = ERA_ORDER.index(slice_) if slice_type == "era" and slice_ in ERA_ORDER else len(ERA_ORDER)
    number = int(slice_) if re.fullmatch(r"-?\d+", slice_) else math.inf
    return (era, number, slice_name(slice_type, slice_))


def country_name(code: str) -> str:
    country = load_countries().lookup(code)
    return country.name if country else code


def slice_name(slice_type: str, slice_: str) -> str:
    if slice_type == "country":
        country = load_countries().lookup(slice_)
        return f"{country.name} ({slice_})" if country else slice_
    if slice_type == "region_group":
        return f"{REGION_NAMES.get(slice_, slice_)} ({slice_})"
    if CROSS in slice_type:
        a, b = slice_type.split(CROSS, 1)
        parts = slice_.split(" x ", 1)
        if len(parts) == 2:
            return f"{slice_name(a, parts[0])} × {slice_name(b, parts[1])}"
    return "all prompts" if slice_type == "overall" else slice_


def slice_path(slice_type: str, slice_: str) -> str | None:
    if slice_type not in SLICE_FOLDERS:
        return None
    name = slice_ if slice_type == "country" and NAME.fullmatch(slice_) and len(slice_) <= MAX_SLUG else slug(slice_)
    return f"{SLICE_FOLDERS[slice_type]}/{name}.html"


def model_page(key: str) -> str:
    """The overview page of the model ``key`` (``<org>__<model>``): in ``models/``, apart from the submission pages."""
    return f"models/{key}.html"


def display_name(spec: dict, sid: str) -> str:
    """"Organisation / Model name (tag)" from submission.yaml, as written there; the id if it names neither."""
    org, model, tag = (get(spec, key) for key in ("organization", "model.name", "tag"))
    if not isinstance(org, str) or not isinstance(model, str):
        return sid
    return f"{org} / {model}" + (f" ({tag})" if isinstance(tag, str) and tag else "")


def direction_text(card: dict) -> str:
    """What a metric card ranks by, in words: "higher is better", "lower is better", "closer to 0 is better", or
    "descriptive: shown, never ranked"."""
    if card["direction"] == "none":
        return "descriptive: shown, never ranked"
    if card["direction"] == "target":
        return f"closer to {card['target']:g} is better"
    return f"{card['direction']} is better"


def sort_rule(card: dict) -> dict:
    """A score column's sorting (:class:`~.write.Column` fields): none for a descriptive metric; a target metric
    sorts by the distance to its target, smallest (best) first."""
    if card["direction"] == "none":
        return {"better": None}
    if card["direction"] == "target":
        return {"better": "lower", "target": card["target"]}
    return {"better": card["direction"]}


def num(x) -> str:
    return "—" if x is None or (isinstance(x, float) and math.isnan(x)) else f"{x:.3f}"


def pct(x) -> str:
    return "unknown" if x is None else f"{100 * x:.0f}%"


#: The mark beside the rank of every row scored by tiny random stand-in scorers (``Result.standin``; the banner
#: names them), on boards, country and topic answers and model pages: its rank and badges measure nothing.
STANDIN = {"label": "stand-in", "title": "Scored by tiny random stand-in scorers (see the banner): this value, its "
           "rank and its badges measure nothing"}


def standin_marks(result, key: str = "rank") -> dict[str, list[dict]]:
    """``{key: [STANDIN]}`` for a row of a result scored by stand-ins (the cell ``key`` carries the mark), else {}."""
    return {key: [STANDIN]} if result.standin else {}


def caveat(entry: dict) -> dict | None:
    """The "too little data" badge of a summary entry: {label, title}, or None when it has enough.

    Labels: ``n prompt(s): not ranked`` (fewer than :data:`MIN_PROMPTS` units), ``no spread: not ranked`` (enough
    units, all of one value, on a card whose interval is a bootstrap: no CI), ``incomplete`` (not every unit
    of the slice was scored), ``flagged`` (rows the family could not score, e.g. no reference photograph: left
    out of the value, counted here), ``refused`` (prompts the model declared it refused)."""
    labels, reasons = [], []
    if entry.get("value") is None:
        labels.append("no value")
        reasons.append("every row of this slice was flagged or missing, so there is no value")
    elif entry["n_prompts"] < MIN_PROMPTS:
        n = entry["n_prompts"]
        labels.append(f"{n} prompt{'s' if n != 1 else ''}: not ranked")
        reasons.append(f"only {n} prompt(s), fewer than the {MIN_PROMPTS} a slice needs before it is ranked: "
                       + ("one prompt has no CI" if entry.get("ci_low") is None and n == 1 else
                          "its units show no spread, so it has no CI" if entry.get("ci_low") is None else
                          "the CI is unreliable"))
    elif entry.get("ci_low") is None:
        labels.append("no spread: not ranked")
        reasons.append(f"every one of its {entry['n_prompts']} units scored the same, so it has no CI (one value "
                       "throughout is no evidence of certainty) and is not ranked")
    if not entry.get("complete"):
        labels.append("incomplete")
        reasons.append(f"coverage {pct(entry.get('coverage'))}: not every prompt of this slice was scored, "
                       "so the value is not over the whole slice")
    if entry.get("n_flagged"):
        flags = "; ".join(f"{n} × {why}" for why, n in sorted((entry.get("flags") or {}).items()))
        labels.append(f"{entry['n_flagged']} flagged")
        reasons.append(f"{entry['n_flagged']} row(s) could not be scored and are left out" + (f" ({flags})" if flags else ""))
    if entry.get("n_refused"):
        labels.append(f"{entry['n_refused']} refused")
        reasons.append(f"the model declared {entry['n_refused']} prompt(s) of this slice refused")
    return {"label": " · ".join(labels), "title": "Caveat: " + "; ".join(reasons)} if labels else None


def link(url) -> str | None:
    """``url`` when it is an http(s) address (anything else is shown as text, never linked)."""
    parsed = urlparse(str(url))
    return str(url) if parsed.scheme in ("http", "https") and parsed.netloc else None
