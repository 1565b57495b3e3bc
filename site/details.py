"""The pages about one thing: a submission (model card, provenance, scores per slice, disparity), a metric (its
card, validity measured and reported, its leaderboard), a family (what it measures in plain language, its metric
cards, the paper's own tables marked as reported), and the trust map.

Nothing published here names a person or a machine: the submission's contact is left out, and provenance is shown
field by field (names, versions, revisions, never the scoring machine's paths).
"""

from __future__ import annotations

import math

from cultureboard.evaluators.results.disparity import SIGNIFICANT
from cultureboard.evaluators.results.reported import load_reported, load_validity
from cultureboard.evaluators.submission.format import FIELDS, get, model_key
from cultureboard.evaluators.submission.perceptual import THRESHOLD as COPY_THRESHOLD

from cultureboard.errors import CultureboardError

from . import gaming, held_out, near_reference, plots, written_share
from .board import Board
from .figures import map_page, scale
from .leaderboards import leaderboard, prompt_set_page
from .models import model_page
from .names import (STANDIN, direction_text, is_cross, is_ordered, slice_name, slice_order, slice_path, sort_rule,
                    standin_marks, type_label, type_order)
from .write import Column, Site

#: submission.yaml fields never published (a person's address).
PRIVATE_FIELDS = ("contact",)


def family_page(name: str) -> str:
    return f"family/{name}.html"


def model_pages(site: Site, board: Board, r, images: dict) -> None:
    """model/<id>.html: model card, provenance, scores per slice (the group's shown metrics), curves and crossed
    slices of the headline, the disparity of the headline, and the image browser's summary."""
    page, group = f"model/{r.sid}.html", board.group_of[r.sid]
    card = [{"field": f.path, "help": f.help, "value": get(r.spec, f.path)} for f in FIELDS
            if get(r.spec, f.path) is not None and f.path not in PRIVATE_FIELDS]
    ordered = _ordered_types(r)
    plain = sorted({k[1:] for k in r.entries if not is_cross(k[1]) and k[1] not in ordered},
                   key=lambda s: (type_order(s[0]), slice_order(*s)))
    headline = group.metrics[0]
    columns = [Column("slice_type", "Slice type", "text"), Column("slice", "Slice", "link", sticky=True),
               Column("rank", "Rank", "rank", f"Rank range on {board.cards[headline]['title']} among the comparable "
                      "submissions", better="lower")]
    columns += [Column(m, board.cards[m]["title"], "score", f"{m}: {direction_text(board.cards[m])}",
                       **sort_rule(board.cards[m]), sticky=m == headline, href=f"metric/{m}.html")
                for m in group.shown]
    rows = [{"slice_type": type_label(st),
             "slice": {"text": slice_name(st, s), "href": slice_path(st, s) or prompt_set_page(group.prompt_set)},
             "rank": None if r.control else board.ranks(group, headline, st, s).get(r.sid),
             **{m: r.entries.get((m, st, s)) for m in group.shown}, "_marks": standin_marks(r)} for st, s in plain]
    everything = _all_metrics(site, board, page, r, group)
    gap_rows = _gap_rows(board, r, [m for m in group.shown if board.cards[m]["direction"] != "none"])
    gap_columns = [Column("metric", "Metric", "text"), Column("kind", "Gap", "text"),
                   Column("gap", "Difference", "score", "A country's mean minus the model's mean over all prompts, or "
                          "Global North minus Global South; 95% CI from a paired bootstrap over prompts within countries; "
                          "a country is under-represented where the whole CI lies on the metric's worse side of zero"),
                   Column("p", "p", "num"), Column("q", "q (BH)", "num", "Benjamini-Hochberg adjusted over the metric's gaps")]
    site.page(page, "model.html", r.display, r=r, group=group, card=card, provenance=_provenance(r),
              per_slice=site.table(page, "slices", columns, rows), everything=everything,
              figures=_model_figures(site, board, page, r, group),
              gaps=site.table(page, "gaps", gap_columns, gap_rows) if gap_rows else None,
              held_out=held_out.model_table(site, board, page, r.sid),
              notes=[(m, _facts_text(facts)) for m, facts in sorted(r.summary["provenance"].get("notes", {}).items())],
              refused=r.summary["provenance"].get("refused") or [], controls=_control_text(r),
              overview=None if r.control else model_page(model_key(r.spec)),
              entangled=[{"metric": m, "title": board.cards[m]["title"], "found": found}
                         for m in group.metrics if (found := board.entangled(r, m))],
              written=written_share.share_text(r.summary), near_reference=near_reference.text(r.summary),
              without=_without_table(site, board, page, r),
              **images)


