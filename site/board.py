"""The board: every loaded result grouped for ranking, with everything derived from the results that several
pages show (ranks, shown metrics, variant spreads, disparity gaps, controls, entanglement, trust).

Comparability (DESIGN principle 6): the results of a prompt set are split into groups that share the dataset
revision, every scorer's checkpoint, revision and preprocessing, the metric versions and the family options
(seed and bootstrap count excepted); ranks are computed within a group only, and a page showing several groups
of one prompt set says what sets each apart. Control submissions (``control:`` in submission.yaml: reference
photographs, the prompt's words as an image) sit in the group of their scorers but are never ranked.

Everything family-specific comes from the registry (:func:`~cultureboard.evaluators.engine.registry.family_of`):
the headline of a prompt set, its metric order, the family's texts and papers.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from dataclasses import dataclass, field

import numpy as np
import pandas as pd
from cultureboard.evaluators.engine.context import IN_TRAINING
from cultureboard.evaluators.engine.parity import is_parity, parity_base, parity_name
from cultureboard.evaluators.engine.registry import Family, family_of, load_families
from cultureboard.evaluators.results.disparity import REGION_GAP, base_at_chance, gaps, under_represented
from cultureboard.evaluators.results.gates import (
    admitted,
    clears_joint,
    joint_floor,
    last_values,
    regated_entries,
    units_floor,
)
from cultureboard.evaluators.results.stats import goodness, oriented, rank_ties
from cultureboard.evaluators.results.tiers import ranked_tier, tier_order

from cultureboard.countries import load_countries
from cultureboard.errors import CultureboardError

from . import entangle
from .cells import at_precision
from .load import Result
from .names import MIN_PROMPTS, SLICE_FOLDERS, slice_order
from .trust import evidence

#: Metrics a leaderboard shows beside the headline (the rest are on the metric and model pages).
SHOWN_BESIDE = 3
#: How a ranked slice is ordered (``build site --order``): by the point value, or by the pessimistic end of the
#: CI (the lower bound where higher is better, the upper where lower is, the far end of the distance to a
#: target). Rank ranges (ties where CIs overlap) are the same either way.
ORDERS = {"value": "value", "lcb": "bound"}


@dataclass
class Group:
    """Results of one prompt set that may be ranked together (controls beside them, never ranked)."""

    prompt_set: str
    id: str  # g1, g2, ... in the prompt set
    results: list[Result]  # ranked submissions
    controls: list[Result]
    metrics: list[str]  # every metric, the headline first, then in the family's order
    shown: list[str]  # what leaderboards show: the headline and a few others
    differs: list[tuple[str, str]]  # (label, value) that set this group apart; empty when it is alone
    several: bool = False  # whether the prompt set has other groups
    superseded: list[Result] = field(default_factory=list)  # rows a later submission replaces: shown, never ranked

    @property
    def name(self) -> str:
        return f"{self.prompt_set}-{self.id}"

    @property
    def everyone(self) -> list[Result]:
        return self.results + self.controls + self.superseded

    @property
    def headline(self) -> list[str]:
        """The headline, and beside it its language-parity gap where the group has one (a native variant)."""
        gap = parity_name(self.metrics[0])
        return self.metrics[:1] + ([gap] if gap in self.metrics else [])


@dataclass
class Board:
    """Everything the pages show, loaded and checked once."""

    results: dict[str, Result]
    prompts: dict[str, dict]
    trust_rows: list[dict] = field(default_factory=list)
    order_by: str = "value"  # a key of ORDERS
    held_out: dict = field(default_factory=lambda: {"split": None, "records": {}})  # site/held_out.py's load()
    human: dict = field(default_factory=dict)  # submission id -> its human scores (site/human.py's load_human())

    def __post_init__(self):
        if self.order_by not in ORDERS:
            raise CultureboardError("build site --order", f"is {self.order_by!r}", f"use one of {', '.join(ORDERS)}")
        self.cards: dict[str, dict] = {}
        for r in self.results.values():
            for card in r.summary["metrics_info"]:
                self.cards.setdefault(card["name"], card)
        self.families: dict[str, Family] = load_families()
        shared = {name for name, n in Counter(r.display for r in self.results.values()).items() if n > 1}
        for r in self.results.values():  # plots need one label per submission
            r.label = (f"{r.display} [{r.sid}]" if r.display in shared else r.display) + (
                f" [control: {r.control}]" if r.control else "")
        self.groups = _groups(list(self.results.values()), self.cards)
        self.group_of = {r.sid: g for gs in self.groups.values() for g in gs for r in g.everyone}
        self.trust = evidence(self.trust_rows)  # shown on the trust and metric pages
        # what decides greying and ranking: real ratings only (synthetic ones, the demo's, are shown, never obeyed)
        self._judged = evidence([t for t in self.trust_rows if not t.get("synthetic")])
        self.standin = sorted(r.sid for r in self.results.values() if r.standin)
        self._ranks: dict[tuple, dict[str, dict]] = {}
        self._gated: dict[tuple, dict[str, dict | None]] = {}
        self._lasts: dict[tuple[str, str], dict] = {}
        self._regated_of: dict[tuple, dict[str, dict]] = {}
        self._value_ranks_of: dict[tuple[str, str], dict[str, int]] = {}
        self._gaps: dict[tuple[str, str], list | None] = {}
        self._training = entangle.registry_training_data()

    def family_for(self, prompt_set: str) -> Family | None:
        """The registered family that scores ``prompt_set`` (None if none does)."""
        try:
            return family_of(prompt_set)[0]
        except CultureboardError:
            return None

    # --- ranks

    def ranks(self, group: Group, metric: str, slice_type: str, slice_: str) -> dict[str, dict]:
        """sid -> {rank, best, worst} on ``metric`` in the slice, among the group's ranked results that have a
        value and CI from at least :data:`MIN_PROMPTS` prompts (fewer give CIs too unreliable to order by), in the
        card's direction (``target``: by the distance to the target, :func:`~.stats.oriented`) and the board's
        order (:data:`ORDERS`). Distinct ranks need the gap between two CIs to exceed the card's smallest
        meaningful difference d (each oriented CI is widened by d / 2 before :func:`~.stats.rank_ties`: entries
        whose CIs come closer than d are tied). The entries are those the card's gate lets take part
        (:meth:`gated`). Nothing (:meth:`unranked`) for a descriptive metric, a tier that
        gets no ranks, a diagnostic slice, or a board whose models a cheat control tops."""
        key = (group.name, metric, slice_type, slice_)
        if key not in self._ranks:
            card = self.cards[metric]
            out = {}
            entries = {} if self.unranked(group, metric, slice_type, slice_) else self.gated(group, metric, slice_type,
                                                                                            slice_)
            ranked = [r for r in group.results
                      if (e := entries.get(r.sid)) and e["value"] is not None
                      and e["ci_low"] is not None and e["n_prompts"] >= MIN_PROMPTS]
            if ranked:
                e = [entries[r.sid] for r in ranked]
                half = (card.get("smallest_difference") or 0.0) / 2
                g, lo, hi = oriented([x["value"] for x in e], [x["ci_low"] for x in e], [x["ci_high"] for x in e],
                                     card["direction"], card.get("target"))
                rr = rank_ties(g, lo - half, hi + half, by=ORDERS[self.order_by])
                out = {r.sid: {"rank": int(k), "best": int(b), "worst": int(w)}
                       for r, k, b, w in zip(ranked, rr.rank, rr.best, rr.worst)}
            self._ranks[key] = out
        return self._ranks[key]

    def unranked(self, group: Group, metric: str, slice_type: str, slice_: str) -> str:
        """Why ``metric`` gets no rank numbers on the group's board in this slice ("" when it gets them): it is
        descriptive, its validity tier is not a ranked one (:mod:`~cultureboard.evaluators.results.tiers`), it is
        only a diagnostic here, its card's gate cannot be tested (its control is not on the board), or a cheat
        control tops every model that the gate lets take part (:func:`.gaming.cheats_on_top`)."""
        from .gaming import cheats_on_top

        card = self.cards[metric]
        if card["direction"] == "none":
            return "descriptive: never ranked"
        if not ranked_tier(card):
            return f"not ranked: {card.get('tier') or 'no validity tier recorded'} (the evidence page says why)"
        if (gate := card.get("gate")) and not any(r.control == gate["control"] for r in group.controls):
            return f"not ranked: its gate needs the {gate['control']} control on the board to be tested"
        if self.diagnostic(metric, slice_type, slice_):
            return "not ranked: only a diagnostic here"
        if cheats := cheats_on_top(self, group, metric, slice_type, slice_):
            return "not ranked: a cheat tops every model (" + ", ".join(f"{c.control}, {c.kind}" for c in cheats) + ")"
        return ""

    def gated(self, group: Group, metric: str, slice_type: str, slice_: str) -> dict[str, dict | None]:
        """sid -> the entry of ``metric`` in the slice with which each member of the group (models and controls
        alike) takes part in its ranking: its summary entry, or where the card states a gate
        (:mod:`~cultureboard.evaluators.results.gates`) what the gate lets through: a ``joint`` gate keeps the
        entries whose ``with`` score clears the gate's control's (None for the others), a ``units`` gate recomputes
        each entry over the units whose ``by`` value at their last image is above every unit of the gate's control
        (None where no unit is). Without the gate's control every member's entry is None."""
        key = (group.name, metric, slice_type, slice_)
        if key not in self._gated:
            self._gated[key] = self._gate(group, metric, slice_type, slice_)
        return self._gated[key]

    def _gate(self, group: Group, metric: str, slice_type: str, slice_: str) -> dict[str, dict | None]:
        card, members = self.cards[metric], group.everyone
        raw = {r.sid: r.entries.get((metric, slice_type, slice_)) for r in members}
        gate = card.get("gate")
        if not gate:
            return raw
        controls = [r for r in group.controls if r.control == gate["control"]]
        if gate["kind"] == "joint":
            keep: set[str] = set()
            for m in gate["with"]:
                other = self.cards.get(m)
                if other is None or other["direction"] == "none":
                    continue
                floor = joint_floor([(r.entries.get((m, slice_type, slice_)) or {}).get("value") for r in controls],
                                    other["direction"], other.get("target"))
                keep |= {r.sid for r in members if clears_joint(r.entries.get((m, slice_type, slice_)), floor,
                                                                 other["direction"], other.get("target"),
                                                                 other.get("smallest_difference") or 0.0)}
            return {sid: e if sid in keep else None for sid, e in raw.items()}
        lasts = {r.sid: self._last_values(r, gate["by"]) for r in members}
        floor = units_floor([lasts[r.sid] for r in controls])
        out: dict[str, dict | None] = {}
        for r in members:
            if floor is None or raw[r.sid] is None:
                out[r.sid] = None
                continue
            out[r.sid] = self._regated(r, card, admitted(lasts[r.sid], floor), slice_type).get(slice_)
        return out

    def _regated(self, result: Result, card: dict, keep: set, slice_type: str) -> dict[str, dict]:
        """:func:`~cultureboard.evaluators.results.gates.regated_entries` of every slice of ``slice_type``, once per
        (result, metric, slice type, kept units)."""
        key = (result.sid, card["name"], slice_type, frozenset(keep))
        if key not in self._regated_of:
            self._regated_of[key] = regated_entries(result.scores.iloc[result.rows_of(card["name"])], card, keep,
                                                    slice_type, result.summary["provenance"]["settings"])
        return self._regated_of[key]

    def _last_values(self, result: Result, metric: str) -> dict:
        """:func:`~cultureboard.evaluators.results.gates.last_values` of ``metric``'s rows in ``result``, once."""
        key = (result.sid, metric)
        if key not in self._lasts:
            self._lasts[key] = last_values(result.scores.iloc[result.rows_of(metric)])
        return self._lasts[key]

    def order(self, group: Group, metric: str, slice_type: str, slice_: str) -> list[Result]:
        """The group's ranked results by rank on ``metric`` (unranked last, by name), then its controls, then the
        superseded rows."""
        ranks = self.ranks(group, metric, slice_type, slice_)
        ranked = sorted(group.results, key=lambda r: (ranks[r.sid]["rank"] if r.sid in ranks else np.inf, r.display, r.sid))
        return ranked + sorted(group.controls, key=lambda r: r.sid) + sorted(group.superseded, key=lambda r: r.sid)

    def slices(self) -> list[tuple[str, str]]:
        """Every (slice type, slice) with a page, in page order."""
        found = {k[1:] for r in self.results.values() for k in r.entries if k[1] in SLICE_FOLDERS}
        return sorted(found, key=lambda s: (list(SLICE_FOLDERS).index(s[0]), slice_order(*s)))

    # --- what a metric is worth where

    def diagnostic(self, metric: str, slice_type: str, slice_: str) -> dict | None:
        """The trust row that makes ``metric`` only a diagnostic on this slice (greyed, never the headline), or None;
        rows of synthetic ratings (``site/trust.py``) never do."""
        row = self._judged.get((metric, slice_type, slice_))
        return row if row is not None and row["diagnostic"] else None

    def text_only_flag(self, group: Group, metric: str) -> str | None:
        """Why ``metric`` is flagged in ``group``: a text-only control (the prompt's words as an image) scores
        overall at least as well as a ranked submission; None when it does not (or there is no such control)."""
        card = self.cards[metric]
        if card["direction"] == "none":
            return None
        ranked = [(r, r.entries.get((metric, "overall", "all"))) for r in group.results]
        ranked = [(r, e["value"]) for r, e in ranked if e and e["value"] is not None]
        for control in group.controls:
            e = control.entries.get((metric, "overall", "all"))
            if control.control != "text-only" or not e or e["value"] is None or not ranked:
                continue
            beaten = [r for r, v in ranked if _good(card, e["value"]) >= _good(card, v)]
            if beaten:
                score = (f"{e['value']:.3f}" if e.get("ci_low") is None else
                         "{} [{}, {}]".format(*at_precision(e["value"], e["ci_low"], e["ci_high"])))
                return (f"a picture of the prompt's words ({control.display}) scores {score}, as well as "
                        f"{len(beaten)} of {len(ranked)} ranked submission(s): this metric rewards text in the image, "
                        "not culture")
        return None

    # --- variants, disparity, entanglement

    def variants(self, metric: str, available) -> list[str]:
        """``metric`` and the metrics that recompute it with another scorer (named ``<metric>.<scorer>``, e.g. CuRe's
        ITA per OpenCLIP backbone) among ``available``; just ``[metric]`` when it has none."""
        return [metric] + sorted(m for m in available if m.startswith(metric + ".") and "." not in m[len(metric) + 1:]
                                 and not is_parity(m))

    def spread(self, group: Group, result: Result, metric: str) -> dict | None:
        """How far ``result``'s rank on ``metric`` moves across the metric's scorer variants (overall), as
        {value, best: (variant, rank), worst: (variant, rank), n}: within each variant the group's ranked results
        with a value from at least :data:`MIN_PROMPTS` prompts are ranked by value alone (rank = 1 + the number
        with a strictly better value, in the card's direction), and ``value`` = worst rank - best rank. Ranks,
        not values: the variants' scales differ (SigLIP 2 cosines are about 0.1, CLIP's about 0.25), so results
        whose values on one variant are those on another plus a constant keep spread 0. None for a control, a
        descriptive metric, or fewer than two variants ranking ``result``."""
        variants = self.variants(metric, group.metrics)
        if result.control or len(variants) < 2 or self.cards[metric]["direction"] == "none":
            return None
        ranks = [(v, r[result.sid]) for v in variants if result.sid in (r := self._value_ranks(group, v))]
        if len(ranks) < 2:
            return None
        best, worst = min(ranks, key=lambda x: x[1]), max(ranks, key=lambda x: x[1])
        return {"value": worst[1] - best[1], "best": best, "worst": worst, "n": len(ranks)}

    def _value_ranks(self, group: Group, metric: str) -> dict[str, int]:
        """sid -> 1 + the number of the group's ranked results with a strictly better overall value of ``metric``."""
        key = (group.name, metric)
        if key not in self._value_ranks_of:
            values = {r.sid: _good(self.cards[metric], e["value"]) for r in group.results
                      if (e := r.entries.get((metric, "overall", "all"))) and e["value"] is not None
                      and e["n_prompts"] >= MIN_PROMPTS}
            self._value_ranks_of[key] = {sid: 1 + sum(o > v for o in values.values()) for sid, v in values.items()}
        return self._value_ranks_of[key]

    def gaps(self, result: Result, metric: str) -> list | None:
        """:func:`~cultureboard.evaluators.results.disparity.gaps` of ``metric``'s units in ``result``: each
        unit's mean value (flagged rows left out), its country and region group; None with fewer than two
        countries. Bootstrap settings (seed, n_boot, level) are the evaluator's."""
        key = (result.sid, metric)
        if key not in self._gaps:
            self._gaps[key] = _gaps(result, metric)
        return self._gaps[key]

    def under_represented(self, result: Result, metric: str) -> list[str]:
        """The countries the model serves significantly worse than its own average on ``metric``
        (:func:`~cultureboard.evaluators.results.disparity.under_represented`: Benjamini-Hochberg q < 0.05, the
        gap on the worse side and its interval clearing the card's smallest meaningful difference; never for a descriptive or a target metric, nor an untested gap)."""
        card = self.cards[metric]
        return [g.name for g in self.gaps(result, metric) or ()
                if under_represented(g.kind, g.value, g.p_adjusted, card["direction"], g.low, g.high,
                                     card.get("smallest_difference") or 0.0)]

    def chance(self, result: Result, metric: str) -> float | None:
        """The chance level of ``metric`` that the evaluator recorded for ``result`` (the note ``chance``, a
        number: CUBE's 1 / number of countries), or None."""
        value = (result.summary["provenance"].get("notes", {}).get(metric) or {}).get("chance")
        return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None

    def base_at_chance(self, result: Result, metric: str, slice_type: str, slice_: str) -> bool:
        """Whether ``metric`` is a language-parity gap whose base metric leaves ``result`` at chance in the slice
        (:func:`~cultureboard.evaluators.results.disparity.base_at_chance`): no gap is claimed there."""
        if not is_parity(metric):
            return False
        base = parity_base(metric)
        return base_at_chance(result.entries.get((base, slice_type, slice_)), self.chance(result, base))

    def region_gap(self, result: Result, metric: str):
        found = self.gaps(result, metric)
        return next((g for g in found or () if g.name == REGION_GAP), None)

    def entangled(self, result: Result, metric: str) -> list[dict]:
        """The scorers of ``metric`` whose declared training data overlaps the submission's (``model.training_data``),
        and a learned scorer whose own training record holds some of the submission's images (rows flagged
        :data:`~cultureboard.evaluators.engine.context.IN_TRAINING`: left out of the value, read from the model
        folder's ``training.json``, not from free text): [{scorer, corpora}], empty when none does."""
        text = result.spec.get("model", {}).get("training_data") if isinstance(result.spec.get("model"), dict) else None
        found = []
        overall = result.entries.get((metric, "overall", "all")) or {}
        if n := (overall.get("flags") or {}).get(IN_TRAINING):
            found.append({"scorer": ", ".join(self.cards[metric]["scorers"]),
                          "corpora": [f"{n} of this submission's images are in the scorer's own training set "
                                      "(its training.json): left out of the value"]})
        for scorer in self.cards[metric]["scorers"]:
            declared = entangle.declared(result, scorer, self._training)
            shared = entangle.overlap(declared, text)
            if shared:
                found.append({"scorer": scorer, "corpora": shared})
        return found


