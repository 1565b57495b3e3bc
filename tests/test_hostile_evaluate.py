"""Hostile inputs against the scoring engine: ``merge-shards`` on damaged shards and unsafe ids (through the real
CLI), ``compare-results`` on runs that differ in settings and on pathological JSON, an ``--out`` or ``--cache``
that cannot be written and a seed or option out of range (refused before any scoring), Hub images whose bytes are
not the ones metadata.jsonl declares, and EXIF orientation in the images the scorers read.

Corpus count (for the README; ``test_hostile_counts.py`` keeps it true): 61 cases, 61 rejected cleanly, 0
accepted by design. Rejected: merge-shards 26 (MERGE_SHARDS; BAD_IDS: ids that are not one path component;
SHARD_ROWS: a shard holding another shard's rows or none, checked against its recorded part and digest),
compare-results 24 (COMPARE: other settings, options, metric versions, dtype, device, scorer fields, refusals,
fallback counts, reference revision, coverage, flags, CI ends, n_images, a card's version, the submission, and an
entry repeated 3,000 times, each named as drift with exit 1; pathological JSON one error line), evaluate 11
(OUT_OF_RANGE: a seed or an integer option below 0 or beyond 64 bits; UNWRITABLE: an --out or --cache inside a
file or on a read-only folder; Hub images that differ from their declared sha256, a Hub dripping its answer, and
a decoding worker whose write fails). The merge of sound shards, the code-only difference and the EXIF test are
not counted.
"""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest
import yaml
from cultureboard.progress import without_progress
from cultureboard.evaluators import evaluate
from cultureboard.evaluators.engine import evaluate as engine
from cultureboard.evaluators.engine.cache import Cache
from cultureboard.evaluators.engine.embedding import embed_images
from cultureboard.evaluators.engine.images import ImageSource
from cultureboard.evaluators.engine.scorers import identity_of, load_scorer
from PIL import Image
from results_factory import make_dataset, make_submission
from test_outputs import read_only  # noqa: F401 (a fixture: a read-only folder, or a skip where none can be made)

from cultureboard.cli import main
from cultureboard.errors import CultureboardError

SID = "lab__model"


@pytest.fixture(scope="module")
def world(tmp_path_factory, tiny_scorers) -> dict:
    """One country's cube-awareness dataset, a submission, and its two shards scored with the tiny scorers."""
    root = tmp_path_factory.mktemp("hostile-evaluate")
    dataset = make_dataset(root / "dataset", countries=("IT",))
    submission = make_submission(root / "submissions", dataset, "cube-awareness")
    for i in range(2):
        evaluate(submission, dataset, root / "sharded", scorers=tiny_scorers, device="cpu", cache=root / "cache",
                 n_boot=50, options={"repetitions": 5}, shard=(i, 2))
    return {"root": root, "dataset": dataset, "submission": submission, "scorers": tiny_scorers,
            "shards": root / "sharded" / f"{SID}.shards"}


def one_error(capsys, argv: list) -> str:
    """The one line ``cultureboard ARGV`` prints, after checking it fails with it and no traceback."""
    code = main([str(a) for a in argv])
    err = capsys.readouterr().err
    assert "Traceback" not in err
    lines = without_progress(err)
    assert code == 1 and len(lines) == 1 and lines[0].startswith("error: ") and "(fix: " in lines[0], err
    return lines[0]


# ------------------------------------------------------------------------------------ merge-shards


def shard_json(change):
    """Rewrite shard 0's shard.json: ``change`` takes the parsed record and returns the new one (any JSON)."""
    def mutate(shard: Path) -> None:
        path = shard / "shard.json"
        path.write_text(json.dumps(change(json.loads(path.read_text()))))
    return mutate


def provenance(**values):
    return shard_json(lambda info: {**info, "provenance": {**info["provenance"], **values}})


def without(key: str):
    return shard_json(lambda info: {k: v for k, v in info.items() if k != key})


def write(name: str, data: str):
    return lambda shard: (shard / name).write_text(data)


