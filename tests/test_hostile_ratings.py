"""Hostile ratings files against ``cultureboard import ratings`` (through the real CLI, study cultivate; every study
reads its file through ``ratings_files.read_records``, where these rules live): NaN as text or as a JSON constant,
integers beyond 64 bits or of thousands of digits, JSON nested too deep, control characters in ids.

Corpus count (for the README; ``test_hostile_counts.py`` keeps it true): 12 cases, 12 rejected cleanly, 0 accepted
by design. Rejected (RATINGS): the import stops with the row named, exit 1, nothing written.
"""

from __future__ import annotations

import json

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
]


@pytest.fixture(scope="module")
def dataset(tmp_path_factory):
    from tiny_dataset import _row, write_tiny_dataset

    ids = [f"ir/eating/p{k}" for k in range(4)]
    return write_tiny_dataset(tmp_path_factory.mktemp("ratings") / "dataset",
                              {"cultivate": [_row("cultivate", pid, pid) for pid in ids]})


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
