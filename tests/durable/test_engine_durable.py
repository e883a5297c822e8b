"""Durable runs through the engine, in process: checkpoints, pauses and resumes."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from agentloom.store import MemoryStore
from agentloom.testing.scripted import ScriptedModel, tool_call
from agentloom.tools import ToolRegistry, tool
from agentloom.workflow import RunStatus, StepStatus, arun_workflow, load_workflow_text
from agentloom.workflow.durable.run import Decision, DurableRun, ask


class Factory:
    default_model = "test-model"

    def __init__(self, model: Any) -> None:
        self.model = model

    def client(self, **_: Any) -> Any:
        return self.model


LOOP = """\
name: loop
steps:
  - {id: first, type: llm_call, prompt: "start", output: a}
  - id: agent
    type: llm_call
    depends_on: [first]
    prompt: "use tools"
    tools: [lookup, confirm]
    output: b
  - {id: last, type: llm_call, depends_on: [agent], prompt: "end {state.b}", output: c}
"""


def _registry(log: list[str]) -> ToolRegistry:
    @tool
    def lookup(q: str) -> str:
        """Look a thing up."""
        log.append(f"lookup:{q}")
        return f"found {q}"

    @tool
    def confirm(what: str) -> str:
        """Ask a person to confirm."""
        log.append(f"confirm-start:{what}")
        answer = ask(f"confirm {what}?", kind="choose_one", choices=["yes", "no"])
        log.append(f"confirm:{answer}")
        return f"person said {answer}"

    reg = ToolRegistry()
    reg.register(lookup)
    reg.register(confirm)
    return reg


async def _durable(store: Any, run_id: str, **kw: Any) -> DurableRun:
    if "resumed" in kw:
        kw["resumed"] = await store.load_latest(run_id)
    return DurableRun(store=store, run_id=run_id, workflow_hash="h", **kw)


async def test_pause_inside_a_tool_resumes_mid_loop_without_asking_the_model_again() -> None:
    store = MemoryStore()
    log: list[str] = []
    replies = [
        "one",
        [tool_call("lookup", {"q": "x"}, id="c1")],
        [tool_call("confirm", {"what": "deploy"}, id="c2")],
        "agent done",
        "three",
    ]
    model = ScriptedModel(replies)
    wf = load_workflow_text(LOOP)
    d = await _durable(store, "r1")
    result = await arun_workflow(wf, clients=Factory(model), tools=_registry(log), durable=d)
    assert result.status is RunStatus.PAUSED, result.error
    assert result.steps["last"].status is not StepStatus.SUCCESS
    run = await store.get_run("r1")
    assert run is not None and run.status == "paused"
    cp = await store.load_latest("r1")
    assert cp is not None and cp.paused is not None
    assert cp.paused.call_id == "2:c2" and cp.paused.waiting_for == "answer"
    assert cp.paused.data["choices"] == ["yes", "no"]
    calls_before = len(model.requests)
    assert calls_before == 3  # first, and two turns of the loop

    d2 = await _durable(store, "r1", resumed=True, decision=Decision(answer="yes"))
    result = await arun_workflow(wf, clients=Factory(model), tools=_registry(log), durable=d2)
    assert result.status is RunStatus.SUCCESS, result.error
    # Only the answering turn of the loop and the last step asked the model.
    assert len(model.requests) == calls_before + 2
    assert log == ["lookup:x", "confirm-start:deploy", "confirm-start:deploy", "confirm:yes"]
    assert result.state["b"] == "agent done"
    # The answer went to that call: the model's next request carries it.
    last_loop_request = model.requests[calls_before]
    assert "person said yes" in str(last_loop_request.messages[-1])
    assert (await store.get_run("r1")).status == "succeeded"  # type: ignore[union-attr]


GATE = """\
name: gate
steps:
  - {id: draft, type: llm_call, prompt: "draft", output: draft}
  - id: approve
    type: approval_gate
    depends_on: [draft]
    message: "send {state.draft}?"
    timeout_seconds: 3600
    on_timeout: reject
    output: decision
  - {id: send, type: llm_call, depends_on: [approve], prompt: "{state.decision}", output: r}
