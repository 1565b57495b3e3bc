"""The evaluator: submission I/O and validation, scorers, the embedding cache, metrics (one module per
family), aggregation and statistics.

Public API: :func:`evaluate` (``cultureboard evaluate``), :func:`merge_shards`, :func:`validate`, and
the diversity maths :func:`vendi_score` and :func:`qvendi_score` (with the label-based fast path
:func:`vendi_from_labels`).
"""

from .evaluate import evaluate, merge_shards
from .validate import validate
from .vendi import qvendi_score, vendi_from_labels, vendi_score

__all__ = ["evaluate", "merge_shards", "validate", "vendi_score", "qvendi_score", "vendi_from_labels"]