def _good(card: dict, value: float) -> float:
    """``value`` of a ranked ``card``'s metric as "higher is better" (:func:`~.stats.goodness`)."""
    return float(goodness([value], card["direction"], card.get("target"))[0])


def _groups(results: list[Result], cards: dict[str, dict]) -> dict[str, list[Group]]:
    """prompt set -> comparability groups, largest first."""
    by_key: dict[tuple, list[Result]] = defaultdict(list)
    for r in results:
        by_key[r.comparability()].append(r)
    out: dict[str, list[Group]] = defaultdict(list)
    for key, members in sorted(by_key.items(), key=lambda kv: (kv[0][0], -len(kv[1]), kv[0])):
        prompt_set = key[0][1]
        metrics = _metric_order(prompt_set, sorted({m for r in members for m, _, _ in r.entries}), cards)
        shown = _shown(metrics, cards)
        live = [r for r in members if not r.control and r.superseded_by is None]
        out[prompt_set].append(Group(prompt_set, f"g{len(out[prompt_set]) + 1}", live, [r for r in members if r.control],
                                     metrics, shown, list(key),
                                     superseded=[r for r in members if not r.control and r.superseded_by is not None]))
    for groups in out.values():  # keep only what tells the groups apart
        shared = set.intersection(*(set(g.differs) for g in groups))
        for g in groups:
            g.differs = [item for item in g.differs if item not in shared]
            g.several = len(groups) > 1
    return dict(sorted(out.items()))


