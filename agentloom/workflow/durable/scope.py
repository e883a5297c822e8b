"""Durable nested runs: a subworkflow, a map item or a workflow function's body keeps
its finished steps across a resume instead of running them again.

A nested run gets a `DurableScope`: a view of the top run's `DurableRoot` under a
namespace, so its records never collide with the parent's. A step `check` of the
subworkflow step `review` is checkpointed as `review/check`; item 2 of the map step
`each` as `each/2/check`; a step of a function the model called as call `1:c7` of the
loop of step `agent` as `agent/1:c7/check` (step ids can't hold `/`). Model replies,
tool calls, tool-loop turns and pauses use the same keys, so a gate inside a
subworkflow or an `ask` inside a function body is resumed by its own step id.

The nested results live in the top run's checkpoint only while the step that ran them
is unfinished; once it finishes (or the function call is journalled done) its own
result stands for them and they are dropped. On resume a nested run restores each
finished step's result and writes its `output` back into the nested state (the state of
a nested run is rebuilt from its inputs, not saved). Other state writes of nested steps
(an `on_error` block's, a conversation's) are not replayed: those steps run again.
"""

from __future__ import annotations

from contextvars import Token
from datetime import datetime
from typing import TYPE_CHECKING, Any

from agentloom.loop import LoopRestore, current_journal
from agentloom.workflow.durable.context import Decision, DurableRoot, scope_prefix
from agentloom.workflow.durable.journaled import JournaledClients, JournaledTools
from agentloom.workflow.lang.paths import assign

if TYPE_CHECKING:
    from agentloom.messages import Message, Usage
    from agentloom.workflow.engine.hooks import RunView
    from agentloom.workflow.engine.pause import PauseRun
    from agentloom.workflow.engine.result import StepResult


class DurableScope:
    """The top run's `DurableRun`, as a nested run sees it: every step id namespaced."""

    resumed = None
    """Always None: a nested run's state is rebuilt, never loaded from the checkpoint."""

    def __init__(self, root: DurableRoot, prefix: str) -> None:
        self.root = root
        self.prefix = prefix
        self._run: RunView | None = None

    @property
    def run_id(self) -> str:
        return f"{self.root.run_id}/{self.prefix.rstrip('/')}"

    @property
    def decision(self) -> Decision:
        return self.root.decision

    def key(self, step_id: str) -> str:
        return self.prefix + step_id

    def child(self, name: str) -> DurableScope:
        return DurableScope(self.root, f"{self.prefix}{name}/")

    # --- what the engine calls -----------------------------------------------------------

    async def begin(self, engine_run: RunView, workflow_name: str) -> None:
        self._run = engine_run
        n = len(self.prefix)
        for target, router in self.root.child_not_taken(self.prefix).items():
            engine_run.not_taken[target[n:]] = router

    def restored_step(self, node_id: str) -> StepResult | None:
        restored = self.root.restored_step(self.key(node_id))
        if restored is None or self._run is None:
            return restored
        node = self._run.workflow.nodes.get(node_id)
        if node is not None and node.output_path is not None \
                and restored.status.value == "success":
            assign(self._run.state, node.output_path, restored.output)
        return restored

    async def step_done(self, node_id: str) -> None:
        run = self._run
        assert run is not None, "step_done() before begin()"
        self.root.keep_child_result(self.key(node_id), run.results[node_id])
        for target, router in run.not_taken.items():
            self.root.keep_child_not_taken(self.key(target), router)
        await self.root.step_done(self.key(node_id))

    async def save(self, status: str = "running", paused: Any = None) -> None:
        await self.root.save()

    async def finish(self, result: Any, paused: PauseRun | None) -> None:
        """A nested run's end is its parent step's business: nothing to write here."""

    # --- what steps and loops find through context variables ----------------------------

    def take_decision(self, step_id: str) -> tuple[Decision, datetime | None] | None:
        return self.root.take_decision(self.key(step_id))

    def restore(self, step_id: str) -> LoopRestore | None:
        return self.root.restore(self.key(step_id))

    async def on_turn(self, step_id: str, turn: int, messages: list[Message],
                      usage: Usage) -> None:
        await self.root.on_turn(self.key(step_id), turn, messages, usage)

    def add_secret(self, value: str, *, key: str | None = None) -> None:
        self.root.add_secret(value, key=key)

    def clock_now(self) -> datetime:
        return self.root.clock_now()

    def wrap_clients(self, factory: Any) -> Any:
        return factory if isinstance(factory, JournaledClients) \
            else self.root.wrap_clients(factory)

    def wrap_tools(self, source: Any) -> Any:
        return source if source is None or isinstance(source, JournaledTools) \
            else self.root.wrap_tools(source)

    def bind(self) -> tuple[Token[Any], ...]:
        return current_journal.set(self), scope_prefix.set(self.prefix)

    def unbind(self, tokens: tuple[Token[Any], ...]) -> None:
        journal, prefix = tokens
        scope_prefix.reset(prefix)
        current_journal.reset(journal)  # type: ignore[arg-type]
