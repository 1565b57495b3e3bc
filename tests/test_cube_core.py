"""CUBE's functional core on hand-computed values, and the registry's option parsing."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

import numpy as np
import pytest

from cultureboard.errors import CultureboardError
from cultureboard.evaluators.engine.registry import family_of, parse_options
from cultureboard.evaluators.families.cube import core
from cultureboard.evaluators.families.vendi import CUBE_KERNEL_PRESETS


def test_country_probabilities_by_hand():
    # image along x; countries: along x (cos 1), along y (cos 0), opposite (cos -1); scale 2
    image = np.array([1.0, 0.0])
    countries = np.array([[1.0, 0.0], [0.0, 1.0], [-1.0, 0.0]])
    p = core.country_probabilities(image, countries, 2.0)
    z = math.exp(2) + 1 + math.exp(-2)
    np.testing.assert_allclose(p, [math.exp(2) / z, 1 / z, math.exp(-2) / z])
    assert core.relevance(p, 1) == (pytest.approx(1 / z), 0.0)  # the prompt's country, not the first one
    assert core.relevance(p, 0) == (pytest.approx(math.exp(2) / z), 1.0)
    assert core.relevance(core.country_probabilities(np.array([0.0, 1.0]), countries, 2.0), 1)[1] == 1.0


def test_top_candidates_best_first_ties_by_index():
    image = np.array([0.6, 0.8])
    candidates = np.array([[1.0, 0.0], [0.0, 1.0], [0.6, 0.8], [0.0, 1.0]])
    assert core.top_candidates(image, candidates, 3).tolist() == [2, 1, 3]
    assert core.top_candidates(image, candidates, 10).tolist() == [2, 1, 3, 0]


def test_choice_answers():
    schema = core.choice_schema(5)
    assert schema["properties"]["choice"] == {"type": "integer", "minimum": 0, "maximum": 5}
    assert core.judge_choice({"choice": 3}, 4) == ("chosen", 2)  # 1-based answer, 0-based index
    assert core.judge_choice({"choice": 0}, 4) == ("none", None)  # none matches: not the same as no answer
    assert core.judge_choice(None, 4) == ("unusable", None)
    assert core.judge_choice({"choice": 5}, 4) == ("unusable", None)  # beyond the candidates listed


def test_pool_diversity_values_and_small_pools():
    # 8 images: two continents (4 + 4), four countries (2 each), eight artifacts: each group is the whole pool
    continents = ["Asia"] * 4 + ["Europe"] * 4
    countries = ["JP", "JP", "KR", "KR", "IT", "IT", "FR", "FR"]
    artifacts = list("abcdefgh")
    ones = np.ones(8)
    # VS/N with one-hot labels = exp(entropy of the label shares) / N
    assert core.pool_diversity(continents, countries, artifacts, ones, "continent", 8, 3, 0)[0] == pytest.approx(2 / 8)
    assert core.pool_diversity(continents, countries, artifacts, ones, "country", 8, 3, 0)[0] == pytest.approx(4 / 8)
    assert core.pool_diversity(continents, countries, artifacts, ones, "artifact", 8, 3, 0)[0] == pytest.approx(1.0)
    quality = np.full(8, 0.5)
    value, spread, flag = core.pool_diversity(continents, countries, artifacts, quality, "artifact", 8, 3, 0)
    assert (value, spread, flag) == (pytest.approx(0.5), pytest.approx(0.0), None)
    # swapping the continent and country lists changes the continent kernel's value
    swapped = core.pool_diversity(countries, continents, artifacts, ones, "continent", 8, 3, 0)[0]
    assert swapped == pytest.approx(4 / 8) != 2 / 8
    assert core.pool_diversity(continents[:3], countries[:3], artifacts[:3], ones[:3], "uniform", 8, 3, 0) == (
        None, None, "pool of 3 images is smaller than the group size 8")
    assert set(CUBE_KERNEL_PRESETS) == {"continent", "country", "artifact", "hierarchical", "uniform"}


@dataclass(frozen=True)
class Opts:
    n: int = 3
    rate: float = 0.5
    mode: Literal["a", "b"] = "a"
    flag: bool = False
    name: str | None = None


class Fam:
    name, options = "fam", Opts


def test_options_are_typed_and_validated():
    assert parse_options(Fam, overrides=["n=5", "fam.rate=0.25", "mode=b", "flag=true", "name=none"]) == Opts(
        5, 0.25, "b", True, None)
    assert parse_options(Fam, {"n": 2}) == Opts(n=2)
    for bad, message in ((["n=1.5"], "is not an integer"), (["rate=nan"], "not a finite number"),
                         (["mode=c"], "is not one of a, b"), (["flag=maybe"], "is not true or false"),
                         (["size=3"], "known key"), (["n"], "known key")):
        with pytest.raises(CultureboardError, match=message) as error:
            parse_options(Fam, overrides=bad)
        assert error.value.exit_code == 2 and "n (int, default 3)" in error.value.fix
    with pytest.raises(CultureboardError, match="must be int"):
        parse_options(Fam, {"n": "3"})


def test_cube_registration():
    family, spec = family_of("cube-diversity")
    assert family.primary("cube-diversity") == "cube.qvs.uniform"
    assert family.primary("cube-awareness") == "cube.cultural_relevance"
    assert family.card("cube.cultural_relevance").chance == "1 / number of countries of the prompt set"
    assert family.card("cube.within.vs.artifact").unit == "pool" and spec.units["pool"]
    assert all(family.card(m).version >= 1 for m in spec.metrics)
    # CUBE J.2.1: humans found the mapping about 70% accurate, evidence on every card that rests on it
    for m in ("cube.retrieval", "cube.qvs.uniform", "cube.vs.country", "cube.within.vs.artifact"):
        assert [e.value for e in family.card(m).validity] == [0.70] and "J.2.1" in family.card(m).validity[0].source
