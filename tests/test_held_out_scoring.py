"""``cultureboard evaluate-held-out`` (evaluators/results/held_out.py): a stand-in pipeline generates the held-out
prompts with its declared settings, the same scorers score them, and only aggregates leave; the gap's CI and the
"tuned to public prompts" badge on hand-computed values; closed APIs and bad input."""

from __future__ import annotations

import json
import math
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from cultureboard.builder import build
from cultureboard.builder import held_out as ho
from cultureboard.cli import main
from cultureboard.evaluators.engine.evaluate import evaluate
from cultureboard.evaluators.results.held_out import NOT_TESTED, compare, evaluate_held_out, gap, tuned_threshold
from cultureboard.evaluators.submission.generate import generate
from cultureboard.standins import standin_pipeline

ROOT = Path(__file__).resolve().parents[1]
KEY = "custodians-secret-key-0123456789"
SID = "demo__tiny-a__cube-awareness"


def test_the_gap_ci_combines_both_intervals_by_mover():
    public = {"value": 0.6, "ci_low": 0.5, "ci_high": 0.65}
    held = {"value": 0.4, "ci_low": 0.3, "ci_high": 0.6}
    g = gap(public, held)
    assert g["value"] == pytest.approx(0.2)
    assert g["ci_low"] == pytest.approx(0.2 - math.hypot(0.1, 0.2))  # public's lower arm, held's upper arm
    assert g["ci_high"] == pytest.approx(0.2 + math.hypot(0.05, 0.1))


def _summary(metric, direction, pub, held=None, smallest=None):
    info = {"name": metric, "version": 3, "direction": direction, "primary": True,
            **({"smallest_difference": smallest} if smallest is not None else {})}
    entry = {"metric": metric, "slice_type": "overall", "slice": "all", "n_prompts": 10, "n_images": 10}
    return {"metrics_info": [info], "metrics": [entry | pub]}


def test_the_badge_needs_the_advantage_to_clear_the_threshold():
    pub, held = {"value": 0.8, "ci_low": 0.75, "ci_high": 0.85}, {"value": 0.5, "ci_low": 0.45, "ci_high": 0.55}
    [row] = compare(_summary("x.m", "higher", pub), _summary("x.m", "higher", held))
    assert row["advantage"]["ci_low"] == pytest.approx(0.3 - math.hypot(0.05, 0.05))  # 0.229 > 0.05: the fallback
    assert row["threshold"] == pytest.approx(0.05) and row["tuned_to_public"]
    [row] = compare(_summary("x.m", "higher", pub, smallest=0.25), _summary("x.m", "higher", held))
    assert row["threshold"] == 0.25 and not row["tuned_to_public"]  # the card's smallest meaningful difference
    [row] = compare(_summary("x.m", "lower", pub), _summary("x.m", "lower", held))
    assert row["advantage"]["value"] == pytest.approx(-0.3) and not row["tuned_to_public"]  # lower is better
    [row] = compare(_summary("x.m", "none", pub), _summary("x.m", "none", held))
    assert row["advantage"] is None and not row["tuned_to_public"]
    assert tuned_threshold({}, {"ci_low": 0.1, "ci_high": 0.5}) == pytest.approx(0.2)


@pytest.fixture(scope="module")
def scored(tmp_path_factory, tiny_scorers):
    """A cube-awareness dataset with a held-out split, a stand-in submission scored on its public prompts, and its
    held-out record."""
    root = tmp_path_factory.mktemp("held-out-scoring")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv(ho.KEY_ENV, KEY)
        build(root / "dataset", held_out=0.3, prompt_sets=["cube-awareness"], countries=["IT", "JP"], cube_images=[1, 2])
    pipe = standin_pipeline("tiny-a", 0)
    sub = root / "submissions" / SID
    generate(root / "dataset", "cube-awareness", str(pipe), sub, steps=2, batch_size=64, progress=False)
    evaluate(sub, root / "dataset", root / "results", scorers=tiny_scorers, options={"mapping": "retrieval"}, n_boot=100)
    (root / "work").mkdir()
    record = evaluate_held_out(sub, root / "dataset", root / "dataset-held-out", root / "results", root / "held-out",
                               pipeline=str(pipe), scorers=tiny_scorers, work=root / "work")
    return root, pipe, sub, record


