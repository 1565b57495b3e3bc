"""Language parity (issue 26): native-variant prompt sets scored with the English text, and each metric's
native-minus-English gap with a paired bootstrap CI, a test against 0 and Benjamini-Hochberg across countries.

The gaps are checked on a toy family whose value is an image's brightness (grey images, so every value is known
by hand) and whose second metric reads the prompt's text (so a native row scored with its own text shows); then
on cube-awareness-native with the tiny scorers (a native image's faithfulness is its similarity to the English
text, recomputed through the same cache)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from PIL import Image as PILImage

from cultureboard.builder.dataset import prompt_config, write_dataset
from cultureboard.builder.prompt_sets import PromptSet
from cultureboard.dataset_folder import local_revision
from cultureboard.evaluators import evaluate
from cultureboard.evaluators.engine.evaluate import merge_shards
from cultureboard.evaluators.engine.context import score_row
from cultureboard.evaluators.engine.parity import (ENGLISH_REFUSED, PAIR_UNIT, SCORER_TEXT, native_variant, pair_rows,
                                                   parity_card)
from cultureboard.evaluators.engine.registry import Family, MetricCard, PromptSetSpec, family_of, register, unregister
from cultureboard.evaluators.results.aggregate import NO_SPREAD
from cultureboard.evaluators.results.stats import benjamini_hochberg, bootstrap_ci, cluster_bootstrap_ci, paired_test
from cultureboard.evaluators.submission.format import submission_id, write_submission
from cultureboard.provenance import file_sha256

N_BOOT = 200


# ------------------------------------------------------------------------------------------------ pair rows


def _prompt(pid: str, country: str, language: str, source: str | None = None) -> dict:
    return {"prompt_id": pid, "country": country, "language": language, "translation_of": source,
            "images_per_prompt": 2, "text": pid}


def _row(metric: str, pid: str, k: int, value: float | None, flag: str | None = None) -> dict:
    return {"metric": metric, "prompt_id": pid, "sample_idx": k, "value": value, "flag": flag}


def test_each_native_prompt_gets_its_mean_minus_its_english_rows_mean():
    prompts = {p["prompt_id"]: p for p in (_prompt("e1", "NG", "en"), _prompt("y1", "NG", "yo", "e1"),
                                           _prompt("h1", "NG", "ha", "e1"), _prompt("e2", "NG", "en"),
                                           _prompt("y2", "NG", "yo", "e2"))}
    rows = [_row("m", "e1", 0, 0.5), _row("m", "e1", 1, 0.7),  # English mean 0.6
            _row("m", "y1", 0, 0.2), _row("m", "y1", 1, 0.3),  # Yoruba mean 0.25: gap -0.35
            _row("m", "h1", 0, 0.9), _row("m", "h1", 1, None, flag="unreadable"),  # Hausa: the scored image, 0.9
            _row("m", "e2", 0, 0.1), _row("m", "e2", 1, 0.1),
            _row("m", "y2", 0, None, flag="unreadable"), _row("m", "y2", 1, None, flag="unreadable")]
    out = {r["unit_id"]: r for r in pair_rows(rows, prompts, [], ["m"])}
    assert sorted(out) == ["h1", "y1", "y2"] and {r["metric"] for r in out.values()} == {"m.parity"}
    assert out["y1"]["value"] == pytest.approx(0.25 - 0.6) and out["h1"]["value"] == pytest.approx(0.9 - 0.6)
    assert json.loads(out["y1"]["detail"])["images"] == 4 and out["y1"]["slices"]["language"] == "yo"
    # a side with no scored image is a flagged row saying which, with that side's flags
    assert out["y2"]["value"] is None and out["y2"]["flag"] == "no m score for the native prompt"
    assert json.loads(out["y2"]["detail"])["flags"] == {"native": {"unreadable": 2}, "English": {}}


def test_each_side_is_the_mean_of_its_images_not_another_reduction():
    """Three images a side where mean, median, maximum and minimum all differ (English 0.1, 0.2, 0.9: 0.4, 0.2, 0.9,
    0.1; native 0.3, 0.4, 1.0: 0.567, 0.4, 1.0, 0.3): the gap is the means' difference, 1/6, and not the medians'
    (0.2), the maxima's (0.1) or the minima's (0.2)."""
    prompts = {"e1": {**_prompt("e1", "NG", "en"), "images_per_prompt": 3},
               "y1": {**_prompt("y1", "NG", "yo", "e1"), "images_per_prompt": 3}}
    rows = [_row("m", "e1", k, v) for k, v in enumerate([0.9, 0.1, 0.2])]
    rows += [_row("m", "y1", k, v) for k, v in enumerate([0.4, 1.0, 0.3])]
    (gap,) = pair_rows(rows, prompts, [], ["m"])
    assert gap["value"] == pytest.approx(1.7 / 3 - 0.4) and gap["value"] not in (pytest.approx(0.2), pytest.approx(0.1))
    assert json.loads(gap["detail"])["native"] == pytest.approx(1.7 / 3)


def test_a_refused_native_prompt_has_no_row_and_a_refused_english_prompt_flags_its_pairs():
    prompts = {p["prompt_id"]: p for p in (_prompt("e1", "NG", "en"), _prompt("y1", "NG", "yo", "e1"),
                                           _prompt("e2", "NG", "en"), _prompt("y2", "NG", "yo", "e2"))}
    rows = [_row("m", "e1", 0, 0.5), _row("m", "e1", 1, 0.5), _row("m", "y2", 0, 0.4), _row("m", "y2", 1, 0.4)]
    refused = [{"prompt_id": pid, "sample_idx": k} for pid in ("y1", "e2") for k in (0, 1)]
    out = pair_rows(rows, prompts, refused, ["m"])
    assert [(r["unit_id"], r["value"], r["flag"]) for r in out] == [("y2", None, ENGLISH_REFUSED)]
    # one image of two refused is not a refusal of the prompt: the other image is its score
    partly = pair_rows(rows + [_row("m", "y1", 1, 0.8)], prompts, refused[1:], ["m"])
    assert [(r["unit_id"], round(r["value"], 9)) for r in partly if r["flag"] is None] == [("y1", 0.3)]


def test_a_native_row_whose_english_row_is_missing_is_one_error_line():
    from cultureboard.errors import CultureboardError
    from cultureboard.evaluators.engine.context import Context
    from cultureboard.evaluators.engine.parity import in_english

    ctx = Context([], {"y1": _prompt("y1", "NG", "yo", "e9")}, Path("dataset"), None, None)
    with pytest.raises(CultureboardError, match="prompt y1 translates e9, which is not in its prompt set"):
        in_english(ctx)


def test_a_gap_card_targets_zero_says_whose_measure_it_is_and_versions_with_its_base():
    base = MetricCard("lingo.x", "lingo", "X", "x", "higher", "[0, 1]", ("s",), "a paper", version=3,
                      direction_evidence="a test")
    card = parity_card(base)
    assert (card.name, card.direction, card.target, card.unit, card.version) == ("lingo.x.parity", "target", 0.0,
                                                                                 PAIR_UNIT, 302)
    assert card.cluster == "translation_of" and card.bounded is None  # pairs of one English row resample together
    share = MetricCard("lingo.hit", "lingo", "Hit", "0/1", "higher", "{0, 1}", ("s",), "a paper", version=1,
                       direction_evidence="a test", bounded=(0.0, 1.0))
    assert parity_card(share).bounded == (-1.0, 1.0)  # a gap of a share lies in [-1, 1]
    assert "project's own measure" in card.direction_evidence and "English" in card.description
    with pytest.raises(ValueError, match="one row per image"):
        parity_card(MetricCard("lingo.p", "lingo", "P", "p", "higher", "[0, 1]", (), "a paper", version=1,
                               unit="pool", direction_evidence="a test"))


def test_the_native_sets_are_registered_with_a_gap_per_metric_and_a_language_slice():
    for name, base in (("cube-awareness-native", "cube-awareness"), ("cultdiff-native", "cultdiff")):
        family, spec = family_of(name)
        _, base_spec = family_of(base)
        assert spec.metrics == base_spec.metrics + tuple(f"{m}.parity" for m in base_spec.metrics)
        assert "language" in spec.slice_fields and spec.cross_slices == base_spec.cross_slices
        assert family.primary(name) == family.primary(base)
        assert all(family.card(f"{m}.parity").direction == "target" for m in base_spec.metrics)
    _, spec = family_of("cube-awareness-native")
    assert spec.shard_unit({"prompt_id": "y1", "translation_of": "e1"}) == spec.shard_unit({"prompt_id": "e1"})


def test_the_paired_test_gives_bootstrap_ci_and_the_exact_sign_flip_p():
    """Four differences all above 0: of the 2^4 sign flips only the two with one sign for all reach |mean| >= the
    observed mean (flipping 0.1 alone gives 0.1625 < 0.2125), so p -> 2/16 (random flips: sd 0.005 at B = 4000);
    the interval is bootstrap_ci's (same draws); differences at the null, or a single pair, leave nothing to test."""
    diffs = [[0.1], [0.3], [0.2], [0.25]]
    ci, p = paired_test(diffs, 0.0, n_boot=4000, seed=4)
    assert p == pytest.approx(2 / 16, abs=0.03) and ci == bootstrap_ci(diffs, n_boot=4000, seed=4)
    assert paired_test(diffs, 0.2125, n_boot=4000, seed=4)[1] > 0.95  # centred on the null: every flip is as large
    assert paired_test([[0.1], [0.5], [-0.4]], 0.0, n_boot=999, seed=4)[1] > 0.5  # about centred on 0
    assert paired_test([[0.2], [0.2]], 0.2, n_boot=99)[1] is None and paired_test([[0.2]], 0.0, n_boot=99)[1] is None


