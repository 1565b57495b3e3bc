"""Shared pytest fixtures."""

from __future__ import annotations

import os

import pytest

# Model hubs are unreachable here: fail fast instead of waiting on each hub call.
os.environ["HF_HUB_OFFLINE"] = "1"

from llm_server import ScriptedLLMServer


@pytest.fixture
def llm_server():
    """A scripted OpenAI-protocol chat server on 127.0.0.1 (see tests/llm_server.py), stopped afterwards."""
    with ScriptedLLMServer() as server:
        yield server