# (id, mutation of shard 0-of-2): merge-shards exits 1 with "0-of-2: is not a complete shard result", no result
MERGE_SHARDS = [
    ("shard-json-not-json", write("shard.json", "{")),
    ("shard-json-a-list", write("shard.json", "[]")),
    ("no-provenance", without("provenance")),
    ("provenance-empty", shard_json(lambda info: {**info, "provenance": {}})),
    ("provenance-a-list", shard_json(lambda info: {**info, "provenance": []})),
    ("another-shard-number", shard_json(lambda info: {**info, "shard": [1, 2]})),
    ("dataset-not-a-mapping", provenance(dataset="ds")),
    ("scorers-a-string", provenance(scorers="hpsv2.1")),
    ("refusal-not-a-triple", provenance(refused=[["IT-0001", 0]])),
    ("settings-missing", shard_json(lambda info: {**info, "provenance": {
        k: v for k, v in info["provenance"].items() if k != "settings"}})),
    ("counts-note-not-numbers", provenance(notes={"cube.quality": {"counts": {"judge_failed": "two"}}})),
    ("scores-not-parquet", write("scores.parquet", "PAR1 not really")),
]


@pytest.mark.parametrize("mutate", [pytest.param(c[1], id=c[0]) for c in MERGE_SHARDS])
def test_merge_shards_rejects(capsys, tmp_path, world, mutate):
    shards = shutil.copytree(world["shards"], tmp_path / f"{SID}.shards")
    mutate(shards / "0-of-2")
    line = one_error(capsys, ["merge-shards", tmp_path, SID, "--dataset", world["dataset"]])
    assert line.startswith(f"error: {shards / '0-of-2'}: is not a complete shard result"), line
    assert not (tmp_path / SID).exists() and sorted(p.name for p in shards.iterdir()) == ["0-of-2", "1-of-2"]


# (id, submission id given to merge-shards): refused by the path rule (cultureboard.naming.path_component) before
# anything is read or written, even where a shards folder sits at the place the id points to
BAD_IDS = [
    ("parent-folder", "../outside/" + SID),
    ("a-sub-folder", f"outside/{SID}"),
    ("backslash", f"outside\\{SID}"),
    ("dot-dot", ".."),
    ("hidden", f".{SID}"),
    ("nul", f"{SID}\x00x"),
    ("newline", f"{SID}\nx"),
    ("bidi-override", f"{SID}\u202ex"),
    ("empty", ""),
]


@pytest.mark.parametrize("sid", [pytest.param(c[1], id=c[0]) for c in BAD_IDS])
def test_merge_shards_refuses_an_id_that_is_not_one_path_component(capsys, tmp_path, world, sid):
    results, outside = tmp_path / "results", tmp_path / "outside"
    results.mkdir()
    shutil.copytree(world["shards"], outside / f"{SID}.shards")
    before = sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*"))
    line = one_error(capsys, ["merge-shards", results, sid, "--dataset", world["dataset"]])
    assert line.startswith(f"error: merge-shards {sid!r}: id "), line
    assert sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*")) == before


def rows_of(other: str | None, digest: bool = True):
    """Shard 0 with the rows of shard ``other`` (None: no rows), its shard.json's digest and row count updated to
    match when ``digest`` (a consistent forgery), left as they were otherwise (a swapped file)."""
    def mutate(shard: Path) -> None:
        scores = shard / "scores.parquet"
        table = pq.read_table(shard.parent / other / "scores.parquet") if other else pq.read_table(scores).slice(0, 0)
        pq.write_table(table, scores)
        if digest:
            shard_json(lambda info: {**info, "rows": table.num_rows,
                                     "rows_sha256": hashlib.sha256(scores.read_bytes()).hexdigest()})(shard)
    return mutate


def other_values(shard: Path) -> None:
    """Shard 0's own rows with other values: the row count holds, only the digest tells."""
    import pyarrow as pa
    import pyarrow.compute as pc

    table = pq.read_table(shard / "scores.parquet")
    column = table.schema.get_field_index("value")
    pq.write_table(table.set_column(column, "value", pc.add(table.column("value"), pa.scalar(1.0))),
                   shard / "scores.parquet")


