"""A provider answering an alias with its snapshot's name is not a fallback (issue 15,
item 2): `fallback_used` stays false and the run counts no fallbacks."""

from __future__ import annotations

import pytest
from servers_for_steps import served

from agentloom.testing._server import FakeReply
from agentloom.workflow import arun_workflow, load_workflow

FLOW = """\
name: alias
steps:
  - {id: ask, type: llm_call, provider: anthropic, model: claude-sonnet-4-0, prompt: hi}
"""


@pytest.mark.parametrize(("answered", "fallback"), [
    ("claude-sonnet-4-20250514", False),   # the alias's snapshot
    ("claude-sonnet-4-5-20250929", True),  # another model
])
async def test_an_alias_answered_by_its_snapshot_is_no_fallback(
    answered: str, fallback: bool
) -> None:
    async with served("anthropic") as (server, runtime):
        server.script(FakeReply(text="hello", model=answered))
        result = await arun_workflow(load_workflow(FLOW), clients=runtime)
    assert result.status.value == "success", result.error
    step = result.steps["ask"]
    assert step.model == answered
    assert step.fallback_used is fallback
    assert result.summary["fallbacks_used"] == int(fallback)
