"""submissions.html: every submission folder the site is given, with where its pull request stands.

Each folder of the submissions folder (hidden names left out) is in one state, the first that applies:

- ``invalid``: ``cultureboard validate`` (against the site's dataset) finds an error; the first one is shown;
- ``not scored``: valid, but the results folder holds no ``<id>/summary.json`` for it;
- ``unreadable result``: its summary cannot be read as an evaluator summary (the reason is shown);
- ``stale``: scored, but the dataset's revision is no longer the one the result was scored on, or a metric's
  version now differs from the one its provenance recorded (or the metric or prompt set is gone): each change
  is named, and the fix is to evaluate again;
- ``scored``: with the code version (cultureboard version and git commit) that scored it.

Each row links the submission's page and its model's page (once scored and on the site), its validation report
(``validation/<id>.txt``: the whole report of ``cultureboard validate`` against the site's dataset, written for every
folder) and its pull request (from ``results/<id>/review.json``, which the evaluate workflow writes: the pull
request the result was scored from, on the repository that scored it).

Validation reads and hashes every image, so what it found is kept in the site (:data:`CACHE`, one entry per folder)
under a key of everything it reads (:func:`validation_key`): the folder's files (name, type, size, times,
inode and link count of each, and the bytes of submission.yaml and metadata.jsonl), the submission.yaml of each
sibling folder of the same model, the dataset folder's files and the code that validates (its source files). The
next build validates again only the folders whose key changed, and those whose finding depends on the day.

The day. The one check that reads the clock is "date is in the future" (``validate.DATED_CODES``); as days pass
such a date becomes a past one, never the reverse (the UTC date is taken to only advance). So a folder found
valid stays valid, and an invalid folder without that problem keeps its errors, on every later day: their entries
hold ``"day": null`` and serve any day. An entry whose report has that problem holds the UTC day read before it
was validated and serves that day only; on a later day the folder is validated again.
"""

from __future__ import annotations

import datetime as dt
import functools
import hashlib
import json
import operator
import os
import re
import stat
from pathlib import Path

from cultureboard.evaluators.engine.registry import family_of, parse_options
from cultureboard.evaluators.submission import format as submission_format
from cultureboard.evaluators.submission import validate as validate_module
from cultureboard.evaluators.submission.format import METADATA, SUBMISSION_YAML, get, parse_submission_id, read_spec
from cultureboard.evaluators.submission.validate import validate

from cultureboard import dataset_folder, hub, images, naming
from cultureboard.dataset_folder import local_revision
from cultureboard.errors import CultureboardError

from .load import read_summary
from .names import model_page
from .write import Column, Site

PAGE = "submissions.html"
#: What validation found of each folder, {folder name: {"key": validation_key, "invalid": first error or null,
#: "report": the report as text, "day": the day the finding holds on, or null for every day (the module docstring)}}.
CACHE = "cache/validation.json"
#: The folder of the validation reports, one ``<id>.txt`` per submission folder.
REPORTS = "validation"
#: What a results/<id>/review.json names, and the forms a link is made from.
REVIEW = "review.json"
_REPO = re.compile(r"[A-Za-z0-9][\w.-]*/[A-Za-z0-9][\w.-]*")
_SERVER = re.compile(r"https://[\w.-]+")


def states(submissions: Path, results: Path, dataset: Path, cache: dict | None = None,
           summaries: dict | None = None) -> list[dict]:
    """One {submission, prompt_set, state, detail} per submission folder, sorted by folder name. Without a readable
    dataset nothing can be checked: every folder says so (the rest of the site needs no dataset).

    ``cache``: :data:`CACHE` of an earlier build; a folder whose :func:`validation_key` it holds is not validated
    again; it is replaced in place by this build's entries. ``summaries``: folder name -> its result's summary,
    already read (the others are read here)."""
    folders = sorted(p for p in submissions.iterdir() if p.is_dir() and not p.name.startswith("."))
    known = cache.copy() if cache is not None else {}
    if cache is not None:
        cache.clear()
    try:
        return _rows(folders, results, dataset, known, cache, summaries or {})
    except CultureboardError as exc:
        return [{"submission": f.name, "prompt_set": None, "state": "not checked",
                 "detail": f"the dataset {dataset.name} cannot be read: {exc.problem} (fix: {exc.fix})",
                 "page": None, "model": None, "report": None, "pull_request": None} for f in folders]


