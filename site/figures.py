"""The figures of a prompt set's leaderboard and the map pages, all of one metric (the group's headline unless
chosen), all drawn from the summaries and scores, none knowing a family:

* a heatmap submission x country, and a world map of the ranked submissions' mean per country, linking to a map
  page per shown metric where a submission can be chosen (``map/<group>/<metric>.html``);
* bars per era;
* a curve per submission over each *ordered* family slice type (integer slices, e.g. an edit step);
* on the bars and curves, the chance level as a reference line and the controls drawn faded and dashed
  (:mod:`.beside`);
* a heatmap submission x crossed slice for each crossed slice type (e.g. country x category);
* the disparity ranking: each submission's Global North minus Global South gap with its paired bootstrap CI and
  Benjamini-Hochberg q (:mod:`cultureboard.evaluators.results.disparity`), ranked by the gap's size as well as
  by level, with a gap-versus-level frontier plot.
"""

from __future__ import annotations

import json
import math

from cultureboard.evaluators.results.disparity import SIGNIFICANT, under_represented
from cultureboard.evaluators.results.stats import rank_ties

from . import beside, plots, worldmap
from .board import Board, Group
from .names import (country_name, is_cross, is_ordered, slice_name, slice_order, sort_rule, standin_marks, type_label,
                    type_order)
from .write import Column, Site, Table

#: Curves drawn per plot (the best ranked first); the download holds every submission.
MAX_CURVES = 8
#: The badge of a gap the bootstrap cannot test (``disparity`` module docstring: too few or equal prompts).
UNTESTED = {"label": "too few prompts", "title": "Too few prompts, or prompts with equal values, in a country or "
            "region for a bootstrap test: no CI, no p, not ranked"}


def map_page(group: Group, metric: str) -> str:
    return f"map/{group.name}/{metric}.html"


def group_figures(site: Site, board: Board, page: str, group: Group) -> list[dict]:
    """The figures of ``group``'s headline, each {src, alt, href?, table?}."""
    metric = group.metrics[0]
    title = f"{board.cards[metric]['title']}, {group.prompt_set}" + (f" (group {group.id})" if group.differs else "")
    ranked = board.order(group, metric, "overall", "all")
    out = []
    if countries := _by_country(ranked, metric):
        out.append({"src": site.plot(page, f"{group.name}-heatmap",
                                     plots.heatmap_svg(countries, f"{title} by country", **scale(board.cards[metric]))),
                    "alt": f"Heatmap of {title}, submissions by country", "href": map_page(group, metric)})
        for shown in group.headline:  # the headline, and its language-parity gap where there is one
            means, cis = _country_means(group.results, shown)
            if not means:
                continue
            what = title.replace(board.cards[metric]["title"], board.cards[shown]["title"], 1)
            svg = worldmap.map_svg(means, f"{what}: mean of the ranked submissions per country", cis=cis,
                                   names={c: country_name(c) for c in means}, **scale(board.cards[shown]))
            out.append({"src": site.plot(page, f"{group.name}-map" + ("-parity" if shown != metric else ""), svg),
                        "href": map_page(group, shown),
                        "alt": f"World map of {what}, the mean of the ranked submissions per country; open the map "
                               "page to choose a submission or another metric"})
    eras = [{"model": r.label, "era": s, "value": e["value"], "low": e["ci_low"], "high": e["ci_high"]}
            for r in ranked
            for (m, t, s), e in sorted(_entries(r, metric, "era"), key=lambda kv: slice_order("era", kv[0][2]))]
    if eras:
        svg = plots.era_bars_svg(eras, f"{title} by era", chance=beside.chance_value(group, metric),
                                 controls=[r.label for r in group.controls])
        out.append({"src": site.plot(page, f"{group.name}-eras", svg),
                    "alt": f"Bars of {title} per era, with 95% CIs"})
    # the family's own slices (an edit step) of the headline, or else of the group's first metric that has them
    # (ECB's headline is one value per chain; its per-step accuracy shows what each edit does)
    sliced = next((m for m in group.metrics if _family_types(ranked, m)), metric)
    sliced_title = title if sliced == metric else title.replace(board.cards[metric]["title"], board.cards[sliced]["title"], 1)
    for slice_type in _family_types(ranked, sliced):
        values = {s for r in ranked for (m, t, s) in r.entries if m == sliced and t == slice_type}
        label = type_label(slice_type)
        if is_ordered(values):
            models = [r for r in ranked if not r.control]  # the first by rank, then every control
            curves = [{"model": r.label, "x": int(s), "value": e["value"], "low": e["ci_low"], "high": e["ci_high"]}
                      for r in models[:MAX_CURVES] + [r for r in ranked if r.control] for (m, t, s), e in r.entries.items()
                      if m == sliced and t == slice_type]
            more = f" (the first {MAX_CURVES} of {len(models)} by rank)" if len(models) > MAX_CURVES else ""
            svg = plots.curve_svg(curves, f"{sliced_title} by {label.lower()}{more}", x_label=label,
                                  chance=beside.chance_value(group, sliced), controls=[r.label for r in group.controls])
            out.append({"src": site.plot(page, f"{group.name}-{slice_type}", svg),
                        "alt": f"{sliced_title} per {label.lower()}, one line per submission{more}, with 95% CIs"})
        elif is_cross(slice_type):
            cells = [{"model": r.label, "country": slice_name(slice_type, s), "value": e["value"], "low": e["ci_low"],
                      "high": e["ci_high"]}
                     for r in ranked for (m, t, s), e in sorted(_entries(r, sliced, slice_type),
                                                                 key=lambda kv: slice_order(*kv[0][1:]))]
            svg = plots.heatmap_svg(cells, f"{sliced_title} by {label.lower()}", **scale(board.cards[sliced]),
                                    desc=f"Heatmap of {sliced_title}: submissions (rows) by {label.lower()} (columns).")
            out.append({"src": site.plot(page, f"{group.name}-{slice_type}", svg),
                        "alt": f"Heatmap of {sliced_title}, submissions by {label.lower()}"})
    if frontier := _frontier(board, group, metric, title):
        out.append({"src": site.plot(page, f"{group.name}-frontier", frontier),
                    "alt": f"Level versus Global North - South gap of {title}: the frontier joins the submissions no "
                           "other beats on both"})
    return out