# (id, mutation of shard 0-of-2, problem): merge-shards exits 1 naming shard 0 and the problem, no result
SHARD_ROWS = [
    ("other-values", other_values, "holds other rows than it recorded"),
    ("another-shards-rows", rows_of("1-of-2"), "holds rows of prompts that are not part 0 of 2"),
    ("another-shards-file", rows_of("1-of-2", digest=False), "holds other rows than it recorded"),
    ("no-rows", rows_of(None), "holds no rows"),
    ("no-digest", shard_json(lambda info: {k: v for k, v in info.items() if k != "rows_sha256"}),
     "is not a complete shard result"),
]


@pytest.mark.parametrize("mutate, problem", [pytest.param(*c[1:], id=c[0]) for c in SHARD_ROWS])
def test_merge_shards_checks_each_shards_rows(capsys, tmp_path, world, mutate, problem):
    shards = shutil.copytree(world["shards"], tmp_path / f"{SID}.shards")
    mutate(shards / "0-of-2")
    line = one_error(capsys, ["merge-shards", tmp_path, SID, "--dataset", world["dataset"]])
    assert line.startswith(f"error: {shards / '0-of-2'}: {problem}"), line
    assert not (tmp_path / SID).exists()


def test_the_undamaged_shards_merge(capsys, tmp_path, world):
    """The corpus's starting point is sound: the same copy, unchanged, merges."""
    shutil.copytree(world["shards"], tmp_path / f"{SID}.shards")
    assert main(["merge-shards", str(tmp_path), SID, "--dataset", str(world["dataset"])]) == 0, capsys.readouterr()
    assert (tmp_path / SID / "summary.json").is_file()


def test_counts_notes_add_up_and_other_notes_must_agree(capsys, tmp_path, world):
    """A family's ``counts`` note (images per fallback, over the shard's own images) is summed by the merge;
    any other note that differs between shards refuses the merge."""
    def with_notes(folder, notes, shard):
        def mutate(info):
            info["provenance"]["notes"] = {**info["provenance"]["notes"], **notes}
            return info
        shard_json(mutate)(folder / shard)

    shards = shutil.copytree(world["shards"], tmp_path / "counts" / f"{SID}.shards")
    with_notes(shards, {"cube.quality": {"chance": 0.5, "counts": {"judge_failed": 1}}}, "0-of-2")
    with_notes(shards, {"cube.quality": {"chance": 0.5, "counts": {"judge_failed": 2, "widened": 1}}}, "1-of-2")
    merged = engine.merge_shards(tmp_path / "counts", SID, world["dataset"])
    notes = json.loads((merged / "summary.json").read_text())["provenance"]["notes"]
    assert notes["cube.quality"] == {"chance": 0.5, "counts": {"judge_failed": 3, "widened": 1}}

    shards = shutil.copytree(world["shards"], tmp_path / "chance" / f"{SID}.shards")
    with_notes(shards, {"cube.quality": {"chance": 0.5, "counts": {"judge_failed": 1}}}, "0-of-2")
    with_notes(shards, {"cube.quality": {"chance": 0.25, "counts": {"judge_failed": 1}}}, "1-of-2")
    line = one_error(capsys, ["merge-shards", tmp_path / "chance", SID, "--dataset", world["dataset"]])
    assert line.startswith(f"error: {shards / '1-of-2'}: disagrees with an earlier shard about cube.quality"), line


# ------------------------------------------------------------------------------------ compare-results


ENTRY = {"metric": "cube.awareness", "slice_type": "overall", "slice": "all", "value": 0.5, "ci_low": 0.4,
         "ci_high": 0.6, "ci_note": None, "n_images": 20, "n_prompts": 10, "coverage": 1.0, "complete": True,
         "n_flagged": 0, "flags": {}, "n_refused": 0}
CARD = {"name": "cube.awareness", "title": "Awareness", "formula": "mean of p(yes)", "direction": "higher",
        "version": 1, "unit": "image", "chance": None, "target": None, "cluster": None, "scorers": ["clip"]}
SCORER = {"name": "clip", "model_id": "org/clip", "revision": "c" * 40, "dtype": "float32", "kind": "embedding"}


