"""The whole build on the shipped sample: dataset folder in Hub layout, every config loadable with
``datasets.load_dataset``, provenance, reproducibility, curation, and publishing through huggingface_hub."""

from __future__ import annotations

import json
from pathlib import Path

import datasets
import pyarrow.parquet as pq
import pytest
import yaml

from cultureboard.builder import build, import_dataset, publish_dataset
from cultureboard.builder.prompt_sets import prompt_set_names
from cultureboard.dataset_folder import read_prompt_set
from cultureboard.errors import CultureboardError
from cultureboard.records import ARTIFACT_SCHEMA, PROMPT_SCHEMA

REFERENCE = Path(__file__).resolve().parents[2] / "shared" / "reference"


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> tuple[Path, dict]:
    out = tmp_path_factory.mktemp("build") / "dataset"
    return out, build(out)


def card_header(folder: Path) -> dict:
    text = (folder / "README.md").read_text(encoding="utf-8")
    return yaml.safe_load(text.split("---\n")[1])


def test_every_config_loads_with_datasets(built):
    out, provenance = built
    names = [c["config_name"] for c in card_header(out)["configs"]]
    # no llm-decisions (the stage was skipped); cultivate's reference descriptors come from the seed rows; the native
    # variants' rows from the packaged translation file
    assert names == ["artifacts", "artifacts-curated", *prompt_set_names(), "cultivate-descriptors"]
    for name in names:
        ds = datasets.load_dataset(str(out), name, split="test")
        assert ds.num_rows == provenance["rows"][name]
        if name in prompt_set_names():
            assert ds.column_names == PROMPT_SCHEMA.names and ds.num_rows > 0
            assert len(set(ds["prompt_id"])) == ds.num_rows
        elif name.startswith("artifacts"):
            assert ds.column_names == ARTIFACT_SCHEMA.names and ds.num_rows > 0


def test_each_build_loads_its_own_rows_whatever_the_datasets_cache_holds(tmp_path):
    """Two builds into folders both named ``dataset``, and one of them rebuilt in place, loaded in turn
    through the session's one datasets cache (tests/conftest.py): each load gives the folder's rows."""
    first, second = tmp_path / "a" / "dataset", tmp_path / "b" / "dataset"
    build(first, countries=["IT", "JP"], prompt_sets=["cube-awareness"])
    build(second, countries=["BR", "FR", "US"], prompt_sets=["cube-awareness"])

    def loaded(folder: Path, name: str) -> tuple[int, set]:
        ds = datasets.load_dataset(str(folder), name, split="test")
        return ds.num_rows, set(ds["country"])

    def on_disk(folder: Path, name: str) -> tuple[int, set]:
        table = pq.read_table(folder / f"data/{name}/test-00000-of-00001.parquet")
        return table.num_rows, set(table.column("country").to_pylist())

    for folder in (first, second, first):
        for name in ("artifacts", "cube-awareness"):
            assert loaded(folder, name) == on_disk(folder, name)
    assert on_disk(first, "artifacts")[1] == {"IT", "JP"} and on_disk(second, "artifacts")[1] == {"BR", "FR", "US"}
    build(first, countries=["US"], prompt_sets=["cube-awareness"])  # the same folder, rebuilt
    assert loaded(first, "artifacts") == on_disk(first, "artifacts") and on_disk(first, "artifacts")[1] == {"US"}
    assert "(data sha256:" in card_header(first)["configs"][0]["description"]


def test_a_config_without_rows_is_not_written_and_the_card_says_why(tmp_path):
    out = tmp_path / "dataset"
    provenance = build(out, countries=["IT", "JP"])  # none of CultDiff's ten countries
    assert provenance["rows"]["cultdiff"] == 0
    names = [c["config_name"] for c in card_header(out)["configs"]]
    assert "cultdiff" not in names and not (out / "data" / "cultdiff").exists()
    assert "Not in this build, because it gave them no rows: `cultdiff`" in (out / "README.md").read_text()
    for name in names:
        assert datasets.load_dataset(str(out), name, split="test").num_rows == provenance["rows"][name] > 0
    with pytest.raises(CultureboardError, match="has no prompt set 'cultdiff' \\(the build gave it no rows"):
        read_prompt_set(out, "cultdiff")


