"""The answer a country, category or topic page opens with: which model is best for it, per family and overall.

A country or category is one slice; a topic (:mod:`.topics`) is the category slices of every family that it gathers.
Per family: each comparability group of each of its prompt sets ranks its submissions on the prompt set's
headline over each slice's prompts only (:meth:`Board.ranks`: rank ranges where 95% CIs overlap, at least
:data:`~.names.MIN_PROMPTS` prompts, a ``target`` metric by its distance to the target; a descriptive metric
(direction "none") or one that is only a diagnostic here ranks nobody; controls are never ranked). A submission
with too few prompts is listed as not ranked, with its count ("2 prompts: not ranked").

Overall, only where two or more families rank models on the slices: the families' scales are incomparable,
so values are never averaged. A model's rank in a family is the median of its ranks there (a family with two
prompt sets ranks it twice); models are ordered by the median of their per-family ranks (ascending; more
families first on a tie, then by name), and ``agree`` counts the families whose rank range (best to worst)
contains that median.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from statistics import median

from cultureboard.evaluators.submission.format import model_key

from .board import Board
from .names import MIN_PROMPTS, display_name, model_page


@dataclass
class Ranking:
    """One group's ranking of one slice on its prompt set's headline."""

    family: str  # the family's name (a prompt set's own for an unregistered one)
    title: str  # the family's title
    prompt_set: str
    slice: str  # the slice ranked on ("NG", "cuisine")
    group: str  # the comparability group's name where the prompt set has several; "" otherwise
    metric: str  # the headline's title
    rows: list[dict]  # ranked: {key, model, href, standin, value, ci_low, ci_high, rank, best, worst}, by rank then name
    unranked: list[dict] = field(default_factory=list)  # {model, href, standin, why}
    why: str = ""  # why nobody is ranked (a descriptive or diagnostic headline); "" otherwise


@dataclass
class Answer:
    rankings: list[Ranking]
    overall: list[dict]  # {key, model, href, standin, median, ranks: {family: rank}, families, agree}; [] with < 2 families


def answer(board: Board, country: str) -> Answer:
    """Per group the ranked models on ``country`` by the headline, and the overall order by median family rank."""
    return slices_answer(board, [("country", country)])


def slices_answer(board: Board, slices: list[tuple[str, str]]) -> Answer:
    """Per group and per (slice type, slice) of ``slices`` the ranked models by the headline, and the overall order
    by median family rank (a family that ranks a model on two slices ranks it twice)."""
    rankings = []
    for prompt_set, groups in board.groups.items():
        family = board.family_for(prompt_set)
        for g in groups:
            for slice_type, slice_ in slices:
                ranking = _ranking(board, g, (family.name, family.title) if family else (prompt_set, prompt_set),
                                   slice_type, slice_)
                if ranking is not None:
                    rankings.append(ranking)
    return Answer(rankings, _overall(rankings))


def _ranking(board: Board, group, family: tuple[str, str], slice_type: str, slice_: str) -> Ranking | None:
    metric = group.metrics[0]
    key = (metric, slice_type, slice_)
    present = [r for r in group.results if (e := r.entries.get(key)) and e["value"] is not None]
    if not present:
        return None
    card = board.cards[metric]
    why = board.unranked(group, metric, slice_type, slice_)  # descriptive, an unranked tier, diagnostic, a cheat on top
    ranks = board.ranks(group, metric, slice_type, slice_)
    rows, unranked = [], []
    for r in present:
        e, mkey = r.entries[key], model_key(r.spec)
        who = {"key": mkey, "model": display_name({**r.spec, "tag": None}, mkey), "href": model_page(mkey),
               "standin": r.standin}
        if r.sid in ranks:
            rows.append(who | {"value": e["value"], "ci_low": e["ci_low"], "ci_high": e["ci_high"]} | ranks[r.sid])
        elif not why:
            n = e["n_prompts"]
            unranked.append(who | {"why": f"{n} prompt{'s' * (n != 1)}: not ranked" if n < MIN_PROMPTS
                                   else "no confidence interval: not ranked"})
    rows.sort(key=lambda row: (row["rank"], row["model"]))
    return Ranking(*family, group.prompt_set, slice_, group.name if group.several else "", card["title"], rows,
                   sorted(unranked, key=lambda row: row["model"]), why)


def _overall(rankings: list[Ranking]) -> list[dict]:
    per: dict[str, dict] = {}  # model key -> {family: [(rank, best, worst)]}
    who: dict[str, dict] = {}
    for ranking in rankings:
        for row in ranking.rows:
            per.setdefault(row["key"], {}).setdefault(ranking.family, []).append(row)
            standin = row["standin"] or who.get(row["key"], {}).get("standin", False)
            who[row["key"]] = {"key": row["key"], "model": row["model"], "href": row["href"], "standin": standin}
    if len({f for fams in per.values() for f in fams}) < 2:
        return []
    out = []
    for key, fams in per.items():
        ranks = {f: median(row["rank"] for row in rows) for f, rows in fams.items()}
        mid = median(ranks.values())
        agree = sum(any(row["best"] <= mid <= row["worst"] for row in rows) for rows in fams.values())
        out.append(who[key] | {"median": mid, "ranks": ranks, "families": len(fams), "agree": agree})
    return sorted(out, key=lambda row: (row["median"], -row["families"], row["model"]))