def summary(entries: list | None = None, cards: list | None = None, **provenance) -> dict:
    base = {"submission": {"sha256": "a" * 64, "id": SID}, "dataset": {"revision": "r1", "folder": "dataset"},
            "scorers": [SCORER], "settings": {"seed": 0, "n_boot": 1000, "ci_level": 0.95},
            "options": {"repetitions": 5}, "metrics": {"cube.awareness": 1}, "device": "cpu", "dtype": "float32",
            "refused": [], "notes": {}, "code": {"cultureboard": "0.1.0", "git": {"commit": "b" * 40}}}
    return {"provenance": {**base, **provenance}, "metrics": [dict(ENTRY)] if entries is None else entries,
            "metrics_info": [CARD] if cards is None else cards}


# (id, the new run's summary, or its raw text): compare-results exits 1 naming what differs (settings: never
# "the provenance matches"), or 2 with one error line for a file that is not a summary
COMPARE = [
    ("another-seed", summary(settings={"seed": 1, "n_boot": 1000, "ci_level": 0.95}),
     "settings: settings.seed: 0 -> 1"),
    ("fewer-resamples", summary(settings={"seed": 0, "n_boot": 10, "ci_level": 0.95}), "settings.n_boot: 1000 -> 10"),
    ("another-option", summary(options={"repetitions": 6}), "options.repetitions: 5 -> 6"),
    ("an-option-only-there", summary(options={"repetitions": 5, "judge": "x"}), "options.judge: 'not given' -> 'x'"),
    ("an-option-of-another-type", summary(options={"repetitions": 5.0}), "options.repetitions: 5 -> 5.0"),
    ("deep-nesting", '{"metrics": [], "x": ' + "[" * 100_000 + "]" * 100_000 + "}", "cannot be read as JSON"),
    ("an-integer-of-5000-digits", '{"metrics": [], "x": 1' + "0" * 5000 + "}", "cannot be read as JSON"),
    ("a-value-beyond-a-float", json.dumps(summary()).replace('"value": 0.5', '"value": 1' + "0" * 400),
     "value: cube.awareness [overall=all]: 0.5 -> None"),
    # every other field that can change a number a user sees
    ("another-metric-version", summary(metrics={"cube.awareness": 2}), "provenance: metrics.cube.awareness: 1 -> 2"),
    ("another-dtype", summary(dtype="float16"), "provenance: dtype: 'float32' -> 'float16'"),
    ("another-device", summary(device="cuda"), "provenance: device: 'cpu' -> 'cuda'"),
    ("a-scorer-in-another-dtype", summary(scorers=[{**SCORER, "dtype": "bfloat16"}]),
     "scorer_revision: scorer clip: dtype 'float32' -> 'bfloat16'"),
    ("other-declared-refusals", summary(refused=[["it/pizza", 0, "policy"]]),
     "provenance: refused: [] -> [['it/pizza', 0, 'policy']]"),
    ("other-fallback-counts", summary(notes={"cube.awareness": {"counts": {"widened": 2}}}),
     "provenance: notes.cube.awareness.counts.widened: 'not given' -> 2"),
    ("another-reference-revision", summary(dataset={"revision": "r1", "folder": "dataset", "references_revision": "x"}),
     "dataset_revision: dataset.references_revision: 'not given' -> 'x'"),
    ("another-coverage", summary(entries=[{**ENTRY, "coverage": 0.9, "complete": False}]),
     "entry: cube.awareness [overall=all]: coverage 1.0 -> 0.9"),
    ("other-refusals-in-a-slice", summary(entries=[{**ENTRY, "n_refused": 2}]),
     "entry: cube.awareness [overall=all]: n_refused 0 -> 2"),
    ("other-flags", summary(entries=[{**ENTRY, "n_flagged": 3, "flags": {"judge_failed": 3}}]),
     "entry: cube.awareness [overall=all]: flags {} -> {'judge_failed': 3}"),
    ("a-wider-ci", summary(entries=[{**ENTRY, "ci_low": 0.1}]), "ci: cube.awareness [overall=all]: ci_low 0.4 -> 0.1"),
    ("a-ci-gone", summary(entries=[{**ENTRY, "ci_low": None, "ci_high": None, "ci_note": "no CI: 1 prompt"}]),
     "ci: cube.awareness [overall=all]: ci_high 0.6 -> None"),
    ("other-n-images", summary(entries=[{**ENTRY, "n_images": 40}]), "entry: cube.awareness [overall=all]: n_images 20 -> 40"),
    ("an-entry-repeated-3000-times", summary(entries=[dict(ENTRY)] * 3000),
     "repeated: cube.awareness [overall=all]: given 3,000 times in the new results"),
    ("a-card-of-another-version", summary(cards=[{**CARD, "version": 2}]), "card: card cube.awareness: version 1 -> 2"),
    ("another-submission-id", summary(submission={"sha256": "a" * 64, "id": "lab__other"}),
     "submission: submission.id: 'lab__model' -> 'lab__other'"),
]


