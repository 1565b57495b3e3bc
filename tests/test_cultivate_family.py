"""The cultivate family end to end: a scripted judge behind ctx (its own registered backend) and the real
all-MiniLM-L6-v2 give hand-computed ALIGN / HAL / EXAG / FAITH / DDIV / SDIV; tau is calibrated on the reference
photographs' extractions only (recomputed here from the embedder's own vectors); every unscorable row is flagged
with its reason; sharding is exact; and the tiny Qwen2.5-VL stand-in runs the real loading and generation path."""

from __future__ import annotations

import hashlib
import io
import json
from collections import Counter

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from cultureboard.builder.dataset import prompt_config, write_dataset
from cultureboard.builder.descriptors import DescriptorResult, descriptor_config
from cultureboard.builder.prompts_cultivate import build_cultivate
from cultureboard.builder.references import MISSING_SCHEMA, REFERENCE_SCHEMA
from cultureboard.evaluators import evaluate, merge_shards
from cultureboard.evaluators.engine.scorers import Backend, load_scorer, register_backend
from cultureboard.evaluators.families import cultivate
from cultureboard.evaluators.families.cultivate.questions import (
    PROMPT_DESCRIPTION,
    dimension_question,
    extraction_question,
    vqa_question,
)
from cultureboard.site.load import Result
from PIL import Image
from results_factory import make_submission

from cultureboard.countries import load_countries
from cultureboard.errors import CultureboardError
from cultureboard.images import open_rgb

A, B, C = "cultivate/us/celebration/thanksgiving", "cultivate/it/game/bocce", "cultivate/ng/wedding/wedding"
DIMS = ("setting", "objects", "attire", "interaction", "spatial")
REFS = {
    A: {"setting": ["family dining room", "autumn home decor"],
        "objects": ["roast turkey", "pumpkin pie", "cranberry sauce", "gravy boat"], "attire": [],
        "interaction": ["carving the turkey"], "spatial": ["family around one table"]},
    B: {"setting": ["dirt bocce court"], "objects": ["bocce balls", "small pallino ball"], "attire": ["flat caps"],
        "interaction": [], "spatial": []},
}
STEREOTYPES = {A: ["giant flags", "cowboy hats"], B: ["checkered tablecloths"]}


def answer(**dims) -> str:
    return "```json\n" + json.dumps({d: dims.get(d, []) for d in DIMS}) + "\n```"


# what the judge "sees": extraction answers per image (all dimensions; asked per dimension, it answers that one's
# list), P(yes) per (image, question)
EXTRACT = {
    (A, 0): answer(setting=["family dining room", "neon nightclub"],
                   objects=["Roast Turkey", "pumpkin pie", "electric guitar", "roast  turkey"], attire=["tuxedo"],
                   spatial=["family around one table"]),
    # given only when asked again (first answer: no JSON); the paraphrases sit near a realistic tau of 0.6 (MiniLM
    # cosine with the nearest reference: fall decorations .598, pie slices .671, sauce boat .603, cutting meat .543,
    # people seated at a table .581), below 0.99
    (A, 1): answer(setting=["autumn home decor", "fall decorations"], objects=["roast turkey", "pie slices", "sauce boat"],
                   interaction=["carving the turkey", "cutting meat"],
                   spatial=["people in a spaceship", "people seated at a table"]),
    (B, 1): answer(setting=["dirt bocce court"], objects=["bocce balls"], interaction=["throwing"]),
    ("photo", 1): answer(setting=["family dining room"], objects=["roast turkey", "space rocket"],
                         spatial=["people standing in line"]),
    ("photo", 2): answer(setting=["beach volleyball court"], objects=["pumpkin pie"], attire=["jeans"],
                         interaction=["carving the turkey"]),
}
YES = {((A, 0), "giant flags"): .45, ((A, 0), "cowboy hats"): .40, ((A, 1), "giant flags"): .20,
       ((A, 1), "cowboy hats"): .70, (("photo", 1), "giant flags"): .2, (("photo", 1), "cowboy hats"): .6,
       (("photo", 2), "giant flags"): .4, (("photo", 2), "cowboy hats"): .4}


