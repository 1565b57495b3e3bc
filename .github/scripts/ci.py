"""Small data steps of the workflows' scripts, as subcommands (``python3 .github/scripts/ci.py NAME ARGS``).

Every input from a pull request is data here: read with size limits, never evaluated, and what is printed for a
shell to read is checked against a strict pattern first (a Hub id, a commit, a submission id), so no field of a
submission can reach a command line or ``$GITHUB_OUTPUT`` as anything but itself.

* ``pin FOLDER``: ``hub REPO REVISION`` when FOLDER's submission.yaml pins a Hub dataset at a commit, else
  ``sample - -`` (the offline build of the shipped sample);
* ``unavailable REPORT``: add the error "the pinned dataset could not be downloaded" to a JSON report;
* ``text REPORT``: the report as text (``cultureboard validate``'s);
* ``pr-json OUT``: ``{"pr", "head_sha"}`` of the validated pull request (``$PR_NUMBER``, ``$HEAD_SHA``);
* ``shards N``: ``[0, 1, ..., N-1]`` as JSON (the evaluate matrix);
* ``review OUT``: who scored a result and from which pull request (``results/<id>/review.json``: the site links it),
  and the audit of chosen seeds' verdict (``$AUDIT``: audit-generation's JSON, when the audit ran);
* ``comment-meta OUT``: the scores comment's data (pull request, submission, commits, results branch);
* ``standing RESULTS SUBMISSIONS ID OUT``: the new model beside the top three (:mod:`cultureboard.site.standing`).
"""

from __future__ import annotations

import json
import os
import re
import sys
from pathlib import Path

HUB_ID = re.compile(r"[A-Za-z0-9][\w.-]*/[A-Za-z0-9][\w.-]*")
COMMIT = re.compile(r"[0-9a-f]{40}")
PR = re.compile(r"[1-9][0-9]{0,9}")
MAX_SPEC = 1 << 20


def pin(folder: str) -> None:
    import yaml

    spec_file = Path(folder) / "submission.yaml"
    try:
        if spec_file.is_symlink() or spec_file.stat().st_size > MAX_SPEC:
            raise ValueError("not a small regular file")
        found = yaml.safe_load(spec_file.read_text(encoding="utf-8"))["prompt_set"]
        repo, revision = str(found["dataset"]), str(found["revision"])
    except Exception:  # anything unreadable pins nothing: the validator reports it
        repo = revision = ""
    if HUB_ID.fullmatch(repo) and COMMIT.fullmatch(revision):
        print("hub", repo, revision)
    else:
        print("sample - -")


def unavailable(path: str) -> None:
    report = json.loads(Path(path).read_text(encoding="utf-8"))
    report["problems"].insert(0, {
        "code": "schema.dataset_unavailable", "severity": "error", "file": "submission.yaml",
        "message": "the dataset that prompt_set.dataset and prompt_set.revision pin could not be downloaded from the Hub",
        "fix": "pin a public Hub dataset (ORG/NAME) at a commit hash that exists"})
    report["valid"], report["verdict"], report["errors"] = False, "INVALID", report["errors"] + 1
    Path(path).write_text(json.dumps(report, indent=2), encoding="utf-8")


def text(path: str) -> None:
    from cultureboard.evaluators.submission.validate import Report

    print(Report.from_json(Path(path).read_text(encoding="utf-8")).to_text())


def pr_json(out: str) -> None:
    Path(out).write_text(json.dumps({"pr": int(os.environ["PR_NUMBER"]), "head_sha": os.environ["HEAD_SHA"]}),
                         encoding="utf-8")


def shards(n: str) -> None:
    print(json.dumps(list(range(int(n)))))


def _pr() -> int | None:
    value = os.environ.get("PR", "")
    return int(value) if PR.fullmatch(value) else None


def _sha(name: str) -> str | None:
    value = os.environ.get(name, "")
    return value if COMMIT.fullmatch(value) else None


def _audit() -> dict:
    """The audit's verdict and size from ``$AUDIT`` (audit-generation.sh's JSON), {} without one; a verdict
    other than the published ones is never recorded."""
    from cultureboard.evaluators.results.made import AUDITED

    path = Path(os.environ.get("AUDIT", ""))
    try:
        found = json.loads(path.read_text(encoding="utf-8")) if path.is_file() else {}
    except (OSError, ValueError):
        found = {}
    if not isinstance(found, dict) or found.get("verdict") not in AUDITED:
        return {}
    checked, tolerance = found.get("checked"), found.get("tolerance")
    return {"generation": found["verdict"],
            "audit": {"checked": checked if isinstance(checked, int) else None,
                      "tolerance": tolerance if isinstance(tolerance, (int, float)) else None}}


def review(out: str) -> None:
    from cultureboard.evaluators.results.made import WORKFLOW

    server, repository = os.environ.get("GITHUB_SERVER_URL", ""), os.environ.get("GITHUB_REPOSITORY", "")
    run = f"{server}/{repository}/actions/runs/{os.environ.get('GITHUB_RUN_ID', '')}"
    Path(out).write_text(json.dumps({
        "pull_request": _pr(), "repository": repository if HUB_ID.fullmatch(repository) else None,
        "server_url": server if re.fullmatch(r"https://[\w.-]+", server) else None,
        "head_sha": _sha("HEAD_SHA"), "evaluator_sha": _sha("MAIN_SHA"), "run": run,
        "scored_by": WORKFLOW, **_audit()}, indent=2) + "\n", encoding="utf-8")


def comment_meta(out: str) -> None:
    sid = os.environ["ID"]
    branch = f"results/{sid}" if os.environ.get("RESULTS_TARGET") == "branch" else None
    Path(out).write_text(json.dumps({"pr": _pr(), "submission": sid, "head_sha": _sha("HEAD_SHA"),
                                     "main_sha": _sha("MAIN_SHA"), "results_branch": branch}), encoding="utf-8")


def standing(results: str, submissions: str, sid: str, out: str) -> None:
    from cultureboard.site.standing import standing as run

    Path(out).write_text(json.dumps(run(results, submissions, sid), indent=2), encoding="utf-8")


COMMANDS = {"pin": pin, "unavailable": unavailable, "text": text, "pr-json": pr_json, "shards": shards,
            "review": review, "comment-meta": comment_meta, "standing": standing}

if __name__ == "__main__":
    COMMANDS[sys.argv[1]](*sys.argv[2:])
