"""The environment that points an `Agent` at the `openai_server` fixture (tests/conftest.py):
a FakeOpenAIServer serving from a thread of its own, so sync and async tests reach it
alike; `cli_serving`, the same for a CLI test with a responder of its own; and `Flaky`, a
responder that refuses some prompts until told to stop."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from agentloom.testing._server import FakeError, FakeReply
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


class Flaky:
    """Refuses (HTTP 400) every prompt starting with `b` while `failing` is set, and
    answers the others "done <prompt>"; `prompts` are the prompts asked, in order."""

    def __init__(self) -> None:
        self.failing = True
        self.prompts: list[str] = []

    def __call__(self, body: dict[str, Any]) -> FakeReply | FakeError:
        prompt = str(body["messages"][-1]["content"])
        self.prompts.append(prompt)
        if self.failing and prompt.startswith("b"):
            return FakeError(status=400, body="not today")
        return FakeReply(text="done " + prompt)
