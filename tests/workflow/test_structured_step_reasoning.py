"""Reasoning settings a provider would refuse are load errors with their line (spec 000,
"Reasoning"): a Claude model with thinking on needs budget_tokens, and a set max_tokens
must be above it; other models aren't held to Claude's rule."""

from __future__ import annotations

import pytest

from agentloom.workflow import load_workflow_text
from agentloom.workflow.load.problems import WorkflowProblems

BASE = "name: r\nsteps:\n  - id: plan\n    type: llm_call\n    prompt: p\n"


@pytest.mark.parametrize(("fields", "message", "line"), [
    ("    model: claude-sonnet-4-5\n    thinking: {enabled: true}\n",
     "needs thinking.budget_tokens", 7),
    ("    model: claude-sonnet-4-5\n    thinking: {enabled: true, budget_tokens: 500}\n",
     "at least 1024", 7),
    ("    model: claude-sonnet-4-5\n    max_tokens: 4000\n"
     "    thinking: {enabled: true, budget_tokens: 4000}\n", "must be above", 8),
])
def test_claude_reasoning_settings_fail_at_load(fields: str, message: str, line: int) -> None:
    with pytest.raises(WorkflowProblems) as info:
        load_workflow_text(BASE + fields, filename="r.yaml")
    assert any(message in e.message and e.line == line for e in info.value.errors), [
        (e.line, e.message) for e in info.value.errors]


def test_the_spec_example_and_other_models_load() -> None:
    load_workflow_text(BASE + "    model: claude-sonnet-4-5\n    max_tokens: 8000\n"
                       "    thinking: {enabled: true, budget_tokens: 4000}\n")
    load_workflow_text(BASE + "    model: o3-mini\n    thinking: {enabled: true, level: high}\n")
    # config.model counts as the step's model.
    with pytest.raises(WorkflowProblems, match="budget_tokens"):
        load_workflow_text("name: r\nconfig: {model: claude-haiku-4-5}\nsteps:\n"
                           "  - {id: a, type: llm_call, prompt: p, thinking: {enabled: true}}\n")


def test_a_forced_tool_schema_with_thinking_is_refused_for_claude() -> None:
    with pytest.raises(WorkflowProblems) as info:
        load_workflow_text(BASE + "    model: claude-sonnet-4-5\n"
                           "    thinking: {enabled: true, budget_tokens: 2000}\n"
                           "    response_schema:\n      type: json_object\n      mode: tool\n",
                           filename="r.yaml")
    assert [(e.line, "forced tool call with thinking" in e.message)
            for e in info.value.errors] == [(10, True)]
