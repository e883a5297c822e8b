"""`Agent.from_env(mapping, tools=[...])` with every kind of tool, against the fake OpenAI
server through OPENAI_BASE_URL: @tool and plain functions, built-ins by name (under the
Agent's sandbox) and as Tool objects, and MCP servers opened and closed with the Agent."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest
from openai_thread import agent_env

from agentloom import Agent
from agentloom.errors import ConfigError
from agentloom.loop._tool_turn import MAX_TOOL_CALLS_PER_TURN
from agentloom.testing._server import FakeReply
from agentloom.testing.fake_openai import FakeOpenAIServer
from agentloom.tools import MCPServerConfig, MCPToolSource, SandboxPolicy, builtin_tools, tool

MCP = MCPServerConfig(name="calc", command=sys.executable,
                      args=("-m", "agentloom.testing.mcp_server"), timeout=20)


def tool_names(body: dict[str, Any]) -> set[str]:
    return {t["function"]["name"] for t in body.get("tools", [])}


def tool_results(body: dict[str, Any]) -> dict[str, str]:
    """tool_call_id -> content of the tool messages in a chat completions body."""
    return {m["tool_call_id"]: m["content"] for m in body["messages"] if m["role"] == "tool"}


def calls(*pairs: tuple[str, dict[str, Any]]) -> FakeReply:
    return FakeReply(tool_calls=list(pairs))


def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@tool
def shout(text: str) -> str:
    """Upper-case a text."""
    return text.upper()


def test_plain_and_decorated_functions(openai_server: FakeOpenAIServer) -> None:
    openai_server.script(calls(("add", {"a": 2, "b": 3}), ("shout", {"text": "hi"})), "5 HI")
    with Agent.from_env(agent_env(openai_server), tools=[add, shout]) as agent:
        result = agent.run_result("go")
    first, second = (r.json for r in openai_server.requests)
    assert tool_names(first) == {"add", "shout"}
    params = {t["function"]["name"]: t["function"]["parameters"] for t in first["tools"]}
    assert params["add"]["properties"] == {"a": {"type": "integer"}, "b": {"type": "integer"}}
    assert sorted(tool_results(second).values()) == ["5", "HI"]
    assert result.text == "5 HI" and result.summary.tool_calls == {"add": 1, "shout": 1}


def test_builtins_by_name_run_under_the_agents_sandbox(openai_server: FakeOpenAIServer,
                                                       tmp_path: Path) -> None:
    (tmp_path / "note.txt").write_text("the secret is 42")
    (tmp_path / "hidden").mkdir()
    (tmp_path / "hidden" / "other.txt").write_text("nope")
    policy = SandboxPolicy(readable_paths=(str(tmp_path / "note.txt"),))
    openai_server.script(
        calls(("file_read", {"path": str(tmp_path / "note.txt")}),
              ("file_read", {"path": str(tmp_path / "hidden" / "other.txt")})),
        "42")
    with Agent.from_env(agent_env(openai_server), tools=["file_read"], sandbox=policy) as agent:
        result = agent.run_result("what is the secret?")
    assert tool_names(openai_server.requests[0].json) == {"file_read"}
    results = list(tool_results(openai_server.requests[1].json).values())
    assert "the secret is 42" in results[0]
    assert "nope" not in results[1] and "readable_paths" in results[1]  # refused, says why
    assert result.summary.tool_errors == {"file_read": 1}


def test_builtin_by_name_without_a_sandbox_allows_nothing(openai_server: FakeOpenAIServer,
                                                          tmp_path: Path) -> None:
    (tmp_path / "note.txt").write_text("private")
    openai_server.script(calls(("file_read", {"path": str(tmp_path / "note.txt")})), "done")
    with Agent.from_env(agent_env(openai_server), tools=["file_read"]) as agent:
        agent.run("read it")
    (content,) = tool_results(openai_server.requests[1].json).values()
    assert "private" not in content


def test_http_request_by_name_uses_the_runtimes_transport(openai_server: FakeOpenAIServer) -> None:
    port = openai_server.base_url.rsplit(":", 1)[1]
    policy = SandboxPolicy(allow_network=True, allowed_addresses=(f"127.0.0.1:{port}",))
    openai_server.script(calls(("http_request", {"url": openai_server.base_url + "/v1/models",
                                          "method": "GET"})), "listed")
    with Agent.from_env(agent_env(openai_server), tools=["http_request"], sandbox=policy) as agent:
        tool_obj = agent.tools.get("http_request")  # type: ignore[union-attr]
        assert tool_obj.transport is agent._res.runtime.transport  # type: ignore[union-attr]
        assert agent.run("list the models") == "listed"
    (content,) = tool_results(openai_server.requests[-1].json).values()
    assert json.loads(content)["data"][0]["id"] == "gpt-4o-mini"


def test_tool_objects_from_builtin_tools(openai_server: FakeOpenAIServer, tmp_path: Path) -> None:
    policy = SandboxPolicy(allowed_paths=(str(tmp_path),))
    writer = next(t for t in builtin_tools(policy=policy) if t.name == "file_write")
    target = tmp_path / "out.txt"
    openai_server.script(calls(("file_write", {"path": str(target), "content": "written"})), "ok")
    with Agent.from_env(agent_env(openai_server), tools=[writer, add]) as agent:
        assert agent.run("write it") == "ok"
    assert tool_names(openai_server.requests[0].json) == {"file_write", "add"}
    assert target.read_text() == "written"


def test_unknown_tool_kinds_are_refused_with_the_choices() -> None:
    server_env = {"OPENAI_API_KEY": "k", "OPENAI_BASE_URL": "http://127.0.0.1:9/v1"}
    with pytest.raises(ConfigError, match="file_read") as info:
        Agent.from_env(server_env, tools=["file_raed"])
    assert "file_raed" in str(info.value)
    with pytest.raises(ConfigError, match="not a tool"):
        Agent.from_env(server_env, tools=[42])


def test_mcp_source_opens_and_closes_with_the_sync_agent(openai_server: FakeOpenAIServer) -> None:
    source = MCPToolSource([MCP])
    openai_server.script(calls(("calc_add", {"a": 20, "b": 22})), "42")
    with Agent.from_env(agent_env(openai_server), tools=[source, shout]) as agent:
        # Opened at `with`, before any run: the tools are known.
        assert {t.name for t in source.tools} >= {"calc.add", "calc.echo"}
        result = agent.run_result("add them")
    assert tool_names(openai_server.requests[0].json) >= {"calc_add", "calc_echo", "shout"}
    (content,) = tool_results(openai_server.requests[1].json).values()
    assert content == "42" and result.summary.tool_calls == {"calc.add": 1}  # as declared
    assert source.tools == []  # closed with the agent


async def test_mcp_config_is_opened_on_first_async_run(openai_server: FakeOpenAIServer) -> None:
    openai_server.script(calls(("calc_echo", {"text": "hello"})), "said hello")
    agent = Agent.from_env(agent_env(openai_server), tools=[MCP])
    try:
        assert agent.tools is None  # nothing opened at construction
        assert await agent.arun("echo hello") == "said hello"
        (content,) = tool_results(openai_server.requests[1].json).values()
        assert content == "hello"
        (source,) = agent._res.plan.sources
        assert source.tools
    finally:
        await agent.aclose()
    assert source.tools == []


def test_tool_results_json_encoded(openai_server: FakeOpenAIServer) -> None:
    @tool
    def lookup(city: str) -> dict[str, Any]:
        """Facts about a city."""
        return {"city": city, "population": 700000}

    openai_server.script(calls(("lookup", {"city": "Oslo"})), "done")
    with Agent.from_env(agent_env(openai_server), tools=[lookup]) as agent:
        agent.run("facts")
    (content,) = tool_results(openai_server.requests[1].json).values()
    assert json.loads(content) == {"city": "Oslo", "population": 700000}


def test_a_huge_tool_result_reaches_the_model_cut_with_a_note(
        openai_server: FakeOpenAIServer) -> None:
    # A Python tool that returns a 5 MB file would send it whole to the model (which
    # refuses it, or bills it) and into every checkpoint; an error text likewise.
    from agentloom.tools.contracts import MAX_RESULT_BYTES

    @tool
    def read_log(name: str) -> str:
        """Read a log."""
        return "é" * 2_500_000  # 5 MB of UTF-8

    @tool
    def explode(name: str) -> str:
        """Fail loudly."""
        raise RuntimeError("x" * 3_000_000)

    openai_server.script(calls(("read_log", {"name": "app"}), ("explode", {"name": "a"})),
                         "read it")
    with Agent.from_env(agent_env(openai_server), tools=[read_log, explode]) as agent:
        agent.run("read the log")
    log, error = tool_results(openai_server.requests[1].json).values()
    note = f"\n[output truncated at {MAX_RESULT_BYTES} bytes]"
    assert log == "é" * (MAX_RESULT_BYTES // 2) + note
    assert error.startswith("RuntimeError: xxx") and error.endswith(note)
    assert len(error.encode()) == MAX_RESULT_BYTES + len(note)


def test_a_reply_asking_for_too_many_calls_runs_the_first_128_and_refuses_the_rest(
        openai_server: FakeOpenAIServer) -> None:
    ran: list[int] = []

    def note(n: int) -> str:
        """Note a number."""
        ran.append(n)
        return "ok"

    openai_server.script(calls(*[("note", {"n": i}) for i in range(130)]), "done")
    with Agent.from_env(agent_env(openai_server), tools=[note]) as agent:
        result = agent.run_result("go")
    assert sorted(ran) == list(range(MAX_TOOL_CALLS_PER_TURN))  # 128 ran, 2 never did
    answers = list(tool_results(openai_server.requests[1].json).values())
    assert len(answers) == 130  # every call has its result, as the provider requires
    assert answers[:128] == ["ok"] * 128
    assert answers[128:] == ["not run: the reply asked for 130 tool calls, and at most 128 "
                             "run per turn; ask for this one again"] * 2
    assert result.text == "done" and result.summary.tool_calls == {"note": 128}
