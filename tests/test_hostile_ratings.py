"""Hostile ratings files against ``cultureboard import ratings`` (through the real CLI, study cultivate; every study
reads its file through ``ratings_files.read_records``, where these rules live): NaN as text or as a JSON constant,
integers beyond 64 bits or of thousands of digits, JSON nested too deep, control, bidirectional or zero-width
characters and lone surrogates in ids. And ratings of a submission or image that does not exist in the folder the
import was given (``--results`` or ``--submissions``; every study checks its rows through ``studies.import_study``,
with ``rated_items.check_rated``), and scores (``--scores``) that share no image with the ratings.

Corpus count (for the README; ``test_hostile_counts.py`` keeps it true): 28 cases, 28 rejected cleanly, 0 accepted
by design. Rejected (RATINGS, UNKNOWN_IDS, UNSHARED_SCORES): the import stops with the row or file named, exit 1,
nothing written.
"""

from __future__ import annotations

import hashlib
import json

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from cultureboard.cli import main

HEADER = "rater,submission,file_name,gt_faith\n"
GOOD_CSV = "".join(f"r1,lab__m,images/{k}.png,{k + 1}\n" for k in range(3))


def jsonl(**last) -> str:
    rows = [{"rater": "r1", "submission": "lab__m", "file_name": f"images/{k}.png", "gt_faith": k + 1}
            for k in range(3)]
    return "".join(json.dumps(r) + "\n" for r in rows) + json.dumps(
        {"rater": "r1", "submission": "lab__m", "file_name": "images/3.png", "gt_faith": 4, **last}) + "\n"


# (id, file name, text, words of the problem): one error naming the file's line 5 (CSV) or 4 (JSONL)
RATINGS = [
    ("nan-text", "r.csv", HEADER + GOOD_CSV + "r1,lab__m,images/3.png,nan\n", "reads as NaN"),
    ("NaN-text", "r.csv", HEADER + GOOD_CSV + "r1,lab__m,images/3.png, NaN \n", "reads as NaN"),
    ("infinity-text", "r.csv", HEADER + GOOD_CSV + "r1,lab__m,images/3.png,-inf\n", "reads as NaN or infinity"),
    ("nan-json-constant", "r.jsonl", jsonl().replace('"gt_faith": 4}', '"gt_faith": NaN}'), "NaN is not a number"),
    ("nan-json-string", "r.jsonl", jsonl(gt_faith="NaN"), "reads as NaN"),
    ("integer-beyond-64-bits", "r.jsonl", jsonl().replace('"gt_faith": 4}', '"gt_faith": 4' + "0" * 400 + "}"),
     "integer beyond 64 bits"),
    ("integer-of-5000-digits", "r.jsonl", jsonl().replace('"gt_faith": 4}', '"gt_faith": 4' + "0" * 5000 + "}"),
     "is not a ratings row"),
    ("nesting-too-deep-to-parse", "r.jsonl", jsonl().replace('"gt_faith": 4}', '"gt_faith": ' + "[" * 100_000
                                                             + "]" * 100_000 + "}"), "nested too deep to read"),
    ("nesting-deeper-than-allowed", "r.jsonl", jsonl(gt_faith=[[[[[[4]]]]]]), "nests containers"),
    ("control-character-in-rater", "r.csv", HEADER + GOOD_CSV + "r\x01,lab__m,images/3.png,4\n", "control character"),
    ("nul-in-submission", "r.jsonl", jsonl(submission="lab__m\x00"), "control character"),
    ("newline-in-file-name", "r.jsonl", jsonl(file_name="images/3.png\nimages/0.png"), "control character"),
    # ids that look like others (cultureboard.text.IDENTIFIER): j<ZWSP>1 would be a rater apart from j1
    ("zero-width-space-in-rater", "r.csv", HEADER + GOOD_CSV + "j\u200b1,lab__m,images/3.png,4\n",
     "holds the invisible format character U+200B"),
    ("zero-width-joiner-in-rater", "r.jsonl", jsonl(rater="r\u200d1"), "holds the invisible format character U+200D"),
    ("bidi-override-in-submission", "r.jsonl", jsonl(submission="lab__m\u202e"), "bidirectional control U+202E"),
    ("bidi-isolate-in-rater", "r.csv", HEADER + GOOD_CSV + "r\u20661\u2069,lab__m,images/3.png,4\n",
     "bidirectional control U+2066"),
    ("byte-order-mark-inside-a-file-name", "r.csv", HEADER + GOOD_CSV + "r1,lab__m,images/\ufeff3.png,4\n",
     "holds the invisible format character U+FEFF"),
    ("lone-surrogate-in-rater", "r.jsonl", jsonl(rater="r\ud8001"), "holds U+D800, which UTF-8 cannot store"),
]


