"""Tools in workflows, end to end: a model behind the fake OpenAI server calls
`http_request` (a local server the sandbox names), `file_read` (under readable_paths), a
Python tool, an MCP tool (a real server process) and a workflow function, two or more in
one reply, and answers; in process and through the CLI as a subprocess with --tools."""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web

from agentloom.routing.runtime import Runtime
from agentloom.testing._server import FakeReply
from agentloom.testing.fake_openai import FakeOpenAIServer
from agentloom.tools import load_tools_from_module
from agentloom.workflow import WorkflowProblems, arun_workflow, load_workflow

TOOLS_PY = '''\
from agentloom import tool


@tool
def word_count(text: str) -> int:
    """Count the words of a text."""
    return len(text.split())
'''

FLOW = """\
name: everything
config:
  provider: openai
  model: gpt-4o-mini
  sandbox:
    allow_network: true
    allowed_addresses: ["127.0.0.1:{port}"]
    readable_paths: ["{data}"]
mcp_servers:
  calc:
    command: {python}
    args: [-m, agentloom.testing.mcp_server]
functions:
  double_sum:
    description: Add two numbers on the MCP server and report the sum.
    args:
      a: {{type: int, description: First number.}}
      b: {{type: int, description: Second number.}}
    steps:
      - id: add
        type: tool
        tool_name: calc.add
        tool_args: {{a: "{{args.a}}", b: "{{args.b}}"}}
    return: "sum={{steps.add.output}}"
steps:
  - id: ask
    type: llm_call
    prompt: What is the answer?
    tools: [http_request, file_read, word_count]
    mcp: [calc.add]
    functions: [double_sum]
    output: answer
"""


@pytest.fixture
async def fact_server() -> AsyncIterator[int]:
    async def fact(request: web.Request) -> web.Response:
        return web.Response(text="fact: the answer is 42")

    app = web.Application()
    app.router.add_get("/fact", fact)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    yield port
    await runner.cleanup()


def _setup(tmp_path: Path, port: int) -> tuple[Path, Path, Path]:
    data = tmp_path / "data"
    data.mkdir()
    notes = data / "notes.txt"
    notes.write_text("notes: keep it short", encoding="utf-8")
    tools_py = tmp_path / "my_tools.py"
    tools_py.write_text(TOOLS_PY, encoding="utf-8")
    flow = tmp_path / "flow.yaml"
    flow.write_text(FLOW.format(port=port, data=data, python=sys.executable), encoding="utf-8")
    return flow, notes, tools_py


def _script(server: FakeOpenAIServer, port: int, notes: Path) -> None:
    server.script(
        FakeReply(tool_calls=[("http_request", {"url": f"http://127.0.0.1:{port}/fact"}),
                              ("file_read", {"path": str(notes)})]),
        FakeReply(tool_calls=[("word_count", {"text": "one two three"}),
                              ("calc_add", {"a": 2, "b": 3}),
                              ("double_sum", {"a": 20, "b": "1"})]),
        FakeReply(text="The answer is 42."),
    )


def _tool_results(body: dict[str, Any]) -> dict[str, str]:
    """tool_call_id -> content of every tool message of one chat completions request."""
    return {m["tool_call_id"]: m["content"] for m in body["messages"] if m["role"] == "tool"}


def _check_exchange(server: FakeOpenAIServer) -> None:
    assert len(server.requests) == 3
    first = server.requests[0].json
    names = sorted(t["function"]["name"] for t in first["tools"])
    assert names == ["calc_add", "double_sum", "file_read", "http_request", "word_count"]
    assert _tool_results(server.requests[1].json) == {
        "call_0": "fact: the answer is 42", "call_1": "notes: keep it short"}
    assert _tool_results(server.requests[2].json) == {
        "call_0": "3", "call_1": "5", "call_2": "sum=21"}


async def test_every_kind_of_tool_in_one_workflow(tmp_path: Path, fact_server: int) -> None:
    flow, notes, tools_py = _setup(tmp_path, fact_server)
    from agentloom.workflow.steps.tooling import base_registry

    async with FakeOpenAIServer() as server:
        assert isinstance(server, FakeOpenAIServer)
        _script(server, fact_server, notes)
        runtime = Runtime.from_env({"OPENAI_API_KEY": "sk-fake",
                                    "OPENAI_BASE_URL": server.openai_base_url})
        try:
            registry = base_registry(transport=runtime.transport,
                                     tools=load_tools_from_module(tools_py))
            result = await arun_workflow(load_workflow(flow), clients=runtime, tools=registry)
        finally:
            await runtime.aclose()
        assert result.ok, result.error
        assert result.state["answer"] == "The answer is 42."
        assert result.steps["ask"].iterations == 3
        _check_exchange(server)
        assert "double_sum" not in registry and "calc.add" not in registry  # copied, not changed


