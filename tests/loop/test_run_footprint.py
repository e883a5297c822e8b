"""What a finished run leaves behind, and settings changed between runs of one Agent."""

from __future__ import annotations

import gc

from agentloom import Agent, ConversationSummary, NullObserver
from agentloom.loop._loop import _Run
from agentloom.testing.scripted import ScriptedModel


async def test_a_finished_run_keeps_none_of_its_objects_alive() -> None:
    # Cancelled timers (the deadline's, the HTTP client's) stay in the event loop's heap
    # with a snapshot of the context they were armed in: the run must not be in it.
    agent = Agent(ScriptedModel(["ok"] * 5), deadline_seconds=600)
    gc.collect()
    gc.disable()
    try:
        for _ in range(5):
            assert (await agent.arun_result("hi")).summary.status.succeeded
        alive = [o for o in gc.get_objects() if isinstance(o, _Run)]
    finally:
        gc.enable()
    assert alive == []


class Ends(NullObserver):
    def __init__(self) -> None:
        self.names: list[str | None] = []

    def on_conversation_end(self, summary: ConversationSummary) -> None:
        self.names.append(summary.agent_name)


async def test_settings_changed_between_runs_apply_to_the_next_run() -> None:
    agent = Agent(ScriptedModel(["one", "two", "three"]), name="a", max_iterations=4)
    first = await agent.arun_result("hi")
    assert first.summary.agent_name == "a" and first.summary.iteration_limit == 4
    ends = Ends()
    agent.name, agent.max_iterations, agent.observer = "b", 2, ends
    agent.deadline_seconds = None
    second = await agent.arun_result("hi")
    assert second.summary.agent_name == "b" and second.summary.iteration_limit == 2
    assert second.summary.deadline_seconds is None and ends.names == ["b"]
    third = await agent.arun_result("hi", correlation_id="c-1")
    assert third.summary.correlation_id == "c-1" and ends.names == ["b", "b"]