class ScriptedJudge:
    """A judge that recognises the test's images by their pixels and answers from the script."""

    name, model_id, revision, dtype, device = "scripted", "test/scripted-judge", "r1", "float32", "cpu"
    preprocessing = "none"
    text_preprocessing = logit_scale = logit_bias = None

    def __init__(self):
        self.keys: dict[str, tuple] = {}
        self.asked: Counter = Counter()

    def key(self, image) -> tuple:
        return self.keys[hashlib.sha256(image.tobytes()).hexdigest()]

    def generate(self, images, prompts, max_new_tokens, schema=None):
        out = []
        for image, prompt in zip(images, prompts):
            key = self.key(image)
            self.asked[key] += 1
            dimension = next((d for d in DIMS if prompt.startswith(dimension_question(d))), None)
            assert dimension or prompt.startswith(extraction_question())
            if key == (A, 1) and "not usable" not in prompt:
                out.append("Sure! The image shows a dinner.")
            elif key not in EXTRACT:
                out.append("I cannot tell.")
            else:
                full = json.loads(EXTRACT[key].strip("`json\n"))
                out.append(json.dumps(full[dimension]) if dimension else EXTRACT[key])
        return out

    def yes_no(self, images, prompts):
        p = np.array([self.p_yes(self.key(im), q) for im, q in zip(images, prompts)])
        return np.stack([p, (1 - p) / 2], axis=1)

    @staticmethod
    def p_yes(key, question) -> float:
        for (k, candidate), p in YES.items():
            if k == key and question == vqa_question(candidate):
                return p
        return 0.05 + 0.1 * key[1]  # the VQAScore question: a value per sample


JUDGE = ScriptedJudge()
register_backend("scripted-judge", Backend("judge", locate=lambda name, entry, memo=None: (None, JUDGE.model_id, "r1"),
                                           build=lambda *args: JUDGE, check=lambda entry: None))


def png(colour) -> bytes:
    buf = io.BytesIO()
    Image.new("RGB", (64, 64), colour).save(buf, format="PNG")
    return buf.getvalue()


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    return make_world(tmp_path_factory.mktemp("cultivate"))


def make_world(root):
    """Three activities of the cultivate set (2 images each), their reference descriptors, two photographs of one of
    them, a submission, and the scripted judge taught every image; MiniLM from the registry embeds the texts."""
    ps = build_cultivate([], load_countries())
    ps.rows = [dict(r, images_per_prompt=2, seeds=r["seeds"][:2]) for r in ps.rows if r["prompt_id"] in (A, B, C)]
    rows = [{"prompt_id": pid, "country": p["country"], "category": p["category"], "subcategory": p["subcategory"],
             **{d: [{"token": t, "style": "neutral"} for t in REFS[pid][d]] for d in DIMS},
             "stereotypes": STEREOTYPES[pid], "source": "llm", "proposers": ["test:x"], "refiner": "test:x"}
            for pid, p in ((r["prompt_id"], r) for r in ps.rows) if pid in REFS]
    dataset = write_dataset(root / "dataset", [prompt_config(ps), descriptor_config(DescriptorResult(
        rows, report={"source": "llm", "proposers": ["test:x"], "refiner": "test:x"}))], {})
    photos = [png((200, 120, 40)), png((30, 90, 200))]
    refs = [{"qid": "activity:thanksgiving", "image": {"bytes": data, "path": None}, "name": "thanksgiving",
             "countries": ["US"], "concepts": ["celebration"], "rank": k, "sha256": hashlib.sha256(data).hexdigest()}
            for k, data in enumerate(photos, 1)]
    missing = [{"qid": "activity:bocce", "name": "bocce", "countries": ["IT"], "concepts": ["game"], "candidates": 2,
                "reason": "no freely licensed photograph"}]
    for name, table in (("references", pa.Table.from_pylist(refs, schema=REFERENCE_SCHEMA)),
                        ("references-missing", pa.Table.from_pylist(missing, schema=MISSING_SCHEMA))):
        (dataset / "data" / name).mkdir(parents=True)
        pq.write_table(table, dataset / "data" / name / "test-00000-of-00001.parquet")
    submission = make_submission(root / "submissions", dataset, "cultivate")
    for line in (submission / "metadata.jsonl").read_text().splitlines():
        meta = json.loads(line)
        JUDGE.keys[hashlib.sha256(open_rgb(submission / meta["file_name"]).tobytes()).hexdigest()] = (
            meta["prompt_id"], meta["sample_idx"])
    for k, data in enumerate(photos, 1):
        JUDGE.keys[hashlib.sha256(open_rgb(io.BytesIO(data)).tobytes()).hexdigest()] = ("photo", k)
    return {"root": root, "dataset": dataset, "submission": submission,
            "scorers": {"scripted": {"backend": "scripted-judge"}}}  # all-minilm-l6-v2 from the registry: real weights


