"""Shared pytest fixtures."""

from __future__ import annotations

import pytest

from llm_server import ScriptedLLMServer


@pytest.fixture
def llm_server():
    """A scripted OpenAI-protocol chat server on 127.0.0.1 (see tests/llm_server.py), stopped afterwards."""
    with ScriptedLLMServer() as server:
        yield server
