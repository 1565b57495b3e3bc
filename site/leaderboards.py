"""Leaderboard tables and the pages made of them: the overview, a page per prompt set (its full leaderboard,
plots, disparity ranking and map), and a page per country, region, era and category.

Uncertainty (DESIGN principle 4): every number is shown with its 95% CI, n images and n prompts; ranks are
ranges from :func:`cultureboard.evaluators.results.stats.rank_ties` (overlapping CIs are ties); a slice entry
with fewer than ``MIN_PROMPTS`` prompts or an incomplete coverage carries a visible badge, and one with fewer
prompts is not ranked. A leaderboard shows the headline and a few other metrics (``board.SHOWN_BESIDE``); the
rest are on the metric and submission pages and in the downloads.
"""

from __future__ import annotations

from collections import Counter

from cultureboard.errors import CultureboardError
from cultureboard.evaluators.results.disparity import SIGNIFICANT, clears
from cultureboard.evaluators.results.tiers import ranked_tier

from . import beside, country_answer, country_sources, figures, gaming, held_out, near_reference, written_share
from .board import Board, Group
from .names import direction_text, slice_name, slice_path, sort_rule, standin_marks, type_label
from .write import Column, Site, Table

#: Rows of a prompt set's leaderboard shown on the overview (the full table is on the prompt set's page).
OVERVIEW_ROWS = 10


def prompt_set_page(prompt_set: str) -> str:
    return f"leaderboard/{prompt_set}.html"


def score_column(board: Board, group: Group, metric: str, slice_type: str, slice_: str) -> Column:
    """A metric's column: its validity tier beside its name (:func:`tier_badge`), sorted in the card's
    direction on the first click, a badge where a text-only control beats a ranked model, greyed where the metric
    is only a diagnostic on this slice."""
    card = board.cards[metric]
    badges = [tier_badge(card)]
    if flag := board.text_only_flag(group, metric):
        badges.append({"label": "text-only control scores high", "title": f"Flagged: {flag}."})
    if gameable := gaming.badge(board, group, metric):
        badges.append(gameable)
    if row := board.diagnostic(metric, slice_type, slice_):
        badges.append({"label": "diagnostic here", "title": f"Only a diagnostic on this slice, never the headline: "
                       f"{row['reason']} (correlation with {row['human']} in {row['source']})."})
    return Column(metric, card["title"], "score", f"{metric}: {direction_text(card)}; value [95% CI], n = images / "
                  "prompts", **sort_rule(card), badges=badges,
                  muted=any(b["label"] == "diagnostic here" for b in badges), href=f"metric/{metric}.html")


#: The badge of a human score's column: what it is, beside the automatic metrics' tiers.
HUMAN = {"label": "validated measure", "title": "People's ratings of these images (imported with `cultureboard import "
         "ratings`): the measure the automatic metrics stand in for, shown first."}


def human_columns(board: Board, members) -> list[tuple[Column, object]]:
    """(column, row -> its entry) for each (study, question) that people rated among ``members``' images
    (:mod:`.human`), in study then question order: higher is better on each rating scale kept."""
    found = sorted({(h["study"], h["question"], h["scale"]) for r in members for h in board.human.get(r.sid, ())})
    out = []
    for study, question, scale in found:
        def entry(r, key=(study, question, scale)):
            h = next((h for h in board.human.get(r.sid, ()) if (h["study"], h["question"], h["scale"]) == key), None)
            return None if h is None else {**h, "n_images": h["n_items"], "coverage": None, "complete": True}

        out.append((Column(f"human.{study}.{question}", f"Human: {question}", "score",
                           f"Human rating, {study} study, question {question!r} on {scale}: the mean over the rated "
                           "images of their raters' mean answer, 95% Wilson interval at the image level; n = rated "
                           "images / their prompts", better="higher", badges=[HUMAN]), entry))
    return out


