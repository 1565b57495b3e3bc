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
    five = {f"E{i}": "ES" for i in range(5)}
    assert len(split_artifacts(sorted(five), five, 0.3, 0)) == 2, "round(0.3 x 5) = 2: rounded, not truncated"


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


def test_the_embedding_is_the_l2_normalised_cls_token():
    """f(x) = the CLS token (position 0) of the last hidden state, over its L2 norm: (3, 4) -> (0.6, 0.8), not the
    mean over tokens."""
    from types import SimpleNamespace

    import torch

    from cultureboard.evaluators.families.cultdiff.learned import embed

    hidden = torch.tensor([[[3.0, 4.0], [1.0, 0.0]], [[0.0, 2.0], [5.0, 5.0]]])
    out = embed(lambda pixel_values: SimpleNamespace(last_hidden_state=hidden), None)
    assert torch.allclose(out, torch.tensor([[0.6, 0.8], [0.0, 1.0]]))


# ------------------------------------------------------------------------------------------ by hand, on a small rated set

def sha(k: int) -> str:
    return f"{k:064x}"


def hand_refs(photos: dict[str, int], countries: dict[str, str]):
    """References of artifacts named by letter, each with ``photos[q]`` photographs sha(100 * i + k)."""
    from cultureboard.evaluators.families.cultdiff.train import References

    refs = References({}, {}, {}, dict(countries))
    for i, q in enumerate(sorted(photos)):
        refs.by_artifact[q] = [sha(100 * (i + 1) + k) for k in range(photos[q])]
        for s in refs.by_artifact[q]:
            refs.data[s], refs.owner[s] = b"", q
    return refs


COUNTRIES = {"A": "ES", "B": "ES", "C": "MX", "D": "MX"}
G1, G2, G3 = sha(1), sha(2), sha(3)


def hand_rows():
    """Three rated items: a survey item on A rated by two raters, one of whom answered Q1.1 only (score = the mean
    of the raters' means, 2.25, where pooling the answers would give 3.0) and Q2 (not a similarity question); an
    explicit pair with C's fifth photograph; a survey item on B at the label's boundary (3.0)."""
    import pandas as pd

    rows = [("r1", None, G1, "cultdiff/p-a", f"q1_{k}", v) for k, v in zip(range(1, 5), (4, 4, 3, 3))]
    rows += [("r2", None, G1, "cultdiff/p-a", "q1_1", 1), ("r1", None, G1, "cultdiff/p-a", "q2", 5)]
    rows += [("r1", f"pair:{G2}:{sha(304)}", None, None, f"q1_{k}", v) for k, v in zip(range(1, 5), (5, 5, 5, 4))]
    rows += [("r3", None, G3, "cultdiff/p-b", f"q1_{k}", 3) for k in range(1, 5)]
    return pd.DataFrame(rows, columns=["rater", "item_id", "image_sha256", "prompt_id", "question", "value"])


def test_rated_pairs_labels_and_weights_by_hand():
    from cultureboard.evaluators.families.cultdiff.train import Pair, rated_pairs

    refs = hand_refs({q: 5 for q in COUNTRIES}, COUNTRIES)
    prompts = {"cultdiff/p-a": {"artifact_id": "A"}, "cultdiff/p-b": {"artifact_id": "B"}}
    pairs, artifact = rated_pairs(hand_rows(), refs, prompts, per_item=3)
    a, b = refs.by_artifact["A"], refs.by_artifact["B"]
    expected = [Pair(G1, a[k], 0.0, 0.3125, "real-synthetic", 2.25) for k in range(3)]  # K = 3 of A's 5 photographs
    expected += [Pair(G2, sha(304), 1.0, 0.9375, "real-synthetic", 4.75)]
    expected += [Pair(G3, b[k], 1.0, 0.5, "real-synthetic", 3.0) for k in range(3)]
    assert sorted(pairs, key=repr) == sorted(expected, key=repr)
    assert [artifact[p] for p in sorted(pairs, key=repr)] == [artifact[p] for p in sorted(expected, key=repr)]
    assert {artifact[p] for p in pairs if p.a == G2} == {"C"} and {artifact[p] for p in pairs if p.a == G1} == {"A"}