def _metric_order(prompt_set: str, metrics: list[str], cards: dict[str, dict]) -> list[str]:
    """The headline first, then in the order the family lists them, then any others by name. The headline is
    the metric of the strongest validity tier (:data:`~cultureboard.evaluators.results.tiers.TIERS`; language
    parity gaps aside, they stand beside their base): the family's primary metric where it is of that tier,
    else the first listed one that is (an unregistered prompt set: its first metric)."""
    try:
        family, spec = family_of(prompt_set)
    except CultureboardError:
        return metrics
    listed = [m for m in spec.metrics if m in metrics]
    rest = listed + sorted(set(metrics) - set(listed))
    candidates = [m for m in rest if not is_parity(m) and cards[m]["direction"] != "none"] or rest
    best = min(tier_order(cards[m].get("tier")) for m in candidates)
    primary = family.primary(prompt_set)
    main = next(m for m in [primary, *candidates] if m in candidates and tier_order(cards[m].get("tier")) == best)
    return [main] + [m for m in rest if m != main]


def _shown(metrics: list[str], cards: dict[str, dict]) -> list[str]:
    """The headline, its language-parity gap where there is one, and up to :data:`SHOWN_BESIDE` others: those with
    a direction, variants of another metric (shown as its spread) and the other gaps left out."""
    def variant(m):
        return is_parity(m) or any(m.startswith(o + ".") for o in metrics if o != m)

    gap = [m for m in metrics if m == parity_name(metrics[0])]
    beside = [m for m in metrics[1:] if cards[m]["direction"] != "none" and not variant(m)]
    return metrics[:1] + gap + beside[:SHOWN_BESIDE]


