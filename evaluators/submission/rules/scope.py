"""Rules on a pull request's scope: it changes one submission folder (``submissions/<id>/``) and nothing else."""

from __future__ import annotations

from pathlib import Path, PurePosixPath

from .report import Report, problem

CODES: dict[str, str] = {
    "scope.outside_submission": "a changed path outside submissions/<id>/",
    "scope.other_submission": "a changed path in a submission folder other than the one validated",
    "scope.multiple_submissions": "a pull request changing several submission folders",
    "scope.empty": "a pull request changing no files (warning)",
}


def check_pr_scope(changed_files: list[str], submission_dir: str | Path | None = None) -> Report:
    """Check that a pull request changes only one submission folder (``submission_dir``'s, when given).

    ``changed_files`` are repository-relative paths as ``git diff --name-only`` prints them; a path git
    quotes (unusual characters) does not start with ``submissions/`` and so fails, as it should.
    """
    paths = [p.rstrip("\r\n") for p in changed_files if p.strip()]
    owners = {}
    for p in paths:
        parts = PurePosixPath(p).parts
        inside = len(parts) >= 3 and parts[0] == "submissions" and ".." not in parts
        owners[p] = parts[1] if inside else None
    ids = sorted({o for o in owners.values() if o})
    expected = Path(submission_dir).name if submission_dir is not None else ids[0] if len(ids) == 1 else None
    problems = []
    for p, owner in owners.items():
        if owner is None:
            problems.append(problem("error", "scope.outside_submission", p, "is outside submissions/<id>/; a submission "
                                    "pull request changes only its own folder",
                                    "move this change to its own pull request (results/ is written by the evaluator)"))
        elif expected is None:
            problems.append(problem("error", "scope.multiple_submissions", p, f"is in submission {owner}, one of "
                                    f"{len(ids)} this pull request changes ({', '.join(ids)})",
                                    "open one pull request per submission"))
        elif owner != expected:
            problems.append(problem("error", "scope.other_submission", p, f"is in submission {owner}, not {expected}",
                                    f"change only submissions/{expected}/ in this pull request"))
    if not paths:
        problems.append(problem("warning", "scope.empty", "(changed files)", "the pull request changes no files",
                                "check the list of changed files given to --changed-files"))
    return Report(expected or "", problems, {"changed_files": len(paths)})
