"""Card-stated gates: what a card says removes a known cheat from its metric's ranking.

A metric that a cheat control tops on a board is not ranked there (:mod:`cultureboard.site.gaming`), unless its
card's evidence record states a ``gate`` (in ``data/reported/evidence.yaml``) that removes the cheat. A gate
decides which entries (or which units of an entry) take part in the ranking; it is applied to every member of a
board alike, models and controls, and is defined against the control it names (``control``: the cheat's kind),
so it is tested on that control. Two kinds:

* ``joint`` (``with``: metrics of the same prompt set): an entry takes part only jointly with one of the ``with``
  scores (CuRe: a name-knowledge score, phi_GT or phi_ITA, beside Delta phi_PS). Let f_m be the best value the
  board's ``control`` members score on m and d_m m's smallest meaningful difference; the entry takes part where,
  for some m in ``with``, the pessimistic end of its own interval on m clears the control's by d_m:
  g(lower end) - g(f_m) >= d_m, g the goodness of m's direction (:func:`~.stats.goodness`; the lower end is
  the oriented one, :func:`~.stats.oriented`). An entry without an interval on m never clears it, and the
  control never clears it on its own value (its lower end is at most its value).
* ``units`` (``by``: a metric scored on the same units, one value per image of a unit, sliced by ``edit_step``):
  only the rows of units whose ``by`` value at their last image (largest ``edit_step``, per unit and sample)
  is strictly above the largest such value among the board's ``control`` members take part (ECB: chains whose
  edits changed the image, a DreamSim distance from the base above what the unedited control shows, which is
  0). The entry is recomputed over those rows exactly as the summary computes one (:func:`regated_entries`).

Without the gate's control on the board the gate cannot be tested, and the metric is not ranked there.
"""

from __future__ import annotations

import json
from collections.abc import Mapping

import numpy as np
import pandas as pd

from .aggregate import summarize
from .stats import goodness, oriented

KINDS = ("joint", "units")
_KEYS = {"joint": {"kind", "with", "control", "reason"}, "units": {"kind", "by", "control", "reason"}}


def gate_problem(gate) -> str | None:
    """What is wrong with a card's ``gate`` record (module docstring), or None."""
    if not isinstance(gate, dict) or gate.get("kind") not in KINDS:
        return f"gate must be a mapping whose kind is one of {', '.join(KINDS)}"
    if set(gate) != _KEYS[gate["kind"]]:
        return f"a {gate['kind']} gate has exactly the keys {', '.join(sorted(_KEYS[gate['kind']]))}"
    if gate["kind"] == "joint" and not (isinstance(gate["with"], list) and gate["with"]
                                        and all(isinstance(m, str) for m in gate["with"])):
        return "a joint gate's with is a non-empty list of metric names"
    if gate["kind"] == "units" and not isinstance(gate["by"], str):
        return "a units gate's by is a metric name"
    if not isinstance(gate["control"], str) or not str(gate["reason"]).strip():
        return "a gate names its control (a control kind) and its reason"
    return None


def joint_floor(control_values, direction: str, target: float | None = None) -> float | None:
    """The goodness g(f) of the best of the control members' values on a ``with`` metric (None where none has one)."""
    values = [v for v in control_values if v is not None]
    return float(goodness(values, direction, target).max()) if values else None


def clears_joint(entry: Mapping | None, floor: float | None, direction: str, target: float | None = None,
                 smallest: float = 0.0) -> bool:
    """Whether ``entry`` (a summary entry of a ``with`` metric) clears the control's goodness ``floor`` by
    ``smallest``: g(its oriented lower end) - floor >= smallest (module docstring). False without an interval."""
    if floor is None or not entry or entry.get("ci_low") is None:
        return False
    _, low, _ = oriented([entry["value"]], [entry["ci_low"]], [entry["ci_high"]], direction, target)
    return bool(low[0] - floor >= smallest)


def last_values(rows: pd.DataFrame) -> dict[tuple[str, int], float]:
    """(unit id, sample index) -> the value of the unit's last image (largest ``edit_step``) among ``rows`` of a
    ``by`` metric; rows without a value are left out."""
    rows = rows[rows["value"].notna() & rows["sample_idx"].notna()]
    if not len(rows):
        return {}
    rows = rows.assign(_step=pd.to_numeric(rows["edit_step"]), _sample=rows["sample_idx"].astype(int))
    last = rows.sort_values(["unit_id", "_sample", "_step"], kind="stable").groupby(["unit_id", "_sample"]).tail(1)
    return {(u, int(s)): float(v) for u, s, v in zip(last["unit_id"], last["_sample"], last["value"])}


def units_floor(control_last: list[dict[tuple[str, int], float]]) -> float | None:
    """The largest last-image value over the control members' units (None where they have none)."""
    values = [v for last in control_last for v in last.values()]
    return max(values) if values else None


def admitted(last: Mapping[tuple[str, int], float], floor: float) -> set[tuple[str, int]]:
    """The (unit, sample) keys whose last-image value is strictly above ``floor``."""
    return {key for key, value in last.items() if value > floor}


def row_sample(rows: pd.DataFrame) -> np.ndarray:
    """Each row's sample index: its ``sample_idx``, or for a unit row without one the ``sample_idx`` its detail
    records (-1 where neither says)."""
    def one(sample, detail):
        if not pd.isna(sample):
            return int(sample)
        found = json.loads(detail).get("sample_idx") if isinstance(detail, str) and detail else None
        return -1 if found is None else int(found)

    return np.array([one(s, d) for s, d in zip(rows["sample_idx"], rows["detail"])], dtype=np.int64)


def regated_entries(rows: pd.DataFrame, card: Mapping, keep: set[tuple[str, int]], slice_type: str,
                    settings: Mapping) -> dict[str, dict]:
    """slice -> the summary entry of ``card``'s metric over its ``rows`` whose (unit, sample) is in ``keep``,
    computed by :func:`~.aggregate.summarize` with the card's unit, clusters, bounds and the result's bootstrap
    ``settings`` (seed, n_boot): the entry the evaluator would have written had only those rows been scored
    (coverage counts the kept units only). Empty where no row is kept."""
    if card.get("cluster"):
        raise ValueError(f"{card['name']}: a units gate recomputes unclustered entries only")
    samples = row_sample(rows)
    mask = np.array([(u, s) in keep for u, s in zip(rows["unit_id"], samples)], dtype=bool)
    kept = rows[mask]
    if not len(kept):
        return {}
    unit = card["unit"]
    fields = [] if slice_type == "overall" else [slice_type]
    expected = {unit: {u: {f: g[f].iloc[0] for f in fields} for u, g in kept.groupby("unit_id", sort=True)}}
    bounded = {card["name"]: tuple(card["bounded"])} if card.get("bounded") else None
    entries = summarize(kept, {card["name"]: unit}, expected, slice_types=(slice_type,),
                        seed=int(settings.get("seed", 0)), n_boot=int(settings.get("n_boot", 1000)), bounded=bounded)
    return {e["slice"]: e for e in entries}
