"""Fault injection through the workflow path: a real Runtime, real HTTP to loopback fake
servers, faults injected by FaultTransport, time on a FakeClock. Each failure ends as the
rules say (retried and recovered, fallen back, or failed fast) and the step's summary
shows every failed attempt with its request_sent."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

import pytest

from agentloom.http._aiohttp import AiohttpTransport
from agentloom.http._fault import Fault, FaultTransport
from agentloom.routing.runtime import Runtime
from agentloom.testing import FakeClock
from agentloom.testing._server import FakeReply
from agentloom.testing.fake_anthropic import FakeAnthropicServer
from agentloom.testing.fake_openai import FakeOpenAIServer
from agentloom.workflow import RunResult, StepStatus, arun_workflow, load_workflow

_PROVIDERS = """\
providers:
  primary: {type: openai}
  backup: {type: anthropic}
"""
_HEAD = _PROVIDERS.replace("{", "{{").replace("}", "}}") + """\
name: resilience
config:
  provider: primary
  model: gpt-4o-mini
{config}
steps:
  - id: ask
    type: llm_call
    prompt: "Say hello"
{step}
"""


def wf(step: str = "", config: str = "") -> str:
    return _HEAD.format(step=step, config=config)


@dataclass
class Rig:
    primary: FakeOpenAIServer
    backup: FakeAnthropicServer
    faults: FaultTransport
    clock: FakeClock
    runtime: Runtime

    async def run(self, text: str, **kw: object) -> RunResult:
        return await arun_workflow(load_workflow(text), clients=self.runtime,
                                   clock=self.clock, **kw)  # type: ignore[arg-type]

    def on_primary(self, fault: Fault, times: int = 1) -> None:
        """The primary's next `times` requests get `fault` (the backup's are untouched)."""
        left = [times]

        def pick(_n: int, req: object) -> bool:
            if str(self.primary.base_url) in req.url and left[0] > 0:  # type: ignore[attr-defined]
                left[0] -= 1
                return True
            return False

        self.faults.add(pick, fault)


@pytest.fixture
async def rig() -> AsyncIterator[Rig]:
    async with FakeOpenAIServer() as primary, FakeAnthropicServer() as backup:
        clock = FakeClock()
        faults = FaultTransport(AiohttpTransport())
        runtime = Runtime(transport=faults, clock=clock)
        runtime.add_providers({
            "primary": {"type": "openai", "base_url": primary.openai_base_url, "api_key": "k"},
            "backup": {"type": "anthropic", "base_url": backup.base_url, "api_key": "k"},
        })
        try:
            yield Rig(primary, backup, faults, clock, runtime)  # type: ignore[arg-type]
        finally:
            await runtime.aclose()
            await faults.aclose()


def failed(result: RunResult) -> list[tuple[int | None, bool | None]]:
    summary = result.steps["ask"].summary
    assert summary is not None
    return [(a.status_code, a.request_sent) for a in summary.failed_attempts]


async def test_429_with_retry_after_is_retried_after_the_wait(rig: Rig) -> None:
    rig.on_primary(Fault.status(429, headers={"Retry-After": "7"}))
    result = await rig.run(wf())
    assert result.ok, result.error
    assert result.steps["ask"].text == "Hello from the fake server."
    assert 7.0 in rig.clock.sleeps
    assert failed(result) == [(429, True)]
    assert result.steps["ask"].summary.provider_retries == 1
    assert result.summary["retries"] == 1


async def test_500s_are_retried_and_recover(rig: Rig) -> None:
    rig.on_primary(Fault.status(500), times=2)
    result = await rig.run(wf(step="    retry: {max_retries: 2, jitter: false}"))
    assert result.ok, result.error
    assert failed(result) == [(500, True), (500, True)]
    assert rig.clock.sleeps[:2] == [1.0, 2.0]  # backoff_base**n through the fake clock
    # The step's `retry` re-runs the whole step (spec 000): the engine retried, twice.
    assert result.steps["ask"].attempts == 3


async def test_drop_before_the_first_chunk_is_retried(rig: Rig) -> None:
    rig.on_primary(Fault.drop())
    result = await rig.run(wf(step="    stream: true"))
    assert result.ok, result.error
    assert failed(result) == [(None, False)]
    assert result.steps["ask"].time_to_first_token is not None


async def test_drop_after_the_first_chunk_never_falls_back(rig: Rig) -> None:
    rig.on_primary(Fault.drop_after(1))
    step = ("    stream: true\n    retry: {max_retries: 1, jitter: false}\n"
            "    fallback: [{provider: backup, model: claude-haiku-4-5}]")
    result = await rig.run(wf(step=step))
    assert result.ok, result.error
    assert rig.backup.requests == []  # text had reached us: no other provider continues it
    r = result.steps["ask"]
    assert r.provider == "primary" and r.attempts == 2  # the step's own retry re-ran it
    assert [a.request_sent for a in r.summary.failed_attempts] == [True]
    assert r.fallback_used is False


async def test_read_timeout_is_retried(rig: Rig) -> None:
    rig.on_primary(Fault.timeout())
    result = await rig.run(wf())
    assert result.ok, result.error
    assert failed(result) == [(None, True)]
    assert result.steps["ask"].summary.failed_attempts[0].phase == "read"


async def test_malformed_body_is_retried(rig: Rig) -> None:
    rig.on_primary(Fault.bad_body())
    result = await rig.run(wf())
    assert result.ok, result.error
    assert len(failed(result)) == 1 and failed(result)[0][1] is True


async def test_401_fails_fast(rig: Rig) -> None:
    rig.on_primary(Fault.status(401, body='{"error": {"message": "bad key"}}'), times=5)
    result = await rig.run(wf(step="    retry: {max_retries: 3}"))
    assert result.status.value == "failed"
    r = result.steps["ask"]
    assert r.status is StepStatus.FAILED and r.attempts == 1
    assert rig.faults.count == 1 and rig.clock.sleeps == []
    assert r.summary.provider_status_code == 401
    assert r.summary.error_request_sent is True
    assert failed(result) == [(401, True)]


async def test_a_failing_call_falls_back_to_another_providers_server(rig: Rig) -> None:
    # Without a profile the client doesn't retry a call: it moves on to the fallback
    # entry at once, and the step's own retry is left unused.
    rig.on_primary(Fault.status(503), times=10)
    step = ("    retry: {max_retries: 1, jitter: false}\n"
            "    fallback: [{provider: backup, model: claude-haiku-4-5}]")
    result = await rig.run(wf(step=step))
    assert result.ok, result.error
    r = result.steps["ask"]
    assert r.provider == "backup" and r.model.startswith("claude-haiku-4-5")
    assert r.fallback_used is True and r.attempts == 1
    assert failed(result) == [(503, True)]
    assert len(rig.backup.requests) == 1
    assert result.summary["fallbacks_used"] == 1
    assert result.summary["breakers"]["primary"]["consecutive_failures"] == 1


async def test_profile_retries_are_spent_before_the_fallback(rig: Rig) -> None:
    # A profile's `retries` (spec 004) retry the call itself, then the chain moves on.
    rig.on_primary(Fault.status(503), times=10)
    text = wf().replace("steps:\n", (
        "profiles:\n"
        "  sturdy:\n"
        "    provider: primary\n"
        "    model: gpt-4o-mini\n"
        "    retries: 2\n"
        "    fallback: [{provider: backup, model: claude-haiku-4-5}]\n"
        "steps:\n"), 1).replace('prompt: "Say hello"', 'prompt: "Say hello"\n    profile: sturdy')
    result = await rig.run(text)
    assert result.ok, result.error
    r = result.steps["ask"]
    assert r.provider == "backup" and r.attempts == 1
    assert failed(result) == [(503, True)] * 3
    assert len(rig.backup.requests) == 1


async def test_profile_fallback_on_401(rig: Rig) -> None:
    rig.on_primary(Fault.status(401), times=5)
    text = _PROVIDERS + """\
