"""The CultDiff family: its maths on hand-computed values, and end to end on tiny stand-in scorers (values recomputed
from the scorers' own outputs; an image identical to a reference scores each similarity's maximum and LPIPS /
DreamSim 0; images without references are flagged and counted), its leaderboard tables, and the synthetic
references it scores against in tests and the demo."""

from __future__ import annotations

import hashlib
import io
import json
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest
import yaml
from PIL import Image
from submission_factory import evaluate_allowing_copies

from cultureboard.builder import build
from cultureboard.builder.references import synthetic_references
from cultureboard.dataset_folder import local_revision, read_prompt_set, references_revision
from cultureboard.errors import CultureboardError
from cultureboard.evaluators import evaluate
from cultureboard.evaluators.engine.pairwise import SquareResize
from cultureboard.evaluators.engine.scorers import load_scorer
from cultureboard.evaluators.families.cultdiff import core
from cultureboard.evaluators.families.cultdiff.leaderboard import country_category, underrepresented
from cultureboard.evaluators.families.cultdiff.train import read_references
from cultureboard.evaluators.submission import validate as validate_module
from cultureboard.evaluators.submission.format import write_submission

SIDE = 64
PHOTOS = 5  # CultDiff's count: 5 candidate photographs per artifact, of which K = 3 are compared
METRICS = ("cultdiff.dino", "cultdiff.clip", "cultdiff.lpips", "cultdiff.dreamsim", "cultdiff.ssim", "cultdiff.learned")


# ------------------------------------------------------------------------------------------ core

def test_cosines_and_reductions_by_hand():
    image = np.array([0.6, 0.8])
    refs = np.array([[1.0, 0.0], [0.0, 1.0], [0.6, 0.8]])
    np.testing.assert_allclose(core.cosines(image, refs), [0.6, 0.8, 1.0])
    assert core.reduce_references([0.6, 0.8, 1.0], "mean") == pytest.approx(0.8)
    assert core.reduce_references([0.6, 0.8, 1.0], "best") == 1.0
    assert core.reduce_references([0.2, 0.05, 0.4], "best", higher_is_better=False) == 0.05
    assert core.reduce_references([0.1, 0.2, 0.9], "mean") == pytest.approx(0.4), "the mean, not the median (0.2)"
    with pytest.raises(ValueError):
        core.reduce_references([], "mean")
    with pytest.raises(ValueError):
        core.reduce_references([1.0], "median")


def test_ssim_by_hand():
    flat_a, flat_b = np.full((16, 16), 100.0), np.full((16, 16), 150.0)
    c1 = (0.01 * 255) ** 2
    assert core.ssim(flat_a, flat_b) == pytest.approx((2 * 100 * 150 + c1) / (100**2 + 150**2 + c1))
    rng = np.random.default_rng(0)
    x = rng.uniform(0, 255, (32, 32))
    assert core.ssim(x, x) == 1.0
    noisy = [np.clip(x + rng.normal(0, s, x.shape), 0, 255) for s in (5, 20, 60)]
    values = [core.ssim(x, n) for n in noisy]
    assert values[0] > values[1] > values[2] and core.ssim(x, noisy[1]) == pytest.approx(core.ssim(noisy[1], x))
    assert core.ssim(x, 255 - x) < 0  # anti-correlated structure
    np.testing.assert_allclose(core.luma(np.array([[[255, 0, 0], [0, 0, 255]]])), [[0.299 * 255, 0.114 * 255]])
    with pytest.raises(ValueError):
        core.ssim(np.zeros((8, 8)), np.zeros((8, 8)))


