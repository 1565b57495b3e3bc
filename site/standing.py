"""Where a newly scored submission stands: for each prompt set its model was scored on, its headline beside the
top three comparable models' (values and 95% CIs), and whether it differs from each (the scores comment on its
pull request).

Comparable means what the leaderboard ranks together (:meth:`~.load.Result.comparability`: the same prompt set,
dataset revision, scorer checkpoints, metric versions and options); controls and the model's own other
submissions are left out. The top three are the comparable models with the best headline value in the card's
direction (:func:`~cultureboard.evaluators.results.stats.goodness`). The difference with each is paired over the
units both scored (prompts, or a family's pools, chains, ladders): per unit, the mean of its rows' values, as
goodness (:math:`g = v`, :math:`-v` where lower is better, :math:`-|v - t|` for a target t); then
:func:`~cultureboard.evaluators.results.stats.paired_test` of :math:`d_u = g_{new,u} - g_{top,u}`: the mean
difference with its 95% bootstrap CI over units and the sign-flip p-value; for a bounded and discrete headline
(its card's ``bounded`` [a, b]) the CI is the Wilson interval of :math:`d` on [-W, W], W = b - a (for a target t:
the largest distance max(|a - t|, |b - t|)), as the summary's. It *differs* when the CI excludes 0
("better" above, "worse" below); else "no clear difference". Units that all differ by one amount show no spread:
no CI and "no spread to test" rather than a point interval read as certainty. A descriptive headline (direction ``none``) is
shown with its CI, never compared. The rank range is the leaderboard's rule (CIs that overlap are ties:
:func:`~cultureboard.evaluators.results.stats.rank_ties`).
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd
from cultureboard.evaluators.engine.registry import family_of
from cultureboard.evaluators.results.stats import goodness, oriented, paired_test, rank_ties
from cultureboard.evaluators.submission.format import model_key

from cultureboard.errors import CultureboardError

from .load import Result, load_results

TOP = 3


def standing(results: str | Path, submissions: str | Path, sid: str, *, top: int = TOP, n_boot: int = 1000,
             seed: int = 0) -> dict:
    """{submission, model, prompt_sets: [...]} for ``sid`` (a result in ``results`` whose submission folder is in
    ``submissions``): one entry per prompt set its model was scored on (see the module docstring)."""
    loaded, _ = load_results(Path(results), Path(submissions))
    by_sid = {r.sid: r for r in loaded}
    if sid not in by_sid:
        raise CultureboardError(Path(results) / sid, "is not a result that can be shown",
                                "merge the shards of the submission first (cultureboard merge-shards)")
    key = model_key(by_sid[sid].spec)
    mine = sorted((r for r in loaded if model_key(r.spec) == key and not r.control), key=lambda r: (r.sid != sid, r.sid))
    return {"submission": sid, "model": key,
            "prompt_sets": [_one(r, loaded, key, top, n_boot, seed) for r in mine]}


def _headline(r: Result) -> str:
    try:
        family, _ = family_of(r.prompt_set)
        return family.primary(r.prompt_set)
    except (CultureboardError, StopIteration):
        return sorted(m for m, _, _ in r.entries)[0]


def _one(r: Result, loaded: list[Result], key: str, top: int, n_boot: int, seed: int) -> dict:
    metric = _headline(r)
    card = next((c for c in r.summary["metrics_info"] if c["name"] == metric), {"direction": "none"})
    direction, target = card["direction"], card.get("target")
    others = [o for o in loaded if o.comparability() == r.comparability() and not o.control and o.superseded_by is None
              and model_key(o.spec) != key and _entry(o, metric) is not None]  # superseded rows are never ranked
    mine = _entry(r, metric)
    out = {"prompt_set": r.prompt_set, "submission": r.sid, "metric": metric, "direction": direction,
           "value": mine, "compared": len(others), "top": [], "rank": None}
    if direction == "none" or mine is None:
        return out
    ordered = sorted(others, key=lambda o: -goodness([_entry(o, metric)["value"]], direction, target)[0])
    field = [r, *others]
    if all(_entry(x, metric)["ci_low"] is not None for x in field):
        values = [_entry(x, metric) for x in field]
        rr = rank_ties(*oriented([v["value"] for v in values], [v["ci_low"] for v in values],
                                 [v["ci_high"] for v in values], direction, target))
        out["rank"] = {"best": int(rr.best[0]), "worst": int(rr.worst[0]), "of": len(field)}
    for o in ordered[:top]:
        out["top"].append({"submission": o.sid, "display": o.display, "value": _entry(o, metric),
                           "difference": _difference(r, o, metric, card, n_boot, seed)})
    return out


def _entry(r: Result, metric: str) -> dict | None:
    e = r.entries.get((metric, "overall", "all"))
    if e is None or e.get("value") is None:
        return None
    return {k: e.get(k) for k in ("value", "ci_low", "ci_high", "n_prompts", "n_images")}


def _unit_means(r: Result, metric: str) -> pd.Series:
    rows = r.rows_of(metric)
    frame = pd.DataFrame({"unit": r.column("unit_id")[rows], "value": r.column("value")[rows]}).dropna()
    return frame.groupby("unit")["value"].mean()


def _difference_bounds(card: dict) -> tuple[float, float] | None:
    """[-W, W]: where a paired difference of goodness lies for a bounded card (module docstring); None otherwise."""
    if not card.get("bounded"):
        return None
    low, high = card["bounded"]
    width = high - low if card["direction"] != "target" else max(abs(low - card["target"]), abs(high - card["target"]))
    return -float(width), float(width)


def _difference(new: Result, other: Result, metric: str, card: dict, n_boot: int, seed: int) -> dict:
    """The paired difference new - other in goodness over the units both scored (the module docstring)."""
    direction, target = card["direction"], card.get("target")
    a, b = _unit_means(new, metric), _unit_means(other, metric)
    shared = a.index.intersection(b.index)
    if len(shared) < 2:
        return {"value": None, "ci_low": None, "ci_high": None, "p": None, "units": int(len(shared)),
                "verdict": "too few shared units to compare"}
    d = goodness(a[shared].to_numpy(), direction, target) - goodness(b[shared].to_numpy(), direction, target)
    ci, p = paired_test([[x] for x in d], n_boot=n_boot, seed=seed, bounds=_difference_bounds(card))
    if ci.low == ci.high:  # every unit differs by one amount: no spread to estimate, which is not certainty
        return {"value": float(ci.value), "ci_low": None, "ci_high": None, "p": None if p is None else float(p),
                "units": int(len(shared)), "verdict": "no spread to test"}
    verdict = "better" if ci.low > 0 else "worse" if ci.high < 0 else "no clear difference"
    return {"value": float(ci.value), "ci_low": float(ci.low), "ci_high": float(ci.high),
            "p": None if p is None else float(p), "units": int(len(shared)), "verdict": verdict}

