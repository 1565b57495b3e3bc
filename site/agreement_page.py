"""agreement.html: do the benchmarks agree? Kendall's tau between two families' rankings of the same models.

A model is its organization and model name (:func:`~cultureboard.evaluators.submission.format.model_key`). A
ranking is one comparability group of a prompt set (:class:`~.board.Group`; controls are never in one): each of
its models scored by the group's headline metric as the mean over the metric's units (prompts; CuRe's ladders, ECB's
chains, CUBE's pools where the headline scores those) of the per-unit mean of its scores, flagged rows left out; "better" follows the metric card (``higher``, ``lower``, or closer to
``target``). For every pair of rankings from two different families, overall and on each country both measured:

- the models compared are those both rank (their shared models), each on the prompts (units) that every one of them
  scored in its family: the models are then compared on the same prompts, not each on its own;
- tau = Kendall's tau-b between the two families' scores of their shared models (+1 the same order, -1 reversed),
  given from :data:`MIN_SHARED` shared models;
- its 95% CI: percentile bootstrap, each replicate resampling each family's prompts (with replacement, the same
  draw for every model of that family), recomputing every model's headline mean and tau: how much the prompts move
  tau;
- p: the two-sided permutation p-value over models of "the two orders are unrelated", the share of the n!
  pairings of one family's scores with the other's models (every one for n <= :data:`EXACT_UP_TO`, else
  :data:`N_PERM` drawn at random, the observed one counted) whose |tau| reaches the observed |tau|. A bootstrap
  over prompts cannot see that few models agree by chance (three models ordered alike: one chance in six, and a
  [1, 1] CI); the permutation can (3 models: p = 1/3 at best; 5: 1/60);
- the verdict, from :data:`MIN_VERDICT` shared models only (fewer: "no verdict", tau shown): "agree" when the CI
  lies wholly above zero and p < :data:`ALPHA`, "disagree" wholly below zero and p < :data:`ALPHA`, otherwise "do not
  clearly agree".

A model with two submissions in one group (tagged variants of one prompt set) counts by its first submission id.
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass, replace
from itertools import combinations, permutations

import numpy as np
import pandas as pd
from cultureboard.evaluators.results.stats import goodness
from cultureboard.evaluators.submission.format import model_key

from .board import Board, Group
from .names import slice_name, slice_path
from .write import Column, Site

PAGE = "agreement.html"
#: Fewer shared models than this give no tau worth stating.
MIN_SHARED = 3
#: Fewer shared models than this give a tau but no verdict (5 models ordered alike: p = 1/60 by chance).
MIN_VERDICT = 5
#: A verdict needs the permutation p below this as well as the CI on one side of zero.
ALPHA = 0.05
#: Up to this many shared models the permutation p counts every pairing (8! = 40320); above, N_PERM random ones.
EXACT_UP_TO = 8
N_PERM = 10000
N_BOOT = 1000
SEED = 0
LEVEL = 0.95


@dataclass
class Ranking:
    """One group's models: ``means[m, p]`` is model m's mean score on prompt p (NaN where it has none), signed so
    that larger is better; ``countries[p]`` the country of prompt p (None where it has none)."""

    family: str
    label: str  # "<family>: <prompt set> (<headline metric>)"
    models: list[str]
    means: np.ndarray
    countries: np.ndarray

    def common(self, models: list[str]) -> Ranking:
        """Only ``models`` (in that order), on only the prompts that every one of them scored."""
        means = self.means[[self.models.index(m) for m in models]]
        keep = ~np.isnan(means).any(axis=0)
        return replace(self, models=list(models), means=means[:, keep], countries=self.countries[keep])

    def on(self, country: str) -> Ranking:
        """The same models on ``country``'s prompts only (a model without one there has no headline)."""
        keep = self.countries == country
        return replace(self, means=self.means[:, keep], countries=self.countries[keep])

    def headlines(self, weights: np.ndarray) -> np.ndarray:
        """(replicates, models): each model's weighted mean over its scored prompts; ``weights`` (replicates,
        prompts) counts how often each prompt is drawn (all ones: the plain mean)."""
        scored = ~np.isnan(self.means)
        total = weights @ np.where(scored, self.means, 0.0).T
        count = weights @ scored.T.astype(float)
        with np.errstate(invalid="ignore", divide="ignore"):
            return total / count