def tier_badge(card: dict) -> dict:
    """The validity tier of a card (a ``metrics_info`` entry), titled with why it is there
    (:mod:`~cultureboard.evaluators.results.tiers`); only validated and indicative metrics carry rank numbers."""
    tier = card.get("tier") or "no tier recorded"
    ranked = "ranked" if ranked_tier(card) else "shown with its values, never ranked"
    return {"label": tier, "title": f"Validity tier {tier} ({ranked}): {card.get('tier_reason') or 'scored before the validity rule'}."}


def leaderboard(site: Site, board: Board, page: str, group: Group, slice_type: str, slice_: str,
                metrics: list[str] | None = None, *, limit: int | None = None, name: str | None = None) -> Table | None:
    """The group's submissions ranked on the first of ``metrics`` (default: the group's shown metrics) in one
    slice, its controls after them, marked; None when none has an entry. ``limit``: show only the first rows
    (the downloads still hold every row). Columns: rank, submission, the metrics (the headline first), the rank
    spread, weights, coverage; the submission and the headline stay in view while the table scrolls sideways. Over
    all prompts, the human scores of rated submissions (:func:`human_columns`) come first, before the automatic
    metrics: the validated measure above the proxies."""
    metrics = metrics or group.shown
    main = board.cards[metrics[0]]
    members = [r for r in board.order(group, metrics[0], slice_type, slice_)
               if any((m, slice_type, slice_) in r.entries for m in metrics)]
    if not members:
        return None
    ranks = board.ranks(group, metrics[0], slice_type, slice_)
    unranked = board.unranked(group, metrics[0], slice_type, slice_)
    columns = [Column("rank", "Rank", "rank", f"Rank range on {main['title']}: entries whose 95% CIs overlap are "
                      f"tied{'; ' + unranked if unranked else ''}", better="lower"),
               Column("submission", "Submission", "link", "Organisation / model (tag), from submission.yaml", sticky=True)]
    human = human_columns(board, members) if slice_type == "overall" else []
    columns += [c for c, _ in human]  # the validated measure first, before the automatic metrics
    columns += [score_column(board, group, m, slice_type, slice_) for m in metrics]
    columns[2 + len(human)].sticky = True  # the headline beside the submission: on screen on a phone, and scrolling
    held_column = held_out.column(board, members, metrics[0], slice_type)
    if held_column is not None:  # beside the headline (site/held_out.py)
        columns.insert(3 + len(human), held_column)
    variants = board.variants(metrics[0], group.metrics)
    if len(variants) > 1 and slice_type == "overall" and not unranked:  # ranks per scorer: only for a ranked headline
        columns.append(Column("spread", f"Rank spread over {len(variants)} scorers", "range",
                              f"{main['title']} recomputed with each scorer variant ({', '.join(variants)}): each "
                              "submission ranked by value within each variant, its worst rank minus its best (ranks, "
                              "since the scorers' scales differ); badged where a variant's scorer shares training "
                              "data with the submission", better="lower"))
    columns += [Column("weights", "Weights", "text", "open: public weights; closed: an API"),
                Column("made", "Made by", "text", "Who generated the images (the team, or the leaderboard for a "
                       "control) and who scored them (the leaderboard's CI, or elsewhere and imported)"),
                Column("coverage", "Coverage", "pct", f"Share of the slice's prompts scored for {main['title']}",
                       better="higher"),
                Column("release_date", "Released", "text", "model.release_date of submission.yaml", hidden=True),
                Column("parameters", "Parameters", "num", "model.parameters of submission.yaml", hidden=True)]
    if slice_type == "overall":
        columns.append(Column("spells", "Spells prompt", "pct", "Share of the submission's images (of those the OCR "
                              "could check) that spell their prompt's artifact or country in drawn text",
                              better="lower"))
    near = slice_type == "overall" and any(near_reference.cell(r.summary) for r in members)
    if near:
        columns.append(Column("near_reference", "Near reference", "text", "Images left out of the similarity-to-"
                              "reference metrics as near a reference photograph of their artifact (embedding cosine "
                              "at or above the threshold measured for the scorer), of those compared; not checked "
                              "where no threshold was measured for the scorer's checkpoint"))
    rows = []
    for r in members:
        row = {"rank": ranks.get(r.sid), "submission": {"text": r.display, "href": f"model/{r.sid}.html"},
               "weights": str(r.spec.get("model", {}).get("weights")), **(declared := filter_fields(r.spec)),
               "_filter": declared, "made": f"generated by {r.generated_by}; scored by {r.scored_by}",
               "coverage": r.entries.get((metrics[0], slice_type, slice_), {}).get("coverage"),
               **{m: r.entries.get((m, slice_type, slice_)) for m in metrics},
               **{c.key: find(r) for c, find in human},
               "_marks": marks(board, r, metrics, slice_type, slice_) | standin_marks(r)}
        if held_column is not None and not r.control:
            row["held_out"], badges = held_out.cell(board, r.sid, metrics[0])
            if badges:
                row["_marks"]["held_out"] = badges
        elif held_column is not None:
            row["held_out"] = None
        if slice_type == "overall":
            row["spells"] = written_share.share(r.summary)
        if near:
            row["near_reference"] = near_reference.cell(r.summary)
        if any(c.key == "spread" for c in columns):
            row["spread"] = board.spread(group, r, metrics[0])
            if badge := entangled_badge(e for v in variants for e in board.entangled(r, v)):
                row["_marks"]["spread"] = badge
        row["_generated_by"], row["_scored_by"] = r.generated_by, r.scored_by
        if r.superseded_by is not None:
            row["_muted"], row["_superseded_by"] = True, r.superseded_by
            row["_marks"]["submission"] = [{"label": f"superseded by {r.superseded_by}",
                                            "title": "Replaced by a later submission of the same model version and "
                                                     f"prompt set, never ranked beside it: {r.superseded_why}"}]
        if r.control:
            row["_control"] = r.control
            row["_marks"]["submission"] = [{"label": f"control: {r.control}", "title": CONTROLS.get(r.control, "")}]
            row["_marks"]["submission"] += gaming.marks(board, group, r.sid, metrics[0], slice_type, slice_)
        rows.append(row)
    table = site.table(page, name or group.name, columns, rows)
    table.filters = True
    if limit is not None and len(rows) > limit:
        table.rows, table.partial = rows[:limit], True
    return table


