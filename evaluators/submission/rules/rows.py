"""Rules on the leaderboard's rows: one row per (organization, model, version, prompt set). A model's submissions
beside this one in the submissions folder (the same ``<org>__<model>`` key, so the same model version: the
identity fields agree, :func:`.spec.check_siblings`) for the same prompt set are the same row, so a new one names
the folder it replaces with ``supersedes: {submission: FOLDER, reason: WHY}``. The old folder stays: the site shows
it marked superseded, never ranked beside its successor. A chain (C supersedes B, B supersedes A) is fine; two
live rows of one model version and prompt set, a ``supersedes`` that names no such folder, or one without a
reason are errors. Controls are not rows of a model and are left out.
"""

from __future__ import annotations

from ..format import get, parse_submission_id
from .report import Run, remake, show
from .spec import _sibling_spec

CODES: dict[str, str] = {
    "schema.duplicate_row": "another submission of the same model version and prompt set, and neither replaces "
                            "the other (supersedes:)",
    "schema.bad_supersedes": "supersedes names no submission of the same model version and prompt set, or gives "
                             "no reason",
}


def check(run: Run) -> None:
    """This submission against the model's others of its prompt set in the submissions folder."""
    spec = run.spec
    if spec is None or spec.control is not None or not (key := spec.model_key) or spec.prompt_set.name is None:
        return
    parent = run.root.parent
    same = {}  # folder name -> its spec, for the model's other submissions of this prompt set
    if parent.is_dir():
        for folder in sorted(p for p in parent.iterdir() if p.name.startswith(key)):
            other = _sibling_spec(folder, run.name, key, run.limits.max_yaml_bytes)
            if other is not None and get(other, "prompt_set.name") == spec.prompt_set.name:
                same[folder.name] = other
    old, reason = spec.supersedes.submission, spec.supersedes.reason
    given = "supersedes" in spec.raw
    if given and old not in same:
        named = parse_submission_id(old) if isinstance(old, str) else None
        run.error("schema.bad_supersedes", run.at("supersedes.submission"),
                  f"supersedes.submission is {show(old)}, which is not a submission of {key} for prompt set "
                  f"{spec.prompt_set.name} beside this one" + ("" if named else " (not a submission folder name)"),
                  remake("name the folder this one replaces (one of: " + (", ".join(same) or "none") + ") in the spec"
                         if same else "remove supersedes from the spec: there is nothing to replace"))
    if given and not (isinstance(reason, str) and reason.strip()):
        run.error("schema.bad_supersedes", run.at("supersedes"), "supersedes gives no reason",
                  remake("add supersedes.reason: why this submission replaces the old one, to the spec"))
    replaced = {get(other, "supersedes.submission") for other in same.values()}
    for name, other in same.items():
        if name == old or name in replaced or get(other, "supersedes.submission") == run.name:
            continue  # the one this replaces, one already replaced, or this one's successor
        run.error("schema.duplicate_row", run.at("prompt_set.name"),
                  f"{name} is already a submission of the same model version ({key}, "
                  f"{show(spec.model.id)} at {show(spec.model.revision)}) for prompt set {spec.prompt_set.name}: the "
                  "leaderboard has one row per model version and prompt set",
                  remake(f"to replace it, add supersedes: {{submission: {name}, reason: WHY}} to the spec; a new "
                         "model version needs its own model.name"))
