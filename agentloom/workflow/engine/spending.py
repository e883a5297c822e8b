"""A run's spending caps while it runs: which one refused, and the error of a cost unknown.

Three caps end a run `budget_exceeded`: the run's `RunBudget` refusing a call (cost or
tokens, checked by the budget itself) and `config.max_steps` refusing a step
(`StepCount`), both shared with the runs nested in it and built before the first step by
`run_setup.py`; and `config.budget_usd` over what the run's own steps cost, which each
step adds to its run as it finishes (`step_task.py`) and the scheduler checks before it
starts the next (`run.py`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from agentloom.errors import BudgetExceeded

if TYPE_CHECKING:
    from agentloom.workflow.engine.context import RunContext
    from agentloom.workflow.engine.run_setup import StepCount


def refused(ctx: RunContext) -> BudgetExceeded | None:
    """The call the run's budget refused, or the step `config.max_steps` did, here or in
    a run nested in it (a map item's refusal fails the item, not the map's own call):
    the run ends budget_exceeded."""
    budget = ctx.budget
    refusal: BudgetExceeded | None = budget.exhausted if budget is not None else None
    if refusal is None:
        steps: StepCount = ctx.steps
        refusal = steps.refusal
    return refusal


def unknown_cost(node_id: str, model: str | None, budget_usd: Any) -> str:
    """The run's error when a step spent what has no price while `budget_usd` is set."""
    return str(BudgetExceeded(
        f"the cost of step {node_id!r} (model {model}) is unknown, so "
        f"budget_usd={budget_usd} can't be enforced; give the model "
        "a price or drop the budget", kind="cost", limit=budget_usd, actual=None))