def _without_table(site: Site, board: Board, page: str, r):
    """The model page's written-answers table (:func:`written_share.without_rows`), or None without such metrics."""
    rows = written_share.without_rows(r.summary, {m: c["title"] for m, c in board.cards.items()})
    columns = [Column("metric", "Metric (its scorer reads text)", "link"), Column("with", "All images", "score"),
               Column("without", "Without the images that spell", "score")]
    return site.table(page, "written", columns, rows) if rows else None


def _gap_rows(board: Board, r, metrics: list[str]) -> list[dict]:
    """The disparity table's rows: per metric, each country gap and the GN - GS gap (:meth:`Board.gaps`; an
    untested gap's NaN CI and p-values as None), an under-represented country badged
    (:meth:`Board.under_represented`: q < 0.05 on the worse side)."""
    def known(x):
        return None if math.isnan(x) else x

    rows = []
    for m in metrics:
        card, worse = board.cards[m], board.under_represented(r, m)
        for g in board.gaps(r, m) or ():
            row = {"metric": card["title"], "kind": "Global North - South" if g.kind == "region_group" else
                   slice_name("country", g.name), "gap": {"value": g.value, "ci_low": known(g.low),
                   "ci_high": known(g.high), "n_images": 0, "n_prompts": g.n_prompts, "coverage": None,
                   "complete": True}, "p": known(g.p), "q": known(g.p_adjusted)}
            if g.name in worse:
                row["_marks"] = {"gap": [{"label": "under-represented", "title": f"The gap lies on the worse side of "
                                           f"zero ({direction_text(card)}) with a Benjamini-Hochberg q below "
                                           f"{SIGNIFICANT} over this model's gaps: the model serves this country "
                                           "worse than its own average."}] + ([STANDIN] if r.standin else [])}
            rows.append(row)
    return rows


def _ordered_types(r) -> set[str]:
    """The result's family slice types whose slices are all integers (drawn as curves, not listed)."""
    from cultureboard.evaluators.results.aggregate import SLICE_TYPES

    values: dict[str, set[str]] = {}
    for _, t, s in r.entries:
        if t not in SLICE_TYPES:
            values.setdefault(t, set()).add(s)
    return {t for t, found in values.items() if is_ordered(found)}


def _control_text(r) -> str | None:
    from .leaderboards import CONTROLS

    return CONTROLS.get(r.control) if r.control else None


def _all_metrics(site: Site, board: Board, page: str, r, group) -> object:
    """Every metric of the submission over all prompts (the leaderboards show only a few)."""
    columns = [Column("metric", "Metric", "link", sticky=True),
               Column("value", "Over all prompts", "score", better=None),
               Column("direction", "Direction", "text"), Column("rank", "Rank", "rank", better="lower")]
    rows = [{"metric": {"text": board.cards[m]["title"], "href": f"metric/{m}.html"},
             "value": r.entries.get((m, "overall", "all")), "direction": direction_text(board.cards[m]),
             "rank": None if r.control else board.ranks(group, m, "overall", "all").get(r.sid),
             "_marks": standin_marks(r)}
            for m in group.metrics if (m, "overall", "all") in r.entries]
    return site.table(page, "metrics", columns, rows)


