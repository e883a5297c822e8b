"""What the engine derives once and reuses across runs (a step's client arguments, its
tool box) must follow every change that matters: a config override, a registry whose
tool was replaced. And steps must start from the run's context, not from the step that
released them."""

from __future__ import annotations

import contextlib
import contextvars
import inspect
from collections.abc import AsyncIterator, Callable
from decimal import Decimal
from typing import Any

import pytest
from wf_helpers import Factory, FakeClock, echo_model

from agentloom.messages import ModelRequest, ToolResultPart
from agentloom.pricing import PriceTable
from agentloom.providers import vendor_endpoint
from agentloom.routing import BreakerSettings, RateLimit, RetryPolicy
from agentloom.routing.runtime import Runtime
from agentloom.testing import FakeOpenAIServer
from agentloom.testing._server import FakeReply
from agentloom.testing.scripted import FunctionModel, tool_call
from agentloom.tools import ToolRegistry, tool
from agentloom.workflow import arun_workflow, load_workflow_text

TOOL_FLOW = """\
name: tools
steps:
  - id: ask
    type: llm_call
    prompt: go
    tools: [probe]
"""


def _tool_then_answer(request: ModelRequest) -> Any:
    results = [p for m in request.messages for p in m.parts if isinstance(p, ToolResultPart)]
    if not results:
        return [tool_call("probe")]
    return "tool said " + str(results[-1].content)


async def test_a_replaced_tool_is_used_by_the_next_run() -> None:
    wf = load_workflow_text(TOOL_FLOW)

    @tool(name="probe")
    def first() -> str:
        """Probe."""
        return "one"

    @tool(name="probe")
    def second() -> str:
        """Probe."""
        return "two"

    registry = ToolRegistry([first])
    factory = Factory(FunctionModel(_tool_then_answer))
    r1 = await arun_workflow(wf, clients=factory, tools=registry)
    r1_again = await arun_workflow(wf, clients=factory, tools=registry)
    registry.register(second, replace=True)
    r2 = await arun_workflow(wf, clients=factory, tools=registry)
    assert (r1.steps["ask"].text, r1_again.steps["ask"].text, r2.steps["ask"].text) == (
        "tool said one", "tool said one", "tool said two")
    other = ToolRegistry([second])
    r3 = await arun_workflow(wf, clients=factory, tools=other)
    assert r3.steps["ask"].text == "tool said two"


async def test_a_config_override_reaches_the_client_factory() -> None:
    wf = load_workflow_text("name: m\nconfig: {model: base}\nsteps:\n"
                            "  - {id: a, type: llm_call, prompt: hi}\n")
    factory = Factory(echo_model())
    await arun_workflow(wf, clients=factory)
    await arun_workflow(wf.with_overrides(model="other"), clients=factory)
    await arun_workflow(wf, clients=factory)
    assert [m for m, _ in factory.asked] == ["base", "other", "base"]


_MARK: contextvars.ContextVar[str | None] = contextvars.ContextVar("mark", default=None)


async def test_a_step_starts_from_the_runs_context_not_its_dependency() -> None:
    # A step that leaves a context variable set must not hand it to the steps it
    # releases: each step task starts from the run's own context.
    seen: dict[str, str | None] = {}

    def answer(request: ModelRequest) -> str:
        prompt = request.messages[-1].text
        seen[prompt] = _MARK.get()
        _MARK.set(prompt)  # left set on purpose, inside the step's task
        return "ok"

    wf = load_workflow_text(
        "name: c\nconfig: {max_concurrent_steps: 1}\nsteps:\n"
        "  - {id: a, type: llm_call, prompt: a}\n"
        "  - {id: b, type: llm_call, prompt: b, depends_on: [a]}\n"
        "  - {id: c, type: llm_call, prompt: c}\n"
        "  - {id: d, type: llm_call, prompt: d, depends_on: [b, c]}\n")
    token = _MARK.set("run")
    try:
        result = await arun_workflow(wf, clients=Factory(FunctionModel(answer)))
    finally:
        _MARK.reset(token)
    assert result.ok
    assert seen == {"a": "run", "b": "run", "c": "run", "d": "run"}


