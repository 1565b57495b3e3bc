"""A toy second family registers with no edit to the engine, the CLI or the site, and uses all three scorer
kinds: its values are recomputed by hand from the scorers, sharding is exact for its pair units, its options
come from --option, `cultureboard metrics` lists it and the site ranks it by its headline."""

from __future__ import annotations

import io
import json
from contextlib import redirect_stdout
from dataclasses import dataclass

import numpy as np
import pyarrow.parquet as pq
import pytest
from PIL import Image

from cultureboard.builder.dataset import prompt_config, write_dataset
from cultureboard.builder.prompt_sets import PromptSet
from cultureboard.cli import main
from cultureboard.evaluators import evaluate, merge_shards
from cultureboard.evaluators.engine.batching import FORWARD_PASSES
from cultureboard.evaluators.engine.context import Context, score_row
from cultureboard.evaluators.engine.registry import Family, MetricCard, PromptSetSpec, register, unregister
from cultureboard.evaluators.engine.scorers import load_scorer
from cultureboard.evaluators.results.stats import bootstrap_ci, cluster_bootstrap_ci
from cultureboard.evaluators.results.tiers import RULE_VERSION
from cultureboard.site.render import build_site
from results_factory import make_submission

SOURCE = "a toy family of the tests"


@dataclass(frozen=True)
class ToyOptions:
    question: str = "Is this a photograph?"
    shift: float = 0.0


def score_toy(ctx: Context) -> list[dict]:
    rows = []
    q = ctx.options.question
    p_yes = ctx.probability("qwen2.5-vl-7b", [(im, q) for im in ctx.images])
    emb = ctx.image_embeddings("dinov2-base")
    by_prompt = {}
    for im, p in zip(ctx.images, p_yes):
        rows.append(score_row("toy.yes", p + ctx.options.shift, im))
        by_prompt.setdefault(im.prompt_id, []).append(im)
    for pid, (a, b) in sorted((k, sorted(v, key=lambda im: im.sample_idx)) for k, v in by_prompt.items()):
        rows.append(score_row("toy.cosine", float(emb[a.sha256] @ emb[b.sha256]), b))
        [d] = ctx.distances("lpips-alex", [(a, b)])
        rows.append(score_row("toy.lpips", d, unit_id=pid, slices=a.prompt, detail={"images": 2}))
    ctx.note("toy.yes", "question", q)
    return rows


#: A plug-in's own evidence record (a family outside the repository cannot edit evidence.yaml).
EVIDENCE = {"evidence": "correlation", "statistic": "spearman", "value": "0.45", "ceiling": "0.6", "human": "raters",
            "domain": "the toy prompts", "source": "a toy study", "quotes": ["0.45"],
            "smallest_difference": {"value": 0.03, "reason": "the tests say so"}}


def card(name, unit="image", primary=False, direction="higher", scorers=("qwen2.5-vl-7b",), cluster=None,
         evidence=None):
    return MetricCard(name, "toy", name, "by hand", direction, "[0, 1]", scorers, SOURCE, version=1, unit=unit,
                      primary=primary, direction_evidence="the tests say so" if direction != "none" else "",
                      cluster=cluster, evidence=evidence)


TOY = Family(
    name="toy", title="Toy", description="A family that exists only in the tests.", papers={},
    prompt_sets=(PromptSetSpec("toy-set", score_toy, ("toy.yes", "toy.cosine", "toy.lpips"),
                               shard_unit=lambda p: p["prompt_id"], units={"pair": lambda p: p["prompt_id"]},
                               slice_fields=("template",), cross_slices=(("country", "template"),)),),
    metrics=(card("toy.yes", primary=True, evidence=EVIDENCE), card("toy.cosine", scorers=("dinov2-base",), cluster="template"),
             card("toy.lpips", unit="pair", direction="lower", scorers=("lpips-alex",))),
    options=ToyOptions,
)


@pytest.fixture(scope="module")
def toy_registered():
    register(TOY)
    yield TOY
    unregister("toy")


@pytest.fixture(scope="module")
def world(tmp_path_factory, tiny_scorers, toy_registered):
    root = tmp_path_factory.mktemp("toy")
    rows = [{"prompt_id": f"toy-set/{k}", "prompt_set": "toy-set", "text": f"a photo number {k}",
             "negative_prompt": "", "kind": "t2i", "images_per_prompt": 2, "seeds": [0, 1],
             "seed_scheme": "consecutive", "country": c, "continent": "Europe" if c == "IT" else "Africa",
             "region_group": "GN" if c == "IT" else "GS", "category": "cuisine", "template": f"t{k % 2}"}
            for k, c in enumerate(["IT", "NG", "IT", "NG", "IT", "NG"])]
    dataset = write_dataset(root / "dataset", [prompt_config(PromptSet("toy-set", "1", "toy", "toy", rows))], {})
    submission = make_submission(root / "submissions", dataset, "toy-set")
    return {"root": root, "dataset": dataset, "submission": submission, "scorers": tiny_scorers}


