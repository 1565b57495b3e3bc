"""Images: a gallery per prompt with every submission's images side by side, and each submission's image
browser with its per-image scores and explanations.

* ``gallery/<prompt set>.html``: the prompts, filterable by country, category and era (app.js; without script
  every row shows); a prompt set with more than :data:`PROMPTS_PER_PAGE` prompts gets one page per country
  (``gallery/<prompt set>/<country>.html``) instead;
* ``prompt/<prompt set>/<prompt>.html``: the prompt's text and slices, then one row per submission (display name,
  controls marked) with its first :data:`PER_SUBMISSION` images (the rest linked in its image browser):
  thumbnails linked to the full-size file, alt text from the prompt, and the headline value of each image;
* ``model/<id>/images-<n>.html``: ``page_size`` images a page with prompt, every per-image score, the family's
  flag where it could not score one, and the explanations of the rows' ``detail`` (any family's: a dict shown as
  labelled lists, e.g. the descriptors an image shows and misses).
"""

from __future__ import annotations

import dataclasses
import json
import math
from urllib.parse import quote

import numpy as np
import pandas as pd

from cultureboard.naming import slug

from .board import Board
from .names import country_name, slice_order
from .write import Column, Site

#: A prompt set with more prompts than this gets one gallery page per country.
PROMPTS_PER_PAGE = 400
#: Images of one submission a prompt page shows (the rest are one click away, in its image browser).
PER_SUBMISSION = 4
#: Submissions (besides the controls) whose images a prompt page shows, the first in leaderboard order; the others
#: are linked by name to their image browsers. Without a cap a prompt page grows with every submission: at 200
#: submissions of a prompt set its 1,000 prompt pages alone would be most of the site.
PROMPT_ROWS = 12
#: What an explanation shows of a list: its first items.
MAX_ITEMS = 24
FILTERS = ("country", "category", "era")


def prompt_page(prompt_set: str, prompt_id: str) -> str:
    return f"prompt/{prompt_set}/{slug(prompt_id)}.html"


def gallery_pages(site: Site, board: Board, media: dict, page_size: int) -> None:
    """Write the galleries and prompt pages: those :func:`gallery_links` names."""
    for prompt_set, page in gallery_links(board).items():
        groups = board.groups[prompt_set]
        members = [r for g in groups for r in g.everyone]
        prompts = sorted({im["prompt_id"] for r in members for im in r.images}, key=lambda p: _prompt_key(board, p))
        headline = groups[0].metrics[0]
        _prompt_pages(site, board, prompt_set, prompts, members, headline, media, page_size)
        rows = [_prompt_row(board, prompt_set, p) for p in prompts]
        if len(rows) <= PROMPTS_PER_PAGE:
            site.page(page, "gallery.html", f"Images: {prompt_set}", prompt_set=prompt_set, rows=rows,
                      filters=_filters(rows), countries=[], current=None)
        else:
            by_country: dict[str, list[dict]] = {}
            for row in rows:
                by_country.setdefault(row["country"] or "none", []).append(row)
            countries = [{"code": c, "name": country_name(c) if c != "none" else "no country", "n": len(rs),
                          "href": f"gallery/{prompt_set}/{slug(c)}.html"} for c, rs in sorted(by_country.items())]
            for c in countries:
                subset = by_country[c["code"]]
                site.page(c["href"], "gallery.html", f"Images: {prompt_set}, {c['name']}", prompt_set=prompt_set,
                          rows=subset, filters=_filters(subset, ("category", "era")), countries=countries,
                          current=c["code"])
            site.page(page, "gallery.html", f"Images: {prompt_set}", prompt_set=prompt_set, rows=[], filters=[],
                      countries=countries, current=None)


def _prompt_key(board: Board, prompt_id: str) -> tuple:
    p = board.prompts.get(prompt_id, {})
    return (str(p.get("country") or ""), str(p.get("category") or ""), slice_order("era", str(p.get("era") or "")),
            prompt_id)


def _prompt_row(board: Board, prompt_set: str, prompt_id: str) -> dict:
    p = board.prompts.get(prompt_id, {})
    return {"prompt_id": prompt_id, "text": p.get("text") or prompt_id, "href": prompt_page(prompt_set, prompt_id),
            "country": p.get("country"), "country_name": country_name(p["country"]) if p.get("country") else "",
            "category": p.get("category"), "era": p.get("era"), "edit_step": p.get("edit_step")}


def _filters(rows: list[dict], fields=FILTERS) -> list[dict]:
    """One select per field with more than one value: {field, label, options: [(value, label)]}."""
    out = []
    for f in fields:
        values = sorted({str(r[f]) for r in rows if r.get(f) is not None}, key=lambda v: slice_order(f, v))
        if len(values) > 1:
            labels = [(v, country_name(v) if f == "country" else v) for v in values]
            out.append({"field": f, "label": f.capitalize(), "options": labels})
    return out