# ------------------------------------------------------------------------------------------- a toy family


@dataclass(frozen=True)
class NoOptions:
    pass


def _score(ctx) -> list[dict]:
    rows = []
    for im in ctx.images:
        rows.append(score_row("lingo.brightness", float(np.asarray(PILImage.open(im.path)).mean() / 255), im))
        rows.append(score_row("lingo.letters", float(len(im.prompt["text"])), im))
    return rows


BASE = PromptSetSpec("lingo", _score, ("lingo.brightness", "lingo.letters"), shard_unit=lambda p: p["prompt_id"])
CARDS = (MetricCard("lingo.brightness", "lingo", "Brightness", "mean pixel / 255", "higher", "[0, 1]", (), "tests",
                    version=1, primary=True, direction_evidence="a test family"),
         MetricCard("lingo.letters", "lingo", "Letters", "len(text)", "none", "[0, inf)", (), "tests", version=1))
NATIVE, GAPS = native_variant(BASE, {c.name: c for c in CARDS})
LINGO = Family("lingo", "Lingo", "A toy family for these tests.", {}, (BASE, NATIVE), CARDS + GAPS, NoOptions)

#: (country, English text, native rows (language, text)); three artifacts a country
WORDS = {"ES": [("es", "un plato de España")], "NG": [("yo", "oúnjẹ ti Nàìjíríà"), ("ha", "abincin Najeriya")]}
#: each image, two a prompt: grey, or (left half, right half) grey levels (no two images alike: a submission may not
#: answer two prompts with one image). English rows vary from artifact to artifact, their translations follow them
#: closely (Spanish a little brighter, Yoruba darker, Hausa just as bright), so the paired gaps are tight
GREYS = {("ES", "en"): [(20, 40), (120, 140), (200, 220)], ("ES", "es"): [(30, 50), (123, 143), (209, 229)],
         ("NG", "en"): [(60, 64), (150, 170), (230, 250)], ("NG", "yo"): [(52, 56), (142, 154), (210, 234)],
         ("NG", "ha"): [((59, 61), (63, 65)), ((149, 151), (169, 171)), None]}  # None: refused (both images)


