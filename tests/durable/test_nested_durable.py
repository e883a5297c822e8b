"""Durable nested runs, in process: a pause inside a workflow function the model called
mid tool loop, a gate inside a subworkflow or a map item; on resume nothing finished is
run again (model calls counted, tool calls logged)."""

from __future__ import annotations

from typing import Any

from agentloom.messages import Usage
from agentloom.store import MemoryStore
from agentloom.testing.scripted import FunctionModel, ScriptedModel, tool_call
from agentloom.tools import ToolRegistry, tool
from agentloom.workflow import RunStatus, StepStatus, arun_workflow, load_workflow_text
from agentloom.workflow.durable.run import Decision, DurableRun


class Factory:
    default_model = "test-model"

    def __init__(self, model: Any) -> None:
        self.model = model

    def client(self, **_: Any) -> Any:
        return self.model


async def _durable(store: Any, run_id: str, **kw: Any) -> DurableRun:
    if kw.pop("resume", False):
        kw["resumed"] = await store.load_latest(run_id)
    return DurableRun(store=store, run_id=run_id, workflow_hash="h", **kw)


def _registry(log: list[str]) -> ToolRegistry:
    @tool
    def note(label: str) -> str:
        """Write a label to the log (a side effect)."""
        log.append(label)
        return f"noted {label}"

    reg = ToolRegistry()
    reg.register(note)
    return reg


FN_ASK = """\
name: fn-ask
functions:
  deploy:
    description: Deploy once a person confirms.
    args: {target: {type: str, description: Where to deploy.}}
    steps:
      - {id: plan, type: llm_call, prompt: "plan {args.target}"}
      - {id: mark, type: tool, tool_name: note, tool_args: {label: "prep {args.target}"}}
      - id: confirm
        type: ask
        question: "deploy to {args.target}?"
        answer_type: choose_one
        choices: ["yes", "no"]
        depends_on: [plan, mark]
    return: "{steps.plan.output}; person said {steps.confirm.output}"
steps:
  - {id: first, type: llm_call, prompt: "start", output: a}
  - id: agent
    type: llm_call
    depends_on: [first]
    prompt: "deploy it"
    functions: [deploy]
    output: b
  - {id: last, type: llm_call, depends_on: [agent], prompt: "end {state.b}", output: c}
"""


async def test_ask_in_a_function_body_pauses_the_run_and_resumes_mid_loop() -> None:
    store = MemoryStore()
    log: list[str] = []
    model = ScriptedModel([
        "one",
        [tool_call("deploy", {"target": "prod"}, id="c1")],
        "the plan",
        "agent done",
        "three",
    ])
    wf = load_workflow_text(FN_ASK)
    result = await arun_workflow(wf, clients=Factory(model), tools=_registry(log),
                                 durable=await _durable(store, "f"))
    assert result.status is RunStatus.PAUSED, result.error
    assert result.steps["agent"].status is StepStatus.PAUSED
    assert result.steps["last"].status is not StepStatus.SUCCESS
    cp = await store.load_latest("f")
    assert cp is not None and cp.paused is not None
    assert cp.paused.step_id == "agent/1:c1/confirm"  # the body's own step, namespaced
    assert cp.paused.call_id is None and cp.paused.prompt == "deploy to prod?"
    assert cp.paused.data["choices"] == ["yes", "no"]
    assert (await store.get_run("f")).status == "paused"  # type: ignore[union-attr]
    # The body's finished steps are kept under the call that ran them.
    assert {"agent/1:c1/plan", "agent/1:c1/mark"} <= set(cp.step_results)
    assert len(model.requests) == 3 and log == ["prep prod"]

    d = await _durable(store, "f", resume=True, decision=Decision(answer="yes"))
    result = await arun_workflow(wf, clients=Factory(model), tools=_registry(log), durable=d)
    assert result.status is RunStatus.SUCCESS, result.error
    # Only the loop's answering turn and the last step asked the model: the loop's first
    # turn was served from the journal, the body's `plan` restored, `mark` not re-run.
    assert len(model.requests) == 5
    assert log == ["prep prod"]
    # Restored, not replayed: one stored reply served (the loop's turn that called the
    # function) and no tool call answered from the journal.
    assert (d.served_exchanges, d.reused_tool_calls) == (1, 0)
    assert "the plan; person said yes" in str(model.requests[3].messages[-1])
    assert result.state["b"] == "agent done" and result.state["c"] == "three"
    cp = await store.load_latest("f")
    assert cp is not None and not [k for k in cp.step_results if "/" in k]


