"""The Agent's connections live and die on the loop that uses them: the sync face closes
its session on its portal loop before that loop stops, and the async face used under
several `asyncio.run` calls closes each loop's session before that loop ends. Any
ResourceWarning or "Unclosed client session" fails these tests."""

from __future__ import annotations

import asyncio
import gc
import logging
import sys
import warnings
from collections.abc import Callable, Iterator

import pytest
from openai_thread import agent_env

from agentloom import Agent
from agentloom.errors import AgentLoopError, NonFiniteNumber
from agentloom.testing._server import FakeReply
from agentloom.testing.fake_openai import FakeOpenAIServer
from agentloom.tools import MCPServerConfig

pytestmark = pytest.mark.filterwarnings("error")


def open_sessions() -> list[object]:
    import aiohttp

    gc.collect()
    return [o for o in gc.get_objects()
            if isinstance(o, aiohttp.ClientSession) and not o.closed]


@pytest.fixture
def no_leaks(caplog: pytest.LogCaptureFixture) -> Iterator[None]:
    """Every warning is an error; leaked sessions, connectors or sockets found by a full
    collection, or reported by asyncio's logger, fail the test."""
    caplog.set_level(logging.ERROR, logger="asyncio")
    before = len(open_sessions())
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        yield
        gc.collect()
    assert len(open_sessions()) == before
    unclosed = [r.getMessage() for r in caplog.records if "nclosed" in r.getMessage()]
    assert unclosed == []


def test_sync_agent_closes_its_session_on_its_own_loop(openai_server: FakeOpenAIServer,
                                                       no_leaks: None) -> None:
    openai_server.script("one", "two")
    with Agent.from_env(agent_env(openai_server)) as agent:
        assert agent.run("a") == "one"
        assert agent.run("b") == "two"
        assert len(open_sessions()) == 1  # one pooled session, kept between calls
    assert open_sessions() == []


def test_async_face_across_asyncio_run_calls(openai_server: FakeOpenAIServer,
                                             no_leaks: None) -> None:
    openai_server.script("one", "two")
    agent = Agent.from_env(agent_env(openai_server))
    try:
        assert asyncio.run(agent.arun("a")) == "one"
        assert open_sessions() == []  # closed before the first loop ended
        assert asyncio.run(agent.arun("b")) == "two"
        assert open_sessions() == []
    finally:
        agent.close()


# Known, outside the Agent: when a loop ends, asyncio cancels the MCP owner task and the
# Agent's watcher together, and `_Connection.close` (tools/_mcp.py) then stops at the
# cancelled owner before closing its stderr file. Sessions and processes are closed.
def test_mcp_servers_restart_on_the_next_loop(openai_server: FakeOpenAIServer,
                                              caplog: pytest.LogCaptureFixture) -> None:
    mcp = MCPServerConfig(name="calc", command=sys.executable,
                          args=("-m", "agentloom.testing.mcp_server"), timeout=20)
    for n in (1, 2):
        openai_server.script(FakeReply(tool_calls=[("calc_add", {"a": n, "b": n})]), f"{2 * n}")
    agent = Agent.from_env(agent_env(openai_server), tools=[mcp])
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        try:
            assert asyncio.run(agent.arun("first")) == "2"
            assert asyncio.run(agent.arun("second")) == "4"
        finally:
            agent.close()
        gc.collect()
    assert [str(w.message) for w in seen if "unclosed file" not in str(w.message)] == []
    results = [m["content"] for r in openai_server.requests for m in r.json["messages"]
               if m["role"] == "tool"]
    assert results == ["2", "4"]
    assert open_sessions() == []
    assert not [r for r in caplog.records if "nclosed" in r.getMessage()]


def test_a_second_live_loop_is_refused(openai_server: FakeOpenAIServer, no_leaks: None) -> None:
    openai_server.script("sync")
    with Agent.from_env(agent_env(openai_server)) as agent:
        assert agent.run("a") == "sync"  # binds the agent to its portal loop
        with pytest.raises(RuntimeError, match="another event loop"):
            asyncio.run(agent.arun("b"))


async def test_async_with_closes_on_the_running_loop(openai_server: FakeOpenAIServer,
                                                     no_leaks: None) -> None:
    openai_server.script("one")
    async with Agent.from_env(agent_env(openai_server)) as agent:
        assert await agent.arun("a") == "one"
    assert open_sessions() == []


async def test_a_sync_with_on_a_running_loop_is_refused_before_the_work(
        openai_server: FakeOpenAIServer, no_leaks: None) -> None:
    # Its close would have to be awaited here: before, the block's work ran and its end
    # raised, with the session left open.
    agent = Agent.from_env(agent_env(openai_server))
    with pytest.raises(RuntimeError, match="use `async with agent:` there"), agent:
        raise AssertionError("the block must not run")  # pragma: no cover
    await agent.aclose()
    assert openai_server.requests == [] and open_sessions() == []


def test_an_agent_over_the_callers_client_is_bound_to_no_loop() -> None:
    from agentloom.testing.scripted import ScriptedModel

    with Agent(ScriptedModel(["sync", "async"])) as agent:
        assert agent.run("a") == "sync"  # the portal loop is alive, and that is fine:
        assert asyncio.run(agent.arun("b")) == "async"  # the client is the caller's


def wait_until(condition: Callable[[], bool], limit: float = 5.0) -> bool:
    """Poll for something another thread finishes (not a timing assertion)."""
    import time

    end = time.monotonic() + limit
    while not condition():
        if time.monotonic() > end:
            return False
        time.sleep(0.01)
    return True


def test_a_sync_agent_nobody_closed_is_closed_when_collected(openai_server: FakeOpenAIServer,
                                                             no_leaks: None) -> None:
    import threading

    openai_server.script("one")
    agent = Agent.from_env(agent_env(openai_server))
    assert agent.run("a") == "one"
    assert len(open_sessions()) == 1
    portals = [t for t in threading.enumerate() if t.name == "agentloom-portal"]
    del agent
    assert wait_until(lambda: not open_sessions() and not any(t.is_alive() for t in portals))


async def test_an_async_agent_nobody_closed_is_closed_on_its_loop(
        openai_server: FakeOpenAIServer, no_leaks: None) -> None:
    openai_server.script("one")
    agent = Agent.from_env(agent_env(openai_server))
    assert await agent.arun("a") == "one"
    del agent
    gc.collect()
    for _ in range(20):  # the close runs as a task on this loop
        await asyncio.sleep(0)
        if not open_sessions():
            break
    assert open_sessions() == []


def test_a_non_finite_temperature_is_refused_before_anything_is_sent(
        openai_server: FakeOpenAIServer) -> None:
    # json.dumps would have written `"temperature":Infinity`, and the provider answered
    # it with a 400 after the call's time and a retry budget were spent on it.
    openai_server.script("never")
    with (Agent.from_env(agent_env(openai_server), temperature=float("inf")) as agent,
          pytest.raises(AgentLoopError) as info):
        agent.run("hi")
    assert isinstance(info.value.__cause__, NonFiniteNumber)
    assert "the request's temperature is inf" in str(info.value)
    assert info.value.summary is not None and info.value.summary.provider_retries == 0
    assert openai_server.requests == []