def _model_figures(site: Site, board: Board, page: str, r, group) -> list[dict]:
    """The headline over each ordered slice type (a curve) and each crossed one (a heatmap a x b)."""
    from cultureboard.evaluators.results.aggregate import SLICE_TYPES

    metric = group.metrics[0]
    title = board.cards[metric]["title"]
    out = []
    types = sorted({t for (m, t, _) in r.entries if m == metric and t not in SLICE_TYPES}, key=type_order)
    for slice_type in types:
        entries = [(s, e) for (m, t, s), e in r.entries.items() if m == metric and t == slice_type]
        label = type_label(slice_type)
        if is_ordered(s for s, _ in entries):
            svg = plots.curve_svg([{"model": r.label, "x": int(s), "value": e["value"], "low": e["ci_low"],
                                    "high": e["ci_high"]} for s, e in entries], f"{title} by {label.lower()}", x_label=label)
        elif is_cross(slice_type):
            a, b = slice_type.split("_x_", 1)
            cells = []
            for s, e in sorted(entries, key=lambda x: slice_order(slice_type, x[0])):
                parts = s.split(" x ", 1)
                if len(parts) == 2:
                    cells.append({"model": slice_name(a, parts[0]), "country": slice_name(b, parts[1]), "value": e["value"],
                                  "low": e["ci_low"], "high": e["ci_high"]})
            svg = plots.heatmap_svg(cells, f"{title} by {label.lower()}", **scale(board.cards[metric]),
                                    desc=f"Heatmap of {title} for {r.display}: {type_label(a).lower()} (rows) by "
                                         f"{type_label(b).lower()} (columns).")
        else:
            continue
        out.append({"src": site.plot(page, slice_type, svg), "alt": f"{title} of {r.display} by {label.lower()}"})
    return out


def _provenance(r) -> list[tuple[str, str]]:
    """What the evaluator recorded, field by field: names, versions and revisions (nothing of the machine)."""
    p = r.summary["provenance"]
    code = p["code"]
    git = (code["git"].get("commit") or "unknown") + (" (with uncommitted changes)" if code["git"].get("dirty") else "")
    rows = [("Submission sha256", p["submission"]["sha256"]),
            ("Dataset", f"{p['dataset']['folder'].rsplit('/', 1)[-1]} at {p['dataset']['revision']}"),
            ("Reference photographs", str(p["dataset"].get("references_revision") or "not used")),
            ("Evaluator", f"cultureboard {code['cultureboard']}, git {git}, Python {code['python']}"),
            ("Packages", ", ".join(f"{k} {v}" for k, v in sorted(code["packages"].items()))),
            ("Device", f"{p['device']}, {p['dtype']}"),
            ("Settings", ", ".join(f"{k} = {v}" for k, v in sorted(p["settings"].items()))),
            ("Options", ", ".join(f"{k} = {v}" for k, v in sorted(p.get("options", {}).items())) or "none")]
    if ocr := (p.get("written") or {}).get("ocr"):
        rows.append(("OCR", f"{ocr['package']} {ocr['version']}, models "
                     + ", ".join(f"{name} sha256 {digest}" for name, digest in sorted(ocr["models"].items()))))
    for s in p["scorers"]:
        standin = " — a tiny random stand-in: its scores measure nothing" if s.get("standin") else ""
        kind = s.get("kind") or s.get("backend")
        rows.append((f"Scorer {s['name']}", f"{s['model_id']} @ {s['revision']} ({kind}, {s.get('dtype')}){standin}"))
    return rows