def test_the_record_holds_public_and_held_out_values_and_nothing_of_the_prompts(scored):
    root, _, _, record = scored
    split = json.loads((root / "dataset-held-out" / ho.SPLIT_FILE).read_text())
    assert record["status"] == "tested" and record["split"] == {"release": 1, "fingerprint": split["fingerprint"]}
    public = json.loads((root / "results" / SID / "summary.json").read_text())
    faith = next(e for e in public["metrics"] if e["metric"] == "cube.quality" and e["slice_type"] == "overall")
    row = next(m for m in record["metrics"] if m["metric"] == "cube.quality")
    assert row["public"]["value"] == faith["value"] and row["held_out"]["n_prompts"] == split["prompts"]["cube-awareness"]
    assert row["gap"]["value"] == pytest.approx(row["public"]["value"] - row["held_out"]["value"])
    assert json.loads((root / "held-out" / f"{SID}.json").read_text()) == record
    assert ho.find_leaks([root / "held-out"], root / "dataset-held-out") == []  # aggregates only
    assert list((root / "work").iterdir()) == []  # the images and per-image scores are gone
    assert record["provenance"]["generation"]["steps"] == 2 and "local/" in record["provenance"]["generation"]["pipeline"]


def one_error(capsys, *args) -> str:
    code = main([str(a) for a in args])
    err = capsys.readouterr().err
    assert code != 0 and "Traceback" not in err, err
    [line] = err.strip().splitlines()
    return line


def test_closed_apis_are_not_held_out_tested(scored, tmp_path):
    root, _, sub, _ = scored
    closed = tmp_path / SID
    closed.mkdir()
    spec = yaml.safe_load((sub / "submission.yaml").read_text())
    spec["model"]["weights"], spec["generation"]["pipeline"] = "closed", "api"
    (closed / "submission.yaml").write_text(yaml.safe_dump(spec))
    record = evaluate_held_out(closed, root / "dataset", tmp_path / "missing", root / "results", tmp_path / "out")
    assert record["status"] == NOT_TESTED and "closed API" in record["reason"]


def test_bad_input_is_one_line(scored, tmp_path, capsys):
    root, pipe, sub, _ = scored
    args = ["evaluate-held-out", sub, "--dataset", root / "dataset", "--results", root / "results", "--out",
            tmp_path / "out", "--scorers", "tiny"]
    assert "not a private held-out dataset" in one_error(capsys, *args, "--private", tmp_path / "none")
    other = tmp_path / "other-held-out"
    shutil.copytree(root / "dataset-held-out", other)
    record = json.loads((other / ho.SPLIT_FILE).read_text())
    (other / ho.SPLIT_FILE).write_text(json.dumps(record | {"release": 2, "fingerprint": "0" * 64}))
    assert "not the dataset's release 1" in one_error(capsys, *args, "--private", other)
    line = one_error(capsys, *args, "--private", root / "dataset-held-out")
    assert "is a local pipeline, not a Hub id at a revision" in line
    changed = tmp_path / "pipe"
    shutil.copytree(pipe, changed)
    (changed / "extra.txt").write_text("x")
    line = one_error(capsys, *args, "--private", root / "dataset-held-out", "--pipeline", changed)
    assert "is not the pipeline folder" in line
    assert not (tmp_path / "out").exists()


def run_script(script: str, job: Path, env: dict) -> subprocess.CompletedProcess:
    """A step of evaluate.yml's held-out job, as the runner runs it: in the job's folder, with GitHub's files."""
    temp = job / "runner-temp"
    temp.mkdir(exist_ok=True)
    summary = job / "summary.md"
    return subprocess.run(["bash", str(ROOT / ".github" / "scripts" / script)], cwd=job, capture_output=True, text=True,
                          timeout=600, env={**os.environ, "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}",
                                            "RUNNER_TEMP": str(temp), "GITHUB_STEP_SUMMARY": str(summary), **env})


