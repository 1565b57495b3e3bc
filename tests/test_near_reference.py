"""The near-reference check at evaluation (evaluators/engine/near_reference.py): a generation whose DINOv2 embedding
is as close to a reference photograph of its artifact as a copy would be is flagged ``near_reference``, left out of
every similarity-to-reference metric (CultDiff's six, CuRe's cure.gt*) and counted, with the metric the mean over
the remaining images (hand-computed here from the tiny scorers' own embeddings); an honest image is not flagged;
an embedder without a measured threshold is "not checked"; bad input is one error.

The worlds hand in a resized, re-encoded reference photograph on purpose: validate refuses it
(:func:`test_validate_refuses_the_copy`), so they are scored without the copy rule."""

from __future__ import annotations

import hashlib
import io
import json
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pyarrow.parquet as pq
import pytest
import yaml
from PIL import Image
from submission_factory import evaluate_allowing_copies

from cultureboard.dataset_folder import read_prompt_set
from cultureboard.errors import CultureboardError
from cultureboard.evaluators.engine import near_reference
from cultureboard.evaluators.engine.images import ImageSource
from cultureboard.evaluators.engine.scorers import Scorers, load_scorer
from cultureboard.evaluators.engine.tiny_scorers import save_tiny_dinov2
from cultureboard.evaluators.submission.controls import REFERENCE_PHOTOS
from cultureboard.evaluators.submission.validate import validate

CULTDIFF = ("cultdiff.dino", "cultdiff.clip", "cultdiff.lpips", "cultdiff.dreamsim", "cultdiff.ssim",
            "cultdiff.learned")
GT = ("cure.gt", "cure.gt.dinov2", "cure.gt.aimv2")


def resized_copy(data: bytes, side: int = 64) -> bytes:
    """A reference photograph resized to twice ``side`` and down to ``side`` px, re-encoded as JPEG q=60, saved as a
    PNG. (The tiny stand-ins' thresholds catch resized and re-encoded copies only, see near_reference.yaml.)"""
    photo = Image.open(io.BytesIO(data)).convert("RGB")
    large = photo.resize((2 * side, 2 * side), Image.Resampling.BICUBIC)
    jpeg = io.BytesIO()
    large.resize((side, side), Image.Resampling.BICUBIC).save(jpeg, "JPEG", quality=60)
    out = io.BytesIO()
    Image.open(jpeg).save(out, "PNG")
    return out.getvalue()


def _pil(data: bytes) -> Image.Image:
    return Image.open(io.BytesIO(data)).convert("RGB")


def _overall(summary: dict, metric: str) -> dict:
    return next(e for e in summary["metrics"] if (e["metric"], e["slice_type"]) == (metric, "overall"))


# ------------------------------------------------------------------------------------------ the check itself

def test_the_tiny_stand_ins_have_measured_thresholds(tiny_scorers):
    pool = Scorers(tiny_scorers, "cpu", "float32")
    for name in ("dinov2-base", "dinov2-large"):
        key = near_reference.embedder_key(pool.identity(name))
        assert key in near_reference.thresholds(), (
            f"{name}'s stand-in ({key}) has no recorded threshold: its weights changed; measure it again with "
            f"python benchmarks/near_reference_threshold.py --scorers tiny --scorer {name}")
        entry = near_reference.thresholds()[key]
        measured = entry["measured"]
        # the entry is what the benchmark measured: above every distinct pair, at most the re-encoded copies
        assert measured["distinct_highest"] < entry["threshold"] <= min(
            measured["copies_lowest"]["resized to half"], measured["copies_lowest"]["JPEG q=60"])
        assert measured["separated"] is False and "stand-in" in measured["scorer"]


def _ctx(control: str | None = None, model_id: str = "local/dinov2-base",
         revision: str = "local:abc"):
    identity = {"model_id": model_id, "revision": revision, "preprocessing": "p"}
    return SimpleNamespace(control=control, scorers=SimpleNamespace(identity=lambda name: identity))