def metric_pages(site: Site, board: Board) -> None:
    """metric/<name>.html for every metric, and metrics.html listing them."""
    listing = []
    for name, card in sorted(board.cards.items()):
        page = f"metric/{name}.html"
        groups = [g for gs in board.groups.values() for g in gs if name in g.metrics]
        boards = [{"group": g, "table": leaderboard(site, board, page, g, "overall", "all", [name]),
                   "map": map_page(g, name) if name in g.shown and any((name, "country") == k[:2] for r in g.everyone
                                                                      for k in r.entries) else None,
                   "flag": board.text_only_flag(g, name), "gaming": gaming.group_standings(board, g, name)}
                  for g in groups]
        boards = [b for b in boards if b["table"]]
        checkpoints = sorted({(s["name"], s["model_id"], s["revision"], bool(s.get("standin"))) for g in groups
                              for r in g.everyone for s in r.summary["provenance"]["scorers"] if s["name"] in card["scorers"]})
        trust = [row for row in board.trust_rows if row["metric"] == name]
        columns = [Column("human", "Human judgement", "text"), Column("slice", "Slice", "text"),
                   Column("n", "Rated items", "num", better="higher"),
                   Column("rho", "Spearman rho", "num", "Sign-normalised: above 0 agrees with the humans", better="higher"),
                   Column("rho_low", "CI low", "num"), Column("rho_high", "CI high", "num"),
                   Column("verdict", "Verdict", "text"), Column("source", "Source", "text")]
        rows = [{"human": t["human"], "slice": slice_name(t["slice_type"], t["slice"]) if t["slice_type"] != "overall" else "all",
                 "n": t["n"], "rho": t["rho"], "rho_low": t["rho_low"], "rho_high": t["rho_high"],
                 "verdict": ("diagnostic only: " if t["diagnostic"] else "usable: " if t["diagnostic"] is False else "")
                 + t["reason"], "source": t["source"] + (f" ({t['submission']})" if t.get("submission") else ""),
                 "_muted": bool(t["diagnostic"])} for t in trust]
        family = board.families.get(card["family"])
        reads_text = any(name in ((r.summary["provenance"].get("written") or {}).get("reads_text") or ())
                         for g in groups for r in g.everyone)
        near = sorted({(b["status"], b["threshold"], b["model_id"]) for g in groups for r in g.everyone
                       if (b := (r.summary.get("near_reference") or {}).get(name))}, key=str)
        site.page(page, "metric.html", card["title"], card=card, boards=boards, checkpoints=checkpoints,
                  copy_threshold=COPY_THRESHOLD, reads_text=reads_text, near_reference=near,
                  ratings=site.table(page, "human-ratings", columns, rows) if rows else None,
                  papers=dict(family.papers) if family else {}, family=family,
                  notes=_notes(board, name))
        listing.append({"metric": {"text": card["title"], "href": page}, "name": name,
                        "family": {"text": family.title if family else card["family"], "href": family_page(card["family"])}
                        if family else None,
                        "direction": direction_text(card),
                        "scorer": ", ".join(card["scorers"]) or "none", "unit": card["unit"],
                        "results": sum(len(g.everyone) for g in groups)})
    columns = [Column("metric", "Metric", "link"), Column("name", "Name", "text"), Column("family", "Family", "link"),
               Column("direction", "Direction", "text"), Column("scorer", "Scorers", "text"),
               Column("unit", "Unit", "text"), Column("results", "Submissions", "num", better="higher")]
    site.page("metrics.html", "metrics.html", "Metrics", table=site.table("metrics.html", "metrics", columns, listing))


def _notes(board: Board, metric: str) -> list[dict]:
    """The evaluator's facts about ``metric`` (e.g. its chance level), each fact once: {text, who}, ``who`` the
    submissions that recorded it where only some of those with notes did ([] where all did)."""
    from .gallery import explain

    seen: dict[str, list[str]] = {}
    noted = 0
    for r in board.results.values():
        facts = r.summary["provenance"].get("notes", {}).get(metric)
        if facts:
            noted += 1
            for item in explain(facts):
                seen.setdefault(_fact_text(item), []).append(r.display)
    return [{"text": text, "who": who if len(who) < noted else []} for text, who in seen.items()]


def _facts_text(facts) -> str:
    from .gallery import explain

    return "; ".join(_fact_text(item) for item in explain(facts))


def _fact_text(item: dict) -> str:
    return f"{item['label']}: " + (item["text"] if "text" in item else ", ".join(item["entries"]))


