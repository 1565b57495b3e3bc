"""CuRe's metric cards: each direction backed by the paper's human evidence (read from the reported tables, whose
numbers tests/test_reported.py checks against the seed text), the quoted column the gold score the card stands
for, the target rule of the divergences, the bootstrap cluster of the metrics that share P(c) images, and the
version bumps of the cards whose rank changed."""

from __future__ import annotations

from pathlib import Path

import pytest
from cultureboard.builder.prompts_cure import build_ladder
from cultureboard.evaluators.engine.registry import metric_cards
from cultureboard.evaluators.families import cure
from cultureboard.evaluators.results.studies.cure import stands_for

from cultureboard.countries import load_countries

from test_prompts_cure import _artifacts

GOLD = {"cure": "phi*_CuRe", "gt": "phi*_GT", "ps": "phi*_PS"}


@pytest.fixture(scope="module")
def cards():
    return {name: card for name, card in metric_cards().items() if card.family == "cure"}


@pytest.fixture(scope="module")
def rho():
    return {k: None if v is None else float(v.rstrip("*")) for k, v in cure.reported_rho().items()}


def column(rho, table, *labels, gold):
    return [rho[(table, *labels, model, gold)] for model in cure.MODELS]


def table1(rho, name, gold):
    """Table 1's column ``gold`` for the similarity metric ``name`` (its base metric and encoder suffix)."""
    [(base, suffix)] = [(b, name[len(b):]) for b in cure._TABLE1_SCORER
                        if name.startswith(b) and name[len(b):] in cure.IMAGE_ENCODERS]
    return column(rho, "Table 1", cure._ENCODER_TITLES[suffix], cure._TABLE1_SCORER[base], gold=gold)


def test_every_ranked_card_has_evidence_and_every_card_a_reason(cards):
    assert len(cards) == 22
    for card in cards.values():
        assert card.direction_evidence.strip(), card.name  # the unranked ones say why they are not ranked
        if not card.ranked:
            assert card.direction_evidence.startswith("Not ranked:"), card.name
    assert {n for n, c in cards.items() if not c.ranked} == {"cure.div", "cure.div_delta", "cure.acceptance"}


def test_higher_cards_quote_the_gold_they_stand_for_and_it_is_positive(cards, rho):
    for name, card in cards.items():
        if card.direction != "higher" or name.startswith("cure.ita.cr."):
            continue
        gold = GOLD[stands_for(card.to_dict())]
        if name.startswith("cure.ita."):
            values = column(rho, "Table 2", cure._ITA_SCORER[cure.ITA[name]], gold=gold)
        else:
            values = table1(rho, name, gold)
        assert all(v > 0 for v in values), name  # the card's "positive on every system"
        printed = " / ".join(f"{v:.2f}" for v in values)
        assert printed in card.direction_evidence and printed in card.validity[0].statement, name
        assert card.validity[0].value == values[0] and gold in card.validity[0].statement
    # the ITA cards stand for phi*_CuRe and quote its column, not the more favourable phi*_PS one
    ita = cards["cure.ita.cr"]
    assert stands_for(ita.to_dict()) == "cure" and "0.27 / 0.22 / 0.24" in ita.direction_evidence
    assert "0.42 / 0.39 / 0.44" not in ita.direction_evidence + ita.validity[0].statement


def test_entanglement_cards_quote_table15_as_such(cards, rho):
    for suffix, column_name in cure._BACKBONE.items():
        card = cards[f"cure.ita.cr{suffix}"]
        value = rho[("Table 15", "phi_ITA(c,r)", column_name)]
        assert card.direction == "higher" and value > 0 and card.validity[0].value == value
        assert f"({value:.2f})" in card.direction_evidence and "phi*_PS" in card.direction_evidence


def test_divergences_target_zero_as_cure_ranks_them(cards, rho):
    seed_text = Path(__file__).resolve().parents[1].parent / "shared" / "seeds" / "cure.md"  # as test_reported
    quote = "As this scorer is a divergence, a value closer to zero is better"
    if seed_text.is_file():
        assert quote in seed_text.read_text(encoding="utf-8")
    deltas = [n for n in cards if n.startswith("cure.ps_delta.")]
    assert len(deltas) == 6
    for name in deltas:
        card = cards[name]
        assert (card.direction, card.target, card.version) == ("target", 0.0, 3), name
        assert quote in card.direction_evidence and "E.1" in card.direction_evidence
        values = table1(rho, name, "phi*_PS")
        assert values[0] < 0 and values[1] < 0 and values[2] >= 0  # "negative where it works, not on SD 1.5"
        assert " / ".join(f"{v:.2f}" for v in values) in card.direction_evidence


def test_diversity_is_not_ranked_because_table3_contradicts_table8(cards, rho):
    div = cards["cure.div"]
    assert (div.direction, div.version) == ("none", 2) and cards["cure.div_delta"].version == 2
    every = [rho[("Table 3", "phi_DIV(a)", m, g)] for m in cure.MODELS for g in GOLD.values()]
    assert all(v < 0 for v in every)  # "negatively with every gold score on every system"
    assert "-0.20 / -0.22 / -0.08" in div.direction_evidence and "-0.30 / -0.29 / -0.11" in div.direction_evidence
    assert cards["cure.acceptance"].version == 3 and cards["cure.acceptance"].bounded == (0.0, 1.0)  # 3: Wilson


def test_headline_is_the_projects_choice_and_its_claim_holds(cards, rho):
    [headline] = [c for c in cards.values() if c.primary]
    assert headline.name == "cure.ita.cr" and cure.HEADLINE_NOTE in headline.description
    ita = column(rho, "Table 2", "phi_ITA(c,r)", gold="phi*_CuRe")
    div = column(rho, "Table 3", "phi_DIV(a)", gold="phi*_CuRe")
    for encoder in cure._ENCODER_TITLES.values():  # Table 8's PS column is Delta phi_PS(n,c), per encoder
        ps = column(rho, "Table 1", encoder, "Delta phi_PS(n,c)", gold="phi*_CuRe")
        assert all(i >= abs(p) and i >= abs(d) for i, p, d in zip(ita, ps, div)), encoder


def test_cards_whose_ladders_share_category_images_declare_the_cluster(cards):
    shared = {n for n in cards if n.startswith(("cure.ps.", "cure.ps_delta.")) or n == "cure.ps"}
    assert len(shared) == 9
    assert {n for n, c in cards.items() if c.cluster} == shared
    assert {cards[n].cluster for n in shared} == {cure.PS_CLUSTER}
    # every cure-ladder row carries the field, and a ladder's rows carry its P(c) row's value (the unit's slice)
    rows = build_ladder(_artifacts(), load_countries()).rows
    assert all(r[cure.PS_CLUSTER] for r in rows)
    category_value = {cure.category_id(r): r[cure.PS_CLUSTER] for r in rows if r["level"] == "c"}
    assert all(r[cure.PS_CLUSTER] == category_value[cure.category_id(r)] for r in rows)
    # and distinct P(c) prompts are distinct clusters (bread and dish are both cuisine): the first stage resamples
    # exactly the groups of ladders that share category images
    assert len(set(category_value.values())) == len(category_value) == 4
    assert cure.PS_CLUSTER in cure.SLICE_FIELDS  # so a ladder's score rows carry it


def test_gt_cards_say_the_references_are_not_the_papers(cards):
    for suffix in cure.IMAGE_ENCODERS:
        assert "first K files" in cards[f"cure.gt{suffix}"].description
        assert "not CuRe's curated" in cards[f"cure.gt{suffix}"].description
