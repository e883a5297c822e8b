"""An Agent's numeric settings are checked when they are given, at construction or set
later: a bad one is a ConfigError naming it before any call is paid for. Before, a
`max_tokens=-3` went to the provider, `max_tokens=0` was dropped as falsy, a
`token_budget=0` failed only after a call, and `deadline_seconds=nan` turned the
deadline off (nan compares false with every time)."""

from __future__ import annotations

import asyncio
import gc
import math
import warnings
from collections.abc import AsyncIterator
from typing import Any

import pytest

from agentloom import Agent
from agentloom.errors import ConfigError
from agentloom.testing.fake_openai import FakeOpenAIServer

BAD = [
    ("max_iterations", 0), ("max_iterations", 2.5), ("max_iterations", True),
    ("deadline_seconds", 0), ("deadline_seconds", -5), ("deadline_seconds", math.nan),
    ("deadline_seconds", math.inf), ("deadline_seconds", "60"),
    ("token_budget", 0), ("token_budget", -1), ("token_budget", 1.5),
    ("max_tokens", 0), ("max_tokens", -3), ("max_tokens", 10.0),
    ("max_reasks", -1), ("tool_concurrency", 0),
]


@pytest.fixture
async def env() -> AsyncIterator[dict[str, str]]:
    async with FakeOpenAIServer() as server:
        yield {"OPENAI_API_KEY": "sk", "OPENAI_BASE_URL": server.openai_base_url,
               "AGENTLOOM_MODEL": "gpt-4o-mini"}
        assert server.requests == []  # nothing reached the provider


@pytest.mark.parametrize(("name", "value"), BAD)
async def test_a_bad_setting_is_refused_when_the_agent_is_made(
        env: dict[str, str], name: str, value: Any) -> None:
    with pytest.raises(ConfigError, match=f"^Agent {name} must be"):
        Agent.from_env(env, **{name: value})


@pytest.mark.parametrize(("name", "value"), BAD)
async def test_a_bad_setting_is_refused_when_set_later_and_the_old_one_stays(
        env: dict[str, str], name: str, value: Any) -> None:
    async with Agent.from_env(env) as agent:
        before = getattr(agent, name)
        with pytest.raises(ConfigError, match=f"^Agent {name} must be"):
            setattr(agent, name, value)
        assert getattr(agent, name) == before


async def test_the_edges_of_each_range_are_taken(env: dict[str, str]) -> None:
    async with Agent.from_env(env, max_iterations=1, deadline_seconds=0.001, token_budget=1,
                              temperature=0, max_tokens=1, max_reasks=0,
                              tool_concurrency=1) as agent:
        assert (agent.max_tokens, agent.token_budget, agent.temperature) == (1, 1, 0)
    async with Agent.from_env(env, deadline_seconds=None, token_budget=None,
                              temperature=None, max_tokens=None) as agent:
        assert agent.deadline_seconds is None and agent.max_tokens is None


async def test_an_agent_that_fails_to_be_made_in_a_running_loop_closes_its_runtime(
        env: dict[str, str]) -> None:
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        with pytest.raises(ConfigError):
            Agent.from_env(env, max_tokens=0)
        for _ in range(3):
            await asyncio.sleep(0)  # the close runs on this loop
        gc.collect()
    # Before: `asyncio.run` inside the loop refused, and the close was never awaited.
    assert [str(w.message) for w in seen if issubclass(w.category, RuntimeWarning)] == []
