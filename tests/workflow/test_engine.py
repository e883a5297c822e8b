"""The engine: ready-queue scheduling, concurrency, retries, skips, deadlines."""

from __future__ import annotations

import asyncio
from decimal import Decimal

from wf_helpers import Factory, FakeClock, echo_model

from agentloom.errors import ProviderError, TemplateError
from agentloom.messages import Usage
from agentloom.testing.scripted import FunctionModel, ScriptedModel, make_response
from agentloom.workflow import RunStatus, StepStatus, arun_workflow, load_workflow_text

FAN = """\
name: fan
config: {max_concurrent_steps: 4}
steps:
  - id: a
    type: llm_call
    prompt: "start"
    output: a_out
  - id: b
    type: llm_call
    depends_on: [a]
    prompt: "b got {state.a_out}"
    output: b_out
  - id: c
    type: llm_call
    depends_on: [a]
    prompt: "c got {steps.a.output}"
    output: c_out
  - id: d
    type: llm_call
    depends_on: [b, c]
    prompt: "{state.b_out} | {state.c_out}"
    output: final
"""


async def test_independent_middle_steps_overlap() -> None:
    both_in = asyncio.Event()
    inside: set[str] = set()

    async def answer(request):  # type: ignore[no-untyped-def]
        text = request.messages[-1].text
        if text.startswith(("b got", "c got")):
            inside.add(text[:1])
            if len(inside) == 2:
                both_in.set()
            # Each middle step waits until the other is running too: only concurrent
            # execution gets past this line (the timeout turns a hang into a failure).
            await asyncio.wait_for(both_in.wait(), 2)
        return text.upper()

    wf = load_workflow_text(FAN)
    result = await arun_workflow(wf, clients=Factory(FunctionModel(answer)))
    assert result.status is RunStatus.SUCCESS, result.error
    assert inside == {"b", "c"}
    assert result.state["b_out"] == "B GOT START"
    assert result.state["c_out"] == "C GOT START"
    assert result.state["final"] == "B GOT START | C GOT START"
    assert result.final_outputs == {"final": "B GOT START | C GOT START"}
    assert result.steps["d"].usage is not None and result.tokens == 60


async def test_ready_queue_starts_a_step_when_its_own_deps_finish() -> None:
    # slow -> after_slow, fast -> after_fast: after_fast must start while slow still
    # runs (a layer scheduler would hold it until slow finished).
    text = """\
name: rq
steps:
  - {id: slow, type: llm_call, prompt: slow}
  - {id: fast, type: llm_call, prompt: fast}
  - {id: after_fast, type: llm_call, depends_on: [fast], prompt: after_fast}
  - {id: after_slow, type: llm_call, depends_on: [slow], prompt: after_slow}
"""
    release_slow = asyncio.Event()
    order: list[str] = []

    async def answer(request):  # type: ignore[no-untyped-def]
        name = request.messages[-1].text
        order.append(name)
        if name == "slow":
            await asyncio.wait_for(release_slow.wait(), 2)
        if name == "after_fast":
            release_slow.set()
        return name

    result = await arun_workflow(load_workflow_text(text),
                                 clients=Factory(FunctionModel(answer)))
    assert result.status is RunStatus.SUCCESS
    assert order.index("after_fast") < order.index("after_slow")


async def test_max_concurrent_steps_bounds_parallelism() -> None:
    steps = "\n".join(f"  - {{id: s{i}, type: llm_call, prompt: p{i}}}" for i in range(6))
    wf = load_workflow_text(f"name: lim\nconfig: {{max_concurrent_steps: 2}}\nsteps:\n{steps}\n")
    running = 0
    peak = 0

    async def answer(request):  # type: ignore[no-untyped-def]
        nonlocal running, peak
        running += 1
        peak = max(peak, running)
        await asyncio.sleep(0)
        await asyncio.sleep(0)
        running -= 1
        return "ok"

    result = await arun_workflow(wf, clients=Factory(FunctionModel(answer)))
    assert result.status is RunStatus.SUCCESS
    assert peak == 2


