"""One page per model: models/<organization>__<model>.html, every prompt set the model was scored on.

A model is its organization and model name (:func:`~cultureboard.evaluators.submission.format.model_key`); its
submissions for several prompt sets (folders ``<org>__<model>__<tag>``, which ``validate`` holds to one model id,
revision, weights, licence and training data) are one model. The page lists each submission with its prompt set,
its headline over all prompts with the 95% CI and its rank range within its comparability group, a link to the
submission's own page (model/<submission id>.html) and to its images; then a per-country table of each
submission's headline (columns are never averaged: each family's headline has its own scale); then the model card
(model id, revision, weights, licence, training data, links: the model's Hub page for an open model's Hub id).
Per submission, a bar chart of each country's gap to the model's own mean on the headline, with its CI. A
submission of a native-language variant (``<prompt set>-native``) adds a per-language table: each language's
pairs, the prompts the model refused in it (declared refusals, counted, never dropped) and the headline's
language-parity gap, native minus English, with its CI. Badges: a
headline whose scorers learned from the training data the model declares is marked entangled, and a
country whose gap to the model's own mean lies on the headline's worse side with a Benjamini-Hochberg q below 0.05
(``results.disparity.under_represented``) is marked under-represented.

The overview lives in ``models/``, not ``model/``: a submission without a tag has the id ``<org>__<model>``, and its
own page is already ``model/<org>__<model>.html``. Control rows (reference photographs, text as an image) are not
models and get no overview.
"""

from __future__ import annotations

import re

from cultureboard.evaluators.engine.parity import parity_name
from cultureboard.evaluators.submission.format import MODEL_IDENTITY, get, model_key

from . import plots
from .board import Board
from .leaderboards import entangled_badge, gap_badge, prompt_set_page
from .names import (STANDIN, direction_text, display_name, model_page, slice_name, slice_order, slice_path, sort_rule,
                    standin_marks)
from .write import Column, Site

_HUB_ID = re.compile(r"[A-Za-z0-9][\w.-]*/[A-Za-z0-9][\w.-]*")
UNDER = {"label": "under-represented", "title": "This country's gap (its mean minus the model's mean over all "
         "prompts) lies on the headline's worse side of zero with a Benjamini-Hochberg q below 0.05: the model serves "
         "it worse than its average."}
#: The id ``generate`` gives a local pipeline folder: no Hub page.
LOCAL_ID = "local/"


def models_of(board: Board) -> dict[str, list]:
    """model key -> its submissions (controls left out), by prompt set and submission id."""
    out: dict[str, list] = {}
    for r in sorted(board.results.values(), key=lambda r: (r.prompt_set, r.sid)):
        if not r.control:
            out.setdefault(model_key(r.spec), []).append(r)
    return dict(sorted(out.items()))


def overview_pages(site: Site, board: Board, image_pages: dict[str, str]) -> None:
    """Write models/<key>.html for every model of ``board``; ``image_pages``: submission id -> its first image
    browser page."""
    for key, results in models_of(board).items():
        page = model_page(key)
        first = results[0]
        languages = _language_table(board, results)
        site.page(page, "model_overview.html", display_name({**first.spec, "tag": None}, key), key=key,
                  prompt_sets=site.table(page, "prompt-sets", *_prompt_set_table(board, results, image_pages)),
                  countries=site.table(page, "countries", *_country_table(board, results)),
                  languages=site.table(page, "languages", *languages) if languages[1] else None,
                  figures=_gap_figures(site, board, page, results),
                  card=[(path, get(first.spec, path)) for path in MODEL_IDENTITY if get(first.spec, path) is not None],
                  links=_links([r.spec for r in results]))


def _headline(board: Board, r) -> str:
    return board.group_of[r.sid].metrics[0]


def _prompt_set_table(board: Board, results: list, image_pages: dict[str, str]) -> tuple[list[Column], list[dict]]:
    """One row per submission: prompt set, its headline over all prompts with CI (badged entangled where the model's
    declared training data overlaps its scorers'), the rank range among the comparable submissions, the headline
    metric, the submission, the image browser. The prompt set and the headline stay in view (sticky)."""
    columns = [Column("prompt_set", "Prompt set", "link", sticky=True),
               Column("headline", "Headline over all prompts", "score", "Each prompt set's own headline metric and "
                      "scale: compare a value with its leaderboard, never with another row", sticky=True),
               Column("rank", "Rank", "rank", "Rank range on the headline among the prompt set's comparable "
                      "submissions", better="lower"),
               Column("metric", "Headline metric", "link"), Column("submission", "Submission", "link"),
               Column("images", "Images", "link")]
    rows = []
    for r in results:
        metric = _headline(board, r)
        badge = entangled_badge(board.entangled(r, metric))
        rows.append({"prompt_set": {"text": r.prompt_set, "href": prompt_set_page(r.prompt_set)},
                     "submission": {"text": r.sid, "href": f"model/{r.sid}.html"},
                     "metric": {"text": board.cards[metric]["title"], "href": f"metric/{metric}.html"},
                     "headline": r.entries.get((metric, "overall", "all")),
                     "rank": board.ranks(board.group_of[r.sid], metric, "overall", "all").get(r.sid),
                     "images": {"text": "browse", "href": image_pages[r.sid]},
                     "_marks": ({"headline": badge} if badge else {}) | standin_marks(r)})
    return columns, rows


