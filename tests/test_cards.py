"""Metric cards across every registered family: a ranked card cites the paper's evidence for its direction, a
target card has its target, a headline is ranked, and `cultureboard list-metrics --json` shows all of it.

``test_every_ranked_card_cites_its_direction_evidence`` runs per family (``-k cube`` picks CUBE's); its message
lists every offending card, so a family still missing evidence fails with the names to fix.
"""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from cultureboard.cli import cli
from cultureboard.evaluators.engine.registry import DIRECTIONS, MetricCard, load_families

FAMILIES = load_families()


@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_every_ranked_card_cites_its_direction_evidence(family):
    missing = [card.name for card in FAMILIES[family].metrics
               if card.direction != "none" and not card.direction_evidence.strip()]
    assert not missing, (f"{family}: ranked card(s) without direction_evidence (cite where the paper shows which way "
                         f"is better, or make the direction 'none' and bump the version): {', '.join(missing)}")


@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_cards_are_well_formed_and_headlines_ranked(family):
    fam = FAMILIES[family]
    for card in fam.metrics:
        assert card.direction in DIRECTIONS and (card.target is not None) == (card.direction == "target")
        assert card.ranked == (card.direction != "none")
    for spec in fam.prompt_sets:
        assert fam.card(fam.primary(spec.name)).ranked, f"{spec.name}: its headline must be ranked"


def test_a_card_refuses_a_target_without_the_target_direction_and_the_reverse():
    base = dict(name="x.m", family="x", title="M", formula="f", range="R", scorers=(), source="S", version=1)
    with pytest.raises(ValueError, match="target is given exactly"):
        MetricCard(direction="target", **base)
    with pytest.raises(ValueError, match="target is given exactly"):
        MetricCard(direction="lower", target=0.0, **base)
    assert MetricCard(direction="target", target=0.0, **base).ranked


def test_cube_directions_follow_the_paper():
    """CUBE ranks quality and diversity by its own tables; the SigLIP faithfulness cosine, the top-1 country and the
    mapping similarity have no human evidence in CUBE and are descriptive."""
    cards = {c.name: c for c in FAMILIES["cube"].metrics}
    assert {n for n, c in cards.items() if not c.ranked} == {"cube.faithfulness", "cube.country_top1",
                                                             "cube.retrieval"}
    assert "Table 5" in cards["cube.qvs.uniform"].direction_evidence
    assert "Table 4" in cards["cube.quality"].direction_evidence
    assert "never correlates" in cards["cube.cultural_relevance"].direction_evidence  # the headline's weak case


def test_list_metrics_json_shows_direction_evidence_target_and_cluster():
    result = CliRunner().invoke(cli, ["list-metrics", "--json"])
    assert result.exit_code == 0, result.output
    listed = {m["name"]: m for fam in json.loads(result.output)["families"] for m in fam["metrics"]}
    cards = {c.name: c for fam in FAMILIES.values() for c in fam.metrics}
    assert listed.keys() == cards.keys()
    for name, card in cards.items():
        shown = listed[name]
        assert (shown["direction"], shown["direction_evidence"], shown["target"], shown["cluster"]) == (
            card.direction, card.direction_evidence, card.target, card.cluster)
    assert listed["cube.quality"]["direction_evidence"].startswith("CUBE Table 4")


def test_list_metrics_text_says_what_each_direction_means():
    result = CliRunner().invoke(cli, ["list-metrics"])
    assert result.exit_code == 0, result.output
    line = next(x for x in result.output.splitlines() if "cube.faithfulness" in x)
    assert "descriptive" in line
    assert "higher is better" in next(x for x in result.output.splitlines() if "cube.quality" in x)


def test_list_metrics_text_names_a_target_and_a_cluster(monkeypatch):
    import dataclasses

    from cultureboard.evaluators.engine import registry

    cube = FAMILIES["cube"]
    quality = cube.card("cube.quality")
    moved = dataclasses.replace(quality, direction="target", target=0.0, cluster="category")
    fake = dataclasses.replace(cube, metrics=tuple(moved if c is quality else c for c in cube.metrics))
    monkeypatch.setattr(registry, "load_families", lambda: {"cube": fake})
    result = CliRunner().invoke(cli, ["list-metrics"])
    line = next(x for x in result.output.splitlines() if "cube.quality" in x)
    assert "closer to 0 is better" in line and line.endswith("bootstrap clusters: category")