async def test_the_same_through_the_cli(tmp_path: Path, fact_server: int) -> None:
    flow, notes, tools_py = _setup(tmp_path, fact_server)
    async with FakeOpenAIServer() as server:
        assert isinstance(server, FakeOpenAIServer)
        _script(server, fact_server, notes)
        env = {"PATH": "/usr/bin:/bin", "OPENAI_API_KEY": "sk-fake",
               "OPENAI_BASE_URL": server.openai_base_url, "HOME": str(tmp_path)}
        proc = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "agentloom.cli", "run", str(flow), "--tools", str(tools_py),
            "--json", stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
            env=env, cwd=tmp_path)
        out, err = await asyncio.wait_for(proc.communicate(), 60)
        assert proc.returncode == 0, err.decode()
        result = json.loads(out)
        assert result["status"] == "success"
        assert result["state"]["answer"] == "The answer is 42."
        _check_exchange(server)


async def test_unknown_python_tool_fails_before_any_model_call(tmp_path: Path) -> None:
    flow = tmp_path / "typo.yaml"
    flow.write_text("""\
name: typo
steps:
  - id: a
    type: llm_call
    prompt: hi
    tools: [word_cuont]
""", encoding="utf-8")
    wf = load_workflow(flow)
    tools = load_tools_from_module(_write(tmp_path / "t.py", TOOLS_PY))
    from agentloom.tools import ToolRegistry

    class Refuse:
        def client(self, **kw: Any) -> Any:
            raise AssertionError("no model call may happen")

    with pytest.raises(WorkflowProblems) as info:
        await arun_workflow(wf, clients=Refuse(), tools=ToolRegistry(tools))
    (err,) = info.value.errors
    assert (err.file, err.line) == (str(flow), 6)
    assert "unknown tool 'word_cuont'; did you mean 'word_count'?" in err.message


def test_a_likely_typo_of_a_builtin_warns_at_load() -> None:
    wf = load_workflow("""\
name: w
steps:
  - {id: a, type: llm_call, prompt: hi, tools: [htp_request]}
""", filename="w.yaml")
    assert any("w.yaml:3: warning" in w and "did you mean 'http_request'" in w
               for w in wf.warnings), wf.warnings


def test_too_many_tools_for_the_limit_is_a_load_error() -> None:
    with pytest.raises(WorkflowProblems) as info:
        load_workflow("""\
name: w
config: {max_tools: 1}
steps:
  - id: a
    type: llm_call
    prompt: hi
    tools: [http_request, file_read]
""", filename="w.yaml")
    assert "2 tools declared, but config.max_tools allows 1" in str(info.value)
    assert info.value.errors[0].line == 7


async def test_vendor_tools_reach_the_provider_unchanged() -> None:
    flow = """\
name: v
config: {provider: openai, model: gpt-4o-mini}
steps:
  - id: a
    type: llm_call
    prompt: search
    vendor_tools: [{type: web_search_preview, search_context_size: low}]
"""
    async with FakeOpenAIServer() as server:
        assert isinstance(server, FakeOpenAIServer)
        server.script(FakeReply(text="found"))
        runtime = Runtime.from_env({"OPENAI_API_KEY": "k",
                                    "OPENAI_BASE_URL": server.openai_base_url})
        try:
            result = await arun_workflow(load_workflow(flow), clients=runtime)
        finally:
            await runtime.aclose()
    assert result.ok, result.error
    assert server.requests[0].json["tools"] == [
        {"type": "web_search_preview", "search_context_size": "low"}]


def test_a_vendor_tool_that_is_not_an_object_is_a_load_error() -> None:
    with pytest.raises(WorkflowProblems) as info:
        load_workflow("""\
name: v
steps:
  - id: a
    type: llm_call
    prompt: search
    vendor_tools: [[1, 2]]
""", filename="v.yaml")
    assert "vendor_tools[0]: expected an object" in str(info.value)
    assert info.value.errors[0].line == 6