def family_pages(site: Site, board: Board) -> None:
    """family/<name>.html for every registered family with results: what it measures and how, in plain language;
    its paper; its prompt sets; its metric cards with their validity; the paper's own numbers, marked as reported."""
    try:
        validity = load_validity()
    except CultureboardError:
        validity = []
    present = {board.cards[g.metrics[0]]["family"] for gs in board.groups.values() for g in gs}
    try:
        every_table = load_reported()
    except CultureboardError:
        every_table = []
    for name in sorted(present):
        family = board.families.get(name)
        if family is None:
            continue
        page = family_page(name)
        cards = [board.cards.get(m.name) or m.to_dict() for m in family.metrics]
        tables = [t for t in every_table if t.family == name]
        reported = []
        for k, t in enumerate(tables, 1):
            columns = [Column(c, c.replace("_", " "), "text") for c in t.labels]
            columns += [Column(c, c.replace("_", " "), "text", "As printed in the paper") for c in t.numbers]
            rows = [{**{c: row[c] for c in t.labels}, **{c: printed[c] for c in t.numbers}}
                    for row, printed in zip(t.rows, t.printed)]
            reported.append({"table": t, "data": site.table(page, f"reported-{k}", columns, rows)})
        mine = [v for v in validity if v["family"] == name]
        validity_table = None
        if mine:
            columns = [Column(c, c.replace("_", " ").capitalize(), "text") for c in ("metric", "human", "statistic", "slice")]
            columns += [Column("value", "Value (as printed)", "text"), Column("source", "Source", "text")]
            validity_table = site.table(page, "reported-validity", columns,
                                        [{**{c: v[c] for c in ("metric", "human", "statistic", "slice")},
                                          "value": v["printed"], "source": v["source"]} for v in mine])
        prompt_sets = [{"name": ps.name, "href": prompt_set_page(ps.name), "gallery": f"gallery/{ps.name}.html",
                        "headline": board.cards.get(family.primary(ps.name)) or family.card(family.primary(ps.name)).to_dict(),
                        "results": sum(len(g.everyone) for g in board.groups.get(ps.name, []))}
                       for ps in family.prompt_sets]
        overview = site.table(page, "prompt-sets", [
            Column("prompt_set", "Prompt set", "text"), Column("headline", "Ranked by", "link"),
            Column("results", "Submissions", "num", better="higher"), Column("leaderboard", "Leaderboard", "link"),
            Column("images", "Images", "link")], [
            {"prompt_set": ps["name"], "results": ps["results"],
             "headline": {"text": ps["headline"]["title"], "href": f"metric/{ps['headline']['name']}.html"}
             if ps["headline"]["name"] in board.cards else None,
             "leaderboard": {"text": "leaderboard", "href": ps["href"]} if ps["results"] else None,
             "images": {"text": "images", "href": site.globals["galleries"][ps["name"]]}
             if ps["name"] in site.globals.get("galleries", {}) else None} for ps in prompt_sets])
        site.page(page, "family.html", family.title, family=family, cards=cards, reported=reported, overview=overview,
                  validity=validity_table, validity_note=next((v["note"] for v in mine if v.get("note")), ""),
                  validity_source=next(({"paper": v["paper"], "url": v["url"]} for v in mine), None),
                  scored=set(board.cards))


