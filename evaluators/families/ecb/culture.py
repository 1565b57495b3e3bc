"""ECB's culture-aware metric, evaluator side: the judge answers each chain image's yes/no questions.

The questions and the passages retrieved for them come from the dataset (``ecb-questions`` and
``ecb-knowledge``, written by ``builder/knowledge.py``): one set per multi-loop chain, asked of every step's
image, so the steps of a chain are judged on the same questions. Each question is put to the judge VLM with
ECB's wording::

    Context:
    [Doc 1] <passage>
    ...
    Question: <question>
    Answer strictly with yes or no.

with the first ``context_chunks`` retrieved passages (ECB passes 8). The answer is read from P(yes) =
P("Yes") + P("yes") and P(no) = P("No") + P("no") (the prompt asks in lower case; the two spellings are
different first tokens, so their probabilities add), all four from the next-token distribution of one forward pass
per question (:func:`cultureboard.evaluators.engine.judge.yes_no`), by :func:`.core.classify_answers`, and each
image gets
accuracy, precision, recall and F1 (:func:`.core.qa_scores`) and the share of its answers that were ambiguous
(``ecb.culture.ambiguous``), per step of its chain like the other chain metrics. The rows of
``ecb.culture.accuracy`` record each question's [answer, P(yes), P(no)] in order; those of ``ecb.culture.f1``
the chain's best and worst steps by F1 (ties kept), for comparison with human choices
(``results/studies/ecb.py``).

ECB's released picks mostly equal the positional baseline (best = the base, worst = the last step), so each
chain also gets a row of ``ecb.positional_match``: the chance that its F1 picks are exactly that
baseline, ties broken at random: [0 in best] / #best x [last in worst] / #worst (its summary mean is the share
of chains; the mean F1 at step 0 and at the last step are ``ecb.culture.f1``'s ``edit_step`` slices).

Notes: ``question_sources`` (question sets per source), ``template_share`` (the share of chains asked the
builder's fallback template questions, as every image of ECB's released run was) and ``constant_answers``
(the mean scores of a judge that always answers yes, or always no, on the prompt set's questions: the chance
levels of this dataset).
"""

from __future__ import annotations

from collections import defaultdict

from cultureboard.builder.knowledge import KNOWLEDGE_CONFIG, QUESTIONS_CONFIG, questions_by_prompt

from cultureboard.errors import CultureboardError

from ...engine.context import Context, score_row
from ...results.aggregate import unit_slices
from .chains import chain_id, chains, is_attribute, step_row
from .core import classify_answers, extreme_steps, pick_agreement, qa_scores

JUDGE = "qwen2.5-vl-7b"
QA_SCORES = ("accuracy", "precision", "recall", "f1")
CULTURE_METRICS = (*(f"ecb.culture.{name}" for name in QA_SCORES), "ecb.culture.ambiguous",
                   "ecb.positional_match")
CHAIN_SLICES = ("country", "continent", "region_group", "category", "subcategory", "era")


def judge_prompt(passages: list[str], question: str) -> str:
    """ECB's VQA prompt: the retrieved context, the question, "Answer strictly with yes or no."."""
    context = "\n".join(f"[Doc {k}] {text}" for k, text in enumerate(passages, 1))
    return f"Context:\n{context}\nQuestion: {question}\nAnswer strictly with yes or no."