async def test_a_second_ask_in_the_same_body_pauses_again() -> None:
    flow = """\
name: two
functions:
  both:
    description: Two questions.
    args: {}
    steps:
      - {id: q1, type: ask, question: "first?"}
      - {id: q2, type: ask, question: "second?", depends_on: [q1]}
    return: "{steps.q1.output}+{steps.q2.output}"
steps:
  - {id: agent, type: llm_call, prompt: go, functions: [both], output: r}
"""
    store = MemoryStore()
    model = ScriptedModel([[tool_call("both", {}, id="k")], "fine"])
    wf = load_workflow_text(flow)
    await arun_workflow(wf, clients=Factory(model), durable=await _durable(store, "t"))
    d = await _durable(store, "t", resume=True, decision=Decision(answer="A"))
    result = await arun_workflow(wf, clients=Factory(model), durable=d)
    assert result.status is RunStatus.PAUSED
    cp = await store.load_latest("t")
    assert cp is not None and cp.paused is not None
    assert cp.paused.step_id == "agent/1:k/q2"
    d = await _durable(store, "t", resume=True, decision=Decision(answer="B"))
    result = await arun_workflow(wf, clients=Factory(model), durable=d)
    assert result.status is RunStatus.SUCCESS, result.error
    assert "A+B" in str(model.requests[-1].messages[-1])
    assert len(model.requests) == 2


async def test_without_a_store_the_model_reads_why_the_function_could_not_finish() -> None:
    model = ScriptedModel([[tool_call("both", {}, id="k")], "ok"])
    wf = load_workflow_text("""\
name: nostore
functions:
  both:
    description: One question.
    args: {}
    steps:
      - {id: q1, type: ask, question: "first?"}
    return: "{steps.q1.output}"
steps:
  - {id: agent, type: llm_call, prompt: go, functions: [both], output: r}
""")
    result = await arun_workflow(wf, clients=Factory(model))
    assert result.status is RunStatus.SUCCESS, result.error
    assert "no checkpoint store" in str(model.requests[-1].messages[-1])


SUB = """\
name: sub-gate
steps:
  - {id: s1, type: llm_call, prompt: "one", output: a}
  - id: review
    type: subworkflow
    depends_on: [s1]
    output: reviewed
    return_keys: [d, verdict]
    workflow_inline:
      name: child
      steps:
        - {id: draft, type: llm_call, prompt: "draft {state.a}", output: d}
        - {id: mark, type: tool, tool_name: note, tool_args: {label: "drafted"},
           depends_on: [draft]}
        - {id: gate, type: approval_gate, message: "ship {state.d}?", depends_on: [mark],
           output: verdict}
  - {id: after, type: llm_call, depends_on: [review], prompt: "after {state.reviewed}",
     output: z}
"""


async def test_a_gate_in_a_subworkflow_resumes_by_its_own_id_without_rerunning_the_child() -> None:
    store = MemoryStore()
    log: list[str] = []
    model = ScriptedModel(["A", "D", "Z"])
    wf = load_workflow_text(SUB)
    result = await arun_workflow(wf, clients=Factory(model), tools=_registry(log),
                                 durable=await _durable(store, "s"))
    assert result.status is RunStatus.PAUSED, result.error
    cp = await store.load_latest("s")
    assert cp is not None and cp.paused is not None
    assert cp.paused.step_id == "review/gate" and cp.paused.prompt == "ship D?"
    d = await _durable(store, "s", resume=True, decision=Decision(approve=True))
    result = await arun_workflow(wf, clients=Factory(model), tools=_registry(log), durable=d)
    assert result.status is RunStatus.SUCCESS, result.error
    assert len(model.requests) == 3  # s1 and draft were not asked again
    assert log == ["drafted"]
    assert (d.served_exchanges, d.reused_tool_calls) == (0, 0)  # restored, not replayed
    # The restored `draft` wrote its output back into the child's state.
    assert result.state["reviewed"] == {"d": "D", "verdict": "approved"}
    assert result.state["z"] == "Z"


