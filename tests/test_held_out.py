"""The held-out prompt split (builder/held_out.py): a keyed draw before the public sample, a private dataset that
no public file names, a fingerprint anyone can check after rotation, and one clear line for bad input."""

from __future__ import annotations

import hashlib
import hmac
import json
import shutil
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from cultureboard.builder import build
from cultureboard.builder import held_out as ho
from cultureboard.builder.curation import stratified_sample
from cultureboard.cli import main

KEY = "custodians-secret-key-0123456789"
SMALL = {"prompt_sets": ["cube-awareness", "cure-ladder", "cultdiff", "cube-diversity"],
         "countries": ["BR", "FR", "IT", "JP", "NG"]}


def rows(folder: Path, config: str) -> list[dict]:
    return [r for shard in sorted((folder / "data" / config).glob("*.parquet")) for r in pq.read_table(shard).to_pylist()]


@pytest.fixture(scope="module")
def split(tmp_path_factory, monkeypatch_module):
    """One build with a held-out split of 0.3, and its rotation to release 2 (into another pair of folders)."""
    root = tmp_path_factory.mktemp("held-out")
    monkeypatch_module.setenv(ho.KEY_ENV, KEY)
    first = build(root / "one" / "dataset", held_out=0.3, **SMALL)
    shutil.copytree(root / "one", root / "two")
    second = build(root / "two" / "dataset", held_out=0.3, rotate=True, **SMALL)
    return root, first, second


@pytest.fixture(scope="module")
def monkeypatch_module():
    with pytest.MonkeyPatch.context() as mp:
        yield mp


def test_the_draw_needs_the_key_and_comes_before_the_public_sample():
    """A stratum of 40 candidates, target 10 (sizes), fraction 0.2: 2 held out, 8 sampled from the other 38."""
    space = [{"qid": f"Q{i}", "name": f"thing {i}", "country": "IT", "concept": "cuisine", "popularity": i % 7}
             for i in range(1, 41)]
    sizes = {"IT": {"cuisine": 10}}
    pool, held, public_sizes = ho.split_pool(space, 0.2, KEY.encode(), 1, sizes)
    assert len(held) == 2 and len(pool) == 38 and public_sizes == {"IT": {"cuisine": 8}}
    ranks = sorted(space, key=lambda r: hmac.new(KEY.encode(), f"release/1/{r['qid']}/IT".encode(),
                                                  hashlib.sha256).hexdigest())
    assert {r["qid"] for r in held} == {r["qid"] for r in ranks[:2]}
    public = stratified_sample(pool, sizes=public_sizes)
    keyless = stratified_sample(space, sizes=sizes)
    assert len(public) == 8 and len(keyless) == 10
    assert {r["qid"] for r in keyless} != {r["qid"] for r in public + held}  # a rebuild without the key is not it
    other, _, _ = ho.split_pool(space, 0.2, b"another-key-0123456789", 1, sizes)
    next_release, _, _ = ho.split_pool(space, 0.2, KEY.encode(), 2, sizes)
    assert {r["qid"] for r in other} != {r["qid"] for r in held} != {r["qid"] for r in next_release}


def test_artifacts_a_public_row_could_name_are_never_held_out():
    """One qid in two strata, two artifacts of one name, and a parent class named by a child stay public."""
    space = [{"qid": "Q1", "name": "a", "country": "IT", "concept": "cuisine", "P279": []},
             {"qid": "Q1", "name": "a", "country": "FR", "concept": "cuisine", "P279": []},
             {"qid": "Q2", "name": "Same", "country": "IT", "concept": "art", "P279": []},
             {"qid": "Q3", "name": "same", "country": "IT", "concept": "art", "P279": []},
             {"qid": "Q4", "name": "parent", "country": "JP", "concept": "art", "P279": []},
             {"qid": "Q5", "name": "child", "country": "JP", "concept": "art", "P279": ["Q4"]}]
    _, held, _ = ho.split_pool(space, 0.5, KEY.encode(), 1)
    assert [r["qid"] for r in held] == ["Q5"]


def test_the_fingerprint_is_over_the_salt_and_the_sorted_prompts():
    prompts = [("b/2", "two"), ("a/1", "one")]
    assert ho.fingerprint("salt", prompts) == hashlib.sha256(b"salt\na/1\tone\nb/2\ttwo").hexdigest()
    assert ho.fingerprint("other", prompts) != ho.fingerprint("salt", prompts)


def test_the_private_dataset_holds_the_held_out_prompts_and_no_public_file_names_them(split):
    root, first, _ = split
    public, private = root / "one" / "dataset", root / "one" / "dataset-held-out"
    for name, n in first["held_out"]["prompts"].items():
        held, shown = rows(private, name), rows(public, name)
        assert len(held) == n > 0
        assert not {r["prompt_id"] for r in held} & {r["prompt_id"] for r in shown}
    assert "cube-diversity" not in first["held_out"]["prompts"]  # its prompts name no artifact: all public
    assert not {r["qid"] for r in rows(private, "artifacts")} & {r["qid"] for r in rows(public, "artifacts")}
    assert ho.find_leaks([public], private) == []


