"""What stands beside every board and its figures: the metric's chance level and each control's value in the
board's slice (issue 33: a value means little without them; issue 39: on figures and phones too).

* The chance level is the card's ``chance`` (its words: "1 / number of countries of the prompt set") and, where the
  evaluator recorded it as a number for the prompt set (``ctx.note(metric, "chance", value)`` in the results'
  provenance ``notes``), that number: :func:`chance_value` takes it where every result of the group that noted one
  noted the same (a number the results disagree on is not drawn).
* Each control of the group (reference photographs, text-only, the cheats) with its value [95% CI] in the slice,
  printed at the precision of its interval (:func:`.cells.at_precision`), and where it would rank among the models
  (:func:`.gaming.group_standings`).
"""

from __future__ import annotations

import math

from . import gaming
from .cells import at_precision
from .names import num


def chance_value(group, metric: str) -> float | None:
    """The chance level of ``metric`` that the group's results recorded as a number (None where none did, or two
    recorded different numbers)."""
    found = set()
    for r in group.everyone:
        value = r.summary["provenance"].get("notes", {}).get(metric, {}).get("chance")
        if isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value):
            found.add(float(value))
    return found.pop() if len(found) == 1 else None


def value_text(entry: dict | None) -> str | None:
    """A summary entry as "value [low, high]" at its interval's precision (no CI: the value alone)."""
    if not entry or entry.get("value") is None:
        return None
    if entry.get("ci_low") is None or entry.get("ci_high") is None:
        return num(entry["value"])
    return "{} [{}, {}]".format(*at_precision(entry["value"], entry["ci_low"], entry["ci_high"]))


def context(board, group, metric: str, slice_type: str = "overall", slice_: str = "all") -> dict:
    """{chance: the card's words or None, chance_value: the number or None, controls: [{label, kind, value, rank}]}
    of ``metric`` on the group's board in the slice; ``rank``: "would rank k of n" where the control is placed among
    the models (:func:`.gaming.group_standings`) on a metric whose tier gets ranks, "beats k of n models" on one
    whose tier does not, else ""."""
    placed = {s.control: s for s in gaming.group_standings(board, group, metric, slice_type, slice_)}
    controls = []
    for r in sorted(group.controls, key=lambda r: r.sid):
        shown = value_text(r.entries.get((metric, slice_type, slice_)))
        if shown is None:
            continue
        s = placed.get(r.sid)
        controls.append({"label": r.display, "kind": r.control, "value": shown,
                         "rank": "" if s is None else f"would rank {s.rank} of {s.models + 1}" if s.ranked
                         else f"beats {s.beats} of {s.models} models"})
    card = board.cards[metric]
    return {"title": card["title"], "chance": card.get("chance"), "chance_value": chance_value(group, metric),
            "controls": controls}
