"""The public AgentLoom's Python API on our engine: their scripts 14 and 15 run unchanged
(as subprocesses, against a fake Ollama server on loopback), their DSL builds our
workflows, their `BaseTool` subclasses and `@tool(name=, description=)` functions are our
tools, and `import agentloom` stays free of the compat layer."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from agentloom.testing import FakeOllamaServer, FakeOpenAIServer

EXAMPLES = Path("/work/shared/compat/agentloom-examples")
REPO = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.skipif(not EXAMPLES.is_dir(), reason="compat examples not present")


@pytest.fixture
def ollama() -> Iterator[Any]:
    server = FakeOllamaServer().start_in_thread()
    try:
        yield server
    finally:
        server.stop_thread()


def _run_script(name: str, server: Any, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items()
           if k not in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "GOOGLE_API_KEY")}
    env["OLLAMA_BASE_URL"] = server.base_url
    env["PYTHONPATH"] = str(REPO) + os.pathsep + env.get("PYTHONPATH", "")
    return subprocess.run([sys.executable, str(EXAMPLES / name), *args], env=env,
                          cwd=EXAMPLES.parent, capture_output=True, text=True, timeout=60)


def test_script_14_decorator_tools_runs_unchanged(ollama: Any) -> None:
    ollama.script("Overall sentiment 3/10; data loss reported.", "critical")
    done = _run_script("14_custom_tools_decorator.py", ollama)
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert "  - query_database: Query customer feedback from database" in out
    assert "Running: sentiment-monitor (ollama/phi4)" in out
    assert "Status: success" in out
    # "critical" routes to the Slack escalation tool, which prints its message.
    assert "[Slack] → ##cx-escalations (urgent): Overall sentiment 3/10" in out
    assert "[SUCCESS] alert_critical" in out and "[SKIPPED] log_healthy" in out
    # The feedback the tool returned reached the model's prompt.
    first = ollama.requests[0].json
    assert "DataFlow Pro" in first["messages"][-1]["content"]
    assert first["model"] == "phi4"


def test_script_15_subclass_tools_runs_unchanged(ollama: Any) -> None:
    ollama.script("Brief: enterprise account at risk.", "Week 1: call the sponsor.")
    done = _run_script("15_custom_tools_subclass.py", ollama)
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert "    params: ['address', 'include_demographics']" in out
    assert "Status: success" in out
    assert "[SUCCESS] geocode" in out and "[SUCCESS] enrich" in out
    prompt = ollama.requests[0].json["messages"][-1]["content"]
    assert "San Francisco" in prompt and "Sarah Chen" in prompt


def test_script_model_flag_overrides_the_workflow(ollama: Any) -> None:
    done = _run_script("14_custom_tools_decorator.py", ollama, "--model", "llama3.2:3b")
    assert done.returncode == 0, done.stderr
    assert {r.json["model"] for r in ollama.requests} == {"llama3.2:3b"}


async def test_dsl_builds_our_workflow_and_their_engine_runs_it() -> None:
    from agentloom.compat import ProviderGateway
    from agentloom.core.dsl import workflow
    from agentloom.core.engine import WorkflowEngine
    from agentloom.providers.openai import OpenAIProvider

    async with FakeOpenAIServer() as server:
        server.script("billing", "We will refund you.")
        wf = (
            workflow("customer-support", provider="openai", model="gpt-4o-mini")
            .set_state(user_message="I was charged twice", classification="", response="")
            .add_llm_step("classify", prompt="Classify: {state.user_message}",
                          output="classification")
            .add_router_step("route", depends_on=["classify"], conditions=[
                ("state.classification.strip().lower() == 'billing'", "billing")],
                default="general")
            .add_llm_step("billing", depends_on=["route"], prompt="Refund: {state.user_message}",
                          output="response")
            .add_llm_step("general", depends_on=["route"], prompt="Help: {state.user_message}",
                          output="response")
            .build()
        )
        gateway = ProviderGateway()
        gateway.register(OpenAIProvider(api_key="sk-test", base_url=server.base_url))
        result = await WorkflowEngine(wf, provider_gateway=gateway).run()
        await gateway.close()
    assert result.status.value == "success"
    assert result.final_state["response"] == "We will refund you."
    assert result.step_results["general"].status.value == "skipped"
    assert result.total_tokens > 0
    assert result.step_results["classify"].token_usage.total_tokens > 0


def test_dsl_problems_are_our_loader_errors() -> None:
    from agentloom.core.dsl import workflow
    from agentloom.errors import WorkflowError

    with pytest.raises(WorkflowError, match="nope"):
        workflow("bad").add_llm_step("a", prompt="x", depends_on=["nope"]).build()


async def test_their_base_tool_subclass_is_our_tool() -> None:
    from agentloom.loop import ToolContext
    from agentloom.tools import BaseTool, ToolRegistry

    class Echo(BaseTool):
        name = "echo"
        description = "Echo"
        parameters_schema = {"type": "object", "properties": {"text": {"type": "string"}},
                             "required": ["text"]}

        async def execute(self, **kwargs: Any) -> Any:
            return json.dumps({"echo": kwargs["text"]})

    registry = ToolRegistry()
    registry.register(Echo())
    (info,) = registry.list()
    assert (info.name, info.schema["required"]) == ("echo", ["text"])
    tool = registry.get("echo")
    assert tool is not None
    assert await tool({"text": "hi"}, ToolContext()) == '{"echo": "hi"}'


def test_register_builtins_and_their_state_manager() -> None:
    import asyncio

    from agentloom.core.state import StateManager
    from agentloom.tools import ToolRegistry
    from agentloom.tools.builtins import register_builtins

    registry = ToolRegistry()
    register_builtins(registry)
    assert set(registry.names) == {"http_request", "shell_command", "file_read", "file_write"}

    async def use() -> Any:
        sm = StateManager(initial_state={"a": {"b": 1}})
        await asyncio.gather(*(sm.update("n", lambda c: (c or 0) + 1) for _ in range(20)))
        await sm.set("a.c", 2)
        return await sm.get_state_snapshot()

    assert asyncio.run(use()) == {"a": {"b": 1, "c": 2}, "n": 20}


def test_import_agentloom_does_not_load_compat() -> None:
    code = ("import sys, agentloom, agentloom.tools, agentloom.workflow; "
            "print(any(m.startswith(('agentloom.compat', 'agentloom.core')) "
            "for m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env={**os.environ, "PYTHONPATH": str(REPO)}, check=True)
    assert out.stdout.strip() == "False"


def test_their_tool_script_serves_our_cli_too(ollama: Any, tmp_path: Path) -> None:
    # `run --tools` takes their script as a tool file: its @tool functions register.
    ollama.script("All good.", "healthy")
    env = {**os.environ, "OLLAMA_HOST": ollama.base_url, "PYTHONPATH": str(REPO)}
    done = subprocess.run(
        [sys.executable, "-m", "agentloom.cli", "run", "--no-checkpoint", "--tools",
         str(EXAMPLES / "14_custom_tools_decorator.py"),
         str(EXAMPLES / "14_custom_tools_decorator.yaml")],
        env=env, cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert "[Slack] → ##cx-digest (normal): All good." in done.stdout