def test_a_threshold_is_read_by_embedder_identity_and_compared_at_or_above(tmp_path):
    path = tmp_path / "t.yaml"
    path.write_text(yaml.safe_dump({"local/dinov2-base@local:abc": {"threshold": 0.9, "preprocessing": "p",
                                                                     "measured": {"by": "hand"}}}))
    check = near_reference.check_for(_ctx(), "dinov2-base", path)
    assert check.status == "checked" and check.threshold == 0.9
    assert check.near(0.9) and check.near(0.95) and not check.near(0.8999)  # at or above: near
    assert check.record()["from"] == near_reference.THRESHOLDS_FILE and check.record()["measured"] == {"by": "hand"}
    other = near_reference.check_for(_ctx(revision="local:def"), "dinov2-base", path)
    assert other.status == "not checked (no measured threshold for local/dinov2-base@local:def)"
    assert not other.near(1.0) and other.record()["threshold"] is None
    control = near_reference.check_for(_ctx(control=REFERENCE_PHOTOS), "dinov2-base", path)
    assert control.status.startswith("not checked (the reference-photos control")


def test_nearest_is_the_highest_cosine_with_any_photograph():
    x = np.array([0.6, 0.8])
    assert near_reference.nearest(x, np.array([[1.0, 0.0], [0.0, 1.0]])) == pytest.approx(0.8)
    assert near_reference.nearest(x, np.array([[0.6, 0.8], [-1.0, 0.0]])) == pytest.approx(1.0)
    with pytest.raises(ValueError):
        near_reference.nearest(x, np.zeros((0, 2)))


def test_bad_input_is_one_error(tmp_path):
    image = SimpleNamespace(sha256="a" * 64, file_name="images/p/0.png")
    photo = ImageSource("b" * 64, data=b"", label="reference 1 of Q1")
    with pytest.raises(CultureboardError, match="reference 1 of Q1: has no embedding for the near-reference check"):
        near_reference.similarities([image], lambda im: [photo], {image.sha256: np.ones(2)}, {})
    with pytest.raises(CultureboardError, match="images/p/0.png: has no embedding"):
        near_reference.similarities([image], lambda im: [photo], {}, {photo.sha256: np.ones(2)})
    bad = tmp_path / "bad.yaml"
    bad.write_text("local/x@local:y: {threshold: 2}\n")
    with pytest.raises(CultureboardError, match="entry 'local/x@local:y' is not"):
        near_reference.thresholds(bad)
    bad.write_text("a: [unclosed\n")
    with pytest.raises(CultureboardError, match="cannot read the near-reference thresholds"):
        near_reference.thresholds(bad)