def filter_fields(spec: dict) -> dict:
    """What a board's filters read from a submission.yaml: ``weights``, ``release_date`` and ``parameters``, each None
    where it is not declared (or not of its type: validate reports that)."""
    from cultureboard.evaluators.submission.format import get

    weights, released, size = (get(spec, f"model.{k}") for k in ("weights", "release_date", "parameters"))
    return {"weights": weights if weights in ("open", "closed") else None,
            "release_date": released if isinstance(released, str) else None,
            "parameters": size if isinstance(size, (int, float)) and not isinstance(size, bool) else None}


CONTROLS = {
    "reference-photos": "A control, never ranked: the artifacts' reference photographs scored as if a model had made "
                        "them (the ceiling of each metric, and a check of its sense).",
    "text-only": "A control, never ranked: each prompt rendered as a picture of its own words (no image at all); a "
                 "metric that rates it as high as real models rewards text, not culture.",
    "category-images": "A cheat, never ranked: every prompt of a CuRe ladder answered with a model's images of the "
                       "category prompt P(c) (the generic dish, not the named one); a metric it tops is gameable.",
    "unedited": "A cheat, never ranked: every ECB edit step returns the chain's base image unchanged (an editor "
                "that does nothing); a metric it tops is gameable.",
    "copied-references": "A cheat, never scored: the reference photographs resized and re-encoded, handed in as a "
                         "model's images; validation refuses every one as a copy of a reference photograph.",
    "written-prompt": "A cheat, never ranked: one image per prompt, the artifact's name in large type on a plain "
                      "background (the typographic attack); a metric it tops reads the answer, not the picture.",
}