"""


async def test_approval_gate_pauses_and_resumes_with_the_decision() -> None:
    store = MemoryStore()
    model = ScriptedModel(["the draft", "sent"])
    wf = load_workflow_text(GATE)
    result = await arun_workflow(wf, clients=Factory(model), durable=await _durable(store, "g"))
    assert result.status is RunStatus.PAUSED
    cp = await store.load_latest("g")
    assert cp is not None and cp.paused is not None
    assert cp.paused.step_id == "approve" and cp.paused.prompt == "send the draft?"
    d = await _durable(store, "g", resumed=True, decision=Decision(approve=True))
    result = await arun_workflow(wf, clients=Factory(model), durable=d)
    assert result.status is RunStatus.SUCCESS, result.error
    assert result.state["decision"] == "approved"
    assert len(model.requests) == 2  # the draft was not asked again


async def test_approval_gate_applies_on_timeout_when_resumed_late() -> None:
    store = MemoryStore()
    model = ScriptedModel(["the draft", "discarded"])
    wf = load_workflow_text(GATE)
    await arun_workflow(wf, clients=Factory(model), durable=await _durable(store, "t"))
    late = datetime.now(UTC) + timedelta(hours=2)
    d = await _durable(store, "t", resumed=True, decision=Decision(approve=True),
                       now=lambda: late)
    result = await arun_workflow(wf, clients=Factory(model), durable=d)
    assert result.status is RunStatus.SUCCESS, result.error
    assert result.state["decision"] == "rejected"


ASK = """\
name: ask
state_schema: {api_token: {redact: true}}
steps:
  - id: q
    type: ask
    question: "your token?"
    answer_type: secret
    output: api_token
  - {id: use, type: llm_call, depends_on: [q], prompt: "token is {state.api_token}", output: r}
"""


async def test_secret_answer_never_reaches_the_store() -> None:
    store = MemoryStore()
    model = ScriptedModel(["ok"])
    wf = load_workflow_text(ASK)
    result = await arun_workflow(wf, clients=Factory(model), durable=await _durable(store, "s"))
    assert result.status is RunStatus.PAUSED
    d = await _durable(store, "s", resumed=True, decision=Decision(answer="hunter2-secret"))
    result = await arun_workflow(wf, clients=Factory(model), durable=d)
    assert result.status is RunStatus.SUCCESS, result.error
    assert "hunter2-secret" in str(model.requests[0].messages)
    cp = await store.load_latest("s")
    dumped = repr(cp) + repr(await store.get_model_exchanges("s"))
    assert "hunter2-secret" not in dumped



async def test_a_short_secret_answer_is_redacted_by_its_key() -> None:
    # No state_schema entry: the ask step's own output key is what protects a short PIN,
    # which is too short to be matched by content.
    store = MemoryStore()
    model = ScriptedModel(["ok"])
    wf = load_workflow_text(ASK.replace("state_schema: {api_token: {redact: true}}\n", "")
                            .replace("api_token", "pin"))
    result = await arun_workflow(wf, clients=Factory(model), durable=await _durable(store, "p"))
    assert result.status is RunStatus.PAUSED
    d = await _durable(store, "p", resumed=True, decision=Decision(answer="4711"))
    result = await arun_workflow(wf, clients=Factory(model), durable=d)
    assert result.status is RunStatus.SUCCESS, result.error
    cp = await store.load_latest("p")
    assert cp is not None and cp.state["pin"] == "[REDACTED]"

ONE_TOOL = """\
name: charge
steps:
  - id: pay
    type: llm_call
    prompt: "charge the card"
    tools: [charge]
    output: r
