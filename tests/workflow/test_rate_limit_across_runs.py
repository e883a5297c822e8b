"""A file's `rate_limits` hold across the runs that share a runtime (a batch's runs, a
Python caller's loop, the runs of workflow functions): each run hands its limits to the
runtime again, and the same limit keeps the provider's window counting, rather than
giving each run a fresh minute's allowance. Real HTTP to loopback; time on a FakeClock."""

from __future__ import annotations

from agentloom.routing.runtime import Runtime
from agentloom.testing import FakeClock
from agentloom.testing.fake_openai import FakeOpenAIServer
from agentloom.workflow import arun_workflow, load_workflow

FILE = """\
name: limited
providers:
  primary: {type: openai, api_key: k, base_url: BASE}
config:
  provider: primary
  model: gpt-4o-mini
  rate_limits: {primary: {rpm: 2}}
steps:
  - {id: ask, type: llm_call, prompt: "hello"}
"""


async def test_three_runs_on_one_runtime_share_a_two_per_minute_limit() -> None:
    clock = FakeClock()
    async with FakeOpenAIServer() as server, Runtime(clock=clock) as runtime:
        wf = load_workflow(FILE.replace("BASE", server.openai_base_url))
        for _ in range(3):
            result = await arun_workflow(wf, clients=runtime, clock=clock)
            assert result.ok, result.error
        revision = runtime.revision
        await arun_workflow(wf, clients=runtime, clock=clock)
        assert runtime.revision == revision  # the same limit again changed nothing
    assert len(server.requests) == 4
    # Two calls fit the minute; the third waits for the window (30 s at 2 per minute),
    # and so does the fourth.
    waits = [s for s in clock.sleeps if s > 1]
    assert len(waits) == 2 and all(abs(w - 30) < 0.5 for w in waits), clock.sleeps
