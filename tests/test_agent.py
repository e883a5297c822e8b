"""The Agent API: return shapes, sync and async faces, summaries on success and failure,
observers (raising, concurrent), tools as plain functions, output schemas."""

from __future__ import annotations

import asyncio
import logging
import threading

import pytest
from pydantic import BaseModel

from agentloom import Agent, ConversationResult, ConversationSummary, NullObserver
from agentloom.errors import AgentLoopError, ConfigError, LoopBudgetExceeded, ProviderError
from agentloom.loop import Transcript, current_conversation
from agentloom.messages import Message, ModelRequest
from agentloom.testing.scripted import FunctionModel, ScriptedModel, tool_call


class Latest(NullObserver):
    def __init__(self) -> None:
        self.latest: ConversationSummary | None = None
        self.ends = 0

    def on_conversation_end(self, summary: ConversationSummary) -> None:
        self.latest = summary
        self.ends += 1


def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


def test_run_returns_text_and_run_result_the_summary() -> None:
    obs = Latest()
    with Agent(ScriptedModel(["ready", "ready"]), observer=obs, name="demo") as agent:
        assert agent.run("Reply with exactly ready.") == "ready"
        result = agent.run_result("Reply with exactly ready.", correlation_id="example-1")
    assert isinstance(result, ConversationResult)
    assert result.text == "ready"
    assert obs.latest == result.summary and obs.ends == 2
    s = result.summary
    assert s.status == "completed" and s.correlation_id == "example-1"
    assert s.agent_name == "demo" and s.iterations == 1 and s.tool_calls == {}


def test_converse_and_run_conversation_return_transcripts() -> None:
    model = ScriptedModel(["first", "second", "third"])
    with Agent(model, system_prompt="Be brief.") as agent:
        t = agent.converse([Message.user("one")])
        assert isinstance(t, Transcript)
        assert [m.role for m in t] == ["system", "user", "assistant"] and t.text == "first"
        t2 = agent.run_conversation(t, "two")
        assert [m.role for m in t2] == ["system", "user", "assistant", "user", "assistant"]
        assert t2.text == "second" and t2[:3] == t
        r = agent.run_conversation_result(Transcript.from_json(t2.to_json()), "three")
        assert r.text == "third" and len(r.transcript) == 7
    # the system prompt is stored once, not repeated
    assert [m.role for m in model.requests[2].messages].count("system") == 1


async def test_async_twins() -> None:
    async with Agent(ScriptedModel(["a", "b", "c", "d"])) as agent:
        assert await agent.arun("x") == "a"
        assert (await agent.arun_result("x")).text == "b"
        assert (await agent.aconverse([Message.user("x")])).text == "c"
        assert (await agent.arun_conversation_result([Message.user("x")])).text == "d"


async def test_sync_face_inside_a_running_loop_is_refused() -> None:
    agent = Agent(ScriptedModel(["a"]))
    with pytest.raises(RuntimeError, match="arun_result"):
        agent.run_result("x")
    await agent.aclose()