"""


async def _killed_in_charge(store: Any, log: list[str]) -> tuple[Any, Any]:
    """A run whose non-idempotent tool call was in flight when the process died."""
    import asyncio

    gate = asyncio.Event()

    @tool
    async def charge(amount: int) -> str:
        """Charge a card (not idempotent)."""
        log.append(f"charge {amount}")
        gate.set()
        await asyncio.Event().wait()  # hangs until the run is cancelled
        return "charged"

    reg = ToolRegistry()
    reg.register(charge)
    model = ScriptedModel([[tool_call("charge", {"amount": 5}, id="k1")], "paid"])
    wf = load_workflow_text(ONE_TOOL)
    task = asyncio.ensure_future(arun_workflow(
        wf, clients=Factory(model), tools=reg, durable=await _durable(store, "k")))
    await gate.wait()
    task.cancel()  # what the store sees is what a SIGKILL leaves: the call in flight
    try:
        await task
    except asyncio.CancelledError:
        pass
    return wf, model


def _charge_registry(log: list[str]) -> ToolRegistry:
    @tool
    def charge(amount: int) -> str:
        """Charge a card (not idempotent)."""
        log.append(f"charge {amount}")
        return "charged"

    reg = ToolRegistry()
    reg.register(charge)
    return reg


async def test_in_flight_non_idempotent_call_needs_a_decision() -> None:
    store = MemoryStore()
    log: list[str] = []
    wf, model = await _killed_in_charge(store, log)
    d = await _durable(store, "k", resumed=True)
    result = await arun_workflow(wf, clients=Factory(model), tools=_charge_registry(log),
                                 durable=d)
    assert result.status is RunStatus.NEEDS_DECISION
    assert "tool call charge (k1) was in flight" in (result.error or "")
    assert log == ["charge 5"]  # not run again without a person's word
    assert (await store.get_run("k")).status == "needs_decision"  # type: ignore[union-attr]
    assert len(model.requests) == 1  # the stored reply was served, not asked again

    d = await _durable(store, "k", resumed=True, decision=Decision(approve=False))
    result = await arun_workflow(wf, clients=Factory(model), tools=_charge_registry(log),
                                 durable=d)
    assert result.status is RunStatus.SUCCESS, result.error
    assert log == ["charge 5"]
    assert "chose not to run it again" in str(model.requests[-1].messages[-1])


async def test_in_flight_call_rerun_when_approved() -> None:
    store = MemoryStore()
    log: list[str] = []
    wf, model = await _killed_in_charge(store, log)
    await arun_workflow(wf, clients=Factory(model), tools=_charge_registry(log),
                        durable=await _durable(store, "k", resumed=True))
    d = await _durable(store, "k", resumed=True, decision=Decision(approve=True))
    result = await arun_workflow(wf, clients=Factory(model), tools=_charge_registry(log),
                                 durable=d)
    assert result.status is RunStatus.SUCCESS, result.error
    assert log == ["charge 5", "charge 5"]
    assert result.state["r"] == "paid"


async def test_a_retried_step_journals_its_repeated_call_ids() -> None:
    """A retry of a step sees the same call ids again (call_0 per turn): the journal
    keeps each run of the tool apart instead of refusing the second."""
    from agentloom.errors import ProviderError
    from agentloom.testing.scripted import FunctionModel

    calls = {"n": 0}

    def reply(request: Any) -> Any:
        calls["n"] += 1
        if calls["n"] == 2:  # the turn after the tool: a server error, retried by the engine
            raise ProviderError("boom", provider="scripted", status=500)
        if request.messages[-1].role == "tool":
            return "all done"
        return [tool_call("lookup", {"q": "x"}, id="call_0")]

    log: list[str] = []
    wf = load_workflow_text("""\
name: retry
steps:
  - id: agent
    type: llm_call
    prompt: "go"
    tools: [lookup]
    retry: {max_retries: 1, backoff_base: 1, backoff_max: 0, jitter: false}
    output: r
""")
    store = MemoryStore()
    result = await arun_workflow(wf, clients=Factory(FunctionModel(reply)),
                                 tools=_registry(log), durable=await _durable(store, "x"))
    assert result.status is RunStatus.SUCCESS, result.error
    assert log == ["lookup:x", "lookup:x"]
    keys = sorted(r.call_id for r in await store.get_tool_calls("x"))
    assert keys == ["1:call_0", "1:call_0#2"]