RETRY = """\
name: retry
steps:
  - id: a
    type: llm_call
    prompt: hi
    retry: {max_retries: 3, backoff_base: 2, backoff_max: 60, jitter: false}
    output: out
  - id: b
    type: llm_call
    depends_on: [a]
    prompt: "{state.out}"
"""


def _err(status: int | None, retryable: bool) -> ProviderError:
    return ProviderError("boom", provider="fake", model="m", status=status,
                         retryable=retryable, request_sent=True)


async def test_retryable_status_is_retried_with_backoff(fake_clock: FakeClock) -> None:
    model = ScriptedModel([_err(503, True), _err(None, True), "fine", "second"])
    result = await arun_workflow(load_workflow_text(RETRY), clients=Factory(model),
                                 clock=fake_clock)
    assert result.status is RunStatus.SUCCESS
    assert result.steps["a"].attempts == 3
    assert fake_clock.sleeps == [1.0, 2.0]  # backoff_base ** 0, ** 1


async def test_permanent_status_fails_at_once_and_skips_dependents(
        fake_clock: FakeClock) -> None:
    model = ScriptedModel([_err(401, False)])
    result = await arun_workflow(load_workflow_text(RETRY), clients=Factory(model),
                                 clock=fake_clock)
    assert result.status is RunStatus.FAILED
    a, b = result.steps["a"], result.steps["b"]
    assert a.status is StepStatus.FAILED and a.attempts == 1
    assert a.error_type == "ProviderError" and "status=401" in (a.error or "")
    assert fake_clock.sleeps == []
    assert b.status is StepStatus.SKIPPED
    assert b.reason == "skipped: dependency 'a' failed"
    assert len(model.requests) == 1


async def test_retryable_status_codes_of_the_step_decide(fake_clock: FakeClock) -> None:
    text = RETRY.replace("jitter: false}", "jitter: false, retryable_status_codes: [418]}")
    model = ScriptedModel([_err(418, False), _err(503, True)])
    result = await arun_workflow(load_workflow_text(text), clients=Factory(model),
                                 clock=fake_clock)
    assert result.steps["a"].attempts == 2  # 418 retried, then 503 (not listed) is final
    assert result.steps["a"].status is StepStatus.FAILED


async def test_retries_exhausted(fake_clock: FakeClock) -> None:
    model = ScriptedModel([_err(503, True)] * 4)
    result = await arun_workflow(load_workflow_text(RETRY), clients=Factory(model),
                                 clock=fake_clock)
    assert result.steps["a"].attempts == 4
    assert fake_clock.sleeps == [1.0, 2.0, 4.0]
    assert result.status is RunStatus.FAILED


async def test_config_max_retries_is_the_default(fake_clock: FakeClock) -> None:
    text = "name: x\nconfig: {max_retries: 1}\nsteps:\n  - {id: a, type: llm_call, prompt: hi}\n"
    model = ScriptedModel([_err(503, True)] * 5)
    result = await arun_workflow(load_workflow_text(text), clients=Factory(model),
                                 clock=fake_clock)
    assert result.steps["a"].attempts == 2


async def test_template_error_at_run_time_is_not_retried(fake_clock: FakeClock) -> None:
    text = "name: x\nsteps:\n  - {id: a, type: llm_call, prompt: '{state.missing}'}\n"
    model = ScriptedModel([])
    result = await arun_workflow(load_workflow_text(text), clients=Factory(model),
                                 clock=fake_clock)
    a = result.steps["a"]
    assert a.status is StepStatus.FAILED and a.attempts == 1
    assert a.error_type == TemplateError.__name__
    assert "Prompt template error" in (a.error or "")
    assert model.requests == []


