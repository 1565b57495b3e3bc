"""The CuRe family end to end on a tiny cure-ladder: every value recomputed from the tiny scorers' own outputs
(loaded through the real loader), flags for missing references and refusals, the reduction option, sharding."""

from __future__ import annotations

import hashlib
import io
import itertools
import json
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from cultureboard.builder.dataset import prompt_config, write_dataset
from cultureboard.builder.prompts_cure import build_ladder
from cultureboard.builder.references import MISSING_SCHEMA, REFERENCE_SCHEMA
from cultureboard.evaluators import evaluate, merge_shards
from cultureboard.evaluators.engine.cache import Cache
from cultureboard.evaluators.engine.context import Context
from cultureboard.evaluators.engine.context import Image as CtxImage
from cultureboard.evaluators.engine.registry import family_of, metric_cards
from cultureboard.evaluators.engine.scorers import Scorers, load_scorer
from cultureboard.evaluators.families import cure
from cultureboard.evaluators.families.cure import CureOptions, ladder_id, score_ladder
from cultureboard.evaluators.submission.format import submission_id, write_submission
from PIL import Image
from submission_factory import evaluate_allowing_copies, without_copy_rule

from cultureboard.countries import load_countries
from cultureboard.dataset_folder import local_revision, read_prompt_set
from cultureboard.provenance import file_sha256

SIDE = 64
SEEDS, CATEGORY_IMAGES = 4, 5
ARTIFACTS = [  # jiaozi has photographs, pierogi a recorded reason for none, the bridge is in neither config
    {"qid": "cure:food-jiaozi", "name": "jiaozi", "country": "CN", "concept": "food", "category": "food",
     "subcategory": "dumpling", "source": "cure", "era": None},
    {"qid": "cure:food-pierogi", "name": "pierogi", "country": "PL", "concept": "food", "category": "food",
     "subcategory": "dumpling", "source": "cure", "era": None},
    {"qid": "cure:architecture-yangpu-bridge", "name": "Yangpu Bridge", "country": "CN", "concept": "architecture",
     "category": "architecture", "subcategory": "bridge", "source": "cure", "era": "20th-century"},
]
JIAOZI, PIEROGI, BRIDGE = (f"cure-ladder/{a['qid']}/{a['country']}" for a in ARTIFACTS)


def png(seed: int, side: int = SIDE, label: str = "") -> bytes:
    """A PNG of 8 x 8 colour blocks seeded by ``seed``; ``label`` (a text chunk) changes the bytes, not the pixels."""
    from PIL.PngImagePlugin import PngInfo

    blocks = np.random.default_rng(seed).integers(0, 256, (8, 8, 3), dtype=np.uint8)
    info = PngInfo()
    info.add_text("label", label)
    buf = io.BytesIO()
    Image.fromarray(blocks).resize((side, side), Image.Resampling.NEAREST).save(buf, format="PNG", pnginfo=info)
    return buf.getvalue()


def write_references(dataset: Path) -> dict[str, list[bytes]]:
    """CuRe's count of photographs for jiaozi (4, of two sizes: taking 3 or 5, or dropping the wrong one, shows)."""
    photos = {"cure:food-jiaozi": [png(1001), png(1002, side=48), png(1003), png(1004, side=40)]}
    rows = [{"qid": qid, "image": {"bytes": data, "path": None}, "name": "jiaozi", "countries": ["CN"],
             "concepts": ["food"], "rank": rank, "sha256": hashlib.sha256(data).hexdigest()}
            for qid, items in photos.items() for rank, data in enumerate(items, 1)]
    for name, table in (("references", pa.Table.from_pylist(rows, schema=REFERENCE_SCHEMA)),
                        ("references-missing", pa.Table.from_pylist(
                            [{"qid": "cure:food-pierogi", "name": "pierogi", "countries": ["PL"], "concepts": ["food"],
                              "candidates": 3, "reason": "no freely licensed photograph"}], schema=MISSING_SCHEMA))):
        (dataset / "data" / name).mkdir(parents=True)
        pq.write_table(table, dataset / "data" / name / "test-00000-of-00001.parquet")
    return photos