def _gaps(result: Result, metric: str):
    """:func:`~cultureboard.evaluators.results.disparity.gaps` of ``metric`` in ``result``: each unit's mean value over
    its rows with a value, a country and no flag (pandas' group mean, so the values are exactly those of
    ``groupby("unit_id").mean()``), units in sorted order, a unit whose rows name two countries left out."""
    if not {"unit_id", "country", "flag"} <= set(result.scores.columns):
        return None
    value, unit, country = (result.column(c) for c in ("value", "unit_id", "country"))
    rows = result.rows_of(metric)
    rows = rows[pd.isna(result.column("flag")[rows]) & ~pd.isna(value[rows]) & ~pd.isna(country[rows])
                & ~pd.isna(unit[rows])]
    if not len(rows):
        return None
    _, first, codes = np.unique(unit[rows], return_index=True, return_inverse=True)
    means = pd.Series(value[rows]).groupby(codes).mean().to_numpy()
    countries = country[rows][first]
    one = np.bincount(codes[country[rows] != countries[codes]], minlength=len(first)) == 0
    means, countries = means[one], countries[one]
    if len(set(countries)) < 2:
        return None
    groups_of = {c.iso2: c.region_group for c in load_countries()}
    settings = result.summary["provenance"]["settings"]
    try:
        return gaps(means, countries, [groups_of.get(c) for c in countries], n_boot=int(settings.get("n_boot", 1000)),
                    level=float(settings.get("ci_level", 0.95)), seed=int(settings.get("seed", 0)))
    except ValueError:  # e.g. a country listed in two region groups: no gaps rather than wrong ones
        return None
