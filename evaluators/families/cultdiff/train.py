"""``cultureboard train cultdiff-s``: train CultDiff-S on human similarity ratings (CultDiff section 3.3).

Data. The ratings file is in the common ratings format (``results.ratings_format``); its similarity answers
(questions ``q1_1``-``q1_4``, 1-5) label image pairs. An item is either

* an image pair, ``item_id = "pair:<sha256 of the generated image>:<sha256 of the reference>"``, or
* a CultDiff survey item: a generated image (``image_sha256``) and its ``prompt_id``, paired with each of the
  first ``references_per_item`` reference photographs of the prompt's artifact (CultDiff showed 3 of 5).

The pair's human score s is the mean over its raters of each rater's mean Q1 answer (CultDiff's image-image
similarity score); label y = 1 when s >= 3; weight w = (s - 1) / 4 (negatives weighted by w too, as the paper
writes). Reference photographs come from the dataset's ``references`` config, generated images from the
``images`` folders (found by their sha256). Real-real pairs (w = 1), built from the references of the training
artifacts: every pair of two photographs of one artifact is a positive; as many negatives pair a photograph
of the artifact with one of another artifact, alternately of the same country and of another (as available).

Split. Artifacts are split into training and held-out per country by a seeded shuffle (``held_out`` of each
country's artifacts, at least one overall); every image of a held-out artifact is held out, so no image is in
both (a pair whose two images fall in different splits is dropped and counted). Held-out pairs are
real-generated only, as CultDiff's test pairs.

Model and loss: :mod:`.learned` (twin ViT, CLS embedding, L2-normalised) and ``core.weighted_contrastive_loss``
on d = ||f(x1) - f(x2)||. Choices the paper leaves open are :class:`TrainingConfig` defaults, stated in the
model card: initialisation google/vit-base-patch16-224-in21k (the ImageNet-21k ViT-B/16 of Dosovitskiy et al.,
which the paper cites), margin 1.0, AdamW (weight decay 0.01), no augmentation, the last epoch kept (no
checkpoint selection), w as the negatives' weight. Training is deterministic for a seed on one machine: the
pair order is a seeded shuffle per epoch and torch runs with deterministic algorithms (the caller's setting is
restored afterwards). The model folder is an output of kind ``model``: only a new model replaces it.

Evaluation: Spearman's rho (bootstrap CI over rated items: the K pairs of one rated image share its human score),
Pearson r and Kendall tau-b of s(x, y) = cos(f(x), f(y)) with the human scores of the held-out pairs, before and
after training, reported as measured. ``training.json`` lists under ``trained_on`` every artifact and image
(sha256) of a training pair: the cultdiff family never scores those with this model.
"""

from __future__ import annotations

import contextlib
import json
import math
import re
from collections import defaultdict
from collections.abc import Callable, Iterator, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow.parquet as pq

from cultureboard import dataset_folder
from cultureboard.atomic import atomic_dir, check_replaceable
from cultureboard.dataset_folder import local_revision, read_prompt_set, references_revision
from cultureboard.errors import CultureboardError
from cultureboard.images import IMAGE_SUFFIXES, open_rgb
from cultureboard.provenance import code_provenance, file_sha256

from ...results.ratings_format import read_ratings
from ...results.stats import _rank_correlation, correlations, percentile_interval, resample_indices
from . import core
from .learned import SETTINGS, SETTINGS_FILE, embed, image_transform, load_encoder
from .reported import reported

#: CultDiff's image-image similarity questions (Q1.1 overall and the three aspects).
SIMILARITY_QUESTIONS = ("q1_1", "q1_2", "q1_3", "q1_4")
PAIR_ITEM = re.compile(r"pair:([0-9a-f]{64}):([0-9a-f]{64})")
DEFAULT_INIT = "google/vit-base-patch16-224-in21k"


def pair_item_id(generated: str, reference: str) -> str:
    """The ``item_id`` of a rated (generated image, reference photograph) pair, by their sha256s."""
    return f"pair:{generated}:{reference}"


