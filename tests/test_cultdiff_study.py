"""CultDiff's human study: its layout imported into the common ratings format (every bad row reported at once),
agreement per country (Fleiss' kappa by hand), the similarity score, and each metric's Spearman with it beside
the paper's reported value."""

from __future__ import annotations

import csv
import json

import numpy as np
import pandas as pd
import pytest

from cultureboard.builder import build
from cultureboard.dataset_folder import read_prompt_set
from cultureboard.errors import CultureboardError
from cultureboard.evaluators.families.cultdiff.human import (
    SIMILARITY,
    agreement_by_country,
    import_study,
    metric_validity,
    similarity_rows,
)
from cultureboard.evaluators.results.studies import get_study
from cultureboard.evaluators.results.studies import import_study as run_importer

COLUMNS = ["rater", "rater_country", "prompt_id", "image_sha256", "model", "q1_1", "q1_2", "q1_3", "q1_4", "q2", "q3",
           "comment"]
#: The q3 answers of the two Mexican annotators for the four Mexican prompts (Fleiss' kappa worked by hand below).
MX_Q3 = [(5, 5), (4, 4), (1, 2), (3, 3)]


def sha(k: int) -> str:
    return f"{k:064x}"


@pytest.fixture(scope="module")
def study(tmp_path_factory):
    root = tmp_path_factory.mktemp("cultdiff-study")
    dataset = root / "dataset"
    build(dataset, countries=["ES", "MX"], prompt_sets=["cultdiff"])
    prompts = read_prompt_set(dataset, "cultdiff")
    rows, mx = [], 0
    for k, p in enumerate(prompts):
        for r in (1, 2):
            q1 = [1 + (k + r + j) % 5 for j in range(4)]
            q3 = 3
            if p["country"] == "MX":
                q3 = MX_Q3[mx][r - 1]
            rows.append([f"{p['country'].lower()}{r}", p["country"], p["prompt_id"], sha(k), "tiny", *q1, 4, q3,
                         "ok" if r == 1 else ""])
        mx += p["country"] == "MX"
    path = root / "cultdiff.csv"
    with open(path, "w", newline="") as fh:
        writer = csv.writer(fh)
        writer.writerow(COLUMNS)
        writer.writerows(rows)
    return {"root": root, "dataset": dataset, "prompts": prompts, "path": path,
            "rows": run_importer("cultdiff", path, prompts=prompts)}


def test_the_layout_becomes_common_rows(study):
    rows, prompts = study["rows"], study["prompts"]
    assert get_study("cultdiff").licence is None
    assert len(rows) == len(prompts) * 2 * 6 and set(rows["study"]) == {"cultdiff"}
    assert set(rows["question"]) == {"q1_1", "q1_2", "q1_3", "q1_4", "q2", "q3"} and set(rows["scale"]) == {"likert:1..5"}
    first = rows[(rows.prompt_id == prompts[0]["prompt_id"]) & (rows.rater == f"{prompts[0]['country'].lower()}1")]
    assert first.set_index("question")["value"].to_dict() == {"q1_1": 2, "q1_2": 3, "q1_3": 4, "q1_4": 5, "q2": 4, "q3": 3}
    assert set(first["country"]) == {prompts[0]["country"]} and set(first["category"]) == {prompts[0]["category"]}
    assert first["in_country"].all() and first["comment"].notna().sum() == 1


def test_every_bad_row_is_reported_at_once(study, tmp_path):
    path = tmp_path / "bad.csv"
    good = study["prompts"][0]["prompt_id"]
    with open(path, "w", newline="") as fh:
        writer = csv.writer(fh)
        writer.writerow(COLUMNS)
        writer.writerow(["a", "ES", good, sha(1), "m", 6, 3, 3, 3, 3, 3, ""])
        writer.writerow(["", "ES", good, sha(2), "m", 3, 3, 3, 3, 3, 3, ""])
        writer.writerow(["b", "ES", "cultdiff/nope", "xyz", "m", 3, 3, 3, 3, 3, 3, ""])
    with pytest.raises(CultureboardError) as err:
        run_importer("cultdiff", path, prompts=study["prompts"])
    text = err.value.message
    assert "4 problem(s)" in text and f"{path}:2: q1_1 '6'" in text and f"{path}:3: rater" in text
    assert f"{path}:4: prompt_id 'cultdiff/nope'" in text and f"{path}:4: image_sha256 'xyz'" in text