def make_submission(parent: Path, dataset: Path, model: str, refuse=lambda prompt, k: False,
                    same_bridge: bool = True) -> Path:
    """Every image of the set, 64 px blocks seeded by prompt and sample; with ``same_bridge`` the bridge's sixteen
    images have the same pixels (distinct files: a submission the copy rule refuses, scored here without it, see
    :func:`test_the_copy_rule_refuses_one_picture_for_every_level`); ``refuse(prompt, k)`` declares a refusal
    instead of an image."""
    spec = {
        "format_version": 1, "organization": "lab", "contact": "lab@example.org", "date": "2026-11-25",
        "model": {"name": model, "id": f"lab/{model}", "revision": "0" * 40, "license": "mit", "weights": "open"},
        "generation": {"pipeline": "StableDiffusionPipeline", "scheduler": "DDIMScheduler", "steps": 2,
                       "guidance_scale": 7.5, "width": SIDE, "height": SIDE, "negative_prompt": True,
                       "precision": "fp32"},
        "seeds": {"scheme": "prompt-set"},
        "prompt_set": {"name": "cure-ladder", "dataset": dataset.name, "revision": local_revision(dataset)},
        "images": {"location": "images"},
    }
    out = parent / submission_id(spec)
    lines = []
    for p in read_prompt_set(dataset, "cure-ladder"):
        for k in range(p["images_per_prompt"]):
            if refuse(p, k):
                lines.append({"prompt_id": p["prompt_id"], "sample_idx": k, "refused": True, "reason": "policy"})
                continue
            rel = f"images/{p['prompt_id']}/{k}.png"
            seed = 7 if same_bridge and ladder_id(p) == BRIDGE else int(hashlib.sha256(f"{p['prompt_id']}/{k}".encode()).hexdigest()[:8], 16)
            (out / rel).parent.mkdir(parents=True, exist_ok=True)
            (out / rel).write_bytes(png(seed, label=rel))
            lines.append({"file_name": rel, "prompt_id": p["prompt_id"], "sample_idx": k, "seed": p["seeds"][k],
                          "sha256": file_sha256(out / rel)})
    write_submission(out, spec, lines)
    return out


@pytest.fixture(scope="module")
def world(tmp_path_factory, tiny_scorers):
    root = tmp_path_factory.mktemp("cure")
    # the paper's 4 seeds per prompt (mean and median differ), and 5 category images (not the seed count)
    ladder = build_ladder(ARTIFACTS, load_countries(), images_per_prompt=SEEDS, category_images=CATEGORY_IMAGES)
    dataset = write_dataset(root / "dataset", [prompt_config(ladder)], {})
    photos = write_references(dataset)
    submission = make_submission(root / "submissions", dataset, "complete")
    results = evaluate_allowing_copies(submission, dataset, root / "results", scorers=tiny_scorers, device="cpu",
                                       cache=root / "cache", n_boot=100)
    scores = pq.read_table(results / "scores.parquet").to_pandas()
    summary = json.loads((results / "summary.json").read_text())
    return {"root": root, "dataset": dataset, "submission": submission, "results": results, "scores": scores,
            "summary": summary, "scorers": tiny_scorers, "photos": photos}


def value(scores: pd.DataFrame, metric: str, unit: str):
    row = scores[(scores["metric"] == metric) & (scores["unit_id"] == unit)]
    assert len(row) == 1, f"{metric} {unit}: {len(row)} rows"
    return row.iloc[0]


def images_of(world, unit: str | None, level: str, category: str | None = None) -> list[Image.Image]:
    """The images of one prompt: level ``level`` of ladder ``unit``, or (level "c") the P(c) of ``category``."""
    rows = [p for p in read_prompt_set(world["dataset"], "cure-ladder") if p["level"] == level and
            (p["subcategory"] == category if level == "c" else ladder_id(p) == unit)]
    [p] = rows
    return [Image.open(world["submission"] / f"images/{p['prompt_id']}/{k}.png") for k in range(p["images_per_prompt"])]


