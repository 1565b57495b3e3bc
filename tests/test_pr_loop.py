"""A model team's whole path, offline, through the workflows' own scripts run in the order the workflows run them.

A closed-model team exports the prompts from the official dataset on a loopback Hub (tests/hub_server.py), makes
its images, packages them, and opens a pull request adding its folder. Then, each step as its workflow runs it
(the step's script of .github/scripts/, in a checkout of its own, fed the artifacts of the steps before it):
validate.yml (validate-pr.sh) -> comment.yml (comment_body.py) -> the `evaluate` label -> evaluate.yml's prepare
(find-target.sh, take-submission.sh), two score shards (cache-folders.sh, score-shard.sh with the tiny stand-in
scorers), merge (merge-shards.sh, scores-comment.sh), commit (commit-results.sh, into a local "origin") and hub
(publish-results.sh, to the loopback Hub) -> comment.yml on the scores -> the maintainer merges -> site.yml
(get-dataset.sh, build-site.sh) -> the folder upload-pages-artifact deploys. And the refusals: a pull request that
changes something outside its folder, one that adds two submission folders, and a fork's attempt to inject
commands through a file name or a field.

Every script is the repository's own, copied into the fake repository's main branch, so a broken script fails
here. ``gh`` is a stub on PATH that records its arguments.
"""

from __future__ import annotations

import csv
import json
import os
import shutil
import subprocess
import sys
import zlib
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest
import yaml
from PIL import Image

from cultureboard.evaluators.engine.evaluate import evaluate
from cultureboard.evaluators.submission.format import write_submission
from cultureboard.hub import OFFICIAL_DATASET
from cultureboard.provenance import file_sha256
from hub_server import HubServer

ROOT = Path(__file__).resolve().parents[1]
PROMPT_SET = "cube-awareness"
SID = "acme__imagen-x"
PR = "7"
REPO = "org/board"
RESULTS_REPO = "org/board-results"
OTHERS = ("lab-a__model-a", "lab-b__model-b")
CLOSED_SPEC = {"organization": "Acme", "contact": "jo@acme.example",
               "model": {"name": "Imagen X", "id": "imagen-x", "revision": "2025-01-15", "license": "proprietary",
                         "weights": "closed"},
               "generation": {"negative_prompt": False}}


def git(cwd: Path, *args: str) -> str:
    done = subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@example.org", *args], cwd=cwd,
                          capture_output=True, text=True, check=True)
    return done.stdout.strip()


def noise(path: Path, seed: int) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    Image.fromarray(np.random.default_rng(seed).integers(0, 256, (64, 64, 3), dtype=np.uint8)).save(path)


def cli(*args, env: dict, cwd: Path | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "cultureboard.cli", *map(str, args)], capture_output=True, text=True,
                          env=env, cwd=cwd, timeout=600)


class Runner:
    """Runs a workflow step's script as the runner would: in a checkout, with GitHub's files and variables."""

    def __init__(self, root: Path, hub: HubServer):
        self.root = root
        tools = root / "tools"
        tools.mkdir()
        self.gh_log = root / "gh.log"
        (tools / "gh").write_text(f'#!/usr/bin/env bash\necho "$*" >> {self.gh_log}\n')
        (tools / "gh").chmod(0o755)
        self.base = {**os.environ, "PATH": f"{tools}:{Path(sys.executable).parent}:{os.environ['PATH']}",
                     **hub.env(), "HF_HUB_OFFLINE": "1", "GITHUB_SERVER_URL": "https://github.com",
                     "GITHUB_REPOSITORY": REPO, "GITHUB_RUN_ID": "99", "CULTUREBOARD_DATASET_REPO": OFFICIAL_DATASET}
        self.count = 0

    def __call__(self, script: str, cwd: Path, *args: str, **env: str) -> tuple[subprocess.CompletedProcess, dict]:
        """Run ``script`` in ``cwd``; returns the process and what it wrote to $GITHUB_OUTPUT (and $GITHUB_ENV)."""
        self.count += 1
        files = {k: self.root / f"{k.lower()}-{self.count}" for k in ("GITHUB_OUTPUT", "GITHUB_ENV", "GITHUB_STEP_SUMMARY")}
        for f in files.values():
            f.write_text("")
        runner = "python3" if script.endswith(".py") else "bash"
        temp = self.root / f"runner-temp-{self.count}"
        temp.mkdir()
        done = subprocess.run([runner, f".github/scripts/{script}", *args], cwd=cwd, capture_output=True, text=True,
                              env={**self.base, "RUNNER_TEMP": str(temp), **{k: str(v) for k, v in files.items()},
                                   **env}, timeout=600)
        outputs = dict(line.split("=", 1) for line in files["GITHUB_OUTPUT"].read_text().splitlines() if "=" in line)
        outputs |= {f"env:{k}": v for k, v in (line.split("=", 1) for line in files["GITHUB_ENV"].read_text().splitlines()
                                              if "=" in line)}
        return done, outputs