def run(world, out, shard=None, **options):
    options = {"extractor": "scripted", "vqa": "scripted", **options}
    return evaluate(world["submission"], world["dataset"], out, scorers=world["scorers"], device="cpu", n_boot=50,
                    cache=world["root"] / "cache", shard=shard, options=options)


def scores_of(result):
    frame = pq.read_table(result / "scores.parquet").to_pandas()
    return {(r.metric, r.unit_id, None if r.sample_idx != r.sample_idx else int(r.sample_idx)): r
            for r in frame.itertuples()}


@pytest.fixture(scope="module")
def given_tau(world, tmp_path_factory):
    """A run at tau = 0.99: with MiniLM, a descriptor identical to a reference (case and spacing aside) has cosine
    1 and every other pair stays below, so the values are pure counting."""
    out = run(world, tmp_path_factory.mktemp("given"), tau=0.99)
    return out, scores_of(out), json.loads((out / "summary.json").read_text())


def test_hand_computed_values(given_tau):
    _, s, summary = given_tau
    expected = {
        # A0: setting 1/2, objects 2/4 (Roast Turkey = roast  turkey), interaction 0 (none listed), spatial 1
        ("align", A, 0): 0.5, ("hal", A, 0): (1 / 2 + 1 / 3 + 0) / 3,  # objects: 1 of 3 distinct predictions
        ("align", A, 1): (1 / 2 + 1 / 4 + 1 + 0) / 4, ("hal", A, 1): (1 / 2 + 2 / 3 + 1 / 2 + 1) / 4,
        ("exag", A, 0): 0.15, ("exag", A, 1): 0.20,  # baseline [.3, .5]: excess [.15, 0] and [0, .2]
        ("align", B, 1): (1 + 1 / 2 + 0) / 3, ("hal", B, 1): 0.0,  # attire: refs, no prediction; interaction: no refs
    }
    for (name, pid, k), value in expected.items():
        # exag reads the judge's P(yes), which a run uses as the cache stores it (float32: .45 is 0.449999988...)
        tolerance = 1e-7 if name == "exag" else 1e-9
        assert s[(f"cultivate.{name}", pid, k)].value == pytest.approx(value, abs=tolerance), (name, pid, k)
    for k in (0, 1):
        parts = [s[(f"cultivate.{n}", A, k)].value for n in ("align", "hal", "exag")]
        assert s[("cultivate.faith", A, k)].value == pytest.approx((parts[0] + 1 - parts[1] + 1 - parts[2]) / 3)
    assert s[("cultivate.faith", A, 0)].value == pytest.approx(0.690741, abs=1e-6)
    # DDIV: setting [1, 1] -> 1; objects [2, 1, 0, 0] -> H(2/3, 1/3) / ln 4; one-reference dimensions -> 0
    h = -(2 / 3 * np.log(2 / 3) + 1 / 3 * np.log(1 / 3)) / np.log(4)
    assert s[("cultivate.ddiv", A, None)].value == pytest.approx((1 + h) / 4)
    # SDIV: pooled minus mean single per dimension: setting 1 - .5, objects .5 - .375, interaction 1 - .5, spatial .5
    assert s[("cultivate.sdiv", A, None)].value == pytest.approx((0.5 + 0.125 + 0.5 + 0.5) / 4)
    for k in (0, 1):
        assert s[("cultivate.judge_yes", A, k)].value == pytest.approx(0.05 + 0.1 * k)
    assert summary["provenance"]["options"]["tau"] == 0.99 and summary["provenance"]["options"]["tau_from"] == "option"