def _mean(level) -> float:
    return sum(level) / 2 if isinstance(level, tuple) else level


def _rows(prompt_set: str = "lingo-native") -> list[dict]:
    rows = []
    for country, natives in WORDS.items():
        for k in range(3):
            english = f"{prompt_set}/{country}/{k}/en"
            common = {"prompt_set": prompt_set, "country": country, "kind": "t2i", "images_per_prompt": 2,
                      "seeds": [0, 1], "seed_scheme": "consecutive", "category": "cuisine",
                      "continent": "Europe" if country == "ES" else "Africa",
                      "region_group": "GN" if country == "ES" else "GS", "artifact_id": f"{country}{k}"}
            rows.append({**common, "prompt_id": english, "text": f"a dish from {country} number {k}",
                         "language": "en"})
            rows += [{**common, "prompt_id": f"{prompt_set}/{country}/{k}/{lang}", "text": f"{text} {k}",
                      "language": lang, "translation_of": english, "translation_check": 0.9,
                      "translation_source": "override"} for lang, text in natives]
    return rows


def _spec(dataset: Path, prompt_set: str) -> dict:
    return {"format_version": 1, "organization": "lab", "contact": "lab@example.org", "date": "2026-01-15",
            "model": {"name": "m", "id": "lab/m", "revision": "0" * 40, "license": "mit", "weights": "open"},
            "generation": {"pipeline": "StableDiffusionPipeline", "scheduler": "DDIMScheduler", "steps": 2,
                           "guidance_scale": 7.5, "width": 64, "height": 64, "negative_prompt": False,
                           "precision": "fp32"},
            "seeds": {"scheme": "prompt-set"},
            "prompt_set": {"name": prompt_set, "dataset": dataset.name, "revision": local_revision(dataset)},
            "images": {"location": "images"}}


