"""publish_results: the staged Hub layout (one split per submission plus ``latest``), the dataset card's
YAML configs, loading the staged folder with ``datasets.load_dataset``, and errors (offline, bad input)."""

from __future__ import annotations

import json
import shutil

import datasets
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import yaml

from cultureboard.errors import CultureboardError
from cultureboard.evaluators.engine.evaluate import SCORES_SCHEMA
from cultureboard.evaluators.results.made import LEADERBOARD_CI, NOT_CI
from cultureboard.evaluators.results.publish import publish_results, split_name


class FakeHub:
    """Records the calls publish makes on huggingface_hub.HfApi and keeps a copy of the uploaded folder."""

    def __init__(self, keep):
        self.calls = []
        self.keep = keep

    def create_repo(self, repo_id, **kw):
        self.calls.append(("create_repo", repo_id, kw))

    def upload_folder(self, **kw):
        self.calls.append(("upload_folder", kw))
        shutil.copytree(kw["folder_path"], self.keep)  # the staged folder is temporary
        return type("CommitInfo", (), {"oid": "a" * 40, "commit_url": "https://hf.co/commit/a"})()


def scores(sid: str, n: int, extra: bool = False) -> pa.Table:
    rows = [{"metric": "faithfulness", "unit_id": f"p{i}", "prompt_id": f"cube-awareness/p{i}", "sample_idx": 0,
             "file_name": f"images/p{i}/0.png", "sha256": f"{i:064x}", "value": i / 10 + len(sid) / 100,
             "detail": None, "country": "JP", "continent": "Asia", "region_group": "GN", "category": "cuisine",
             "era": None} for i in range(n)]
    table = pa.Table.from_pylist(rows, schema=pa.schema([f for f in SCORES_SCHEMA if f.name in rows[0]]))
    if extra:  # a newer evaluator with one more column
        table = table.append_column("scorer", pa.array(["clip"] * n))
    return table


@pytest.fixture
def results(tmp_path):
    root = tmp_path / "results"
    for sid, n, extra in [("acme-ai__imagen-x", 3, False), ("black-forest-labs__flux-1-dev__fp16", 2, True)]:
        (root / sid).mkdir(parents=True)
        pq.write_table(scores(sid, n, extra), root / sid / "scores.parquet")
        (root / sid / "summary.json").write_text(json.dumps({"provenance": {"submission": {"id": sid}}, "metrics": []}))
    (root / "acme-ai__other.shards" / "0-of-2").mkdir(parents=True)  # an unmerged sharded run: not published
    pq.write_table(scores("x", 1), root / "acme-ai__other.shards" / "0-of-2" / "scores.parquet")
    return root


def test_split_names():
    assert split_name("acme-ai__imagen-x") == "acme_ai__imagen_x"
    assert split_name("black-forest-labs__flux-1-dev__fp16-30steps") == "black_forest_labs__flux_1_dev__fp16_30steps"
    with pytest.raises(CultureboardError):
        split_name("")


