"""Spec 004: "An ask inside a tool function pauses the agent ... and the agent resumes
mid-loop when the user answers", also when the model's reply asked for other tools in
the same turn. The pause records every call of its turn (done with its result, asked,
not started); one resume finishes the turn: each tool runs once, the answer is the
asking call's result, and the model is called again once.

Through `agentloom run` / `agentloom resume --answer` against the fake OpenAI server
(side effects counted in a file, model calls counted on the server), and through the
Python API (`arun_workflow` with a `DurableRun`)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from agentloom.cli import main
from agentloom.messages import ModelRequest, ToolResultPart
from agentloom.store import MemoryStore
from agentloom.testing._server import FakeReply
from agentloom.testing.fake_openai import FakeOpenAIServer
from agentloom.testing.scripted import FunctionModel, tool_call
from agentloom.tools import ToolRegistry, tool
from agentloom.workflow import RunStatus, arun_workflow, ask, load_workflow_text
from agentloom.workflow.durable.run import Decision, DurableRun

TOOLS = '''\
from pathlib import Path

from agentloom.tools import tool
from agentloom.workflow import ask


@tool
def confirm(target: str) -> str:
    """Ask a person before deploying."""
    return f"person said {ask(f'deploy to {target}?')} for {target}"


@tool
def note(label: str) -> str:
    """Write a label to the log (a side effect)."""
    with Path("side_effects.log").open("a") as log:
        log.write(label + "\\n")
    return f"noted {label}"
'''

PY_TOOLS = """\
name: py-tools
config: {model: gpt-4o-mini, provider: openai}
steps:
  - id: deploy
    type: llm_call
    prompt: "deploy the app"
    tools: [confirm, note]
    output: result
"""

FUNCTIONS = """\
name: fn-tools
config: {model: gpt-4o-mini, provider: openai}
functions:
  approve:
    description: Ask a person whether to deploy.
    args: {target: {type: str, description: Where to deploy.}}
    steps:
      - {id: q, type: ask, question: "deploy to {args.target}?"}
    return: "person said {steps.q.output} for {args.target}"
  record:
    description: Record a label.
    args: {label: {type: str, description: What to record.}}
    steps:
      - {id: w, type: tool, tool_name: note, tool_args: {label: "{args.label}"}}
    return: "recorded: {steps.w.output}"
steps:
  - id: deploy
    type: llm_call
    prompt: "deploy the app"
    functions: [approve, record]
    output: result