def test_real_real_pairs_by_hand():
    """Every pair of one artifact's photographs is a positive; as many negatives pair one of its photographs with
    one of another artifact, alternately of its country and of another (its country first); w = 1; only the
    artifacts given (D is in the references but not given: held out)."""
    from cultureboard.evaluators.families.cultdiff.train import real_pairs

    refs = hand_refs({"A": 3, "B": 2, "C": 2, "D": 5}, COUNTRIES)
    pairs = real_pairs(["C", "A", "B", "A"], refs, seed=0)
    of = refs.owner

    def photos(q):
        return set(refs.by_artifact[q])

    assert {p.w for p in pairs} == {1.0} and not any(of[p.a] == "D" or of[p.b] == "D" for p in pairs)
    positives = [(p.a, p.b) for p in pairs if p.kind == "real-real positive"]
    a = refs.by_artifact["A"]
    assert {(x, y) for x, y in positives if of[x] == "A"} == {(a[0], a[1]), (a[0], a[2]), (a[1], a[2])}
    assert len(positives) == 3 + 1 + 1 and all(of[x] == of[y] for x, y in positives)
    negatives = [p for p in pairs if p.kind == "real-real negative"]
    assert all(p.y == 0.0 for p in negatives) and all(p.y == 1.0 for p in pairs if p.kind == "real-real positive")
    of_a = [p for p in negatives if of[p.a] == "A"]
    assert [of[p.b] for p in of_a] == ["B", "C", "B"] and all(p.a in photos("A") for p in of_a)
    assert [of[p.b] for p in negatives if of[p.a] == "B"] == ["A"]
    from_c = [of[p.b] for p in negatives if of[p.a] == "C"]
    assert len(from_c) == 1 and from_c[0] in "AB", "C has no other artifact of MX given: another country's"
    assert len(negatives) == len(positives)


def test_the_split_by_hand_and_no_held_out_photograph_in_training():
    """held_out 0.5 with seed 0 holds out A (ES) and C (MX). Training: B's rated pairs and the real-real pairs of B
    and D only; held out: A's and C's rated pairs; D's only rated pair, of a generated image first paired with A,
    crosses the split and is dropped (D is trained on through its real-real pairs alone). No photograph (of all 5)
    or generated image of a held-out artifact is in any training pair, and training.json's trained_on says exactly
    what was trained on."""
    from cultureboard.evaluators.families.cultdiff.train import Pair, split_pairs

    refs = hand_refs({q: 5 for q in COUNTRIES}, COUNTRIES)
    ph = refs.by_artifact
    g = {q: sha(10 + i) for i, q in enumerate(sorted(COUNTRIES))}
    rated = [Pair(g[q], ph[q][k], 1.0, 0.75, "real-synthetic", 4.0) for q in "ABC" for k in range(3)]
    artifact_of = {p: refs.owner[p.b] for p in rated}
    crossing = Pair(g["A"], ph["D"][4], 0.0, 0.25, "real-synthetic", 2.0)
    rated.append(crossing)
    artifact_of[crossing] = "D"
    split = split_pairs(rated, artifact_of, refs, TrainingConfig(held_out=0.5, seed=0))
    assert split.held_artifacts == {"A", "C"} and split.dropped == 1
    assert sorted(split.held_out, key=repr) == sorted([p for p in rated[:9] if refs.owner[p.b] in "AC"], key=repr)
    rated_train = [p for p in split.train if p.kind == "real-synthetic"]
    assert sorted(rated_train, key=repr) == rated[3:6]  # B's
    held_images = {s for q in "AC" for s in ph[q]} | {g["A"], g["C"]}
    assert not {s for p in split.train for s in (p.a, p.b)} & held_images, "a held-out image leaked into training"
    real = [p for p in split.train if p.kind != "real-synthetic"]
    assert {refs.owner[s] for p in real for s in (p.a, p.b)} == {"B", "D"}
    assert len([p for p in real if p.kind == "real-real positive"]) == 2 * 10  # C(5, 2) per training artifact
    assert split.trained_on == {"artifacts": ["B", "D"],
                                "images": sorted({s for p in split.train for s in (p.a, p.b)})}
    assert set(split.trained_on["images"]) >= {g["B"], *ph["B"], *ph["D"]}