def test_the_workflow_job_downloads_the_private_dataset_and_lets_only_aggregates_out(scored, tmp_path, tiny_scorers):
    """fetch-held-out.sh (with the token, from a private repository of the loopback Hub), then held-out.sh on the
    job's folders: held-out/ holds the record alone, and neither it, the log nor the summary names a held-out
    prompt or artifact; private/ and the images are gone afterwards."""
    sys.path.insert(0, str(Path(__file__).parent))
    from hub_server import HubServer

    root, pipe, sub, record = scored
    job = tmp_path / "job"
    for name, source in (("work/submissions/" + SID, sub), ("dataset", root / "dataset"),
                         (f"results/{SID}", root / "results" / SID)):
        shutil.copytree(source, job / name)
    with HubServer() as hub:
        hub.seed("custodians/held-out", root / "dataset-held-out")
        done = run_script("fetch-held-out.sh", job, {**hub.env(), "HELD_OUT_REPO": "custodians/held-out"})
    assert done.returncode == 0, done.stderr
    assert (job / "private" / ho.SPLIT_FILE).read_bytes() == (root / "dataset-held-out" / ho.SPLIT_FILE).read_bytes()
    assert done.stdout == ""
    done = run_script("held-out.sh", job, {"ID": SID, "SCORERS": str(tiny_scorers), "PIPELINE": str(pipe),
                                           "HF_HUB_OFFLINE": "1"})
    assert done.returncode == 0, done.stderr
    assert sorted(p.name for p in (job / "held-out").iterdir()) == [f"{SID}.json"]
    assert json.loads((job / "held-out" / f"{SID}.json").read_text())["metrics"] == record["metrics"]
    assert "cube.quality" in done.stdout and not (job / "private").exists()
    assert not (job / "runner-temp" / "held-out-work").exists()
    (job / "log.txt").write_text(done.stdout + done.stderr)
    assert ho.find_leaks([job / "held-out", job / "log.txt", job / "summary.md"], root / "dataset-held-out") == []


def test_the_workflow_job_shows_no_message_of_a_failed_run(scored, tmp_path):
    root, _, sub, _ = scored
    job = tmp_path / "job"
    shutil.copytree(sub, job / "work" / "submissions" / SID)
    shutil.copytree(root / "dataset", job / "dataset")
    shutil.copytree(root / "dataset-held-out", job / "private")
    done = run_script("held-out.sh", job, {"ID": SID, "HF_HUB_OFFLINE": "1"})  # no public results: it fails
    assert done.returncode == 1 and not (job / "private").exists()
    assert "not shown" in done.stdout and "summary.json" not in done.stdout + done.stderr


def test_the_site_shows_the_column_the_gap_and_the_page_and_names_no_held_out_prompt(scored, tmp_path):
    from cultureboard.site.render import build_site

    root, _, _, record = scored
    records = tmp_path / "records"
    records.mkdir()
    shutil.copy(root / "held-out" / f"{SID}.json", records)
    tuned = json.loads((records / f"{SID}.json").read_text())
    headline = next(m for m in tuned["metrics"] if m["metric"] == "cube.cultural_relevance")
    headline["tuned_to_public"] = True  # as a tuned model's record would say
    (records / f"{SID}.json").write_text(json.dumps(tuned))
    site = tmp_path / "site"
    build_site(root / "results", root / "dataset", root / "submissions", site, held_out=records)
    board = (site / "leaderboard" / "cube-awareness.html").read_text()
    assert 'data-key="held_out"' in board and "tuned to public prompts" in board
    assert f'data-sort="{headline["held_out"]["value"]}"' in board
    model = (site / "model" / f"{SID}.html").read_text()
    assert "Held-out prompts" in model and f'data-sort="{headline["gap"]["value"]}"' in model
    page = (site / "held-out.html").read_text()
    split = json.loads((root / "dataset" / "build.json").read_text())["held_out"]
    assert split["fingerprint"] in page and "verify_retired" in page and "HELD_OUT_HF_TOKEN" in page
    assert "Held-out gap" in (site / "metric" / "cube.quality.html").read_text()  # the claim, on its card
    assert "Held-out gap" not in (site / "metric" / "cube.faithfulness.html").read_text()  # descriptive: no claim
    assert ho.find_leaks([site], root / "dataset-held-out") == []
    # a record of another split is named, never shown beside this one's values
    tuned["split"] = {"release": 7, "fingerprint": "0" * 64}
    (records / f"{SID}.json").write_text(json.dumps(tuned))
    build_site(root / "results", root / "dataset", root / "submissions", site, held_out=records)
    board = (site / "leaderboard" / "cube-awareness.html").read_text()
    assert 'data-key="held_out"' not in board
    assert "Held-out prompts" not in (site / "model" / f"{SID}.html").read_text()