def test_sync_face_from_several_threads() -> None:
    async def answer(request: ModelRequest) -> str:
        await asyncio.sleep(0)
        return "echo " + request.messages[-1].text

    results: dict[int, str] = {}
    with Agent(FunctionModel(answer), model="m") as agent:
        def worker(i: int) -> None:
            results[i] = agent.run(f"q{i}")

        threads = [threading.Thread(target=worker, args=(i,)) for i in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    assert results == {i: f"echo q{i}" for i in range(4)}


def test_tools_as_plain_and_decorated_functions() -> None:
    from agentloom.tools import tool

    @tool
    def shout(text: str) -> str:
        """Upper-case a text."""
        return text.upper()

    model = ScriptedModel([[tool_call("add", {"a": 2, "b": 3}, id="1"),
                            tool_call("shout", {"text": "hi"}, id="2")], "5 HI"])
    with Agent(model, tools=[add, shout]) as agent:
        result = agent.run_result("go")
    assert {t.name for t in model.requests[0].tools} == {"add", "shout"}
    results = [p.content for p in model.requests[1].messages[-1].parts]  # type: ignore[union-attr]
    assert results[0] == "5" and "HI" in results[1]
    assert result.summary.tool_calls == {"add": 1, "shout": 1}


def test_failure_raises_agent_loop_error_with_summary_and_observer_gets_it() -> None:
    obs = Latest()
    err = ProviderError("nope", provider="openai", model="m", status=401,
                        request_sent=True)
    with Agent(ScriptedModel([err]), observer=obs) as agent, \
            pytest.raises(AgentLoopError) as info:
        agent.run_result("x", correlation_id="c")
    assert info.value.__cause__ is err
    s = info.value.summary
    assert s is not None and s == obs.latest and obs.ends == 1
    assert s.status == "provider_error" and s.provider_status_code == 401
    assert s.correlation_id == "c" and s.iterations == 1


def test_iteration_limit_raises_budget_error() -> None:
    model = ScriptedModel([[tool_call("add", {"a": 1, "b": 1})]] * 3)
    with Agent(model, tools=[add], max_iterations=3) as agent, \
            pytest.raises(LoopBudgetExceeded) as info:
        agent.run("loop forever")
    assert info.value.kind == "iterations" and info.value.summary is not None
    assert info.value.summary.status.budget_exhausted


def test_raising_observer_hides_neither_result_nor_error(caplog: pytest.LogCaptureFixture
                                                          ) -> None:
    class Broken(NullObserver):
        def on_request(self, request, iteration):  # type: ignore[no-untyped-def]
            raise RuntimeError("observer bug")

        def on_conversation_end(self, summary):  # type: ignore[no-untyped-def]
            raise RuntimeError("observer bug at end")

    caplog.set_level(logging.ERROR, logger="agentloom.observer")
    with Agent(ScriptedModel(["ok", ValueError("model bug")]), observer=Broken()) as agent:
        assert agent.run("x") == "ok"
        with pytest.raises(AgentLoopError) as info:
            agent.run("y")
    assert isinstance(info.value.__cause__, ValueError)
    assert sum("observer" in r.getMessage() for r in caplog.records) >= 3


async def test_concurrent_conversations_on_one_agent_and_one_observer() -> None:
    class PerConversation(NullObserver):
        def __init__(self) -> None:
            self.requests: dict[str, int] = {}
            self.tools: dict[str, list[str]] = {}
            self.ends: dict[str, ConversationSummary] = {}

        def on_request(self, request, iteration):  # type: ignore[no-untyped-def]
            cid = current_conversation().conversation_id  # type: ignore[union-attr]
            self.requests[cid] = self.requests.get(cid, 0) + 1

        def on_tool_end(self, call, result, duration_seconds):  # type: ignore[no-untyped-def]
            cid = current_conversation().conversation_id  # type: ignore[union-attr]
            self.tools.setdefault(cid, []).append(result.content)

        def on_conversation_end(self, summary):  # type: ignore[no-untyped-def]
            self.ends[summary.conversation_id] = summary

    async def answer(request: ModelRequest) -> object:
        await asyncio.sleep(0)
        n = int(request.messages[0].text)
        if request.messages[-1].role == "user":
            return [tool_call("add", {"a": n, "b": n})]
        return request.messages[-1].parts[0].content  # type: ignore[union-attr]

    obs = PerConversation()
    async with Agent(FunctionModel(answer), model="m", tools=[add], observer=obs) as agent:
        results = await asyncio.gather(*(
            agent.arun_result(str(i), conversation_id=f"conv-{i}") for i in range(8)))
    for i, r in enumerate(results):
        cid = f"conv-{i}"
        assert r.text == str(2 * i) and r.summary.conversation_id == cid
        assert obs.requests[cid] == 2 and obs.tools[cid] == [str(2 * i)]
        assert obs.ends[cid] == r.summary


def test_output_schema_validates_and_reasks() -> None:
    class City(BaseModel):
        name: str
        population: int

    model = ScriptedModel(['{"name": "Oslo"}', 'Here: {"name": "Oslo", "population": 700000}'])
    with Agent(model, output_schema=City) as agent:
        result = agent.run_result("Largest city in Norway?")
    assert result.output == City(name="Oslo", population=700000)
    assert model.requests[0].response_format is not None
    assert result.summary.iterations == 2


def test_bad_construction() -> None:
    class NoModel:
        async def complete(self, request, **kw):  # type: ignore[no-untyped-def]
            raise AssertionError

    with pytest.raises(ConfigError, match="model"):
        Agent(NoModel())  # type: ignore[arg-type]
    with pytest.raises(ConfigError):
        Agent(ScriptedModel([]), max_iterations=0)


def test_from_env_closes_what_it_opened() -> None:
    from agentloom.testing.fake_openai import FakeOpenAIServer

    server = FakeOpenAIServer().start_in_thread()
    try:
        server.script("ready")
        env = {"OPENAI_API_KEY": "k", "OPENAI_BASE_URL": server.base_url + "/v1",
               "AGENTLOOM_MODEL": "gpt-5.1"}
        with Agent.from_env(env, tools=[]) as agent:
            assert agent.run("Reply with exactly ready.") == "ready"
            runtime = agent._res.runtime
            transport = runtime.transport
            assert transport._session is not None and not transport._session.closed
        assert agent._res.runtime is None and runtime._transport is None
    finally:
        server.stop_thread()
