"""The environment that points an `Agent` at the `openai_server` fixture (tests/conftest.py):
a FakeOpenAIServer serving from a thread of its own, so sync and async tests reach it
alike."""

from __future__ import annotations

from agentloom.testing.fake_openai import FakeOpenAIServer


def agent_env(server: FakeOpenAIServer, **extra: str) -> dict[str, str]:
    """`Agent.from_env`'s mapping for `server`, with gpt-4o-mini as the model unless
    `extra` says otherwise."""
    return {"OPENAI_API_KEY": "k", "OPENAI_BASE_URL": server.openai_base_url,
            "AGENTLOOM_MODEL": "gpt-4o-mini", **extra}
