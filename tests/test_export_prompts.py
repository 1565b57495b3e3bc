"""``export-prompts``: one row per image to make, the same rows in CSV, JSON Lines and parquet, with the pin of the
dataset folder; bad input is one line."""

from __future__ import annotations

import csv
import json

import pyarrow.parquet as pq
import pytest
from hub_download import COMMIT, as_hub_download
from test_cli import assert_clean_error, cli
from tiny_dataset import ECB, write_tiny_dataset

from cultureboard.errors import CultureboardError
from cultureboard.evaluators.submission.export import COLUMNS, export_prompts
from cultureboard.hub import OFFICIAL_DATASET


@pytest.fixture(scope="module")
def dataset(tmp_path_factory):
    return as_hub_download(write_tiny_dataset(tmp_path_factory.mktemp("export") / "dataset"))


def test_one_row_per_image_with_the_chain_and_the_pin(dataset, tmp_path):
    result = export_prompts(ECB, tmp_path / "p.jsonl", dataset=dataset)
    assert (result["rows"], result["prompts"], result["format"]) == (3, 3, "jsonl")
    assert (result["dataset"], result["revision"], result["hub"]) == (OFFICIAL_DATASET, COMMIT, True)
    rows = [json.loads(line) for line in (tmp_path / "p.jsonl").read_text().splitlines()]
    assert [tuple(r) for r in rows] == [COLUMNS] * 3
    assert [(r["prompt_id"].rsplit("/", 1)[-1], r["kind"], r["edit_step"], r["seed"]) for r in rows] == [
        ("main-dish", "t2i", None, 0), ("1", "i2i", 1, 0), ("2", "i2i", 2, 0)]
    assert rows[2]["source_prompt_id"] == rows[1]["prompt_id"] and {r["revision"] for r in rows} == {COMMIT}


def test_csv_jsonl_and_parquet_hold_the_same_rows(dataset, tmp_path):
    for fmt in ("csv", "jsonl", "parquet"):
        export_prompts("tiny-t2i", tmp_path / f"p.{fmt}", dataset=dataset)
    with open(tmp_path / "p.csv", newline="") as fh:
        from_csv = list(csv.DictReader(fh))
    from_jsonl = [json.loads(line) for line in (tmp_path / "p.jsonl").read_text().splitlines()]
    from_parquet = pq.read_table(tmp_path / "p.parquet").to_pylist()
    assert from_jsonl == from_parquet and len(from_csv) == 6
    assert [{k: "" if v is None else str(v) for k, v in r.items()} for r in from_jsonl] == from_csv
    assert [(r["sample_idx"], r["seed"]) for r in from_jsonl[:2]] == [(0, 10), (1, 11)]
    assert from_jsonl[2]["negative_prompt"] == "blurry, cartoon"


def test_the_command_and_its_errors(dataset, tmp_path):
    r = cli("export-prompts", "--dataset", dataset, "--prompt-set", "tiny-t2i", "--out", tmp_path / "x.txt",
            "--format", "parquet", "--json")
    assert r.returncode == 0 and json.loads(r.stdout)["format"] == "parquet" and pq.read_table(tmp_path / "x.txt")
    assert_clean_error(cli("export-prompts", "--dataset", dataset, "--prompt-set", "tiny_t2i", "--out", tmp_path / "y.csv"),
                       "has no prompt set 'tiny_t2i' (did you mean tiny-t2i?)")
    offline = cli("export-prompts", "--revision", "v1.0", "--dataset", tmp_path / "new", "--prompt-set", "tiny-t2i",
                  "--out", tmp_path / "z.csv")
    assert_clean_error(offline, f"{OFFICIAL_DATASET}@v1.0: cannot be downloaded", "check the revision")
    assert not (tmp_path / "y.csv").exists() and not (tmp_path / "z.csv").exists()
    with pytest.raises(CultureboardError, match="is not a format"):
        export_prompts("tiny-t2i", tmp_path / "w.csv", dataset=dataset, fmt="xlsx")
