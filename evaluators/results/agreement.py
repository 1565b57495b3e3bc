"""Inter-rater agreement of common-format ratings (``ratings_format``), per study, question and slice.

For each study and question, over the rows of a slice, the items x raters matrix (units = items named by
``ratings_format.ITEM``, coders = rater ids) gives:

* ``alpha``: Krippendorff's alpha (``stats.krippendorff_alpha``) at the level of the question's scale
  (likert and ordinal: ordinal; nominal: nominal; interval: interval);
* ``kappa``: Fleiss' kappa (``stats.fleiss_kappa``) over the scale's categories (null for an interval
  scale), which treats the answers as nominal: it is the stricter of the two on a Likert scale;
* ``n_items``: items with at least two answers (only they carry agreement), ``n_raters``, ``n_ratings``.

A coefficient is null where it is undefined (no item with two answers, or one answer throughout). The slices
(:data:`GROUPINGS`): everything; per item ``country``; per ``rater_country``; ``in_country`` raters (true)
versus raters from elsewhere (false); and the two split per item country. A slice of a column the study does
not record (all null) is left out; so are rows whose slice value is null.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from .ratings_format import ITEM, parse_scale
from .stats import fleiss_kappa, krippendorff_alpha

GROUPINGS: tuple[tuple[str, ...], ...] = ((), ("country",), ("rater_country",), ("in_country",), ("country", "in_country"))
_SLICE_COLUMNS = ("country", "rater_country", "in_country")


def agreement(rows: pd.DataFrame, groupings: tuple[tuple[str, ...], ...] = GROUPINGS) -> list[dict]:
    """One row per study, question and slice: ``study, question, scale, by`` ("all" or the grouping columns
    joined by "+"), ``country, rater_country, in_country`` (the slice; null where not grouped by),
    ``n_items, n_raters, n_ratings, alpha, kappa``. ``rows``: validated common-format rows."""
    out = []
    for (study, question), part in rows.groupby(["study", "question"], sort=True):
        scale = parse_scale(part["scale"].iloc[0])
        for by in groupings:
            if any(part[c].isna().all() for c in by):
                continue
            groups = part.dropna(subset=list(by)).groupby(list(by), sort=True) if by else [((), part)]
            for key, group in groups:
                key = key if isinstance(key, tuple) else (key,)
                out.append({"study": study, "question": question, "scale": scale.spec, "by": "+".join(by) or "all",
                            **dict.fromkeys(_SLICE_COLUMNS), **{c: _plain(v) for c, v in zip(by, key)},
                            **_measures(group, scale)})
    return out


def _measures(rows: pd.DataFrame, scale) -> dict:
    units = rows.groupby(ITEM, dropna=False, sort=False).ngroup().to_numpy()
    raters = pd.factorize(rows["rater"])[0]
    matrix = np.full((units.max() + 1, raters.max() + 1), np.nan)
    matrix[units, raters] = rows["value"].to_numpy(float)
    per_unit = np.bincount(units)
    try:
        alpha = krippendorff_alpha(matrix, scale.level)
    except ValueError:
        alpha = None
    kappa = None
    if scale.categories is not None:
        counts = np.stack([(matrix == c).sum(axis=1) for c in scale.categories], axis=1)
        try:
            kappa = fleiss_kappa(counts)
        except ValueError:
            pass
    return {"n_items": int((per_unit >= 2).sum()), "n_raters": int(raters.max() + 1), "n_ratings": len(rows),
            "alpha": alpha, "kappa": kappa}


def _plain(value):
    """A JSON-ready scalar (numpy and pandas booleans and strings as Python ones)."""
    return value.item() if isinstance(value, np.generic) else value