def test_ssim_of_one_textured_window_by_hand():
    """An 11 x 11 image has one window position: SSIM is the formula on the Gaussian-weighted (sigma 1.5) means,
    variances and covariance, written out here as weighted sums; textured images, so C2 (K2 = 0.03) matters."""
    rng = np.random.default_rng(3)
    x = rng.uniform(0, 255, (11, 11))
    y = np.clip(0.6 * x + rng.normal(40, 30, x.shape), 0, 255)
    g = np.exp(-((np.arange(11) - 5.0) ** 2) / (2 * 1.5**2))
    w = np.outer(g, g) / np.outer(g, g).sum()
    mx, my = (w * x).sum(), (w * y).sum()
    vx, vy, cxy = (w * x * x).sum() - mx**2, (w * y * y).sum() - my**2, (w * x * y).sum() - mx * my
    c1, c2 = (0.01 * 255) ** 2, (0.03 * 255) ** 2
    expected = (2 * mx * my + c1) * (2 * cxy + c2) / ((mx**2 + my**2 + c1) * (vx + vy + c2))
    assert core.ssim(x, y) == pytest.approx(expected, rel=1e-9)
    assert 0.1 < expected < 0.9, "a value where every term counts"


def test_labels_weights_and_the_loss_by_hand():
    assert core.similarity_score([5, 4, 3, 2]) == 3.5
    assert core.similarity_score([1, 2, 5]) == pytest.approx(8 / 3)  # median 2, max 5, min 1: the mean only
    assert core.pair_label(3.0) == 1 and core.pair_label(2.99) == 0
    assert core.pair_weight(1) == 0 and core.pair_weight(5) == 1 and core.pair_weight(3.5) == 0.625
    with pytest.raises(ValueError):
        core.similarity_score([0, 3])
    d, y, w = np.array([0.5, 0.2, 1.5]), np.array([1.0, 0.0, 0.0]), np.array([0.5, 1.0, 2.0])
    # positive 0.5 * 0.25; negative inside the margin 1.0 * (1 - 0.2)^2; negative beyond it: 0
    assert core.weighted_contrastive_loss(d, y, w, 1.0) == pytest.approx((0.125 + 0.64 + 0.0) / 3)
    assert core.weighted_contrastive_loss(d, y, 3 * w, 1.0) == pytest.approx(3 * (0.125 + 0.64) / 3)
    assert core.weighted_contrastive_loss(np.array([0.0, 2.0]), np.array([1.0, 0.0]), np.ones(2), 1.0) == 0
    assert core.weighted_contrastive_loss(d, y, np.array([0.0, 1.0, 2.0]), 1.0) == pytest.approx(0.64 / 3)


def test_the_loss_gradient_pulls_positives_together_and_pushes_negatives_apart():
    import torch

    a = torch.tensor([[0.0, 0.0], [0.0, 0.0]], requires_grad=True)
    b = torch.tensor([[0.6, 0.0], [0.3, 0.0]])
    d = (a - b).norm(dim=-1)
    core.weighted_contrastive_loss(d, torch.tensor([1.0, 0.0]), torch.ones(2), 1.0).backward()
    step = a.detach() - 0.1 * a.grad
    after = (step - b).norm(dim=-1)
    assert after[0] < 0.6 and after[1] > 0.3


# ------------------------------------------------------------------------------------------ end to end

def _png(pixels: np.ndarray) -> bytes:
    out = io.BytesIO()
    Image.fromarray(pixels.astype(np.uint8)).save(out, format="PNG")
    return out.getvalue()


def write_cultdiff_submission(folder: Path, dataset: Path, images: dict[str, bytes], model: str) -> Path:
    """A valid cultdiff submission of 64 px images: ``images`` by prompt id (one image per prompt)."""
    spec = {
        "format_version": 1, "organization": "lab", "contact": "lab@example.org", "date": "2026-11-25",
        "model": {"name": model, "id": f"lab/{model}", "revision": "0" * 40, "license": "mit", "weights": "open"},
        "generation": {"pipeline": "StableDiffusionPipeline", "scheduler": "DDIMScheduler", "steps": 2,
                       "guidance_scale": 7.5, "width": SIDE, "height": SIDE, "negative_prompt": True,
                       "precision": "fp32"},
        "seeds": {"scheme": "prompt-set"},
        "prompt_set": {"name": "cultdiff", "dataset": dataset.name, "revision": local_revision(dataset)},
        "images": {"location": "images"},
    }
    out = folder / f"lab__{model}"
    rows = []
    for p in read_prompt_set(dataset, "cultdiff"):
        rel = f"images/{p['prompt_id']}/0.png"
        (out / rel).parent.mkdir(parents=True, exist_ok=True)
        (out / rel).write_bytes(images[p["prompt_id"]])
        rows.append({"file_name": rel, "prompt_id": p["prompt_id"], "sample_idx": 0, "seed": p["seeds"][0],
                     "sha256": hashlib.sha256(images[p["prompt_id"]]).hexdigest()})
    write_submission(out, spec, rows)
    return out


