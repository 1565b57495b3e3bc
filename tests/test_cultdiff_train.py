"""CultDiff-S training on a separable toy set (tiny ViT, seconds on a CPU): the loss decreases, the trained scorer
(loaded as the registered pairwise scorer by path) ranks held-out positives above negatives, the held-out
correlation is reported as measured, training is deterministic for a seed, the model card records it, and bad
input is one line."""

from __future__ import annotations

import dataclasses
import hashlib
import io
import json
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from cultureboard.builder import build
from cultureboard.builder.references import synthetic_references
from cultureboard.cli import main
from cultureboard.dataset_folder import read_prompt_set
from cultureboard.errors import CultureboardError
from cultureboard.evaluators.engine.scorers import load_scorer
from cultureboard.evaluators.families.cultdiff.learned import save_tiny_init
from cultureboard.evaluators.families.cultdiff.train import (
    TrainingConfig,
    pair_item_id,
    read_references,
    split_artifacts,
    train_cultdiff_s,
)
from cultureboard.evaluators.results.ratings_format import write_ratings

SIDE = 32


def _variant(data: bytes, rng) -> np.ndarray:
    """A reference photograph shifted and noised: what a toy model 'generates'."""
    base = np.asarray(Image.open(io.BytesIO(data)).convert("RGB"), dtype=float)
    return np.clip(np.roll(base, int(rng.integers(-3, 4)), axis=1) + rng.normal(0, 10, base.shape), 0, 255)


def make_toy(root: Path, device: str = "cpu") -> dict:
    """US and GB cultdiff prompts, synthetic references; each prompt's image is a variant of a photograph of its own
    artifact (a positive, rated 4-5) or of another artifact (a negative, rated 1-2). Half the items are survey
    items (image + prompt), half explicit pairs (item_id pair:SHA:SHA)."""
    dataset = root / "dataset"
    build(dataset, countries=["US", "GB"], prompt_sets=["cultdiff"])
    synthetic_references(dataset, size=SIDE)
    refs = read_references(dataset)
    qids = sorted(refs.by_artifact)
    rng = np.random.default_rng(0)
    rows, items = [], []
    (root / "generated").mkdir()
    for i, p in enumerate(read_prompt_set(dataset, "cultdiff")):
        own = p["artifact_id"]
        positive = i % 2 == 0
        source = own if positive else qids[(qids.index(own) + 5) % len(qids)]
        path = root / "generated" / f"{i}.png"
        Image.fromarray(_variant(refs.data[refs.by_artifact[source][0]], rng).astype(np.uint8)).save(path)
        sha = hashlib.sha256(path.read_bytes()).hexdigest()
        items.append((path, own, positive))
        item = ({"image_sha256": sha, "prompt_id": p["prompt_id"]} if i % 4 < 2
                else {"item_id": pair_item_id(sha, refs.by_artifact[own][0])})
        for k in range(1, 5):
            value = rng.integers(4, 6) if positive else rng.integers(1, 3)
            rows.append({"study": "cultdiff", "rater": f"r{i % 3}", "question": f"q1_{k}", "value": float(value),
                         "scale": "likert:1..5", **item})
    ratings = write_ratings(rows, root / "ratings.parquet")
    init = save_tiny_init(root / "init")
    config = TrainingConfig(init=str(init), epochs=4, batch_size=16, lr=1e-3, held_out=0.3, seed=0, device=device)
    record = train_cultdiff_s(ratings, dataset, root / "model", images=[root / "generated"], config=config)
    return {"root": root, "dataset": dataset, "refs": refs, "items": items, "ratings": ratings, "init": init,
            "config": config, "record": record, "model": root / "model"}


@pytest.fixture(scope="module")
def toy(tmp_path_factory):
    return make_toy(tmp_path_factory.mktemp("cultdiff-train"))


def test_the_loss_decreases_and_the_trained_scorer_ranks_positives_above_negatives(toy):
    record = toy["record"]
    assert record["losses"][-1] < record["losses"][0]
    scorer = load_scorer("cultdiff.learned", device="cpu",
                         config={"cultdiff.learned": {"backend": "cultdiff-s", "path": str(toy["model"])}})
    assert (scorer.kind, scorer.backend) == ("pairwise", "cultdiff-s") and scorer.revision.startswith("local:")
    refs, held = toy["refs"], set(toy["record"]["data"]["held_out_artifacts"])
    positives, negatives = [], []
    for path, qid, positive in toy["items"]:
        if qid in held:
            a = scorer.image_transform(Image.open(path).convert("RGB"))[None]
            b = scorer.image_transform(Image.open(io.BytesIO(refs.data[refs.by_artifact[qid][0]])).convert("RGB"))[None]
            (positives if positive else negatives).append(float(scorer.compare(a, b)[0]))
    assert positives and negatives
    assert min(positives) > max(negatives), (positives, negatives)
    identical = scorer.image_transform(Image.open(io.BytesIO(next(iter(refs.data.values())))).convert("RGB"))[None]
    assert scorer.compare(identical, identical)[0] == pytest.approx(1.0, abs=1e-5)


