"""The executors (evaluators/engine/executor.py): units of (submission, shard i/n) on a local Ray instance give the
bytes of plain local runs; a unit killed mid-run is retried to the same result; finished units are skipped; an
unreachable cluster or a unit that keeps failing ends in one line with nothing half-written."""

from __future__ import annotations

import os
import shutil
import signal
from pathlib import Path

import pytest
import yaml

from cultureboard.builder import build
from cultureboard.cli import main
from cultureboard.errors import CultureboardError
from cultureboard.evaluators import evaluate
from cultureboard.evaluators.engine.executor import ATTEMPTS, Unit, evaluate_all, run_unit

ray = pytest.importorskip("ray")

OPTIONS = {"repetitions": 5}


@pytest.fixture(scope="session")
def ray_cluster():
    """One local Ray instance for the session: 2 CPUs, no dashboard; its workers can import this module's runners."""
    here = str(Path(__file__).parent)
    os.environ["PYTHONPATH"] = os.pathsep.join(p for p in (here, os.environ.get("PYTHONPATH")) if p)
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, configure_logging=False)
    yield
    ray.shutdown()


@pytest.fixture(scope="module")
def two(tmp_path_factory, tiny_scorers):
    """A cube-awareness dataset, two submissions of it (two ids) and their plain local results."""
    from test_evaluate import make_submission

    root = tmp_path_factory.mktemp("executor")
    dataset = root / "dataset"
    build(dataset, countries=["IT", "JP"], prompt_sets=["cube-awareness"])
    first = make_submission(root / "subs", dataset, "cube-awareness")
    # another folder: beside the first, one model version's two rows of one prompt set would be refused
    second = shutil.copytree(first, root / "subs-b" / "lab__model__b")
    spec = yaml.safe_load((first / "submission.yaml").read_text())
    (second / "submission.yaml").write_text(yaml.safe_dump({**spec, "tag": "b"}, sort_keys=False))
    settings = {"scorers": tiny_scorers, "device": "cpu", "n_boot": 50, "options": OPTIONS}
    local = {s.name: evaluate(s, dataset, root / "local", cache=root / "local-cache", **settings)
             for s in (first, second)}
    return {"dataset": dataset, "submissions": [first, second], "local": local, "settings": settings}


def same_bytes(folder: Path, reference: Path) -> bool:
    return all((folder / n).read_bytes() == (reference / n).read_bytes() for n in ("scores.parquet", "summary.json"))


def test_ray_units_merge_to_the_bytes_of_local_runs(ray_cluster, two, tmp_path):
    out = evaluate_all(two["submissions"], two["dataset"], tmp_path / "ray", executor="ray", shards=2,
                       cache=tmp_path / "cache", **two["settings"])
    assert [p.name for p in out] == ["lab__model", "lab__model__b"]
    assert all(same_bytes(p, two["local"][p.name]) for p in out)
    assert not any((tmp_path / "ray").glob("*.shards"))  # merged, the units' folders are gone


def killed_once(unit: Unit, settings: dict, models: dict) -> str:
    """Unit 0's first try is SIGKILLed right after its first cache batch is stored, mid-run."""
    marker = Path(settings["cache"]) / f"killed-{unit.shard[0]}"
    if unit.shard[0] == 0 and not marker.exists():
        marker.parent.mkdir(parents=True, exist_ok=True)
        marker.touch()
        from cultureboard.evaluators.engine.cache import Store

        put = Store.put

        def put_then_die(self, keys, values):
            put(self, keys, values)
            os.kill(os.getpid(), signal.SIGKILL)

        Store.put = put_then_die
    return run_unit(unit, settings, models)


def test_a_unit_killed_mid_run_is_retried_and_the_result_is_unchanged(ray_cluster, two, tmp_path):
    (out,) = evaluate_all(two["submissions"][:1], two["dataset"], tmp_path / "ray", executor="ray", shards=2,
                          cache=tmp_path / "cache", runner=killed_once, **two["settings"])
    assert (tmp_path / "cache" / "killed-0").exists()  # it was killed once
    assert same_bytes(out, two["local"]["lab__model"])


def always_fails(unit: Unit, settings: dict, models: dict) -> str:
    tries = Path(settings["cache"]) / f"tries-{unit.shard[0]}"
    tries.parent.mkdir(parents=True, exist_ok=True)
    with tries.open("a") as fh:
        fh.write("x")
    raise RuntimeError("the GPU fell off the bus")


def test_a_unit_failing_three_times_ends_the_command_with_nothing_written(ray_cluster, two, tmp_path):
    with pytest.raises(CultureboardError, match=rf"unit .*lab__model shard 0/1: failed {ATTEMPTS} times \(last: "
                                                r"RuntimeError: the GPU fell off the bus\)"):
        evaluate_all(two["submissions"][:1], two["dataset"], tmp_path / "ray", executor="ray",
                     cache=tmp_path / "cache", runner=always_fails, **two["settings"])
    assert (tmp_path / "cache" / "tries-0").read_text() == "x" * ATTEMPTS
    assert not (tmp_path / "ray").exists() or not any((tmp_path / "ray").iterdir())


def test_a_finished_unit_is_skipped_unless_its_inputs_changed(two, tmp_path):
    settings = {**two["settings"], "dataset": str(two["dataset"]), "out": str(tmp_path), "cache": tmp_path / "c"}
    unit = Unit(str(two["submissions"][0]), (1, 2))
    assert run_unit(unit, settings) == "scored"
    assert run_unit(unit, settings) == "skipped"
    assert run_unit(unit, {**settings, "seed": 1}) == "scored"  # another seed: other inputs, scored again
    (tmp_path / "lab__model.shards" / "1-of-2" / "scores.parquet").write_bytes(b"half")
    assert run_unit(unit, {**settings, "seed": 1}) == "scored"  # rows that do not match their digest: redone


def test_local_units_merge_to_the_same_bytes(two, tmp_path):
    (out,) = evaluate_all(two["submissions"][1:], two["dataset"], tmp_path / "units", shards=3,
                          cache=tmp_path / "cache", **two["settings"])
    assert same_bytes(out, two["local"]["lab__model__b"])


def test_an_unreachable_ray_address_is_one_line(two, tmp_path, capsys):
    code = main(["evaluate", str(two["submissions"][0]), "--dataset", str(two["dataset"]), "--out",
                 str(tmp_path / "out"), "--executor", "ray", "--address", "127.0.0.1:9"])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and err[-1].startswith("error: --address 127.0.0.1:9: no Ray head answers there"), err
    assert "Traceback" not in "\n".join(err) and not (tmp_path / "out").exists()