def scorer_config(tiny_scorers: Path, root: Path, learned: bool = True) -> Path:
    """The tiny stand-ins (DreamSim's and CultDiff-S's among them) with absolute paths; ``learned=False`` leaves
    ``cultdiff.learned`` as the registry has it: no model."""
    entries = yaml.safe_load(tiny_scorers.read_text())
    entries = {name: {**e, "path": str(tiny_scorers.parent / e["path"])} for name, e in entries.items()}
    if not learned:
        entries["cultdiff.learned"] = {}
    path = root / ("scorers.yaml" if learned else "scorers-without-learned.yaml")
    path.write_text(yaml.safe_dump(entries))
    return path


def make_inputs(root: Path, tiny_scorers: Path, copy_reference: bool = True) -> dict:
    """A cultdiff dataset (Spain and Mexico; one artifact left without photographs; synthetic references), a
    submission whose first image is a reference photograph of its artifact (with ``copy_reference``: a submission
    that validation refuses, see :func:`evaluate_allowing_copies`; otherwise noise like the others), and the
    scorer config."""
    dataset = root / "dataset"
    build(dataset, countries=["ES", "MX"], prompt_sets=["cultdiff"])
    prompts = read_prompt_set(dataset, "cultdiff")
    bare = prompts[-1]["artifact_id"]  # an artifact left without photographs
    artifacts = pq.read_table(next((dataset / "data" / "artifacts").glob("*.parquet"))).column("qid").to_pylist()
    synthetic_references(dataset, qids=sorted(set(artifacts) - {bare}), size=SIDE, per_artifact=PHOTOS)
    refs = read_references(dataset)
    rng = np.random.default_rng(5)
    images = {p["prompt_id"]: _png(rng.integers(0, 256, (SIDE, SIDE, 3))) for p in prompts}
    identical = prompts[0]
    if copy_reference:
        images[identical["prompt_id"]] = refs.data[refs.by_artifact[identical["artifact_id"]][0]]
    submission = write_cultdiff_submission(root / "submissions", dataset, images, "alpha")
    return {"root": root, "dataset": dataset, "prompts": prompts, "bare": bare, "identical": identical,
            "refs": refs, "submission": submission, "config": scorer_config(tiny_scorers, root)}


def make_world(root: Path, tiny_scorers: Path, device: str = "cpu", dtype: str | None = None) -> dict:
    """:func:`make_inputs` and the submission's results, without the copy rule: the submission hands in a reference
    photograph on purpose (:func:`test_the_copy_rule_refuses_this_worlds_reference_photograph`)."""
    world = make_inputs(root, tiny_scorers)
    results = evaluate_allowing_copies(world["submission"], world["dataset"], root / "results", scorers=world["config"],
                                       device=device, dtype=dtype, n_boot=200, cache=root / "cache")
    return {**world, "results": results, "scores": pq.read_table(results / "scores.parquet").to_pandas(),
            "summary": json.loads((results / "summary.json").read_text())}


@pytest.fixture(scope="module")
def world(tmp_path_factory, tiny_scorers):
    return make_world(tmp_path_factory.mktemp("cultdiff"), tiny_scorers)


def _pil(data: bytes) -> Image.Image:
    return Image.open(io.BytesIO(data)).convert("RGB")