def test_family_is_registered_with_the_contract_names():
    family, spec = family_of("cure-ladder")
    cards = metric_cards()
    assert family.primary("cure-ladder") == "cure.ita.cr"
    for name in ("cure.ps", "cure.ps_delta.c", "cure.ps_delta.cr", "cure.gt", "cure.ita.c", "cure.ita.r",
                 "cure.ita.cr", "cure.div", "cure.div_delta", "cure.acceptance", "cure.ps.dinov2", "cure.gt.aimv2",
                 "cure.ita.cr.laion2b", "cure.ita.cr.wit", "cure.ita.cr.dfn5b", "cure.ita.cr.datacomp"):
        assert name in spec.metrics and cards[name].unit == "ladder", name
    assert (cards["cure.ps_delta.c"].direction, cards["cure.ps_delta.c"].target) == ("target", 0.0)
    assert cards["cure.ps"].direction == "higher"
    assert cards["cure.ps.dinov2"].scorers == ("dinov2-large",) and cards["cure.ps"].scorers == ("siglip2-so400m",)
    assert cards["cure.ita.cr.wit"].scorers == ("openclip-l14-openai",)
    assert cards["cure.div"].scorers == ("lpips-alex",)
    assert spec.shard_unit({"category": "food", "subcategory": "dumpling"}) == "food/dumpling"


def test_similarity_metrics_recomputed_from_the_encoders(world):
    scores = world["scores"]
    for suffix, name in cure.IMAGE_ENCODERS.items():
        scorer = load_scorer(name, config=world["scorers"], device="cpu")
        c = scorer.embed_images(images_of(world, None, "c", category="dumpling"))
        x = {lvl: scorer.embed_images(images_of(world, JIAOZI, lvl)) for lvl in ("n", "n,c", "n,c,r")}
        # mean over seeds of the mean cosine with the category images, computed here without the core
        phi = {lvl: float(np.mean(v @ c.T)) for lvl, v in x.items()}
        assert value(scores, f"cure.ps{suffix}", JIAOZI)["value"] == pytest.approx(phi["n"], abs=1e-5)
        assert value(scores, f"cure.ps_delta.c{suffix}", JIAOZI)["value"] == pytest.approx(phi["n,c"] - phi["n"], abs=1e-5)
        assert value(scores, f"cure.ps_delta.cr{suffix}", JIAOZI)["value"] == pytest.approx(phi["n,c,r"] - phi["n"], abs=1e-5)
        delta = json.loads(value(scores, f"cure.ps_delta.c{suffix}", JIAOZI)["detail"])
        assert (delta["images"], delta["category_images"]) == (2 * SEEDS, CATEGORY_IMAGES)
        g = scorer.embed_images([Image.open(io.BytesIO(b)) for b in world["photos"]["cure:food-jiaozi"]])
        row = value(scores, f"cure.gt{suffix}", JIAOZI)
        assert row["value"] == pytest.approx(float(np.mean(x["n"] @ g.T)), abs=1e-5)
        assert json.loads(row["detail"])["references"] == 4


def test_missing_references_are_counted_never_scored(world):
    scores, summary = world["scores"], world["summary"]
    pierogi, bridge = value(scores, "cure.gt", PIEROGI), value(scores, "cure.gt", BRIDGE)
    assert pd.isna(pierogi["value"]) and pierogi["flag"] == "no reference photographs: no freely licensed photograph"
    assert pd.isna(bridge["value"]) and bridge["flag"] == "no reference photographs: not in the references config"
    [overall] = [e for e in summary["metrics"] if e["metric"] == "cure.gt" and e["slice_type"] == "overall"]
    assert overall["n_flagged"] == 2 and overall["n_prompts"] == 1 and overall["coverage"] == pytest.approx(1 / 3)
    assert overall["value"] == pytest.approx(value(scores, "cure.gt", JIAOZI)["value"])
    assert summary["provenance"]["dataset"]["references_revision"].startswith("sha256:")


