"""Control submissions: the reference photographs and the prompt's words as an image, made, validated and
scored like any submission; prompts without photographs are declared refusals with the reason."""

from __future__ import annotations

import json

import numpy as np
import pytest
from PIL import Image, ImageOps

from cultureboard.builder import build
from cultureboard.builder.references import synthetic_references
from cultureboard.cli import main
from cultureboard.dataset_folder import read_prompt_set, read_references
from cultureboard.errors import CultureboardError
from cultureboard.evaluators import evaluate, validate
from cultureboard.evaluators.submission.controls import make_control
from cultureboard.evaluators.engine import written
from cultureboard.evaluators.submission.format import read_metadata


@pytest.fixture(scope="module")
def dataset(tmp_path_factory):
    root = tmp_path_factory.mktemp("controls")
    build(root / "dataset", countries=["IT", "NG"], prompt_sets=["cube-awareness"])
    prompts = read_prompt_set(root / "dataset", "cube-awareness")
    # photographs for all but the last artifact, two each (fewer than the prompts' four images)
    qids = sorted({p["artifact_id"] for p in prompts})
    synthetic_references(root / "dataset", per_artifact=2, qids=qids[:-1])
    return root / "dataset"


def test_reference_photos_control(dataset, tmp_path):
    out = tmp_path / "control__reference-photos"
    result = make_control("reference-photos", dataset, "cube-awareness", out, size=64)
    lines = read_metadata(out / "metadata.jsonl")
    photos, _ = read_references(dataset)
    prompts = {p["prompt_id"]: p for p in read_prompt_set(dataset, "cube-awareness")}
    images = [m for m in lines if not m.get("refused")]
    refused = [m for m in lines if m.get("refused")]
    assert result == {"out": str(out), "images": len(images), "refused": len(refused)}
    assert len(lines) == sum(p["images_per_prompt"] for p in prompts.values())
    assert all(m["sample_idx"] < 2 for m in images) and all(Image.open(out / m["file_name"]).size == (64, 64) for m in images)
    last = max(photos) < max(p["artifact_id"] for p in prompts.values())
    reasons = {m["reason"] for m in refused}
    assert any(r.startswith("only 2 reference photograph(s)") for r in reasons)
    assert last and any(r.startswith("no reference photograph of") for r in reasons)
    report = validate(out, dataset)
    assert report.valid, report.to_text()
    spec = out / "submission.yaml"
    assert "control: reference-photos" in spec.read_text()


def test_text_only_control_is_scored_like_a_submission(dataset, tmp_path, tiny_scorers):
    out = tmp_path / "control__text-only"
    make_control("text-only", dataset, "cube-awareness", out, size=128)
    lines = read_metadata(out / "metadata.jsonl")
    assert not any(m.get("refused") for m in lines)
    pixels = np.asarray(Image.open(out / lines[0]["file_name"]).convert("L"))
    assert pixels.min() < 100 < pixels.max(), "dark text on a white page"
    result = evaluate(out, dataset, tmp_path / "results", scorers=tiny_scorers, device="cpu", n_boot=50,
                      cache=tmp_path / "cache")
    summary = json.loads((result / "summary.json").read_text())
    assert summary["provenance"]["submission"]["id"] == "control__text-only"
    assert any(e["metric"] == "cube.cultural_relevance" for e in summary["metrics"])


