"""The evaluator, by stage: ``submission`` (format, validate, package, generate) -> ``engine`` (evaluate,
scorers, cache, family registry) with ``families`` (one registered plug-in each) -> ``results`` (aggregate,
statistics, ratings, publish, drift).

Public API: :func:`evaluate` (``cultureboard evaluate``), :func:`merge_shards`, :func:`validate`, and
the diversity maths :func:`vendi_score` and :func:`qvendi_score` (with the label-based fast path
:func:`vendi_from_labels`).
"""

import importlib

#: Public name -> the module defining it, imported on first use (PEP 562): importing one stage (``validate`` in a
#: pull request's check) does not import the engine's pandas and scipy.
_PUBLIC = {"evaluate": ".engine.evaluate", "merge_shards": ".engine.evaluate", "validate": ".submission.validate",
           "vendi_score": ".families.vendi", "qvendi_score": ".families.vendi", "vendi_from_labels": ".families.vendi"}
__all__ = ["evaluate", "merge_shards", "validate", "vendi_score", "qvendi_score", "vendi_from_labels"]


def __getattr__(name: str):
    if name in _PUBLIC:
        return getattr(importlib.import_module(_PUBLIC[name], __name__), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