def test_values_are_the_scorers_own(world):
    scores, refs, config = world["scores"], world["refs"], world["config"]
    dino, clip = (load_scorer(n, config=config, device="cpu") for n in ("dinov2-base", "clip-vit-l-14"))
    lpips, dreamsim, learned = (load_scorer(n, config=config, device="cpu")
                                for n in ("lpips-alex", "dreamsim", "cultdiff.learned"))
    checked = 0
    for p in world["prompts"][:4]:
        if p["artifact_id"] == world["bare"]:
            continue
        image = _pil((world["submission"] / f"images/{p['prompt_id']}/0.png").read_bytes())
        photos = [_pil(refs.data[s]) for s in refs.by_artifact[p["artifact_id"]][:3]]
        rows = {m: scores[(scores.metric == m) & (scores.prompt_id == p["prompt_id"])].iloc[0] for m in METRICS}
        # the copied reference photograph is left out as near_reference, its value kept in the detail
        near = p["prompt_id"] == world["identical"]["prompt_id"]
        assert {r.flag if isinstance(r.flag, str) else None for r in rows.values()} == (
            {"near_reference"} if near else {None})
        value = {m: json.loads(r.detail)["left_out_value"] if near else r.value for m, r in rows.items()}
        for metric, scorer in (("cultdiff.dino", dino), ("cultdiff.clip", clip)):
            vectors = scorer.embed_images([image, *photos])
            expected = vectors[1:] @ vectors[0]
            np.testing.assert_allclose(json.loads(rows[metric].detail)["per_reference"], expected, atol=1e-5)
            assert value[metric] == pytest.approx(expected.mean(), abs=1e-5)
        for metric, scorer in (("cultdiff.lpips", lpips), ("cultdiff.dreamsim", dreamsim),
                               ("cultdiff.learned", learned)):
            import torch

            a = torch.stack([scorer.image_transform(image)] * len(photos))
            b = torch.stack([scorer.image_transform(photo) for photo in photos])
            assert value[metric] == pytest.approx(float(scorer.compare(a, b).mean()), abs=1e-5)
        grey = [core.luma((SquareResize(256)(x).permute(1, 2, 0).numpy().astype(float) + 1) * 127.5)
                for x in (image, *photos)]
        assert value["cultdiff.ssim"] == pytest.approx(np.mean([core.ssim(grey[0], g) for g in grey[1:]]))
        checked += 1
    assert checked >= 3


def test_the_copy_rule_refuses_this_worlds_reference_photograph(world):
    report = validate_module.validate(world["submission"], world["dataset"])
    pid = world["identical"]["prompt_id"]
    assert [(p.code, p.file) for p in report.errors] == [("image.copies_reference", f"images/{pid}/0.png")]
    with pytest.raises(CultureboardError, match="copy of reference photograph"):
        evaluate(world["submission"], world["dataset"], world["root"] / "refused", scorers=world["config"],
                 device="cpu", n_boot=50, cache=world["root"] / "cache")
    assert not (world["root"] / "refused").exists()


def test_an_image_identical_to_a_reference_scores_the_maximum(world):
    scores = world["scores"]
    pid = world["identical"]["prompt_id"]
    first = {m: json.loads(scores[(scores.metric == m) & (scores.prompt_id == pid)].iloc[0].detail)["per_reference"][0]
             for m in METRICS}
    for metric in ("cultdiff.dino", "cultdiff.clip", "cultdiff.ssim", "cultdiff.learned"):
        assert first[metric] == pytest.approx(1.0, abs=1e-5), metric
    assert first["cultdiff.lpips"] == pytest.approx(0.0, abs=1e-6)
    assert first["cultdiff.dreamsim"] == pytest.approx(0.0, abs=1e-5)
    others = scores[(scores.prompt_id != pid) & scores.flag.isna()]
    best = evaluate_allowing_copies(world["submission"], world["dataset"], world["root"] / "results-best", scorers=world["config"],
                    device="cpu", n_boot=50, cache=world["root"] / "cache", options={"reduction": "best"})
    best_scores = pq.read_table(best / "scores.parquet").to_pandas()
    # left out as near_reference: the value it would have had is in the detail
    mine = best_scores[best_scores.prompt_id == pid].set_index("metric")["detail"].map(
        lambda d: json.loads(d)["left_out_value"])
    assert mine["cultdiff.dino"] == pytest.approx(1.0, abs=1e-5) and mine["cultdiff.lpips"] == pytest.approx(0, abs=1e-6)
    assert (others[others.metric == "cultdiff.dino"]["value"] < 1 - 1e-3).all()
    summary = json.loads((best / "summary.json").read_text())
    assert summary["provenance"]["options"] == {"reduction": "best", "references": 3, "ssim_size": 256}
    assert world["summary"]["provenance"]["options"]["reduction"] == "mean"