def test_the_held_out_correlation_by_hand():
    """Four pairs (one per rated image): sim ranks 1 4 2 3, human ranks 1 3 4 2: d^2 = 0 1 4 1, rho = 1 - 6 * 6 /
    (4 * 15) = 0.4 (the 0/1 labels 0 1 1 0 would give another value)."""
    from cultureboard.evaluators.families.cultdiff.train import held_out_correlation

    result = held_out_correlation(np.array([0.1, 0.4, 0.2, 0.3]), np.array([1.5, 3.5, 4.0, 2.0]), ["a", "b", "c", "d"], 0)
    assert result["spearman"] == pytest.approx(0.4) and result["n"] == 4 and result["items"] == 4
    assert result["pearson"] == pytest.approx(np.corrcoef([0.1, 0.4, 0.2, 0.3], [1.5, 3.5, 4.0, 2.0])[0, 1])
    assert result["kendall_b"] == pytest.approx(2 / 6)  # concordant 4, discordant 2 of 6
    assert held_out_correlation(np.array([0.1, 0.4, 0.2]), np.ones(3), ["a", "b", "c"], 0)["spearman"] is None
    assert held_out_correlation(np.array([0.1, 0.4, 0.2]), np.array([1.0, 2, 3]), ["a", "a", "a"], 0)["spearman"] is None


def test_the_held_out_interval_resamples_rated_images_not_pairs():
    """Each rated image gives K = 3 pairs sharing its human score: the pair bootstrap treats 24 pairs as independent
    and is visibly too narrow; resampling the 8 images is wider. With one pair per image both draw the same
    replicates, so the intervals are equal."""
    from cultureboard.evaluators.families.cultdiff.train import held_out_correlation
    from cultureboard.evaluators.results.stats import spearman_ci

    rng = np.random.default_rng(1)
    level = rng.normal(0, 1, 8)
    human = np.repeat(np.clip(3 + level + rng.normal(0, 1.2, 8), 1, 5), 3)
    sim = np.repeat(level, 3) + rng.normal(0, 0.05, 24)
    items = np.repeat([f"img{k}" for k in range(8)], 3)
    by_item = held_out_correlation(sim, human, items, seed=0)
    by_pair = spearman_ci(sim, human, seed=0)
    assert by_item["spearman"] == pytest.approx(by_pair.value)
    assert by_item["spearman_high"] - by_item["spearman_low"] > 1.3 * (by_pair.high - by_pair.low)
    single = held_out_correlation(sim[::3], human[::3], items[::3], seed=0)
    alone = spearman_ci(sim[::3], human[::3], seed=0)
    assert (single["spearman_low"], single["spearman_high"]) == pytest.approx((alone.low, alone.high))