def test_alignment_uses_table14_texts_and_every_backbone(world):
    scores = world["scores"]
    texts = {"n": "An image of jiaozi.", "c": "An image of a dumpling.", "r": "An image from China.",
             "c,r": "An image of a dumpling from China."}
    jobs = [("cure.ita.c", "c", "siglip2-so400m"), ("cure.ita.r", "r", "siglip2-so400m"),
            ("cure.ita.cr", "c,r", "siglip2-so400m")]
    jobs += [(f"cure.ita.cr{suffix}", "c,r", name) for suffix, (name, _) in cure.ENTANGLEMENT.items()]
    for metric, variant, name in jobs:
        scorer = load_scorer(name, config=world["scorers"], device="cpu")
        x = scorer.embed_images(images_of(world, JIAOZI, "n"))
        t_n, t_a = scorer.embed_texts([texts["n"], texts[variant]])
        row = value(scores, metric, JIAOZI)
        assert row["value"] == pytest.approx(float(np.mean((x @ t_n + x @ t_a) / 2)), abs=1e-5), metric
        assert json.loads(row["detail"])["text"] == texts[variant]
    notes = world["summary"]["provenance"]["notes"]
    assert notes["cure.ita.cr"]["texts"] == ["An image of {n}.", "An image of {c} from {r}."]
    assert notes["cure.ita.cr.laion2b"]["training_data"] == "LAION-2B"


def test_diversity_recomputed_with_lpips_and_zero_for_identical_images(world):
    scores = world["scores"]
    lpips = load_scorer("lpips-alex", config=world["scorers"], device="cpu")
    pooled = [im for lvl in ("n", "n,c", "n,r", "n,c,r") for im in images_of(world, JIAOZI, lvl)]
    pixels = [lpips.image_transform(im.convert("RGB")) for im in pooled]
    import torch

    pairs = list(itertools.combinations(range(len(pooled)), 2))
    d = lpips.compare(torch.stack([pixels[i] for i, _ in pairs]), torch.stack([pixels[j] for _, j in pairs]))
    assert len(pairs) == 120  # CuRe's 16 images of a ladder
    within = float(np.mean([dist for (i, j), dist in zip(pairs, d) if i < SEEDS and j < SEEDS]))
    div = value(scores, "cure.div", JIAOZI)
    assert div["value"] == pytest.approx(float(np.mean(d)), abs=1e-6) and div["value"] > 0
    assert value(scores, "cure.div_delta", JIAOZI)["value"] == pytest.approx(float(np.mean(d)) - within, abs=1e-6)
    assert json.loads(div["detail"])["pairs"] == 120
    # the bridge's sixteen images are one image: no diversity at all
    assert value(scores, "cure.div", BRIDGE)["value"] == 0.0
    assert value(scores, "cure.div_delta", BRIDGE)["value"] == 0.0


def test_acceptance_and_slices(world):
    scores, summary = world["scores"], world["summary"]
    row = value(scores, "cure.acceptance", JIAOZI)
    assert row["value"] == 1.0 and json.loads(row["detail"]) == {"images": 16, "accepted": 16, "expected": 16, "refused": 0}
    assert (row["country"], row["category"], row["subcategory"]) == ("CN", "food", "dumpling")
    assert pd.isna(row["level"])  # the ladder spans four levels
    entries = {(e["metric"], e["slice_type"], e["slice"]): e for e in summary["metrics"]}
    assert entries[("cure.ps", "category", "food")]["n_prompts"] == 2
    assert entries[("cure.ps", "country", "CN")]["n_prompts"] == 2
    assert entries[("cure.ps", "region_group", "GS")]["coverage"] == 1.0
    # CuRe's category c (subcategory) and GN / GS per axis
    assert entries[("cure.ps", "subcategory", "dumpling")]["n_prompts"] == 2
    gs_food = entries[("cure.ps", "region_group_x_category", "GS x food")]
    assert gs_food["n_prompts"] == 1 and gs_food["value"] == pytest.approx(value(scores, "cure.ps", JIAOZI)["value"])