def test_card_and_provenance(built):
    out, provenance = built
    card = (out / "README.md").read_text(encoding="utf-8")
    for needle in ("## Licences", "## Citation", "Kannen", "Rege", "## Build provenance", "cube-awareness"):
        assert needle in card
    recorded = json.loads((out / "build.json").read_text())
    assert recorded == json.loads(json.dumps(provenance))
    assert recorded["source"]["dump"]["file"] == "sample_dump.json" and len(recorded["source"]["dump"]["sha256"]) == 64
    assert recorded["llm"] == {"skipped": True, "reason": "--llm none"}
    assert recorded["code"]["cultureboard"] and "pyarrow" in recorded["code"]["packages"]
    assert recorded["prompt_sets"]["ecb"]["rows"] == 2844 + 78  # with the 78 country-agnostic prompts


def test_rebuild_is_byte_identical(built, tmp_path):
    out, _ = built
    again = tmp_path / "again"
    build(again)
    files = sorted(p.relative_to(out) for p in out.rglob("*") if p.is_file())
    assert files == sorted(p.relative_to(again) for p in again.rglob("*") if p.is_file())
    for rel in files:
        assert (out / rel).read_bytes() == (again / rel).read_bytes(), rel


def test_curation_file_applied_last(built, tmp_path):
    out, _ = built
    curated = pq.read_table(out / "data/artifacts-curated/test-00000-of-00001.parquet").to_pylist()
    space = pq.read_table(out / "data/artifacts/test-00000-of-00001.parquet").to_pylist()
    victim, renamed = curated[0], curated[1]
    outside = next((r for r in space if (r["qid"], r["country"]) not in {(c["qid"], c["country"]) for c in curated}), None)
    curation = tmp_path / "curation.yaml"
    entries = {
        "exclude": [{"qid": victim["qid"], "country": victim["country"]}],
        "rename": [{"qid": renamed["qid"], "name": "Renamed by a reviewer"}],
        "include": [{"qid": "manual:test-dish", "name": "Test dish", "country": "IT", "concept": "cuisine"}],
    }
    if outside:
        entries["include"].append({"qid": outside["qid"], "country": outside["country"]})
    curation.write_text(yaml.safe_dump(entries))
    result = tmp_path / "curated"
    prov = build(result, curation=str(curation), prompt_sets=["cube-awareness"])
    rows = pq.read_table(result / "data/artifacts-curated/test-00000-of-00001.parquet").to_pylist()
    keys = {(r["qid"], r["country"]) for r in rows}
    assert (victim["qid"], victim["country"]) not in keys and ("manual:test-dish", "IT") in keys
    assert any(r["name"] == "Renamed by a reviewer" and renamed["name"] in r["aliases"] for r in rows)
    assert prov["curation"]["excluded"] == 1 and prov["curation"]["renamed"] >= 1
    prompts = pq.read_table(result / "data/cube-awareness/test-00000-of-00001.parquet").to_pylist()
    assert any("Test dish" in p["text"] for p in prompts)


@pytest.mark.parametrize(
    "content, message",
    [
        ("include: [{qid: Q1}]\nbogus: []\n", "only the keys include, exclude and rename"),
        ("exclude: nope\n", "'exclude' must be a list"),
        ("include: [{qid: Q999999999}]\n", "not in the artifact space"),
        ("rename: [{qid: Q1}]\n", "has no new name"),
        ("exclude: [\n", "cannot be read as a curation file"),
    ],
)
def test_bad_curation_file(tmp_path, content, message):
    curation = tmp_path / "curation.yaml"
    curation.write_text(content)
    with pytest.raises(CultureboardError, match=message):
        build(tmp_path / "out", curation=str(curation), prompt_sets=["cube-awareness"])
    assert not (tmp_path / "out").exists()