def _write(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    return path


PROFILE_FLOW = """\
name: p
profiles:
  careful: {{model: m1, max_tools: {limit}, tool_error_prompt: "Profile says: retry."}}
steps:
  - id: a
    type: llm_call
    profile: careful
    prompt: hi
    tools: [file_read, file_write]
"""


def test_the_profile_limit_is_checked_at_load() -> None:
    with pytest.raises(WorkflowProblems) as info:
        load_workflow(PROFILE_FLOW.format(limit=1), filename="p.yaml")
    assert "2 tools declared, but the profile allows 1 per call" in str(info.value)
    assert info.value.errors[0].line == 9


async def test_the_profile_error_prompt_follows_a_failing_tool() -> None:
    from agentloom.messages import ModelRequest, ToolResultPart
    from agentloom.testing.scripted import FunctionModel, tool_call

    def answer(request: ModelRequest) -> Any:
        results = [p for m in request.messages for p in m.parts
                   if isinstance(p, ToolResultPart)]
        if not results:
            return [tool_call("file_read", {"path": "/etc/passwd"})]
        return results[0].content

    model = FunctionModel(answer)

    class Clients:
        def client(self, **kw: Any) -> Any:
            return model

    result = await arun_workflow(load_workflow(PROFILE_FLOW.format(limit=2)),
                                 clients=Clients())
    assert result.ok, result.error
    text = result.steps["a"].text or ""
    assert "/etc/passwd" in text and text.endswith("Profile says: retry.")


def test_declared_parameters_that_are_no_json_schema_are_a_load_error() -> None:
    with pytest.raises(WorkflowProblems) as info:
        load_workflow("""\
name: w
steps:
  - id: a
    type: llm_call
    prompt: hi
    tools:
      - name: http_request
        parameters: {type: object, properties: {url: {type: 5}}}
""", filename="w.yaml")
    (err,) = info.value.errors
    assert err.line == 7 and "not a valid JSON Schema at properties/url/type" in err.message


PLUGIN = '''\
from agentloom import tool


@tool
def shout(text: str) -> str:
    """Upper-case the text."""
    return text.upper() + "!"
'''


async def test_the_cli_loads_installed_entry_point_tools(tmp_path: Path) -> None:
    site = tmp_path / "site"
    dist = site / "shout_plugin-0.1.dist-info"
    dist.mkdir(parents=True)
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: shout-plugin\nVersion: 0.1\n")
    (dist / "entry_points.txt").write_text("[agentloom.tools]\nshout = shout_plugin\n")
    (site / "shout_plugin.py").write_text(PLUGIN, encoding="utf-8")
    flow = _write(tmp_path / "p.yaml", """\
name: plugin
steps:
  - {id: s, type: tool, tool_name: shout, tool_args: {text: hey}, output: loud}
""")
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "PYTHONPATH": str(site)}
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "agentloom.cli", "run", str(flow), "--json",
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE, env=env, cwd=tmp_path)
    out, err = await asyncio.wait_for(proc.communicate(), 60)
    assert proc.returncode == 0, err.decode()
    assert json.loads(out)["state"]["loud"] == "HEY!"


async def test_http_request_uses_the_runtime_transport_when_none_is_given(
        fact_server: int) -> None:
    # `arun_workflow(wf, clients=runtime)`, as the Python API and every batch run call it:
    # before, the built-ins got no transport and http_request failed with "no HTTP
    # transport was configured".
    flow = f"""\
name: fetch
config:
  sandbox: {{allow_network: true, allowed_addresses: ["127.0.0.1:{fact_server}"]}}
steps:
  - id: get
    type: tool
    tool_name: http_request
    tool_args: {{url: "http://127.0.0.1:{fact_server}/fact"}}
    output: page
"""
    runtime = Runtime.from_env({})
    try:
        result = await arun_workflow(load_workflow(flow), clients=runtime)
    finally:
        await runtime.aclose()
    assert result.ok, result.error
    assert result.state["page"] == "fact: the answer is 42"


async def test_a_tool_steps_big_result_stays_whole_in_the_state() -> None:
    # The cut at MAX_RESULT_BYTES is for what a model reads; a `tool` step's result is
    # the workflow's own typed data.
    from agentloom.tools import ToolRegistry, tool
    from agentloom.tools.contracts import MAX_RESULT_BYTES

    @tool
    def rows(n: int) -> list[dict[str, int]]:
        """Many rows."""
        return [{"i": i, "square": i * i} for i in range(n)]

    registry = ToolRegistry([rows])
    wf = load_workflow("name: big\nsteps:\n  - {id: s, type: tool, tool_name: rows, "
                       "tool_args: {n: 100000}, output: table}\n")
    async with Runtime() as runtime:  # no model is called
        result = await arun_workflow(wf, clients=runtime, tools=registry)
    assert result.ok, result.error
    assert len(json.dumps(result.state["table"])) > MAX_RESULT_BYTES
    assert result.state["table"][-1] == {"i": 99999, "square": 99999 ** 2}
