"""submissions/README.md documents the format that evaluators/submission.py defines, so they cannot drift apart."""

from __future__ import annotations

import json
import re
from pathlib import Path

import yaml

from cultureboard.evaluators.submission.format import FIELDS, METADATA_FIELDS, get, submission_id

README = (Path(__file__).resolve().parents[1] / "submissions" / "README.md").read_text(encoding="utf-8")


def _blocks(language: str) -> list[str]:
    return re.findall(rf"```{language}\n(.*?)```", README, flags=re.S)


def test_every_field_is_documented():
    missing = [f.path for f in FIELDS if f"`{f.path}`" not in README]
    missing += [f.name for f in METADATA_FIELDS if f"`{f.name}`" not in README]
    missing += [c for f in FIELDS for c in f.choices if f"`{c}`" not in README]
    assert not missing, f"submissions/README.md does not document {missing}"


def test_the_worked_example_is_a_complete_submission():
    example = yaml.safe_load(next(b for b in _blocks("yaml") if "format_version" in b))
    absent = [f.path for f in FIELDS if f.required and get(example, f.path, "<absent>") == "<absent>"]
    assert not absent, f"the worked example lacks {absent}"
    assert f"submissions/{submission_id(example)}" in README
    lines = [json.loads(line) for line in next(b for b in _blocks("json") if "cube-awareness" in b).splitlines()]
    required = {f.name for f in METADATA_FIELDS if f.required}
    assert len(lines) == 3 and all(required <= set(line) for line in lines)