def _prompt_pages(site: Site, board: Board, prompt_set: str, prompts: list[str], members, headline: str,
                  media: dict, page_size: int) -> None:
    by_prompt: dict[str, dict[str, list[dict]]] = {}
    for r in members:
        for im in r.images:
            by_prompt.setdefault(im["prompt_id"], {}).setdefault(r.sid, []).append(im)
    card = board.cards[headline]
    index = {r.sid: {im["file_name"]: k for k, im in enumerate(r.images)} for r in members}
    ordered = board.order(board.group_of[members[0].sid], headline, "overall", "all")
    order = {r.sid: k for k, r in enumerate(ordered)}
    members = sorted(members, key=lambda r: (order.get(r.sid, len(order)), r.display, r.sid))
    for prompt_id in prompts:
        row = _prompt_row(board, prompt_set, prompt_id)
        lines, others = [], []
        for r in members:
            images = by_prompt.get(prompt_id, {}).get(r.sid, [])
            if not images:
                continue
            page = 1 + index[r.sid][images[0]["file_name"]] // page_size
            browser = f"model/{r.sid}/images-{page}.html"
            if not r.control and sum(not line["r"].control for line in lines) >= PROMPT_ROWS:
                others.append({"r": r, "browser": browser})
                continue
            values = r.image_values()
            lines.append({"r": r, "more": len(images) - PER_SUBMISSION, "browser": browser,
                          "images": [_image(r, im, media, row["text"], values.get((im["file_name"], headline)))
                                     for im in images[:PER_SUBMISSION]]})
        site.page(row["href"], "prompt.html", f"Prompt: {row['text'][:80]}", prompt=row, lines=lines, others=others,
                  card=card, prompt_set=prompt_set, fields=_fields(board.prompts.get(prompt_id, {})),
                  shown=PROMPT_ROWS)


def _fields(prompt: dict) -> list[tuple[str, str]]:
    keys = ("country", "continent", "region_group", "category", "subcategory", "era", "level", "edit_step")
    return [(k.replace("_", " "), country_name(prompt[k]) if k == "country" else str(prompt[k]))
            for k in keys if prompt.get(k) not in (None, "")]


def _image(r, im: dict, media: dict, text: str, value) -> dict:
    """An image as the pages show it: thumbnail (site path or None), full-size link (site path, or the Hub address:
    ``external``), status, sample, alt text from the prompt, and a value."""
    found = media.get((r.sid, im["sha256"]), {"status": "not fetched", "full": None})
    hub = None if found["full"] else _hub_url(r, im)
    return {"thumb": thumb_of(r.sid, im["sha256"], found),
            "status": found["status"], "full": found["full"] or hub, "external": hub is not None or bool(found.get("external")),
            "sample": im["sample_idx"], "alt": f"{text} (sample {im['sample_idx']})", "value": value}


def thumb_of(sid: str, sha: str, found: dict) -> str | None:
    """The thumbnail of a published image: its site path, or its address on the Hub (``--media hub``); None when
    the image was not published."""
    if found.get("status") != "ok":
        return None
    return found.get("thumb") or f"thumbs/{sid}/{sha}.webp"


def _hub_url(r, im: dict) -> str | None:
    """The image's address on the Hub, for a submission whose images live there (an external link)."""
    from cultureboard.evaluators.submission.format import get, parse_location

    location = parse_location(str(get(r.spec, "images.location", "")))
    if location is None or location.kind != "hub":
        return None
    return f"https://huggingface.co/datasets/{location.path}/resolve/{location.revision}/{quote(im['file_name'])}"


# --- a submission's image browser


def explain(detail) -> list[dict]:
    """A row's ``detail`` as labelled items {label, text} or {label, entries}: text whole (an edit instruction is
    meant to be copied; its line breaks are kept on the page), lists as at most :data:`MAX_ITEMS` items, mappings
    one level down as "key: value"; each entry readable (:func:`entry`), never JSON; bookkeeping numbers (e.g.
    images) are kept, nothing is interpreted."""
    if not isinstance(detail, dict):
        return []
    out = []
    for key, value in detail.items():
        label = str(key).replace("_", " ")
        if isinstance(value, list):
            items = [entry(v) for v in value[:MAX_ITEMS]] + ([f"… {len(value) - MAX_ITEMS} more"] if len(value) > MAX_ITEMS else [])
            out.append({"label": label, "entries": items or ["none"]})
        elif isinstance(value, dict):
            items = [f"{str(k).replace('_', ' ')}: {entry(v)}" for k, v in list(value.items())[:MAX_ITEMS]]
            out.append({"label": label, "entries": items or ["none"]})
        elif value is not None:
            out.append({"label": label, "text": entry(value)})
    return out


def entry(value) -> str:
    """One value as text. A match of a descriptor, a mapping with ``nearest`` and ``similarity`` and one more
    field (AHEaD's aligned, missing and hallucinated descriptors), is "own ← nearest (similarity)", or "own ←
    nothing" without a nearest, prefixed by its ``dimension``; another mapping is "field: value; ...", a list
    its items joined by "; ", a float to 4 significant digits, None as "—"."""
    if isinstance(value, dict):
        fields = {k: v for k, v in value.items() if k != "dimension"}
        prefix = f"{entry(value['dimension'])}: " if "dimension" in value else ""
        own = [k for k in fields if k not in ("nearest", "similarity")]
        if {"nearest", "similarity"} <= set(fields) and len(own) == 1:
            nearest = "nothing" if fields["nearest"] is None else f"{entry(fields['nearest'])} ({entry(fields['similarity'])})"
            return f"{prefix}{entry(fields[own[0]])} ← {nearest}"
        return prefix + "; ".join(f"{str(k).replace('_', ' ')}: {entry(v)}" for k, v in fields.items())
    if isinstance(value, list):
        return "; ".join(entry(v) for v in value)
    return f"{value:.4g}" if isinstance(value, float) else "—" if value is None else str(value)