def test_the_held_out_correlation_is_reported_as_measured(toy):
    record = toy["record"]
    after, before = record["held_out"]["after"], record["held_out"]["before"]
    assert after["n"] == record["data"]["pairs"]["held_out"]["real-synthetic"] > 3
    assert after["spearman_low"] <= after["spearman"] <= after["spearman_high"]
    assert after["spearman"] > 0.5 and before["spearman"] is not None
    assert record["held_out"]["reported_by_paper"]["spearman"] == 0.1848
    pairs = record["data"]["pairs"]
    assert set(pairs["held_out"]) == {"real-synthetic"}
    assert pairs["train"]["real-real positive"] == pairs["train"]["real-real negative"] > 0
    assert record["data"]["artifacts"]["held_out"] >= 1 and record["seed"] == 0
    card = (toy["model"] / "README.md").read_text()
    for text in (f"Spearman {after['spearman']:.3f}", "seed 0", "| epochs | 4 |", "| lr | 0.001 |", "| margin | 1.0 |",
                 "ratings.parquet", record["data"]["ratings_sha256"], "0.1848"):
        assert text in card, text
    stored = json.loads((toy["model"] / "training.json").read_text())
    assert stored["losses"] == record["losses"]


def test_training_is_deterministic_for_a_seed(toy, tmp_path):
    config = TrainingConfig(init=str(toy["init"]), epochs=1, batch_size=16, lr=1e-3, held_out=0.3, seed=3)
    runs = [train_cultdiff_s(toy["ratings"], toy["dataset"], tmp_path / name, images=[toy["root"] / "generated"],
                             config=config) for name in ("a", "b")]
    assert runs[0]["losses"] == runs[1]["losses"]
    assert (tmp_path / "a/model.safetensors").read_bytes() == (tmp_path / "b/model.safetensors").read_bytes()
    other = train_cultdiff_s(toy["ratings"], toy["dataset"], tmp_path / "c", images=[toy["root"] / "generated"],
                             config=dataclasses.replace(config, seed=4))
    assert other["losses"] != runs[0]["losses"]


def test_the_split_keeps_every_image_of_an_artifact_on_one_side():
    countries = {f"Q{i}": ("ES" if i < 6 else "MX") for i in range(10)}
    held = split_artifacts(sorted(countries), countries, 0.5, 0)
    assert len([q for q in held if countries[q] == "ES"]) == 3 and len([q for q in held if countries[q] == "MX"]) == 2
    assert held == split_artifacts(sorted(countries), countries, 0.5, 0)
    assert split_artifacts(["Q1", "Q2"], countries, 0.01, 0) != set(), "at least one artifact is held out"
    assert split_artifacts(["Q1", "Q2"], countries, 0.0, 0) == set()


def test_bad_input_is_one_line(toy, tmp_path):
    no_q1 = write_ratings([{"study": "cultdiff", "rater": "r", "question": "q2", "value": 3.0, "scale": "likert:1..5",
                            "image_sha256": "a" * 64, "prompt_id": "cultdiff/x"}], tmp_path / "q2.parquet")
    with pytest.raises(CultureboardError, match="no answers to the similarity questions"):
        train_cultdiff_s(no_q1, toy["dataset"], tmp_path / "m", config=toy["config"])
    with pytest.raises(CultureboardError, match="hold no file of .* rated image"):
        train_cultdiff_s(toy["ratings"], toy["dataset"], tmp_path / "m", images=[tmp_path], config=toy["config"])
    with pytest.raises(CultureboardError, match="held-out"):
        TrainingConfig(held_out=1.5)
    assert not (tmp_path / "m").exists()


def test_the_cli_trains_and_reports(toy, tmp_path, capsys):
    out = tmp_path / "cli-model"
    args = ["train", "cultdiff-s", "--ratings", str(toy["ratings"]), "--dataset", str(toy["dataset"]), "--out", str(out),
            "--images", str(toy["root"] / "generated")]
    assert main([*args, "--init", str(toy["init"]), "--epochs", "1", "--batch-size", "16", "--device", "cpu"]) == 0
    printed = capsys.readouterr()
    assert "held-out Spearman" in printed.out and "epoch 1/1: loss" in printed.out
    assert (out / "README.md").is_file() and (out / "cultdiff_s.json").is_file()
    assert main([*args, "--held-out", "2"]) == 2
    error = capsys.readouterr().err
    assert error.startswith("error: --held-out: 2.0 is not in [0, 1)") and len(error.strip().splitlines()) == 1


def test_the_model_folder_loads_by_hub_id(toy, tmp_path, monkeypatch):
    """A trained folder uploaded as a Hub model repo loads as `model: ORG/REPO` (here from the local Hub cache, offline)."""
    import shutil

    from huggingface_hub import constants

    commit = "c" * 40
    repo = tmp_path / "hub" / "models--lab--cultdiff-s"
    shutil.copytree(toy["model"], repo / "snapshots" / commit)
    (repo / "refs").mkdir()
    (repo / "refs" / "main").write_text(commit)
    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(tmp_path / "hub"))
    scorer = load_scorer("cultdiff.learned", device="cpu",
                         config={"cultdiff.learned": {"backend": "cultdiff-s", "model": "lab/cultdiff-s"}})
    assert (scorer.model_id, scorer.revision) == ("lab/cultdiff-s", commit)
    local = load_scorer("cultdiff.learned", device="cpu",
                        config={"cultdiff.learned": {"backend": "cultdiff-s", "path": str(toy["model"])}})
    image = local.image_transform(Image.open(toy["items"][0][0]).convert("RGB"))[None]
    assert scorer.compare(image, image * 0.5) == pytest.approx(local.compare(image, image * 0.5), abs=1e-6)
    with pytest.raises(CultureboardError, match="no CultDiff-S model is configured"):
        load_scorer("cultdiff.learned", device="cpu", config={"cultdiff.learned": {"backend": "cultdiff-s"}})
    with pytest.raises(CultureboardError, match="not a CultDiff-S model folder"):
        load_scorer("cultdiff.learned", device="cpu",
                    config={"cultdiff.learned": {"backend": "cultdiff-s", "path": str(toy["init"])}})
