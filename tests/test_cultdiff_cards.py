"""CultDiff's metric cards against the papers: each ranked card's direction has evidence of the right sign (CultDiff
section 4.2 / Table 2, CuRe Table 1, checked in the seed text), the metrics CultDiff never compared are
descriptive, the headline says it is the project's choice, and every card says its references are not the paper's."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from cultureboard.evaluators.families.cultdiff import HEADLINE, METRICS, REFERENCES_NOTE
from cultureboard.evaluators.families.cultdiff.reported import reported

CARDS = {m.name: m for m in METRICS}
SEEDS = next((p / "shared" / "seeds" for p in Path(__file__).resolve().parents if (p / "shared" / "seeds").is_dir()),
             None)
needs_seeds = pytest.mark.skipif(SEEDS is None, reason="the seed papers are not on this machine")


def test_directions_and_their_evidence():
    assert {n: c.direction for n, c in CARDS.items()} == {
        "cultdiff.dino": "higher", "cultdiff.clip": "none", "cultdiff.lpips": "lower", "cultdiff.dreamsim": "none",
        "cultdiff.ssim": "higher", "cultdiff.learned": "higher"}
    for card in METRICS:
        assert bool(card.direction_evidence) == card.ranked, card.name
        assert REFERENCES_NOTE in card.description and "first K Wikimedia Commons files" in REFERENCES_NOTE
    for name in ("cultdiff.clip", "cultdiff.dreamsim"):
        assert CARDS[name].source.startswith("not in CultDiff") and "not ranked" in CARDS[name].description
    for name in ("cultdiff.lpips", "cultdiff.ssim"):
        assert "section 4.2, Table 2" in CARDS[name].source and "section 4.2, Table 2" in CARDS[name].direction_evidence
        assert "section 4.2" in CARDS[name].validity[0].source


def test_the_reported_sign_agrees_with_each_direction():
    """A CultDiff Table 2 Spearman is positive exactly for a higher-is-better card, negative for a lower one; the
    evidence quotes it as printed."""
    checked = 0
    for name, card in CARDS.items():
        row = reported().get(name)
        if row is None or row["family"] != "cultdiff":
            continue
        assert card.direction == ("higher" if row["value"] > 0 else "lower"), name
        assert f"Spearman {row['printed']}" in card.direction_evidence and card.validity[0].value == row["value"]
        checked += 1
    assert checked == 3


def test_cultdiff_s_evidence_is_the_papers_model_not_this_one():
    card = CARDS["cultdiff.learned"]
    assert card.validity[0].value == 0.1848 and "the paper's own CultDiff-S model (not this one" in card.validity[0].statement
    assert "the paper's own CultDiff-S model (not this one)" in card.direction_evidence
    assert "in training set" in card.description and card.version == 4  # 4: near_reference


def test_the_headline_is_the_projects_choice():
    dino = CARDS["cultdiff.dino"]
    assert dino.primary and [c.name for c in METRICS if c.primary] == ["cultdiff.dino"]
    assert HEADLINE in dino.description and "the project's choice" in HEADLINE and "SD 1.5 only" in HEADLINE
    statement = dino.validity[0].statement
    assert "on SD 1.5 images, the highest of any scorer in that column" in statement
    assert "below SigLIP 2" in statement and "tied with SigLIP 2 and AIMV2" in statement


def _table1() -> dict[tuple[str, str], list[float]]:
    """CuRe Table 1 from the seed: (encoder, scorer) -> its 9 cells (FLUX, SD 3.5, SD 1.5 x CuRe*, GT*, PS*)."""
    lines = (SEEDS / "cure.md").read_text(encoding="utf-8").splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("Table 1. Spearman rank correlation"))
    table, encoder = {}, None
    for line in lines[start + 4:start + 20]:
        cells = line.split("\t")
        if len(cells) < 10:
            continue
        encoder = re.sub(r"\s*\[\d+\]", "", cells[0]) or encoder
        table[encoder, cells[1]] = [float(c) if c != "-" else None for c in cells[2:11]]
    return table


@needs_seeds
def test_the_dino_evidence_matches_cure_table_1():
    """DINOv2 phi_GT(n) vs phi*_PS (every third column): positive on all three T2I systems; the highest of any
    scorer on SD 1.5 only (below SigLIP 2 on FLUX.1 [dev], tied with SigLIP 2 and AIMV2 on SD 3.5 Large)."""
    table = _table1()
    ps = {key: cells[2::3] for key, cells in table.items()}
    dino = ps["DINOv2", "$\\phi_{GT}(n)$"]
    assert all(v > 0 for v in dino) and dino[2] == reported()["cultdiff.dino"]["value"]
    for system, alone in ((0, False), (1, False), (2, True)):
        column = [v[system] for v in ps.values() if v[system] is not None]
        assert (dino[system] == max(column) and column.count(max(column)) == 1) == alone, system
    assert ps["SigLIP 2", "$\\phi_{GT}(n)$"][0] > dino[0]
    assert ps["SigLIP 2", "$\\phi_{GT}(n)$"][1] == ps["AIMV2", "$\\phi_{GT}(n)$"][1] == dino[1]


@needs_seeds
def test_cultdiff_evidence_matches_section_4_2_and_table_2():
    text = (SEEDS / "cultdiff.md").read_text(encoding="utf-8")
    section = text[text.index("4.2 Similarity Metric Analysis"):text.index("Table 2: Correlation between human")]
    for name, label in (("cultdiff.ssim", "SISM"), ("cultdiff.lpips", "LPIPS"), ("cultdiff.learned", "CULTDIFF-S")):
        row = next(line for line in section.splitlines() if line.startswith(label + "\t"))
        assert row.split("\t")[1] == reported()[name]["printed"], name
    assert "averaging the responses to the first four questions" in section
    assert "CLIP" not in section and "DINO" not in section and "DreamSim" not in text