async def test_step_timeout_per_attempt_is_retried() -> None:
    calls = 0

    async def answer(request):  # type: ignore[no-untyped-def]
        nonlocal calls
        calls += 1
        if calls == 1:
            await asyncio.Event().wait()  # hangs until the step timeout cancels it
        return "late but fine"

    text = ("name: x\nsteps:\n  - id: a\n    type: llm_call\n    prompt: hi\n"
            "    timeout: 0.02\n    retry: {max_retries: 1, backoff_base: 1, backoff_max: 0}\n")
    result = await arun_workflow(load_workflow_text(text),
                                 clients=Factory(FunctionModel(answer)), clock=FakeClock())
    assert result.status is RunStatus.SUCCESS
    assert result.steps["a"].attempts == 2


async def test_run_deadline_cancels_work_in_flight() -> None:
    cancelled = asyncio.Event()

    async def answer(request):  # type: ignore[no-untyped-def]
        try:
            await asyncio.Event().wait()  # hangs until the run deadline
        except asyncio.CancelledError:
            cancelled.set()
            raise
        return "never"

    text = ("name: x\nconfig: {timeout: 0.05}\nsteps:\n"
            "  - {id: a, type: llm_call, prompt: hi}\n"
            "  - {id: b, type: llm_call, prompt: hi, depends_on: [a]}\n")
    loop = asyncio.get_running_loop()
    t0 = loop.time()
    result = await arun_workflow(load_workflow_text(text),
                                 clients=Factory(FunctionModel(answer)))
    elapsed = loop.time() - t0
    assert result.status is RunStatus.DEADLINE_EXCEEDED
    assert cancelled.is_set()
    assert elapsed < 0.05 + 0.1
    assert result.steps["a"].status is StepStatus.CANCELLED
    assert result.steps["b"].status is StepStatus.SKIPPED


async def test_continue_on_failure_runs_dependents() -> None:
    text = ("name: x\nconfig: {on_step_failure: continue, max_retries: 0}\nsteps:\n"
            "  - {id: a, type: llm_call, prompt: a}\n"
            "  - {id: b, type: llm_call, prompt: b, depends_on: [a]}\n")

    def answer(request):  # type: ignore[no-untyped-def]
        if request.messages[-1].text == "a":
            return _err(400, False)
        return "b ran"

    result = await arun_workflow(load_workflow_text(text),
                                 clients=Factory(FunctionModel(answer)))
    assert result.steps["b"].status is StepStatus.SUCCESS
    assert result.status is RunStatus.FAILED


async def test_skips_cascade_through_a_chain() -> None:
    steps = ["  - {id: s0, type: llm_call, prompt: x}"]
    steps += [f"  - {{id: s{i}, type: llm_call, prompt: x, depends_on: [s{i - 1}]}}"
              for i in range(1, 5)]
    text = "name: x\nconfig: {max_retries: 0}\nsteps:\n" + "\n".join(steps) + "\n"
    result = await arun_workflow(load_workflow_text(text),
                                 clients=Factory(ScriptedModel([_err(400, False)])))
    assert [r.status for r in result.steps.values()] == [StepStatus.FAILED] + \
        [StepStatus.SKIPPED] * 4
    assert result.steps["s2"].reason == "skipped: dependency 's1' was skipped after a failure"


async def test_step_model_wins_over_config_model() -> None:
    text = ("name: x\nconfig: {model: base, provider: p0}\nsteps:\n"
            "  - {id: a, type: llm_call, prompt: a, model: own}\n"
            "  - {id: b, type: llm_call, prompt: b}\n")
    factory = Factory(echo_model())
    wf = load_workflow_text(text).with_overrides(model="from-cli")
    result = await arun_workflow(wf, clients=factory)
    assert result.status is RunStatus.SUCCESS
    assert sorted(factory.asked) == [("from-cli", "p0"), ("own", "p0")]
    assert factory.model.requests[0].model in ("own", "from-cli")