def _rows(folders: list[Path], results: Path, dataset: Path, known: dict, cache: dict | None,
          summaries: dict) -> list[dict]:
    revision, shared, today = local_revision(dataset), _shared_key(dataset), _today()
    models: dict[str, list[Path]] = {}
    for f in folders:
        models.setdefault(_model_of(f.name), []).append(f)
    rows = []
    for f in folders:
        key = validation_key(f, models[_model_of(f.name)], shared)
        entry = known.get(f.name)
        if not _serves(entry, key, today):
            entry = {"key": key} | _findings(f, dataset, today)
        if cache is not None:
            cache[f.name] = entry
        rows.append({"submission": f.name} | _state(entry["invalid"], results / f.name / "summary.json", revision,
                                                    summaries.get(f.name)) | _links(f, results, f.name in summaries))
    return rows


def _links(folder: Path, results: Path, shown: bool) -> dict:
    """The row's links: its page and its model's (when its result is on the site; a control has no model page),
    its validation report, and its pull request (:data:`REVIEW`)."""
    sid = folder.name
    control = shown and _control(folder)
    return {"page": {"text": "results", "href": f"model/{sid}.html"} if shown else None,
            "model": {"text": _model_of(sid), "href": model_page(_model_of(sid))} if shown and not control else None,
            "report": {"text": "report", "href": f"{REPORTS}/{sid}.txt"},
            "pull_request": _pull_request(results / sid / REVIEW)}


def _control(folder: Path) -> bool:
    try:
        return get(read_spec(folder / SUBMISSION_YAML), "control") is not None
    except CultureboardError:
        return False


def _pull_request(path: Path) -> dict | None:
    """{text: "#N", href: the pull request's address} from a review record (a regular file, never through a link),
    when it names a pull request number, a repository ORG/NAME and an https server; else None."""
    try:
        if not stat.S_ISREG(os.lstat(path).st_mode) or os.lstat(path).st_size > 2**16:
            return None
        review = json.loads(path.read_text(encoding="utf-8"))
        number, repo, server = review["pull_request"], review["repository"], review["server_url"]
    except (OSError, ValueError, KeyError, TypeError):
        return None
    if not (type(number) is int and 0 < number < 10**10 and isinstance(repo, str) and _REPO.fullmatch(repo)
            and isinstance(server, str) and _SERVER.fullmatch(server)):
        return None
    return {"text": f"#{number}", "href": f"{server}/{repo}/pull/{number}"}


def validation_key(folder: Path, siblings: list[Path], shared: str) -> str:
    """sha256 of what validating ``folder`` depends on (the module docstring), ``shared`` the dataset's and the
    code's part. ``siblings``: the folders whose names give the same ``<org>__<model>`` (``folder`` among them); a
    folder whose submission.yaml names another model is invalid by its name before any sibling is compared."""
    h = hashlib.sha256(shared.encode(errors="surrogateescape"))
    h.update(_tree(folder).encode(errors="surrogateescape"))
    for name in (SUBMISSION_YAML, METADATA):
        h.update(_digest(folder / name).encode())
    for sibling in siblings:
        h.update(json.dumps([sibling.name, _signature(sibling), _signature(sibling / SUBMISSION_YAML)]).encode())
    return h.hexdigest()


def _serves(entry: object, key: str, today: str) -> bool:
    """Whether ``entry``, a cache entry as read from disk (of any shape), answers for ``key`` on the day ``today``."""
    return (isinstance(entry, dict) and entry.get("key") == key
            and "invalid" in entry and isinstance(entry["invalid"], (str, type(None)))
            and isinstance(entry.get("report"), str) and "day" in entry and entry["day"] in (None, today))


def _today() -> str:
    """Today's UTC date, YYYY-MM-DD: the day a date-dependent finding holds on."""
    return dt.datetime.now(dt.UTC).date().isoformat()


def _model_of(name: str) -> str:
    parsed = parse_submission_id(name)
    return f"{parsed['organization']}__{parsed['model']}" if parsed else name


def _shared_key(dataset: Path) -> str:
    """The dataset folder's files and the validating code, as one string."""
    return _code_digest() + "\n" + _tree(dataset)


@functools.cache
def _code_digest() -> str:
    """The validating code: the submission format, validate and every rule group, and what they read with."""
    h = hashlib.sha256()
    rules = sorted((Path(validate_module.__file__).parent / "rules").glob("*.py"))
    for path in [Path(m.__file__) for m in (validate_module, submission_format, images, dataset_folder, hub, naming)] + rules:
        h.update(path.name.encode() + b"\0" + path.read_bytes())
    return h.hexdigest()


def _signature(path: str | Path) -> str:
    """What a change to ``path`` changes: its type and permissions, size, times, inode and link count (not
    followed), or "-" when it cannot be read."""
    try:
        return _stat_text(os.lstat(path))
    except OSError:
        return "-"