def test_the_copy_rule_refuses_one_picture_for_every_level(world):
    """The bridge's sixteen images are one picture for four prompt texts, drawn from different seeds."""
    from cultureboard.evaluators.submission.validate import validate

    report = validate(world["submission"], world["dataset"])
    assert {p.code for p in report.errors} == {"image.near_duplicate"}
    assert len(report.errors) == 12 and all("yangpu-bridge" in p.message for p in report.errors)  # 3 later levels x 4


def test_centroid_reduction_is_recorded_and_used(world):
    out = evaluate_allowing_copies(world["submission"], world["dataset"], world["root"] / "results-centroid",
                                   scorers=world["scorers"], device="cpu", cache=world["root"] / "cache", n_boot=100,
                                   option_overrides=["reduction=centroid"])
    summary = json.loads((out / "summary.json").read_text())
    assert summary["provenance"]["options"] == {"reduction": "centroid"}
    assert world["summary"]["provenance"]["options"] == {"reduction": "mean_pairwise"}
    scores = pq.read_table(out / "scores.parquet").to_pandas()
    scorer = load_scorer("siglip2-so400m", config=world["scorers"], device="cpu")
    c = scorer.embed_images(images_of(world, None, "c", category="dumpling"))
    x = scorer.embed_images(images_of(world, JIAOZI, "n"))
    m = c.mean(axis=0)
    assert value(scores, "cure.ps", JIAOZI)["value"] == pytest.approx(float(np.mean(x @ (m / np.linalg.norm(m)))), abs=1e-5)
    # the image-text and diversity metrics do not depend on it
    for metric in ("cure.ita.cr", "cure.div"):
        assert value(scores, metric, JIAOZI)["value"] == pytest.approx(value(world["scores"], metric, JIAOZI)["value"])


def test_shards_merge_to_the_unsharded_result(world):
    out = world["root"] / "results-sharded"
    for i in range(2):
        evaluate_allowing_copies(world["submission"], world["dataset"], out, scorers=world["scorers"], device="cpu",
                                 cache=world["root"] / "cache", n_boot=100, shard=(i, 2))
    merged = merge_shards(out, world["submission"].name, world["dataset"])
    assert pq.read_table(merged / "scores.parquet").equals(pq.read_table(world["results"] / "scores.parquet"))


def _context(world, drop=lambda prompt, k: False, control: str | None = None) -> Context:
    """The context evaluate builds, with the images ``drop`` selects declared refused instead (as the ``control``
    kind's submission, when given)."""
    prompts = {p["prompt_id"]: p for p in read_prompt_set(world["dataset"], "cure-ladder")}
    images, refused = [], []
    for line in (json.loads(t) for t in (world["submission"] / "metadata.jsonl").read_text().splitlines()):
        prompt = prompts[line["prompt_id"]]
        if drop(prompt, line["sample_idx"]):
            refused.append({"prompt_id": line["prompt_id"], "sample_idx": line["sample_idx"], "reason": "policy",
                            "prompt": prompt})
        else:
            images.append(CtxImage(line["file_name"], world["submission"] / line["file_name"], line["sha256"],
                                   line["prompt_id"], line["sample_idx"], prompt))
    pool = Scorers(world["scorers"], "cpu", "float32")
    return Context(images, prompts, world["dataset"], Cache(world["root"] / "cache"), pool, CureOptions(), 0, refused,
                   control=control)