def test_images_without_references_are_flagged_and_counted(world):
    scores, summary = world["scores"], world["summary"]
    bare = [p["prompt_id"] for p in world["prompts"] if p["artifact_id"] == world["bare"]]
    flagged = scores[scores.prompt_id.isin(bare)]
    assert len(flagged) == len(bare) * len(METRICS) and flagged.value.isna().all()
    assert set(flagged.flag) == {"no reference photograph"}
    assert json.loads(flagged.iloc[0].detail)["artifact"] == world["bare"]
    copied = world["identical"]["prompt_id"]  # the reference photograph handed in: near_reference
    assert scores[~scores.prompt_id.isin(bare + [copied])].flag.isna().all()
    overall = {e["metric"]: e for e in summary["metrics"] if e["slice_type"] == "overall"}
    for metric in METRICS:
        assert overall[metric]["n_flagged"] == len(bare) + 1
        assert overall[metric]["flags"] == {"no reference photograph": len(bare), "near_reference": 1}
        assert overall[metric]["n_prompts"] == len(world["prompts"]) - len(bare) - 1
    assert summary["provenance"]["dataset"]["references_revision"] == references_revision(world["dataset"])
    assert summary["provenance"]["family"] == "cultdiff"
    headline = [m for m in summary["metrics_info"] if m["primary"]]
    assert [m["name"] for m in headline] == ["cultdiff.dino"]
    cards = {m["name"]: m for m in summary["metrics_info"]}
    assert cards["cultdiff.lpips"]["direction"] == "lower" and cards["cultdiff.dreamsim"]["direction"] == "none"
    assert cards["cultdiff.learned"]["validity"][0]["value"] == 0.1848
    assert cards["cultdiff.ssim"]["validity"][0]["value"] == 0.0458


def test_without_a_cultdiff_s_model_its_rows_are_flagged(world, tiny_scorers):
    config = scorer_config(tiny_scorers, world["root"], learned=False)
    result = evaluate_allowing_copies(world["submission"], world["dataset"], world["root"] / "results-unlearned", scorers=config,
                      device="cpu", n_boot=50, cache=world["root"] / "cache")
    scores = pq.read_table(result / "scores.parquet").to_pandas()
    learned = scores[scores.metric == "cultdiff.learned"]
    assert learned.value.isna().all() and "no CultDiff-S model configured" in set(learned.flag)
    dino = scores[scores.metric == "cultdiff.dino"].set_index("prompt_id")["value"]
    before = world["scores"][world["scores"].metric == "cultdiff.dino"].set_index("prompt_id")["value"]
    np.testing.assert_allclose(dino.sort_index(), before.sort_index())


# ------------------------------------------------------------------------------------------ leaderboard