@dataclass(frozen=True)
class TrainingConfig:
    """Hyperparameters: the paper's (epochs, lr, batch size; 224 px is the initialisation's image size) and the
    choices it leaves open (see the module doc)."""

    init: str = DEFAULT_INIT  # a Hub id or a local folder (ViTModel + image processor), or "random" (ViT-Base)
    epochs: int = 10
    lr: float = 1e-4
    batch_size: int = 32
    margin: float = 1.0
    weight_decay: float = 0.01
    held_out: float = 0.2
    references_per_item: int = 3
    real_pairs: bool = True
    seed: int = 0
    device: str = "cpu"

    def __post_init__(self):
        """Every hyper-parameter in range before anything trains: one error line naming the option."""
        checks = (  # (option, value, the rule, holds)
            ("--epochs", self.epochs, "an integer from 1 to 10^6", _integer(self.epochs, 1, 10**6)),
            ("--batch-size", self.batch_size, "an integer from 1 to 10^6", _integer(self.batch_size, 1, 10**6)),
            ("references per item", self.references_per_item, "an integer from 1 to 1000",
             _integer(self.references_per_item, 1, 1000)),
            ("--seed", self.seed, "an integer from 0 to 2^63 - 1", _integer(self.seed, 0, 2**63 - 1)),
            ("--lr", self.lr, "a finite number > 0", _real(self.lr) and self.lr > 0),
            ("--margin", self.margin, "a finite number > 0", _real(self.margin) and self.margin > 0),
            ("weight decay", self.weight_decay, "a finite number >= 0", _real(self.weight_decay) and self.weight_decay >= 0),
            ("--held-out", self.held_out, "in [0, 1)", _real(self.held_out) and 0 <= self.held_out < 1),
        )
        for option, value, rule, holds in checks:
            if not holds:
                raise CultureboardError(option, f"{value} is not {rule}", "e.g. the defaults: 10 epochs, lr 1e-4, "
                                        "batch size 32, margin 1.0, held-out 0.2, seed 0", exit_code=2)


def _integer(value, low: int, high: int) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and low <= value <= high


