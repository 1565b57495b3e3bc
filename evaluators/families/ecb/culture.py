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

with the first ``context_chunks`` retrieved passages (ECB passes 8). The answer is read from P("Yes") and
P("No") (:func:`.core.classify_answers`), and each image gets accuracy, precision, recall and F1
(:func:`.core.qa_scores`), per step of its chain like the other chain metrics. The rows of ``ecb.culture.accuracy``
record each question's [answer, P(Yes), P(No)] in order; those of ``ecb.culture.f1`` the chain's best and worst
steps by F1 (ties kept), for comparison with the positional baseline (best = the base, worst = the last step)
and with human choices (``results/studies/ecb.py``).
"""

from __future__ import annotations

from collections import defaultdict

from cultureboard.builder.knowledge import KNOWLEDGE_CONFIG, QUESTIONS_CONFIG, questions_by_prompt

from cultureboard.errors import CultureboardError

from ...engine.context import Context, score_row
from ...results.aggregate import unit_slices
from .chains import chain_id, chains, is_attribute, step_row
from .core import classify_answers, extreme_steps, qa_scores

JUDGE = "qwen2.5-vl-7b"
CULTURE_METRICS = ("ecb.culture.accuracy", "ecb.culture.precision", "ecb.culture.recall", "ecb.culture.f1")
CHAIN_SLICES = ("country", "continent", "region_group", "category", "subcategory", "era")


def judge_prompt(passages: list[str], question: str) -> str:
    """ECB's VQA prompt: the retrieved context, the question, "Answer strictly with yes or no."."""
    context = "\n".join(f"[Doc {k}] {text}" for k, text in enumerate(passages, 1))
    return f"Context:\n{context}\nQuestion: {question}\nAnswer strictly with yes or no."


def score_culture(ctx: Context) -> list[dict]:
    groups = {key: members for key, members in chains(ctx.images).items() if not is_attribute(members[0].prompt)}
    if not groups:
        return []
    ctx.note("ecb.culture.f1", "positional_baseline", "best = step 0 (the base), worst = the last step; each row's "
             "detail gives its chain's best_steps and worst_steps by F1, ties kept")
    try:
        asked_rows = ctx.config(QUESTIONS_CONFIG)
    except CultureboardError:  # a dataset built without --knowledge: every chain is flagged, none scored
        return _flag_all(ctx, groups, f"the dataset has no {QUESTIONS_CONFIG} config (built without --knowledge)")
    questions, passages = questions_by_prompt(asked_rows, ctx.config(KNOWLEDGE_CONFIG))
    ctx.note("ecb.culture.accuracy", "question_sources", _sources(questions, ctx.prompts))
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
    p_yes = ctx.probability(JUDGE, items, "Yes") if items else []
    p_no = ctx.probability(JUDGE, items, "No") if items else []
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
            extra = {"accuracy": {"answers": [list(a) for a in answers[(key, step)]]},  # [answer, P(Yes), P(No)]
                     "f1": {"best_steps": best, "worst_steps": worst}}
            for name in ("accuracy", "precision", "recall", "f1"):
                rows.append(step_row(f"ecb.culture.{name}", getattr(s, name), im, key[0], step,
                                     {**detail, **extra.get(name, {})}))
    return rows


def _sources(questions: dict[str, list[dict]], prompts: dict[str, dict]) -> dict:
    """How the prompt set's question sets were written: {"llm": n, "template": m} over its multi-loop bases."""
    counts: dict[str, int] = defaultdict(int)
    for pid, asked in questions.items():
        if pid in prompts:
            counts[asked[0]["source"]] += 1
    return dict(sorted(counts.items()))


def _flag_chain(ctx: Context, chain: str, reason: str) -> list[dict]:
    slices = unit_slices([p for p in ctx.prompts.values() if chain_id(p) == chain], CHAIN_SLICES)
    return [score_row(metric, None, unit_id=chain, slices=slices, detail={"images": 0}, flag=reason)
            for metric in CULTURE_METRICS]


def _flag_all(ctx: Context, groups: dict, reason: str) -> list[dict]:
    return [row for chain in sorted({key[0] for key in groups}) for row in _flag_chain(ctx, chain, reason)]
