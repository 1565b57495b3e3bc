"""Validity tiers (evaluators/results/tiers.py): every ranked card's human evidence as data, checked against the
seed papers' text, and the one rule that turns it into a tier."""

import json
import re
from pathlib import Path

import pytest
from click.testing import CliRunner

from cultureboard.cli import cli
from cultureboard.errors import CultureboardError
from cultureboard.evaluators.engine.registry import metric_cards
from cultureboard.evaluators.results import tiers
from cultureboard.evaluators.results.tiers import evidence_records, record_problem, tier_of

HERE = Path(__file__).resolve()
SEEDS = next((p / "shared" / "seeds" for p in HERE.parents[2:4] if (p / "shared" / "seeds").is_dir()), None)


def _plain(text: str) -> str:
    """Seed text with HTML tags dropped and whitespace collapsed (the form the records quote)."""
    return re.sub(r"\s+", " ", re.sub(r"<[^>]+>", "", text)).strip()


def corr(value, ceiling=None, statistic="spearman", **extra):
    return {"evidence": "correlation", "statistic": statistic, "value": value, "ceiling": ceiling, **extra}


@pytest.mark.parametrize("record, tier", [
    (corr("0.42", "0.58"), "validated"),  # 0.72 of the ceiling
    (corr("0.40"), "validated"),  # the boundary, no ceiling published
    (corr("-0.45"), "validated"),  # a distance's agreeing sign counts by its size
    (corr("0.42", "0.75"), "indicative"),  # 0.56 of the ceiling: below 0.6
    (corr("0.39", "0.39"), "indicative"),  # at the ceiling, but under 0.4
    (corr("0.20"), "indicative"),
    (corr("0.19"), "diagnostic"),
    (corr("0.51", caveat="another benchmark's study"), "diagnostic"),
    (corr("73.8", statistic="agreement"), "diagnostic"),  # not a correlation
    ({"evidence": "arrow"}, "arrow only"),
    ({"evidence": "own"}, "own measure"),
    ({"evidence": "none"}, "diagnostic"),
    (None, "diagnostic"),
])
def test_the_rule(record, tier):
    assert tier_of(record, "higher") == tier
    assert tier_of(record, "none") == "descriptive"


def test_every_card_with_a_direction_has_one_record_and_each_record_a_card():
    cards, records = metric_cards(), evidence_records()
    assert sorted(n for n, c in cards.items() if c.direction != "none") == sorted(records)


def test_tiers_of_the_seed_cards():
    got = {n: c.to_dict()["tier"] for n, c in metric_cards().items()}
    assert [got[n] for n in ("cultivate.faith", "cultivate.align", "cure.gt", "cure.ita.cr", "cube.qvs.uniform",
                             "cube.cultural_relevance", "cultdiff.dino", "cultdiff.ssim", "ecb.aesthetic",
                             "ecb.clipscore.instruction", "ecb.culture.accuracy_last", "cube.quality.parity",
                             "cube.faithfulness")] == [
        "validated", "indicative", "validated", "indicative", "arrow only", "diagnostic", "diagnostic",
        "diagnostic", "validated", "diagnostic", "diagnostic", "own measure", "descriptive"]


@pytest.mark.skipif(SEEDS is None, reason="the seed papers' text (shared/seeds beside the repository) is not here")
def test_every_quote_is_the_seed_text_and_holds_its_figures():
    texts = {}
    for name, record in evidence_records().items():
        quotes = record.get("quotes") or []
        if record["evidence"] == "correlation":
            assert quotes, name
        if not quotes:
            continue
        seed = texts.setdefault(record["seed"], _plain((SEEDS / record["seed"]).read_text(encoding="utf-8")))
        for quote in quotes:
            assert quote in seed, f"{name}: {quote!r} is not in {record['seed']}"
        if record["evidence"] == "correlation":
            assert re.search(rf"(?<![\d.]){re.escape(record['value'])}(?!\d)", quotes[0]), (name, record["value"])
            if record.get("ceiling"):
                assert any(re.search(rf"(?<![\d.]){re.escape(record['ceiling'])}(?!\d)", q) for q in quotes[1:]), name


def test_records_are_checked(tmp_path):
    good = {"metrics": ["x.y"], "evidence": "arrow", "source": "T1", "smallest_difference": {"value": 0.01, "reason": "r"}}
    assert record_problem({k: v for k, v in good.items() if k != "metrics"}) is None
    assert "smallest_difference" in record_problem({**good, "smallest_difference": {"value": 0, "reason": "r"}})
    assert "statistic" in record_problem({**good, "evidence": "correlation"})
    assert "not one of" in record_problem({**good, "evidence": "strong"})
    path = tmp_path / "evidence.yaml"
    path.write_text(json.dumps({"records": [good, good]}))
    with pytest.raises(CultureboardError, match="repeats the metric x.y"):
        tiers.evidence_records(path)


def test_list_metrics_shows_evidence_tier_and_smallest_difference():
    out = CliRunner().invoke(cli, ["list-metrics", "--json"])
    assert out.exit_code == 0, out.output
    cards = {m["name"]: m for f in json.loads(out.output)["families"] for m in f["metrics"]}
    faith = cards["cultivate.faith"]
    assert (faith["tier"], faith["evidence"]["value"], faith["evidence"]["ceiling"], faith["smallest_difference"]) == (
        "validated", "0.42", "0.58", 0.02)
    assert faith["smallest_difference_reason"] and "0.72 of the human-human 0.58" in faith["tier_reason"]
    assert (cards["cube.faithfulness"]["tier"], cards["cube.faithfulness"]["evidence"]) == ("descriptive", None)
    assert all({"evidence", "tier", "tier_reason", "smallest_difference", "gate"} <= set(c) for c in cards.values())
    assert cards["cure.ps_delta.cr"]["gate"]["with"] == ["cure.gt", "cure.ita.cr"] and cards["cure.gt"]["gate"] is None


def test_the_evidence_page_rows_list_every_card_by_tier():
    from cultureboard.site.details import evidence_rows

    rows = evidence_rows()
    assert sorted(r["metric"] for r in rows) == sorted(metric_cards())
    assert [tiers.tier_order(r["tier"]) for r in rows] == sorted(tiers.tier_order(r["tier"]) for r in rows)
    faith = next(r for r in rows if r["metric"] == "cultivate.faith")
    assert (faith["tier"], faith["value"], faith["ceiling"], faith["smallest"]) == ("validated", 0.42, 0.58, 0.02)
    assert faith["share"] == pytest.approx(0.42 / 0.58)
    assert rows[0]["tier"] == "validated" and rows[-1]["tier"] == "descriptive"
    gated = {r["metric"]: r["gate"] for r in rows if r["gate"]}
    assert sorted(gated) == sorted([f"cure.ps_delta.{a}{e}" for a in ("c", "cr") for e in ("", ".dinov2", ".aimv2")]
                                   + ["ecb.culture.accuracy_last"])
    assert gated["cure.ps_delta.c"].startswith("ranked only jointly with cure.gt or cure.ita.cr, above the "
                                               "category-images control's: ")
    assert gated["ecb.culture.accuracy_last"].startswith("ranked over the units whose ecb.dreamsim.base at their last "
                                                         "image is above the unedited control's: ")