@pytest.fixture(scope="module")
def dataset(tmp_path_factory):
    from tiny_dataset import _row, write_tiny_dataset

    ids = [f"ir/eating/p{k}" for k in range(4)]
    pizza = {**_row("tiny-cube", "it/food/pizza", "A photo of pizza from Italy.", seeds=(0, 1)), "country": "IT",
             "category": "food"}
    return write_tiny_dataset(tmp_path_factory.mktemp("ratings") / "dataset",
                              {"cultivate": [_row("cultivate", pid, pid) for pid in ids], "tiny-cube": [pizza]})


@pytest.mark.parametrize("name, text, words", [pytest.param(*c[1:], id=c[0]) for c in RATINGS])
def test_import_ratings_rejects(capsys, tmp_path, dataset, name, text, words):
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    code = main(["import", "ratings", str(path), "--study", "cultivate", "--dataset", str(dataset),
                 "--out", str(tmp_path / "rated")])
    err = capsys.readouterr().err
    assert code == 1 and "Traceback" not in err and err.startswith(f"error: {path}: 1 problem(s)"), err
    line = 5 if name.endswith(".csv") else 4
    assert f"{path}:{line}: " in err and words in err, err
    assert not (tmp_path / "rated").exists()


def test_the_sound_rows_import(capsys, tmp_path, dataset):
    """The corpus's starting point is sound: its good rows alone import."""
    path = tmp_path / "r.csv"
    path.write_text(HEADER + GOOD_CSV, encoding="utf-8")
    assert main(["import", "ratings", str(path), "--study", "cultivate", "--dataset", str(dataset),
                 "--out", str(tmp_path / "rated")]) == 0, capsys.readouterr().err


# --- ratings of submissions and images that do not exist

SHA = [hashlib.sha256(str(k).encode()).hexdigest() for k in range(4)]
PIZZA = "tiny-cube/it/food/pizza"  # two images a prompt in the prompt set; lab__m has made sample 0 only
CUBE_HEADER = "rater,rater_country,submission,prompt_id,sample_idx,relevance\n"
CUBE_GOOD = f"r1,JP,lab__m,{PIZZA},0,yes\n"
CULTDIFF_HEADER = "rater,rater_country,prompt_id,image_sha256,q1_1\n"


# (id, study, the folder it is checked against, file name, text, the unknown id): one error naming the file's last
# line (5 for CSV with its header and three good rows before, 4 for JSONL; 3 for the two-row cube and cultdiff files)
UNKNOWN_IDS = [
    ("unknown-submission", "cultivate", "results", "r.csv", HEADER + GOOD_CSV + "r1,lab__other,images/3.png,4\n",
     "lab__other"),
    ("submission-outside-the-folder", "cultivate", "results", "r.csv",
     HEADER + GOOD_CSV + "r1,../lab__m,images/3.png,4\n", "../lab__m"),
    ("unknown-file-name", "cultivate", "results", "r.csv", HEADER + GOOD_CSV + "r1,lab__m,images/9.png,4\n",
     "images/9.png"),
    ("unknown-sha256", "cultivate", "results", "r.jsonl", jsonl(file_name=None, image_sha256="f" * 64), "f" * 64),
    ("unknown-sample-of-a-known-prompt", "cultivate", "results", "r.jsonl",
     jsonl(file_name=None, prompt_id="cultivate/ir/eating/p1", sample_idx=5), "cultivate/ir/eating/p1"),
    ("cube-unknown-submission", "cube", "submissions", "r.csv",
     CUBE_HEADER + CUBE_GOOD + f"r2,JP,lab__other,{PIZZA},0,no\n", "lab__other"),
    ("cube-image-the-submission-lacks", "cube", "submissions", "r.csv",
     CUBE_HEADER + CUBE_GOOD + f"r2,JP,lab__m,{PIZZA},1,no\n", PIZZA),
    ("cultdiff-unknown-sha256", "cultdiff", "submissions", "r.csv",
     CULTDIFF_HEADER + f"r1,JP,{PIZZA},{SHA[0]},4\n" + f"r2,JP,{PIZZA},{'e' * 64},2\n", "e" * 64),
]


