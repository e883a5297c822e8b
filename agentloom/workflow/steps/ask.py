"""The `ask` step: the run pauses with a question and goes on with the typed answer.

The answer comes back through `agentloom resume RUN_ID --answer VALUE`, is checked
against `answer_type` (text, choose_one, choose_many, secret) before the run continues,
and goes to `output`. A `secret` answer is added to the run's redactor, so it never
reaches checkpoints, recordings, traces or `--json` output.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from agentloom.errors import DeadlineExceeded
from agentloom.workflow.engine.pause import PauseRun, take_answer, waited_too_long
from agentloom.workflow.engine.result import StepOutcome
from agentloom.workflow.lang.templates import to_text

if TYPE_CHECKING:
    from agentloom.workflow.engine.context import RunContext
    from agentloom.workflow.lang.templates import Template
    from agentloom.workflow.load.loader import PrepareContext
    from agentloom.workflow.load.workflow import StepNode
    from agentloom.workflow.schema.other_steps import AskStep


@dataclass(slots=True, frozen=True)
class Prepared:
    question: Template


def prepare(step: AskStep, pc: PrepareContext) -> Prepared:
    return Prepared(question=pc.template(step.question, "question"))


async def execute(node: StepNode, ctx: RunContext) -> StepOutcome:
    step: AskStep = node.step  # type: ignore[assignment]
    prep: Prepared = node.prepared
    question = prep.question.render(ctx.scope)
    data = {"kind": step.answer_type, "choices": step.choices}
    durable = ctx.durable
    got = durable.take_decision(node.id) if durable is not None else None
    if got is None or durable is None:
        raise PauseRun("answer", question, data=data)
    decision, paused_at = got
    raw = decision.answer if decision.has_answer else None
    waited = waited_too_long(paused_at, durable.clock_now(), step.timeout_seconds)
    if waited is not None:
        if step.default is None:
            raise DeadlineExceeded(
                f"question of step {node.id!r} timed out: resumed {waited:.0f}s after "
                f"the pause, over timeout_seconds={step.timeout_seconds:g}, and the "
                "step sets no default", scope="step")
        raw = step.default
    if raw is None:
        raise PauseRun("answer", question + " (resume with --answer VALUE)", data=data)
    value = take_answer(durable, step.answer_type, step.choices, raw, key=step.output)
    return StepOutcome(value=value, text=to_text(value))
