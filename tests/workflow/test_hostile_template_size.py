"""A template that would render past 32 Mi characters (`MAX_RENDERED_CHARS`, as
docs/workflows.md says) fails its step, before the text is built: a reference repeated in
the file multiplies a value that a model's reply (or `--state`) chose the size of."""

from __future__ import annotations

import tracemalloc
from typing import Any

import pytest
from wf_helpers import Factory, echo_model

from agentloom.errors import TemplateError
from agentloom.workflow import RunStatus, StepStatus, arun_workflow, load_workflow_text
from agentloom.workflow.lang.templates import Scope, compile_template

MAX_RENDERED_CHARS = 32 * 1024 * 1024
REPEATS = 100


def _flow() -> str:
    refs = "{state.reply} " * REPEATS
    return f"""\
name: amplify
steps:
  - id: a
    type: llm_call
    prompt: "say something long"
    output: reply
  - id: b
    type: llm_call
    depends_on: [a]
    prompt: "{refs}"
"""


async def test_a_reply_repeated_in_a_prompt_fails_the_step_not_the_machine() -> None:
    asked: list[int] = []

    def answer(request: Any) -> str:
        asked.append(len(request.messages[-1].text))
        return "x" * 1_000_000  # 1 MB reply, read 100 times by step b: 100 MB

    wf = load_workflow_text(_flow())
    tracemalloc.start()
    try:
        result = await arun_workflow(wf, clients=Factory(echo_model(answer)))
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert result.status is RunStatus.FAILED
    b = result.steps["b"]
    assert b.status is StepStatus.FAILED
    assert b.error is not None and "renders to more than" in b.error
    assert f"{MAX_RENDERED_CHARS:,}" in b.error
    assert b.attempts == 1  # a template error is not retried
    assert asked == [len("say something long")]  # step b never sent 100 MB
    assert peak < 3 * MAX_RENDERED_CHARS // 2, f"peak {peak / 2**20:.0f} MiB"


def test_the_bound_is_the_rendered_length() -> None:
    quarter = "y" * (MAX_RENDERED_CHARS // 4)
    scope = Scope({"x": quarter}, {})
    assert len(compile_template("{x}{x}{x}{x}").render(scope)) == MAX_RENDERED_CHARS
    with pytest.raises(TemplateError, match="renders to more than"):
        compile_template("{x}{x}{x}{x}!").render(scope)


def test_one_reference_value_is_not_rendered_so_not_bounded_here() -> None:
    # A tool argument that is exactly one reference passes the value itself.
    big = ["z" * 1000] * 50_000
    assert compile_template("{state.big}").value(Scope({"big": big}, {})) is big