def test_country_by_category_cells_are_the_engine_summary_of_each_cell(world):
    scores = world["scores"]
    cells = {(e["metric"], e["slice"]): e for e in country_category(world["results"])}
    dino = scores[(scores.metric == "cultdiff.dino") & scores.flag.isna()]
    assert {c for m, c in cells if m == "cultdiff.dino"} == {f"{a} x {b}" for a, b in
                                                            dino[["country", "category"]].drop_duplicates().values}
    for (country, category), part in dino.groupby(["country", "category"]):
        entry = cells[("cultdiff.dino", f"{country} x {category}")]
        assert entry["value"] == pytest.approx(part["value"].mean())
        if len(part) > 1:
            assert entry["ci_low"] <= entry["value"] <= entry["ci_high"]
        else:  # the cell of the copied photograph keeps one scored prompt: no interval
            assert entry["ci_low"] is None and entry["ci_note"] == "no CI: 1 prompt"
        total = sum(1 for p in world["prompts"] if (p["country"], p["category"]) == (country, category))
        assert entry["coverage"] == pytest.approx(len(part) / total)
    assert {e["slice_type"] for e in cells.values()} == {"country_x_category"}


def test_countries_a_model_under_represents_are_gaps_to_its_own_mean(world):
    gaps = underrepresented(world["results"], n_boot=300)
    scores = world["scores"]
    dino = scores[(scores.metric == "cultdiff.dino") & scores.flag.isna()]
    overall = dino["value"].mean()
    for row in (g for g in gaps if g["metric"] == "cultdiff.dino" and g["kind"] == "country"):
        assert row["value"] == pytest.approx(dino[dino.country == row["name"]]["value"].mean() - overall)
        assert row["low"] <= row["value"] <= row["high"]
        assert row["under_represented"] == (row["p_adjusted"] < 0.05 and row["value"] < 0)  # BH q, worse side
    lpips = [g for g in gaps if g["metric"] == "cultdiff.lpips" and g["kind"] == "country"]
    assert lpips and all(g["direction"] == "lower" and g["under_represented"] == (g["p_adjusted"] < 0.05 and g["value"] > 0)
                         for g in lpips)


def test_under_and_over_represented_countries_on_both_sides(tmp_path):
    """Planted gaps (4 prompts per country, values that differ): Italy worse and Nigeria better than the model's
    mean on a similarity (DINOv2, higher is better) and on a distance (LPIPS, lower is better); only Italy is
    under-represented on each, and a region group's gap, however clear, is never a country badge."""
    import pandas as pd

    noise = [0.0, 0.01, -0.01, 0.005]
    level = {"IT": 0.2, "ES": 0.5, "MX": 0.52, "NG": 0.8}
    group = {"IT": "GN", "ES": "GN", "MX": "GS", "NG": "GS"}
    rows = []
    for metric, sign in (("cultdiff.dino", 1), ("cultdiff.lpips", -1)):
        for country, v in level.items():
            rows += [{"metric": metric, "prompt_id": f"cultdiff/{country}-{k}", "value": sign * v + e,
                      "country": country, "region_group": group[country], "flag": None} for k, e in enumerate(noise)]
    results = tmp_path / "results"
    results.mkdir()
    pd.DataFrame(rows).to_parquet(results / "scores.parquet")
    (results / "summary.json").write_text(json.dumps({"provenance": {"family": "cultdiff"}, "metrics_info": [
        {"name": "cultdiff.dino", "direction": "higher"}, {"name": "cultdiff.lpips", "direction": "lower"}]}))
    gaps = underrepresented(results, n_boot=300)
    marked = {(g["metric"], g["name"]) for g in gaps if g["under_represented"]}
    assert marked == {("cultdiff.dino", "IT"), ("cultdiff.lpips", "IT")}
    nigeria = [g for g in gaps if g["name"] == "NG"]
    assert all(g["low"] > 0 for g in nigeria if g["metric"] == "cultdiff.dino")
    assert all(g["high"] < 0 for g in nigeria if g["metric"] == "cultdiff.lpips")
    regions = [g for g in gaps if g["kind"] != "country"]
    assert any(g["high"] < 0 and g["metric"] == "cultdiff.dino" for g in regions), "a clear region gap is there"


# ------------------------------------------------------------------------------------------ references

