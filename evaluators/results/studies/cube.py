"""CUBE's human ratings (Kannen et al. 2024, section 4 and appendix E): a file in the layout of
``ratings.load_ratings`` (one row per rater and image: relevance, faithfulness, realism), as common rows."""

from __future__ import annotations

from pathlib import Path

from ..ratings import load_ratings, to_common
from . import register_study


@register_study(
    "cube", title="CUBE cultural awareness ratings (Kannen et al. 2024, section 4, appendix E)",
    url="https://arxiv.org/abs/2407.06863", licence=None, writer="cultureboard.evaluators.results.ratings:import_ratings",
    note="CUBE released no ratings: a file in its layout is its collector's data, published under the "
         "collector's licence; the rated prompts of CUBE-1K are CC BY-NC-SA 4.0.",
)
def import_cube(path: str | Path, prompts: list[dict] | None = None, submissions: str | Path | None = None) -> list[dict]:
    """``prompts`` (the rated prompt set's rows) resolves each image to its prompt and gives the prompt's
    country and category; ``submissions`` resolves images named by file_name or sha256."""
    return to_common(load_ratings(path, prompts, submissions))