async def test_map_items_keep_their_finished_steps_and_pause_one_at_a_time() -> None:
    store = MemoryStore()
    seen: list[str] = []

    def reply(request: Any) -> str:
        text = str(request.messages[-1].content if hasattr(request.messages[-1], "content")
                   else request.messages[-1])
        seen.append(text)
        return "worked"

    wf = load_workflow_text("""\
name: m
state: {items: [a, b]}
steps:
  - id: each
    type: map
    over: items
    output: out
    steps:
      - {id: work, type: llm_call, prompt: "work {state.item}"}
      - {id: gate, type: approval_gate, message: "ok {state.item}?", depends_on: [work],
         output: verdict}
""")
    model = FunctionModel(reply)
    result = await arun_workflow(wf, clients=Factory(model), durable=await _durable(store, "m"))
    assert result.status is RunStatus.PAUSED
    cp = await store.load_latest("m")
    assert cp is not None and cp.paused is not None and cp.paused.step_id == "each/0/gate"
    d = await _durable(store, "m", resume=True, decision=Decision(approve=True))
    result = await arun_workflow(wf, clients=Factory(model), durable=d)
    assert result.status is RunStatus.PAUSED  # item 1's gate waits for its own decision
    cp = await store.load_latest("m")
    assert cp is not None and cp.paused is not None and cp.paused.step_id == "each/1/gate"
    d = await _durable(store, "m", resume=True, decision=Decision(approve=False))
    result = await arun_workflow(wf, clients=Factory(model), durable=d)
    assert result.status is RunStatus.SUCCESS, result.error
    assert [e["output"] for e in result.state["out"]] == ["approved", "rejected"]
    assert len(model.requests) == 2  # each item's `work` ran once


async def test_a_functions_model_usage_is_the_calling_steps() -> None:
    wf = load_workflow_text("""\
name: u
functions:
  helper:
    description: Ask a second model.
    args: {q: {type: str, description: The question.}}
    steps:
      - {id: inner, type: llm_call, prompt: "{args.q}"}
    return: "{steps.inner.output}"
steps:
  - {id: outer, type: llm_call, prompt: go, functions: [helper], output: r}
  - {id: direct, type: tool, tool_name: helper, tool_args: {q: again}, depends_on: [outer]}
""")

    def reply(request: Any) -> Any:
        if request.tools and not any(m.role == "tool" for m in request.messages):
            return [tool_call("helper", {"q": "why"}, id="h1")]
        return "answer"

    model = FunctionModel(reply)
    result = await arun_workflow(wf, clients=Factory(model))
    assert result.status is RunStatus.SUCCESS, result.error
    one = Usage(input_tokens=10, output_tokens=5)
    outer = result.steps["outer"].usage
    assert outer is not None
    # Two calls of the loop and one inside the function: 3 x (10 in, 5 out).
    assert (outer.input_tokens, outer.output_tokens) == (3 * one.input_tokens,
                                                          3 * one.output_tokens)
    direct = result.steps["direct"].usage
    assert direct is not None and direct.input_tokens == 10


async def test_ask_in_a_python_tool_inside_a_functions_loop_gets_the_answer() -> None:
    from agentloom.workflow.durable.run import ask

    log: list[str] = []

    @tool
    def confirm(what: str) -> str:
        """Ask a person."""
        log.append(f"start {what}")
        return "person said " + str(ask(f"ok {what}?"))

    reg = ToolRegistry()
    reg.register(confirm)
    wf = load_workflow_text("""\
name: deep
functions:
  outer_fn:
    description: Runs its own tool loop.
    args: {}
    steps:
      - {id: inner, type: llm_call, prompt: "inner", tools: [confirm]}
    return: "{steps.inner.output}"
steps:
  - {id: agent, type: llm_call, prompt: go, functions: [outer_fn], output: r}
""")
    model = ScriptedModel([
        [tool_call("outer_fn", {}, id="o")],
        [tool_call("confirm", {"what": "x"}, id="i")],
        "inner done",
        "outer done",
    ])
    store = MemoryStore()
    result = await arun_workflow(wf, clients=Factory(model), tools=reg,
                                 durable=await _durable(store, "d"))
    assert result.status is RunStatus.PAUSED, result.error
    cp = await store.load_latest("d")
    assert cp is not None and cp.paused is not None
    assert (cp.paused.step_id, cp.paused.call_id) == ("agent/1:o/inner", "1:i")
    d = await _durable(store, "d", resume=True, decision=Decision(answer="fine"))
    result = await arun_workflow(wf, clients=Factory(model), tools=reg, durable=d)
    assert result.status is RunStatus.SUCCESS, result.error
    assert result.state["r"] == "outer done"
    assert len(model.requests) == 4 and d.served_exchanges == 2
    assert "person said fine" in str(model.requests[2].messages[-1])
    assert log == ["start x", "start x"]  # the asking call runs again with the answer


