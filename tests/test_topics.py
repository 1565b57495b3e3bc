"""The topic taxonomy (site/data/topics.yaml, site/topics.py): every category each family's builder writes is in one
topic or left out with a reason, food gathers every family's food, and a category in two topics is refused."""

from __future__ import annotations

from importlib import resources

import pytest
import yaml
from cultureboard.builder.prompts_cube import CONCEPTS
from cultureboard.builder.prompts_cultdiff import TEMPLATES
from cultureboard.site import topics
from cultureboard.site.topics import load_topics, topic_of

from cultureboard.errors import CultureboardError


def _data(name: str) -> dict:
    return yaml.safe_load(resources.files("cultureboard.builder").joinpath(f"data/{name}").read_text(encoding="utf-8"))


def test_every_familys_categories_are_in_one_topic_or_left_out_with_a_reason():
    found, unmapped = load_topics()
    ecb = {c.replace("_", "-") for c in _data("ecb_schema.yaml")["categories"]} | {"attribute-addition"}
    cultivate = set(_data("cultivate_activities.yaml")["categories"])
    for family, categories in {"cube": set(CONCEPTS), "cultdiff": set(TEMPLATES), "cultivate": cultivate,
                               "ecb": ecb}.items():
        for c in categories:
            topic = topic_of(found, c)
            assert topic or unmapped.get(c), f"{family}'s category {c!r} is in no topic and has no reason"
            if topic:
                assert family in topic.categories[c]["families"] and topic.categories[c]["reason"], (family, c)


def test_food_gathers_every_familys_food():
    food = next(t for t in load_topics()[0] if t.slug == "food")
    assert set(food.categories) == {"cuisine", "food", "eating"}
    assert {f for c in food.categories.values() for f in c["families"]} == {"cube", "cure", "cultdiff", "cultivate", "ecb"}


def test_a_category_in_two_topics_is_refused(tmp_path, monkeypatch):
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "topics.yaml").write_text(yaml.safe_dump({"topics": {
        "a": {"title": "A", "categories": {"food": {"families": ["ecb"], "reason": "x"}}},
        "b": {"title": "B", "categories": {"food": {"families": ["cultdiff"], "reason": "y"}}}}}))
    monkeypatch.setattr(topics.resources, "files", lambda package: tmp_path)
    with pytest.raises(CultureboardError, match="'food' is in topics 'a' and 'b'"):
        load_topics()