def _benchmark():
    import importlib.util

    path = Path(__file__).resolve().parents[1] / "benchmarks" / "near_reference_threshold.py"
    spec = importlib.util.spec_from_file_location("near_reference_threshold", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_benchmark_chooses_the_threshold_by_its_rule():
    """Separated: the midpoint of the lowest copy and the highest distinct pair, rounded down to 4 decimals; not
    separated: the smallest 4-decimal value above every distinct pair, with the share of each edit's copies missed."""
    choose = _benchmark().choose
    assert choose({"a": np.array([0.95, 0.97])}, np.array([0.5, 0.9])) == (0.925, True, {})
    t, separated, missed = choose({"a": np.array([0.99, 1.0]), "b": np.array([0.99951, 0.9999]),
                                   "c": np.array([1.0, 1.0])}, np.array([0.9, 0.99951]))
    assert (t, separated, missed) == (0.9996, False, {"a": 0.5, "b": 0.5})


# ------------------------------------------------------------------------------------------ CultDiff end to end

@pytest.fixture(scope="module")
def cultdiff(tmp_path_factory, tiny_scorers):
    from test_cultdiff import make_inputs, write_cultdiff_submission

    root = tmp_path_factory.mktemp("near-cultdiff")
    world = make_inputs(root, tiny_scorers, copy_reference=False)
    prompts, refs = world["prompts"], world["refs"]
    copied = next(p for p in prompts if p["artifact_id"] != world["bare"])
    images = {p["prompt_id"]: (world["submission"] / f"images/{p['prompt_id']}/0.png").read_bytes() for p in prompts}
    images[copied["prompt_id"]] = resized_copy(refs.data[refs.by_artifact[copied["artifact_id"]][1]])
    submission = write_cultdiff_submission(root / "copying", world["dataset"], images, "copier")
    results = evaluate_allowing_copies(submission, world["dataset"], root / "results", scorers=world["config"],
                                       device="cpu", n_boot=50, cache=root / "cache")
    return {**world, "copied": copied, "images": images, "submission": submission, "results": results,
            "scores": pq.read_table(results / "scores.parquet").to_pandas(),
            "summary": json.loads((results / "summary.json").read_text())}


def test_validate_refuses_the_copy(cultdiff):
    report = validate(cultdiff["submission"], cultdiff["dataset"])
    assert [p.code for p in report.errors] == ["image.copies_reference"]


def test_a_resized_reencoded_copy_is_flagged_and_left_out_of_every_metric(cultdiff):
    scores, pid = cultdiff["scores"], cultdiff["copied"]["prompt_id"]
    mine = scores[scores.prompt_id == pid].set_index("metric")
    assert set(mine.index) == set(CULTDIFF) and (mine.flag == "near_reference").all() and mine.value.isna().all()
    for metric in CULTDIFF:
        detail = json.loads(mine.loc[metric, "detail"])
        assert detail["nearest_reference"] >= detail["threshold"]
        if metric != "cultdiff.learned":
            assert detail["left_out_value"] is not None  # what it would have scored, kept for the record
    summary = cultdiff["summary"]
    for metric in CULTDIFF:
        block = summary["near_reference"][metric]
        assert (block["status"], block["left_out"], block["scorer"]) == ("checked", 1, "dinov2-base")
        assert block["checked"] == len([p for p in cultdiff["prompts"] if p["artifact_id"] != cultdiff["bare"]])
        assert block["from"] == "evaluators/engine/data/near_reference.yaml" and block["model_id"] == "local/dinov2-base"
        assert block["threshold"] == near_reference.thresholds()[f"local/dinov2-base@{block['revision']}"]["threshold"]
        assert _overall(summary, metric)["flags"]["near_reference"] == 1
    assert summary["provenance"]["notes"]["cultdiff.dino"]["counts"]["near_reference left out"] == 1


def test_an_honest_image_is_not_flagged_and_the_metric_is_the_mean_of_the_rest(cultdiff):
    """cultdiff.dino over all prompts = the mean over the images neither copied nor without photographs of their
    mean cosine with their K = 3 photographs, computed here with the tiny DINOv2 itself."""
    scores, refs = cultdiff["scores"], cultdiff["refs"]
    honest = [p for p in cultdiff["prompts"] if p["artifact_id"] != cultdiff["bare"] and p != cultdiff["copied"]]
    rows = scores[scores.prompt_id.isin([p["prompt_id"] for p in honest])]
    assert rows.flag.isna().all()
    threshold = cultdiff["summary"]["near_reference"]["cultdiff.dino"]["threshold"]
    assert all(json.loads(d)["nearest_reference"] < threshold for d in rows.detail)
    dino = load_scorer("dinov2-base", config=cultdiff["config"], device="cpu")
    per_image = []
    for p in honest:
        vectors = dino.embed_images([_pil(cultdiff["images"][p["prompt_id"]]),
                                     *(_pil(refs.data[s]) for s in refs.by_artifact[p["artifact_id"]][:3])])
        per_image.append(float(np.mean(vectors[1:] @ vectors[0])))
    entry = _overall(cultdiff["summary"], "cultdiff.dino")
    assert entry["value"] == pytest.approx(np.mean(per_image), abs=1e-5) and entry["n_prompts"] == len(honest)
    ssim = scores[(scores.metric == "cultdiff.ssim") & scores.flag.isna()]
    assert _overall(cultdiff["summary"], "cultdiff.ssim")["value"] == pytest.approx(ssim.value.mean())


def test_an_embedder_without_a_measured_threshold_is_not_checked(cultdiff, tmp_path):
    """Another random DINOv2 (no entry in the data file): nothing is flagged, the copy is averaged in, and every
    summary says the check was not made and why."""
    config = yaml.safe_load(cultdiff["config"].read_text())
    config["dinov2-base"] = {**config["dinov2-base"], "path": str(save_tiny_dinov2(tmp_path / "other-dino", seed=7))}
    (tmp_path / "scorers.yaml").write_text(yaml.safe_dump(config))
    out = evaluate_allowing_copies(cultdiff["submission"], cultdiff["dataset"], tmp_path / "results",
                                   scorers=tmp_path / "scorers.yaml", device="cpu", n_boot=50,
                                   cache=cultdiff["root"] / "cache")
    scores = pq.read_table(out / "scores.parquet").to_pandas()
    summary = json.loads((out / "summary.json").read_text())
    mine = scores[scores.prompt_id == cultdiff["copied"]["prompt_id"]]
    assert mine.flag.isna().all() and mine.value.notna().all()
    block = summary["near_reference"]["cultdiff.dino"]
    assert block["status"].startswith("not checked (no measured threshold for local/other-dino@local:")
    assert block["threshold"] is None and block["left_out"] == 0 and block["from"] is None
    assert "near_reference" not in _overall(summary, "cultdiff.dino")["flags"]


# ------------------------------------------------------------------------------------------ CuRe end to end

@pytest.fixture(scope="module")
def cure_world(tmp_path_factory, tiny_scorers):
    from test_cure_family import ARTIFACTS, CATEGORY_IMAGES, JIAOZI, SEEDS, make_submission, write_references

    from cultureboard.builder.dataset import prompt_config, write_dataset
    from cultureboard.builder.prompts_cure import build_ladder
    from cultureboard.countries import load_countries
    from cultureboard.evaluators.families.cure import ladder_id

    root = tmp_path_factory.mktemp("near-cure")
    ladder = build_ladder(ARTIFACTS, load_countries(), images_per_prompt=SEEDS, category_images=CATEGORY_IMAGES)
    dataset = write_dataset(root / "dataset", [prompt_config(ladder)], {})
    photos = write_references(dataset)["cure:food-jiaozi"]
    submission = make_submission(root / "submissions", dataset, "copier", same_bridge=False)
    name_only = next(p for p in read_prompt_set(dataset, "cure-ladder") if ladder_id(p) == JIAOZI and p["level"] == "n")
    copied = f"images/{name_only['prompt_id']}/2.png"
    (submission / copied).write_bytes(resized_copy(photos[0]))
    lines = [json.loads(line) for line in (submission / "metadata.jsonl").read_text().splitlines()]
    for line in lines:
        if line.get("file_name") == copied:
            line["sha256"] = hashlib.sha256((submission / copied).read_bytes()).hexdigest()
    (submission / "metadata.jsonl").write_text("".join(json.dumps(line) + "\n" for line in lines))
    results = evaluate_allowing_copies(submission, dataset, root / "results", scorers=tiny_scorers, device="cpu",
                                       cache=root / "cache", n_boot=50)
    return {"submission": submission, "photos": photos, "copied": copied, "unit": JIAOZI, "seeds": SEEDS,
            "images": [submission / f"images/{name_only['prompt_id']}/{k}.png" for k in range(SEEDS)],
            "scores": pq.read_table(results / "scores.parquet").to_pandas(), "scorers": tiny_scorers,
            "summary": json.loads((results / "summary.json").read_text())}


def test_cure_gt_leaves_the_copy_out_of_the_ladder(cure_world):
    """jiaozi's P(n) seed 2 is its first photograph resized and re-encoded: every cure.gt is the mean over seeds 0, 1
    and 3 of their mean cosine with the four photographs, by each encoder (hand-computed); cure.ps is unchanged."""
    from cultureboard.evaluators.families.cure import IMAGE_ENCODERS

    scores = cure_world["scores"]
    kept = [k for k in range(cure_world["seeds"]) if k != 2]
    for suffix, name in IMAGE_ENCODERS.items():
        scorer = load_scorer(name, config=cure_world["scorers"], device="cpu")
        x = scorer.embed_images([Image.open(p).convert("RGB") for p in cure_world["images"]])
        g = scorer.embed_images([_pil(b) for b in cure_world["photos"]])
        row = scores[(scores.metric == f"cure.gt{suffix}") & (scores.unit_id == cure_world["unit"])].iloc[0]
        assert row.value == pytest.approx(float(np.mean(x[kept] @ g.T)), abs=1e-5)
        assert row.value != pytest.approx(float(np.mean(x @ g.T)), abs=1e-4)  # the copy would have counted
        detail = json.loads(row.detail)
        assert detail["near_reference"] == 1 and len(detail["nearest_reference"]) == cure_world["seeds"]
        block = cure_world["summary"]["near_reference"][f"cure.gt{suffix}"]
        assert (block["status"], block["left_out"], block["checked"], block["scorer"]) == (
            "checked", 1, cure_world["seeds"], "dinov2-large")
    assert set(cure_world["summary"]["near_reference"]) == set(GT)  # cure.ps compares with no photograph
