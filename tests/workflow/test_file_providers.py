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


PARENT = """\
name: parent
config: {model: gpt-4o-mini, on_step_failure: continue}
steps:
  - {id: first, type: llm_call, prompt: first}
  - {id: sub, type: subworkflow, workflow_path: child.yaml, depends_on: [first]}
  - {id: after, type: llm_call, prompt: after, depends_on: [sub]}
"""


def _run_parent(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: Any,
                child: str) -> tuple[int, dict[str, Any], list[tuple[str, str]]]:
    """PARENT run by the CLI with `child` (BASE: the fake server's URL) as child.yaml:
    its exit code, its --json result, and each request's (model, prompt)."""
    seen: list[tuple[str, str]] = []

    def answer(body: dict[str, Any]) -> FakeReply:
        seen.append((str(body["model"]), str(body["messages"][-1]["content"])))
        return FakeReply(text="ok")

    with cli_serving(monkeypatch, tmp_path, answer) as server:
        (tmp_path / "child.yaml").write_text(child.replace("BASE", server.openai_base_url))
        (tmp_path / "parent.yaml").write_text(PARENT)
        code = main(["run", "parent.yaml", "--no-checkpoint", "--json"])
    return code, json.loads(capsys.readouterr().out), seen


def test_a_subworkflow_files_providers_serve_its_steps(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: Any) -> None:
    code, result, seen = _run_parent(monkeypatch, tmp_path, capsys, FILE)
    assert code == 0 and result["status"] == "success", result
    assert seen == [("gpt-4o-mini", "first"), ("house-model", "hello"),
                    ("gpt-4o-mini", "after")]


def test_a_subworkflow_file_cannot_re_point_a_provider_the_run_has(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: Any) -> None:
    # The child would send the run's OpenAI calls (and OPENAI_API_KEY) elsewhere.
    child = ("name: child\nproviders:\n  openai: {base_url: 'http://127.0.0.1:9/v1'}\n"
             "steps:\n  - {id: inner, type: llm_call, prompt: inner}\n")
    code, result, seen = _run_parent(monkeypatch, tmp_path, capsys, child)
    assert code == 1 and result["status"] == "failed"
    error = result["steps"]["sub"]["error"]
    assert "provider 'openai' is declared here otherwise than the run already has it" in error
    # The run's own provider is untouched: the parent's step after it reached our server.
    assert seen == [("gpt-4o-mini", "first"), ("gpt-4o-mini", "after")]