def test_mean_variant_of_exag(world, given_tau, tmp_path):
    out = run(world, tmp_path, tau=0.99, exag_variant="mean")
    s = scores_of(out)
    assert s[("cultivate.exag", A, 0)].value == pytest.approx(0.075)
    assert s[("cultivate.exag", A, 1)].value == pytest.approx(0.10)
    # the variant is in the metric versions of EXAG and FAITH, so the site never ranks the two variants together
    keys = [dict(Result(d.name, json.loads((d / "summary.json").read_text()), None, {}, d, [], {}).comparability())
            for d in (given_tau[0], out)]
    versions = [{m: k[f"metric cultivate.{m} version"] for m in ("exag", "faith", "align")} for k in keys]
    assert versions == [{"exag": "2", "faith": "2", "align": "3"}, {"exag": "2+mean", "faith": "2+mean", "align": "3"}]


def test_unscorable_rows_are_flagged_and_counted(given_tau):
    _, s, summary = given_tau
    b0 = s[("cultivate.align", B, 0)]
    assert b0.flag == cultivate.EXTRACTION_FAILED and np.isnan(b0.value)
    assert json.loads(b0.detail) == {"error": "no JSON object in the answer", "attempts": 3}
    assert s[("cultivate.faith", B, 0)].flag == cultivate.EXTRACTION_FAILED
    assert s[("cultivate.exag", B, 1)].flag == cultivate.NO_REFERENCES
    assert json.loads(s[("cultivate.exag", B, 1)].detail)["reason"] == "no freely licensed photograph"
    assert s[("cultivate.faith", B, 1)].flag == cultivate.NO_REFERENCES
    assert s[("cultivate.ddiv", B, None)].flag == cultivate.TOO_FEW == s[("cultivate.sdiv", B, None)].flag
    for name in ("align", "hal", "exag", "faith"):
        assert s[(f"cultivate.{name}", C, 0)].flag == cultivate.NO_DESCRIPTORS
    assert s[("cultivate.ddiv", C, None)].flag == cultivate.NO_DESCRIPTORS
    assert np.isfinite(s[("cultivate.judge_yes", C, 1)].value)
    assert not [key for key in JUDGE.asked if key[0] == C], "images without descriptors are never extracted"
    # one question per dimension, bounded retries, and a valid answer is not re-asked
    assert JUDGE.asked[(B, 0)] == 3 * len(DIMS) and JUDGE.asked[(A, 1)] == 2 * len(DIMS)
    entries = {(e["metric"], e["slice_type"], e["slice"]): e for e in summary["metrics"]}
    align = entries[("cultivate.align", "overall", "all")]
    assert align["n_images"] == 3 and align["flags"] == {cultivate.EXTRACTION_FAILED: 1, cultivate.NO_DESCRIPTORS: 2}


def test_explanations_in_the_details(given_tau):
    _, s, _ = given_tau
    align = json.loads(s[("cultivate.align", A, 0)].detail)
    assert [e["reference"] for e in align["aligned"]] == ["family dining room", "roast turkey", "pumpkin pie",
                                                          "family around one table"]
    assert {e["reference"] for e in align["missing"]} == {"autumn home decor", "cranberry sauce", "gravy boat",
                                                         "carving the turkey"}
    hal = json.loads(s[("cultivate.hal", A, 0)].detail)
    assert {e["descriptor"] for e in hal["hallucinated"]} == {"neon nightclub", "electric guitar"}
    assert hal["descriptors"]["objects"] == ["Roast Turkey", "pumpkin pie", "electric guitar"]
    exag = json.loads(s[("cultivate.exag", A, 0)].detail)
    assert exag["exaggerated"] == [{"candidate": "giant flags", "score": 0.45, "baseline": 0.3, "excess": 0.15}]
    faith = json.loads(s[("cultivate.faith", A, 0)].detail)
    assert faith["edit_instruction"].splitlines()[:2] == [
        "Edit the image so that it correctly shows a family celebrating Thanksgiving in the United States.",
        "Remove: neon nightclub; electric guitar; giant flags; anything from another culture, period or activity."]
    assert "edit_instruction" in json.loads(s[("cultivate.faith", B, 1)].detail)  # flagged (no photos), explained