def _real(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


@dataclass(frozen=True)
class Pair:
    a: str  # sha256 (the generated image, or a photograph)
    b: str  # sha256 (a reference photograph)
    y: float
    w: float
    kind: str  # real-synthetic | real-real positive | real-real negative
    score: float | None = None  # the human score, real-synthetic pairs only


# ------------------------------------------------------------------------------------------ inputs

@dataclass
class References:
    """The dataset's reference photographs: bytes by sha256, owner artifact, artifact -> shas (rank order), and each
    artifact's country (from the artifacts config)."""

    data: dict[str, bytes]
    owner: dict[str, str]
    by_artifact: dict[str, list[str]]
    country: dict[str, str | None]


def read_references(dataset: Path) -> References:
    """Every photograph of the ``references`` config (``dataset_folder.read_references``: bytes checked against
    their sha256), with each artifact's first country from the ``artifacts`` config."""
    photos, _ = dataset_folder.read_references(dataset)
    if not photos:
        raise CultureboardError(dataset, "has no references config, which CultDiff-S pairs the ratings with",
                                "run `cultureboard fetch-references --dataset DIR` first")
    refs = References({}, {}, defaultdict(list), {})
    for qid in sorted(photos):
        for photo in photos[qid]:
            refs.data[photo["sha256"]] = photo["data"]
            refs.owner.setdefault(photo["sha256"], qid)
            refs.by_artifact[qid].append(photo["sha256"])
    for shard in sorted((dataset / "data" / "artifacts").glob("*.parquet")):
        for row in pq.read_table(shard, columns=["qid", "country"]).to_pylist():
            refs.country.setdefault(row["qid"], row["country"])
    return refs


def index_images(folders: Sequence[str | Path], wanted: set[str]) -> dict[str, Path]:
    """{sha256: file} of the image files under ``folders`` whose sha256 is in ``wanted``."""
    found: dict[str, Path] = {}
    for folder in map(Path, folders):
        if not folder.is_dir():
            raise CultureboardError(folder, "is not a folder", "pass folders that hold the rated images (--images)",
                                    exit_code=2)
        for path in sorted(folder.rglob("*")):
            if path.suffix.lower() in IMAGE_SUFFIXES and path.is_file():
                sha = file_sha256(path)
                if sha in wanted:
                    found.setdefault(sha, path)
    return found


def rated_pairs(rows: pd.DataFrame, refs: References, prompts: dict[str, dict], per_item: int) -> tuple[list, dict]:
    """(pairs, artifact of each pair): the real-generated pairs with their human scores (module doc)."""
    rows = rows[rows["question"].isin(SIMILARITY_QUESTIONS)]
    if rows.empty:
        raise CultureboardError("--ratings", f"has no answers to the similarity questions {', '.join(SIMILARITY_QUESTIONS)}",
                                "import CultDiff's survey (evaluators/results/studies/cultdiff.py) or rate image pairs on them")
    per_rater = rows.groupby(["item_id", "image_sha256", "prompt_id", "rater"], dropna=False, sort=True)["value"].mean()
    items = per_rater.groupby(level=[0, 1, 2], dropna=False, sort=True).mean()
    pairs, artifact, problems = [], {}, []
    for (item_id, image, prompt_id), score in items.items():
        match = PAIR_ITEM.fullmatch(item_id) if isinstance(item_id, str) else None
        if match:
            a, b = match.groups()
            qid = refs.owner.get(b) or refs.owner.get(a)
            partners = [b]
            if qid is None:
                problems.append(f"pair {item_id[:22]}...: neither image is a reference photograph of the dataset")
                continue
        elif isinstance(image, str) and isinstance(prompt_id, str):
            qid = (prompts.get(prompt_id) or {}).get("artifact_id")
            partners = refs.by_artifact.get(qid, [])[:per_item]
            if not partners:
                problems.append(f"item {image[:12]}... of {prompt_id}: its artifact {qid} has no reference photograph")
                continue
            a = image
        else:
            problems.append(f"item {item_id or image}: names neither an image pair (item_id pair:SHA:SHA) nor a "
                            "generated image with its prompt_id")
            continue
        for b in partners:
            pair = Pair(a, b, float(core.pair_label(score)), core.pair_weight(score), "real-synthetic", float(score))
            pairs.append(pair)
            artifact[pair] = qid
    if problems:
        raise CultureboardError("--ratings", f"{len(problems)} rated item(s) cannot be paired: " + "; ".join(problems[:3]),
                                "rate generated images of the dataset's prompts, or pairs with a reference photograph")
    return pairs, artifact


def split_artifacts(qids: Sequence[str], country: dict[str, str | None], fraction: float, seed: int) -> set[str]:
    """The held-out artifacts: per country, round(fraction x its artifacts) of a seeded shuffle; at least one in
    all when fraction > 0 and there are two or more artifacts."""
    if fraction <= 0 or len(qids) < 2:
        return set()
    rng = np.random.default_rng(seed)
    by_country: dict[str, list[str]] = defaultdict(list)
    for q in sorted(set(qids)):
        by_country[str(country.get(q))].append(q)
    held = set()
    for c in sorted(by_country):
        members = [str(q) for q in rng.permutation(by_country[c])]
        held.update(members[:round(fraction * len(members))])
    if not held:
        held.add(str(rng.choice(sorted(set(qids)))))
    return held


def real_pairs(artifacts: Sequence[str], refs: References, seed: int) -> list[Pair]:
    """Real-real pairs among ``artifacts`` (module doc), w = 1."""
    rng = np.random.default_rng(seed)
    artifacts = sorted(a for a in set(artifacts) if refs.by_artifact.get(a))
    out = []
    for qid in artifacts:
        own = refs.by_artifact[qid]
        same = [a for a in artifacts if a != qid and refs.country.get(a) == refs.country.get(qid)]
        other = [a for a in artifacts if a != qid and refs.country.get(a) != refs.country.get(qid)]
        positives = [(own[i], own[j]) for i in range(len(own)) for j in range(i + 1, len(own))]
        out += [Pair(a, b, 1.0, 1.0, "real-real positive") for a, b in positives]
        for k in range(len(positives)):
            pool = (same if k % 2 == 0 else other) or same or other
            if not pool:
                break
            partner = refs.by_artifact[str(rng.choice(pool))]
            out.append(Pair(own[int(rng.integers(len(own)))], partner[int(rng.integers(len(partner)))], 0.0, 1.0,
                            "real-real negative"))
    return out


@dataclass(frozen=True)
class Split:
    """Training and held-out pairs, and what the model is trained on (recorded in training.json)."""

    train: list[Pair]
    held_out: list[Pair]  # real-generated pairs of held-out artifacts only
    held_artifacts: frozenset[str]
    dropped: int  # rated pairs whose two images fell in different splits
    trained_on: dict  # {"artifacts": [...], "images": [sha256, ...]}: every artifact and image of a training pair


def split_pairs(rated: list[Pair], artifact_of: dict, refs: References, config: TrainingConfig) -> Split:
    """Split the rated pairs by artifact (:func:`split_artifacts`; every photograph goes with its artifact, a
    generated image with the first artifact it is paired with; a pair across the two sides is dropped) and add
    the real-real pairs of the training artifacts (:func:`real_pairs`) to the training side."""
    held = split_artifacts(list(artifact_of.values()), refs.country, config.held_out, config.seed)
    side = {sha: q in held for sha, q in refs.owner.items()}
    for pair in rated:
        side.setdefault(pair.a, artifact_of[pair] in held)
    train, test, dropped = [], [], 0
    for pair in rated:
        if side[pair.a] != side[pair.b]:
            dropped += 1
        else:
            (test if side[pair.a] else train).append(pair)
    if config.real_pairs:
        train += real_pairs([q for q in artifact_of.values() if q not in held], refs, config.seed)
    images = {s for p in train for s in (p.a, p.b)}
    artifacts = {artifact_of[p] for p in train if p.kind == "real-synthetic"} | {refs.owner[s] for s in images
                                                                                  if s in refs.owner}
    return Split(train, test, frozenset(held), dropped, {"artifacts": sorted(artifacts), "images": sorted(images)})


# ------------------------------------------------------------------------------------------ training

def _pixels(shas: set[str], refs: References, files: dict[str, Path], transform) -> dict:
    import io

    out = {}
    for sha in sorted(shas):
        image = open_rgb(io.BytesIO(refs.data[sha])) if sha in refs.data else open_rgb(files[sha])
        out[sha] = transform(image)
    return out


def _similarities(model, pairs: list[Pair], pixels: dict, device: str, batch_size: int) -> np.ndarray:
    import torch

    model.eval()
    out = []
    with torch.inference_mode():
        for start in range(0, len(pairs), batch_size):
            part = pairs[start:start + batch_size]
            ea = embed(model, torch.stack([pixels[p.a] for p in part]).to(device))
            eb = embed(model, torch.stack([pixels[p.b] for p in part]).to(device))
            out.append((ea * eb).sum(-1).cpu().numpy())
    return np.concatenate(out) if out else np.zeros(0)


def held_out_correlation(similarity: np.ndarray, human: np.ndarray, items: Sequence[str], seed: int,
                         n_boot: int = 1000, level: float = 0.95) -> dict:
    """Spearman's rho, Pearson r and Kendall tau-b of the held-out pairs' similarities with their human scores
    (the mean Q1 score, not the 0/1 label), with a percentile bootstrap CI of rho that resamples rated items:
    ``items`` names each pair's rated (generated) image, whose K pairs share one human score, so a replicate
    draws as many items as there are, with replacement, and takes all pairs of each (resampling the pairs as
    if independent would give too narrow an interval). Nulls, with the reason, when fewer than 3 pairs or 2
    items, or a constant side, leave them undefined."""
    similarity, human = np.asarray(similarity, dtype=float), np.asarray(human, dtype=float)
    codes, names = pd.factorize(pd.Series(list(items), dtype=object), sort=True)
    n = len(similarity)
    if n < 3 or len(names) < 2 or np.ptp(similarity) == 0 or np.ptp(human) == 0:
        return {"n": n, "items": len(names), "spearman": None, "spearman_low": None, "spearman_high": None,
                "pearson": None, "kendall_b": None,
                "note": "undefined: fewer than 3 held-out pairs or 2 rated items, or constant scores"}
    c = correlations(similarity, human)
    members = [np.flatnonzero(codes == k) for k in range(len(names))]
    replicates = np.array([_rank_correlation(similarity[idx][None], human[idx][None])[0] for idx in
                           (np.concatenate([members[k] for k in draw]) for draw in
                            resample_indices(len(names), n_boot, np.random.default_rng(seed)))])
    replicates = replicates[np.isfinite(replicates)]
    low, high = percentile_interval(replicates, level) if replicates.size else (None, None)
    return {"n": n, "items": len(names), "spearman": c.spearman, "spearman_low": low, "spearman_high": high,
            "pearson": c.pearson, "kendall_b": c.kendall, "ci": f"{level:.0%} percentile bootstrap over rated items"}


def _load_init(config: TrainingConfig):
    import torch

    torch.manual_seed(config.seed)
    if config.init == "random":
        from transformers import ViTConfig, ViTImageProcessor, ViTModel

        return ViTModel(ViTConfig(), add_pooling_layer=False), ViTImageProcessor(), "random ViT-Base (ViTConfig())"
    folder = Path(config.init)
    if not folder.is_dir():
        from ...engine.embedding import TRANSFORMERS_FILES
        from ...engine.scorers import hub_files

        folder, revision = hub_files("cultdiff-s initialisation", config.init, "main", TRANSFORMERS_FILES)
        described = f"{config.init}@{revision}"
    else:
        described = f"local folder {folder.name}"
    try:
        model, processor = load_encoder(folder)
    except (OSError, ValueError) as exc:
        raise CultureboardError(f"--init {config.init}", f"is not a ViT model with an image processor ({exc})",
                                "pass a Hub id or folder of a transformers ViT (e.g. google/vit-base-patch16-224-in21k)"
                                ) from None
    return model, processor, described


@contextlib.contextmanager
def _deterministic_algorithms() -> Iterator[None]:
    """torch's deterministic algorithms within the block (warn-only: an operation without a deterministic
    version warns), and the caller's own setting back afterwards, however the block ends."""
    import torch

    before = torch.are_deterministic_algorithms_enabled(), torch.is_deterministic_algorithms_warn_only_enabled()
    torch.use_deterministic_algorithms(True, warn_only=True)
    try:
        yield
    finally:
        torch.use_deterministic_algorithms(before[0], warn_only=before[1])


def train_cultdiff_s(ratings: str | Path, dataset: str | Path, out: str | Path, *, images: Sequence[str | Path] = (),
                     config: TrainingConfig = TrainingConfig(), echo: Callable[[str], None] = lambda _: None) -> dict:
    """Train CultDiff-S (module doc) and write the model folder ``out``; returns the training record."""
    import torch
    from transformers.utils import logging as transformers_logging

    ratings, dataset, out = Path(ratings), Path(dataset), Path(out)
    check_replaceable(out, kind="model")
    rows = read_ratings(ratings)
    refs = read_references(dataset)
    prompts = {}
    for name in sorted({p.split("/", 1)[0] for p in rows["prompt_id"].dropna()}):
        prompts.update({p["prompt_id"]: p for p in read_prompt_set(dataset, name)})
    rated, artifact_of = rated_pairs(rows, refs, prompts, config.references_per_item)
    generated = {p.a for p in rated if p.a not in refs.data}
    files = index_images(images, generated)
    missing = sorted(generated - set(files))
    if missing:
        raise CultureboardError("--images", f"hold no file of {len(missing)} rated image(s), e.g. sha256 {missing[0]}",
                                "pass the folders (e.g. the submissions) that hold the rated images")

    split = split_pairs(rated, artifact_of, refs, config)
    splits = {"train": split.train, "held_out": split.held_out}
    if not split.train:
        raise CultureboardError("--ratings", "leaves no training pair", "rate more items, or lower --held-out")

    with _deterministic_algorithms():
        transformers_logging.disable_progress_bar()
        model, processor, described = _load_init(config)
        model = model.to(config.device)
        transform = image_transform(processor)
        pixels = _pixels({s for part in splits.values() for p in part for s in (p.a, p.b)}, refs, files, transform)
        test = splits["held_out"]
        human = np.array([p.score for p in test], dtype=float)
        items = [p.a for p in test]
        before = held_out_correlation(_similarities(model, test, pixels, config.device, config.batch_size), human,
                                      items, config.seed)
        optimizer = torch.optim.AdamW(model.parameters(), lr=config.lr, weight_decay=config.weight_decay)
        losses = []
        train = splits["train"]
        for epoch in range(config.epochs):
            model.train()
            order = np.random.default_rng([config.seed, epoch]).permutation(len(train))
            total = 0.0
            for start in range(0, len(order), config.batch_size):
                part = [train[i] for i in order[start:start + config.batch_size]]
                batch = torch.stack([pixels[p.a] for p in part] + [pixels[p.b] for p in part])
                both = embed(model, batch.to(config.device))
                ea, eb = both[:len(part)], both[len(part):]
                d = ((ea - eb) ** 2).sum(-1).clamp_min(1e-12).sqrt()
                y = torch.tensor([p.y for p in part], device=config.device)
                w = torch.tensor([p.w for p in part], device=config.device)
                loss = core.weighted_contrastive_loss(d, y, w, config.margin)
                value = float(loss.detach())
                if not math.isfinite(value):
                    raise CultureboardError("--lr", f"training diverged: the loss is {value} in epoch {epoch + 1}",
                                            "lower --lr (CultDiff used 1e-4)")
                optimizer.zero_grad()
                loss.backward()
                optimizer.step()
                total += value * len(part)
            losses.append(total / len(train))
            echo(f"epoch {epoch + 1}/{config.epochs}: loss {losses[-1]:.4f}")
        after = held_out_correlation(_similarities(model, test, pixels, config.device, config.batch_size), human,
                                     items, config.seed)

    counts = {name: dict(sorted(pd.Series([p.kind for p in part], dtype=object).value_counts().items()))
              for name, part in splits.items()}
    record = {
        "format": SETTINGS,
        "data": {"ratings": ratings.name, "ratings_sha256": file_sha256(ratings), "dataset": dataset.name,
                 "dataset_revision": local_revision(dataset), "references_revision": references_revision(dataset),
                 "rated_items": len({(p.a, artifact_of[p]) for p in rated}), "pairs": counts,
                 "pairs_dropped_across_splits": split.dropped,
                 "artifacts": {"train": len(split.trained_on["artifacts"]), "held_out": len(split.held_artifacts)},
                 "held_out_artifacts": sorted(split.held_artifacts)},
        "trained_on": split.trained_on,
        "hyperparameters": {**{k: v for k, v in asdict(config).items() if k not in ("device", "seed")},
                            "init": described, "image_size": int(model.config.image_size),
                            "optimizer": f"AdamW(lr={config.lr}, weight_decay={config.weight_decay})",
                            "label": "positive when the mean Q1.1-Q1.4 score >= 3", "weight": "(s - 1) / 4, negatives too",
                            "loss": "mean_i w_i [y_i d_i^2 + (1 - y_i) max(0, m - d_i)^2], d = ||f(x1) - f(x2)||",
                            "embedding": "CLS token after the final layer norm, L2-normalised; score cos(f(x), f(y))",
                            "augmentation": "none", "checkpoint": "the last epoch (no selection)"},
        "seed": config.seed, "device": config.device, "losses": losses,
        "held_out": {"after": after, "before": before, "reported_by_paper": {
            "spearman": reported()["cultdiff.learned"]["value"],
            "source": "CultDiff Table 2: the paper's own model on its 2.7k test pairs (not comparable)"}},
        "code": code_provenance(("torch", "transformers", "numpy")),
    }
    with atomic_dir(out, kind="model") as tmp:
        model.save_pretrained(tmp)
        processor.save_pretrained(tmp)
        (tmp / SETTINGS_FILE).write_text(json.dumps(SETTINGS, indent=2, sort_keys=True) + "\n", encoding="utf-8")
        (tmp / "training.json").write_text(json.dumps(record, indent=2, sort_keys=True, allow_nan=False) + "\n",
                                           encoding="utf-8")
        (tmp / "README.md").write_text(model_card(record), encoding="utf-8")
    return record


def _number(value) -> str:
    return "n/a" if value is None else f"{value:.3f}"


def model_card(record: dict) -> str:
    """The model folder's README: what it is, how to load it, data, hyperparameters, seed, held-out correlation."""
    data, hp, after, before = record["data"], record["hyperparameters"], record["held_out"]["after"], record["held_out"]["before"]
    pairs = "; ".join(f"{split}: " + ", ".join(f"{n} {kind}" for kind, n in kinds.items())
                      for split, kinds in data["pairs"].items())
    rows = "\n".join(f"| {k} | {v} |" for k, v in sorted(hp.items()))
    ci = (f"{_number(after['spearman'])} (95% CI {_number(after['spearman_low'])} to {_number(after['spearman_high'])})"
          if after["spearman"] is not None else f"undefined ({after.get('note')})")
    return f"""---
tags: [cultureboard, cultdiff-s, image-similarity]
library_name: transformers
---

# CultDiff-S (cultureboard reimplementation)

A learned image-image similarity for real reference photographs and generated images of cultural artifacts,
trained as CultDiff (Bayramli et al., ACL 2025, section 3.3) describes: a twin ViT image encoder with a
contrastive margin loss weighted by human similarity ratings. Score: cos(f(x), f(y)) in [-1, 1], higher is
more similar. Not the authors' model (none was released).

Load it in cultureboard with `cultdiff.learned: {{path: THIS_FOLDER}}` (or `model: ORG/REPO` once uploaded) in
`--scorers FILE`.

## Training data

- ratings: `{data['ratings']}` (sha256 `{data['ratings_sha256']}`), {data['rated_items']} rated items
- dataset `{data['dataset']}`, revision `{data['dataset_revision']}`, references `{data['references_revision']}`
- pairs: {pairs}; {data['pairs_dropped_across_splits']} pairs dropped (their images fell in two splits)
- artifacts: {data['artifacts']['train']} training, {data['artifacts']['held_out']} held out (every image of a
  held-out artifact is held out)

## Hyperparameters (seed {record['seed']}, device {record['device']})

| setting | value |
|---|---|
{rows}

The paper gives the architecture (ViT-Base, 224 px), 10 epochs, learning rate 1e-4 and batch size 32; the
initialisation, margin, optimizer, weight normalisation, pooling, augmentation and checkpoint choice above are
this reimplementation's, where the paper is silent.

## Held-out correlation with the human similarity scores

Over {after['n']} held-out real-generated pairs of {after['items']} rated images (the CI resamples rated images):
Spearman {ci}, Pearson {_number(after['pearson'])}, Kendall tau-b {_number(after['kendall_b'])}. Before training:
Spearman {_number(before['spearman'])}. For reference only, the paper's own model has Spearman
{record['held_out']['reported_by_paper']['spearman']} on its 2.7k test pairs (other data and another model: not comparable).

The family scores with this model only the artifacts it was not trained on: `training.json` lists under
`trained_on` the {len(record['trained_on']['artifacts'])} artifacts and {len(record['trained_on']['images'])} images of its training pairs.
Training loss per epoch: {', '.join(f'{x:.4f}' for x in record['losses'])}.
"""