def marks(board: Board, r, metrics: list[str], slice_type: str, slice_: str) -> dict[str, list[dict]]:
    """Per-cell badges: the scorer of a metric shares training data with the submission (entanglement); a
    language-parity gap that differs from 0, or "base at chance" where its base metric does not clear chance
    (:func:`gap_badge`)."""
    out = {m: badge for m in metrics if (badge := entangled_badge(board.entangled(r, m)))}
    for m in metrics:
        if badge := gap_badge(r.entries.get((m, slice_type, slice_)), board.cards[m].get("smallest_difference"),
                              board.base_at_chance(r, m, slice_type, slice_)):
            out[m] = out.get(m, []) + badge
    return out


#: The mark of a parity entry whose base metric leaves the model at chance (:meth:`Board.base_at_chance`).
AT_CHANCE = {"label": "base at chance", "title": "The base metric's interval does not clear its chance level: a "
             "model without the skill has no language gap to show (one picture whatever the prompt scores a perfect "
             "0), so no gap is claimed here."}


def gap_badge(entry: dict | None, smallest: float | None = None, at_chance: bool = False) -> list[dict]:
    """The "language gap" badge of a parity entry whose Benjamini-Hochberg q (across the slices of its type:
    countries on a country page) is below :data:`~cultureboard.evaluators.results.disparity.SIGNIFICANT` and
    whose interval clears the card's smallest meaningful difference (:func:`~.disparity.clears`): a gap of
    0.000 [0.000, 0.000] is never badged. A gap is claimed only where its base is above chance: ``at_chance``
    (:meth:`Board.base_at_chance`) gives the :data:`AT_CHANCE` mark instead, whatever the gap."""
    if entry is not None and at_chance:
        return [AT_CHANCE]
    q = (entry or {}).get("p_adjusted")
    if q is None or q >= SIGNIFICANT or entry.get("ci_low") is None \
            or not clears(entry["ci_low"], entry["ci_high"], max(smallest or 0.0, 0.0)) or entry["value"] == 0:
        return []
    return [{"label": "language gap", "title": f"Native-language prompts score {'above' if entry['value'] > 0 else 'below'} "
             f"their English originals: the gap differs from 0 (bootstrap test, Benjamini-Hochberg q = {q:.3f})."}]


def entangled_badge(found) -> list[dict]:
    """The "entangled" badge naming each {scorer, corpora} of ``found`` (:meth:`Board.entangled`); none if empty."""
    what = "; ".join(dict.fromkeys(f"{e['scorer']} was trained on {', '.join(e['corpora'])}" for e in found))
    return [{"label": "entangled", "title": f"Shared training data: {what}, and the model declares it too; the score "
             "may be inflated."}] if what else []


def sections(site: Site, board: Board, page: str, slice_type: str, slice_: str, *, headline_only: bool = False,
             limit: int | None = None, prefix: str = "") -> list[dict]:
    """One section per family, one part per prompt set with entries in the slice, one leaderboard per
    comparability group: [{family, prompt_sets: [...]}] (family None for an unregistered prompt set). ``prefix``:
    put before each table's name (its id and downloads), for a page that shows several slices' boards."""
    by_family: dict = {}
    for part in _prompt_set_parts(site, board, page, slice_type, slice_, headline_only, limit, prefix):
        key = part["family"].name if part["family"] else ""
        by_family.setdefault(key, {"family": part["family"], "prompt_sets": []})["prompt_sets"].append(part)
    return [by_family[k] for k in sorted(by_family)]