def _cos(vectors, a, b):
    return float(vectors[a] @ vectors[b])


def _distinct(tokens):
    seen = {}
    for t in tokens:
        seen.setdefault(" ".join(t.split()).casefold(), t)
    return list(seen.values())


def test_a_realistic_tau_with_near_threshold_similarities(world, tmp_path):
    """At tau = 0.6, paraphrases just above (sauce boat .603) and just below (fall decorations .598) the threshold
    decide ALIGN, HAL, DDIV and SDIV; every value recomputed from the embedder's own vectors."""
    tau = 0.6
    s = scores_of(run(world, tmp_path, tau=tau))
    embedder = load_scorer("all-minilm-l6-v2", config=world["scorers"], device="cpu")
    preds = {k: json.loads(EXTRACT[(A, k)].strip("`json\n")) for k in (0, 1)}
    preds = {k: {d: _distinct(p[d]) for d in DIMS} for k, p in preds.items()}
    texts = sorted({t for p in [*preds.values(), REFS[A]] for d in DIMS for t in p[d]})
    vectors = dict(zip(texts, embedder.embed_texts(texts)))
    scored = [d for d in DIMS if REFS[A][d]]
    near = [_cos(vectors, p, r) for d in scored for p in preds[1][d] for r in REFS[A][d]]
    assert any(0 < x - tau < 0.01 for x in near) and any(0 < tau - x < 0.01 for x in near), "near the threshold"

    def covered(k, d):
        return {r for r in REFS[A][d] if any(_cos(vectors, p, r) > tau for p in preds[k][d])}

    for k in (0, 1):
        align = np.mean([len(covered(k, d)) / len(REFS[A][d]) for d in scored])
        hal = np.mean([np.mean([max(_cos(vectors, p, r) for r in REFS[A][d]) <= tau for p in preds[k][d]])
                       for d in scored if preds[k][d]])
        assert s[("cultivate.align", A, k)].value == pytest.approx(align), k
        assert s[("cultivate.hal", A, k)].value == pytest.approx(hal), k
    per_a1 = json.loads(s[("cultivate.align", A, 1)].detail)["per_dimension"]
    assert per_a1["objects"] == 0.75, "roast turkey exact, pie slices .671 and sauce boat .603 above 0.6"
    ddiv, sdiv = [], []
    for d in scored:
        counts = np.array([sum(r in covered(k, d) for k in (0, 1)) for r in REFS[A][d]], dtype=float)
        q = counts[counts > 0] / counts.sum()
        ddiv.append(0.0 if len(counts) == 1 or not counts.sum() else float(-(q * np.log(q)).sum() / np.log(len(counts))))
        pooled = len(covered(0, d) | covered(1, d)) / len(REFS[A][d])
        sdiv.append(pooled - np.mean([len(covered(k, d)) / len(REFS[A][d]) for k in (0, 1)]))
    assert s[("cultivate.ddiv", A, None)].value == pytest.approx(np.mean(ddiv))
    assert s[("cultivate.sdiv", A, None)].value == pytest.approx(np.mean(sdiv))


#: the world's two photographs give 14 reference similarities, fewer than the default minimum
CALIBRATION_MINIMUM = 14


@pytest.fixture(scope="module")
def calibrated(world, tmp_path_factory):
    out = run(world, tmp_path_factory.mktemp("calibrated"), tau_min_similarities=CALIBRATION_MINIMUM)
    return out, scores_of(out), json.loads((out / "summary.json").read_text())