def test_a_refused_ladder_changes_acceptance_not_the_other_ladders(world):
    full = pd.DataFrame(score_ladder(_context(world)))
    part = pd.DataFrame(score_ladder(_context(world, lambda p, k: ladder_id(p) == PIEROGI or
                                             (ladder_id(p) == JIAOZI and p["level"] == "n,r" and k == 0))))
    pierogi = part[part["unit_id"] == PIEROGI].set_index("metric")
    assert pierogi.loc["cure.acceptance", "value"] == 0.0
    assert json.loads(pierogi.loc["cure.acceptance", "detail"])["refused"] == 16
    others = pierogi.drop(index="cure.acceptance")
    assert others["value"].isna().all()
    assert set(others["flag"]) == {"refused: every image of P(n) was refused",
                                   "fewer than 2 images in the ladder (0 accepted)",
                                   "fewer than 2 images of P(n) (0 accepted)"}
    # one refused image of jiaozi's P(n,r): acceptance 15/16, and only the metrics that read P(n,r) change
    jiaozi = part[part["unit_id"] == JIAOZI].set_index("metric")["value"]
    before = full[full["unit_id"] == JIAOZI].set_index("metric")["value"]
    assert jiaozi["cure.acceptance"] == 15 / 16
    changed = {m for m in before.index if not np.isclose(before[m], jiaozi[m])}
    assert changed == {"cure.acceptance", "cure.div", "cure.div_delta"}
    # the bridge's ladder (another category) is untouched, and so is the category image set of the dumplings
    pd.testing.assert_frame_equal(part[part["unit_id"] == BRIDGE].reset_index(drop=True),
                                  full[full["unit_id"] == BRIDGE].reset_index(drop=True))


def test_refused_category_images_flag_the_similarity_to_the_category(world):
    rows = pd.DataFrame(score_ladder(_context(world, lambda p, k: p["level"] == "c" and p["subcategory"] == "bridge")))
    bridge = rows[rows["unit_id"] == BRIDGE].set_index("metric")
    assert bridge.loc["cure.ps", "flag"] == "refused: every image of the category prompt P(c) (architecture/bridge) was refused"
    assert pd.isna(bridge.loc["cure.ps.dinov2", "value"])
    assert pd.isna(bridge.loc["cure.ita.cr", "flag"]) and bridge.loc["cure.acceptance", "value"] == 1.0


def test_build_option_sizes_the_ladder(tmp_path):
    from cultureboard.builder import build
    from cultureboard.errors import CultureboardError

    build(tmp_path / "ds", countries=["NG"], prompt_sets=["cure-ladder"], cure_images=[1, 2])
    rows = read_prompt_set(tmp_path / "ds", "cure-ladder")
    assert {r["images_per_prompt"] for r in rows if r["level"] != "c"} == {1}
    assert {r["images_per_prompt"] for r in rows if r["level"] == "c"} == {2}
    for bad in ([2], [0, 4], "2,4"):
        with pytest.raises(CultureboardError, match="cure"):
            build(tmp_path / "bad", countries=["NG"], prompt_sets=["cure-ladder"], cure_images=bad)


def test_declared_refusals_change_coverage_and_acceptance_not_the_other_scores(world):
    """A closed model that refused pierogi's whole ladder and one image of jiaozi's P(n,r): valid, scored."""
    from cultureboard.evaluators.submission.validate import validate

    def refuse(p, k):
        return ladder_id(p) == PIEROGI or (ladder_id(p) == JIAOZI and p["level"] == "n,r" and k == 1)

    submission = make_submission(world["root"] / "submissions", world["dataset"], "refusing", refuse)
    with without_copy_rule():  # the bridge as in the world's submission
        report = validate(submission, world["dataset"])
        assert report.valid and report.checked["refused"] == 17, report.to_text()
        out = evaluate(submission, world["dataset"], world["root"] / "results", scorers=world["scorers"], device="cpu",
                       cache=world["root"] / "cache", n_boot=100)
    scores = pq.read_table(out / "scores.parquet").to_pandas()
    summary = json.loads((out / "summary.json").read_text())
    assert len(summary["provenance"]["refused"]) == 17
    entries = {(e["metric"], e["slice_type"], e["slice"]): e for e in summary["metrics"]}
    # acceptance: 16/16, 15/16 and 0/16 over the three ladders; food holds jiaozi and pierogi
    assert entries[("cure.acceptance", "overall", "all")]["value"] == pytest.approx((1 + 15 / 16 + 0) / 3)
    assert entries[("cure.acceptance", "category", "food")]["value"] == pytest.approx(15 / 32)
    # pierogi is flagged (counted, not scored), so coverage drops and nothing is averaged as zero
    ps = entries[("cure.ps", "overall", "all")]
    assert ps["coverage"] == pytest.approx(2 / 3) and ps["flags"] == {"refused: every image of P(n) was refused": 1}
    assert ps["value"] == pytest.approx(np.mean([value(scores, "cure.ps", u)["value"] for u in (JIAOZI, BRIDGE)]))
    # the images that were generated score as in the complete submission (same pixels, same seeds)
    for metric in ("cure.ps", "cure.ps_delta.c", "cure.gt", "cure.ita.cr", "cure.ita.cr.wit"):
        assert value(scores, metric, JIAOZI)["value"] == pytest.approx(value(world["scores"], metric, JIAOZI)["value"])
    bridge = scores[scores["unit_id"] == BRIDGE].reset_index(drop=True)
    pd.testing.assert_frame_equal(bridge, world["scores"][world["scores"]["unit_id"] == BRIDGE].reset_index(drop=True))