def scale(card: dict) -> dict:
    """What a colour scale of ``card``'s metric needs beyond its values: its centre (a target metric's target) and
    the card's smallest meaningful difference, below which a difference from the reference is drawn neutral
    (:func:`.plots.meaningful`)."""
    return {"centre": card.get("target"), "smallest": card.get("smallest_difference")}


def _by_country(results, metric: str) -> list[dict]:
    return [{"model": r.label, "country": slice_name("country", s), "value": e["value"], "low": e["ci_low"],
             "high": e["ci_high"]} for r in results for (m, t, s), e in sorted(_entries(r, metric, "country"))]


def _entries(r, metric: str, slice_type: str) -> list[tuple[tuple[str, str, str], dict]]:
    """``r``'s summary entries of ``metric`` on the slices of ``slice_type``, as ((metric, type, slice), entry)."""
    return [(k, e) for k, e in r.entries.items() if k[0] == metric and k[1] == slice_type]


def _country_means(results, metric: str) -> tuple[dict[str, float | None], worldmap.Cis]:
    """(iso2 -> the mean over ``results`` of their value on the country (None where none has one), iso2 -> its 95%
    CI taken as the means of their CI bounds). That CI is exact where the submissions' errors move together (the
    same prompts are behind each) and wider than the mean's otherwise (the mean's standard error is at most the
    mean of theirs): the map's colour rule errs towards "noise", not towards painting it."""
    values: dict[str, list[float]] = {}
    bounds: dict[str, list[tuple[float, float]]] = {}
    for r in results:
        for (m, t, s), e in r.entries.items():
            if m == metric and t == "country":
                values.setdefault(s, [])
                if e["value"] is not None:
                    values[s].append(e["value"])
                    if e["ci_low"] is not None and e["ci_high"] is not None:
                        bounds.setdefault(s, []).append((e["ci_low"], e["ci_high"]))
    means = {c: (sum(v) / len(v) if v else None) for c, v in sorted(values.items())}
    return means, {c: (sum(b[0] for b in found) / len(found), sum(b[1] for b in found) / len(found))
                   for c, found in sorted(bounds.items())}


def _family_types(results, metric: str) -> list[str]:
    """The slice types of ``metric`` beyond the standard ones, in order."""
    from cultureboard.evaluators.results.aggregate import SLICE_TYPES

    found = {t for r in results for (m, t, _) in r.entries if m == metric and t not in SLICE_TYPES}
    return sorted(found, key=type_order)


# --- disparity