def _submission(parent: Path, dataset: Path, greys: dict, prompt_set: str = "lingo-native") -> Path:
    spec = _spec(dataset, prompt_set)
    out = parent / submission_id(spec)
    lines = []
    for p in _rows(prompt_set):
        k = int(p["prompt_id"].split("/")[2])
        levels = greys[p["country"], p["language"]][k]
        for s in range(2):
            if levels is None:
                lines.append({"prompt_id": p["prompt_id"], "sample_idx": s, "seed": s, "refused": True,
                              "reason": "safety filter"})
                continue
            rel = f"images/{p['prompt_id'].replace('/', '_')}/{s}.png"
            (out / rel).parent.mkdir(parents=True, exist_ok=True)
            left, right = levels[s] if isinstance(levels[s], tuple) else (levels[s], levels[s])
            pixels = np.full((64, 64, 3), left, dtype=np.uint8)
            pixels[:, 32:] = right
            PILImage.fromarray(pixels).save(out / rel)
            lines.append({"file_name": rel, "prompt_id": p["prompt_id"], "sample_idx": s, "seed": s,
                          "sha256": file_sha256(out / rel)})
    write_submission(out, spec, lines)
    return out


@pytest.fixture(scope="module")
def lingo_results(tmp_path_factory):
    """(summary entries by (metric, slice type, slice), scores, provenance, (root, dataset, submission)) of the toy
    submission."""
    register(LINGO)
    try:
        root = tmp_path_factory.mktemp("lingo")
        config = prompt_config(PromptSet("lingo-native", "1", "lingo", "toy", _rows()))
        dataset = write_dataset(root / "dataset", [config], {})
        folder = _submission(root / "submissions", dataset, GREYS)
        out = evaluate(folder, dataset, root / "results", device="cpu", n_boot=N_BOOT, cache=root / "cache")
        summary = json.loads((out / "summary.json").read_text())
        scores = pd.read_parquet(out / "scores.parquet")
        entries = {(e["metric"], e["slice_type"], e["slice"]): e for e in summary["metrics"]}
        yield entries, scores, summary["provenance"], (root, dataset, folder)
    finally:
        unregister("lingo")