def test_publish_stages_one_split_per_submission_and_latest(results, tmp_path):
    staged = tmp_path / "uploaded"
    hub = FakeHub(staged)
    review = {"scored_by": "the evaluate workflow"}  # what the evaluate workflow writes beside what it scored
    (results / "black-forest-labs__flux-1-dev__fp16" / "review.json").write_text(json.dumps(review))
    out = publish_results(results, "org/cultureboard-results", submission="acme-ai__imagen-x", api=hub)
    assert out["commit"] == "a" * 40
    assert out["splits"] == {"acme_ai__imagen_x": "acme-ai__imagen-x",
                             "black_forest_labs__flux_1_dev__fp16": "black-forest-labs__flux-1-dev__fp16"}
    assert hub.calls[0] == ("create_repo", "org/cultureboard-results", {"repo_type": "dataset", "exist_ok": True})
    upload = hub.calls[1][1]
    assert upload["repo_id"] == "org/cultureboard-results" and upload["repo_type"] == "dataset"
    assert "acme-ai__imagen-x" in upload["commit_message"]

    files = sorted(p.relative_to(staged).as_posix() for p in staged.rglob("*") if p.is_file())
    assert files == ["README.md", "data/acme_ai__imagen_x.parquet", "data/black_forest_labs__flux_1_dev__fp16.parquet",
                     "data/latest.parquet", "summaries/acme_ai__imagen_x.json",
                     "summaries/black_forest_labs__flux_1_dev__fp16.json"]

    text = (staged / "README.md").read_text()
    assert text.startswith("---\n")
    meta = yaml.safe_load(text.split("---\n")[1])
    (config,) = meta["configs"]
    assert config["config_name"] == "default"
    assert config["data_files"] == [{"split": "latest", "path": "data/latest.parquet"},
                                    {"split": "acme_ai__imagen_x", "path": "data/acme_ai__imagen_x.parquet"},
                                    {"split": "black_forest_labs__flux_1_dev__fp16",
                                     "path": "data/black_forest_labs__flux_1_dev__fp16.parquet"}]

    one = datasets.load_dataset(str(staged), split="acme_ai__imagen_x")
    assert one.num_rows == 3 and set(one["submission"]) == {"acme-ai__imagen-x"}
    assert one.column_names[0] == "submission" and one["scorer"] == [None] * 3  # the other submission's column, null
    assert one.column_names[1:3] == ["generated_by", "scored_by"]
    assert set(one["generated_by"]) == {"the team (not audited)"} and set(one["scored_by"]) == {NOT_CI}
    assert one["value"] == pytest.approx([0.17, 0.27, 0.37])
    latest = datasets.load_dataset(str(staged), split="latest")
    assert latest.num_rows == 5
    assert latest["submission"] == ["acme-ai__imagen-x"] * 3 + ["black-forest-labs__flux-1-dev__fp16"] * 2
    assert latest["scorer"] == [None] * 3 + ["clip"] * 2
    assert latest["scored_by"] == [NOT_CI] * 3 + [LEADERBOARD_CI] * 2


def test_publish_is_reproducible(results, tmp_path):
    publish_results(results, "org/r", api=FakeHub(tmp_path / "a"))
    publish_results(results, "org/r", api=FakeHub(tmp_path / "b"))
    for name in ("README.md", "data/latest.parquet", "data/acme_ai__imagen_x.parquet"):
        assert (tmp_path / "a" / name).read_bytes() == (tmp_path / "b" / name).read_bytes()


def test_publish_offline_and_bad_input(results, tmp_path):
    with pytest.raises(CultureboardError, match="unreachable"):
        publish_results(results, "org/cultureboard-results")  # HF_HUB_OFFLINE=1: the real client refuses to connect
    with pytest.raises(CultureboardError, match="is not ORG/NAME"):
        publish_results(results, "cultureboard-results", api=FakeHub(tmp_path / "x"))
    with pytest.raises(CultureboardError, match="has no scores.parquet") as err:
        publish_results(results, "org/r", submission="nobody__nothing", api=FakeHub(tmp_path / "x"))
    assert "cultureboard evaluate" in err.value.fix
    (tmp_path / "empty").mkdir()
    with pytest.raises(CultureboardError, match="holds no submission results"):
        publish_results(tmp_path / "empty", "org/r", api=FakeHub(tmp_path / "x"))
    with pytest.raises(CultureboardError, match="is not a folder"):
        publish_results(tmp_path / "nowhere", "org/r", api=FakeHub(tmp_path / "x"))


def test_colliding_split_names_are_refused(results, tmp_path):
    shutil.copytree(results / "acme-ai__imagen-x", results / "acme_ai__imagen_x")
    with pytest.raises(CultureboardError, match="split name 'acme_ai__imagen_x'"):
        publish_results(results, "org/r", api=FakeHub(tmp_path / "x"))


def test_refused_upload_names_the_fix(results):
    from huggingface_hub.errors import HfHubHTTPError

    class Refusing(FakeHub):
        def upload_folder(self, **kw):
            error = HfHubHTTPError.__new__(HfHubHTTPError)  # its constructor's arguments differ between versions
            Exception.__init__(error, "403 Forbidden: you do not have write access")
            raise error

    with pytest.raises(CultureboardError, match="refused") as err:
        publish_results(results, "org/r", api=Refusing(None))
    assert "HF_TOKEN" in err.value.fix
