"""How far each automatic metric can be trusted, where: the ratings folders' correlations with human
judgements, read into one row shape whatever study wrote them.

The studies' importers write their correlations in a few layouts (``cultureboard import ratings``:
``validity.json`` with Pearson and Spearman per country, and the same pairs as trust-map rows under ``trust``,
which are read when present; the trust-map layout of
``evaluators.results.trust.trust_map``, used by the CultDiff and ECB studies: rho with its bootstrap CI and the
diagnostic flag; CuRe's ``correlations.json``: trust-map rows under ``trust`` against the gold score each
metric stands for, beside the paper-shaped rows with rho and its CI per gold score). Each becomes a row
{metric, human, slice_type, slice, n, rho, rho_low, rho_high, diagnostic, reason, submission, source, synthetic}
(``synthetic``: the note of the folder's :data:`SYNTHETIC` marker, None for real ratings):
``diagnostic`` is :func:`~cultureboard.evaluators.results.trust.trust_flag`'s verdict where the file gives a
CI (or too few items), and None where it cannot be judged (no CI).

On a slice, a metric is greyed as a diagnostic when the row with the most rated items for (metric, slice type,
slice) says so; the headline metric is then not used to rank that slice.
"""

from __future__ import annotations

import json
from pathlib import Path

from cultureboard.evaluators.results.trust import MIN_ITEMS, trust_flag

from cultureboard.errors import CultureboardError

FILES = ("validity.json", "correlations.json")
#: A file beside them that marks a ratings folder as synthetic (``cultureboard demo``: cultureboard/demo_ratings.py):
#: {"synthetic": true, "note": what they are}; its rows carry the note, which every page and the trust page show.
SYNTHETIC = "synthetic.json"
_FIX = "pass an output folder of `cultureboard import ratings` run with the scores"


def load_trust(paths) -> list[dict]:
    """The rows of every ratings folder (or file) in ``paths``, in the order given."""
    rows: list[dict] = []
    for given in paths or ():
        path = Path(given)
        files = [path / name for name in FILES if (path / name).is_file()] if path.is_dir() else [path]
        if not files or not all(f.is_file() for f in files):
            raise CultureboardError(given, f"has none of {', '.join(FILES)}", _FIX)
        synthetic = _synthetic(files[0].parent)
        for file in files:
            try:
                doc = json.loads(file.read_text(encoding="utf-8"))
            except (OSError, ValueError) as exc:
                raise CultureboardError(file, f"cannot be read as JSON ({exc.__class__.__name__})", _FIX) from None
            rows += [{**row, "synthetic": synthetic} for row in _rows(doc, file)]
    return rows


def _synthetic(folder: Path) -> str | None:
    """The note of the folder's :data:`SYNTHETIC` marker, or None where there is none (real ratings)."""
    marker = folder / SYNTHETIC
    if not marker.is_file():
        return None
    try:
        doc = json.loads(marker.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise CultureboardError(marker, f"cannot be read as JSON ({exc.__class__.__name__})",
                                "remove it, or rerun `cultureboard demo`, which writes it") from None
    if not isinstance(doc, dict) or doc.get("synthetic") is not True or not isinstance(doc.get("note"), str):
        raise CultureboardError(marker, 'is not {"synthetic": true, "note": "..."}',
                                "remove it, or rerun `cultureboard demo`, which writes it")
    return doc["note"]


def _rows(doc, file: Path) -> list[dict]:
    listed = doc.get("trust", doc.get("validity", doc.get("correlations"))) if isinstance(doc, dict) else None
    if not isinstance(listed, list) or not all(isinstance(r, dict) and isinstance(r.get("metric"), str) for r in listed):
        raise CultureboardError(file, "holds no list of correlations with a metric each", _FIX)
    out = []
    for raw in listed:
        if "spearman" in raw:  # ratings import: Pearson and Spearman, per country, no CI
            n = int(raw.get("n") or 0)
            row = {"human": raw.get("target"), "slice_type": "country" if raw.get("country") else "overall",
                   "slice": raw.get("country") or "all", "n": n, "rho": raw.get("spearman"), "rho_low": None,
                   "rho_high": None}
            flag = trust_flag(n, None) if n < MIN_ITEMS else None
        else:  # the trust-map layout (rho_low, rho_high), or CuRe's (low, high) per gold score
            n = int(raw.get("n") or 0)
            row = {"human": raw.get("human") or raw.get("gold"), "slice_type": raw.get("slice_type", "overall"),
                   "slice": str(raw.get("slice", "all")), "n": n, "rho": raw.get("rho"),
                   "rho_low": raw.get("rho_low", raw.get("low")), "rho_high": raw.get("rho_high", raw.get("high"))}
            flag = trust_flag(n, row["rho_high"])
        out.append({"metric": raw["metric"], **row, "diagnostic": None if flag is None else flag.diagnostic,
                    "reason": flag.reason if flag else "no confidence interval in this file: not judged",
                    "submission": raw.get("submission"), "source": file.parent.name + "/" + file.name})
    return out


def evidence(rows: list[dict]) -> dict[tuple[str, str, str], dict]:
    """(metric, slice type, slice) -> the row with the most rated items (the first of equals)."""
    best: dict[tuple[str, str, str], dict] = {}
    for row in rows:
        key = (row["metric"], row["slice_type"], row["slice"])
        if key not in best or row["n"] > best[key]["n"]:
            best[key] = row
    return best