def trust_page(site: Site, board: Board) -> None:
    """trust.html: per metric and slice, Spearman's rho with human judgements and whether the metric is only a
    diagnostic there (greyed); where the ratings are synthetic (the demo's), the page says so first."""
    rows = sorted(board.trust.values(), key=lambda t: (t["metric"], type_order(t["slice_type"]),
                                                       slice_order(t["slice_type"], t["slice"])))
    columns = [Column("metric", "Metric", "link"), Column("human", "Human judgement", "text"),
               Column("slice", "Slice", "text"), Column("n", "Rated items", "num", better="higher"),
               Column("rho", "Spearman rho", "num", better="higher"), Column("rho_low", "CI low", "num"),
               Column("rho_high", "CI high", "num", better="higher"), Column("verdict", "Verdict", "text")]
    table = site.table("trust.html", "trust", columns, [
        {"metric": {"text": board.cards[t["metric"]]["title"] if t["metric"] in board.cards else t["metric"],
                    "href": f"metric/{t['metric']}.html"} if t["metric"] in board.cards else None,
         "human": t["human"], "slice": "all" if t["slice_type"] == "overall" else slice_name(t["slice_type"], t["slice"]),
         "n": t["n"], "rho": t["rho"], "rho_low": t["rho_low"], "rho_high": t["rho_high"],
         "verdict": ("synthetic, not applied: " if t.get("synthetic") else "")
                    + ("diagnostic only: " if t["diagnostic"] else "usable: " if t["diagnostic"] is False else "") + t["reason"],
         "_muted": bool(t["diagnostic"])} for t in rows]) if rows else None
    synthetic = " ".join(sorted({t["synthetic"] for t in board.trust_rows if t.get("synthetic")})) or None
    site.page("trust.html", "trust.html", "Trust: where each metric tracks human judgement", table=table,
              synthetic=synthetic)


def evidence_rows() -> list[dict]:
    """One row per registered metric card, in tier order then by name: its tier, why it is there (its place in
    :data:`~cultureboard.evaluators.results.tiers.RULE`, naming the human target and the source), the statistic,
    the published figure, the human-human ceiling and the figure's share of it, the prompt domain and the smallest
    meaningful difference with its reason."""
    from cultureboard.evaluators.engine.registry import metric_cards
    from cultureboard.evaluators.results.tiers import tier_order

    rows = []
    for name, card in metric_cards().items():
        d = card.to_dict()
        ev = d["evidence"] or {}
        value, ceiling = (None if ev.get(k) is None else float(ev[k]) for k in ("value", "ceiling"))
        rows.append({"metric": name, "tier": d["tier"], "why": d["tier_reason"], "statistic": ev.get("statistic"),
                     "value": value, "ceiling": ceiling,
                     "share": abs(value) / ceiling if value is not None and ceiling else None,
                     "domain": ev.get("domain"), "smallest": d["smallest_difference"],
                     "smallest_reason": d["smallest_difference_reason"], "gate": gate_text(d["gate"])})
    return sorted(rows, key=lambda r: (tier_order(r["tier"]), r["metric"]))


def gate_text(gate: dict | None) -> str | None:
    """A card's gate in words (:mod:`~cultureboard.evaluators.results.gates`), or None where it states none."""
    if not gate:
        return None
    if gate["kind"] == "joint":
        what = f"ranked only jointly with {' or '.join(gate['with'])}, above the {gate['control']} control's"
    else:
        what = f"ranked over the units whose {gate['by']} at their last image is above the {gate['control']} control's"
    return f"{what}: {gate['reason']}"


def evidence_page(site: Site, board: Board) -> None:
    """evidence.html: the tier rule, and every metric card's tier and why (greyed: the tiers that get no ranks);
    a metric some result was scored with links its page."""
    from cultureboard.evaluators.results.tiers import RANKED_TIERS, RULE, RULE_VERSION

    columns = [Column("metric", "Metric", "link"), Column("tier", "Tier", "text"), Column("why", "Why", "text"),
               Column("statistic", "Statistic", "text"), Column("value", "Published figure", "num"),
               Column("ceiling", "Human-human ceiling", "num"), Column("share", "Share of the ceiling", "num"),
               Column("domain", "Prompt domain", "text"),
               Column("smallest", "Smallest meaningful difference", "num"), Column("smallest_reason", "Its reason", "text"),
               Column("gate", "Gate against a known cheat", "text")]
    rows = [{**r, "metric": {"text": r["metric"], "href": f"metric/{r['metric']}.html" if r["metric"] in board.cards
                             else "evidence.html"}, "_muted": r["tier"] not in RANKED_TIERS} for r in evidence_rows()]
    site.page("evidence.html", "evidence.html", "Evidence: each metric's validity tier and why",
              table=site.table("evidence.html", "evidence", columns, rows), rule=RULE, rule_version=RULE_VERSION)