def kendall_tau(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Kendall's tau-b of each row of ``a`` with the same row of ``b`` (both (replicates, n), or 1-d for one pair):
    (concordant - discordant) / sqrt((pairs - ties in a) (pairs - ties in b)); NaN where either side is all tied
    or has a NaN."""
    a, b = np.atleast_2d(a), np.atleast_2d(b)
    i, j = np.triu_indices(a.shape[1], k=1)
    da, db = a[:, i], b[:, i]  # new arrays (fancy indexing): each pair's difference is formed in them
    da -= a[:, j]
    db -= b[:, j]
    untied = np.count_nonzero(da, axis=1) * np.count_nonzero(db, axis=1).astype(float)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.sign(da * db).sum(axis=1) / np.sqrt(untied)  # a NaN score's products are NaN, and so is its tau


def permutation_p(a: np.ndarray, b: np.ndarray, rng: np.random.Generator, n_perm: int = N_PERM) -> float:
    """Two-sided permutation p over models of "the orders of ``a`` and ``b`` are unrelated" (module docstring): the
    share of pairings of ``b``'s values with ``a``'s models, every one (the observed one among them) for up to
    :data:`EXACT_UP_TO` models, else the observed one and ``n_perm`` random ones, whose |tau| reaches the observed."""
    n = len(a)
    if n <= EXACT_UP_TO:
        orders = np.array(list(permutations(range(n))))
    else:
        orders = np.vstack([np.arange(n), np.argsort(rng.random((n_perm, n)), axis=1)])
    taus = np.abs(kendall_tau(np.broadcast_to(a, orders.shape).copy(), b[orders]))
    return float((taus >= abs(kendall_tau(a, b)[0]) - 1e-12).mean())


def agreement(x: Ranking, y: Ranking, *, n_boot: int = N_BOOT, seed: int = SEED, level: float = LEVEL) -> dict:
    """{shared, prompts_a, prompts_b, tau, ci_low, ci_high, p, verdict} of two rankings: tau over their shared models
    (those both score) on the prompts every one of them scored (``prompts_a``, ``prompts_b``: how many), its
    percentile bootstrap CI over each ranking's prompts, the permutation p over models and the verdict (module
    docstring)."""
    xh, yh = x.headlines(np.ones((1, x.means.shape[1])))[0], y.headlines(np.ones((1, y.means.shape[1])))[0]
    scored = {m for m, v in zip(x.models, xh) if np.isfinite(v)} & {m for m, v in zip(y.models, yh) if np.isfinite(v)}
    shared = sorted(scored)
    x, y = x.common(shared), y.common(shared)
    out = {"shared": len(shared), "prompts_a": x.means.shape[1], "prompts_b": y.means.shape[1], "tau": None,
           "ci_low": None, "ci_high": None, "p": None, "verdict": "too few shared models"}
    if len(shared) < MIN_SHARED:
        return out
    if not (x.means.shape[1] and y.means.shape[1]):
        return out | {"verdict": "no prompt that every shared model scored"}
    xh, yh = x.headlines(np.ones((1, x.means.shape[1])))[0], y.headlines(np.ones((1, y.means.shape[1])))[0]
    tau = float(kendall_tau(xh, yh)[0])
    rng = np.random.default_rng(seed)
    draws = [rng.multinomial(r.means.shape[1], np.full(r.means.shape[1], 1 / r.means.shape[1]), size=n_boot)
             for r in (x, y)]
    taus = kendall_tau(x.headlines(draws[0]), y.headlines(draws[1]))
    taus = taus[np.isfinite(taus)]
    if np.isnan(tau) or not len(taus):
        return out | {"verdict": "tau undefined: every shared model tied on one side"}
    low, high = (float(q) for q in np.quantile(taus, [(1 - level) / 2, (1 + level) / 2]))
    p = permutation_p(xh, yh, rng)
    found = verdict(low, high, p) if len(shared) >= MIN_VERDICT else f"no verdict: fewer than {MIN_VERDICT} shared models"
    return out | {"tau": tau, "ci_low": low, "ci_high": high, "p": p, "verdict": found}


def verdict(low: float, high: float, p: float) -> str:
    """What a CI of tau and its permutation p say: "agree" wholly above zero, "disagree" wholly below, either only
    with p < :data:`ALPHA`; else "do not clearly agree"."""
    if p < ALPHA and low > 0:
        return "agree"
    return "disagree" if p < ALPHA and high < 0 else "do not clearly agree"


def rankings(board: Board) -> list[Ranking]:
    """Every comparability group with a ranked headline, by label; groups of unregistered prompt sets are left out
    (no family to compare)."""
    out = []
    for prompt_set, groups in board.groups.items():
        family = board.family_for(prompt_set)
        for group in groups:
            metric = group.metrics[0]
            card = board.cards[metric]
            if family is None or card["direction"] == "none":
                continue
            label = f"{family.name}: {prompt_set}" + (f" ({group.id})" if group.several else "") + f", {card['title']}"
            found = _means(group, metric, card)
            if found is not None:
                out.append(Ranking(family.name, label, *found))
    return sorted(out, key=lambda r: r.label)


def _means(group: Group, metric: str, card: dict):
    """(models, means, countries) of :class:`Ranking` for ``group``'s headline, or None when no model has a scored
    prompt."""
    per_model: dict[str, pd.Series] = {}
    countries = pd.Series(dtype=object)
    for r in sorted(group.results, key=lambda r: r.sid):
        key = model_key(r.spec)
        if key in per_model or "unit_id" not in r.scores.columns:
            continue
        rows = r.scores.iloc[r.rows_of(metric)]
        keep = rows["value"].notna() & (rows["flag"].isna() if "flag" in rows.columns else True)
        rows = rows[keep]
        if not rows.empty:
            by_unit = rows.groupby("unit_id")  # a unit: the prompt of a per-image metric, else its ladder, chain or pool
            per_model[key] = by_unit["value"].mean()
            if "country" in rows.columns:
                countries = countries.combine_first(by_unit["country"].first())
    if not per_model:
        return None
    frame = pd.DataFrame(per_model).T.sort_index(axis=1)
    prompt_countries = countries.reindex(frame.columns).astype(object)
    values = frame.to_numpy(float)
    signed = goodness(values, card["direction"], card.get("target"))
    return list(frame.index), signed, prompt_countries.where(prompt_countries.notna(), None).to_numpy(object)


def pairs(found: list[Ranking], country: str | None = None) -> list[dict]:
    """One row per pair of rankings from two different families, on all prompts or on ``country``'s: {a, b, slice,
    **:func:`agreement`}. The bootstrap seed is drawn from the pair's labels and slice, so a row does not depend on
    the others."""
    out = []
    for x, y in combinations(found, 2):
        if x.family != y.family:
            seed = zlib.crc32(f"{x.label}|{y.label}|{country}".encode())
            on = (x, y) if country is None else (x.on(country), y.on(country))
            out.append({"a": x.label, "b": y.label, "slice": country, **agreement(*on, seed=SEED + seed)})
    return out


def countries(board: Board) -> list[str]:
    """The countries any ranked result has a country slice for."""
    return sorted({s for r in board.results.values() if not r.control for (_, t, s) in r.entries if t == "country"})


def agreement_page(site: Site, board: Board) -> None:
    """Write agreement.html: the overall table, then per country the pairs with at least :data:`MIN_SHARED` shared
    models (a tau; a verdict from :data:`MIN_VERDICT`)."""
    found = rankings(board)
    overall = pairs(found)
    by_country = [row for c in countries(board) for row in pairs(found, c) if row["shared"] >= MIN_SHARED]
    columns = [Column("a", "Benchmark A", "text", sticky=True), Column("b", "Benchmark B", "text", sticky=True),
               Column("tau", "Kendall's tau", "num", "+1: the same order, -1: reversed, 0: unrelated"),
               Column("ci_low", "95% CI low", "num"), Column("ci_high", "95% CI high", "num"),
               Column("p", "p (models permuted)", "num", "The share of pairings of one family's scores with the "
                      "other's models whose |tau| is as large: how often so strong an order arises by chance"),
               Column("shared", "Shared models", "num", "Models (organization + model name) both rank"),
               Column("prompts_a", "Prompts A", "num", "Prompts of A that every shared model scored (compared)"),
               Column("prompts_b", "Prompts B", "num", "Prompts of B that every shared model scored (compared)"),
               Column("verdict", "Verdict", "text", f"From {MIN_VERDICT} shared models. agree: the CI lies above "
                      f"zero and p < {ALPHA}; disagree: below zero and p < {ALPHA}; do not clearly agree: "
                      "otherwise")]
    slice_column = [Column("country", "Country", "link", sticky=True)]
    rows = [{**r, "country": {"text": slice_name("country", r["slice"]), "href": slice_path("country", r["slice"])}}
            for r in by_country]
    site.page(PAGE, "agreement.html", "Do the benchmarks agree?", overall=site.table(PAGE, "overall", columns, overall),
              countries=site.table(PAGE, "countries", slice_column + [replace(c, sticky=False) for c in columns], rows),
              findings=[r for r in overall if r["verdict"] in ("disagree", "do not clearly agree")],
              compared=any(r["tau"] is not None for r in overall),
              judged=any(r["shared"] >= MIN_VERDICT and r["tau"] is not None for r in overall),
              min_shared=MIN_SHARED, min_verdict=MIN_VERDICT, alpha=ALPHA, n_boot=N_BOOT)
