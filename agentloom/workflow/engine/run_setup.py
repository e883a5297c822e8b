"""What a run hands its runtime before the first step: the run's budget (cost and token
caps), its step count, and the file's rate limits, breaker thresholds and prices.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agentloom.errors import BudgetExceeded
from agentloom.pricing import PriceTable
from agentloom.routing import RunBudget, parse_breaker, parse_rate_limits

if TYPE_CHECKING:
    from agentloom.workflow.load.workflow import Workflow
    from agentloom.workflow.schema.workflow import WorkflowConfig


def run_budget(config: WorkflowConfig, within: RunBudget | None = None) -> RunBudget | None:
    """The run's RunBudget from `budget_usd` / `max_tokens_per_run`, or None; a nested
    run's is `within` its parent's (the parent's itself when the child sets no cap), so
    what a subworkflow or a map item spends counts against the whole run's caps."""
    cost = config.budget_usd
    tokens = getattr(config, "max_tokens_per_run", None)
    if cost is None and tokens is None:
        return within
    return RunBudget(max_cost_usd=None if cost is None else str(cost), max_tokens=tokens,
                     within=within)


class StepCount:
    """The steps a run has started, its nested runs' included, against `config.max_steps`
    of the top-level run (one count for the whole tree: nested runs share it)."""

    __slots__ = ("limit", "refusal", "started")

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.started = 0
        self.refusal: BudgetExceeded | None = None

    def take(self, step_id: str) -> None:
        """Count one step about to start; raises once the run has started `limit`."""
        if self.started >= self.limit:
            refusal = BudgetExceeded(
                f"step {step_id!r} not started: the run has started {self.limit} steps, "
                "its config.max_steps (map items, subworkflows and workflow functions "
                "count theirs); raise max_steps if the run needs more",
                kind="steps", limit=self.limit, actual=self.started + 1)
            if self.refusal is None:
                self.refusal = refusal
            raise refusal
        self.started += 1


def needs_configure(workflow: Workflow) -> bool:
    """Whether `configure_runtime` has anything to hand over (most files set none of
    these knobs, and a run then skips it)."""
    config = workflow.config
    return bool(config.rate_limits or config.circuit_breaker is not None
                or config.prices is not None)


async def configure_runtime(clients: Any, workflow: Workflow) -> None:
    """Hand the workflow's rate limits, breaker thresholds and prices to the runtime (a
    factory without these knobs, such as a test's, is left alone)."""
    config = workflow.config
    if config.rate_limits and hasattr(clients, "set_rate_limit"):
        for provider, limit in parse_rate_limits(config.rate_limits).items():
            clients.set_rate_limit(provider, limit)
    breaker = parse_breaker(config.circuit_breaker)
    if breaker is not None and hasattr(clients, "set_breaker"):
        clients.set_breaker(breaker)
    if config.prices is not None and hasattr(clients, "set_prices"):
        clients.set_prices(await load_prices(config.prices, workflow,
                                             base=getattr(clients, "prices", None)))


async def load_prices(prices: str | dict[str, Any], workflow: Workflow, *, base: Any = None
                      ) -> Any:
    """A price file (read in a thread) or an inline map, over `base` or the packaged table."""
    parent = base or PriceTable.default()
    if isinstance(prices, dict):
        return PriceTable.from_mapping(prices, where="config.prices", parent=parent)
    path = Path(prices)
    if not path.is_absolute():
        path = Path(workflow.base_dir) / path
    return await asyncio.to_thread(PriceTable.from_file, path, parent=parent)