def run(world, out, **kw):
    return evaluate(world["submission"], world["dataset"], out, scorers=world["scorers"], device="cpu", n_boot=100,
                    cache=world["root"] / "cache", **kw)


def test_values_are_the_scorers_own(world, tmp_path):
    result = run(world, tmp_path)
    scores = pq.read_table(result / "scores.parquet").to_pandas()
    summary = json.loads((result / "summary.json").read_text())
    judge = load_scorer("qwen2.5-vl-7b", config=world["scorers"])
    dino = load_scorer("dinov2-base", config=world["scorers"])
    lpips = load_scorer("lpips-alex", config=world["scorers"])
    for row in scores[scores.metric == "toy.yes"].itertuples():
        pil = Image.open(world["submission"] / row.file_name).convert("RGB")
        assert row.value == pytest.approx(float(np.exp(judge.answer_logprob([pil], ["Is this a photograph?"], "Yes")[0])),
                                          rel=1e-5)
    for row in scores[scores.metric == "toy.lpips"].itertuples():
        a, b = (Image.open(world["submission"] / f"images/{row.unit_id}/{k}.png").convert("RGB") for k in (0, 1))
        expected = lpips.compare(lpips.image_transform(a)[None], lpips.image_transform(b)[None])[0]
        assert row.value == pytest.approx(float(expected), abs=1e-6) and row.prompt_id != row.prompt_id  # null
        ea, eb = dino.embed_images([a, b])
        cos = scores[(scores.metric == "toy.cosine") & (scores.prompt_id == row.unit_id)]["value"].item()
        assert cos == pytest.approx(float(ea @ eb), abs=1e-5)
    assert set(scores["template"]) == {"t0", "t1"}
    entries = {(e["metric"], e["slice_type"], e["slice"]): e for e in summary["metrics"]}
    assert entries[("toy.lpips", "overall", "all")]["n_prompts"] == 6 and entries[("toy.lpips", "overall", "all")][
        "n_images"] == 12
    assert ("toy.yes", "template", "t1") in entries and ("toy.yes", "country", "NG") in entries
    cross = entries[("toy.lpips", "country_x_template", "IT x t0")]  # prompts 0, 2 and 4
    assert cross["n_prompts"] == 3 and cross["coverage"] == 1.0 and ("toy.lpips", "country_x_template", "IT x t1") not in entries
    prov = summary["provenance"]
    # toy.cosine's card names the cluster "template": its CI is the two-stage bootstrap over templates, then prompts
    cosine = scores[scores.metric == "toy.cosine"].sort_values("unit_id")
    seed, n_boot = prov["settings"]["seed"], prov["settings"]["n_boot"]
    two = cluster_bootstrap_ci([[v] for v in cosine["value"]], list(cosine["template"]), n_boot=n_boot, seed=seed)
    one = bootstrap_ci([[v] for v in cosine["value"]], n_boot=n_boot, seed=seed)
    shown = entries[("toy.cosine", "overall", "all")]
    assert (shown["value"], shown["ci_low"], shown["ci_high"]) == pytest.approx(tuple(two))
    assert (shown["ci_low"], shown["ci_high"]) != pytest.approx((one.low, one.high))
    yes = entries[("toy.yes", "overall", "all")]  # no cluster: the bootstrap over prompts
    assert yes["ci_note"] is None and prov["settings"]["ci_method"] == 3
    assert prov["settings"]["forward_passes"] == FORWARD_PASSES  # one-input-a-pass runs are never ranked with it
    assert prov["settings"]["validity_rule"] == RULE_VERSION  # results of another tier rule are never ranked with it
    yes_card, cosine_card = family_card(summary, "toy.yes"), family_card(summary, "toy.cosine")
    assert (yes_card["tier"], yes_card["smallest_difference"]) == ("validated", 0.03)  # 0.45 >= 0.4 and 0.6 x 0.6
    assert (cosine_card["tier"], cosine_card["evidence"]) == ("diagnostic", None)  # no record: never ranked
    assert family_card(summary, "toy.cosine")["cluster"] == "template"
    assert prov["family"] == "toy" and prov["options"] == {"question": "Is this a photograph?", "shift": 0.0}
    assert {s["kind"] for s in prov["scorers"]} == {"embedding", "pairwise", "judge"}
    assert prov["notes"] == {"toy.yes": {"question": "Is this a photograph?"}}


def test_a_plug_in_evidence_record_is_checked_when_registered():
    bad = Family("toy5", "Toy 5", "", {}, (PromptSetSpec("toy5-set", score_toy, ("toy5.a",), shard_unit=lambda p: ""),),
                 (MetricCard("toy5.a", "toy5", "a", "f", "higher", "r", (), SOURCE, 1, primary=True,
                             direction_evidence="x", evidence={**EVIDENCE, "evidence": "strong"}),), ToyOptions)
    with pytest.raises(ValueError, match="toy5.a: its evidence record evidence is 'strong'"):
        register(bad)


def family_card(summary, name):
    return next(c for c in summary["metrics_info"] if c["name"] == name)