async def test_a_gate_in_an_on_error_block_pauses_and_resumes() -> None:
    calls: list[str] = []

    @tool
    def flaky() -> str:
        """Always fails."""
        calls.append("flaky")
        raise RuntimeError("down")

    reg = ToolRegistry()
    reg.register(flaky)
    wf = load_workflow_text("""\
name: oe
steps:
  - id: s
    type: tool
    tool_name: flaky
    retry: {max_retries: 0}
    on_error:
      - {id: g, type: approval_gate, message: "s failed; go on?", output: verdict}
  - {id: t, type: llm_call, prompt: "after {state.verdict}", depends_on: [s], output: r}
""")
    model = ScriptedModel(["went on"])
    store = MemoryStore()
    result = await arun_workflow(wf, clients=Factory(model), tools=reg,
                                 durable=await _durable(store, "o"))
    assert result.status is RunStatus.PAUSED, result.error
    cp = await store.load_latest("o")
    assert cp is not None and cp.paused is not None and cp.paused.step_id == "s/on_error/g"
    d = await _durable(store, "o", resume=True, decision=Decision(approve=True))
    result = await arun_workflow(wf, clients=Factory(model), tools=reg, durable=d)
    assert result.status is RunStatus.SUCCESS, result.error
    assert result.steps["s"].status is StepStatus.FAILED  # honest record, but handled
    assert result.state["r"] == "went on"
    assert "after approved" in str(model.requests[0].messages[-1])


async def _usage_across_a_pause(same_turn: bool) -> tuple[Any, int]:
    from agentloom.workflow.durable.run import ask

    @tool
    def confirm() -> str:
        """Ask a person."""
        return str(ask("go?"))

    reg = ToolRegistry()
    reg.register(confirm)
    wf = load_workflow_text("""\
name: usage-pause
functions:
  helper:
    description: Ask a second model.
    args: {}
    steps:
      - {id: inner, type: llm_call, prompt: "BODY"}
    return: "{steps.inner.output}"
steps:
  - {id: agent, type: llm_call, prompt: go, tools: [confirm], functions: [helper], output: r}
""")
    calls = [tool_call("helper", {}, id="h"), tool_call("confirm", {}, id="c")]
    turns: list[Any] = [calls] if same_turn else [[calls[0]], [calls[1]]]
    # FunctionModel: the body's `inner` call and the loop's turns, told apart by prompt.
    script = iter([*turns, "done"])

    def reply(request: Any) -> Any:
        if "BODY" in str(request.messages[0]):
            return "helped"
        return next(script)

    model = FunctionModel(reply)
    store = MemoryStore()
    first = await arun_workflow(wf, clients=Factory(model), tools=reg,
                                durable=await _durable(store, "u"))
    assert first.status is RunStatus.PAUSED, first.error
    d = await _durable(store, "u", resume=True, decision=Decision(answer="yes"))
    result = await arun_workflow(wf, clients=Factory(model), tools=reg, durable=d)
    assert result.status is RunStatus.SUCCESS, result.error
    return result.steps["agent"].usage, len(turns) + 1


async def test_a_functions_usage_survives_a_pause_in_a_later_turn() -> None:
    usage, loop_calls = await _usage_across_a_pause(same_turn=False)
    assert usage is not None and usage.input_tokens == 10 * (loop_calls + 1)


async def test_a_functions_usage_survives_a_pause_in_the_same_turn() -> None:
    usage, loop_calls = await _usage_across_a_pause(same_turn=True)
    assert usage is not None and usage.input_tokens == 10 * (loop_calls + 1)
