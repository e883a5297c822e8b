"""A step's own retry and a server's Retry-After: waited out up to ten minutes, never as
long as a hostile or exhausted server says (`Retry-After: 1000000000` had a step sleep
for decades: the router refuses to wait past 60 s, then the step's retry waited it all)."""

from __future__ import annotations

import pytest

from agentloom.http._fault import Fault
from agentloom.workflow import StepStatus
from agentloom.workflow.engine.retry import STEP_MAX_RETRY_AFTER
from tests.workflow.test_resilience import Rig, rig, wf

__all__ = ["rig"]  # the fixture, used by name


@pytest.mark.parametrize("asked", ["1000000000", "Fri, 31 Dec 9999 23:59:59 GMT"])
async def test_a_retry_after_past_the_bound_fails_the_step_without_waiting(
        rig: Rig, asked: str) -> None:
    rig.on_primary(Fault.status(429, headers={"Retry-After": asked}), times=10)
    result = await rig.run(wf(step="    retry: {max_retries: 3, jitter: false}"))
    assert result.steps["ask"].status is StepStatus.FAILED
    assert "429" in (result.steps["ask"].error or "")
    assert result.steps["ask"].attempts == 1  # not tried again: the server said not now
    assert all(s <= STEP_MAX_RETRY_AFTER for s in rig.clock.sleeps), rig.clock.sleeps


async def test_a_retry_after_the_router_wont_wait_for_is_waited_by_the_step(
        rig: Rig) -> None:
    # 120 s: past the router's 60 s, within the step's ten minutes.
    rig.on_primary(Fault.status(429, headers={"Retry-After": "120"}), times=1)
    result = await rig.run(wf(step="    retry: {max_retries: 1, jitter: false}"))
    assert result.ok, result.error
    assert 120.0 in rig.clock.sleeps
    assert result.steps["ask"].attempts == 2