def checkout(origin: Path, where: Path, ref: str = "main") -> Path:
    """actions/checkout of ``ref`` into ``where`` (full history, as fetch-depth: 0)."""
    subprocess.run(["git", "clone", "-q", str(origin), str(where)], check=True, capture_output=True)
    git(where, "checkout", "-q", ref)
    return where


def artifact(source: Path, target: Path, hidden: bool = False) -> Path:
    """upload-artifact, then download-artifact: hidden files travel only with include-hidden-files."""
    shutil.copytree(source, target, ignore=None if hidden else shutil.ignore_patterns(".*"), dirs_exist_ok=True)
    return target


def other_submission(parent: Path, dataset: Path, sid: str, commit: str, images_of: Path | None = None) -> Path:
    """A valid open-weights submission (noise images seeded by its id, or the images of the folder ``images_of``:
    their embeddings are cached already, so scoring it loads the scorers and embeds nothing)."""
    from cultureboard.dataset_folder import read_prompt_set

    folder, rows = parent / sid, []
    for i, p in enumerate(read_prompt_set(dataset, PROMPT_SET)):
        for k in range(p["images_per_prompt"]):
            rel = f"images/{p['prompt_id']}/{k}.png"
            if images_of is None:
                noise(folder / rel, zlib.crc32(f"{sid}/{i}/{k}".encode()))
            else:
                (folder / rel).parent.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(images_of / rel, folder / rel)
            rows.append({"file_name": rel, "prompt_id": p["prompt_id"], "sample_idx": k, "seed": p["seeds"][k],
                         "sha256": file_sha256(folder / rel)})
    org, model = sid.split("__")
    write_submission(folder, {
        "format_version": 1, "organization": org, "contact": "lab@example.org", "date": "2025-01-01",
        "model": {"name": model, "id": f"{org}/{model}", "revision": "0" * 40, "license": "mit", "weights": "open"},
        "generation": {"pipeline": "StableDiffusionPipeline", "scheduler": "DDIMScheduler", "steps": 2,
                       "guidance_scale": 7.5, "width": 64, "height": 64, "negative_prompt": True, "precision": "fp32"},
        "seeds": {"scheme": "prompt-set"}, "prompt_set": {"name": PROMPT_SET, "dataset": OFFICIAL_DATASET, "revision": commit},
        "images": {"location": "images"}}, rows)
    return folder


@pytest.fixture(scope="module")
def world(tmp_path_factory, tiny_scorers):
    """The official dataset on the loopback Hub (tag v1.0), two models on the board, and the repository's origin
    whose main holds them and the workflows' scripts."""
    from cultureboard.builder import build

    root = tmp_path_factory.mktemp("pr-loop")
    hub = HubServer().__enter__()
    build(root / "release", countries=["IT", "NG"], concepts=["art"], prompt_sets=[PROMPT_SET], cube_images=[1, 2])  # 6 prompts
    commit = hub.seed(OFFICIAL_DATASET, root / "release", tags=("v1.0",))
    main = root / "main"
    shutil.copytree(ROOT / ".github" / "scripts", main / ".github" / "scripts")
    folder = None
    for sid in OTHERS:
        folder = other_submission(main / "submissions", root / "release", sid, commit, images_of=folder)
        evaluate(folder, root / "release", main / "results", scorers=tiny_scorers, device="cpu",
                 cache=root / "cache" / "embeddings")
    (main / "README.md").write_text("the leaderboard\n")
    origin = root / "origin.git"
    subprocess.run(["git", "init", "-q", "--bare", "-b", "main", str(origin)], check=True)
    git(main, "init", "-q", "-b", "main")
    git(main, "add", "-f", "-A")
    git(main, "commit", "-q", "-m", "the board")
    git(main, "push", "-q", str(origin), "main")
    yield {"root": root, "hub": hub, "commit": commit, "origin": origin, "scorers": tiny_scorers,
           "run": Runner(root, hub), "main_sha": git(main, "rev-parse", "HEAD")}
    hub.__exit__(None, None, None)