def _gaps(country: str, lang: str) -> list[float]:
    """Hand-computed gaps of the pairs of ``country`` in ``lang``, in prompt id order (refused pairs left out)."""
    english = GREYS[country, "en"]
    return [(sum(map(_mean, n)) - sum(map(_mean, e))) / 2 / 255
            for n, e in zip(GREYS[country, lang], english) if n is not None]


def test_the_gap_is_native_minus_english_per_country_and_language(lingo_results):
    entries, *_ = lingo_results
    es, yo, ha = _gaps("ES", "es"), _gaps("NG", "yo"), _gaps("NG", "ha")
    assert es == pytest.approx([10 / 255, 3 / 255, 9 / 255]) and ha == [0.0, 0.0]  # brighter in Spanish
    assert yo == pytest.approx([-8 / 255, -12 / 255, -18 / 255])  # darker in Yoruba
    for key, gaps in ((("language", "es"), es), (("language", "yo"), yo), (("language", "ha"), ha),
                      (("country", "ES"), es), (("country", "NG"), yo + ha), (("overall", "all"), es + yo + ha)):
        e = entries["lingo.brightness.parity", *key]
        assert e["value"] == pytest.approx(np.mean(gaps)) and e["n_prompts"] == len(gaps), key
    assert entries["lingo.brightness.parity", "language", "es"]["value"] > 0  # the sign: native minus English


def test_the_ci_is_the_paired_bootstrap_over_pairs(lingo_results):
    """The CI resamples pairs (each with both sides): the interval of the pairs' differences. The English rows
    range over most of [0, 1] while each translation follows its row within 0.05, so a bootstrap that resampled the
    two languages apart would give an interval wider than 0.3; the paired one is narrower than 0.06."""
    entries, *_ = lingo_results
    e = entries["lingo.brightness.parity", "language", "yo"]
    english = [f"lingo-native/NG/{k}/en" for k in range(3)]  # one Yoruba pair per English row: clusters of one
    ci = cluster_bootstrap_ci([[g] for g in _gaps("NG", "yo")], english, n_boot=N_BOOT, seed=0)
    assert (e["ci_low"], e["ci_high"]) == pytest.approx((ci.low, ci.high))
    assert e["ci_high"] - e["ci_low"] < 0.06 and e["ci_high"] < 0  # Yoruba is darker, and the CI says so


def test_the_pairs_of_one_english_row_are_resampled_together(lingo_results):
    """Nigeria's Hausa and Yoruba rows of artifact k translate one English row: the country's CI is the two-stage
    bootstrap over the English rows (then their pairs), not the bootstrap over the five pairs as if independent."""
    entries, *_ = lingo_results
    e = entries["lingo.brightness.parity", "country", "NG"]
    yo, ha = _gaps("NG", "yo"), _gaps("NG", "ha")
    gaps = [ha[0], yo[0], ha[1], yo[1], yo[2]]  # units in prompt-id order: .../NG/<k>/<language>
    english = [f"lingo-native/NG/{k}/en" for k in (0, 0, 1, 1, 2)]
    clustered = cluster_bootstrap_ci([[g] for g in gaps], english, n_boot=N_BOOT, seed=0)
    naive = bootstrap_ci([[g] for g in gaps], n_boot=N_BOOT, seed=0)
    assert (e["ci_low"], e["ci_high"]) == pytest.approx((clustered.low, clustered.high))
    assert (e["ci_low"], e["ci_high"]) != pytest.approx((naive.low, naive.high))
    assert e["p"] == pytest.approx(paired_test([[g] for g in gaps], 0.0, n_boot=N_BOOT, seed=0, clusters=english)[1])