@pytest.fixture(scope="module")
def folders(tmp_path_factory, dataset) -> dict:
    """``results/lab__m/scores.parquet`` and ``submissions/lab__m/metadata.jsonl``, both of the images
    images/0-3.png (cultivate prompts p0-p3, sample 0) and images/pizza.png (PIZZA sample 0)."""
    root = tmp_path_factory.mktemp("rated")
    images = [{"file_name": f"images/{k}.png", "sha256": SHA[k], "prompt_id": f"cultivate/ir/eating/p{k}",
               "sample_idx": 0} for k in range(3)]
    images.append({"file_name": "images/pizza.png", "sha256": SHA[3], "prompt_id": PIZZA, "sample_idx": 0})
    images.insert(3, {**images[0], "file_name": "images/3.png", "prompt_id": "cultivate/ir/eating/p3"})
    (root / "results" / "lab__m").mkdir(parents=True)
    pq.write_table(pa.Table.from_pylist([{**im, "metric": "cultivate.faith", "value": 0.5} for im in images]),
                   root / "results" / "lab__m" / "scores.parquet")
    (root / "submissions" / "lab__m").mkdir(parents=True)
    (root / "submissions" / "lab__m" / "metadata.jsonl").write_text("".join(json.dumps(im) + "\n" for im in images))
    return {"results": root / "results", "submissions": root / "submissions", "dataset": dataset}


def import_args(path, study: str, folder: str, folders: dict, out) -> list[str]:
    prompt_set = ["--prompt-set", "tiny-cube"] if study != "cultivate" else []
    return ["import", "ratings", str(path), "--study", study, "--dataset", str(folders["dataset"]), *prompt_set,
            f"--{folder}", str(folders[folder]), "--out", str(out)]


@pytest.mark.parametrize("study, folder, name, text, unknown", [pytest.param(*c[1:], id=c[0]) for c in UNKNOWN_IDS])
def test_import_ratings_rejects_unknown_ids(capsys, tmp_path, folders, study, folder, name, text, unknown):
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    code = main(import_args(path, study, folder, folders, tmp_path / "rated"))
    err = capsys.readouterr().err
    assert code == 1 and "Traceback" not in err and err.startswith(f"error: {path}: 1 problem(s)"), err
    line = {".csv": 5, ".jsonl": 4}[path.suffix] if study == "cultivate" else 3
    assert f"{path}:{line}: " in err and repr(unknown)[1:-1] in err and "(fix: " in err, err
    assert not (tmp_path / "rated").exists()


def test_ratings_of_images_that_exist_import(capsys, tmp_path, folders):
    """The unknown-id corpus's starting point is sound: its good rows alone import, checked against the folder."""
    path = tmp_path / "r.csv"
    path.write_text(CUBE_HEADER + CUBE_GOOD, encoding="utf-8")
    assert main(import_args(path, "cube", "submissions", folders, tmp_path / "rated")) == 0, capsys.readouterr().err


# --- scores that share no image with the ratings

# (id, study, ratings text, the scores' rows): scores.parquet of another submission (none of the rated images): one
# error naming the scores file, exit 1, nothing written (the validity tables would hold n = 0 everywhere)
UNSHARED_SCORES = [
    ("cube-scores-of-other-images", "cube", CUBE_HEADER + CUBE_GOOD,
     [{"prompt_id": "cultivate/ir/eating/p0", "sample_idx": 0, "metric": "cube.faithfulness", "value": 0.5}]),
    ("cultdiff-scores-of-other-images", "cultdiff", CULTDIFF_HEADER + f"r1,JP,{PIZZA},{SHA[0]},4\n",
     [{"sha256": "e" * 64, "prompt_id": PIZZA, "sample_idx": 0, "metric": "cultdiff.dino", "value": 0.5,
       "flag": None}]),
]


@pytest.mark.parametrize("study, text, scores", [pytest.param(*c[1:], id=c[0]) for c in UNSHARED_SCORES])
def test_import_ratings_refuses_scores_that_share_no_image(capsys, tmp_path, folders, study, text, scores):
    path, other = tmp_path / "r.csv", tmp_path / "other-scores.parquet"
    path.write_text(text, encoding="utf-8")
    pq.write_table(pa.Table.from_pylist(scores), other)
    code = main(import_args(path, study, "submissions", folders, tmp_path / "rated") + ["--scores", str(other)])
    err = capsys.readouterr().err
    [line] = err.strip().splitlines()
    assert code == 1 and line.startswith(f"error: {other}: scores none of the 1 rated images") and "(fix: " in line, err
    assert not (tmp_path / "rated").exists()
