"""Agreement of common-format ratings (evaluators/results/agreement.py) per study, question and slice.

The hand-made study: two JP items rated by three raters, two from Japan (in country) and one from Italy.

==========  =========  =========  =========
item        j1 (JP)    j2 (JP)    i1 (IT)
==========  =========  =========  =========
sushi (JP)  5          5          2
torii (JP)  3          4          4
==========  =========  =========  =========
"""

from __future__ import annotations

import numpy as np
import pytest

from cultureboard.evaluators.results.agreement import agreement
from cultureboard.evaluators.results.ratings_format import validate_rows
from cultureboard.evaluators.results.stats import fleiss_kappa, krippendorff_alpha


ANSWERS = [("j1", "JP", "sushi", 5), ("j2", "JP", "sushi", 5), ("i1", "IT", "sushi", 2),
           ("j1", "JP", "torii", 3), ("j2", "JP", "torii", 4), ("i1", "IT", "torii", 4)]


@pytest.fixture(scope="module")
def rows():
    return validate_rows([{"study": "toy", "rater": r, "rater_country": c, "prompt_id": item, "country": "JP",
                           "question": "faithfulness", "value": v, "scale": "likert:1..5"} for r, c, item, v in ANSWERS])


def by(found, grouping, **key):
    [row] = [r for r in found if r["by"] == grouping and all(r[k] == v for k, v in key.items())]
    return row


def test_overall_is_alpha_and_kappa_of_the_matrix(rows):
    found = agreement(rows)
    overall = by(found, "all")
    assert (overall["study"], overall["question"], overall["scale"]) == ("toy", "faithfulness", "likert:1..5")
    assert (overall["n_items"], overall["n_raters"], overall["n_ratings"]) == (2, 3, 6)
    assert overall["alpha"] == krippendorff_alpha([[5, 5, 2], [3, 4, 4]], "ordinal")
    # Fleiss by hand: sushi (5, 5, 2) -> P = (4 + 1 - 3) / 6 = 1/3; torii (3, 4, 4) -> 1/3; P-bar = 1/3.
    # category rates over 6 ratings: 2: 1, 3: 1, 4: 2, 5: 2 -> P-bar_e = (1 + 1 + 4 + 4) / 36 = 10/36.
    assert overall["kappa"] == pytest.approx((1 / 3 - 10 / 36) / (1 - 10 / 36))
    assert overall["kappa"] == pytest.approx(fleiss_kappa([[0, 1, 0, 0, 2], [0, 0, 1, 2, 0]]))
    assert overall["country"] is None and overall["in_country"] is None


def test_in_country_versus_outside_raters(rows):
    found = agreement(rows)
    inside = by(found, "in_country", in_country=True)
    assert (inside["n_raters"], inside["n_items"]) == (2, 2)
    assert inside["alpha"] == krippendorff_alpha([[5, 5], [3, 4]], "ordinal")
    outside = by(found, "in_country", in_country=False)
    assert (outside["n_raters"], outside["n_items"], outside["alpha"], outside["kappa"]) == (1, 0, None, None)
    split = by(found, "country+in_country", country="JP", in_country=True)
    assert split["alpha"] == inside["alpha"] and split["kappa"] == inside["kappa"]
    assert by(found, "rater_country", rater_country="JP")["alpha"] == inside["alpha"]
    assert isinstance(inside["in_country"], bool)  # JSON-ready


def test_scales_set_the_level_and_kappa_needs_categories(rows):
    interval = rows.assign(scale="interval:1..5")
    overall = by(agreement(interval), "all")
    assert overall["alpha"] == krippendorff_alpha([[5, 5, 2], [3, 4, 4]], "interval") and overall["kappa"] is None
    nominal = rows.assign(scale="nominal:a=2,b=3,c=4,d=5")
    assert by(agreement(nominal), "all")["alpha"] == krippendorff_alpha([[5, 5, 2], [3, 4, 4]], "nominal")


def test_unrecorded_slices_are_left_out(rows):
    bare = rows.assign(rater_country=None, country=None, in_country=None)
    assert [r["by"] for r in agreement(bare)] == ["all"]
    constant = rows.assign(value=np.full(len(rows), 3.0))
    overall = by(agreement(constant), "all")
    assert overall["alpha"] is None and overall["kappa"] is None  # one answer throughout: undefined