def test_reference_photos_control_leaves_each_photograph_out_of_its_own_references(world):
    """The control's images ARE the photographs (sample k = photograph k): each is compared with the others
    only, so jiaozi's cure.gt is the hand-computed leave-one-out mean, below the self-including one."""
    from cultureboard.evaluators.submission.controls import make_control

    control = make_control("reference-photos", world["dataset"], "cure-ladder",
                           world["root"] / "controls" / "control__reference-photos", size=SIDE)
    out = evaluate(Path(control["out"]), world["dataset"], world["root"] / "results", scorers=world["scorers"],
                   device="cpu", cache=world["root"] / "cache", n_boot=100)
    scores = pq.read_table(out / "scores.parquet").to_pandas()
    prompt = next(p for p in read_prompt_set(world["dataset"], "cure-ladder") if ladder_id(p) == JIAOZI and p["level"] == "n")
    for suffix, name in cure.IMAGE_ENCODERS.items():
        scorer = load_scorer(name, config=world["scorers"], device="cpu")
        x = scorer.embed_images([Image.open(Path(control["out"]) / f"images/{prompt['prompt_id']}/{k}.png")
                                 for k in range(SEEDS)])
        g = scorer.embed_images([Image.open(io.BytesIO(b)) for b in world["photos"]["cure:food-jiaozi"]])
        # image k is photograph k: it is compared with the other three only
        leave_one_out = float(np.mean([np.mean([x[k] @ g[j] for j in range(4) if j != k]) for k in range(SEEDS)]))
        row = value(scores, f"cure.gt{suffix}", JIAOZI)
        assert row["value"] == pytest.approx(leave_one_out, abs=1e-5)
        assert row["value"] < float(np.mean(x @ g.T)) - 1e-3 and row["value"] < 1  # the self-matches are gone
        assert json.loads(row["detail"])["left_out"] == "each image's own photograph (leave-one-out)"
    assert metric_cards()["cure.gt"].version == 3 and metric_cards()["cure.ps"].version == 2  # 3: near_reference
    # a model's images are compared with every photograph (the world's own check): no detail of leaving out
    assert "left_out" not in json.loads(value(world["scores"], "cure.gt", JIAOZI)["detail"])


