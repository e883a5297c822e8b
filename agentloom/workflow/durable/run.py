"""Durable runs: write-ahead checkpoints, resume without repeats, and pauses for a person.

The engine calls a `DurableRun` at four points (start, each finished step, each tool-loop
turn, the end); everything else goes through wrappers, so step modules stay unaware:
the model clients are wrapped to store every reply (and, on resume, to serve the replies
already paid for), the tool source is wrapped to journal every call (`in_flight` before
it runs, `done` with its result after). A resumed run restores finished steps, the saved
conversation of an interrupted tool loop and the journalled tool results; a call left in
flight is re-run only when its tool is idempotent, else the run stops `needs_decision`.

`PauseRun` (`engine.pause`) is the control signal of a pause: `approval_gate` and `ask`
steps raise it, and so does `ask(...)` inside a tool function, whose call is re-run with
the answer. `DurableRun` implements the engine's `DurableHooks`; nested runs
(subworkflows, map items, `on_error` blocks, workflow function bodies) see this run
through a namespaced `DurableScope` (`scope.py`). A `worker_id` makes
the run hold a claim in the store while it runs, so two processes never continue it.

This module is the run's lifecycle, its resume and its journal; what each checkpoint
writes (deltas, whole checkpoints, the stored form of step results, the run's cost) is
`DurableRun`'s base, `checkpoints.Checkpointing`.
"""

from __future__ import annotations

import asyncio
import hashlib
from contextvars import Token
from dataclasses import fields
from datetime import UTC, datetime
from decimal import Decimal
from typing import TYPE_CHECKING, Any

from agentloom._record import FACTORY
from agentloom.loop import LoopRestore, current_journal
from agentloom.messages import Message, Usage
from agentloom.redact import Redactor
from agentloom.store import (
    Checkpoint,
    DeltaBuilder,
    StoreError,
    ToolLoopProgress,
)
from agentloom.workflow.durable.checkpoints import KEPT, Checkpointing
from agentloom.workflow.durable.context import UNSET, Decision, ask
from agentloom.workflow.durable.journaled import JournaledClients, JournaledTools
from agentloom.workflow.engine.nested import NESTED_USAGE, sum_usage
from agentloom.workflow.engine.pause import ANSWER_KINDS, PauseRun, coerce_answer
from agentloom.workflow.engine.result import StepResult, StepStatus

if TYPE_CHECKING:
    from agentloom.store import CheckpointStore, ToolCallRecord
    from agentloom.workflow.durable.scope import DurableScope
    from agentloom.workflow.engine.hooks import RunView

_UNSET = UNSET
__all__ = ["ANSWER_KINDS", "Decision", "DurableRun", "PauseRun", "ask", "coerce_answer",
           "workflow_hash"]


def workflow_hash(text: str | bytes) -> str:
    raw = text.encode() if isinstance(text, str) else text
    return "sha256:" + hashlib.sha256(raw).hexdigest()