async def test_a_one_step_run_keeps_its_steps_context_variables_to_itself() -> None:
    # A one-step run runs its step in the caller's task, but still in a context of its own:
    # what the step sets is neither seen by the caller nor by the next run.
    seen: list[str | None] = []

    def answer(request: ModelRequest) -> str:
        seen.append(_MARK.get())
        _MARK.set("step")  # left set on purpose
        return "ok"

    wf = load_workflow_text("name: one\nsteps:\n  - {id: a, type: llm_call, prompt: a}\n")
    token = _MARK.set("caller")
    try:
        first = await arun_workflow(wf, clients=Factory(FunctionModel(answer)))
        assert _MARK.get() == "caller"
        second = await arun_workflow(wf, clients=Factory(FunctionModel(answer)))
        assert _MARK.get() == "caller"
    finally:
        _MARK.reset(token)
    assert first.ok and second.ok
    assert seen == ["caller", "caller"]


async def test_a_one_step_run_past_its_deadline_is_cancelled() -> None:
    import asyncio

    started = asyncio.Event()

    async def slow(request: ModelRequest) -> str:
        started.set()
        await asyncio.Event().wait()  # hangs until the deadline cancels it
        return "late"

    wf = load_workflow_text(
        "name: slow\nconfig: {timeout: 0.01}\nsteps:\n  - {id: a, type: llm_call, prompt: a}\n")
    result = await arun_workflow(wf, clients=Factory(FunctionModel(slow)))
    assert started.is_set()
    assert result.status.value == "deadline_exceeded"
    assert result.steps["a"].status.value == "cancelled"
    assert asyncio.current_task() is not None and asyncio.current_task().cancelling() == 0


async def test_a_steps_request_follows_the_rendered_prompt_and_the_config() -> None:
    # The loaded workflow keeps per-step memos across runs (tool box, client); none of
    # them may carry one run's prompt, model or stream setting into the next.
    wf = load_workflow_text("name: p\nconfig: {model: base}\nstate: {city: Paris}\nsteps:\n"
                            "  - {id: a, type: llm_call, prompt: 'weather in {state.city}'}\n")
    sent: list[tuple[str, str, bool]] = []

    def answer(request: ModelRequest) -> str:
        sent.append((request.model, request.messages[-1].text, request.stream))
        return "ok"

    factory = Factory(FunctionModel(answer))
    await arun_workflow(wf, clients=factory)
    await arun_workflow(wf, clients=factory)
    await arun_workflow(wf, clients=factory, state={"city": "Oslo"})
    await arun_workflow(wf.with_overrides(model="other"), clients=factory)
    await arun_workflow(wf.with_overrides(stream=True), clients=factory)
    await arun_workflow(wf, clients=factory)
    assert sent == [("base", "weather in Paris", False), ("base", "weather in Paris", False),
                    ("base", "weather in Oslo", False), ("other", "weather in Paris", False),
                    ("base", "weather in Paris", True), ("base", "weather in Paris", False)]


async def test_a_reused_tool_box_follows_a_config_override_of_its_options() -> None:
    wf = load_workflow_text(TOOL_FLOW)

    @tool(name="probe")
    def broken() -> str:
        """Probe."""
        raise RuntimeError("down")

    registry = ToolRegistry([broken])
    factory = Factory(FunctionModel(_tool_then_answer))
    plain = await arun_workflow(wf, clients=factory, tools=registry)
    hinted = await arun_workflow(wf.with_overrides(tool_error_prompt="Try another city."),
                                 clients=factory, tools=registry)
    again = await arun_workflow(wf, clients=factory, tools=registry)
    assert plain.steps["ask"].text == again.steps["ask"].text == "tool said RuntimeError: down"
    assert hinted.steps["ask"].text == "tool said RuntimeError: down\n\nTry another city."


# --- a step's router, kept across runs while the runtime's revision holds ----------------

ROUTED_FLOW = ("name: routed\nconfig: {provider: openai, model: gpt-4o-mini}\nsteps:\n"
               "  - {id: a, type: llm_call, prompt: hi}\n")


class _Counting(Runtime):
    """A runtime that keeps every client it built."""

    def __init__(self, **kw: Any) -> None:
        super().__init__(**kw)
        self.built: list[Any] = []

    def client(self, **kw: Any) -> Any:
        made = super().client(**kw)
        self.built.append(made)
        return made


class _ReadsThrough:
    """A factory that reads through to a runtime but hands out a client of its own per
    call (as a durable run's journal does): never taken for the runtime it wraps."""

    def __init__(self, inner: Runtime) -> None:
        self._inner = inner
        self.built = 0

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)

    def client(self, **kw: Any) -> Any:
        self.built += 1
        return self._inner.client(**kw)


def _server() -> FakeOpenAIServer:
    return FakeOpenAIServer(responder=lambda _body: FakeReply(
        text="hello", input_tokens=1000, output_tokens=1000))