@pytest.mark.parametrize("new, words", [pytest.param(*c[1:], id=c[0]) for c in COMPARE])
def test_compare_results_names_every_difference(capsys, tmp_path, new, words):
    (tmp_path / "old").mkdir()
    (tmp_path / "new").mkdir()
    (tmp_path / "old" / "summary.json").write_text(json.dumps(summary()))
    (tmp_path / "new" / "summary.json").write_text(new if isinstance(new, str) else json.dumps(new))
    code = main(["compare-results", str(tmp_path / "old"), str(tmp_path / "new")])
    out, err = capsys.readouterr()
    assert "Traceback" not in err and "provenance matches" not in out
    if "cannot be read" in words:
        assert code == 2 and len(err.strip().splitlines()) == 1 and words in err, err
    else:
        assert code == 1 and words in out, out
        assert len(out.splitlines()) <= 4, out  # each difference once (a repeated entry is one line, not 3,000)


def test_compare_results_does_not_count_the_code_as_drift(capsys, tmp_path):
    """The code is what the health check tests: its version alone moves nothing (not a hostile case)."""
    for name, code in (("old", "0.1.0"), ("new", "0.2.0")):
        (tmp_path / name).mkdir()
        (tmp_path / name / "summary.json").write_text(json.dumps(summary(code={"cultureboard": code})))
    assert main(["compare-results", str(tmp_path / "old"), str(tmp_path / "new")]) == 0
    assert capsys.readouterr().out.startswith("no drift: ")


# ------------------------------------------------------------------------------------ evaluate


def no_scoring(*_, **__):
    raise AssertionError("scoring started before --out and --cache were checked")


# (id, option, where): evaluate exits 1 with one line naming that option's folder, before any scoring
UNWRITABLE = [
    ("out-inside-a-file", "out", "inside a file"),
    ("cache-inside-a-file", "cache", "inside a file"),
    ("out-on-a-read-only-folder", "out", "read-only"),
    ("cache-on-a-read-only-folder", "cache", "read-only"),
]


@pytest.mark.parametrize("option, where", [pytest.param(*c[1:], id=c[0]) for c in UNWRITABLE])
def test_unwritable_out_or_cache_is_refused_before_any_scoring(capsys, request, tmp_path, world, monkeypatch, option,
                                                               where):
    monkeypatch.setattr(engine, "_score", no_scoring)
    if where == "inside a file":
        blocker = tmp_path / "a-file"
        blocker.write_text("x")
        bad, problem = blocker / option, f"cannot be created: {blocker} is not a folder"
    else:
        blocker = request.getfixturevalue("read_only")
        bad, problem = blocker / option, f"cannot be written: {blocker}: "
    paths = {"out": tmp_path / "results", "cache": tmp_path / "cache", option: bad}
    line = one_error(capsys, ["evaluate", world["submission"], "--dataset", world["dataset"], "--scorers",
                              world["scorers"], "--device", "cpu", "--out", paths["out"], "--cache", paths["cache"]])
    named = f"--cache {bad}" if option == "cache" else bad / SID
    assert line.startswith(f"error: {named}: {problem}"), line
    assert not (tmp_path / "results").exists() and not (tmp_path / "cache").exists() and not bad.exists()