async def test_result_carries_usage_model_and_finish_reason() -> None:
    response = make_response("hi", model="m-1", provider="prov",
                             usage=Usage(input_tokens=3, output_tokens=4,
                                         cost_usd=Decimal("0.01")))
    result = await arun_workflow(
        load_workflow_text("name: x\nsteps:\n  - {id: a, type: llm_call, prompt: q}\n"),
        clients=Factory(ScriptedModel([response])))
    a = result.steps["a"]
    assert (a.model, a.provider, a.finish_reason, a.tokens) == ("m-1", "prov", "stop", 7)
    assert result.cost_usd == Decimal("0.01")
    data = result.to_dict()
    assert data["steps"]["a"]["cost_usd"] == 0.01
    assert data["steps"]["a"]["tokens"]["total"] == 7


async def test_unknown_cost_is_none_and_budget_fails_closed() -> None:
    text = ("name: x\nconfig: {budget_usd: 1}\nsteps:\n"
            "  - {id: a, type: llm_call, prompt: q}\n"
            "  - {id: b, type: llm_call, prompt: q, depends_on: [a]}\n")
    result = await arun_workflow(load_workflow_text(text),
                                 clients=Factory(ScriptedModel(["one", "two"])))
    assert result.cost_usd is None
    assert result.status is RunStatus.BUDGET_EXCEEDED
    assert result.steps["b"].status is StepStatus.SKIPPED


async def test_budget_stops_new_steps_once_spent() -> None:
    priced = make_response("x", usage=Usage(input_tokens=1, output_tokens=1,
                                            cost_usd=Decimal("0.6")))
    text = ("name: x\nconfig: {budget_usd: 1}\nsteps:\n"
            "  - {id: a, type: llm_call, prompt: q}\n"
            "  - {id: b, type: llm_call, prompt: q, depends_on: [a]}\n"
            "  - {id: c, type: llm_call, prompt: q, depends_on: [b]}\n")
    result = await arun_workflow(load_workflow_text(text),
                                 clients=Factory(ScriptedModel([priced, priced, priced])))
    assert result.status is RunStatus.BUDGET_EXCEEDED
    assert result.steps["b"].status is StepStatus.SUCCESS
    assert result.steps["c"].status is StepStatus.SKIPPED


async def test_streaming_passes_text_deltas_with_the_step_id() -> None:
    seen: list[tuple[str, str]] = []

    def on_event(step_id, event):  # type: ignore[no-untyped-def]
        if event.kind == "text_delta":
            seen.append((step_id, event.text))

    text = "name: x\nconfig: {stream: true}\nsteps:\n  - {id: a, type: llm_call, prompt: q}\n"
    result = await arun_workflow(load_workflow_text(text),
                                 clients=Factory(ScriptedModel(["hello big world"])),
                                 on_event=on_event)
    assert result.status is RunStatus.SUCCESS
    assert "".join(t for _, t in seen) == "hello big world"
    assert {s for s, _ in seen} == {"a"}


async def test_dotted_output_and_state_override() -> None:
    text = ("name: x\nstate: {who: file}\nsteps:\n"
            "  - {id: a, type: llm_call, prompt: 'hi {state.who}', output: report.greeting}\n")
    result = await arun_workflow(load_workflow_text(text), clients=Factory(echo_model()),
                                 state={"who": "cli"})
    assert result.state["report"] == {"greeting": "echo: hi cli"}


async def test_unwritable_output_fails_the_step_not_the_run() -> None:
    text = ("name: x\nstate: {a: text}\nsteps:\n"
            "  - {id: s, type: llm_call, prompt: p, output: a.b}\n"
            "  - {id: t, type: llm_call, prompt: p}\n")
    result = await arun_workflow(load_workflow_text(text), clients=Factory(echo_model()))
    assert result.steps["s"].status is StepStatus.FAILED
    assert "cannot write 'a.b'" in (result.steps["s"].error or "")
    assert result.steps["t"].status is StepStatus.SUCCESS
    assert result.state["a"] == "text"
