"""The environment that points an `Agent` at the `openai_server` fixture (tests/conftest.py):
a FakeOpenAIServer serving from a thread of its own, so sync and async tests reach it
alike; and `cli_serving`, the same for a CLI test with a responder of its own."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from agentloom.testing.fake_openai import FakeOpenAIServer


def agent_env(server: FakeOpenAIServer, **extra: str) -> dict[str, str]:
    """`Agent.from_env`'s mapping for `server`, with gpt-4o-mini as the model unless
    `extra` says otherwise."""
    return {"OPENAI_API_KEY": "k", "OPENAI_BASE_URL": server.openai_base_url,
            "AGENTLOOM_MODEL": "gpt-4o-mini", **extra}


@contextmanager
def cli_serving(monkeypatch: pytest.MonkeyPatch, cwd: Path,
                responder: Any) -> Iterator[FakeOpenAIServer]:
    """A FakeOpenAIServer answering with `responder`, and the environment of a CLI test
    run in `cwd` pointed at it (`main([...])` in process)."""
    server = FakeOpenAIServer(responder=responder)
    server.start_in_thread()
    monkeypatch.chdir(cwd)
    monkeypatch.setenv("OPENAI_API_KEY", "test-key")
    monkeypatch.setenv("OPENAI_BASE_URL", server.openai_base_url)
    try:
        yield server
    finally:
        server.stop_thread()