@contextlib.asynccontextmanager
async def _routed() -> AsyncIterator[tuple[_Counting, FakeOpenAIServer]]:
    """A counting runtime over a fake OpenAI server on loopback."""
    async with _server() as server:
        runtime = _Counting(endpoints=[vendor_endpoint(
            "openai", api_key="sk-test", base_url=server.openai_base_url)])
        try:
            yield runtime, server
        finally:
            await runtime.aclose()


async def test_a_steps_router_is_kept_across_runs_of_one_runtime() -> None:
    async with _routed() as (runtime, server):
        wf = load_workflow_text(ROUTED_FLOW)
        results = [await arun_workflow(wf, clients=runtime) for _ in range(3)]
        assert len(runtime.built) == 1
        assert [r.steps["a"].text for r in results] == ["hello"] * 3
        assert len({r.steps["a"].usage.cost_usd for r in results}) == 1
        assert len(server.requests) == 3
        # Another loaded copy of the file, or a config override, builds its own.
        await arun_workflow(load_workflow_text(ROUTED_FLOW), clients=runtime)
        await arun_workflow(wf.with_overrides(model="gpt-4o"), clients=runtime)
        assert len(runtime.built) == 3


_CHANGES: dict[str, Callable[[Runtime, FakeOpenAIServer], Any]] = {
    "add_provider": lambda rt, other: rt.add_provider(
        "openai", {"base_url": other.openai_base_url, "api_key": "sk-other"}),
    "set_rate_limit": lambda rt, _: rt.set_rate_limit("openai", RateLimit(rpm=6000)),
    "set_prices": lambda rt, _: rt.set_prices(PriceTable.from_mapping(
        {"openai": {"gpt-4o-mini": {"input": 1, "output": 2}}})),
    "set_breaker": lambda rt, _: rt.set_breaker(BreakerSettings(failure_threshold=1)),
    "aclose": lambda rt, _: rt.aclose(),
    "prices": lambda rt, _: setattr(rt, "prices", PriceTable.from_mapping(
        {"openai": {"gpt-4o-mini": {"input": 1, "output": 2}}})),
    "retry": lambda rt, _: setattr(rt, "retry", RetryPolicy(max_retries=1)),
    "clock": lambda rt, _: setattr(rt, "clock", FakeClock()),
}


@pytest.mark.parametrize("change", sorted(_CHANGES))
async def test_each_runtime_change_gives_the_step_a_fresh_router(change: str) -> None:
    async with _routed() as (runtime, server), _server() as other:
        wf = load_workflow_text(ROUTED_FLOW)
        before = await arun_workflow(wf, clients=runtime)
        done = _CHANGES[change](runtime, other)
        if inspect.isawaitable(done):
            await done
        after = await arun_workflow(wf, clients=runtime)
        again = await arun_workflow(wf, clients=runtime)
        assert before.ok and after.ok and again.ok
        assert len(runtime.built) == 2  # rebuilt once, then kept again
        router = runtime.built[-1]
        # The fresh router is what a new one would be: the changed setting is in it.
        (cand,) = router.candidates
        if change == "add_provider":
            assert (len(server.requests), len(other.requests)) == (1, 2)
        elif change == "set_rate_limit":
            assert cand.limiter is not None and runtime.built[0].candidates[0].limiter is None
        elif change in ("set_prices", "prices"):
            assert after.steps["a"].usage.cost_usd == Decimal("0.003")
            assert before.steps["a"].usage.cost_usd != after.steps["a"].usage.cost_usd
        elif change == "set_breaker":
            assert cand.breaker is not None and cand.breaker.settings.failure_threshold == 1
        elif change == "retry":
            assert router.retry is runtime.built[0].retry  # a step's client never retries
        assert after.steps["a"].text == again.steps["a"].text == "hello"


async def test_a_run_budget_or_a_wrapping_factory_builds_a_router_per_run() -> None:
    async with _routed() as (runtime, _):
        budgeted = load_workflow_text(ROUTED_FLOW.replace(
            "model: gpt-4o-mini}", "model: gpt-4o-mini, budget_usd: 5}"))
        for _ in range(2):
            assert (await arun_workflow(budgeted, clients=runtime)).ok
        assert len(runtime.built) == 2
        assert all(r.budget is not None for r in runtime.built)
        assert runtime.built[0].budget is not runtime.built[1].budget
        wrapper = _ReadsThrough(runtime)
        wf = load_workflow_text(ROUTED_FLOW)
        for _ in range(2):
            assert (await arun_workflow(wf, clients=wrapper)).ok
        assert wrapper.built == 2