@pytest.mark.parametrize("plant", ["prompt id", "prompt text", "artifact id"])
def test_the_leak_scan_finds_a_planted_held_out_id_or_text(split, tmp_path, plant):
    root, _, _ = split
    public, private = tmp_path / "dataset", root / "one" / "dataset-held-out"
    shutil.copytree(root / "one" / "dataset", public)
    held = rows(private, "cube-awareness")[0]
    value = {"prompt id": held["prompt_id"], "prompt text": held["text"], "artifact id": held["artifact_id"]}[plant]
    shard = next((public / "data" / "cube-awareness").glob("*.parquet"))
    table = pq.read_table(shard).to_pylist()
    table[0]["negative_prompt"] = value  # inside a compressed parquet shard
    pq.write_table(pa.Table.from_pylist(table, schema=pq.read_schema(shard)), shard)
    [line] = ho.find_leaks([public], private)
    assert str(shard) in line and plant in line
    (public / "notes.html").write_text(f"<p>{value.replace('&', '&amp;')}.</p>")
    assert len(ho.find_leaks([public], private)) == 2


def test_the_public_card_states_the_sizes_and_a_fingerprint_the_custodians_can_recompute(split):
    root, first, _ = split
    public, private = root / "one" / "dataset", root / "one" / "dataset-held-out"
    record = json.loads((private / ho.SPLIT_FILE).read_text())
    prompts = [(r["prompt_id"], r["text"]) for name in record["prompts"] for r in rows(private, name)]
    assert record["fingerprint"] == ho.fingerprint(record["salt"], prompts) == first["held_out"]["fingerprint"]
    card = (public / "README.md").read_text()
    assert "## Held-out split" in card and first["held_out"]["fingerprint"] in card
    for name, n in first["held_out"]["prompts"].items():
        assert f"| `{name}` | {n} |" in card
    assert record["salt"] not in card and record["salt"] not in (public / "build.json").read_text()


def test_a_rotation_publishes_the_retired_split_and_draws_a_new_one(split):
    root, first, second = split
    public, private = root / "two" / "dataset", root / "two" / "dataset-held-out"
    assert second["held_out"]["release"] == 2 and second["held_out"]["retired"] == [1]
    retired = json.loads((public / ho.RETIRED_DIR / "release-1.json").read_text())
    assert retired["fingerprint"] == first["held_out"]["fingerprint"] and ho.verify_retired(retired)
    retired["prompts"][0][1] += " (changed)"
    assert not ho.verify_retired(retired)
    assert second["held_out"]["fingerprint"] != first["held_out"]["fingerprint"]
    once = {tuple(p) for p in retired["artifacts"]}
    assert not once & {(r["qid"], r["country"]) for r in rows(private, "artifacts")}  # published: never again
    assert ho.find_leaks([public], private) == []


def one_error(capsys, *args) -> str:
    code = main([str(a) for a in args])
    err = capsys.readouterr().err
    assert code != 0 and "Traceback" not in err, err
    [line] = err.strip().splitlines()
    assert line.startswith("error: ")
    return line


@pytest.mark.parametrize("fraction", ["0", "0.6", "-0.1", "half"])
def test_a_fraction_outside_the_range_is_one_line(capsys, tmp_path, monkeypatch, fraction):
    monkeypatch.setenv(ho.KEY_ENV, KEY)
    line = one_error(capsys, "build", "dataset", "--out", tmp_path / "d", "--held-out", fraction)
    assert f"--held-out {fraction}" in line and "(0, 0.5]" in line and not (tmp_path / "d").exists()


def test_a_missing_key_a_wrong_key_and_a_rotation_without_a_split_are_one_line(capsys, split, tmp_path, monkeypatch):
    monkeypatch.delenv(ho.KEY_ENV, raising=False)
    assert ho.KEY_ENV in one_error(capsys, "build", "--out", tmp_path / "d", "--held-out", "0.2")
    assert "--held-out FRACTION" in one_error(capsys, "build", "--out", tmp_path / "d", "--rotate")
    key_file = tmp_path / "key"
    key_file.write_text("a-different-key-0123456789\n")
    root, _, _ = split
    line = one_error(capsys, "build", "--out", root / "one" / "dataset", "--held-out", "0.3", "--held-out-key", key_file)
    assert "drawn with another key" in line and "--rotate" in line
    line = one_error(capsys, "build", "--out", tmp_path / "d", "--held-out", "0.3", "--held-out-key", key_file,
                     "--rotate")
    assert "no held-out split to rotate" in line


@pytest.fixture(scope="module")
def hub():
    import sys
    sys.path.insert(0, str(Path(__file__).parent))
    from hub_server import HubServer

    with HubServer() as server:
        yield server


def test_publish_sends_the_private_dataset_to_a_private_repository_only(split, hub, monkeypatch, capsys):
    from cultureboard.builder import publish_dataset

    for name, value in hub.env().items():
        monkeypatch.setenv(name, value)
    root, _, _ = split
    private = root / "one" / "dataset-held-out"
    result = publish_dataset(private, "custodians/held-out")
    assert hub.repos["datasets/custodians/held-out"]["private"] is True
    assert hub.files("custodians/held-out", result["commit"])[ho.SPLIT_FILE] == (private / ho.SPLIT_FILE).read_bytes()
    hub.commit("org/public", {"README.md": b"x"})  # a public repository that exists
    line = one_error(capsys, "publish", "dataset", private, "--repo", "org/public")
    assert "is a public repository" in line and "nothing was uploaded" in line
    assert set(hub.files("org/public")) == {"README.md"}


def test_publish_refuses_a_public_dataset_that_names_a_held_out_prompt(split, tmp_path, capsys):
    root, _, _ = split
    shutil.copytree(root / "one", tmp_path / "one")
    public = tmp_path / "one" / "dataset"
    held = rows(tmp_path / "one" / "dataset-held-out", "cure-ladder")[0]
    (public / "notes.md").write_text(f"see {held['prompt_id']}\n")
    line = one_error(capsys, "publish", "dataset", public, "--repo", "org/public")  # before any Hub call (offline)
    assert "notes.md" in line and "held-out prompt id" in line and "nothing was uploaded" in line
