"""The ECB family end to end: a small ``ecb`` dataset (a slice of the real prompt set, questions and knowledge
written with the builder's schemas), a submission of seeded images with real edit chains (each step a changed
copy of the previous image, one chain of identical images), evaluated with the tiny stand-in scorers; every
value is recomputed from the scorers' own outputs."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from cultureboard.builder.dataset import Config, prompt_config, write_dataset
from cultureboard.builder.knowledge import KNOWLEDGE_CONFIG, KNOWLEDGE_SCHEMA, QUESTIONS_CONFIG, QUESTIONS_SCHEMA
from cultureboard.builder.prompt_sets import PromptSet
from cultureboard.builder.prompts_ecb import build_ecb
from cultureboard.evaluators import evaluate, merge_shards
from cultureboard.evaluators.engine.registry import family_of, load_families
from cultureboard.evaluators.engine.scorers import load_scorer
from cultureboard.evaluators.families.ecb import core
from cultureboard.evaluators.families.ecb.chains import chain_id
from cultureboard.evaluators.families.ecb.culture import CULTURE_METRICS, judge_prompt
from cultureboard.evaluators.results.stats import benjamini_hochberg
from cultureboard.evaluators.submission.format import submission_id, write_submission
from PIL import Image
from site_worlds import scorer_config

from cultureboard.countries import load_countries
from cultureboard.dataset_folder import local_revision, read_prompt_set
from cultureboard.errors import CultureboardError
from cultureboard.provenance import file_sha256

load_families()  # the families' scorer backends and stand-ins (laion-aesthetic) are registered on import

#: Three countries, two era subcategories (traditional / modern / era-agnostic each) and one people prompt per
#: country, and Korea's attribute-addition chain: 21 multi-loop chains and one attribute chain, 132 images; and
#: the 7 country-agnostic prompts of the same subcategories (no chain): 139 images.
COUNTRIES = ("KR", "NG", "US")
CHAINS = ("food/main-dish/traditional", "food/main-dish/modern", "food/main-dish/general", "architecture/house/traditional",
          "architecture/house/modern", "architecture/house/general", "people/chef")
IDENTICAL = "ecb/ng/people/chef"  # its chain's images have the same pixels (saved with other PNG settings)
SIZE = 64
#: the culture metric runs at its defaults (3 passages, answer mass 0.5): four passages are retrieved per question
OPTIONS = {"clusters": 3, "pca_dims": 4, "n_boot": 200, "permutations": 199}
PASSAGES = 4


def ecb_rows() -> list[dict]:
    wanted = {f"ecb/{c.lower()}/{chain}" for c in (*COUNTRIES, "agnostic") for chain in CHAINS} | {
        "ecb/kr/attribute-addition"}
    return [r for r in build_ecb([], load_countries()).rows if chain_id(r) in wanted]


def chunk_text(country: str, k: int) -> str:
    """Passages per country of different lengths and words, so that a judge shown the wrong ones answers otherwise."""
    return f"passage {k} about {country}" + " and its food" * k


RETRIEVED = (3, 1, 0, 2)


def question_rows(rows: list[dict]) -> tuple[list[dict], list[dict]]:
    """Four chunks per country (retrieved in the order 3, 1, 0, 2) and two questions (one expecting yes, one no) per
    multi-loop base prompt except the houses' (their chains are flagged: no questions); none for the country-agnostic
    prompts (no chain), as the builder's ``question_prompts``."""
    chunks = [{"chunk_id": f"{c}/article/{k:04d}", "country": c, "title": f"Article {c}", "url": f"https://example.org/{c}",
               "licence": "CC-BY-SA-4.0", "article_revision": None, "source_file": f"{c}.txt", "section": "lead",
               "chunk_index": k, "word_start": 0, "word_end": 4, "text": chunk_text(c, k),
               "embedding": [0.0] * 4} for c in COUNTRIES for k in range(PASSAGES)]
    questions = []
    for r in rows:
        if r["kind"] == "t2i" and r["category"] not in ("attribute-addition", "architecture") and r["country"]:
            for k, expected in enumerate(("yes", "no")):
                questions.append({
                    "prompt_id": r["prompt_id"], "country": r["country"], "question_idx": k,
                    "question": f"Question {k} about {r['subcategory']} in {r['country']}?", "expected": expected,
                    "rationale": "", "cited": [], "source": "llm", "fallback_reason": None, "query": r["text"],
                    "retrieved": [f"{r['country']}/article/{k:04d}" for k in RETRIEVED],
                    "retrieved_scores": [0.5, 0.4, 0.3, 0.2], "backend": "openai", "model": "scripted",
                    "cache_keys": []})
    return questions, chunks