def test_synthetic_references_load_like_real_ones(world, tmp_path):
    refs = world["refs"]
    assert world["bare"] not in refs.by_artifact and all(len(v) == PHOTOS for v in refs.by_artifact.values())
    table = pq.read_table(next((world["dataset"] / "data" / "references").glob("*.parquet"))).to_pylist()
    assert {r["source"] for r in table} == {"synthetic"} and {(r["width"], r["height"]) for r in table} == {(SIDE, SIDE)}
    card = (world["dataset"] / "README.md").read_text()
    assert "**synthetic** images" in card and "config_name: references" in card
    again = tmp_path / "again"
    build(again, countries=["ES", "MX"], prompt_sets=["cultdiff"])
    synthetic_references(again, qids=sorted(refs.by_artifact), size=SIDE, per_artifact=PHOTOS)
    assert read_references(again).data.keys() == refs.data.keys(), "the same arguments give the same bytes"
    first, second = sorted(refs.by_artifact)[:2]
    one, two = (np.asarray(_pil(refs.data[s]), dtype=float) for s in refs.by_artifact[first][:2])
    other = np.asarray(_pil(refs.data[refs.by_artifact[second][0]]), dtype=float)
    assert np.abs(one - two).mean() < np.abs(one - other).mean(), "one artifact's images look alike"


def test_reference_photos_control_is_never_compared_with_itself(world):
    """Sample 0 of the control is the artifact's first photograph: its K references are the others (leave-one-out),
    so no similarity is a self-match (1, or LPIPS 0) and the value is their mean, recomputed here."""
    from cultureboard.evaluators.engine.registry import metric_cards
    from cultureboard.evaluators.submission.controls import make_control

    control = Path(make_control("reference-photos", world["dataset"], "cultdiff",
                                world["root"] / "controls" / "control__reference-photos", size=SIDE)["out"])
    out = evaluate(control, world["dataset"], world["root"] / "results", scorers=world["config"], device="cpu",
                   n_boot=50, cache=world["root"] / "cache")
    scores = pq.read_table(out / "scores.parquet").to_pandas()
    dino = load_scorer("dinov2-base", config=world["config"], device="cpu")
    refs, checked = world["refs"], 0
    for p in world["prompts"][:3]:
        if p["artifact_id"] == world["bare"]:
            continue
        image = _pil((control / f"images/{p['prompt_id']}/0.png").read_bytes())
        others = [_pil(refs.data[s]) for s in refs.by_artifact[p["artifact_id"]][1:4]]  # K = 3 besides its own
        vectors = dino.embed_images([image, *others])
        row = {m: scores[(scores.metric == m) & (scores.prompt_id == p["prompt_id"])].iloc[0] for m in METRICS}
        assert json.loads(row["cultdiff.dino"].detail)["references"] == 3
        assert row["cultdiff.dino"].value == pytest.approx(float(np.mean(vectors[1:] @ vectors[0])), abs=1e-5)
        np.testing.assert_allclose(json.loads(row["cultdiff.dino"].detail)["per_reference"], vectors[1:] @ vectors[0],
                                   atol=1e-5)
        assert min(json.loads(row["cultdiff.lpips"].detail)["per_reference"]) > 1e-3  # LPIPS(x, x) = 0: not there
        assert max(json.loads(row["cultdiff.ssim"].detail)["per_reference"]) < 0.99  # SSIM(x, x) = 1: not there
        checked += 1
    assert checked >= 2 and {m: metric_cards()[m].version for m in METRICS} == {
        "cultdiff.dino": 3, "cultdiff.clip": 4, "cultdiff.lpips": 3, "cultdiff.dreamsim": 4, "cultdiff.ssim": 3,
        "cultdiff.learned": 4}


# ------------------------------------------------------------------------------------------ learned scorer's own data

