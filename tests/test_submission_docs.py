"""submissions/README.md documents the format that evaluators/submission.py defines, so they cannot drift apart."""

from __future__ import annotations

import json
import re
import shlex
from pathlib import Path

import yaml

from cultureboard.cli import cli
from cultureboard.evaluators.submission.format import FIELDS, METADATA_FIELDS, get, submission_id
from cultureboard.hub import DOWNLOAD_COMMAND, OFFICIAL_DATASET

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


def _command_lines(program: str) -> list[list[str]]:
    """The words of every ``program ...`` line of the README's bash blocks (continued lines joined)."""
    lines = [line.strip() for block in _blocks("bash") for line in block.replace("\\\n", " ").splitlines()]
    return [shlex.split(line) for line in lines if line.startswith(program + " ")]


def test_the_walkthrough_names_the_official_dataset_and_how_to_pin_it():
    assert f"**`{OFFICIAL_DATASET}`**" in README
    downloads = _command_lines("hf")
    for words in downloads:  # the command --help prints, at a real revision
        assert " ".join(words).replace(f"--revision {words[words.index('--revision') + 1]} ", "--revision REV ") \
            == DOWNLOAD_COMMAND
    assert downloads


def test_its_cultureboard_commands_and_options_exist_and_use_the_downloaded_dataset():
    commands = _command_lines("cultureboard")
    assert {words[1] for words in commands} >= {"generate", "package", "validate"}
    local_dir = _command_lines("hf")[0][-1]
    for words in commands:
        options = {o for param in cli.commands[words[1]].params for o in param.opts}
        assert {w for w in words if w.startswith("--")} <= options, words
        if "--dataset" in words:
            assert words[words.index("--dataset") + 1] == local_dir, words