def test_an_image_is_never_compared_with_its_own_copy_in_the_category_images(world):
    """The category-images cheat answers P(n) with copies of P(c)'s images (same pixels, re-encoded: other bytes):
    each copy is compared with the other category images only (hand-computed here), so the self-match of cosine 1
    adds nothing."""
    from cultureboard.evaluators.submission.controls import make_control

    control = Path(make_control("category-images", world["dataset"], "cure-ladder",
                                world["root"] / "controls" / "control__category-images",
                                source=world["submission"])["out"])
    out = evaluate(control, world["dataset"], world["root"] / "results", scorers=world["scorers"], device="cpu",
                   cache=world["root"] / "cache", n_boot=100)
    scores = pq.read_table(out / "scores.parquet").to_pandas()
    prompts = read_prompt_set(world["dataset"], "cure-ladder")
    [pn] = [p for p in prompts if ladder_id(p) == JIAOZI and p["level"] == "n"]
    [pc] = [p for p in prompts if p["level"] == "c" and p["subcategory"] == "dumpling"]
    n_files = [control / f"images/{pn['prompt_id']}/{k}.png" for k in range(SEEDS)]
    c_files = [world["submission"] / f"images/{pc['prompt_id']}/{k}.png" for k in range(CATEGORY_IMAGES)]
    pixels = {f: Image.open(f).convert("RGB").tobytes() for f in n_files + c_files}
    assert {pixels[f] for f in n_files} <= {pixels[f] for f in c_files}  # the cheat's images are the category's
    scorer = load_scorer(cure.IMAGE_ENCODERS[""], config=world["scorers"], device="cpu")
    x, c = (scorer.embed_images([Image.open(f) for f in files]) for files in (n_files, c_files))
    without_self = np.mean([np.mean([x[i] @ c[j] for j in range(CATEGORY_IMAGES) if pixels[c_files[j]] != pixels[n_files[i]]])
                            for i in range(SEEDS)])
    assert value(scores, "cure.ps", JIAOZI)["value"] == pytest.approx(float(without_self), abs=1e-5)
    assert value(scores, "cure.ps", JIAOZI)["value"] < float(np.mean(x @ c.T)) - 1e-3  # the self-matches are gone


def test_leave_one_out_picks_the_photograph_of_the_sample_and_flags_a_lone_one(world):
    ctx = _context(world, control="reference-photos")
    photos = ctx.references()[0]["cure:food-jiaozi"]
    jiaozi = sorted((im for im in ctx.images if ladder_id(im.prompt) == JIAOZI and im.prompt["level"] == "n"),
                    key=lambda im: im.sample_idx)
    assert [ctx.references_of(im) for im in jiaozi] == [photos[:k] + photos[k + 1:] for k in range(SEEDS)]
    assert _context(world).references_of(jiaozi[0]) == photos  # a model's image: every photograph
    # one photograph: the control has sample 0 alone (as make_control refuses the others), which has no other one
    ctx = _context(world, lambda p, k: k > 0, control="reference-photos")
    ctx._references = ({"cure:food-jiaozi": photos[:1]}, {})
    rows = pd.DataFrame(score_ladder(ctx)).set_index(["unit_id", "metric"])
    assert rows.loc[(JIAOZI, "cure.gt"), "flag"] == "no reference photograph besides the image's own"


def test_one_photograph_is_enough_for_a_models_images(world):
    """Outside the control, an artifact with a single photograph scores every image against it."""
    ctx = _context(world)
    photos = ctx.references()[0]["cure:food-jiaozi"]
    ctx._references = ({"cure:food-jiaozi": photos[:1]}, {})
    rows = pd.DataFrame(score_ladder(ctx)).set_index(["unit_id", "metric"])
    scorer = load_scorer("siglip2-so400m", config=world["scorers"], device="cpu")
    x = scorer.embed_images(images_of(world, JIAOZI, "n"))
    g = scorer.embed_images([Image.open(io.BytesIO(world["photos"]["cure:food-jiaozi"][0]))])
    assert rows.loc[(JIAOZI, "cure.gt"), "value"] == pytest.approx(float(np.mean(x @ g[0])), abs=1e-5)


def test_a_refused_level_flags_only_the_divergence_that_reads_it(world):
    """Every image of jiaozi's P(n,c) refused: Delta(n,c) is flagged as refused (the refusals counted against that
    level, not P(n)), Delta(n,c,r) and phi_PS keep their values."""
    rows = pd.DataFrame(score_ladder(_context(world, lambda p, k: ladder_id(p) == JIAOZI and p["level"] == "n,c")))
    jiaozi = rows[rows["unit_id"] == JIAOZI].set_index("metric")
    for suffix in cure.IMAGE_ENCODERS:
        assert jiaozi.loc[f"cure.ps_delta.c{suffix}", "flag"] == "refused: every image of P(n,c) was refused"
        assert pd.isna(jiaozi.loc[f"cure.ps_delta.cr{suffix}", "flag"]) and pd.isna(jiaozi.loc[f"cure.ps{suffix}", "flag"])
    assert jiaozi.loc["cure.acceptance", "value"] == 12 / 16