def _gap_entry(gap, board: Board, r, metric: str) -> dict:
    """A GN - GS gap as a summary entry (for the score cells): value, CI, n prompts of both groups."""
    gn, gs = (r.entries.get((metric, "region_group", k)) for k in ("GN", "GS"))
    images = sum(e["n_images"] for e in (gn, gs) if e)
    coverage = None if not gn or not gs or gn["coverage"] is None or gs["coverage"] is None else min(gn["coverage"], gs["coverage"])
    low, high = (None if math.isnan(x) else x for x in (gap.low, gap.high))  # an untested gap has no CI
    return {"value": gap.value, "ci_low": low, "ci_high": high, "n_images": images, "n_prompts": gap.n_prompts,
            "coverage": coverage, "complete": bool(gn and gs and gn.get("complete") and gs.get("complete"))}


def _abs_interval(value: float, low: float, high: float) -> tuple[float, float, float]:
    """|value| and the image of [low, high] under the absolute value."""
    ends = (abs(low), abs(high))
    return abs(value), (0.0 if low <= 0 <= high else min(ends)), max(ends)


def disparity_rows(board: Board, group: Group) -> list[dict]:
    """Per ranked submission with a GN - GS gap of the headline: the gap, its q, the country served worst, and
    the ranks by level and by the gap's size (ties where the |gap| intervals overlap). A submission whose gap
    is untested (NaN p: too few prompts) has rank None and comes after the ranked ones; untested country gaps
    never count as served worse. Only for a headline where higher or lower is better: for a descriptive one
    nothing is ranked, and for one ranked by its distance to a target a signed gap does not say which side is
    served worse."""
    metric = group.metrics[0]
    card = board.cards[metric]
    if card["direction"] not in ("higher", "lower"):
        return []
    rows = []
    for r in group.results:
        found = board.gaps(r, metric)
        region = next((g for g in found or () if g.kind == "region_group"), None)
        if region is None:
            continue
        worse = -1 if card["direction"] == "higher" else 1  # the sign of a gap that means "served worse"
        countries = [g for g in found if under_represented(g.kind, g.value, g.p_adjusted, card["direction"], g.low,
                                                           g.high, card.get("smallest_difference") or 0.0)]
        worst = max(countries, key=lambda g: worse * g.value, default=None)
        rows.append({"result": r, "gap": region, "worst": worst, "n_worse": len(countries)})
    tested = [x for x in rows if not math.isnan(x["gap"].p)]
    if tested:
        spans = [_abs_interval(x["gap"].value, x["gap"].low, x["gap"].high) for x in tested]
        rr = rank_ties([s[0] for s in spans], [s[1] for s in spans], [s[2] for s in spans], higher_is_better=False)
        for x, k, b, w in zip(tested, rr.rank, rr.best, rr.worst):
            x["rank"] = {"rank": int(k), "best": int(b), "worst": int(w)}
    untested = sorted((x for x in rows if math.isnan(x["gap"].p)), key=lambda x: x["result"].display)
    for x in untested:
        x["rank"] = None
    return sorted(tested, key=lambda x: (x["rank"]["rank"], x["result"].display)) + untested


def disparity_table(site: Site, board: Board, page: str, group: Group) -> Table | None:
    metric = group.metrics[0]
    rows = disparity_rows(board, group)
    if not rows:
        return None
    main = board.cards[metric]
    level = board.ranks(group, metric, "overall", "all")
    columns = [Column("rank", "Rank (disparity)", "rank", "Rank by the size of the Global North - South gap (smaller is "
                      "better); entries whose intervals of |gap| overlap are tied", better="lower"),
               Column("submission", "Submission", "link"),
               Column("level_rank", "Rank (level)", "rank", f"Rank on {main['title']} over all prompts", better="lower"),
               Column("level", main["title"], "score", f"{metric} over all prompts", **sort_rule(main)),
               Column("gap", "Gap (GN - GS)", "score", "Global North minus Global South: the mean over the prompts of "
                      "Global North countries minus that of Global South ones; 95% CI from a paired bootstrap over "
                      "prompts within countries"),
               Column("q", "q (BH)", "num", "Benjamini-Hochberg adjusted p of the gap, over the model's country gaps "
                      "and this gap", better="higher"),
               Column("worst", "Served worst", "text", f"The country whose gap to the model's mean is the largest in the "
                      f"bad direction among those significant at q < {SIGNIFICANT}"),
               Column("n_worse", "Countries served worse", "num", f"Countries significantly below the model's mean "
                      f"(q < {SIGNIFICANT})", better="lower")]
    out = []
    for x in rows:
        r, w = x["result"], x["worst"]
        out.append({"rank": x["rank"], "submission": {"text": r.display, "href": f"model/{r.sid}.html"},
                    "level_rank": level.get(r.sid), "level": r.entries.get((metric, "overall", "all")),
                    "gap": _gap_entry(x["gap"], board, r, metric),
                    "q": None if x["rank"] is None else x["gap"].p_adjusted,
                    "worst": None if w is None else f"{country_name(w.name)} ({w.name}): {w.value:+.3f} "
                                                    f"[{w.low:+.3f}, {w.high:+.3f}], q = {w.p_adjusted:.3f}",
                    "n_worse": x["n_worse"], "_marks": ({"gap": [UNTESTED]} if x["rank"] is None else {})
                    | standin_marks(r) | standin_marks(r, "level_rank")})
    return site.table(page, f"{group.name}-disparity", columns, out)