class DurableRun(Checkpointing):
    """One run's link to its store. Build it with `start` (a new run) or `resume`.

    A plain class, not a dataclass: it is a service the engine calls, not a value, and
    generating a dataclass of its thirty-odd attributes cost every checkpointed run of
    the command line ~2 M instructions at import."""

    __slots__ = (  # and the writing's own, in `Checkpointing`
        "_child_not_taken", "_child_results", "_decided", "_exchanges", "_given_back",
        "_loop_nested", "_loop_usage", "_loops", "_restored", "_run", "_seen", "_tools",
        "decision", "lease_seconds", "meta", "now", "redactor", "resumed",
        "reused_tool_calls", "run_id", "served_exchanges", "store", "worker_id",
        "workflow_hash",
    )

    def __init__(
        self, *, store: CheckpointStore, run_id: str, workflow_hash: str,
        redactor: Redactor | None = None, meta: dict[str, Any] = FACTORY,
        resumed: Checkpoint | None = None, decision: Decision = FACTORY, now: Any = None,
        worker_id: str | None = None, lease_seconds: float = 120.0,
    ) -> None:
        self.store = store
        self.run_id = run_id
        self.workflow_hash = workflow_hash
        self.redactor = redactor
        self.meta = {} if meta is FACTORY else meta
        self.resumed = resumed
        self.decision = Decision() if decision is FACTORY else decision
        self.now = now
        """Wall-clock source (UTC datetime) for approval deadlines; injectable for tests."""
        self.worker_id = worker_id
        """Set by the CLI: this process holds the run's claim (renewed as it saves) so a
        second `agentloom resume` of the same run is refused while this one runs."""
        self.lease_seconds = lease_seconds
        self.served_exchanges = 0
        self.reused_tool_calls = 0
        self._tools: dict[tuple[str, str], ToolCallRecord] = {}
        self._exchanges: dict[tuple[str, int, str], Any] = {}
        self._loops: dict[str, ToolLoopProgress] = {}
        self._loop_usage: dict[str, Any] = {}
        self._loop_nested: dict[str, Any] = {}
        """Step -> model usage of the workflow functions its finished loop turns called."""
        self._lock = asyncio.Lock()
        self._restored: set[str] = set()
        self._decided: set[str] = set()
        self._seen: dict[tuple[str, str], int] = {}
        self._run: RunView | None = None
        self._child_results: dict[str, Any] = {}
        """Finished steps of nested runs (namespaced `parent/step`) whose parent step is
        not finished yet: see `scope.py`."""
        self._child_not_taken: dict[str, str] = {}
        self._claimed_at: float | None = None
        self._final: set[str] = set()
        """Steps the engine has finished with (`step_done`): their stored form is reused."""
        self._final_cache: dict[str, tuple[Any, Any, Any]] = {}
        self._deltas = DeltaBuilder()
        """What the store holds, so a step's write carries only what the step changed."""
        self._delta_epoch: Any = _UNSET
        """What the redactor redacted when the store's writes were made (`_UNSET`: the
        next write is whole, as after a resume)."""
        self._cost: tuple[Decimal, bool, bool] = (Decimal(0), False, False)
        """(total, seen, unknown) over `_costed`: the run's cost, kept as steps finish."""
        self._costed: set[str] = set()
        self._given_back = False

    # --- lifecycle -----------------------------------------------------------------

    @property
    def began(self) -> bool:
        """Whether the engine has started the run (`begin`)."""
        return self._run is not None

    async def give_back(self) -> None:
        """A resume refused before the run began (a key missing, a tools file gone):
        its claim is released now, not when the lease runs out, so the corrected command
        can take the run at once; then the store is closed. Once only."""
        if self._given_back:
            return
        self._given_back = True
        try:
            if self.worker_id is not None and hasattr(self.store, "release_claim"):
                await self.store.release_claim(self.run_id, self.worker_id)
        except StoreError:
            pass  # the lease runs out instead; the refusal being reported matters more
        finally:
            await self.store.close()

    async def begin(self, engine_run: RunView, workflow_name: str) -> None:
        """Register the run (new) or load what the resume needs."""
        self._run = engine_run
        if self.resumed is None:
            await self.store.create_run(self.run_id, workflow_name, self.workflow_hash,
                                        self._state(engine_run.state), meta=self.meta)
            self._deltas.baseline(engine_run.state)
            self._delta_epoch = self._delta_redaction()
            await self._renew_claim()
            return
        cp = self.resumed
        for rec in await self.store.get_tool_calls(self.run_id):
            self._tools[(rec.step_id, rec.call_id)] = rec
        for ex in await self.store.get_model_exchanges(self.run_id):
            self._exchanges[(ex.step_id, ex.turn, ex.request_hash)] = ex.response
        self._loops = {p.step_id: p for p in cp.tool_loops}
        self._loop_usage = dict(cp.extra.get("loop_usage") or {})
        self._loop_nested = dict(cp.extra.get("loop_nested_usage") or {})
        self._child_results = {k: v for k, v in cp.step_results.items() if "/" in k}
        engine_run.handled.update(cp.extra.get("handled") or ())
        for target, router in (cp.extra.get("not_taken") or {}).items():
            if "/" in target:
                self._child_not_taken[target] = router
            else:
                engine_run.not_taken[target] = router

    def restored_step(self, node_id: str) -> StepResult | None:
        """The result of a step that finished before the run stopped (not run again)."""
        if self.resumed is None:
            return None
        raw = self.resumed.step_results.get(node_id)
        if raw is None:
            return None
        names = {f.name for f in fields(StepResult)} & KEPT
        kw = {k: v for k, v in raw.items() if k in names}
        kw["status"] = StepStatus(kw.get("status", "success"))
        return StepResult(**kw)

    # --- nested runs (see scope.py) -----------------------------------------------------

    def key(self, step_id: str) -> str:
        return step_id

    def child(self, name: str) -> DurableScope:
        """The durable view of a nested run named `name` (a step id, `step/index`...)."""
        # Loaded with the first nested run: a run without subworkflows, maps, error
        # handlers or workflow functions never needs it.
        from agentloom.workflow.durable.scope import DurableScope

        return DurableScope(self, f"{name}/")

    def keep_child_result(self, key: str, result: StepResult) -> None:
        if result.status in (StepStatus.SUCCESS, StepStatus.FAILED):
            self._child_results[key] = raw = self._raw(result)
            self._deltas.step_result(key, raw)

    def keep_child_not_taken(self, key: str, router: str) -> None:
        self._child_not_taken[key] = router

    def child_not_taken(self, prefix: str) -> dict[str, str]:
        return {k: v for k, v in self._child_not_taken.items() if k.startswith(prefix)}

    def drop_children(self, prefix: str) -> None:
        """Forget the nested records under `prefix`: what ran them has its own result."""
        for table in (self._child_results, self._child_not_taken, self._loops,
                      self._loop_usage, self._loop_nested):
            if table:  # mostly empty: a step of a chain has no nested records
                for k in [k for k in table if k.startswith(prefix)]:
                    del table[k]
        self._deltas.drop_prefix(prefix)

    # --- the tool loop (LoopJournal) ---------------------------------------------------

    def restore(self, step_id: str) -> LoopRestore | None:
        progress = self._loops.get(step_id) if self.resumed is not None else None
        if progress is None or step_id in self._restored:
            return None
        self._restored.add(step_id)
        usage = self._loop_usage.get(step_id)
        nested = self._loop_nested.get(step_id)
        if isinstance(nested, Usage):  # functions called in the turns already done
            sink = NESTED_USAGE.get()
            if sink is not None:
                sink.append(nested)
        return LoopRestore(messages=list(progress.messages), turn=progress.turn,
                           usage=usage if isinstance(usage, Usage) else Usage())

    async def on_turn(self, step_id: str, turn: int, messages: list[Message],
                      usage: Usage) -> None:
        # Kept as the loop has it; redacted when written (`_deltas` writes new ones only).
        self._loops[step_id] = ToolLoopProgress(step_id=step_id, turn=turn,
                                                messages=list(messages))
        self._deltas.loop_turn(step_id, turn, messages)
        self._loop_usage[step_id] = usage
        nested = sum_usage(list(NESTED_USAGE.get() or ()))
        if nested is not None:
            self._loop_nested[step_id] = nested
        await self.save()

    async def step_done(self, node_id: str) -> None:
        self._final.add(node_id)  # the engine won't change this step's result again
        self._loops.pop(node_id, None)
        self._deltas.drop_loop(node_id)
        r = self._engine_run.results.get(node_id)  # None for a nested run's step (`parent/step`)
        if r is not None:
            if r.status in (StepStatus.SUCCESS, StepStatus.FAILED):
                # Written once, so not cached: a run keeps no second copy of each result.
                self._deltas.step_result(node_id, self._raw(r))
            self._count_cost(node_id, r)
        self._loop_usage.pop(node_id, None)
        self._loop_nested.pop(node_id, None)
        self.drop_children(f"{node_id}/")
        await self.save()

    # --- decisions -------------------------------------------------------------------

    def take_decision(self, step_id: str) -> tuple[Decision, datetime | None] | None:
        """The decision for the step the run paused at (and when it paused), once."""
        cp = self.resumed
        if cp is None or cp.paused is None or cp.paused.step_id != step_id \
                or cp.paused.call_id is not None or step_id in self._decided:
            return None
        self._decided.add(step_id)
        return self.decision, cp.created_at

    def add_secret(self, value: str, *, key: str | None = None) -> None:
        """A value that must be redacted from here on (a `secret` answer), and the state
        key it is written to (redacted by name, however short the value)."""
        if self.redactor is None:
            self.redactor = Redactor()
        self.redactor.add_secrets([value])
        if key:
            self.redactor.add_keys([key])

    def clock_now(self) -> datetime:
        return self.now() if self.now is not None else datetime.now(UTC)

    # --- wrappers --------------------------------------------------------------------

    def wrap_clients(self, factory: Any) -> Any:
        return JournaledClients(factory, self)

    def wrap_tools(self, source: Any) -> Any:
        return None if source is None else JournaledTools(source, self)

    def bind(self) -> tuple[Token[Any], ...]:
        """Make this run the journal the tool loops of its steps save their turns to."""
        return (current_journal.set(self),)

    def unbind(self, tokens: tuple[Token[Any], ...]) -> None:
        (journal,) = tokens
        current_journal.reset(journal)

    # --- what the journalled clients and tools use ---------------------------------------

    def take_exchange(self, key: tuple[str, int, str]) -> Any:
        """The stored reply for (step, turn, request hash), once; None if there is none."""
        stored = self._exchanges.pop(key, None)
        if stored is not None:
            self.served_exchanges += 1
        return stored

    def call_key(self, step_id: str, base: str) -> str:
        """The journal key of a tool call: `turn:call_id`, with `#n` for its n-th
        appearance in the step (some providers number calls per reply, and a retried
        step makes the same calls again)."""
        n = self._seen[(step_id, base)] = self._seen.get((step_id, base), 0) + 1
        return base if n == 1 else f"{base}#{n}"

    def take_tool_call(self, step_id: str, key: str) -> ToolCallRecord | None:
        """The journalled record of a tool call from before the resume, once."""
        return self._tools.pop((step_id, key), None)

    def redact(self, value: Any) -> Any:
        """`value` with the run's secrets redacted (as everything stored is)."""
        return self._redact(value)