def test_llm_stage_decisions_and_cache_are_stored(llm_server, tmp_path, monkeypatch):
    monkeypatch.setenv("CULTUREBOARD_LLM_BASE_URL", llm_server.base_url)
    monkeypatch.setenv("CULTUREBOARD_LLM_API_KEY", "sk-test")
    out = tmp_path / "with-llm"
    prov = build(out, llm="openai:test-model", countries=["IT"], concepts=["cuisine"], prompt_sets=["cube-awareness"])
    decisions = datasets.load_dataset(str(out), "llm-decisions", split="test")
    assert decisions.num_rows > 0 and set(decisions["model"]) == {"test-model"}
    assert prov["llm"]["backend"] == "openai" and prov["llm"]["calls"] > 0
    assert (out / "llm/cache.jsonl").is_file()
    calls = llm_server.count
    again = tmp_path / "replayed"
    build(again, llm="openai:test-model", llm_cache=str(out / "llm/cache.jsonl"), countries=["IT"], concepts=["cuisine"],
          prompt_sets=["cube-awareness"])
    assert llm_server.count == calls  # every answer came from the stored cache
    assert (again / "data/artifacts/test-00000-of-00001.parquet").read_bytes() == (out / "data/artifacts/test-00000-of-00001.parquet").read_bytes()


def test_seed_changes_only_oversized_strata(tmp_path):
    a = build(tmp_path / "a", prompt_sets=["cube-awareness"], seed=0)
    b = build(tmp_path / "b", prompt_sets=["cube-awareness"], seed=1)
    assert a["rows"]["artifacts"] == b["rows"]["artifacts"]


class FakeHub:
    """Records the calls publish makes on huggingface_hub.HfApi (the Hub is unreachable here)."""

    def __init__(self):
        self.calls = []

    def create_repo(self, repo_id, **kw):
        self.calls.append(("create_repo", repo_id, kw))

    def upload_folder(self, **kw):
        self.calls.append(("upload_folder", kw))
        return type("CommitInfo", (), {"oid": "a" * 40, "pr_url": "https://hf.co/pr/1" if kw["create_pr"] else None})()

    def create_tag(self, repo_id, **kw):
        self.calls.append(("create_tag", repo_id, kw))


def test_publish_uploads_tags_and_returns_the_commit(built):
    out, _ = built
    hub = FakeHub()
    result = publish_dataset(out, "org/cultureboard", revision="v1.0", api=hub)
    assert result == {"commit": "a" * 40, "pr_url": None, "tag": "v1.0"}
    upload = hub.calls[1][1]
    assert upload["repo_id"] == "org/cultureboard" and upload["repo_type"] == "dataset" and upload["folder_path"] == str(out)
    assert ".cultureboard-output" in upload["ignore_patterns"]
    assert hub.calls[2] == ("create_tag", "org/cultureboard", {"repo_type": "dataset", "tag": "v1.0", "revision": "a" * 40})
    assert publish_dataset(out, "org/cultureboard", create_pr=True, api=FakeHub())["pr_url"] == "https://hf.co/pr/1"


def test_publish_offline_and_bad_input(built, tmp_path):
    out, _ = built
    with pytest.raises(CultureboardError, match="unreachable"):
        publish_dataset(out, "org/cultureboard")  # HF_HUB_OFFLINE=1: the real client refuses to connect
    with pytest.raises(CultureboardError, match="not a dataset folder"):
        publish_dataset(tmp_path, "org/cultureboard")
    with pytest.raises(CultureboardError, match="is not ORG/NAME"):
        publish_dataset(out, "cultureboard")


@pytest.mark.skipif(not REFERENCE.is_dir(), reason=f"the papers' reference data is not at {REFERENCE}")
def test_imported_datasets_load(tmp_path):
    cube = tmp_path / "cube"
    import_dataset("cube-1k", str(REFERENCE / "cube/dataset/cube_1k.json"), cube)
    ds = datasets.load_dataset(str(cube), "cube-awareness", split="test")
    assert ds.num_rows == 1002 and "CC BY-NC-SA 4.0" in (cube / "README.md").read_text()
    assert card_header(cube)["license"] == "cc-by-nc-sa-4.0"
    cure = tmp_path / "cure"
    import_dataset("cure", str(REFERENCE / "cure/prepare_data/cure_dataset_csv"), cure)
    assert datasets.load_dataset(str(cure), "cure-ladder", split="test").num_rows == 1231
    assert datasets.load_dataset(str(cure), "artifacts", split="test").num_rows == 300
