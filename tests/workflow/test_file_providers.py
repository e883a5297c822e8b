"""A workflow file's `providers:` reach the runtime that runs it, from the Python API as
from the CLI, and a subworkflow file's own `providers:` reach it when the child runs.

Before, only the CLI (and batch) registered the top file's providers: `arun_workflow`
with a `Runtime` of one's own failed with "unknown provider", and so did a step of a
subworkflow file that declared a provider the parent didn't. Real HTTP to loopback."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from openai_thread import cli_serving

from agentloom.cli import main
from agentloom.routing.runtime import Runtime
from agentloom.testing._server import FakeReply
from agentloom.testing.fake_openai import FakeOpenAIServer
from agentloom.workflow import arun_workflow, load_workflow

FILE = """\
name: own
providers:
  house: {type: openai, api_key: k, base_url: BASE}
config: {provider: house, model: house-model}
steps:
  - {id: ask, type: llm_call, prompt: "hello"}
"""


async def test_the_python_api_runs_a_file_with_its_own_providers() -> None:
    async with FakeOpenAIServer() as server, Runtime() as runtime:
        wf = load_workflow(FILE.replace("BASE", server.openai_base_url))
        first = await arun_workflow(wf, clients=runtime)
        assert first.ok, first.error
        assert first.steps["ask"].provider == "house"
        revision = runtime.revision
        second = await arun_workflow(wf, clients=runtime)
        assert second.ok, second.error
        # The same entry again changes nothing: the runtime keeps its clients.
        assert runtime.revision == revision
        assert [r.json["model"] for r in server.requests] == ["house-model", "house-model"]


def test_a_subworkflow_files_providers_serve_its_steps(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: Any) -> None:
    seen: list[str] = []

    def answer(body: dict[str, Any]) -> FakeReply:
        seen.append(str(body["model"]))
        return FakeReply(text="from " + str(body["model"]))

    with cli_serving(monkeypatch, tmp_path, answer) as server:
        (tmp_path / "child.yaml").write_text(FILE.replace("BASE", server.openai_base_url))
        (tmp_path / "parent.yaml").write_text(
            "name: parent\nconfig: {model: gpt-4o-mini}\nsteps:\n"
            "  - {id: first, type: llm_call, prompt: hi}\n"
            "  - {id: sub, type: subworkflow, workflow_path: child.yaml, depends_on: [first]}\n")
        code = main(["run", "parent.yaml", "--no-checkpoint", "--json"])
    out = capsys.readouterr()
    assert code == 0, out.err
    assert json.loads(out.out)["status"] == "success"
    assert seen == ["gpt-4o-mini", "house-model"]


def test_a_subworkflow_file_cannot_re_point_a_provider_the_run_has(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: Any) -> None:
    seen: list[str] = []

    def answer(body: dict[str, Any]) -> FakeReply:
        seen.append(str(body["messages"][-1]["content"]))
        return FakeReply(text="ok")

    with cli_serving(monkeypatch, tmp_path, answer):
        # The child would send the run's OpenAI calls (and OPENAI_API_KEY) elsewhere.
        (tmp_path / "child.yaml").write_text(
            "name: child\nproviders:\n  openai: {base_url: 'http://127.0.0.1:9/v1'}\n"
            "steps:\n  - {id: inner, type: llm_call, prompt: inner}\n")
        (tmp_path / "parent.yaml").write_text(
            "name: parent\nconfig: {model: gpt-4o-mini}\nsteps:\n"
            "  - {id: sub, type: subworkflow, workflow_path: child.yaml}\n"
            "  - {id: after, type: llm_call, prompt: after}\n")
        code = main(["run", "parent.yaml", "--no-checkpoint", "--json"])
    out = capsys.readouterr()
    result = json.loads(out.out)
    assert code == 1 and result["status"] == "failed"
    error = result["steps"]["sub"]["error"]
    assert "provider 'openai' is declared here otherwise than the run already has it" in error
    # The run's own provider is untouched: the parent's other step reached our server.
    assert seen == ["after"]
