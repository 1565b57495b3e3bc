"""CultDiff's human study (Bayramli et al., ACL 2025, section 3.2 and appendix A.3) in the common ratings format.

Native annotators of each country rated every generated image against three real photographs of its artifact,
on six questions, each on a 1-5 Likert scale (Not at all, Slightly, Somewhat, Mostly, Completely):
:data:`QUESTIONS` (Q1.1-Q1.4 image-image similarity, with aspects that depend on the category; Q2 description
match; Q3 realism). CultDiff released no ratings; a file in this layout is its collector's own data.

Input (CSV with a header row, or JSONL), one row per annotator and generated image, columns:
``rater``, ``rater_country`` (ISO 3166-1 alpha-2), ``prompt_id`` (a prompt of the rated prompt set), the image
as ``image_sha256``, or as ``file_name`` with ``submission`` (resolved through ``submissions/<submission>/
metadata.jsonl``), optional ``model``, ``submission`` and ``comment``, and the answers ``q1_1``, ``q1_2``,
``q1_3``, ``q1_4``, ``q2``, ``q3`` (integers 1-5, empty where the annotator gave none).

Output: one common row per annotator, image and answered question (study ``cultdiff``, question ids as the
columns, scale ``likert:1..5``), the item named by its sha256 and prompt, with the prompt's country and
category (``prompts``: the rated prompt set's rows). Every problem is reported at once, one line each.
"""

from __future__ import annotations

import re
from pathlib import Path

from cultureboard.errors import CultureboardError

from ..ratings_files import read_records
from . import register_study

SCALE = "likert:1..5"
#: Question id -> what it asks; Q1.2-Q1.4 name a category's aspect (architecture, clothing, food).
QUESTIONS = {
    "q1_1": "Q1.1 image-image similarity: overall",
    "q1_2": {"architecture": "Q1.2 similarity: shapes", "clothing": "Q1.2 similarity: color/texture",
             "food": "Q1.2 similarity: presentation/plating"},
    "q1_3": {"architecture": "Q1.3 similarity: materials/textures", "clothing": "Q1.3 similarity: design/patterns",
             "food": "Q1.3 similarity: colors/textures"},
    "q1_4": {"architecture": "Q1.4 similarity: background/surroundings",
             "clothing": "Q1.4 similarity: background elements", "food": "Q1.4 similarity: ingredients/components"},
    "q2": "Q2 description match: how well the prompt matches the image",
    "q3": "Q3 realism: how realistic the image looks",
}
COLUMNS = ("rater", "rater_country", "prompt_id", "image_sha256", "file_name", "submission", "model", "comment",
           *QUESTIONS)
_SHA256 = re.compile(r"[0-9a-f]{64}")



def _answer(value) -> float | None:
    """An integer answer 1-5 (``4``, ``"4"``, ``4.0``); ValueError for anything else."""
    number = float(value)
    if not number.is_integer() or not 1 <= number <= 5:
        raise ValueError(value)
    return number


@register_study(
    "cultdiff", title="CultDiff image-image similarity, description match and realism ratings (Bayramli et al. "
    "2025, section 3.2, appendix A.3)", url="https://arxiv.org/abs/2502.08914", licence=None,
    writer="cultureboard.evaluators.families.cultdiff.human:import_study",
    note="CultDiff released no ratings: a file in its layout is its collector's data, published under the "
         "collector's licence.",
)
def import_cultdiff(path: str | Path, prompts: list[dict] | None = None,
                    submissions: str | Path | None = None) -> list[dict]:
    """Common rows of a CultDiff-layout file (module doc). ``prompts`` gives each prompt's country and category
    and checks that every rated prompt exists; ``submissions`` resolves images named by file_name."""
    from ...submission.format import read_metadata

    path = Path(path)
    lines, problems = read_records(path, COLUMNS, ())
    records = [(f"{path}:{line}", {k: v for k, v in raw.items() if v not in ("", None)}) for line, raw in lines]
    by_id = {p["prompt_id"]: p for p in prompts or []}
    metadata: dict[str, dict[str, str]] = {}
    out = []
    for where, raw in records:
        before = len(problems)

        def bad(column, problem, fix, where=where, raw=raw):
            problems.append(f"{where}: {column} {raw.get(column)!r}: {problem} (fix: {fix})")

        for column in ("rater", "rater_country", "prompt_id"):
            if column not in raw:
                bad(column, "is missing", f"give every row its {column}")
        prompt = by_id.get(str(raw.get("prompt_id")))
        if prompts is not None and "prompt_id" in raw and prompt is None:
            bad("prompt_id", "is not a prompt of the rated prompt set", "use the prompt_id of the image's prompt")
        sha = str(raw.get("image_sha256", "")).lower() or None
        if sha is None and raw.get("file_name") and raw.get("submission") and submissions is not None:
            sub = str(raw["submission"])
            if sub not in metadata:
                meta = Path(submissions) / sub / "metadata.jsonl"
                metadata[sub] = {m["file_name"]: m["sha256"] for m in read_metadata(meta)} if meta.is_file() else {}
            sha = metadata[sub].get(str(raw["file_name"]))
        if sha is None:
            bad("image_sha256", "is missing and file_name + submission do not resolve it",
                "give the image's sha256, or its file_name and submission with the submissions folder")
        elif not _SHA256.fullmatch(sha):
            bad("image_sha256", "is not 64 hexadecimal digits", "give the sha256 of the image file")
        answers = {}
        for question in QUESTIONS:
            if question in raw:
                try:
                    answers[question] = _answer(raw[question])
                except (TypeError, ValueError):
                    bad(question, "is not an integer from 1 to 5", "answer 1 (not at all) to 5 (completely), or leave "
                        "it empty")
        if not answers and len(problems) == before:
            bad("q1_1", "and every other answer are empty", "drop rows without answers")
        if len(problems) > before:
            continue
        base = {"study": "cultdiff", "rater": str(raw["rater"]), "rater_country": str(raw["rater_country"]),
                "image_sha256": sha, "prompt_id": str(raw["prompt_id"]), "file_name": raw.get("file_name"),
                "submission": raw.get("submission"), "model": raw.get("model"),
                "country": (prompt or {}).get("country"), "category": (prompt or {}).get("category")}
        for k, (question, value) in enumerate(answers.items()):
            out.append({**base, "question": question, "value": value, "scale": SCALE,
                        "comment": raw.get("comment") if k == 0 else None})
    if not records and not problems:
        problems.append(f"{path}: has no ratings (fix: add one row per annotator and image)")
    if problems:
        raise CultureboardError(path, f"{len(problems)} problem(s) in CultDiff's ratings:\n  " + "\n  ".join(problems),
                                "correct every row listed above; nothing was read")
    return out