def test_clustering_pairs_by_their_english_row_widens_a_gap_they_share():
    """A toy where clustering matters: three languages translate each of four English rows, and the gap of every
    pair is its English row's offset (the English image, shared by the three, carries the noise). The pairs look
    like 12 draws but are 4: the clustered interval is much wider (about the spread of 4 values, not of 12), and
    the clustered sign flip sees 4 units: of the 2^4 flips 2 are as extreme (p -> 1/8), where 12 independent
    pairs would give p near 2/2^12."""
    offsets = [0.1, 0.3, 0.2, 0.25]
    gaps = [[o] for o in offsets for _ in range(3)]
    english = [k for k in range(4) for _ in range(3)]
    naive = bootstrap_ci(gaps, n_boot=4000, seed=2)
    clustered = cluster_bootstrap_ci(gaps, english, n_boot=4000, seed=2)
    assert clustered.value == naive.value == pytest.approx(0.2125)
    assert (clustered.high - clustered.low) > 1.5 * (naive.high - naive.low)
    ci, p = paired_test(gaps, 0.0, n_boot=4000, seed=2, clusters=english)
    assert ci == clustered and p == pytest.approx(2 / 16, abs=0.03)
    assert paired_test(gaps, 0.0, n_boot=4000, seed=2)[1] < 0.01  # unclustered: overclaimed


def test_country_gaps_are_tested_against_zero_and_adjusted_across_countries(lingo_results):
    entries, *_ = lingo_results
    es, ng = entries["lingo.brightness.parity", "country", "ES"], entries["lingo.brightness.parity", "country", "NG"]
    yo, ha = _gaps("NG", "yo"), _gaps("NG", "ha")
    in_id_order = [ha[0], yo[0], ha[1], yo[1], yo[2]]  # the units' order: prompt ids .../NG/<k>/<language>
    for e, gaps, english in ((es, _gaps("ES", "es"), [0, 1, 2]), (ng, in_id_order, [0, 0, 1, 1, 2])):
        clusters = [f"lingo-native/{e['slice']}/{k}/en" for k in english]  # signs flip per English row
        assert e["p"] == pytest.approx(paired_test([[g] for g in gaps], 0.0, n_boot=N_BOOT, seed=0,
                                                   clusters=clusters)[1])
    # Benjamini-Hochberg over the two countries: the larger p stays, the smaller doubles (capped by the larger)
    small, large = sorted([es["p"], ng["p"]])
    assert sorted([es["p_adjusted"], ng["p_adjusted"]]) == pytest.approx([min(2 * small, large), large])
    assert [es["p_adjusted"], ng["p_adjusted"]] == pytest.approx(list(benjamini_hochberg([es["p"], ng["p"]])))
    # every Spanish pair is brighter, but there are 3: only 2 of the 2^3 sign flips are as extreme, p -> 1/4 (random
    # flips at B = 200: sd 0.03); three pairs can never make a gap significant, however large
    assert len(_gaps("ES", "es")) == 3 and es["p"] == pytest.approx(0.25, abs=0.1)
    # Hausa's gaps are all 0: nothing varies, so nothing is tested; its untested p does not count in BH
    ha = entries["lingo.brightness.parity", "language", "ha"]
    assert ha["p"] is None and ha["p_adjusted"] is None
    # and its bootstrap collapses to [0, 0]: two pairs that agree are not certainty, so it has no CI at all
    assert ha["ci_low"] is None and ha["ci_high"] is None and ha["ci_note"] == NO_SPREAD
    assert "p" not in entries["lingo.brightness", "overall", "all"]  # only the gaps are tested


def test_native_rows_are_scored_with_their_english_text(lingo_results):
    """lingo.letters counts the text the scorer reads: the English text for a native row, so every gap is 0, while
    the texts themselves differ in length."""
    entries, scores, provenance, _ = lingo_results
    assert entries["lingo.letters.parity", "overall", "all"]["value"] == 0.0
    letters = scores[(scores["metric"] == "lingo.letters") & (scores["language"] == "yo")]
    assert set(letters["value"]) == {len("a dish from NG number 0")}
    assert len("oúnjẹ ti Nàìjíríà 0") != len("a dish from NG number 0")
    assert provenance["notes"]["lingo.letters"]["scorer_text"] == SCORER_TEXT