def test_training_uses_the_pairs_weights_and_correlates_with_the_human_score(toy, tmp_path, monkeypatch):
    """A spy on the loss records the labels and weights of every training pair of the epoch: they are the pairs'
    own (w = (s - 1) / 4 for rated pairs, 1 for real-real). A stand-in similarity equal to the held-out pair's human
    score squared makes the held-out Spearman 1 with the human score (the 0/1 label would give less)."""
    from cultureboard.evaluators.families.cultdiff import train as module

    seen, scored = [], []
    loss = module.core.weighted_contrastive_loss

    def spy(d, y, w, margin):
        seen.extend(zip(y.tolist(), w.tolist()))
        return loss(d, y, w, margin)

    def similarities(model, pairs, pixels, device, batch_size):
        scored.append(list(pairs))
        return np.array([p.score ** 2 for p in pairs])

    monkeypatch.setattr(module.core, "weighted_contrastive_loss", spy)
    monkeypatch.setattr(module, "_similarities", similarities)
    config = dataclasses.replace(toy["config"], epochs=1)
    record = train_cultdiff_s(toy["ratings"], toy["dataset"], tmp_path / "m", images=[toy["root"] / "generated"],
                              config=config)
    refs = toy["refs"]
    rows = module.read_ratings(toy["ratings"])
    prompts = {p["prompt_id"]: p for p in read_prompt_set(toy["dataset"], "cultdiff")}
    rated, artifact_of = module.rated_pairs(rows, refs, prompts, 3)
    split = module.split_pairs(rated, artifact_of, refs, config)
    expected = sorted((p.y, p.w) for p in split.train)
    assert len(seen) == len(expected)  # flattened: pytest.approx compares flat sequences only
    assert [v for pair in sorted(seen) for v in pair] == pytest.approx([v for pair in expected for v in pair])
    assert any(0 < w < 1 for _, w in seen), "rated pairs carry their human weight"
    held = set(record["data"]["held_out_artifacts"])
    assert scored[0] == scored[1] and scored[0] == split.held_out
    assert all(p.kind == "real-synthetic" and artifact_of[p] in held for p in scored[0])
    human = np.array([p.score for p in scored[0]])
    assert len(set(human)) > 2 and record["held_out"]["after"]["spearman"] == pytest.approx(1.0)
    assert record["held_out"]["after"]["items"] == len({p.a for p in scored[0]}) < len(scored[0])
    trained = set(record["trained_on"]["images"])
    assert not trained & {s for q in held for s in refs.by_artifact[q]}, "a held-out photograph leaked into training"
    assert trained == {s for p in split.train for s in (p.a, p.b)}


@pytest.mark.parametrize(("option", "value", "message"), [
    ("--lr", "nan", "--lr: nan is not a finite number > 0"),
    ("--lr", "inf", "--lr: inf is not a finite number > 0"),
    ("--lr", "-1e-4", "--lr: -0.0001 is not a finite number > 0"),
    ("--margin", "inf", "--margin: inf is not a finite number > 0"),
    ("--margin", "nan", "--margin: nan is not a finite number > 0"),
    ("--held-out", "nan", "--held-out: nan is not in [0, 1)"),
    ("--held-out", "-inf", "--held-out: -inf is not in [0, 1)"),
    ("--epochs", "0", "--epochs: 0 is not an integer from 1 to 10^6"),
    ("--batch-size", "-3", "--batch-size: -3 is not an integer from 1 to 10^6"),
    ("--seed", "-1", "--seed: -1 is not an integer from 0 to 2^63 - 1"),
    ("--seed", str(2**64), f"--seed: {2**64} is not an integer from 0 to 2^63 - 1"),
])
def test_the_cli_refuses_bad_hyper_parameters_before_training(toy, tmp_path, capsys, monkeypatch, option, value, message):
    from cultureboard.evaluators.families.cultdiff import train as module

    monkeypatch.setattr(module, "read_ratings", lambda *_: pytest.fail("read the ratings before checking the options"))
    out = tmp_path / "never"
    assert main(["train", "cultdiff-s", "--ratings", str(toy["ratings"]), "--dataset", str(toy["dataset"]),
                 "--out", str(out), option, value]) == 2
    error = capsys.readouterr().err
    assert error.startswith(f"error: {message}") and len(error.strip().splitlines()) == 1, error
    assert not out.exists()


def test_a_diverging_run_is_one_error_line(toy, tmp_path):
    config = dataclasses.replace(toy["config"], epochs=1, lr=1e30)
    with pytest.raises(CultureboardError, match="training diverged"):
        train_cultdiff_s(toy["ratings"], toy["dataset"], tmp_path / "m", images=[toy["root"] / "generated"],
                         config=config)
    assert not (tmp_path / "m").exists()