def test_tau_is_calibrated_on_the_photographs_only(world, calibrated, tmp_path):
    _, s, summary = calibrated
    embedder = load_scorer("all-minilm-l6-v2", config=world["scorers"], device="cpu")
    photo_preds = [json.loads(EXTRACT[("photo", k)].strip("`json\n")) for k in (1, 2)]
    a0 = json.loads(EXTRACT[(A, 0)].strip("`json\n"))
    texts = sorted({t for p in [*photo_preds, a0, REFS[A]] for d in DIMS for t in p[d]})
    vectors = dict(zip(texts, embedder.embed_texts(texts)))
    best = [max(_cos(vectors, p, r) for p in preds[d]) for preds in photo_preds for d in DIMS if preds[d]
            for r in REFS[A][d]]
    tau = round(float(np.quantile(best, 0.75)), 4)
    options = summary["provenance"]["options"]
    assert options["tau"] == tau and options["tau_from"] == "references"
    note = summary["provenance"]["notes"]["cultivate.faith"]["tau"]
    # photo 1: setting 2 + objects 4 + spatial 1 references; photo 2: setting 2 + objects 4 + interaction 1
    assert note["similarities"] == len(best) == 14 and note["reference_images"] == 2 and note["tau"] == tau
    # ALIGN of A0 at the calibrated tau, from the embedder's own vectors
    per = [np.mean([max((_cos(vectors, p, r) for p in a0[d]), default=-1) > tau for r in REFS[A][d]])
           for d in DIMS if REFS[A][d]]
    assert s[("cultivate.align", A, 0)].value == pytest.approx(np.mean(per))
    assert 0 < tau < 0.99
    with pytest.raises(CultureboardError, match="14 similarities, fewer than tau_min_similarities = 15"):
        run(world, tmp_path, tau_min_similarities=15)  # the scripted extractor has no paper tau to fall back to


def test_sharded_equals_unsharded(world, calibrated, tmp_path):
    whole, _, _ = calibrated
    for i in range(2):
        run(world, tmp_path, shard=(i, 2), tau_min_similarities=CALIBRATION_MINIMUM)
    merged = merge_shards(tmp_path, whole.name, world["dataset"])
    for name in ("summary.json", "scores.parquet"):
        assert (merged / name).read_bytes() == (whole / name).read_bytes()


def test_the_tiny_judge_runs_end_to_end_with_finite_values(world, tiny_scorers, tmp_path):
    """The tiny Qwen2.5-VL stand-in (random weights) through the real loading, constrained generation and yes/no
    path: every extraction parses, so ALIGN, HAL, EXAG, FAITH, DDIV and SDIV are finite where the data allow; tau
    falls back to the paper's; EXAG and judge_yes are its own P(yes)."""
    out = evaluate(world["submission"], world["dataset"], tmp_path, scorers=tiny_scorers, device="cpu", n_boot=20,
                   cache=tmp_path / "cache", options={"max_new_tokens": 16, "retries": 0})
    s = scores_of(out)
    summary = json.loads((out / "summary.json").read_text())
    assert not [r for r in s.values() if r.flag == cultivate.EXTRACTION_FAILED], "constrained answers always parse"
    assert summary["provenance"]["options"]["tau"] == 0.67 and summary["provenance"]["options"]["tau_from"] == "paper"
    assert summary["provenance"]["notes"]["cultivate.align"]["tau"]["failed_reference_images"] == 0
    finite = {name for (name, pid, _), r in s.items() if pid == A and np.isfinite(r.value)}
    assert finite >= {f"cultivate.{m}" for m in ("align", "hal", "exag", "faith", "ddiv", "sdiv", "judge_yes")}
    judge = load_scorer("qwen2.5-vl-7b", config=tiny_scorers, device="cpu")
    images = {k: open_rgb(world["submission"] / f"images/{A}/{k}.png") for k in (0, 1)}
    photos = [open_rgb(io.BytesIO(png(c))) for c in ((200, 120, 40), (30, 90, 200))]
    questions = [vqa_question(c) for c in STEREOTYPES[A]]
    baseline = np.mean([judge.yes_no([p] * 2, questions)[:, 0] for p in photos], axis=0)
    for k, image in images.items():
        p = judge.yes_no([image] * 2, questions)[:, 0]
        assert s[("cultivate.exag", A, k)].value == pytest.approx(max(0.0, float((p - baseline).max())), abs=1e-6)
        text = PROMPT_DESCRIPTION.format(activity="a family celebrating Thanksgiving", country="the United States")
        p_yes = float(judge.yes_no([image], [vqa_question(text)])[0, 0])
        assert s[("cultivate.judge_yes", A, k)].value == pytest.approx(p_yes, rel=1e-4)