def test_refusals_are_counted_per_language(lingo_results):
    """The model refused the third Hausa prompt (both images): no gap row, counted refused in Hausa's slice and in
    the gap's per-language counts."""
    entries, scores, provenance, _ = lingo_results
    assert entries["lingo.brightness.parity", "language", "ha"]["n_refused"] == 1
    assert entries["lingo.brightness.parity", "language", "ha"]["coverage"] == pytest.approx(2 / 3)
    assert entries["lingo.brightness.parity", "language", "yo"]["n_refused"] == 0
    counts = provenance["notes"]["lingo.brightness.parity"]["counts"]
    assert counts == {"es English refused": 0, "es pairs": 3, "es refused": 0, "ha English refused": 0,
                      "ha pairs": 3, "ha refused": 1, "yo English refused": 0, "yo pairs": 3, "yo refused": 0}
    assert entries["lingo.brightness", "language", "ha"]["n_refused"] == 1  # the base metric counts it too


def test_sharded_runs_merge_into_the_unsharded_gaps(lingo_results):
    """An English prompt and its translations are one shard unit, so every gap is computed within one shard and the
    per-language counts add up: merged shards give exactly the unsharded summary."""
    entries, _, provenance, (root, dataset, folder) = lingo_results
    for i in range(2):
        evaluate(folder, dataset, root / "sharded", shard=(i, 2), device="cpu", n_boot=N_BOOT, cache=root / "cache")
    merged = json.loads((merge_shards(root / "sharded", folder.name, dataset) / "summary.json").read_text())
    assert {(e["metric"], e["slice_type"], e["slice"]): e for e in merged["metrics"]} == entries
    assert merged["provenance"]["notes"] == provenance["notes"]


# ------------------------------------------------------------------------------------ cube-awareness-native


def test_cube_awareness_native_scores_native_images_against_the_english_text(tmp_path, tiny_scorers):
    """cube.faithfulness of a native image is cos(image, English text) by the alignment scorer (recomputed here
    through the same cache), not cos(image, its own text); the gaps are the per-pair differences of those."""
    from cultureboard.device import choose_dtype
    from cultureboard.evaluators.engine.cache import Cache
    from cultureboard.evaluators.engine.context import Context, Image
    from cultureboard.evaluators.engine.scorers import Scorers
    from cultureboard.evaluators.families.cube import ALIGNMENT

    rows = _rows("cube-awareness-native")
    dataset = write_dataset(tmp_path / "dataset", [prompt_config(PromptSet("cube-awareness-native", "1", "cube",
                                                                           "toy", rows))], {})
    folder = _submission(tmp_path / "subs", dataset, GREYS, "cube-awareness-native")
    out = evaluate(folder, dataset, tmp_path / "results", scorers=tiny_scorers, device="cpu", n_boot=50,
                   cache=tmp_path / "cache")
    scores = pd.read_parquet(out / "scores.parquet")
    faith = scores[scores["metric"] == "cube.faithfulness"].set_index("file_name")["value"]
    prompts = {r["prompt_id"]: r for r in rows}
    yo = [r for r in rows if r["language"] == "yo"]
    images = [Image(f, folder / f, file_sha256(folder / f), p["prompt_id"], 0, p)
              for p in yo for f in [f"images/{p['prompt_id'].replace('/', '_')}/0.png"]]
    ctx = Context(images, prompts, dataset, Cache(tmp_path / "cache"), Scorers(tiny_scorers, "cpu", choose_dtype("cpu", None)))
    vectors = ctx.image_embeddings(ALIGNMENT)
    english = ctx.text_embeddings(ALIGNMENT, [prompts[p["translation_of"]]["text"] for p in yo])
    native = ctx.text_embeddings(ALIGNMENT, [p["text"] for p in yo])
    for im in images:
        expected = float(vectors[im.sha256] @ english[prompts[im.prompt["translation_of"]]["text"]])
        assert faith[im.file_name] == pytest.approx(expected, abs=1e-6)
        assert faith[im.file_name] != pytest.approx(float(vectors[im.sha256] @ native[im.prompt["text"]]), abs=1e-6)
    gaps = scores[scores["metric"] == "cube.faithfulness.parity"].set_index("unit_id")["value"]
    means = scores[scores["metric"] == "cube.faithfulness"].groupby("prompt_id")["value"].mean()
    for p in yo:
        assert gaps[p["prompt_id"]] == pytest.approx(means[p["prompt_id"]] - means[p["translation_of"]])