# (id, extra evaluate arguments, the option named): exit 2 with one line, before any scoring, nothing written
OUT_OF_RANGE = [
    ("negative-seed", ["--seed", "-1"], "--seed -1"),
    ("seed-beyond-64-bits", ["--seed", str(2**64)], f"--seed {2**64}"),
    ("negative-integer-option", ["--option", "repetitions=-1"], "option repetitions=-1"),
    ("integer-option-beyond-64-bits", ["--option", f"repetitions={2**70}"], f"option repetitions={2**70}"),
]


@pytest.mark.parametrize("extra, named", [pytest.param(*c[1:], id=c[0]) for c in OUT_OF_RANGE])
def test_evaluate_range_checks_the_seed_and_integer_options(capsys, tmp_path, world, monkeypatch, extra, named):
    monkeypatch.setattr(engine, "_score", no_scoring)
    code = main([str(a) for a in ["evaluate", world["submission"], "--dataset", world["dataset"], "--scorers",
                                  world["scorers"], "--device", "cpu", "--out", tmp_path / "results", *extra]])
    err = capsys.readouterr().err
    lines = without_progress(err)
    assert code == 2 and len(lines) == 1 and lines[0].startswith(f"error: {named}: ") and "Traceback" not in err, err
    assert "validating" not in err  # options are checked before any work
    assert not (tmp_path / "results").exists()


def test_hub_images_that_differ_from_their_sha256_are_refused(tmp_path, world, monkeypatch):
    """images.location hf://...: a downloaded image whose bytes are not the declared ones (here re-saved with
    other pixels, at the right size) is refused before scoring: no results folder, nothing cached."""
    import huggingface_hub

    local = world["submission"]
    hub = shutil.copytree(local, tmp_path / "submissions" / SID, ignore=shutil.ignore_patterns("images"))
    spec = yaml.safe_load((hub / "submission.yaml").read_text())
    spec["images"]["location"] = "hf://datasets/lab/model-images@" + "a" * 40
    (hub / "submission.yaml").write_text(yaml.safe_dump(spec, sort_keys=False))
    snapshot = shutil.copytree(local, tmp_path / "snapshot")
    first = json.loads((local / "metadata.jsonl").read_text().splitlines()[0])["file_name"]
    with Image.open(snapshot / first) as img:
        Image.fromarray(255 - np.asarray(img.convert("RGB"))).save(snapshot / first)
    assert (snapshot / first).read_bytes() != (local / first).read_bytes()
    monkeypatch.setattr(huggingface_hub, "snapshot_download", lambda *a, **k: str(snapshot))
    with pytest.raises(CultureboardError) as caught:
        evaluate(hub, world["dataset"], tmp_path / "results", scorers=world["scorers"], device="cpu",
                 cache=tmp_path / "cache", n_boot=50, options={"repetitions": 5})
    assert caught.value.message.startswith(f"hf://datasets/lab/model-images@{'a' * 40}/{first}: differs from the "
                                           "sha256 metadata.jsonl declares"), caught.value.message
    assert not (tmp_path / "results" / SID).exists() and not list((tmp_path / "results").glob(f".{SID}*"))
    assert not list(tmp_path.glob("cache/**/shard-*.npz"))


def test_a_dripping_hub_ends_evaluate_at_its_deadline(capsys, tmp_path, world, monkeypatch):
    """images.location hf://...: a Hub that answers a byte at a time (its client has per-read timeouts only)
    ends the run in one line at format.HUB_SECONDS; no results folder."""
    from huggingface_hub import constants
    from test_hostile_faults import DripServer, finishes

    from cultureboard.evaluators.submission import format as submission_format

    hub = shutil.copytree(world["submission"], tmp_path / "submissions" / SID, ignore=shutil.ignore_patterns("images"))
    spec = yaml.safe_load((hub / "submission.yaml").read_text())
    spec["images"]["location"] = "hf://datasets/lab/model-images@" + "a" * 40
    (hub / "submission.yaml").write_text(yaml.safe_dump(spec, sort_keys=False))
    monkeypatch.setattr(submission_format, "HUB_SECONDS", 1.0)
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", False)
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))
    with DripServer() as server:
        monkeypatch.setattr(constants, "ENDPOINT", server.url)
        code = finishes(lambda: main([str(a) for a in ["evaluate", hub, "--dataset", world["dataset"], "--scorers",
                                                       world["scorers"], "--device", "cpu",
                                                       "--out", tmp_path / "results"]]))
    lines = without_progress(capsys.readouterr().err)
    assert code == 1 and len(lines) == 1 and "time limit" in lines[0], lines
    assert lines[0].startswith(f"error: hf://datasets/lab/model-images@{'a' * 40}: "), lines
    assert not (tmp_path / "results" / SID).exists()


