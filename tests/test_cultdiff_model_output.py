"""The CultDiff-S model folder as an output: its own kind ("model") in the atomic markers, so that only a new
model replaces it, and training leaves torch's deterministic-algorithms setting as the caller had it."""

from __future__ import annotations

import dataclasses
import shutil

import pytest
import torch
from cultureboard.evaluators.families.cultdiff import core
from cultureboard.evaluators.families.cultdiff.train import train_cultdiff_s
from test_cultdiff_train import toy  # noqa: F401 (the module's trained toy model, its data and config)

from cultureboard.atomic import MARKER
from cultureboard.errors import CultureboardError

LEGACY_MARKER = "This folder was written by cultureboard and may be replaced by a rerun.\n"


def train(toy, out, **changes):  # noqa: F811
    config = dataclasses.replace(toy["config"], epochs=1, **changes)
    return train_cultdiff_s(toy["ratings"], toy["dataset"], out, images=[toy["root"] / "generated"], config=config)


def test_the_model_folder_is_an_output_of_kind_model(toy, tmp_path):  # noqa: F811
    assert (toy["model"] / MARKER).read_text().startswith("cultureboard output: model\n")
    retrained = shutil.copytree(toy["model"], tmp_path / "model")
    train(toy, retrained)  # a model is replaced by a new model
    older = shutil.copytree(toy["model"], tmp_path / "older-model")
    (older / MARKER).write_text(LEGACY_MARKER)  # written before outputs named their kind, with a model's files
    train(toy, older)
    assert (older / MARKER).read_text().startswith("cultureboard output: model\n")


@pytest.mark.parametrize("other", ["dataset", "legacy results"])
def test_another_kind_of_output_is_never_replaced_by_a_model(toy, tmp_path, other):  # noqa: F811
    if other == "dataset":
        target, problem = toy["dataset"], "holds a dataset (cultureboard build or import), not a trained model"
    else:  # an older output without a kind: replaced only if it holds a model's files
        target = tmp_path / "results"
        target.mkdir()
        (target / MARKER).write_text(LEGACY_MARKER)
        (target / "summary.json").write_text("{}")
        (target / "scores.parquet").write_bytes(b"")
        problem = "holds what looks like one submission's results (cultureboard evaluate) (written by an older"
    before = sorted(p.name for p in target.iterdir())
    with pytest.raises(CultureboardError, match="will not be replaced") as caught:
        train(toy, target)
    assert problem in caught.value.message
    assert sorted(p.name for p in target.iterdir()) == before


@pytest.mark.parametrize("enabled, warn_only", [(False, False), (True, False)])
def test_training_restores_the_callers_deterministic_setting(toy, tmp_path, monkeypatch, enabled, warn_only):  # noqa: F811
    def setting():
        return torch.are_deterministic_algorithms_enabled(), torch.is_deterministic_algorithms_warn_only_enabled()

    outside = setting()
    seen = []
    loss = core.weighted_contrastive_loss
    monkeypatch.setattr(core, "weighted_contrastive_loss", lambda *a: (seen.append(setting()), loss(*a))[1])
    try:
        torch.use_deterministic_algorithms(enabled, warn_only=warn_only)
        train(toy, tmp_path / "model")
        assert seen and set(seen) == {(True, True)}, "training runs with deterministic algorithms (warn-only)"
        assert setting() == (enabled, warn_only)

        def broken(*_):
            raise RuntimeError("a failure mid-training")

        monkeypatch.setattr(core, "weighted_contrastive_loss", broken)
        with pytest.raises(RuntimeError, match="mid-training"):
            train(toy, tmp_path / "never")
        assert setting() == (enabled, warn_only) and not (tmp_path / "never").exists()
    finally:
        torch.use_deterministic_algorithms(outside[0], warn_only=outside[1])