def _stat_text(st: os.stat_result) -> str:
    return f"{st.st_mode},{st.st_size},{st.st_mtime_ns},{st.st_ctime_ns},{st.st_ino},{st.st_nlink}"


_name = operator.attrgetter("name")


def _tree(root: str | Path) -> str:
    """``root`` and everything under it, links not followed: one ``relative path NUL signature`` (:func:`_signature`)
    an entry, joined by line breaks, parents before their entries and each folder's entries in name order. A
    name holds no NUL and a signature no line break or NUL, so two trees give the same text only when they are
    the same."""
    lines, stack = ["\0" + _signature(root)], [("", os.fspath(root))]
    while stack:
        prefix, folder = stack.pop()
        try:
            with os.scandir(folder) as it:
                entries = sorted(it, key=_name)
        except OSError:
            continue
        for e in entries:
            try:
                st = e.stat(follow_symlinks=False)
            except OSError:
                lines.append(f"{prefix}{e.name}\0-")
                continue
            lines.append(f"{prefix}{e.name}\0{_stat_text(st)}")
            if stat.S_ISDIR(st.st_mode):
                stack.append((f"{prefix}{e.name}/", e.path))
    return "\n".join(lines)


def _digest(path: Path) -> str:
    """sha256 of a regular file's bytes (never through a link), or why there is none."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError as exc:
        return f"unreadable: {exc.strerror}"
    with open(fd, "rb") as fh:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return "not a regular file"
        return hashlib.file_digest(fh, "sha256").hexdigest()


def _findings(folder: Path, dataset: Path, today: str) -> dict:
    """``{"invalid", "report", "day"}`` of :data:`CACHE`: ``validate``'s first error of ``folder`` as the page shows it
    (None when the folder is valid), the whole report as text, and ``today`` when a later day could find otherwise
    (the module docstring), else None."""
    report = validate(folder, dataset)
    first = report.errors[0] if report.errors else None
    invalid = (None if report.valid else f"{first.file}: {first.message} (fix: {first.fix})" if first else
               f"{report.count('error')} errors (run `cultureboard validate {folder.name}`)")
    return {"invalid": invalid, "report": report.to_text() + "\n", "day": today if report.dated else None}


def read_cache(previous: Path) -> dict:
    """:data:`CACHE` of the site ``previous`` (a regular file, never through a link), or {}."""
    path = previous / CACHE
    try:
        if not (stat.S_ISDIR(os.lstat(previous / "cache").st_mode) and stat.S_ISREG(os.lstat(path).st_mode)):
            return {}
        found = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError, RecursionError):  # RecursionError: nested too deep to parse
        return {}
    return found if isinstance(found, dict) else {}


def _state(invalid: str | None, summary_path: Path, revision: str, summary: dict | None) -> dict:
    if invalid is not None:
        return {"prompt_set": None, "state": "invalid", "detail": invalid}
    if not summary_path.is_file():
        return {"prompt_set": None, "state": "not scored", "detail": "valid; no result yet"}
    try:
        provenance = (summary or read_summary(summary_path))["provenance"]
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


def submissions_page(site: Site, submissions: Path, results: Path, dataset: Path, previous: Path | None = None,
                     summaries: dict | None = None) -> None:
    """Write submissions.html with its table (and downloads), each folder's validation report (:data:`REPORTS`) and
    :data:`CACHE`, reusing that of the site ``previous`` (see :func:`states`)."""
    cache = read_cache(previous) if previous is not None else {}
    columns = [Column("submission", "Submission", "text", "The folder under submissions/", sticky=True),
               Column("prompt_set", "Prompt set", "text", "From the result's provenance, once scored"),
               Column("state", "State", "text", "invalid, not scored, unreadable result, stale or scored"),
               Column("detail", "Detail", "text", "The validator's first error, what changed, or the scoring code"),
               Column("page", "Results", "link", "The submission's page, once scored"),
               Column("model", "Model", "link", "The model's page: every prompt set it was scored on"),
               Column("report", "Validation", "link", "The validator's whole report against this site's dataset"),
               Column("pull_request", "Pull request", "link", "The pull request it was scored from")]
    rows = states(submissions, results, dataset, cache, summaries)
    site.page(PAGE, "submissions.html", "Submissions", table=site.table(PAGE, "submissions", columns, rows))
    for name, entry in sorted(cache.items()):
        site.write(f"{REPORTS}/{name}.txt", entry["report"])
    site.write(CACHE, json.dumps(cache, sort_keys=True, indent=0) + "\n")