@pytest.mark.skipif(not written.available(), reason="the ocr extra is not installed")
def test_written_prompt_control_is_read_by_the_real_ocr(dataset, tmp_path, tiny_scorers, capsys):
    out = tmp_path / "control__written-prompt"
    result = make_control("written-prompt", dataset, "cube-awareness", out, size=256)
    prompts = read_prompt_set(dataset, "cube-awareness")
    lines = read_metadata(out / "metadata.jsonl")
    images = [m for m in lines if not m.get("refused")]
    assert result["images"] == len(prompts) and {m["sample_idx"] for m in images} == {0}
    assert {m["reason"] for m in lines if m.get("refused")} == {"written-prompt draws one image per prompt"}
    assert validate(out, dataset).valid
    assert main(["validate", str(out), "--read-text"]) == 2  # the names come from the dataset
    evaluated = evaluate(out, dataset, tmp_path / "results", scorers=tiny_scorers, device="cpu", n_boot=50,
                         cache=tmp_path / "cache")
    summary = json.loads((evaluated / "summary.json").read_text())
    seen = summary["provenance"]["written"]["images"]
    names = {p["prompt_id"]: p["artifact_name"] for p in prompts}
    spelling = [m["file_name"] for m in images if seen[m["file_name"]]["matched"] == names[m["prompt_id"]]]
    assert len(spelling) >= 0.9 * len(images), {k: v["text"] for k, v in seen.items()}
    block = summary["written"]
    assert block["spelling"] == sorted(spelling) and block["share"] == len(spelling) / block["checked"]
    without = block["without"]["cube.faithfulness"]
    assert without is None or without["n_images"] == len(images) - len(spelling)
    # the validation report says the same (read again, with the same OCR)
    capsys.readouterr()
    assert main(["validate", str(out), "--dataset", str(dataset), "--read-text", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["written"]["spelling"] == block["spelling"] and report["written"]["share"] == block["share"]


def test_controls_refuse_what_they_cannot_make(tmp_path):
    build(tmp_path / "bare", countries=["IT"], prompt_sets=["cube-awareness"])
    with pytest.raises(CultureboardError, match="has no reference photographs"):
        make_control("reference-photos", tmp_path / "bare", "cube-awareness", tmp_path / "control__reference-photos")
    with pytest.raises(CultureboardError, match="is not named control__text-only"):
        make_control("text-only", tmp_path / "bare", "cube-awareness", tmp_path / "x")
    with pytest.raises(CultureboardError, match="control__text-only__cube-awareness"):  # the fix names a tagged folder
        make_control("text-only", tmp_path / "bare", "cube-awareness", tmp_path / "control__reference-photos__a")
    # a tag (the prompt set) tells the controls of several prompt sets apart
    tagged = tmp_path / "control__text-only__cube-awareness"
    make_control("text-only", tmp_path / "bare", "cube-awareness", tagged, size=64)
    assert validate(tagged, tmp_path / "bare").valid and "tag: cube-awareness" in (tagged / "submission.yaml").read_text()
    assert main(["control", "text-only", "--dataset", str(tmp_path / "bare"), "--prompt-set", "cube-awareness",
                 "--out", str(tmp_path / "control__text-only"), "--size", "10"]) == 2


# --- the copying controls: category-images (CuRe) and unedited (ECB), from a source submission's images


def _pixels(path):
    return np.asarray(Image.open(path).convert("RGB"))


def _images(folder) -> dict:
    """(prompt_id, sample_idx) -> the metadata line of every image of a submission."""
    return {(m["prompt_id"], m["sample_idx"]): m for m in read_metadata(folder / "metadata.jsonl") if not m.get("refused")}


@pytest.fixture(scope="module")
def ladder(tmp_path_factory):
    """cure-ladder of Italy with 2 images per ladder prompt and 3 per P(c), and a text-only control of it as the
    source (a real submission made without a model: each prompt's own words, so every prompt's picture differs)."""
    root = tmp_path_factory.mktemp("ladder")
    build(root / "dataset", countries=["IT"], prompt_sets=["cure-ladder"], cure_images=[2, 3])
    source = root / "control__text-only__cure-ladder"
    assert main(["make-control", "text-only", "--dataset", str(root / "dataset"), "--prompt-set", "cure-ladder",
                 "--out", str(source), "--size", "64"]) == 0
    return {"root": root, "dataset": root / "dataset", "source": source,
            "prompts": {p["prompt_id"]: p for p in read_prompt_set(root / "dataset", "cure-ladder")}}


@pytest.fixture(scope="module")
def chains(tmp_path_factory):
    """The tiny dataset's ECB-like chain (a base and two edit steps) and a text-only control of it as the source."""
    from tiny_dataset import ECB, write_tiny_dataset

    root = tmp_path_factory.mktemp("chains")
    dataset = write_tiny_dataset(root / "dataset")
    source = root / f"control__text-only__{ECB}"
    assert main(["make-control", "text-only", "--dataset", str(dataset), "--prompt-set", ECB, "--out", str(source),
                 "--size", "64"]) == 0
    return {"root": root, "dataset": dataset, "source": source, "prompt_set": ECB,
            "prompts": {p["prompt_id"]: p for p in read_prompt_set(dataset, ECB)}}


def test_category_images_control_answers_every_ladder_prompt_with_its_category_images(ladder, tmp_path):
    out = tmp_path / "control__category-images__cure-ladder"
    assert main(["make-control", "category-images", "--dataset", str(ladder["dataset"]), "--prompt-set", "cure-ladder",
                 "--from", str(ladder["source"]), "--out", str(out)]) == 0
    report = validate(out, ladder["dataset"])
    assert report.valid, report.to_text()
    assert "control: category-images" in (out / "submission.yaml").read_text()
    assert "images_of: control__text-only__cure-ladder" in (out / "submission.yaml").read_text()
    mine, theirs, prompts = _images(out), _images(ladder["source"]), ladder["prompts"]
    assert len(mine) == sum(p["images_per_prompt"] for p in prompts.values())
    category = {(p["category"], p["subcategory"]): pid for pid, p in prompts.items() if p["level"] == "c"}
    levels = set()
    for (pid, k), line in mine.items():
        p = prompts[pid]
        pc = category[(p["category"], p["subcategory"])]
        copied = _pixels(out / line["file_name"])
        # the same picture as the source's P(c) sample k (not sample 0, not the prompt's own image)
        assert np.array_equal(copied, _pixels(ladder["source"] / theirs[(pc, k)]["file_name"])), (pid, k)
        assert np.array_equal(copied, _pixels(out / mine[(pc, k)]["file_name"]))
        if pid != pc:
            levels.add(p["level"])
            assert not np.array_equal(copied, _pixels(ladder["source"] / theirs[(pid, k)]["file_name"]))
            assert line["sha256"] != mine[(pc, k)]["sha256"]  # each file names its prompt: the validator's rule
        assert Image.open(out / line["file_name"]).text["copied_from"] == \
            f"control__text-only__cure-ladder {theirs[(pc, k)]['file_name']}"
    assert levels == {"n", "n,c", "n,r", "n,c,r"} and {k for _, k in mine} == {0, 1, 2}


def test_unedited_control_returns_each_chain_base_at_every_step(chains, tmp_path):
    out = tmp_path / f"control__unedited__{chains['prompt_set']}"
    assert main(["make-control", "unedited", "--dataset", str(chains["dataset"]), "--prompt-set", chains["prompt_set"],
                 "--from", str(chains["source"]), "--out", str(out)]) == 0
    report = validate(out, chains["dataset"])
    assert report.valid, report.to_text()
    assert "control: unedited" in (out / "submission.yaml").read_text()
    mine, theirs, prompts = _images(out), _images(chains["source"]), chains["prompts"]
    [base] = [pid for pid, p in prompts.items() if p["kind"] == "t2i"]
    steps = sorted((p["edit_step"], pid) for pid, p in prompts.items() if p["kind"] == "i2i")
    assert [s for s, _ in steps] == [1, 2]
    step0 = _pixels(chains["source"] / theirs[(base, 0)]["file_name"])
    assert np.array_equal(_pixels(out / mine[(base, 0)]["file_name"]), step0)
    for step, pid in steps:
        assert np.array_equal(_pixels(out / mine[(pid, 0)]["file_name"]), step0), step
        assert not np.array_equal(_pixels(chains["source"] / theirs[(pid, 0)]["file_name"]), step0)
        assert mine[(pid, 0)]["edit_step"] == step
        assert mine[(pid, 0)]["source_file"] == mine[(prompts[pid]["source_prompt_id"], 0)]["file_name"]


def _refuse(source, tmp_path, prompt_id, k):
    """A copy of ``source`` that declares sample k of ``prompt_id`` refused (its file removed)."""
    import shutil

    copy = shutil.copytree(source, tmp_path / source.name)
    lines = read_metadata(copy / "metadata.jsonl")
    for m in lines:
        if (m["prompt_id"], m["sample_idx"]) == (prompt_id, k):
            (copy / m.pop("file_name")).unlink()
            del m["sha256"]
            m.update(refused=True, reason="safety filter")
    (copy / "metadata.jsonl").write_text("".join(json.dumps(m) + "\n" for m in lines))
    return copy


def test_copying_controls_declare_what_the_source_refused(ladder, chains, tmp_path):
    prompts = ladder["prompts"]
    pc = next(pid for pid, p in prompts.items() if p["level"] == "c")
    source = _refuse(ladder["source"], tmp_path, pc, 1)
    out = tmp_path / "control__category-images"
    made = make_control("category-images", ladder["dataset"], "cure-ladder", out, source=source)
    ladder_of_pc = [pid for pid, p in prompts.items()
                    if (p["category"], p["subcategory"]) == (prompts[pc]["category"], prompts[pc]["subcategory"])]
    refused = {(m["prompt_id"], m["sample_idx"]): m["reason"] for m in read_metadata(out / "metadata.jsonl") if m.get("refused")}
    assert set(refused) == {(pid, 1) for pid in ladder_of_pc} and made["refused"] == len(ladder_of_pc) > 1
    assert all(r == f"control__text-only__cure-ladder declared {pc} sample 1 refused: safety filter" for r in refused.values())
    assert validate(out, ladder["dataset"]).valid

    [base] = [pid for pid, p in chains["prompts"].items() if p["kind"] == "t2i"]
    out = tmp_path / "control__unedited"
    made = make_control("unedited", chains["dataset"], chains["prompt_set"], out,
                        source=_refuse(chains["source"], tmp_path, base, 0))
    assert made == {"out": str(out), "images": 0, "refused": 3}
    assert validate(out, chains["dataset"]).valid  # a refused base refuses its whole chain


def test_copying_controls_refuse_what_they_cannot_copy(ladder, chains, tmp_path):
    dataset, source = ladder["dataset"], ladder["source"]
    with pytest.raises(CultureboardError, match="no --from was given"):
        make_control("category-images", dataset, "cure-ladder", tmp_path / "control__category-images")
    with pytest.raises(CultureboardError, match="--from does not apply"):
        make_control("text-only", dataset, "cure-ladder", tmp_path / "control__text-only", source=source)
    with pytest.raises(CultureboardError, match="keep the --from submission's size"):
        make_control("category-images", dataset, "cure-ladder", tmp_path / "control__category-images", size=64,
                     source=source)
    with pytest.raises(CultureboardError, match="has no category prompts P"):
        make_control("category-images", chains["dataset"], chains["prompt_set"], tmp_path / "control__category-images",
                     source=chains["source"])
    with pytest.raises(CultureboardError, match="has no edit steps"):
        make_control("unedited", dataset, "cure-ladder", tmp_path / "control__unedited", source=source)
    with pytest.raises(CultureboardError, match="is a submission of prompt set tiny-ecb, not cure-ladder"):
        make_control("category-images", dataset, "cure-ladder", tmp_path / "control__category-images",
                     source=chains["source"])
    import shutil

    tampered = shutil.copytree(source, tmp_path / "tampered" / source.name)
    copied = next(m["file_name"] for m in read_metadata(tampered / "metadata.jsonl")
                  if ladder["prompts"][m["prompt_id"]]["level"] == "c")
    (tampered / copied).write_bytes(_red_png())
    with pytest.raises(CultureboardError, match="differs from the sha256"):
        make_control("category-images", dataset, "cure-ladder", tmp_path / "control__category-images", source=tampered)
    lines = read_metadata(tampered / "metadata.jsonl")
    (tampered / "metadata.jsonl").write_text("".join(json.dumps({k: v for k, v in m.items() if k != "file_name"}) + "\n"
                                                     for m in lines))
    with pytest.raises(CultureboardError, match="without a file_name"):
        make_control("category-images", dataset, "cure-ladder", tmp_path / "control__category-images", source=tampered)
    assert not (tmp_path / "control__category-images").exists()  # nothing half-written
    assert main(["make-control", "unedited", "--dataset", str(dataset), "--prompt-set", "cure-ladder", "--out",
                 str(tmp_path / "control__unedited")]) == 2


def _red_png() -> bytes:
    import io

    buffer = io.BytesIO()
    Image.new("RGB", (64, 64), "red").save(buffer, format="PNG")
    return buffer.getvalue()


def test_reference_photos_of_a_prompt_set_without_any_photograph_is_refused(tmp_path, capsys):
    """Photographs exist for some artifacts, none for this prompt set's: one error line (exit 2), no submission of
    refusals only."""
    build(tmp_path / "ds", countries=["ES"], prompt_sets=["cube-awareness", "cultdiff"])  # a CultDiff country
    cube = sorted({p["artifact_id"] for p in read_prompt_set(tmp_path / "ds", "cube-awareness")})
    others = {p["artifact_id"] for p in read_prompt_set(tmp_path / "ds", "cultdiff")}
    synthetic_references(tmp_path / "ds", per_artifact=1, qids=[q for q in cube if q not in others][:1])
    out = tmp_path / "control__reference-photos__cultdiff"
    code = main(["make-control", "reference-photos", "--dataset", str(tmp_path / "ds"), "--prompt-set", "cultdiff",
                 "--out", str(out)])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1 and err[0].startswith("error: prompt set cultdiff: has no reference photograph")
    assert not out.exists()


# ------------------------------------------------------------------------------------------ copies

def _photo(dataset, qid: str, rank: int) -> Image.Image:
    import io

    photos, _ = read_references(dataset)
    return Image.open(io.BytesIO(next(r["data"] for r in photos[qid] if r["rank"] == rank))).convert("RGB")


def test_copied_references_control_is_refused_naming_each_photograph(dataset, tmp_path, capsys):
    """Every image of copied-references (the photographs re-encoded as JPEG q=60, squared) is an error naming
    the image and the photograph it copies (sample k is rank k + 1); the reference-photos control, the same
    pictures declared as photographs, is valid (test_reference_photos_control)."""
    out = tmp_path / "control__copied-references"
    result = make_control("copied-references", dataset, "cube-awareness", out, size=64)
    report = validate(out, dataset)
    copies = [p for p in report.errors if p.code == "image.copies_reference"]
    assert not report.valid and len(copies) == result["images"] > 0 and len(report.errors) == len(copies)
    prompts = {p["prompt_id"]: p for p in read_prompt_set(dataset, "cube-awareness")}
    for p, line in zip(copies, [m for m in read_metadata(out / "metadata.jsonl") if not m.get("refused")]):
        assert p.file == line["file_name"]
        assert f"reference photograph {prompts[line['prompt_id']]['artifact_id']} rank {line['sample_idx'] + 1} " in p.message
    assert main(["validate", str(out), "--dataset", str(dataset)]) == 1
    assert "image.copies_reference" in capsys.readouterr().out


def test_validating_again_reuses_the_perceptual_hashes_and_a_changed_image_is_hashed_anew(dataset, tmp_path,
                                                                                            monkeypatch):
    """A folder validated again in one process decodes no image again (the hashes are remembered by the sha256 of
    each file's bytes) and gets the same report; an image whose bytes changed (a noise image instead of a copied
    photograph) is hashed anew, and is no longer reported as a copy."""
    from cultureboard.evaluators.submission.format import read_spec, write_submission
    from cultureboard.evaluators.submission.rules import copies
    from cultureboard.provenance import file_sha256

    out = tmp_path / "control__copied-references"
    made = make_control("copied-references", dataset, "cube-awareness", out, size=64)
    monkeypatch.setattr(copies, "_HASHES", {})
    hashed = []
    real = copies.image_hashes
    monkeypatch.setattr(copies, "image_hashes", lambda image: hashed.append(1) or real(image))
    first = validate(out, dataset)
    assert len(hashed) == made["images"] > 1
    again = validate(out, dataset)
    assert len(hashed) == made["images"] and again.to_text() == first.to_text()
    rows = read_metadata(out / "metadata.jsonl")
    changed = next(r for r in rows if not r.get("refused"))
    Image.fromarray(np.random.default_rng(5).integers(0, 256, (64, 64, 3), dtype=np.uint8)).save(out / changed["file_name"])
    changed["sha256"] = file_sha256(out / changed["file_name"])
    write_submission(out, read_spec(out / "submission.yaml"), rows)
    third = validate(out, dataset)
    assert len(hashed) == made["images"] + 1
    copied = {p.file for p in third.errors if p.code == "image.copies_reference"}
    assert changed["file_name"] not in copied and len(copied) == made["images"] - 1


def _as_model(control, dataset, out, images: dict) -> None:
    """``control`` (a valid text-only control) turned into a model's submission ``out``: noise images of its own for
    every slot (so that no two prompts' images look alike), those of ``images`` ({(prompt index, sample): PIL image})
    instead where given."""
    import shutil

    from cultureboard.evaluators.submission.format import read_spec, write_submission
    from cultureboard.provenance import file_sha256

    shutil.copytree(control, out)
    spec = read_spec(out / "submission.yaml")
    del spec["control"]
    spec.update(organization="lab", model={**spec["model"], "name": "m", "id": "lab/m"})
    order = {p["prompt_id"]: i for i, p in enumerate(read_prompt_set(dataset, "cube-awareness"))}
    rows = read_metadata(out / "metadata.jsonl")
    for row in rows:
        key = (order[row["prompt_id"]], row["sample_idx"])
        rng = np.random.default_rng(list(key))
        image = images.get(key) or Image.fromarray(rng.integers(0, 256, (64, 64, 3), dtype=np.uint8))
        image.resize((64, 64)).save(out / row["file_name"], format="PNG")
        row["sha256"] = file_sha256(out / row["file_name"])
    write_submission(out, spec, rows)


def test_copies_of_a_reference_photograph_and_of_another_prompts_image_are_errors(dataset, tmp_path):
    """A model's submission: one prompt's image is its artifact's photograph mirrored, another's the photograph
    cropped by 10%, tinted and JPEG'd; a third prompt's image is a JPEG'd, mirrored copy of a fourth's (its own
    picture, structured, not noise) from another seed. Each is one error naming both files; the honest noise
    images pass, and so does a copy from the same seed (one seed's images start from the same noise)."""
    from photo_factory import crop, house_photo, jpeg, tint

    prompts = read_prompt_set(dataset, "cube-awareness")
    with_photos = [i for i, p in enumerate(prompts) if p["artifact_id"] in read_references(dataset)[0]]
    a, b = with_photos[0], next(i for i in with_photos if prompts[i]["artifact_id"] != prompts[with_photos[0]]["artifact_id"])
    c, d = [i for i in range(len(prompts)) if i not in (a, b)][:2]
    control = tmp_path / "control__text-only"
    make_control("text-only", dataset, "cube-awareness", control, size=64)
    honest = tmp_path / "submissions" / "lab__m"
    _as_model(control, dataset, honest, {(d, 0): house_photo(3)})
    report = validate(honest, dataset)
    assert report.valid and report.checked["hashed_images"] == report.checked["images"], report.to_text()

    copied = tmp_path / "copied" / "lab__m"
    _as_model(control, dataset, copied, {
        (a, 0): ImageOps.mirror(_photo(dataset, prompts[a]["artifact_id"], 1)),
        (b, 1): jpeg(tint(crop(_photo(dataset, prompts[b]["artifact_id"], 2), 0.05, 0.05, 0.05, 0.05))),
        (d, 0): house_photo(3), (c, 1): ImageOps.mirror(jpeg(house_photo(3))),
        (c, 0): jpeg(house_photo(3)),  # the same seed as (d, 0): one seed's images are not compared
    })
    report = validate(copied, dataset)
    found = sorted((p.code, p.file.split(":")[0] if p.code == "image.near_duplicate" else p.file) for p in report.errors)
    rows = {(r["prompt_id"], r["sample_idx"]): r for r in read_metadata(copied / "metadata.jsonl")}
    name = lambda i, k: rows[(prompts[i]["prompt_id"], k)]["file_name"]  # noqa: E731
    assert found == sorted([("image.copies_reference", name(a, 0)), ("image.copies_reference", name(b, 1)),
                            ("image.near_duplicate", "metadata.jsonl")]), report.to_text()
    near = next(p for p in report.errors if p.code == "image.near_duplicate")
    assert name(c, 1) in near.message and name(d, 0) in near.message
    ref = next(p for p in report.errors if p.file == name(b, 1))
    assert f"{prompts[b]['artifact_id']} rank 2" in ref.message


def test_a_reference_photograph_that_cannot_be_read_is_one_usage_error(dataset, tmp_path, capsys):
    """A references config whose photograph is not an image: one line naming the config and the artifact, exit 2."""
    import hashlib
    import shutil

    import pyarrow as pa
    import pyarrow.parquet as pq

    broken = tmp_path / "broken"
    shutil.copytree(dataset, broken)
    shard = sorted((broken / "data" / "references").glob("*.parquet"))[0]
    table = pq.read_table(shard)
    rows = table.to_pylist()
    rows[0]["image"] = {**rows[0]["image"], "bytes": b"not an image"}
    rows[0]["sha256"] = hashlib.sha256(b"not an image").hexdigest()
    pq.write_table(pa.Table.from_pylist(rows, schema=table.schema), shard)
    out = tmp_path / "submissions" / "lab__m"
    make_control("text-only", broken, "cube-awareness", tmp_path / "control__text-only", size=64)
    _as_model(tmp_path / "control__text-only", broken, out, {})
    code = main(["validate", str(out), "--dataset", str(broken)])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1 and f"reference photograph of {rows[0]['qid']}" in err[0], err