def make_ecb_dataset(out: Path, with_questions: bool = True) -> Path:
    rows = ecb_rows()
    configs = [prompt_config(PromptSet("ecb", "1.0", "ecb", "a slice of the ecb prompt set", rows))]
    if with_questions:
        questions, chunks = question_rows(rows)
        configs += [Config(QUESTIONS_CONFIG, pa.Table.from_pylist(questions, schema=QUESTIONS_SCHEMA), "q", "CC0-1.0"),
                    Config(KNOWLEDGE_CONFIG, pa.Table.from_pylist(chunks, schema=KNOWLEDGE_SCHEMA), "k", "CC-BY-SA-4.0")]
    return write_dataset(out, configs, {"test": True})


def _image(seed: int) -> Image.Image:
    blocks = np.random.default_rng(seed).integers(0, 256, (8, 8, 3), dtype=np.uint8)
    return Image.fromarray(blocks).resize((SIZE, SIZE), Image.Resampling.NEAREST)


def _edited(image: Image.Image, seed: int) -> Image.Image:
    """The previous step's image with a few blocks repainted: a chain drifts step by step."""
    pixels = np.asarray(image).copy()
    rng = np.random.default_rng(seed)
    for _ in range(3):
        y, x = rng.integers(0, 8, 2) * (SIZE // 8)
        pixels[y:y + SIZE // 8, x:x + SIZE // 8] = rng.integers(0, 256, 3)
    return Image.fromarray(pixels)


def make_ecb_submission(parent: Path, dataset: Path, model: str = "model") -> Path:
    spec = {
        "format_version": 1, "organization": "lab", "contact": "lab@example.org", "date": "2026-01-15",
        "model": {"name": model, "id": f"lab/{model}", "revision": "0" * 40, "license": "mit", "weights": "open"},
        "generation": {"pipeline": "StableDiffusionPipeline", "scheduler": "DDIMScheduler", "steps": 2,
                       "guidance_scale": 7.5, "width": SIZE, "height": SIZE, "negative_prompt": False,
                       "precision": "fp32", "i2i_pipeline": "StableDiffusionImg2ImgPipeline", "i2i_strength": 0.6},
        "seeds": {"scheme": "prompt-set"},
        "prompt_set": {"name": "ecb", "dataset": dataset.name, "revision": local_revision(dataset)},
        "images": {"location": "images"},
    }
    out = parent / submission_id(spec)
    prompts = sorted(read_prompt_set(dataset, "ecb"), key=lambda p: (p["edit_step"] or 0, p["prompt_id"]))
    made, rows = {}, []
    for p in prompts:
        seed = int(hashlib.sha256(f"{model}/{p['prompt_id']}".encode()).hexdigest()[:8], 16)
        if p["kind"] == "t2i":
            image = _image(seed)
        else:
            source = made[p["source_prompt_id"]]
            image = source if chain_id(p) == IDENTICAL else _edited(source, seed)
        made[p["prompt_id"]] = image
        rel = f"images/{p['prompt_id']}/0.png"
        (out / rel).parent.mkdir(parents=True, exist_ok=True)
        image.save(out / rel, compress_level=p["edit_step"] or 0)  # same pixels, other bytes: not a duplicate
        row = {"file_name": rel, "prompt_id": p["prompt_id"], "sample_idx": 0, "seed": p["seeds"][0],
               "sha256": file_sha256(out / rel)}
        if p["kind"] == "i2i":
            row |= {"edit_step": p["edit_step"], "source_file": f"images/{p['source_prompt_id']}/0.png"}
        rows.append(row)
    write_submission(out, spec, rows)
    return out


@pytest.fixture(scope="module")
def ecb(tmp_path_factory, tiny_scorers):
    root = tmp_path_factory.mktemp("ecb")
    dataset = make_ecb_dataset(root / "dataset")
    submission = make_ecb_submission(root / "submissions", dataset)
    scorers = scorer_config(tiny_scorers, root)
    result = evaluate(submission, dataset, root / "results", scorers=scorers, device="cpu", cache=root / "cache",
                      n_boot=100, options=OPTIONS)
    scores = pq.read_table(result / "scores.parquet").to_pandas()
    summary = json.loads((result / "summary.json").read_text())
    return {"root": root, "dataset": dataset, "submission": submission, "scorers": scorers, "result": result,
            "scores": scores, "summary": summary}


def _images(submission: Path) -> dict[str, dict]:
    lines = [json.loads(line) for line in (submission / "metadata.jsonl").read_text().splitlines()]
    return {m["prompt_id"]: m for m in lines}


def _open(submission: Path, meta: dict) -> Image.Image:
    return Image.open(submission / meta["file_name"]).convert("RGB")


def test_every_chain_step_has_its_scores(ecb):
    scores = ecb["scores"]
    ml = scores[scores.metric == "ecb.clipscore.instruction"]
    assert len(ml) == 21 * 6 and ml.unit_id.nunique() == 21
    assert sorted(ml.edit_step.unique()) == [str(k) for k in range(6)]
    for metric in ("ecb.dreamsim.base", "ecb.dreamsim.prev"):
        assert sorted(scores[scores.metric == metric].edit_step.unique()) == [str(k) for k in range(1, 6)]
    attr = scores[scores.metric == "ecb.attribute.clipscore.instruction"]
    assert sorted(attr.edit_step) == [str(k) for k in range(1, 6)], "the mannequin has no instruction to match"
    assert len(scores[scores.metric == "ecb.attribute.aesthetic"]) == 6
    assert set(scores[scores.metric == "ecb.clipscore.prompt"].country_x_edit_step) >= {"KR x 0", "NG x 5"}
    assert scores.loc[scores.metric.str.startswith("ecb.clip"), "sha256"].notna().all()


def test_chain_values_recomputed_from_the_scorers(ecb):
    sub, scores, config = ecb["submission"], ecb["scores"], ecb["scorers"]
    meta = _images(sub)
    clip = load_scorer("clip-vit-l-14", config=config, device="cpu")
    aes = load_scorer("laion-aesthetic", config=config, device="cpu")
    relu = load_scorer("laion-aesthetic-ecb-relu", config=config, device="cpu")
    dreamsim = load_scorer("dreamsim", config=config, device="cpu")
    prompts = {p["prompt_id"]: p for p in read_prompt_set(ecb["dataset"], "ecb")}
    for pid in ("ecb/kr/food/main-dish/modern/edit/3", "ecb/us/architecture/house/general", "ecb/kr/attribute-addition/food/edit/3"):
        image = _open(sub, meta[pid])
        chain = chain_id(prompts[pid])
        attribute = "attribute" in chain
        instruction = prompts[pid]["text"] if attribute or "/edit/" in pid else prompts[pid + "/edit/1"]["text"]
        x = clip.embed_images([image])[0]
        t_ins, t_base = clip.embed_texts([instruction, prompts[chain if not attribute else f"{chain}/base"]["text"]])
        prefix = "ecb.attribute." if attribute else "ecb."
        row = scores[(scores.prompt_id == pid)].set_index("metric")["value"]
        assert row[prefix + "clipscore.instruction"] == pytest.approx(100 * max(float(x @ t_ins), 0), abs=1e-3)
        assert row[prefix + "clipscore.prompt"] == pytest.approx(100 * max(float(x @ t_base), 0), abs=1e-3)
        assert row[prefix + "aesthetic"] == pytest.approx(float(aes.embed_images([image])[0][0]), abs=1e-4)
        assert row[prefix + "aesthetic"] != pytest.approx(float(relu.embed_images([image])[0][0]), abs=1e-4)
    # DreamSim of step 3 of a drifting chain: to the base and to step 2
    pid = "ecb/kr/food/main-dish/modern/edit/3"
    step3, step2, base = (_open(sub, meta[p]) for p in (pid, pid.replace("/3", "/2"), "ecb/kr/food/main-dish/modern"))
    row = scores[(scores.prompt_id == pid)].set_index("metric")["value"]

    def distance(a, b):
        return float(dreamsim.compare(dreamsim.image_transform(a)[None], dreamsim.image_transform(b)[None])[0])

    assert row["ecb.dreamsim.base"] == pytest.approx(distance(base, step3), abs=1e-5)
    assert row["ecb.dreamsim.prev"] == pytest.approx(distance(step2, step3), abs=1e-5)
    assert row["ecb.dreamsim.base"] != pytest.approx(row["ecb.dreamsim.prev"], abs=1e-6)


def test_identical_chain_has_dreamsim_zero_at_every_step(ecb):
    scores = ecb["scores"]
    chain = scores[(scores.unit_id == IDENTICAL) & scores.metric.str.startswith("ecb.dreamsim")]
    assert len(chain) == 10 and (chain.value.abs() < 1e-6).all()
    drifting = scores[(scores.unit_id == "ecb/kr/people/chef") & (scores.metric == "ecb.dreamsim.base")]
    assert (drifting.value > 1e-4).all()


def test_culture_answers_recomputed_from_the_judge(ecb):
    sub, scores = ecb["submission"], ecb["scores"]
    judge = load_scorer("qwen2.5-vl-7b", config=ecb["scorers"], device="cpu")
    pid = "ecb/ng/food/main-dish/traditional/edit/2"
    base = "ecb/ng/food/main-dish/traditional"
    image = _open(sub, _images(sub)[pid])
    # the defaults: the first 3 of the 4 retrieved passages, in retrieval order; ambiguous below an answer mass of 0.5
    context = [chunk_text("NG", k) for k in RETRIEVED[:3]]
    prompts = [judge_prompt(context, f"Question {k} about main dish in NG?") for k in range(2)]
    p_yes, p_no = judge.yes_no([image] * 2, prompts).T
    answers = core.classify_answers(p_yes, p_no, 0.5)
    expected = core.qa_scores(["yes", "no"], answers)
    rows = scores[scores.prompt_id == pid].set_index("metric")
    for name in ("accuracy", "precision", "recall", "f1"):
        assert rows.loc[f"ecb.culture.{name}", "value"] == pytest.approx(getattr(expected, name))
    detail = json.loads(rows.loc["ecb.culture.f1", "detail"])
    assert (detail["tp"], detail["fp"], detail["fn"], detail["tn"]) == expected[4:8]
    recorded = json.loads(rows.loc["ecb.culture.accuracy", "detail"])["answers"]
    assert [a for a, _, _ in recorded] == answers
    np.testing.assert_allclose([[y, n] for _, y, n in recorded], np.stack([p_yes, p_no], axis=1), rtol=1e-4)
    assert rows.loc["ecb.culture.f1", "unit_id"] == base
    f1 = scores[(scores.metric == "ecb.culture.f1") & (scores.unit_id == base)].set_index("edit_step")["value"]
    best, worst = core.extreme_steps({int(k): v for k, v in f1.items()})
    assert (detail["best_steps"], detail["worst_steps"]) == (best, worst)
    assert rows.loc["ecb.culture.ambiguous", "value"] == answers.count("ambiguous") / 2


def test_positional_match_recomputed_from_the_f1_rows(ecb):
    scores = ecb["scores"]
    f1 = scores[scores.metric == "ecb.culture.f1"].dropna(subset=["value"])
    match = scores[scores.metric == "ecb.positional_match"].set_index("unit_id")
    assert len(match) == 21 and match.value.notna().sum() == 12 == f1.unit_id.nunique()
    shares = []
    for chain, steps in f1.groupby("unit_id"):
        by_step = {int(k): v for k, v in zip(steps.edit_step, steps.value)}
        best, worst = core.extreme_steps(by_step)
        best_is_base = (0 in best) / len(best)
        worst_is_last = (5 in worst) / len(worst)
        detail = json.loads(match.loc[chain, "detail"])
        assert (detail["best_steps"], detail["worst_steps"]) == (best, worst)
        assert (detail["best_is_base"], detail["worst_is_last"]) == pytest.approx((best_is_base, worst_is_last))
        assert (detail["f1_base"], detail["f1_last"]) == pytest.approx((by_step[0], by_step[5]))
        assert match.loc[chain, "value"] == pytest.approx(best_is_base * worst_is_last)
        shares.append(best_is_base * worst_is_last)
    by = {(e["metric"], e["slice_type"]): e for e in ecb["summary"]["metrics"] if e["slice"] in ("all", "0", "5")}
    assert by[("ecb.positional_match", "overall")]["value"] == pytest.approx(np.mean(shares))


def test_headline_is_the_last_steps_accuracy_per_chain(ecb):
    """ecb.culture.accuracy_last = accuracy at step 5, accuracy_change = step 5 - step 0, one row per chain; the
    summary's value is their mean over chains (not the all-step mean of ecb.culture.accuracy)."""
    scores = ecb["scores"]
    acc = scores[(scores.metric == "ecb.culture.accuracy") & scores.flag.isna()]
    steps = {chain: {int(k): v for k, v in zip(part.edit_step, part.value)} for chain, part in acc.groupby("unit_id")}
    for metric, expected in (("ecb.culture.accuracy_last", {c: s[5] for c, s in steps.items()}),
                             ("ecb.culture.accuracy_change", {c: s[5] - s[0] for c, s in steps.items()})):
        rows = scores[scores.metric == metric]
        assert len(rows) == 21 and rows.flag.notna().sum() == 9, "the chains without questions are flagged"
        got = rows.dropna(subset=["value"]).set_index("unit_id")["value"]
        assert got.to_dict() == pytest.approx(expected)
        overall = next(e for e in ecb["summary"]["metrics"]
                       if (e["metric"], e["slice_type"]) == (metric, "overall"))
        assert overall["value"] == pytest.approx(np.mean(list(expected.values())))
    # the tiny random judge answers alike at every step, so the values here do not separate the last step from
    # the others; test_ecb_core.test_chain_rows_from_the_per_step_accuracy_rows does, on hand-made rows
    country = scores[(scores.metric == "ecb.culture.accuracy_last") & (scores.unit_id == "ecb/us/people/chef")]
    assert country.country.tolist() == ["US"] and country.era.isna().all()


def test_an_answer_is_ambiguous_below_the_answer_mass_or_at_a_tie():
    # mass exactly 0.5 answers; a tie never does; just under 0.5 is ambiguous
    assert core.classify_answers([0.3, 0.25, 0.2, 0.5, 0.1], [0.2, 0.25, 0.29, 0.0, 0.4], 0.5) == [
        "yes", "ambiguous", "ambiguous", "yes", "no"]


def test_culture_notes_and_cards(ecb):
    notes = ecb["summary"]["provenance"]["notes"]["ecb.culture.accuracy"]
    assert notes["question_sources"] == {"llm": 12} and notes["template_share"]["share"] == 0.0
    # each set: one question expecting yes, one no
    assert notes["constant_answers"] == {"always_yes": {"accuracy": 0.5, "precision": 0.5, "recall": 1.0,
                                                        "f1": round(2 / 3, 6)},
                                         "always_no": {"accuracy": 0.5, "precision": 0.0, "recall": 0.0, "f1": 0.0}}
    family, _ = family_of("ecb")
    for name in ("accuracy", "precision", "recall", "f1"):
        card = family.card(f"ecb.culture.{name}")
        assert card.version == 4 and card.chance and "Qwen2.5-VL" in card.description  # 4: Wilson intervals
        assert card.bounded == (0.0, 1.0)
        assert not card.ranked and not card.primary, "all-step means are diagnostics"
    assert family.card("ecb.culture.accuracy").validity == family.card("ecb.culture.f1").validity
    assert ecb["summary"]["provenance"]["metrics"]["ecb.culture.accuracy"] == 4
    last = family.card("ecb.culture.accuracy_last")
    assert last.primary and last.direction == "higher" and "Fig. 5" in last.direction_evidence
    assert not family.card("ecb.culture.accuracy_change").ranked


def test_t2i_separability_and_leaning_recomputed(ecb):
    sub, scores = ecb["submission"], ecb["scores"]
    clip = load_scorer("clip-vit-l-14", config=ecb["scorers"], device="cpu")
    prompts = sorted((p for p in read_prompt_set(ecb["dataset"], "ecb")
                      if p["kind"] == "t2i" and p["category"] != "attribute-addition"), key=lambda p: p["prompt_id"])
    meta = _images(sub)
    x = clip.embed_images([_open(sub, meta[p["prompt_id"]]) for p in prompts])
    countries = [p["country"] or "agnostic" for p in prompts]
    assert countries.count("agnostic") == len(CHAINS)
    labels, info = core.cluster_labels(x, OPTIONS["clusters"], OPTIONS["pca_dims"], 0)
    names, p = core.cluster_proportions(labels, countries, info["clusters"])
    p_props = p
    sep, nearest = core.separability(core.proximity_matrix(p))
    rows = scores[scores.metric == "ecb.separability"].set_index("unit_id")
    assert list(rows.index) == names == [*COUNTRIES, "agnostic"]
    np.testing.assert_allclose(rows.value.to_numpy(), sep, atol=1e-6)
    assert [json.loads(d)["nearest"] for d in rows.detail] == [names[i] for i in nearest]
    agnostic = [i for i, q in enumerate(prompts) if q["era"] == "general"]
    s, _, _ = core.leaning_scores(x, [q["subcategory"] for q in prompts], [q["era"] == "traditional" for q in prompts],
                                  [q["era"] == "modern" for q in prompts], [i in agnostic for i in range(len(prompts))])
    null = core.separability_null(labels, countries, info["clusters"], OPTIONS["permutations"], 0)
    for a, d in enumerate(rows.detail):
        assert (json.loads(d)["null_mean"], json.loads(d)["p"]) == pytest.approx((null.mean[a], null.p[a]))
    means = core.group_means(s, [countries[i] for i in agnostic])
    lean = scores[scores.metric == "ecb.leaning"].set_index("unit_id")
    np.testing.assert_allclose(lean.value.to_numpy(), [means[c][0] for c in names], atol=1e-6)
    p, _ = core.permutation_pvalues(s, [countries[i] for i in agnostic],
                                    [prompts[i]["subcategory"] for i in agnostic], OPTIONS["permutations"], 0)
    q = dict(zip(names, benjamini_hochberg([p[c] for c in names])))  # BH over the countries and agnostic
    details = [json.loads(d) for d in lean.detail]
    assert [(d["p"], d["q"]) for d in details] == [pytest.approx((p[c], q[c])) for c in names]
    assert all(d["images"] == 2 for d in details)
    notes = ecb["summary"]["provenance"]["notes"]
    assert notes["ecb.separability"]["proximity"]["countries"] == names
    h = core.proximity_matrix(p_props)
    default = scores[scores.metric == "ecb.default_proximity"].set_index("unit_id")
    assert list(default.index) == list(COUNTRIES), "one row per country, none for agnostic itself"
    np.testing.assert_allclose(default.value.to_numpy(), h[:3, 3], atol=1e-6)
    assert notes["ecb.default_proximity"]["default_country"]["country"] == COUNTRIES[int(np.argmax(h[:3, 3]))]
    assert 0 < notes["ecb.leaning"]["omnibus"]["p"] <= 1


def test_summary_slices_by_step_and_country_by_step(ecb):
    entries = ecb["summary"]["metrics"]
    by = {(e["metric"], e["slice_type"], e["slice"]): e for e in entries}
    assert by[("ecb.dreamsim.base", "edit_step", "5")]["n_prompts"] == 21
    assert by[("ecb.dreamsim.base", "edit_step", "5")]["coverage"] == 1.0
    assert by[("ecb.clipscore.instruction", "country_x_edit_step", "KR x 3")]["n_prompts"] == 7
    assert by[("ecb.clipscore.instruction", "country_x_edit_step", "KR x 0")]["n_prompts"] == 7
    assert by[("ecb.leaning", "overall", "all")]["n_prompts"] == 4  # 3 countries and agnostic
    assert ("ecb.leaning", "country", "None") not in by and by[("ecb.leaning", "country", "KR")]["n_prompts"] == 1
    overall = by[("ecb.culture.accuracy", "overall", "all")]
    assert overall["n_prompts"] == 12 and overall["coverage"] == 12 / 21
    assert overall["flags"] == {"no questions for the chain's base prompt in ecb-questions": 9}
    assert by[("ecb.clipscore.prompt", "overall", "all")]["coverage"] == 1.0
    assert by[("ecb.attribute.aesthetic", "overall", "all")]["coverage"] == 1.0
    assert by[("ecb.separability", "overall", "all")]["n_prompts"] == 4
    assert by[("ecb.default_proximity", "overall", "all")]["n_prompts"] == 3
    last = by[("ecb.culture.accuracy_last", "overall", "all")]
    assert last["n_prompts"] == 12 and last["coverage"] == 12 / 21
    primary = [m for m in ecb["summary"]["metrics_info"] if m["primary"]]
    assert [m["name"] for m in primary] == ["ecb.culture.accuracy_last"]


def test_dataset_without_questions_flags_every_chain(ecb, tmp_path):
    dataset = make_ecb_dataset(tmp_path / "dataset", with_questions=False)
    submission = make_ecb_submission(tmp_path / "submissions", dataset)
    result = evaluate(submission, dataset, tmp_path / "results", scorers=ecb["scorers"], device="cpu",
                      cache=ecb["root"] / "cache", n_boot=50, options=OPTIONS)
    scores = pq.read_table(result / "scores.parquet").to_pandas()
    culture = scores[scores.metric.isin(CULTURE_METRICS)]
    assert len(culture) == 6 * 21 and culture.value.isna().all()
    assert culture.flag.str.contains("no ecb-questions config").all()


def test_sharded_run_equals_the_unsharded_one(ecb, tmp_path):
    for i in range(2):
        evaluate(ecb["submission"], ecb["dataset"], tmp_path, scorers=ecb["scorers"], device="cpu",
                 cache=ecb["root"] / "cache", n_boot=100, shard=(i, 2), options=OPTIONS)
    merged = merge_shards(tmp_path, ecb["submission"].name, ecb["dataset"])
    assert (merged / "scores.parquet").read_bytes() == (ecb["result"] / "scores.parquet").read_bytes()
    summary = json.loads((merged / "summary.json").read_text())
    assert summary["metrics"] == ecb["summary"]["metrics"]
    assert summary["provenance"]["notes"] == ecb["summary"]["provenance"]["notes"], "the T2I notes come from shard 0"


def test_family_is_registered_with_its_units():
    family, spec = family_of("ecb")
    assert family.primary("ecb") == "ecb.culture.accuracy_last"
    assert spec.unit_of("chain", {"prompt_id": "ecb/kr/food/main-dish/edit/4", "category": "food", "kind": "i2i"}) \
        == "ecb/kr/food/main-dish"
    assert spec.unit_of("country", {"prompt_id": "ecb/kr/food/main-dish", "category": "food", "kind": "t2i",
                                    "country": "KR"}) == "KR"
    assert spec.unit_of("country", {"prompt_id": "ecb/agnostic/food/main-dish", "category": "food", "kind": "t2i",
                                    "level": "agnostic", "country": None}) == "agnostic"
    assert spec.unit_of("chain", {"prompt_id": "ecb/agnostic/food/main-dish", "category": "food", "kind": "t2i",
                                  "level": "agnostic", "country": None}) is None
    for name in ("dreamsim.base", "dreamsim.prev", "attribute.dreamsim.base"):
        assert family.card(f"ecb.{name}").direction == "none", "an edit magnitude: ranking it rewards doing nothing"
    assert not family.card("ecb.separability").ranked and not family.card("ecb.default_proximity").ranked
    for card in family.metrics:
        assert bool(card.direction_evidence) == card.ranked, card.name


def test_country_gaps_badge_the_worse_side_of_each_card():
    """An under-represented (KR: lower values) and an over-represented (US: higher values) country planted among
    chain values: a higher-is-better ECB card badges KR only, a lower-is-better one would badge US only, and a
    descriptive card (DreamSim, the all-step means) badges none."""
    from cultureboard.evaluators.results.disparity import gaps, under_represented

    spread = np.linspace(-0.1, 0.1, 8)  # the same within-country spread, mean 0: KE and NG sit at the mean
    countries = [c for c in ("KE", "KR", "NG", "US") for _ in spread]
    shift = {"KE": 0.0, "KR": -0.3, "NG": 0.0, "US": 0.3}
    values = [0.5 + shift[c] + d for c in ("KE", "KR", "NG", "US") for d in spread]
    found = {g.name: g for g in gaps(values, countries, n_boot=400) if g.kind == "country"}
    assert found["KR"].high < 0 < found["US"].low, "the planted gaps lie off zero"
    family, _ = family_of("ecb")
    expected = {"higher": {"KR"}, "lower": {"US"}, "none": set()}
    for card in family.metrics:
        badged = {c for c, g in found.items() if under_represented(g.kind, g.value, g.p_adjusted, card.direction)}
        assert badged == expected[card.direction]
    assert {c for c, g in found.items() if under_represented(g.kind, g.value, g.p_adjusted, "lower")} == {"US"}
    assert {family.card(m).direction for m in ("ecb.culture.accuracy_last", "ecb.dreamsim.base")} == {"higher", "none"}


def test_bad_option_is_one_line(ecb):
    with pytest.raises(CultureboardError, match="clusters"):
        evaluate(ecb["submission"], ecb["dataset"], ecb["root"] / "other", scorers=ecb["scorers"], device="cpu",
                 cache=ecb["root"] / "cache", option_overrides=["clusters=1"])


def test_ecb_subset_keeps_a_slice_of_the_set():
    subset = {"countries": ["kr", "NG"], "subcategories": ["main_dish", "chef"], "steps": 2}
    prompts = build_ecb([], load_countries(), subset=subset)
    rows = prompts.rows
    assert len(rows) == 2 * (4 * 3 + 3) + 4, "per country: 4 chains of a base and 2 edits, an attribute chain of 3; " \
        "4 country-agnostic prompts"
    assert {r["country"] for r in rows} == {"KR", "NG", None} and max(r["edit_step"] or 0 for r in rows) == 2
    assert {chain_id(r) for r in rows} >= {"ecb/kr/people/chef", "ecb/ng/attribute-addition"}
    assert "SLICE" in prompts.notes[-1]
    for bad, needle in (({"steps": 9}, "9"), ({"countries": ["XX"]}, "XX"), ({"flavour": 1}, "not a mapping")):
        with pytest.raises(CultureboardError, match=needle):
            build_ecb([], load_countries(), subset=bad)
