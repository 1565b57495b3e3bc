"""The culture metric's chain scores: where a chain of edits ends, and how far it moved from its base.

ECB's multi-loop study asks what five edits do to a base image (section 3.3.1; Table 6 gives each cell's human
quality at step 5 and its change from the base). Its per-step culture scores (``ecb.culture.*`` rows, one per
image, written by ``culture.py``) are therefore summed up per chain here, from the accuracy rows:

* ``ecb.culture.accuracy_last`` -- accuracy at the chain's last step, :math:`a_{last}` (the headline);
* ``ecb.culture.accuracy_change`` -- :math:`a_{last} - a_0`, the change from the base (descriptive).

One row per chain (unit ``chain``, bootstrapped over chains), with both accuracies in its detail. A chain whose
accuracy rows are flagged (no questions, no dataset config) gets the same flag on both rows.
"""

from __future__ import annotations

from collections import defaultdict

from ...engine.context import score_row
from .culture import CHAIN_SLICES

SOURCE_METRIC = "ecb.culture.accuracy"
FINAL_METRICS = ("ecb.culture.accuracy_last", "ecb.culture.accuracy_change")


def last_and_change(by_step: dict[int, float]) -> tuple[float, float]:
    """(a_last, a_last - a_0) of one chain's accuracy per step {step: accuracy}; step 0 (the base) is required."""
    if 0 not in by_step:
        raise ValueError(f"a chain's accuracies need its base (step 0), got steps {sorted(by_step)}")
    last = by_step[max(by_step)]
    return last, last - by_step[0]


def score_final(culture_rows: list[dict]) -> list[dict]:
    """The chain rows of :data:`FINAL_METRICS` from the ``ecb.culture.accuracy`` rows among ``culture_rows``."""
    steps: dict[tuple[str, int], dict[int, float]] = defaultdict(dict)
    slices: dict[str, dict] = {}
    rows = []
    for row in culture_rows:
        if row["metric"] != SOURCE_METRIC:
            continue
        chain_slices = {k: row["slices"].get(k) for k in CHAIN_SLICES}
        if row["flag"] is not None:
            rows += [score_row(m, None, unit_id=row["unit_id"], slices=chain_slices, detail={"images": 0},
                               flag=row["flag"]) for m in FINAL_METRICS]
            continue
        steps[(row["unit_id"], row["sample_idx"])][row["slices"]["edit_step"]] = row["value"]
        slices[row["unit_id"]] = chain_slices
    for (chain, sample), by_step in sorted(steps.items()):
        last, change = last_and_change(by_step)
        detail = {"images": len(by_step), "sample_idx": sample, "last_step": max(by_step),
                  "accuracy_base": by_step[0], "accuracy_last": last}
        rows += [score_row(metric, value, unit_id=chain, slices=slices[chain], detail=detail)
                 for metric, value in zip(FINAL_METRICS, (last, change))]
    return rows
