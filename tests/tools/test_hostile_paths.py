"""Paths no file can have, and symlinks that loop: a model's tool arguments and a
workflow's attachment sources meet them as clear refusals, not as pathlib's ValueError or
RuntimeError (a loop can come with a cloned repository; a NUL byte with model output)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from agentloom.messages import ToolCallPart
from agentloom.testing.scripted import ScriptedModel
from agentloom.tools import ToolRegistry
from agentloom.tools._sandbox import SandboxPolicy
from agentloom.tools.builtins import builtin_tools
from agentloom.tools.contracts import ToolContext
from agentloom.workflow import StepStatus, arun_workflow, load_workflow

CTX = ToolContext()


@pytest.fixture
def work(tmp_path: Path) -> Path:
    root = tmp_path / "work"
    root.mkdir()
    (root / "loop").symlink_to("loop")  # a link to itself
    (root / "a").symlink_to("b")
    (root / "b").symlink_to("a")  # two links to each other
    return root


async def _call(root: Path, name: str, arguments: dict[str, Any]) -> tuple[str, bool]:
    policy = SandboxPolicy(allowed_paths=(str(root),), allowed_commands=("ls",))
    box = ToolRegistry(builtin_tools(policy=policy)).toolbox([name])
    result = await box.call(ToolCallPart(id="1", name=name, arguments=arguments), CTX)
    return result.content, result.is_error


LOOPS = [
    ("file_read", {"path": "loop"}),
    ("file_read", {"path": "a/inside.txt"}),
    ("file_write", {"path": "loop", "content": "x"}),
    ("file_write", {"path": "b/new.txt", "content": "x"}),
    ("shell_command", {"command": ["ls"], "cwd": "loop"}),
    ("shell_command", {"command": ["ls", "../work/a"], "cwd": "."}),
]


@pytest.mark.parametrize(("name", "arguments"), LOOPS)
async def test_a_symlink_loop_is_a_refusal_that_says_so(
        work: Path, name: str, arguments: dict[str, Any]) -> None:
    arguments = {k: (str(work / v) if k == "cwd" else v) for k, v in arguments.items()}
    if "path" in arguments:
        arguments["path"] = str(work / arguments["path"])
    content, is_error = await _call(work, name, arguments)
    assert is_error
    assert "symlinks form a loop" in content
    assert "RuntimeError" not in content


NULS = [
    ("file_read", {"path": "WORK/a\x00b.txt"}),
    ("file_write", {"path": "WORK/a\x00b.txt", "content": "x"}),
    ("file_write", {"path": "~\x00root/x", "content": "x"}),
    ("shell_command", {"command": ["ls"], "cwd": "WORK\x00"}),
    ("shell_command", {"command": ["ls", "WORK/\x00"]}),
]


@pytest.mark.parametrize(("name", "arguments"), NULS)
async def test_a_nul_byte_in_a_path_is_a_refusal_that_says_so(
        work: Path, name: str, arguments: dict[str, Any]) -> None:
    text = json.dumps(arguments).replace("WORK", str(work))
    content, is_error = await _call(work, name, json.loads(text))
    assert is_error
    assert "NUL byte" in content
    assert "ValueError" not in content


async def test_a_nul_byte_in_a_plain_argument_is_refused_before_the_program_runs(
        work: Path) -> None:
    content, is_error = await _call(work, "shell_command", {"command": ["ls", "-l\x00a"]})
    assert is_error
    assert content == ("shell_command: an argument contains a NUL byte, which no program "
                       "can receive")


class _Factory:
    default_model = "test-model"
    default_provider = "scripted"

    def __init__(self, model: Any) -> None:
        self.model = model

    def client(self, *, model: str | None, provider: str | None = None,
               fallback: Sequence[Any] = (), retry: Any = None, budget: Any = None) -> Any:
        return self.model


@pytest.mark.parametrize(("source", "says"), [
    ("loop", "refused: its symlinks form a loop"),
    ("a/pic.png", "refused: its symlinks form a loop"),
    ("pic\x00.png", "refused: a path can't contain a NUL byte"),
])
async def test_an_attachment_that_loops_or_holds_a_nul_is_a_config_error(
        work: Path, source: str, says: str) -> None:
    flow = work / "wf.yaml"
    flow.write_text(f"""\
name: attach
state: {{src: {json.dumps(source)}}}
steps:
  - id: look
    type: llm_call
    prompt: describe
    attachments: [{{source: "{{state.src}}"}}]
""")
    model = ScriptedModel(["seen"])
    result = await arun_workflow(load_workflow(flow), clients=_Factory(model))
    look = result.steps["look"]
    assert look.status is StepStatus.FAILED
    assert look.error_type == "ConfigError"
    assert f"attachment {source!r}: {says}" in str(look.error)
    assert model.requests == []


@pytest.mark.parametrize(("name", "arguments", "argument"), [
    ("file_write", {"path": "f.txt", "content": "ok \udc80"}, "content"),
    ("file_read", {"path": "f\ud800.txt"}, "path"),
])
async def test_a_lone_surrogate_in_an_argument_is_refused_in_words(
        work: Path, name: str, arguments: dict[str, Any], argument: str) -> None:
    # What JSON's "\udc80" decodes to: it reached the model as "UnicodeEncodeError: ...".
    arguments = {k: (str(work / v) if k == "path" else v) for k, v in arguments.items()}
    call = json.dumps(arguments)  # escapes the surrogate as the model's JSON would
    assert "\\udc80" in call or "\\ud800" in call
    content, is_error = await _call(work, name, json.loads(call))
    assert is_error
    assert content == (f"{name}: argument {argument!r} holds a lone surrogate (a \\ud800-"
                       "\\udfff escape that pairs with nothing), which is no character")
    assert not (work / "f.txt").exists()
