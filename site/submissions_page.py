"""submissions.html: every submission folder the site is given, with where its pull request stands.

Each folder of the submissions folder (hidden names left out) is in one state, the first that applies:

- ``invalid``: ``cultureboard validate`` (against the site's dataset) finds an error; the first one is shown;
- ``not scored``: valid, but the results folder holds no ``<id>/summary.json`` for it;
- ``unreadable result``: its summary cannot be read as an evaluator summary (the reason is shown);
- ``stale``: scored, but the dataset's revision is no longer the one the result was scored on, or a metric's
  version now differs from the one its provenance recorded (or the metric or prompt set is gone): each change
  is named, and the fix is to evaluate again;
- ``scored``: with the code version (cultureboard version and git commit) that scored it.
"""

from __future__ import annotations

from pathlib import Path

from cultureboard.evaluators.engine.registry import family_of, parse_options
from cultureboard.evaluators.submission.validate import validate

from cultureboard.dataset_folder import local_revision
from cultureboard.errors import CultureboardError

from .load import read_summary
from .write import Column, Site

PAGE = "submissions.html"


def states(submissions: Path, results: Path, dataset: Path) -> list[dict]:
    """One {submission, prompt_set, state, detail} per submission folder, sorted by folder name. Without a readable
    dataset nothing can be checked: every folder says so (the rest of the site needs no dataset)."""
    folders = sorted(p for p in submissions.iterdir() if p.is_dir() and not p.name.startswith("."))
    try:
        revision = local_revision(dataset)
        return [{"submission": f.name} | _state(f, results / f.name / "summary.json", dataset, revision)
                for f in folders]
    except CultureboardError as exc:
        return [{"submission": f.name, "prompt_set": None, "state": "not checked",
                 "detail": f"the dataset {dataset.name} cannot be read: {exc.problem} (fix: {exc.fix})"}
                for f in folders]


def _state(folder: Path, summary_path: Path, dataset: Path, revision: str) -> dict:
    report = validate(folder, dataset)
    if not report.valid:
        first = report.errors[0] if report.errors else None
        detail = (f"{first.file}: {first.message} (fix: {first.fix})" if first else
                  f"{report.count('error')} errors (run `cultureboard validate {folder.name}`)")
        return {"prompt_set": None, "state": "invalid", "detail": detail}
    if not summary_path.is_file():
        return {"prompt_set": None, "state": "not scored", "detail": "valid; no result yet"}
    try:
        provenance = read_summary(summary_path)["provenance"]
    except CultureboardError as exc:
        return {"prompt_set": None, "state": "unreadable result", "detail": f"{exc.problem} (fix: {exc.fix})"}
    changes = _changes(provenance, revision)
    if changes:
        return {"prompt_set": provenance["prompt_set"], "state": "stale",
                "detail": "; ".join(changes) + " (fix: evaluate it again)"}
    git = provenance["code"]["git"]
    commit = (git.get("commit") or "unknown")[:12] + (" with uncommitted changes" if git.get("dirty") else "")
    return {"prompt_set": provenance["prompt_set"], "state": "scored",
            "detail": f"scored by cultureboard {provenance['code']['cultureboard']} (git {commit})"}


def _changes(provenance: dict, revision: str) -> list[str]:
    """What changed since the result was scored: the dataset revision, each metric version that differs now."""
    changes = []
    if provenance["dataset"]["revision"] != revision:
        changes.append(f"dataset revision {provenance['dataset']['revision']} is now {revision}")
    try:
        family, _ = family_of(provenance["prompt_set"])
        options = parse_options(family, provenance["options"])
    except CultureboardError as exc:
        return changes + [f"{exc.source} {exc.problem}"]
    known = {card.name for card in family.metrics}
    for metric, scored in sorted(provenance["metrics"].items()):
        current = family.recorded_version(metric, options) if metric in known else None
        if current != scored:
            changes.append(f"metric {metric} version {scored} is now {current if current is not None else 'gone'}")
    return changes


def submissions_page(site: Site, submissions: Path, results: Path, dataset: Path) -> None:
    """Write submissions.html with its table (and downloads)."""
    columns = [Column("submission", "Submission", "text", "The folder under submissions/"),
               Column("prompt_set", "Prompt set", "text", "From the result's provenance, once scored"),
               Column("state", "State", "text", "invalid, not scored, unreadable result, stale or scored"),
               Column("detail", "Detail", "text", "The validator's first error, what changed, or the scoring code")]
    site.page(PAGE, "submissions.html", "Submissions",
              table=site.table(PAGE, "submissions", columns, states(submissions, results, dataset)))