def score_culture(ctx: Context) -> list[dict]:
    groups = {key: members for key, members in chains(ctx.images).items() if not is_attribute(members[0].prompt)}
    if not groups:
        return []
    try:
        asked_rows = ctx.config(QUESTIONS_CONFIG)
    except CultureboardError:  # a dataset built without --knowledge: every chain is flagged, none scored
        return _flag_all(ctx, groups, f"the dataset has no {QUESTIONS_CONFIG} config (built without --knowledge)")
    questions, passages = questions_by_prompt(asked_rows, ctx.config(KNOWLEDGE_CONFIG))
    sources = _sources(questions, ctx.prompts)
    ctx.note("ecb.culture.accuracy", "question_sources", sources)
    ctx.note("ecb.culture.accuracy", "template_share", {
        "share": sources.get("template", 0) / max(1, sum(sources.values())),
        "why": "template questions are 4 generic questions (2 expect yes, 2 no); every image of ECB's released run "
               "was scored from them, and its F1 rose over the edit steps while human quality fell"})
    ctx.note("ecb.culture.accuracy", "constant_answers", _constant_answers(questions, ctx.prompts))
    items, owners = [], []
    for key, members in groups.items():
        asked = questions.get(key[0], [])
        if not asked:
            continue
        context = [passages[c] for c in asked[0]["retrieved"][:ctx.options.context_chunks]]
        for step, im in enumerate(members):
            for q in asked:
                items.append((im, judge_prompt(context, q["question"])))
                owners.append((key, step))
    p_yes, p_no = ctx.yes_no(JUDGE, items) if items else ([], [])
    answers: dict[tuple, list[tuple[str, float, float]]] = defaultdict(list)
    for owner, answer, y, n in zip(owners, classify_answers(p_yes, p_no, ctx.options.min_answer_mass), p_yes, p_no):
        answers[owner].append((answer, float(f"{y:.6g}"), float(f"{n:.6g}")))  # 6 significant digits
    rows = [row for chain in sorted({key[0] for key in groups if not questions.get(key[0])})
            for row in _flag_chain(ctx, chain, f"no questions for the chain's base prompt in {QUESTIONS_CONFIG}")]
    for key, members in groups.items():
        asked = questions.get(key[0], [])
        if not asked:
            continue
        expected = [q["expected"] for q in asked]
        scores = [qa_scores(expected, [a for a, _, _ in answers[(key, step)]]) for step in range(len(members))]
        best, worst = extreme_steps({step: s.f1 for step, s in enumerate(scores)})
        for step, (im, s) in enumerate(zip(members, scores)):
            detail = {"tp": s.tp, "fp": s.fp, "fn": s.fn, "tn": s.tn, "ambiguous": s.ambiguous,
                      "questions": len(asked), "question_source": asked[0]["source"]}
            extra = {"accuracy": {"answers": [list(a) for a in answers[(key, step)]]},  # [answer, P(yes), P(no)]
                     "f1": {"best_steps": best, "worst_steps": worst}}
            for name in QA_SCORES:
                rows.append(step_row(f"ecb.culture.{name}", getattr(s, name), im, key[0], step,
                                     {**detail, **extra.get(name, {})}))
            rows.append(step_row("ecb.culture.ambiguous", s.ambiguous / len(asked), im, key[0], step, detail))
        last = len(members) - 1
        best_is_base, worst_is_last = pick_agreement(best, 0), pick_agreement(worst, last)
        rows.append(score_row("ecb.positional_match", best_is_base * worst_is_last, unit_id=key[0],
                              slices=_chain_slices(ctx, key[0]),
                              detail={"images": len(members), "best_steps": best, "worst_steps": worst,
                                      "best_is_base": best_is_base, "worst_is_last": worst_is_last,
                                      "f1_base": scores[0].f1, "f1_last": scores[last].f1}))
    return rows


def _constant_answers(questions: dict[str, list[dict]], prompts: dict[str, dict]) -> dict:
    """{"always_yes" | "always_no": {score: mean over the prompt set's question sets}}: what a judge that
    ignores the image gets (every step of a chain is asked the same set, so this is also its per-step mean)."""
    sets = [[q["expected"] for q in asked] for pid, asked in sorted(questions.items()) if pid in prompts]
    if not sets:
        return {}
    return {f"always_{answer}": {name: round(sum(getattr(qa_scores(e, [answer] * len(e)), name) for e in sets)
                                             / len(sets), 6) for name in QA_SCORES}
            for answer in ("yes", "no")}


def _sources(questions: dict[str, list[dict]], prompts: dict[str, dict]) -> dict:
    """How the prompt set's question sets were written: {"llm": n, "template": m} over its multi-loop bases."""
    counts: dict[str, int] = defaultdict(int)
    for pid, asked in questions.items():
        if pid in prompts:
            counts[asked[0]["source"]] += 1
    return dict(sorted(counts.items()))


def _chain_slices(ctx: Context, chain: str) -> dict:
    return unit_slices([p for p in ctx.prompts.values() if chain_id(p) == chain], CHAIN_SLICES)


def _flag_chain(ctx: Context, chain: str, reason: str) -> list[dict]:
    slices = _chain_slices(ctx, chain)
    return [score_row(metric, None, unit_id=chain, slices=slices, detail={"images": 0}, flag=reason)
            for metric in CULTURE_METRICS]


def _flag_all(ctx: Context, groups: dict, reason: str) -> list[dict]:
    return [row for chain in sorted({key[0] for key in groups}) for row in _flag_chain(ctx, chain, reason)]