name: p
profiles:
  main:
    provider: primary
    model: gpt-4o-mini
    fallback: [{provider: backup, model: claude-haiku-4-5}]
steps:
  - {id: ask, type: llm_call, prompt: hi, profile: main}
"""
    result = await rig.run(text)
    assert result.ok, result.error
    assert result.steps["ask"].provider == "backup"
    assert failed(result) == [(401, True)]


async def test_run_past_its_deadline_is_cancelled_within_100ms() -> None:
    # A server that takes the request and never answers: only the deadline ends the call.
    held: list[asyncio.StreamWriter] = []

    async def never_answer(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        held.append(writer)
        await reader.read(65536)

    server = await asyncio.start_server(never_answer, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    try:
        async with Runtime() as runtime:
            runtime.add_provider("primary", {"type": "openai", "api_key": "k",
                                             "base_url": f"http://127.0.0.1:{port}/v1"})
            text = wf(config="  timeout: 0.05\n  max_concurrent_steps: 4")
            t0 = time.perf_counter()
            result = await arun_workflow(load_workflow(text), clients=runtime)
            elapsed = time.perf_counter() - t0
    finally:
        for w in held:
            w.close()
        server.close()
    assert result.status.value == "deadline_exceeded"
    assert result.steps["ask"].status is StepStatus.CANCELLED
    assert elapsed < 0.05 + 0.1
    assert result.steps["ask"].summary is not None
    assert result.steps["ask"].summary.status.value in ("cancelled", "deadline_exceeded")


def _fan_out(n: int, budget: str) -> str:
    steps = "\n".join(
        f"  - {{id: s{i}, type: llm_call, prompt: 'item {i}', max_tokens: 100}}"
        for i in range(n))
    return _PROVIDERS + f"""\