def image_pages(site: Site, board: Board, r, media: dict, page_size: int) -> dict:
    """model/<id>/images-<n>.html; returns what the model page says about them."""
    file_name, metric_of = r.column("file_name"), r.column("metric")
    scored = ~pd.isna(file_name)
    present = set(metric_of[scored])
    metrics = [m for m in board.group_of[r.sid].metrics if m in present]
    values = r.image_values()
    notes: dict[str, list[dict]] = {}
    if {"detail", "flag"} <= set(r.scores.columns):
        flag_of, detail_of = r.column("flag"), r.column("detail")
        noted = sorted(np.flatnonzero(scored & ~(pd.isna(flag_of) & pd.isna(detail_of))),
                       key=lambda i: (file_name[i], metric_of[i]))  # by image and metric (stable)
        explained: dict[str, list[dict]] = {}  # many rows share a detail (e.g. {"images": 1})
        for name, metric, flag, detail in ((file_name[i], metric_of[i], flag_of[i], detail_of[i]) for i in noted):
            if isinstance(detail, str) and detail and detail not in explained:
                explained[detail] = explain(_json(detail))
            items = explained.get(detail, []) if isinstance(detail, str) else []
            if isinstance(flag, str) or items:
                notes.setdefault(name, []).append({"metric": board.cards[metric]["title"], "flag": flag
                                                   if isinstance(flag, str) else None, "explained": items})
    columns = [Column("image", "Image", "thumb"), Column("prompt", "Prompt", "link"), Column("sample_idx", "Sample", "num")]
    columns += [Column(m, board.cards[m]["title"], "num", f"{m}: {board.cards[m]['direction']} is better",
                       better=board.cards[m]["direction"] if board.cards[m]["direction"] != "none" else None)
                for m in metrics]
    columns += [Column("notes", "Explanations", "notes"), Column("prompt_id", "Prompt id", "text", hidden=True),
                Column("file_name", "File", "text", hidden=True), Column("sha256", "sha256", "text", hidden=True)]
    prompts = {}  # prompt id -> its link, made once for the prompt's images
    for p in dict.fromkeys(im["prompt_id"] for im in r.images):
        prompts[p] = {"text": board.prompts.get(p, {}).get("text") or p, "href": prompt_page(r.prompt_set, p)}
    rows = []
    for im in r.images:
        prompt = prompts[im["prompt_id"]]
        rows.append({"image": _image(r, im, media, prompt["text"], None), "prompt": prompt,
                     "sample_idx": im["sample_idx"], **{m: values.get((im["file_name"], m)) for m in metrics},
                     "notes": _dedupe(notes.get(im["file_name"], [])), "prompt_id": im["prompt_id"],
                     "file_name": im["file_name"], "sha256": im["sha256"]})
    table = site.table(f"model/{r.sid}.html", "images", columns, rows, compact=True)
    count = max(1, math.ceil(len(rows) / page_size))
    links = [f"model/{r.sid}/images-{n}.html" for n in range(1, count + 1)]
    for n, path in enumerate(links, 1):
        part = dataclasses.replace(table, rows=rows[(n - 1) * page_size: n * page_size], partial=count > 1)
        site.page(path, "images.html", f"Images of {r.display}, page {n} of {count}", r=r, table=part, pages=links,
                  current=n)
    statuses = [row["image"]["status"] for row in rows]
    return {"image_pages": links, "n_images": len(rows), "fetched": "not fetched" not in statuses,
            "missing": sum(s in ("missing", "unreadable", "unverified") for s in statuses)}


def _json(text: str):
    try:
        return json.loads(text)
    except ValueError:  # not the engine's JSON: nothing to explain
        return None


def _dedupe(notes: list[dict]) -> list[dict]:
    """Notes of one image with the metrics that gave the same flag and explanation merged."""
    if len(notes) < 2:
        return notes
    merged: dict[str, dict] = {}
    for n in notes:
        key = json.dumps([n["flag"], n["explained"]], sort_keys=True)
        if key in merged:
            merged[key]["metric"] += ", " + n["metric"]
        else:
            merged[key] = dict(n)
    return list(merged.values())


def gallery_links(board: Board) -> dict[str, str]:
    """Prompt set -> its gallery page, for each prompt set whose submissions have images: what
    :func:`gallery_pages` returns, known before any image file is made (the pages linking the galleries are
    rendered while the thumbnails are being made)."""
    return {prompt_set: f"gallery/{prompt_set}.html" for prompt_set, groups in board.groups.items()
            if any(r.images for g in groups for r in g.everyone)}