def team_submission(world, where: Path) -> subprocess.CompletedProcess:
    """What the team does with the submission guide: export-prompts at v1.0, one image per row (named its own
    way), the export as the mapping with a file column, a spec, package; returns package's process."""
    team, env = where / "team", world["run"].base
    team.mkdir(parents=True)
    r = cli("export-prompts", "--revision", "v1.0", "--dataset", team / "dataset", "--prompt-set", PROMPT_SET,
            "--out", team / "prompts.csv", env=env | {"HF_HUB_OFFLINE": "0"})
    assert r.returncode == 0, r.stderr
    with open(team / "prompts.csv", newline="") as fh:
        rows = list(csv.DictReader(fh))
    assert {row["revision"] for row in rows} == {world["commit"]}
    for i, row in enumerate(rows):
        row["file"] = f"api-output/{i:04d}-{row['seed']}.png"
        noise(team / "images" / row["file"], 1000 + i)
    with open(team / "mapping.csv", "w", newline="") as fh:
        writer = csv.DictWriter(fh, list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    (team / "spec.yaml").write_text(yaml.safe_dump(CLOSED_SPEC))
    return cli("package", "--from-folder", team / "images", "--mapping", team / "mapping.csv", "--spec",
               team / "spec.yaml", "--dataset", team / "dataset", "--prompt-set", PROMPT_SET, "--seeds-ignored",
               "--out", where / "fork" / "submissions" / SID, env=env)


def open_pr(world, name: str, change) -> tuple[str, str]:
    """A branch of origin whose one commit ``change(checkout)`` makes; returns (base, head)."""
    fork = checkout(world["origin"], world["root"] / f"fork-{name}")
    base = git(fork, "rev-parse", "HEAD")
    change(fork)
    git(fork, "checkout", "-q", "-b", name)
    git(fork, "add", "-A")
    git(fork, "commit", "-q", "-m", f"submission {name}")
    git(fork, "push", "-q", "origin", name)
    return base, git(fork, "rev-parse", "HEAD")


def validate_job(world, name: str, base: str, head: str):
    ws = checkout(world["origin"], world["root"] / f"validate-{name}", base)
    checkout(world["origin"], ws / "pr", head)
    done, _ = world["run"]("validate-pr.sh", ws, PR_NUMBER=PR, BASE_SHA=base, HEAD_SHA=head)
    reports = [json.loads(p.read_text()) for p in sorted((ws / "report").glob("[0-9]*.json"))]
    return ws, done, reports


def prepare_job(world, name: str, base: str, head: str, **env):
    ws = checkout(world["origin"], world["root"] / f"prepare-{name}")
    target, out = world["run"]("find-target.sh", ws, EVENT="pull_request_target", EVENT_PR=PR, EVENT_HEAD=head,
                               EVENT_BASE=base)
    assert target.returncode == 0, target.stderr
    checkout(world["origin"], ws / "pr", out["head_sha"])
    done, outputs = world["run"]("take-submission.sh", ws, HEAD_SHA=out["head_sha"], BASE_SHA=out["base_sha"],
                                 DATASET_REPO=OFFICIAL_DATASET, IMAGES_PER_SHARD="4000", MAX_SHARDS="8", **env)
    return ws, out, done, outputs


def comment(world, kind: str, artifact_dir: Path, head: str) -> dict:
    out = world["root"] / f"comment-{kind}-{world['run'].count}.json"
    done, _ = world["run"]("comment_body.py", artifact_dir.parent, KIND=kind, ARTIFACT=str(artifact_dir),
                           HEAD_SHA=head, RUN_URL="https://github.com/org/board/actions/runs/1", OUT=str(out))
    assert done.returncode == 0, done.stderr
    return json.loads(out.read_text())


def test_a_submission_from_the_prompts_to_the_published_site(world):
    run, root, origin = world["run"], world["root"], world["origin"]

    # the team: export-prompts, its own images, the export as its mapping, package; validate accepts it
    made = team_submission(world, root / "happy")
    assert made.returncode == 0, made.stderr
    folder = root / "happy" / "fork" / "submissions" / SID
    spec = yaml.safe_load((folder / "submission.yaml").read_text())
    assert spec["prompt_set"] == {"name": PROMPT_SET, "dataset": OFFICIAL_DATASET, "revision": world["commit"]}
    base, head = open_pr(world, "happy", lambda fork: shutil.copytree(folder, fork / "submissions" / SID))

    # validate.yml, then comment.yml on its artifact
    ws, done, reports = validate_job(world, "happy", base, head)
    assert done.returncode == 0, done.stdout + done.stderr
    assert [(r["valid"], r["errors"], r["warnings"]) for r in reports] == [(True, 0, 0)] and reports[0]["submission"] == SID
    assert "::stop-commands::" in done.stdout and f"{SID}: valid" in done.stdout
    assert json.loads((ws / "report" / "pr.json").read_text()) == {"pr": 7, "head_sha": head}
    body = comment(world, "validate", ws / "report", head)
    assert body["pr"] == 7 and body["body"].startswith("<!-- cultureboard:validate -->")
    assert "✅ valid" in body["body"] and "add the `evaluate` label" in body["body"]

    # the evaluate label: prepare
    ws, target, done, prepared = prepare_job(world, "happy", base, head, INPUT_SHARDS="2")
    assert target == {"pr": PR, "head_sha": head, "base_sha": base, "main_sha": base}
    assert done.returncode == 0, done.stdout + done.stderr
    assert prepared == {"id": SID, "n": "2", "shards": "[0, 1]"} and not (ws / "pr").exists()
    assert (ws / "work" / "submissions" / SID / "metadata.jsonl").is_file() and (ws / "dataset" / "data").is_dir()

    # score: one job per shard, each on the artifacts of prepare
    shards = root / "shards"
    for shard in ("0", "1"):
        job = checkout(origin, root / f"score-{shard}", target["main_sha"])
        artifact(ws / "work" / "submissions", job / "work" / "submissions")
        artifact(ws / "dataset", job / "dataset")
        _, folders = run("cache-folders.sh", job)
        assert set(folders) == {"env:HF_HOME", "env:CULTUREBOARD_CACHE"}
        if shard == "0":  # the audit of chosen seeds: a closed model's images are self-reported
            done, _ = run("audit-generation.sh", job, ID=SID, PR=PR, SCORERS=str(world["scorers"]))
            assert done.returncode == 0 and '"verdict": "self-reported"' in done.stdout, done.stdout + done.stderr
            artifact(job / "audit", shards.parent / "audit")
        # a runner whose cache persists (CULTUREBOARD_HF_HOME): the prompts' embeddings are the board's already
        done, _ = run("score-shard.sh", job, ID=SID, SHARD=shard, N="2", SCORERS=str(world["scorers"]),
                      CULTUREBOARD_CACHE=str(root / "cache"))
        assert done.returncode == 0, done.stderr
        artifact(job / "results" / f"{SID}.shards" / f"{shard}-of-2", shards / f"shard-{shard}-of-2", hidden=True)

    # merge, and the scores comment's data (the comparison with the board)
    merge = checkout(origin, root / "merge", target["main_sha"])
    artifact(ws / "dataset", merge / "dataset")
    artifact(shards, merge / "shards", hidden=True)
    artifact(shards.parent / "audit", merge / "audit")
    artifact(ws / "work" / "submissions", merge / "work" / "submissions")
    scored = {"ID": SID, "PR": PR, "HEAD_SHA": head, "MAIN_SHA": target["main_sha"], "RESULTS_TARGET": "main"}
    done, _ = run("merge-shards.sh", merge, **scored)
    assert done.returncode == 0, done.stderr
    summary = json.loads((merge / "results" / SID / "summary.json").read_text())
    assert summary["provenance"]["submission"]["id"] == SID and summary["metrics"]
    review = json.loads((merge / "results" / SID / "review.json").read_text())
    assert (review["pull_request"], review["repository"], review["head_sha"]) == (7, REPO, head)
    assert review["generation"] == "self-reported" and review["audit"]["checked"] == 0
    done, _ = run("scores-comment.sh", merge, **scored)
    assert done.returncode == 0, done.stdout + done.stderr
    standing = json.loads((merge / "comment" / "standing.json").read_text())
    (entry,) = standing["prompt_sets"]
    assert entry["compared"] == 2 and sorted(t["submission"] for t in entry["top"]) == sorted(OTHERS)
    assert all(t["difference"]["verdict"] in ("better", "worse", "no clear difference") for t in entry["top"])
    metric, means = entry["metric"], {}
    for sid in (SID, OTHERS[0]):  # the paired difference, by hand: per prompt, the mean of its rows; their mean gap
        rows = pq.read_table(merge / "results" / sid / "scores.parquet").to_pandas()
        means[sid] = rows[rows.metric == metric].groupby("unit_id")["value"].mean()
    sign = {"higher": 1, "lower": -1}[entry["direction"]]
    by_hand = (sign * (means[SID] - means[OTHERS[0]])).mean()
    top = {t["submission"]: t for t in entry["top"]}
    assert top[OTHERS[0]]["difference"]["value"] == pytest.approx(by_hand) and top[OTHERS[0]]["difference"]["units"] == 6
    assert top[OTHERS[0]]["difference"]["ci_low"] <= by_hand <= top[OTHERS[0]]["difference"]["ci_high"]
    body = comment(world, "evaluate", merge / "comment", head)
    assert body["pr"] == 7 and "cultureboard scores: acme&#95;&#95;imagen&#45;x" in body["body"]
    assert "Beside the models on the board" in body["body"] and "lab&#45;a &#47; model&#45;a" in body["body"]

    # commit, to origin's main; the site is dispatched
    commit = checkout(origin, root / "commit")
    temp = root / "runner-temp-commit"
    artifact(merge / "results", temp / "results", hidden=True)
    done, pushed = run("commit-results.sh", commit, **scored, DEFAULT_BRANCH="main", GH_TOKEN="t",
                       RUNNER_TEMP=str(temp))
    assert done.returncode == 0, done.stderr
    assert git(commit, "ls-remote", "origin", "refs/heads/main").split()[0] == pushed["sha"]
    assert "workflow run site.yml --ref main" in run.gh_log.read_text()

    # hub: the committed results to the results dataset on the loopback Hub
    job = checkout(origin, root / "hub", pushed["sha"])
    done, _ = run("publish-results.sh", job, RESULTS_REPO=RESULTS_REPO, ID=SID, **{"HF_HUB_OFFLINE": "0"})
    assert done.returncode == 0, done.stderr
    published = world["hub"].files(RESULTS_REPO)
    assert {"data/latest.parquet", "data/acme__imagen_x.parquet", "README.md"} <= set(published)

    # the maintainer merges the pull request; site.yml builds and deploys
    merged = checkout(origin, root / "maintainer")
    git(merged, "merge", "-q", "--no-ff", "-m", "Merge pull request #7", f"origin/happy")
    git(merged, "push", "-q", "origin", "main")
    site = checkout(origin, root / "site")
    done, _ = run("get-dataset.sh", site, DATASET_REPO=OFFICIAL_DATASET, DATASET_REVISION=world["commit"])
    assert done.returncode == 0, done.stderr
    done, _ = run("build-site.sh", site)
    assert done.returncode == 0, done.stderr
    deployed = site / "_site"  # what upload-pages-artifact takes (site.yml's path)
    assert yaml.safe_load((ROOT / ".github/workflows/site.yml").read_text())["jobs"]["build"]["steps"][-1]["with"] == {
        "path": "_site"}
    page = (deployed / "submissions.html").read_text()
    assert f'<a href="https://github.com/{REPO}/pull/7">#7</a>' in page
    assert f'href="model/{SID}.html"' in page and f'href="models/{SID}.html"' in page
    assert (deployed / "model" / f"{SID}.html").is_file() and (deployed / "models" / f"{SID}.html").is_file()
    assert f"{SID}: valid: 0 errors" in (deployed / "validation" / f"{SID}.txt").read_text()


def test_a_pull_request_that_changes_anything_outside_its_folder_is_refused(world):
    def change(fork):
        other_submission(fork / "submissions", world["root"] / "release", "lab-c__model-c", world["commit"])
        (fork / "README.md").write_text("rewritten by the pull request\n")

    base, head = open_pr(world, "outside", change)
    _, done, reports = validate_job(world, "outside", base, head)
    assert done.returncode == 1
    (report,) = reports
    assert [(p["code"], p["file"]) for p in report["problems"] if p["severity"] == "error"] == [
        ("scope.outside_submission", "README.md")]
    _, _, done, outputs = prepare_job(world, "outside", base, head)
    assert done.returncode == 1 and "not valid by the default branch's validator" in done.stdout and outputs == {}


def test_a_pull_request_with_two_submission_folders_is_refused(world):
    def change(fork):
        for sid in ("lab-c__model-c", "lab-d__model-d"):
            other_submission(fork / "submissions", world["root"] / "release", sid, world["commit"])

    base, head = open_pr(world, "two", change)
    _, done, reports = validate_job(world, "two", base, head)
    assert done.returncode == 1 and len(reports) == 2
    # each folder's report names every file of the other folder
    assert all({p["code"] for p in r["problems"]} == {"scope.other_submission"} for r in reports), reports
    ws, _, done, outputs = prepare_job(world, "two", base, head)
    assert done.returncode == 1 and "changes 2 submission folders" in done.stdout and outputs == {}
    assert not (ws / "work").exists()


INJECTED = "$(touch PWNED)`touch PWNED`"


def test_a_forks_file_names_and_fields_are_data_never_commands(world):
    """Command substitutions in a file name, a folder name and a field, and workflow commands in a field: nothing
    runs them, nothing reaches $GITHUB_OUTPUT, the comment shows them inert, the report is fenced."""
    def change(fork):
        folder = other_submission(fork / "submissions", world["root"] / "release", "lab-c__model-c", world["commit"])
        spec = yaml.safe_load((folder / "submission.yaml").read_text())
        spec["contact"] = f"{INJECTED} ::set-output name=id::evil"
        (folder / "submission.yaml").write_text(yaml.safe_dump(spec))
        (folder / "images" / f"{INJECTED}.png").write_bytes(b"not an image")

    base, head = open_pr(world, "inject", change)
    ws, done, reports = validate_job(world, "inject", base, head)
    assert done.returncode == 1 and not list(world["root"].rglob("PWNED"))
    codes = {p["code"] for r in reports for p in r["problems"]}
    assert "folder.unlisted_file" in codes
    fenced = done.stdout.split("::stop-commands::", 1)[1]
    assert f"images/{INJECTED}.png" in fenced.split("\n::", 1)[0]  # the report, between the fence's two lines
    body = comment(world, "validate", ws / "report", head)["body"]
    assert "$(" not in body and "`touch" not in body and "&#36;&#40;touch PWNED&#41;" in body

    _, _, done, outputs = prepare_job(world, "inject", base, head)
    assert done.returncode == 1 and outputs == {} and not list(world["root"].rglob("PWNED"))

    base, head = open_pr(world, "inject-folder", lambda fork: other_submission(
        fork / "submissions", world["root"] / "release", f"lab__{INJECTED}", world["commit"]))
    _, done, reports = validate_job(world, "inject-folder", base, head)
    assert done.returncode == 1 and not list(world["root"].rglob("PWNED"))
    _, _, done, outputs = prepare_job(world, "inject-folder", base, head)
    assert done.returncode == 1 and "is not submissions/<org>__<model>[__<tag>]" in done.stdout and outputs == {}
