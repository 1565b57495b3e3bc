"""Shared pytest fixtures."""

from __future__ import annotations

import atexit
import os
import shutil
import tempfile

import pytest

# Model hubs are unreachable here: fail fast instead of waiting on each hub call.
os.environ["HF_HUB_OFFLINE"] = "1"

# One datasets cache for the whole session, in a temporary folder removed at exit: the tests never write
# into the user's ~/.cache/huggingface, and an entry already there cannot change what they load. Set
# before anything imports datasets (which reads HF_DATASETS_CACHE once, at import).
_DATASETS_CACHE = tempfile.mkdtemp(prefix="cultureboard-tests-datasets-")
os.environ["HF_DATASETS_CACHE"] = _DATASETS_CACHE
atexit.register(shutil.rmtree, _DATASETS_CACHE, ignore_errors=True)

from llm_server import ScriptedLLMServer


@pytest.fixture
def llm_server():
    """A scripted OpenAI-protocol chat server on 127.0.0.1 (see tests/llm_server.py), stopped afterwards."""
    with ScriptedLLMServer() as server:
        yield server


@pytest.fixture(scope="session")
def tiny_scorers(tmp_path_factory):
    """The scorer config pointing every registry name at its tiny random stand-in (built once per session)."""
    from cultureboard.evaluators.engine.tiny_scorers import TINY_CONFIG, save_tiny_scorers

    root = tmp_path_factory.mktemp("tiny-scorers")
    save_tiny_scorers(root)
    return root / TINY_CONFIG


#: Fixtures that run a model (tiny scorers, a tiny generator or language model, training), the demo, a browser or a
#: whole site build: a test that uses one, directly or through another fixture, is in the slow tier.
SLOW_FIXTURES = {"tiny_scorers", "demo_runs", "browser", "watched", "site", "tiny", "toy", "tiny_lm", "vlm",
                 "lpips_scorer", "siglip", "scorer", "built", "outputs", "scored", "study", "generated"}
#: Modules whose every test is slow that way (generation, training, the browser, site worlds).
SLOW_MODULES = {"test_site_browser", "test_generate", "test_cultdiff_train", "test_cultdiff_model_output",
                "test_site", "test_trust_site", "test_disparity_site", "test_build"}


def pytest_collection_modifyitems(items):
    """Mark the slow tier (``pytest -m "not slow"`` is the fast edit-test loop; CI runs everything)."""
    for item in items:
        if SLOW_FIXTURES & set(item.fixturenames) or item.module.__name__ in SLOW_MODULES:
            item.add_marker(pytest.mark.slow)
