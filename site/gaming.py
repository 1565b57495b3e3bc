"""Gaming controls on the board: where each control lands among the real models on a metric, and whether a cheat
tops them (the metric is then badged "gameable").

A control submission (``control:`` in submission.yaml) is never ranked. :func:`standings` places its value among
the values of the ranked submissions of its comparability group, compared by the card's direction through
:func:`~cultureboard.evaluators.results.stats.goodness` (larger is better):

- ``higher``: g(v) = v; ``lower``: g(v) = -v; ``target``: g(v) = -|v - target| (closer to the target is better);
  ``none``: descriptive, never placed and never badged.
- ``beats``: how many models the control is strictly better than; ``rank``: the rank it would take among the
  models and itself, 1 + the models strictly better than it (a tie takes the better rank, as in a ranking by value),
  said only for a metric whose validity tier gets rank numbers (``ranked``; otherwise only ``beats`` is shown).
- A **cheat** (:data:`CHEATS`: a control that does not do the task: the prompt's words as a picture, a CuRe ladder
  answered with its category's images, an ECB editor that returns its input, the artifact's name written in large type) that is strictly better than every
  model *tops* the metric: the metric rewards the cheat, so it is gameable that way. Point values are compared: a
  cheat whose value is above every model's shows the metric fails to penalise it, whatever the intervals say about
  the models' order. The reference photographs are the ceiling, not a cheat: topping the models is expected of them.
- A metric a cheat tops on a board is **not ranked** on that board (:func:`cheats_on_top`,
  :meth:`~.board.Board.unranked`), unless its card states a gate that removes the cheat
  (:mod:`cultureboard.evaluators.results.gates`: the cheat then takes no part, and the models the gate keeps are
  ranked). The "gameable" badge also needs the margin to matter: the cheat's value better
  than the best model's by at least the card's smallest meaningful difference d (``margin``: g(cheat) - max g(model)).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from cultureboard.evaluators.results.stats import goodness
from cultureboard.evaluators.results.tiers import ranked_tier

from .cells import at_precision
from .names import MIN_PROMPTS

#: Control kinds that do not do the task (see the module docstring); ``reference-photos`` is not one.
CHEATS = ("text-only", "category-images", "unedited", "written-prompt")


@dataclass(frozen=True)
class Standing:
    """Where one control lands among the models on one metric."""

    control: str  # the control's submission id
    kind: str  # its control kind
    value: float
    beats: int  # models it is strictly better than
    models: int  # models with a value
    rank: int  # the rank it would take among the models and itself
    margin: float = 0.0  # g(control) - the best model's g (positive: better than every model)
    smallest: float = 0.0  # the card's smallest meaningful difference
    low: float | None = None  # the control's interval, where its entry has one
    high: float | None = None
    ranked: bool = True  # whether the card's tier gets rank numbers (else no "would rank" is said)

    @property
    def tops(self) -> bool:
        """Strictly better than every model."""
        return self.beats == self.models

    @property
    def cheat_on_top(self) -> bool:
        """A cheat that tops the models: the metric is not ranked on this board."""
        return self.tops and self.kind in CHEATS

    @property
    def gameable(self) -> bool:
        """A cheat that tops the models by at least the smallest meaningful difference: gameable this way."""
        return self.cheat_on_top and self.margin >= self.smallest

    @property
    def text(self) -> str:
        """Where the control lands, its value printed with its interval at the interval's precision
        (:func:`.cells.at_precision`: 0.3401 [0.3398, 0.3404], never 0.340 [0.340, 0.340]); "would rank" only
        where the card's tier gets rank numbers."""
        score = (f"{self.value:.3f}" if self.low is None else
                 "{} [{}, {}]".format(*at_precision(self.value, self.low, self.high)))
        rank = f", would rank {self.rank} of {self.models + 1}" if self.ranked else ""
        return f"{self.control} ({self.kind}) scores {score}: beats {self.beats} of {self.models} model(s){rank}"


def standings(card: dict, models: list[float | None], controls: list[tuple[str, str, float | None]]) -> list[Standing]:
    """Where each control ``(submission id, kind, value)`` lands among the ``models``' values on the metric of
    ``card`` (its ``direction`` and ``target``); values that are None are left out. Nothing for a descriptive
    metric (direction ``none``) or when no model has a value."""
    if card["direction"] == "none":
        return []
    scored = list(goodness([v for v in models if v is not None], card["direction"], card.get("target")))
    if not scored:
        return []
    out = []
    for sid, kind, value in controls:
        if value is None:
            continue
        g = float(goodness([value], card["direction"], card.get("target"))[0])
        out.append(Standing(sid, kind, value, beats=sum(g > m for m in scored), models=len(scored),
                            rank=1 + sum(m > g for m in scored), margin=g - max(scored),
                            smallest=card.get("smallest_difference") or 0.0, ranked=ranked_tier(card)))
    return out


def group_standings(board, group, metric: str, slice_type: str = "overall", slice_: str = "all",
                    gated: bool = False) -> list[Standing]:
    """:func:`standings` of the group's controls on ``metric`` in a slice (default: over all prompts); an entry from
    fewer than :data:`~.names.MIN_PROMPTS` prompts is left out, as the leaderboard ranks none of those. ``gated``:
    the entries that the card's gate lets take part in the ranking (:meth:`.board.Board.gated`), for models and
    controls alike; else every entry as scored (what the "gameable" badge and a control's mark report)."""
    entries = board.gated(group, metric, slice_type, slice_) if gated else {
        r.sid: r.entries.get((metric, slice_type, slice_)) for r in group.results + group.controls}

    def value(r):
        entry = entries[r.sid]
        return entry["value"] if entry and entry["n_prompts"] >= MIN_PROMPTS else None

    found = standings(board.cards[metric], [value(r) for r in group.results],
                      [(r.sid, r.control, value(r)) for r in group.controls])
    return [replace(s, low=entries[s.control].get("ci_low"), high=entries[s.control].get("ci_high")) for s in found]


def cheats_on_top(board, group, metric: str, slice_type: str = "overall", slice_: str = "all") -> list[Standing]:
    """The cheats that top every model on ``metric`` in the slice, among the entries its card's gate lets take part
    (the board then ranks nobody on it; a gate that removes the cheat leaves it nothing to top)."""
    return [s for s in group_standings(board, group, metric, slice_type, slice_, gated=True) if s.cheat_on_top]


def badge(board, group, metric: str) -> dict | None:
    """The "gameable" badge of ``metric`` on the group's board: a cheat tops every model over all prompts by at
    least the card's smallest meaningful difference."""
    found = [s for s in group_standings(board, group, metric) if s.gameable]
    if not found:
        return None
    return {"label": "gameable", "title": "Gameable: " + "; ".join(s.text for s in found) + ". A control that does "
            "not do the task scores better than every model, so this metric does not penalise that cheat."}


def marks(board, group, sid: str, metric: str, slice_type: str, slice_: str) -> list[dict]:
    """A control row's mark on a leaderboard: where it lands among the models on ``metric`` in the slice."""
    return [{"label": (f"would rank {s.rank} of {s.models + 1}" if s.ranked else f"beats {s.beats} of {s.models}")
             + (", gameable" if s.gameable else ""), "title": s.text}
            for s in group_standings(board, group, metric, slice_type, slice_) if s.control == sid]
