"""Offline, a checkpoint in the local Hugging Face cache is found without importing huggingface_hub's downloader
(scorers._cached_snapshot), with the folder and commit that snapshot_download gives, and an incomplete snapshot is
still snapshot_download's error."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from cultureboard.errors import CultureboardError
from cultureboard.evaluators.engine.scorers import hub_files

REPO, COMMIT = "org/model", "c" * 40
PATTERNS = ["*.json", "*.safetensors"]


@pytest.fixture
def hub(tmp_path, monkeypatch) -> Path:
    """A cache holding org/model at COMMIT (refs/main), with config.json and model.safetensors."""
    from huggingface_hub import constants

    cache = tmp_path / "hub"
    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(cache))
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", True)
    storage = cache / "models--org--model"
    (storage / "refs").mkdir(parents=True)
    (storage / "refs" / "main").write_text(COMMIT)
    snapshot = storage / "snapshots" / COMMIT
    snapshot.mkdir(parents=True)
    (snapshot / "config.json").write_text("{}")
    (snapshot / "model.safetensors").write_bytes(b"weights")
    return cache


def listing(cache: Path, files: list[str]) -> None:
    trees = cache / "models--org--model" / "trees"
    trees.mkdir(exist_ok=True)
    (trees / f"{COMMIT}.json").write_text(json.dumps(
        {"format_version": 1, "files": {f: {"size": 1, "blob_id": "0" * 40} for f in files}}))


def snapshot_download(revision: str) -> tuple[Path, str]:
    from huggingface_hub import snapshot_download

    folder = Path(snapshot_download(REPO, revision=revision, allow_patterns=PATTERNS))
    return folder, folder.name


@pytest.mark.parametrize("revision", ["main", COMMIT])
def test_a_cached_snapshot_is_what_snapshot_download_finds(hub, revision):
    assert hub_files("s", REPO, revision, PATTERNS) == snapshot_download(revision)
    listing(hub, ["config.json", "model.safetensors", "README.md"])  # README.md is not asked for
    assert hub_files("s", REPO, revision, PATTERNS) == snapshot_download(revision)


def test_an_incomplete_or_absent_snapshot_is_snapshot_download_s_error(hub):
    listing(hub, ["config.json", "model.safetensors", "model-2.safetensors"])
    with pytest.raises(CultureboardError, match="scorer s: org/model@main is not in the local Hugging Face cache"):
        hub_files("s", REPO, "main", PATTERNS)
    with pytest.raises(CultureboardError, match="scorer s: org/other@main is not in the local Hugging Face cache"):
        hub_files("s", "org/other", "main", PATTERNS)


def test_finding_a_cached_snapshot_imports_no_downloader(hub):
    script = ("import sys\nfrom cultureboard.evaluators.engine.scorers import hub_files\n"
              f"print(hub_files('s', {REPO!r}, 'main', {PATTERNS!r})[1])\n"
              "print(sorted(m for m in sys.modules if m in ('huggingface_hub.hf_api', "
              "'huggingface_hub._snapshot_download')))")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300,
                          env={**os.environ, "HF_HUB_OFFLINE": "1", "HF_HUB_CACHE": str(hub)})
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split() == [COMMIT, "[]"]