def test_sharded_equals_unsharded(world, tmp_path):
    whole = run(world, tmp_path / "whole")
    for i in range(4):
        run(world, tmp_path / "sharded", shard=(i, 4))
    merged = merge_shards(tmp_path / "sharded", whole.name, world["dataset"])
    for name in ("summary.json", "scores.parquet"):
        assert (merged / name).read_bytes() == (whole / name).read_bytes()


def test_options_from_the_cli_and_the_metrics_listing(world, tmp_path):
    code = main(["evaluate", str(world["submission"]), "--dataset", str(world["dataset"]), "--out", str(tmp_path),
                 "--scorers", str(world["scorers"]), "--cache", str(world["root"] / "cache"), "--device", "cpu",
                 "--option", "shift=0.25", "--option", "toy.question=Is this food?"])
    assert code == 0
    summary = json.loads(next(tmp_path.glob("*/summary.json")).read_text())
    assert summary["provenance"]["options"] == {"question": "Is this food?", "shift": 0.25}
    assert main(["evaluate", str(world["submission"]), "--dataset", str(world["dataset"]), "--out",
                 str(tmp_path / "x"), "--option", "shift=lots"]) == 2
    out = io.StringIO()
    with redirect_stdout(out):
        assert main(["metrics", "--json"]) == 0
    listing = {f["family"]: f for f in json.loads(out.getvalue())["families"]}
    assert listing["toy"]["prompt_sets"] == [{"name": "toy-set", "primary": "toy.yes",
                                              "metrics": ["toy.yes", "toy.cosine", "toy.lpips"]}]
    assert {m["name"]: m["version"] for m in listing["toy"]["metrics"]} == {"toy.yes": 1, "toy.cosine": 1,
                                                                           "toy.lpips": 1}
    assert "cube" in listing


def test_the_site_ranks_it_by_its_headline(world, tmp_path):
    results = tmp_path / "results"
    run(world, results)
    build_site(results, world["dataset"], world["submission"].parent, tmp_path / "site")
    index = (tmp_path / "site" / "index.html").read_text()
    assert "toy-set" in index and "Rank range on toy.yes" in index
    assert (tmp_path / "site" / "metric" / "toy.lpips.html").is_file()


def test_names_are_never_shared(toy_registered):
    with pytest.raises(ValueError, match="the family name 'toy' is taken"):
        register(TOY)
    clash = Family("toy2", "t", "d", {}, (PromptSetSpec("toy-set-2", score_toy, ("toy.yes",), lambda p: p["prompt_id"]),),
                   (card("toy.yes", primary=True),), ToyOptions)
    with pytest.raises(ValueError, match="toy.yes"):
        register(clash)
    no_headline = Family("toy3", "t", "d", {}, (PromptSetSpec("toy-set-3", score_toy, ("toy3.a",),
                                                              lambda p: p["prompt_id"]),),
                         (MetricCard("toy3.a", "toy3", "a", "f", "higher", "r", (), SOURCE, 1),), ToyOptions)
    with pytest.raises(ValueError, match="exactly one primary metric"):
        register(no_headline)


def test_units_spanning_several_slices_count_in_each():
    """A unit whose prompts take several values of a field (a chain over edit steps) counts in each slice."""
    import pandas as pd

    from cultureboard.evaluators.results.aggregate import summarize, unit_values

    assert unit_values([{"country": "IT", "step": "0"}, {"country": "IT", "step": "1"}, {"country": "IT",
                                                                                        "step": None}]) == {
        "country": "IT", "step": ("0", "1")}
    rows = pd.DataFrame([{"metric": "m", "unit_id": u, "sample_idx": None, "file_name": None, "value": v,
                          "detail": None, "flag": None, "step": s}
                         for u, s, v in (("c1", "0", 1.0), ("c1", "1", 0.5), ("c2", "0", 3.0))])
    expected = {"chain": {"c1": {"step": ("0", "1")}, "c2": {"step": ("0", "1")}, "c3": {"step": ("0", "1")}}}
    out = {(e["slice_type"], e["slice"]): e for e in summarize(rows, {"m": "chain"}, expected, ("overall", "step"),
                                                                n_boot=10, refused={"chain": {"c3"}})}
    assert out[("step", "0")]["value"] == 2.0 and out[("step", "0")]["coverage"] == pytest.approx(2 / 3)
    assert out[("step", "1")]["n_prompts"] == 1 and out[("step", "1")]["coverage"] == pytest.approx(1 / 3)
    assert out[("overall", "all")]["value"] == pytest.approx((0.75 + 3.0) / 2) and out[("overall", "all")]["n_refused"] == 1


def test_a_descriptive_metric_cannot_be_the_headline():
    signed = Family("toy4", "t", "d", {}, (PromptSetSpec("toy-set-4", score_toy, ("toy4.lean",), lambda p: p["prompt_id"]),),
                    (MetricCard("toy4.lean", "toy4", "lean", "f", "none", "[-1, 1]", (), SOURCE, 1, primary=True),),
                    ToyOptions)
    with pytest.raises(ValueError, match="must have a direction to rank by"):
        register(signed)
