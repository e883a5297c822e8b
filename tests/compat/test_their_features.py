"""Features of the public AgentLoom we used to refuse or ignore, now honoured:
`config.capture_prompts`, `AGENTLOOM_REDACT_STATE_KEYS`, bare `{question}` templates,
and a subworkflow's output as the child's state filtered by `return_keys`."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from agentloom.testing import FakeOllamaServer
from agentloom.workflow import arun_workflow, load_workflow_text
from agentloom.workflow.engine.mock_clients import mock_clients

REPO = Path(__file__).resolve().parents[2]


def cli(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    full = {**os.environ, "PYTHONPATH": str(REPO), **(env or {})}
    return subprocess.run([sys.executable, "-m", "agentloom.cli", *args], env=full,
                          capture_output=True, text=True, timeout=60)


def _flow(tmp: Path, config_extra: str = "") -> Path:
    (tmp / "mock.json").write_text(json.dumps({"answer": "It is 4."}))
    wf = tmp / "wf.yaml"
    wf.write_text(
        "name: f\nconfig:\n  provider: mock\n  responses_file: mock.json\n" + config_extra +
        "state:\n  question: What is 2+2?\n  customer_ssn: 123-45-6789\nsteps:\n"
        "  - id: answer\n    type: llm_call\n    prompt: 'Answer: {question}'\n"
        "    output: answer\n")
    return wf


def test_capture_prompts_puts_the_prompt_in_the_trace(tmp_path: Path) -> None:
    wf = _flow(tmp_path, "  capture_prompts: true\n")
    assert cli("validate", str(wf)).returncode == 0
    trace = tmp_path / "trace.jsonl"
    done = cli("run", str(wf), "--no-checkpoint", "--trace", str(trace))
    assert done.returncode == 0, done.stderr
    assert "Answer: What is 2+2?" in trace.read_text()
    plain = tmp_path / "plain.jsonl"
    cli("run", str(_flow(tmp_path)), "--no-checkpoint", "--trace", str(plain))
    assert "Answer: What is 2+2?" not in plain.read_text()


def test_redact_state_keys_from_the_environment(tmp_path: Path) -> None:
    wf = _flow(tmp_path)
    done = cli("run", str(wf), "--json", "--no-checkpoint",
               env={"AGENTLOOM_REDACT_STATE_KEYS": "customer_ssn, *password*"})
    assert done.returncode == 0, done.stderr
    assert "123-45-6789" not in done.stdout
    data = json.loads(done.stdout)
    assert data["state"]["customer_ssn"] == "[REDACTED]"
    assert data["tokens"] is None or isinstance(data["tokens"], int)
    assert data["outputs"] == {"answer": "It is 4."}


async def test_their_readme_dsl_with_a_bare_template_runs() -> None:
    from agentloom.core.dsl import workflow
    from agentloom.core.engine import WorkflowEngine
    from agentloom.providers.gateway import ProviderGateway
    from agentloom.providers.ollama import OllamaProvider

    async with FakeOllamaServer() as server:
        server.script("Python is a programming language.")
        wf = (
            workflow("simple-qa", provider="ollama", model="phi4")
            .set_state(question="What is Python?")
            .add_llm_step("answer", prompt="Answer: {question}", output="answer")
            .build()
        )
        gateway = ProviderGateway()
        gateway.register(OllamaProvider(base_url=server.base_url), is_fallback=True)
        result = await WorkflowEngine(wf, provider_gateway=gateway).run()
        await gateway.close()
        sent = server.requests[0].json["messages"][-1]["content"]
    assert result.status.value == "success"
    assert sent == "Answer: What is Python?"
    assert result.final_state["answer"] == "Python is a programming language."


CHILD_FLOW = """\
name: parent
config: {provider: mock, responses_file: %s}
state: {topic: tides}
steps:
  - id: all
    type: subworkflow
    output: whole
    workflow_inline:
      name: child
      state: {note: hi}
      steps:
        - {id: draft, type: llm_call, prompt: "draft {topic}", output: draft}
  - id: some
    type: subworkflow
    output: picked
    return_keys: [draft]
    workflow_inline:
      name: child2
      steps:
        - {id: draft, type: llm_call, prompt: "draft {topic}", output: draft}
"""


async def test_a_subworkflow_returns_the_childs_state_filtered_by_return_keys(
        tmp_path: Path) -> None:
    (tmp_path / "m.json").write_text(json.dumps({"draft": ["one", "two"]}))
    wf = load_workflow_text(CHILD_FLOW % (tmp_path / "m.json"))
    result = await arun_workflow(wf, clients=mock_clients(wf))
    assert result.status.value == "success", result.error
    assert result.state["whole"]["note"] == "hi"
    assert result.state["whole"]["topic"] == "tides"
    assert result.state["whole"]["draft"] in ("one", "two")
    assert set(result.state["picked"]) == {"draft"}