"""


class Model:
    """The fake server's model: on the first turn it asks for `calls` at once, then it
    answers with every tool result it was sent."""

    def __init__(self, calls: list[tuple[str, dict[str, Any]]]) -> None:
        self.calls = calls

    def __call__(self, body: dict[str, Any]) -> FakeReply:
        results = [m["content"] for m in body["messages"] if m["role"] == "tool"]
        if not results:
            return FakeReply(tool_calls=list(self.calls))
        return FakeReply(text="done: " + " | ".join(results))


@pytest.fixture
def cli(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[Any]:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("OPENAI_API_KEY", "test-key")
    (tmp_path / "tools.py").write_text(TOOLS)
    servers: list[FakeOpenAIServer] = []

    def serve(calls: list[tuple[str, dict[str, Any]]]) -> FakeOpenAIServer:
        server = FakeOpenAIServer(responder=Model(calls))
        server.start_in_thread()
        servers.append(server)
        monkeypatch.setenv("OPENAI_BASE_URL", server.openai_base_url)
        return server

    try:
        yield serve
    finally:
        for server in servers:
            server.stop_thread()


def _run(capsys: Any, *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out = capsys.readouterr()
    return code, out.out, out.err


def _effects(tmp_path: Path) -> list[str]:
    log = tmp_path / "side_effects.log"
    return log.read_text().splitlines() if log.exists() else []


def _tool_results(server: FakeOpenAIServer) -> list[str]:
    body = server.requests[-1].json
    return [m["content"] for m in body["messages"] if m["role"] == "tool"]


@pytest.mark.parametrize(("flow", "asker", "sibling"), [
    (PY_TOOLS, "confirm", ("note", "noted x")),
    (FUNCTIONS, "approve", ("record", "recorded: noted x")),
], ids=["python-tools", "workflow-functions"])
def test_an_ask_beside_a_sibling_call_resumes_to_the_end_with_each_tool_run_once(
        cli: Any, tmp_path: Path, capsys: Any, flow: str, asker: str,
        sibling: tuple[str, str]) -> None:
    server = cli([(asker, {"target": "prod"}), (sibling[0], {"label": "x"})])
    (tmp_path / "flow.yaml").write_text(flow)
    code, _, err = _run(capsys, "run", "flow.yaml", "--tools", "tools.py", "--run-id", "r1")
    assert code == 3, err
    assert "deploy to prod?" in err and "resume with: agentloom resume r1 --answer" in err
    # The sibling ran to its end while the other call waited for the person.
    assert _effects(tmp_path) == ["x"]
    assert len(server.requests) == 1

    code, out, err = _run(capsys, "resume", "r1", "--answer", "yes", "--json")
    assert code == 0, err
    data = json.loads(out)
    assert data["status"] == "success"
    # The finished sibling was not run again; the answer is the asking call's result.
    assert _effects(tmp_path) == ["x"]
    assert _tool_results(server) == ["person said yes for prod", sibling[1]]
    # One more model call, the one that reads both results; the turn that asked for
    # the tools was served from the journal.
    assert len(server.requests) == 2
    assert data["state"]["result"] == f"done: person said yes for prod | {sibling[1]}"
    assert data["steps"]["deploy"]["iterations"] == 2

    code, _, err = _run(capsys, "resume", "r1", "--answer", "yes")
    assert code == 1 and "already finished" in err


def test_two_asking_calls_of_one_turn_pause_one_after_the_other(
        cli: Any, tmp_path: Path, capsys: Any) -> None:
    server = cli([("confirm", {"target": "prod"}), ("note", {"label": "x"}),
                  ("confirm", {"target": "staging"})])
    (tmp_path / "flow.yaml").write_text(PY_TOOLS)
    code, _, err = _run(capsys, "run", "flow.yaml", "--tools", "tools.py", "--run-id", "r2")
    assert code == 3, err
    assert "deploy to prod?" in err
    code, _, err = _run(capsys, "resume", "r2", "--answer", "yes")
    # The second question: asked, never in flight, so no decision is needed.
    assert code == 3, err
    assert "deploy to staging?" in err and "needs_decision" not in err
    assert len(server.requests) == 1
    code, out, err = _run(capsys, "resume", "r2", "--answer", "no", "--json")
    assert code == 0, err
    assert _tool_results(server) == ["person said yes for prod", "noted x",
                                     "person said no for staging"]
    assert _effects(tmp_path) == ["x"]
    assert len(server.requests) == 2
    assert json.loads(out)["status"] == "success"


# --- the Python API ----------------------------------------------------------------------


class Factory:
    default_model = "test-model"

    def __init__(self, model: Any) -> None:
        self.model = model

    def client(self, **_: Any) -> Any:
        return self.model


def _answer_with_results(request: ModelRequest) -> Any:
    results = [p for m in request.messages for p in m.parts if isinstance(p, ToolResultPart)]
    if not results:
        return [tool_call("confirm", {"target": "prod"}, id="c1"),
                tool_call("note", {"label": "x"}, id="c2")]
    return "done: " + " | ".join(r.content for r in results)


async def test_the_python_api_resumes_a_paused_turn_once() -> None:
    effects: list[str] = []

    @tool
    def confirm(target: str) -> str:
        """Ask a person before deploying."""
        return f"person said {ask(f'deploy to {target}?')} for {target}"

    @tool
    def note(label: str) -> str:
        """Write a label to the log."""
        effects.append(label)
        return f"noted {label}"

    wf = load_workflow_text(PY_TOOLS)
    store = MemoryStore()
    model = FunctionModel(_answer_with_results)
    first = await arun_workflow(
        wf, clients=Factory(model), tools=ToolRegistry([confirm, note]),
        durable=DurableRun(store=store, run_id="p", workflow_hash="h"))
    assert first.status is RunStatus.PAUSED, first.error
    assert effects == ["x"] and len(model.requests) == 1
    calls = {c.call_id: c for c in await store.get_tool_calls("p")}
    assert calls["1:c2"].status == "done"  # the sibling's result is journalled

    resumed = DurableRun(store=store, run_id="p", workflow_hash="h",
                         resumed=await store.load_latest("p"), decision=Decision(answer="go"))
    result = await arun_workflow(wf, clients=Factory(model),
                                 tools=ToolRegistry([confirm, note]), durable=resumed)
    assert result.status is RunStatus.SUCCESS, result.error
    assert result.state["result"] == "done: person said go for prod | noted x"
    assert effects == ["x"]  # reused, not run again
    assert len(model.requests) == 2  # the turn served from the journal, then one call
    assert (resumed.served_exchanges, resumed.reused_tool_calls) == (1, 1)
