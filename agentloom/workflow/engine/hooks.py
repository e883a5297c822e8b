"""The engine's durability seam: what a durable run plugs in, without the engine
importing `durable/`.

`arun_workflow(durable=...)` takes any object with these methods (the store-backed
`durable.run.DurableRun`, or the namespaced `durable.scope.DurableScope` of a nested run).
The engine calls it at the start, after each finished step and at the end, asks it
whether a step already finished before a resume, and lets it wrap the run's clients and
tools; steps reach it as `ctx.durable` for a person's decision. A run without one is
not saved: every hook is skipped.
"""

from __future__ import annotations

from contextvars import ContextVar, Token
from datetime import datetime
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from agentloom.workflow.engine.pause import PauseRun
    from agentloom.workflow.engine.result import RunResult, StepResult
    from agentloom.workflow.load.workflow import Workflow


class RunView(Protocol):
    """What a durable run reads of the engine's run: its workflow and state, per-step
    results, the router branches not taken and the failures handled."""

    @property
    def workflow(self) -> Workflow: ...

    @property
    def state(self) -> dict[str, Any]: ...

    @property
    def results(self) -> dict[str, StepResult]: ...

    @property
    def not_taken(self) -> dict[str, str]: ...

    @property
    def handled(self) -> set[str]:
        """Failed steps whose on_error block handled the failure (kept across a resume)."""


class DurableHooks(Protocol):
    @property
    def run_id(self) -> str: ...

    @property
    def resumed(self) -> Any:
        """The checkpoint a resumed run starts from (its `state`), or None."""

    # --- the engine's calls, in run order ---------------------------------------------

    def wrap_clients(self, factory: Any) -> Any: ...

    def wrap_tools(self, source: Any) -> Any: ...

    def bind(self) -> tuple[Token[Any], ...]:
        """Make this run the one loops and tool calls journal to; `unbind` undoes it."""

    def unbind(self, tokens: tuple[Token[Any], ...]) -> None: ...

    async def begin(self, run: RunView, workflow_name: str) -> None: ...

    def restored_step(self, node_id: str) -> StepResult | None:
        """The result of a step that finished before a resume (it doesn't run again)."""

    async def step_done(self, node_id: str) -> None: ...

    async def finish(self, result: RunResult, paused: PauseRun | None) -> None: ...

    def key(self, step_id: str) -> str:
        """The step's id in the checkpoint (namespaced in a nested run)."""

    def child(self, name: str) -> DurableHooks:
        """The hooks of a nested run named `name` (a subworkflow step, a map item)."""

    # --- what steps ask (approval_gate, ask) ------------------------------------------

    def take_decision(self, step_id: str) -> tuple[Any, datetime | None] | None:
        """The person's decision for the step the run paused at, and when it paused."""

    def clock_now(self) -> datetime: ...

    def add_secret(self, value: str, *, key: str | None = None) -> None: ...


call_hooks: ContextVar[DurableHooks | None] = ContextVar("agentloom_call_scope", default=None)
"""Set by a durable run's toolbox around one tool call: the hooks a workflow function's
body runs under, so its steps are keyed under the call that ran them."""