def test_the_similarity_score_is_each_raters_mean_of_q1(study):
    derived = similarity_rows(study["rows"])
    p = study["prompts"][0]
    mine = derived[(derived.prompt_id == p["prompt_id"]) & (derived.rater == f"{p['country'].lower()}2")]
    assert list(mine["value"]) == [np.mean([3, 4, 5, 1])] and set(derived["question"]) == {SIMILARITY}


def test_agreement_per_country_is_fleiss_kappa_by_hand(study):
    table = agreement_by_country(study["rows"])
    row = next(r for r in table if r["question"] == "q3" and r["by"] == "country" and r["country"] == "MX")
    # P_i = 1, 1, 0, 1 (mean 0.75); category shares 1/8, 1/8, 2/8, 2/8, 2/8 -> P_e = 14/64
    assert row["kappa"] == pytest.approx((0.75 - 14 / 64) / (1 - 14 / 64))
    assert row["n_items"] == 4 and row["n_raters"] == 2
    assert {r["country"] for r in table if r["by"] == "country"} == {"ES", "MX"}
    assert any(r["by"] == "all" and r["question"] == "q1_1" for r in table)


def scores_for(study) -> pd.DataFrame:
    """Per-image scores whose dino value rises and lpips value falls with the human similarity score."""
    humans = similarity_rows(study["rows"]).groupby("image_sha256")["value"].mean()
    rows = []
    for p, (image, human) in zip(study["prompts"], humans.sort_index().items()):
        meta = {"sha256": image, "prompt_id": p["prompt_id"], "sample_idx": 0, "country": p["country"],
                "category": p["category"], "flag": None}
        rows += [{**meta, "metric": "cultdiff.dino", "value": human / 10 + 0.01 * (p["country"] == "ES")},
                 {**meta, "metric": "cultdiff.lpips", "value": 1 - human / 5},
                 {**meta, "metric": "cultdiff.clip", "value": float(int(image, 16) % 3)}]
    return pd.DataFrame(rows)


def test_each_metric_against_the_similarity_score_beside_the_paper(study):
    table = metric_validity(study["rows"], scores_for(study), n_boot=200)
    overall = {r["metric"]: r for r in table if r["slice_type"] == "overall"}
    humans = similarity_rows(study["rows"]).groupby("image_sha256")["value"].mean()
    assert overall["cultdiff.lpips"]["n"] == len(humans)
    assert overall["cultdiff.lpips"]["rho"] == pytest.approx(1.0), "sign-normalised: a distance that falls agrees"
    # CuRe's sign convention: the raw Spearman (the paper's printed sign: LPIPS -0.1352) is sign * rho
    assert (overall["cultdiff.lpips"]["sign"], overall["cultdiff.lpips"]["rho_as_printed"]) == (-1, pytest.approx(-1.0))
    assert overall["cultdiff.dino"]["sign"] == 1 and overall["cultdiff.dino"]["rho_as_printed"] == overall["cultdiff.dino"]["rho"]
    assert overall["cultdiff.clip"]["sign"] == 1, "a descriptive (unranked) metric keeps its raw sign"
    mx = next(r for r in table if r["metric"] == "cultdiff.dino" and r["slice"] == "MX")
    assert mx["rho"] == pytest.approx(1.0) and mx["diagnostic"] and "too few" in mx["reason"]
    assert overall["cultdiff.lpips"]["reported"]["value"] == -0.1352
    assert overall["cultdiff.dino"]["reported"]["value"] == 0.51 and overall["cultdiff.clip"]["reported"] is None


def test_the_study_folder(study, tmp_path):
    scores = tmp_path / "scores.parquet"
    scores_for(study).to_parquet(scores)
    done = import_study(study["path"], study["dataset"], tmp_path / "ratings", scores=scores, n_boot=100)
    assert done["files"] == ["agreement.json", "consensus.parquet", "ratings.parquet", "validity.json"]
    assert done["images"] == len(study["prompts"]) and done["annotators"] == 4
    validity = json.loads((tmp_path / "ratings" / "validity.json").read_text())
    assert {r["metric"] for r in validity["validity"]} == {"cultdiff.dino", "cultdiff.lpips", "cultdiff.clip"}
    consensus = pd.read_parquet(tmp_path / "ratings" / "consensus.parquet")
    assert len(consensus) == len(study["prompts"]) and (consensus["annotators"] == 2).all()
    assert import_study(study["path"], study["dataset"], tmp_path / "ratings")["files"][0] == "agreement.json"
