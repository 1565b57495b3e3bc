"""The evaluators' public names import from the package root, and stages that run a model choose their device
through the one shared chooser (cultureboard.device)."""

from __future__ import annotations

import numpy as np
import pytest

from cultureboard.errors import CultureboardError


def test_public_names_of_the_evaluators():
    from cultureboard.evaluators import evaluate, qvendi_score, vendi_score
    from cultureboard.evaluators.engine.evaluate import evaluate as engine_evaluate
    from cultureboard.evaluators.families import vendi

    assert evaluate is engine_evaluate and vendi_score is vendi.vendi_score and qvendi_score is vendi.qvendi_score
    assert vendi_score(np.eye(2)) == pytest.approx(2.0)  # two orthogonal items: two distinct ones


def test_the_local_llm_backend_chooses_its_device_with_the_shared_chooser():
    from cultureboard.builder.llm_backends import TransformersBackend

    backend = TransformersBackend("no-model-needed", device="nope")
    with pytest.raises(CultureboardError, match="'nope' is not available on this machine"):
        backend.render([{"role": "user", "content": "Is it?"}])  # fails before any model is read