def _country_table(board: Board, results: list) -> tuple[list[Column], list[dict]]:
    """One row per country any submission has a headline slice for; one column per submission (its prompt set's
    headline, best-first sorting by the metric's direction), a cell badged where the country is under-represented
    (:meth:`Board.under_represented`: the gap on the headline's worse side of zero, BH q < 0.05)."""
    columns = [Column("country", "Country", "link", sticky=True)]
    countries: set[str] = set()
    for i, r in enumerate(results):
        metric = _headline(board, r)
        card = board.cards[metric]
        columns.append(Column(f"s{i}", f"{r.prompt_set}: {card['title']}", "score",
                              f"{r.sid}: {metric}, {direction_text(card)}", **sort_rule(card)))
        countries |= {s for (m, t, s) in r.entries if m == metric and t == "country"}
    under = [set(board.under_represented(r, _headline(board, r))) for r in results]
    rows = []
    for c in sorted(countries, key=lambda c: slice_order("country", c)):
        row = {"country": {"text": slice_name("country", c), "href": slice_path("country", c)},
               **{f"s{i}": r.entries.get((_headline(board, r), "country", c)) for i, r in enumerate(results)}}
        marks = {f"s{i}": [UNDER] + ([STANDIN] if r.standin else []) for i, r in enumerate(results) if c in under[i]}
        rows.append(row | ({"_marks": marks} if marks else {}))
    return columns, rows


def _language_table(board: Board, results: list) -> tuple[list[Column], list[dict]]:
    """One row per (submission with a language-parity gap on its headline, native language): the pairs the run
    held, the native prompts the model refused and the pairs whose English prompt it refused (the gap's notes,
    :func:`~cultureboard.evaluators.engine.parity.refusal_counts`), the refusal rate, and the gap with its CI
    (badged where its Benjamini-Hochberg q across the languages is below 0.05 and its base is above chance in the
    language, :meth:`Board.base_at_chance`)."""
    columns = [Column("submission", "Submission", "link"), Column("language", "Language", "text", "BCP 47 tag"),
               Column("pairs", "Pairs", "num", "Native prompts of this language in the run, each with its English "
                      "original"),
               Column("refused", "Refused", "num", "Native prompts whose every image the model declared refused: "
                      "counted, never dropped", better="lower"),
               Column("english_refused", "English refused", "num", "Pairs whose English prompt the model refused",
                      better="lower"),
               Column("refusal_rate", "Refusal rate", "pct", "Refused / pairs", better="lower"),
               Column("gap", "Headline gap, native - English", "score", "The headline's language-parity gap: mean "
                      "over the pairs of native minus English, 95% paired bootstrap CI; 0 is no gap", better="lower",
                      target=0.0)]
    rows = []
    for r in results:
        gap = parity_name(_headline(board, r))
        counts = r.summary["provenance"].get("notes", {}).get(gap, {}).get("counts", {})
        languages = {s for (m, t, s) in r.entries if m == gap and t == "language"}
        languages |= {k.rsplit(" ", 1)[0] for k in counts if k.endswith(" pairs")}
        for lang in sorted(languages):
            pairs, refused = counts.get(f"{lang} pairs", 0), counts.get(f"{lang} refused", 0)
            entry = r.entries.get((gap, "language", lang))
            row = {"submission": {"text": r.sid, "href": f"model/{r.sid}.html"}, "language": lang, "pairs": pairs,
                   "refused": refused, "english_refused": counts.get(f"{lang} English refused", 0),
                   "refusal_rate": refused / pairs if pairs else None, "gap": entry}
            smallest = board.cards[gap].get("smallest_difference") if gap in board.cards else None
            at_chance = board.base_at_chance(r, gap, "language", lang)
            rows.append(row | ({"_marks": {"gap": badge}} if (badge := gap_badge(entry, smallest, at_chance)) else {}))
    return columns, rows


def _gap_figures(site: Site, board: Board, page: str, results: list) -> list[dict]:
    """Per submission with country gaps on its headline (:meth:`Board.gaps`): each country's mean minus the model's
    mean over all prompts, with its paired bootstrap CI, as bars (the per-country profile at a glance)."""
    out = []
    for i, r in enumerate(results):
        metric = _headline(board, r)
        rows = [{"model": slice_name("country", g.name), "gap": g.value, "low": g.low, "high": g.high}
                for g in board.gaps(r, metric) or () if g.kind == "country"]
        if rows:
            title = f"{r.prompt_set}: {board.cards[metric]['title']}, each country minus the model's mean"
            svg = plots.gap_svg(rows, title, positive="above its mean", negative="below its mean")
            out.append({"src": site.plot(page, f"gaps-{i}", svg), "alt": title})
    return out


def _links(specs: list[dict]) -> list[str]:
    """The model card's addresses: the Hub page of an open model's Hub id (not a local folder's ``local/<name>``), then the ``model.links`` of every
    submission, once each (the template links http(s) addresses only)."""
    hub, out = get(specs[0], "model.id"), []
    if (get(specs[0], "model.weights") == "open" and isinstance(hub, str) and _HUB_ID.fullmatch(hub)
            and not hub.startswith(LOCAL_ID)):
        out.append(f"https://huggingface.co/{hub}")
    for spec in specs:
        links = get(spec, "model.links")
        out += [str(u) for u in links if str(u) not in out] if isinstance(links, list) else []
    return out