def test_cultdiff_s_never_grades_its_own_training_data(world):
    """A model folder whose training.json says it was trained on artifact A and on one photograph of artifact B:
    every image of A, and the image of B (one of whose K references is that photograph), is flagged "in training
    set" and left out of the value; the others keep the stand-in's values; the validity study sees only those."""
    import shutil

    from cultureboard.evaluators.families.cultdiff.human import metric_validity

    entries = yaml.safe_load(world["config"].read_text())
    folder = world["root"] / "cultdiff-s-trained"
    shutil.copytree(entries["cultdiff.learned"]["path"], folder, dirs_exist_ok=True)
    scored = [p for p in world["prompts"] if p["artifact_id"] != world["bare"]]
    a, b = scored[1]["artifact_id"], scored[2]["artifact_id"]
    assert a != b and len({p["artifact_id"] for p in scored}) > 3
    photo_of_b = world["refs"].by_artifact[b][2]  # the third of B's K = 3 references
    unrelated = "f" * 64  # an image of no artifact here: it changes nothing but the count
    (folder / "training.json").write_text(json.dumps({"trained_on": {"artifacts": [a], "images": [photo_of_b, unrelated]}}))
    config = world["root"] / "scorers-trained.yaml"
    config.write_text(yaml.safe_dump({**entries, "cultdiff.learned": {**entries["cultdiff.learned"], "path": str(folder)}}))
    out = evaluate_allowing_copies(world["submission"], world["dataset"], world["root"] / "results-trained", scorers=config,
                   device="cpu", n_boot=50, cache=world["root"] / "cache")
    scores = pq.read_table(out / "scores.parquet").to_pandas()
    learned = scores[scores.metric == "cultdiff.learned"].set_index("prompt_id")
    before = world["scores"][world["scores"].metric == "cultdiff.learned"].set_index("prompt_id")
    trained = {p["prompt_id"] for p in scored if p["artifact_id"] in (a, b)}
    assert set(learned.index[learned.flag == "in training set"]) == trained
    assert learned.loc[sorted(trained), "value"].isna().all()
    detail = json.loads(learned.loc[scored[2]["prompt_id"], "detail"])
    assert detail["images_trained_on"] == [photo_of_b] and not detail["artifact_trained_on"]
    copied = world["identical"]["prompt_id"]  # left out as near_reference, whatever the training data
    held = [p["prompt_id"] for p in scored if p["prompt_id"] not in trained | {copied}]
    np.testing.assert_allclose(learned.loc[held, "value"], before.loc[held, "value"])
    summary = json.loads((out / "summary.json").read_text())
    overall = next(e for e in summary["metrics"] if e["metric"] == "cultdiff.learned" and e["slice_type"] == "overall")
    assert overall["flags"]["in training set"] == len(trained) and overall["n_prompts"] == len(held)
    assert overall["value"] == pytest.approx(before.loc[held, "value"].mean())
    assert summary["provenance"]["notes"]["cultdiff.learned"]["trained_on"] == {
        "artifacts": 1, "images": 2, "from": "training.json"}
    # the validity study: only held-out images of cultdiff.learned reach the correlation
    rows = [{"question": f"q1_{k}", "value": float(1 + (i + k) % 5), "rater": "r1", "image_sha256": sha,
             "item_id": None, "prompt_id": pid, "sample_idx": 0, "file_name": None, "submission": None,
             "study": "cultdiff", "model": None,
             "country": "ES", "category": "food", "rater_country": "ES"}
            for i, (pid, sha) in enumerate(scores.drop_duplicates("prompt_id")[["prompt_id", "sha256"]].values)
            for k in range(1, 5)]
    import pandas as pd

    validity = metric_validity(pd.DataFrame(rows), scores, n_boot=20)
    n = {r["metric"]: r["n"] for r in validity if r["slice_type"] == "overall"}
    assert n["cultdiff.learned"] == len(held) and n["cultdiff.dino"] == len(scored) - 1  # the copy left out
    (folder / "training.json").write_text(json.dumps({"losses": [1.0]}))  # a record that does not say
    with pytest.raises(CultureboardError, match="does not say what the model was trained on"):
        evaluate_allowing_copies(world["submission"], world["dataset"], world["root"] / "results-stale", scorers=config,
                 device="cpu", n_boot=50, cache=world["root"] / "cache")
