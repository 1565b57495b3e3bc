"""The evaluator, by stage: ``submission`` (format, validate, package, generate) -> ``engine`` (evaluate,
scorers, cache, family registry) with ``families`` (one registered plug-in each) -> ``results`` (aggregate,
statistics, ratings, publish, drift).

Public API: :func:`evaluate` (``cultureboard evaluate``), :func:`merge_shards`, :func:`validate`, and
the diversity maths :func:`vendi_score` and :func:`qvendi_score` (with the label-based fast path
:func:`vendi_from_labels`).
"""

from .engine.evaluate import evaluate, merge_shards
from .families.vendi import qvendi_score, vendi_from_labels, vendi_score
from .submission.validate import validate

__all__ = ["evaluate", "merge_shards", "validate", "vendi_score", "qvendi_score", "vendi_from_labels"]
