"""The `router` step: the first condition that holds picks the branch, else `default`.

Conditions are compiled at load by our own expression interpreter (never `eval`), and
every target must be a step that depends on the router, so a branch cannot start
before the choice is made. The targets not chosen are skipped by the engine, and so is
everything that depends only on them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from agentloom.workflow.engine.result import StepOutcome
from agentloom.workflow.lang.expressions import Expression, ExpressionError, compile_expression

if TYPE_CHECKING:
    from collections.abc import Iterator

    from agentloom.workflow.engine.context import RunContext
    from agentloom.workflow.lang.templates import Template
    from agentloom.workflow.load.loader import PrepareContext
    from agentloom.workflow.load.workflow import StepNode
    from agentloom.workflow.schema.other_steps import RouterStep


@dataclass(slots=True, frozen=True)
class Prepared:
    conditions: tuple[tuple[Expression, str], ...]
    default: str | None
    targets: tuple[str, ...]

    def templates(self) -> Iterator[tuple[tuple[str | int, ...], Template]]:
        return iter(())


def prepare(step: RouterStep, pc: PrepareContext) -> Prepared | None:
    compiled: list[tuple[Expression, str]] = []
    targets: list[str] = []
    for i, cond in enumerate(step.conditions):
        try:
            compiled.append((compile_expression(cond.expression), cond.target))
        except ExpressionError as exc:
            pc.report(exc.message, "conditions", i, "expression", kind=ExpressionError)
        _check_target(step, pc, cond.target, ("conditions", i, "target"))
        targets.append(cond.target)
    if step.default is not None:
        _check_target(step, pc, step.default, ("default",))
        targets.append(step.default)
    if not targets:
        pc.report("a router needs conditions or a default", "conditions")
    return Prepared(tuple(compiled), step.default, tuple(dict.fromkeys(targets)))


def _check_target(step: RouterStep, pc: PrepareContext, target: str,
                  at: tuple[str | int, ...]) -> None:
    if target not in pc.step_ids:
        import difflib

        hint = difflib.get_close_matches(target, sorted(pc.step_ids), n=1)
        extra = f"; did you mean {hint[0]!r}?" if hint else ""
        pc.report(f"router target {target!r} is not a step{extra}", *at)
    elif target == step.id:
        pc.report("a router can't target itself", *at)
    elif not pc.depends_on(target, step.id):
        pc.report(f"router target {target!r} must depend on the router "
                  f"(add depends_on: [{step.id}] to it)", *at)


async def execute(node: StepNode, ctx: RunContext) -> StepOutcome:
    prep: Prepared = node.prepared
    chosen = prep.default
    for expression, target in prep.conditions:
        if expression.evaluate(ctx.state):
            chosen = target
            break
    return StepOutcome(
        value=chosen, text=chosen or "",
        chosen=chosen, not_taken=tuple(t for t in prep.targets if t != chosen),
    )