# ------------------------------------------------------------------------------------ EXIF in scoring


def test_a_decoding_worker_whose_write_fails_ends_evaluate_at_once(capsys, tmp_path, world, monkeypatch):
    """The image decoding workers may not write a file of more than 1 KiB (``ulimit -f`` in the worker: its batch
    of tensors in shared memory is refused, "File too large"): evaluate ends at once with one line saying so, not
    after the stall limit (the loader's timeout, here 120 s) that a batch never sent would wait for."""
    import functools
    import os
    import resource

    import torch.utils.data

    from cultureboard import workers
    from cultureboard.evaluators.engine import embedding

    def limited(_worker: int) -> None:
        resource.setrlimit(resource.RLIMIT_FSIZE, (1024, 1024))

    monkeypatch.setattr(torch.utils.data, "DataLoader", functools.partial(torch.utils.data.DataLoader,
                                                                         worker_init_fn=limited))
    monkeypatch.setattr(workers, "STALL_SECONDS", 120.0)
    monkeypatch.setattr(os, "cpu_count", lambda: 2)  # one worker
    monkeypatch.setattr(embedding.embed_images, "__defaults__", (1, None))  # batches of one: workers from image 6
    line = one_error(capsys, ["evaluate", world["submission"], "--dataset", world["dataset"], "--scorers",
                              world["scorers"], "--device", "cpu", "--out", tmp_path / "results", "--cache",
                              tmp_path / "cache"])
    assert line.startswith("error: an image decoding worker process: failed (") and "File too large" in line, line
    assert "timed out" not in line and not (tmp_path / "results" / SID).exists()


def test_scoring_applies_the_exif_orientation(tmp_path, tiny_scorers):
    """A JPEG stored portrait with "rotate 90 clockwise" in its EXIF and its pre-rotated twin (the displayed
    pixels, saved losslessly) give equal embeddings through the engine's image loading (ImageSource ->
    decode_batches -> the scorer's transform); the stored, unrotated pixels give another."""
    rows, cols = np.mgrid[0:48, 0:32]
    stored = Image.fromarray(np.stack([rows * 5, cols * 8, (rows * cols) % 256], axis=-1).astype(np.uint8))
    exif = Image.Exif()
    exif[0x0112] = 6  # orientation: rotate 90 clockwise to display
    rotated = tmp_path / "rotated.jpg"
    stored.save(rotated, "JPEG", exif=exif, quality=95)
    with Image.open(rotated) as img:
        decoded = img.convert("RGB")  # the stored pixels as decoded, orientation not applied
    decoded.transpose(Image.Transpose.ROTATE_270).save(tmp_path / "twin.png")  # ROTATE_270: 90 clockwise
    decoded.save(tmp_path / "unrotated.png")
    items = [ImageSource(hashlib.sha256(p.read_bytes()).hexdigest(), p)
             for p in (rotated, tmp_path / "twin.png", tmp_path / "unrotated.png")]
    scorer = load_scorer("siglip2-so400m", config=tiny_scorers)
    vectors = embed_images(Cache(tmp_path / "cache"), identity_of(scorer), lambda: scorer, items, num_workers=0)
    exif_rotated, twin, unrotated = (vectors[item.sha256] for item in items)
    assert np.abs(exif_rotated - twin).max() < 1e-5
    assert np.abs(exif_rotated - unrotated).max() > 1e-3