def _prompt_set_parts(site: Site, board: Board, page: str, slice_type: str, slice_: str, headline_only: bool,
                      limit: int | None, prefix: str) -> list[dict]:
    out = []
    for prompt_set, groups in board.groups.items():
        tables = []
        for g in groups:
            table = leaderboard(site, board, page, g, slice_type, slice_, g.headline if headline_only else None,
                                limit=limit, name=prefix + g.name)
            if table is not None:
                tables.append({"group": g, "table": table, "more": len(g.everyone) - len(table.rows),
                               "beside": beside.context(board, g, g.metrics[0], slice_type, slice_)})
        if tables:
            out.append({"prompt_set": prompt_set, "href": prompt_set_page(prompt_set),
                        "family": board.family_for(prompt_set),
                        "main": board.cards[groups[0].metrics[0]], "groups": tables,
                        "several": len(groups) > 1})
    return out


def overview(site: Site, board: Board) -> None:
    """index.html: per family, per prompt set the top of each leaderboard on its headline."""
    site.page("index.html", "index.html", "Leaderboard",
              sections=sections(site, board, "index.html", "overall", "all", headline_only=True, limit=OVERVIEW_ROWS),
              top=OVERVIEW_ROWS)


def prompt_set_pages(site: Site, board: Board) -> None:
    """leaderboard/<prompt set>.html: every group's full leaderboard, its controls, figures and disparity."""
    for prompt_set, groups in board.groups.items():
        page = prompt_set_page(prompt_set)
        parts = []
        for g in groups:
            parts.append({"group": g, "table": leaderboard(site, board, page, g, "overall", "all"),
                          "figures": figures.group_figures(site, board, page, g),
                          "disparity": figures.disparity_table(site, board, page, g),
                          "gaming": gaming.group_standings(board, g, g.metrics[0]),
                          "beside": beside.context(board, g, g.metrics[0])})
        family = board.family_for(prompt_set)
        site.page(page, "prompt_set.html", f"Leaderboard: {prompt_set}", prompt_set=prompt_set, parts=parts,
                  family=family, main=board.cards[groups[0].metrics[0]], several=len(groups) > 1)


def slice_pages(site: Site, board: Board, *, built_countries: list[str] | None = None,
                topics: dict | None = None) -> None:
    """A page per country, region group, continent, era and category (headline only: the submission pages have
    every metric per slice), and slices.html listing them. A country or category page opens with which model is
    best there (:mod:`.country_answer`); a country page says which prompt sets hold its prompts
    (``built_countries``: those the dataset was built for, :mod:`.country_sources`); a category page links its topic
    (``topics``: category -> {title, href}, :mod:`.topics`)."""
    listing = []
    scored_on = Counter(s for r in board.results.values() for s in {k[1:] for k in r.entries})  # results per slice
    for slice_type, slice_ in board.slices():
        path = slice_path(slice_type, slice_)
        if path in site.sizes:
            raise CultureboardError(f"slice {slice_!r}", f"has the same page name as another {slice_type} ({path})",
                                    "rename one of them in the dataset")
        title = f"{type_label(slice_type)}: {slice_name(slice_type, slice_)}"
        answered = slice_type in ("country", "category")
        site.page(path, "slice.html", title, sections=sections(site, board, path, slice_type, slice_, headline_only=True),
                  slice_type=slice_type, slice=slice_,
                  answer=country_answer.slices_answer(board, [(slice_type, slice_)]) if answered else None,
                  answer_heading=f"Which model for this {slice_type}?", answer_over=f"this {slice_type}'s prompts",
                  sources=country_sources.sources(board, slice_, built_countries) if slice_type == "country" else None,
                  topic=(topics or {}).get(slice_) if slice_type == "category" else None)
        listing.append({"type": type_label(slice_type), "slice": {"text": slice_name(slice_type, slice_), "href": path},
                        "results": scored_on[(slice_type, slice_)]})
    columns = [Column("type", "Type", "text"), Column("slice", "Slice", "link"),
               Column("results", "Submissions", "num", "Submissions with scores on this slice", better="higher")]
    site.page("slices.html", "slices.html", "Slices", table=site.table("slices.html", "slices", columns, listing))