def test_cultdiff_native_gaps_are_the_differences_of_each_pairs_similarities(tmp_path, tiny_scorers):
    """cultdiff-native compares every image with its artifact's photographs as cultdiff does; each gap is the
    native image's value minus its English original's, and a pair whose artifact has no photograph is a flagged
    gap row, counted, never a value."""
    import pyarrow.parquet as pq

    from cultureboard.builder import build
    from cultureboard.builder.dataset import shard_path
    from cultureboard.builder.references import synthetic_references
    from cultureboard.dataset_folder import read_prompt_set
    from cultureboard.records import PROMPT_SCHEMA, table_from_rows
    from test_cultdiff import scorer_config

    dataset = tmp_path / "dataset"
    build(dataset, countries=["ES"], prompt_sets=["cultdiff"])
    rows = []
    for p in read_prompt_set(dataset, "cultdiff")[:4]:
        english = {**p, "prompt_set": "cultdiff-native", "prompt_id": f"{p['prompt_id']}/en", "language": "en",
                   "images_per_prompt": 1, "seeds": p["seeds"][:1]}
        rows += [english, {**english, "prompt_id": f"{p['prompt_id']}/es", "text": f"una foto: {p['artifact_name']}",
                           "language": "es", "translation_of": english["prompt_id"], "translation_check": 1.0,
                           "translation_source": "override"}]
    (dataset / shard_path("cultdiff-native")).parent.mkdir(parents=True)
    pq.write_table(table_from_rows(rows, PROMPT_SCHEMA), dataset / shard_path("cultdiff-native"))
    bare = rows[-1]["artifact_id"]
    synthetic_references(dataset, qids=sorted({r["artifact_id"] for r in rows} - {bare}), size=64)
    folder = tmp_path / "subs" / "lab__m"
    rng = np.random.default_rng(3)
    lines = []
    for r in rows:
        rel = f"images/{r['prompt_id'].replace('/', '_')}.png"
        (folder / rel).parent.mkdir(parents=True, exist_ok=True)
        PILImage.fromarray(rng.integers(0, 256, (64, 64, 3), dtype=np.uint8)).save(folder / rel)
        lines.append({"file_name": rel, "prompt_id": r["prompt_id"], "sample_idx": 0, "seed": r["seeds"][0],
                      "sha256": file_sha256(folder / rel)})
    spec = _spec(dataset, "cultdiff-native")
    write_submission(folder, spec, lines)
    out = evaluate(folder, dataset, tmp_path / "results", scorers=scorer_config(tiny_scorers, tmp_path),
                   device="cpu", n_boot=50, cache=tmp_path / "cache")
    scores = pd.read_parquet(out / "scores.parquet")
    for metric in ("cultdiff.dino", "cultdiff.lpips", "cultdiff.ssim"):
        values = scores[scores["metric"] == metric].set_index("prompt_id")["value"]
        gaps = scores[scores["metric"] == f"{metric}.parity"].set_index("unit_id")
        for r in rows[1:-2:2]:  # the native rows of the artifacts with photographs
            assert gaps.loc[r["prompt_id"], "value"] == pytest.approx(values[r["prompt_id"]]
                                                                      - values[r["translation_of"]])
        assert gaps.loc[rows[-1]["prompt_id"], "flag"] == f"no {metric} score for the native or English prompt"
    summary = json.loads((out / "summary.json").read_text())
    overall = next(e for e in summary["metrics"] if (e["metric"], e["slice_type"]) == ("cultdiff.dino.parity",
                                                                                      "overall"))
    assert overall["n_prompts"] == 3 and overall["n_flagged"] == 1 and overall["coverage"] == pytest.approx(3 / 4)