name: fan
config:
  provider: primary
  model: gpt-4o-mini
  max_concurrent_steps: 50
  budget_usd: {budget}
  prices: {{primary: {{gpt-4o-mini: {{input: 1000, output: 1000}}}}}}
steps:
{steps}
"""


async def test_cost_cap_stops_a_50_way_fan_out_before_it_overshoots(rig: Rig) -> None:
    # Each call's worst case: ~30 prompt tokens + 100 output at $1000/1M, ~ $0.13;
    # a $1 cap lets a handful through and refuses the rest before they are sent.
    result = await rig.run(_fan_out(50, "1.0"))
    assert result.status.value == "budget_exceeded"
    ok = [r for r in result.steps.values() if r.status is StepStatus.SUCCESS]
    refused = [r for r in result.steps.values() if r.error_type == "BudgetExceeded"]
    assert 0 < len(ok) < 50 and refused
    assert len(rig.primary.requests) == len(ok)  # a refused call was never sent
    assert result.cost_usd is not None and result.cost_usd <= Decimal("1.0")
    assert Decimal(str(result.budget["spent_usd"])) <= Decimal("1.0")
    assert "cost budget $1.0 would be crossed" in refused[0].error


async def test_cost_cap_over_an_unpriced_model_fails_before_the_first_call(rig: Rig) -> None:
    text = wf(config="  budget_usd: 5").replace("gpt-4o-mini", "my-finetune")
    result = await rig.run(text)
    assert not result.ok
    error = result.steps["ask"].error or ""
    assert "'my-finetune'" in error and "price" in error and "pricing:" in error
    assert rig.primary.requests == []


async def test_token_budget_per_run(rig: Rig) -> None:
    text = _fan_out(5, "100").replace("  budget_usd: 100\n", "  max_tokens_per_run: 200\n")
    result = await rig.run(text)
    assert result.status.value == "budget_exceeded"
    assert result.budget is not None and result.budget["spent_tokens"] <= 200


async def test_reply_shape_carries_tokens_cost_and_summary(rig: Rig) -> None:
    rig.primary.script(FakeReply(text="hi", input_tokens=20, output_tokens=5,
                                 reasoning_tokens=2))
    result = await rig.run(wf(
        config="  prices: {primary: {gpt-4o-mini: {input: 0.15, output: 0.6}}}"))
    d = result.to_dict()
    step = d["steps"]["ask"]
    assert step["tokens"]["reasoning"] == 2 and step["tokens"]["total"] == 25
    assert step["cost_usd"] is not None and step["cost_usd"] > 0
    assert step["summary"]["status"] == "completed"
    assert step["summary"]["usage"]["input_tokens"] == 20
    assert d["summary"]["status"] == "success" and d["summary"]["steps"] == {"success": 1}
    assert d["summary"]["tokens"] == 25


async def test_a_step_retry_runs_the_whole_loop_again_tools_included() -> None:
    """Spec 000: "A retry runs the whole loop again, the tools included", and the step's
    result covers the calls of the loop that answered."""
    from agentloom.errors import ProviderError
    from agentloom.testing.scripted import ScriptedModel, tool_call
    from agentloom.tools import ToolRegistry, tool
    from agentloom.workflow import arun_workflow, load_workflow
    from tests.workflow.wf_helpers import Factory, FakeClock

    ran: list[int] = []

    @tool
    def note(n: int) -> str:
        """Record a number."""
        ran.append(n)
        return "noted"

    unavailable = ProviderError("overloaded", provider="scripted", status=503,
                                request_sent=True, retryable=True)
    model = ScriptedModel([[tool_call("note", {"n": 1})], unavailable,
                           [tool_call("note", {"n": 2})], "done"])
    flow = load_workflow(
        "name: r\nsteps:\n  - id: s\n    type: llm_call\n    prompt: go\n"
        "    tools: [{name: note}]\n    retry: {max_retries: 1, jitter: false}\n"
        "    output: out\n")

    class Tools:
        registry = ToolRegistry([note])

        def toolbox(self, declared: Any, **kw: Any) -> Any:
            return self.registry.toolbox(declared)

    result = await arun_workflow(flow, clients=Factory(model), tools=Tools(),  # type: ignore[arg-type]
                                 clock=FakeClock())  # type: ignore[arg-type]
    assert result.ok, result.error
    step = result.steps["s"]
    assert step.attempts == 2 and step.output == "done"
    assert ran == [1, 2]  # the tool ran again in the second attempt
    assert len(model.requests) == 4
    assert step.summary.provider_retries == 1
    assert [(a.status_code, a.request_sent) for a in step.summary.failed_attempts] == [(503, True)]


def test_a_fallback_to_a_model_sharing_the_primarys_prefix_counts_as_a_fallback() -> None:
    from agentloom.workflow.engine.run import same_model

    assert same_model("gpt-4o", "gpt-4o")
    assert same_model("gpt-4o-2024-08-06", "gpt-4o")
    assert same_model("claude-sonnet-4-5-20250929", "claude-sonnet-4-5")
    assert same_model("llama3:latest", "llama3")
    assert not same_model("gpt-4o-mini", "gpt-4o")
    assert not same_model("gpt-4o-mini-2024-07-18", "gpt-4o")
    assert same_model("gemini-1.5-pro-002", "gemini-1.5-pro")
    assert not same_model("claude-sonnet-4-5", "claude-sonnet-4")


async def test_a_fallback_without_its_key_matters_only_when_reached(rig: Rig) -> None:
    # `anthropic` is a known vendor, but no ANTHROPIC_API_KEY was given to this runtime.
    step = "    fallback: [{provider: anthropic, model: claude-haiku-4-5}]"
    result = await rig.run(wf(step=step))
    assert result.ok, result.error  # the primary answered: the fallback was never needed
    rig.on_primary(Fault.status(401))
    result = await rig.run(wf(step=step))
    assert not result.ok
    error = result.steps["ask"].error or ""
    assert "ANTHROPIC_API_KEY" in error and "401" in error


async def test_a_retried_steps_failed_attempts_count_on(rig: Rig) -> None:
    # Each engine attempt is a new call: its loop numbers from 1 again, and the step's
    # summary must not read "attempt 1" three times for three tries of one model.
    rig.on_primary(Fault.status(500), times=2)
    result = await rig.run(wf(step="    retry: {max_retries: 2, jitter: false}"))
    assert result.ok, result.error
    attempts = result.steps["ask"].summary.failed_attempts
    assert [(a.provider, a.attempt) for a in attempts] == [("primary", 1), ("primary", 2)]