def _frontier(board: Board, group: Group, metric: str, title: str) -> str | None:
    points = []
    for x in disparity_rows(board, group):
        e = x["result"].entries.get((metric, "overall", "all"))
        if not e or e["value"] is None or x["rank"] is None:
            continue
        gap, low, high = _abs_interval(x["gap"].value, x["gap"].low, x["gap"].high)
        points.append({"model": x["result"].display, "x": e["value"], "x_low": e["ci_low"], "x_high": e["ci_high"],
                       "y": gap, "y_low": low, "y_high": high})
    if len(points) < 2:
        return None
    return plots.frontier_svg(points, f"{title}: level versus Global North - South gap", x_label="level",
                              y_label="|GN - GS gap|", higher_is_better=board.cards[metric]["direction"] == "higher")


# --- map pages


def map_pages(site: Site, board: Board) -> None:
    """map/<group>/<metric>.html for each shown metric with country values: the world map (the ranked
    submissions' mean, or one chosen submission: app.js recolours it from the figure's data-map, which holds each
    choice's values and 95% CIs, and leaves it uncoloured where worldmap.noise would, and each country whose
    difference from the reference does not clear the card's smallest meaningful difference: the data's ``centre``
    and ``smallest``), and the heatmap beside it."""
    for groups in board.groups.values():
        for group in groups:
            metrics = [m for m in group.shown if _by_country(group.everyone, m)]
            for metric in metrics:
                _map_page(site, board, group, metric, metrics)


def _map_page(site: Site, board: Board, group: Group, metric: str, metrics: list[str]) -> None:
    page = map_page(group, metric)
    card = board.cards[metric]
    members = board.order(group, metric, "overall", "all")
    countries = sorted({s for r in members for (m, t, s) in r.entries if m == metric and t == "country"})
    names = {c: country_name(c) for c in countries}
    means, cis = _country_means(group.results, metric)
    choices = [{"label": "Mean of the ranked submissions", "values": [means.get(c) for c in countries],
                "low": [cis.get(c, (None, None))[0] for c in countries],
                "high": [cis.get(c, (None, None))[1] for c in countries]}]
    for r in members:
        entries = [r.entries.get((metric, "country", c)) or {} for c in countries]
        choices.append({"label": r.label, "values": [e.get("value") for e in entries],
                        "low": [e.get("ci_low") for e in entries], "high": [e.get("ci_high") for e in entries]})
    for ch in choices:  # what the page's data holds is what it draws
        for key in ("values", "low", "high"):
            ch[key] = [None if v is None else round(v, 6) for v in ch[key]]
    vmin, vmax, digits = worldmap.scale_of((v for ch in choices for v in ch["values"]), card.get("target"))
    data = {"countries": countries, "digits": digits, "vmin": vmin, "vmax": vmax,
            "names": [names[c] for c in countries], "choices": choices, **scale(card)}
    svg = worldmap.map_body(dict(zip(countries, choices[0]["values"])), f"World map of {card['title']} per country",
                            names=names, vmin=vmin, vmax=vmax, digits=digits,
                            cis=dict(zip(countries, zip(choices[0]["low"], choices[0]["high"]))), **scale(card))
    heat = site.plot(page, "heatmap", plots.heatmap_svg(_by_country(members, metric), f"{card['title']} by country",
                                                        **scale(card)))
    site.page(page, "map.html", f"Map: {card['title']}, {group.prompt_set}", group=group, card=card, svg=svg,
              data=json.dumps(data, separators=(",", ":"), allow_nan=False), choices=choices, heatmap=heat,
              metrics=[{"name": m, "title": board.cards[m]["title"], "href": map_page(group, m)} for m in metrics],
              unmapped=[names[c] for c in worldmap.missing_shapes(countries)])
