"""The command line as a user runs it: real processes, one-line errors, exit codes, nothing half-written."""

from __future__ import annotations

import gzip
import os
import subprocess
import sys
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from cultureboard.builder.build import sample_dump_path
from cultureboard.demo import STANDIN_MODELS

REFERENCE = Path(__file__).resolve().parents[2] / "shared" / "reference"
REQUIRED = {"qid", "name", "country", "concept", "hop", "root", "P31", "P279", "P495", "P17", "P2012", "P361",
            "popularity", "image", "inception_year", "time_period", "description", "aliases"}


def cli(*args, cwd=None, env=None):
    env = {**os.environ, "HF_HUB_OFFLINE": "1", **(env or {})}
    return subprocess.run([sys.executable, "-m", "cultureboard.cli", *map(str, args)], capture_output=True, text=True,
                          env=env, cwd=cwd, timeout=600)


def assert_clean_error(result, *needles, code=1):
    assert result.returncode == code, result.stderr
    assert "Traceback" not in result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), result.stderr
    for needle in needles:
        assert needle in lines[0]


def test_artifacts_command(tmp_path):
    out = tmp_path / "space"
    r = cli("artifacts", "--dump", sample_dump_path(), "--concepts", "cuisine,landmarks,art", "--countries", "IT,JP",
            "--hops", 4, "--out", out)
    assert r.returncode == 0, r.stderr
    table = pq.read_table(out / "artifacts.parquet")
    assert REQUIRED <= set(table.column_names)
    rows = table.to_pylist()
    assert {r["country"] for r in rows} == {"IT", "JP"} and {r["concept"] for r in rows} == {"cuisine", "landmarks", "art"}
    filone = [r for r in rows if r["qid"] == "Q5449200"]
    assert filone and filone[0]["country"] == "IT" and filone[0]["hop"] >= 2
    assert (out / "report.json").is_file()


@pytest.mark.parametrize(
    "args, needles, code",
    [
        (["--concepts", "cuisine,fashionz", "--countries", "IT"], ["fashionz", "unknown concept"], 1),
        (["--concepts", "cuisine", "--countries", "IT,XX"], ["'XX'", "ISO 3166-1"], 1),
        (["--concepts", "cuisine", "--countries", "IT", "--hops", "0"], ["--hops 0"], 2),
    ],
)
def test_artifacts_bad_options(tmp_path, args, needles, code):
    out = tmp_path / "out"
    assert_clean_error(cli("artifacts", "--dump", sample_dump_path(), *args, "--out", out), *needles, code=code)
    assert not out.exists()


def test_missing_root(tmp_path):
    concepts = tmp_path / "concepts.yaml"
    concepts.write_text("cuisine:\n  roots:\n    - {qid: Q746549, name: dish}\n    - {qid: Q999999999, name: nothing}\n")
    r = cli("artifacts", "--dump", sample_dump_path(), "--concepts", "cuisine", "--countries", "IT",
            "--concepts-file", concepts, "--out", tmp_path / "out")
    assert_clean_error(r, "Q999999999", "not in the knowledge base")
    assert not (tmp_path / "out").exists()


def test_corrupt_dump_and_unreachable_endpoint(tmp_path):
    corrupt = tmp_path / "dump.json.gz"
    corrupt.write_bytes(gzip.compress(sample_dump_path().read_bytes())[:5000])
    r = cli("artifacts", "--dump", corrupt, "--concepts", "cuisine", "--countries", "IT", "--out", tmp_path / "a")
    assert_clean_error(r, str(corrupt), "cannot be read as a Wikidata JSON dump")
    r = cli("artifacts", "--sparql", "http://127.0.0.1:9/sparql", "--concepts", "cuisine", "--countries", "IT",
            "--out", tmp_path / "b")
    assert_clean_error(r, "http://127.0.0.1:9/sparql", "unreachable")
    r = cli("artifacts", "--concepts", "cuisine", "--countries", "IT", "--out", tmp_path / "c")
    assert_clean_error(r, "exactly one knowledge base", code=2)
    assert not any((tmp_path / d).exists() for d in "abc")


def test_out_folder_is_never_clobbered(tmp_path):
    precious = tmp_path / "precious"
    precious.mkdir()
    (precious / "thesis.tex").write_text("do not delete")
    r = cli("artifacts", "--dump", sample_dump_path(), "--concepts", "cuisine", "--countries", "IT", "--out", precious)
    assert_clean_error(r, "will not be overwritten")
    assert (precious / "thesis.tex").read_text() == "do not delete"


def test_bad_build_inputs(tmp_path):
    bad_config = tmp_path / "config.yaml"
    bad_config.write_text("countries: [IT]\nflavour: spicy\n")
    assert_clean_error(cli("build", "--out", tmp_path / "o", "--config", bad_config), "flavour")
    assert_clean_error(cli("build", "--out", tmp_path / "o", "--prompt-sets", "cube-awareness,nope"), "nope")
    assert_clean_error(cli("build", "--out", tmp_path / "o", "--llm", "telepathy:x"), "telepathy")
    assert not (tmp_path / "o").exists()


def test_cure_import_with_missing_column(tmp_path):
    if not REFERENCE.is_dir():
        pytest.skip(f"the papers' reference data is not at {REFERENCE}")
    broken = tmp_path / "csv"
    broken.mkdir()
    for src in (REFERENCE / "cure/prepare_data/cure_dataset_csv").glob("*.csv"):
        text = src.read_text(encoding="utf-8")
        if src.name == "food.csv":
            text = text.replace("Region,", "Place,", 1)
        (broken / src.name).write_text(text, encoding="utf-8")
    assert_clean_error(cli("import", "cure", broken, "--out", tmp_path / "o"), "food.csv", "Region")
    assert not (tmp_path / "o").exists()


def test_demo_runs_every_step(tmp_path):
    env_cache = {"CULTUREBOARD_CACHE": str(tmp_path / "cache")}
    r = cli("demo", "--out", tmp_path / "demo", env=env_cache)
    assert r.returncode == 0, r.stderr
    demo = tmp_path / "demo"
    assert (demo / "dataset/README.md").is_file() and (demo / "site/index.html").is_file()
    subs = sorted(p.name for p in (demo / "submissions").iterdir())
    assert subs == sorted(f"demo__{model}__{ps}" for model, sets in STANDIN_MODELS.items() for ps in sets)
    assert "demo__tiny-a__cultivate" in subs
    assert sorted(p.name for p in (demo / "results").iterdir()) == subs
    assert all((demo / "results" / s / "summary.json").is_file() for s in subs)
    assert "random-weight stand-in" in r.stdout and str((demo / "site" / "index.html").resolve()) in r.stdout
    first = (demo / "results" / subs[0] / "summary.json").read_bytes()
    again = cli("demo", "--out", tmp_path / "demo", env=env_cache)  # stand-ins, images and embeddings are reused
    assert again.returncode == 0, again.stderr
    assert (demo / "results" / subs[0] / "summary.json").read_bytes() == first
