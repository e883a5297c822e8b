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
"""

from __future__ import annotations

import asyncio
import hashlib
import time
from contextvars import Token
from dataclasses import fields, replace
from datetime import UTC, datetime
from decimal import Decimal
from typing import TYPE_CHECKING, Any

from agentloom._record import FACTORY
from agentloom.loop import LoopRestore, current_journal
from agentloom.messages import Message, Usage
from agentloom.redact import REDACTED, SECRET_STEP_FIELDS, Redactor
from agentloom.store import (
    Checkpoint,
    DeltaBuilder,
    EncodeOnce,
    PauseInfo,
    StoreError,
    ToolLoopProgress,
)
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


_KEPT = frozenset({
    "id", "type", "status", "output", "text", "error", "error_type", "reason", "attempts",
    "usage", "model", "provider", "finish_reason", "time_to_first_token",
    "reasoning_content", "iterations", "started_at", "duration_seconds"})
"""The StepResult fields a checkpoint keeps (plain values; reports are not resumed)."""

_KEPT_NAMES: dict[type, tuple[str, ...]] = {}

_STORE_STATUS = {"success": "succeeded", "failed": "failed", "deadline_exceeded": "timeout",
                 "budget_exceeded": "budget_exceeded", "cancelled": "cancelled",
                 "paused": "paused", "needs_decision": "needs_decision"}


class DurableRun:
    """One run's link to its store. Build it with `start` (a new run) or `resume`.

    A plain class, not a dataclass: it is a service the engine calls, not a value, and
    generating a dataclass of its thirty-odd attributes cost every checkpointed run of
    the command line ~2 M instructions at import."""

    __slots__ = (
        "_child_not_taken", "_child_results", "_claimed_at", "_cost", "_costed", "_decided",
        "_delta_epoch", "_deltas", "_exchanges", "_final", "_final_cache", "_given_back",
        "_lock", "_loop_nested", "_loop_usage", "_loops", "_restored", "_run", "_seen",
        "_tools", "decision", "lease_seconds", "meta", "now", "redactor", "resumed",
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

    @property
    def _engine_run(self) -> RunView:
        assert self._run is not None, "used before begin()"
        return self._run

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
        names = {f.name for f in fields(StepResult)} & _KEPT
        kw = {k: v for k, v in raw.items() if k in names}
        kw["status"] = StepStatus(kw.get("status", "success"))
        return StepResult(**kw)

    async def save(self, status: str = "running", paused: PauseInfo | None = None) -> None:
        """One atomic write of what changed since the last one: a delta (a row), or the
        whole run when there is no delta to build on (after a resume) or the redactor
        learned a secret (what was written before is redacted anew)."""
        epoch = self._delta_redaction()
        if epoch is _UNSET or epoch != self._delta_epoch:
            await self._save_whole(status, paused, epoch)
            return
        run, extra = self._engine_run, self._extra()
        async with self._lock:
            delta = self._deltas.take(
                run.state, status=status, paused=paused,  # type: ignore[arg-type]
                cost_usd=self._cost_so_far(), extra=extra,
                redact=self._redact if self.redactor is not None else None)
            await self.store.save_delta(self.run_id, delta)
            self._deltas.commit()
        if self.worker_id is not None:
            await self._renew_claim()

    async def _save_whole(self, status: str, paused: PauseInfo | None, epoch: Any) -> None:
        """One atomic checkpoint of the whole run as it is now."""
        run = self._run
        assert run is not None, "save() before begin()"
        results: dict[str, Any] = {}
        for node_id, r in run.results.items():
            if r.status in (StepStatus.SUCCESS, StepStatus.FAILED):
                results[node_id] = self._final_raw(node_id, r)
        results.update(self._child_results)
        self._recount_cost()
        extra = self._extra()
        cp = Checkpoint(
            state=self._state(run.state), status=status,  # type: ignore[arg-type]
            step_results=results, paused=paused, cost_usd=self._cost_so_far(),
            tool_loops=[replace(p, messages=list(self._redact(p.messages)))
                        for p in self._loops.values()],
            extra=extra,
        )
        async with self._lock:
            await self.store.save_checkpoint(self.run_id, cp)
            self._deltas.baseline(run.state, results=results, extra=extra,
                                  loops={k: p.messages for k, p in self._loops.items()})
            self._delta_epoch = epoch
        await self._renew_claim()

    def _extra(self) -> dict[str, Any]:
        run = self._engine_run
        return {"not_taken": {**run.not_taken, **self._child_not_taken},
                "handled": sorted(run.handled),  # failures their on_error block handled
                "loop_usage": dict(self._loop_usage),
                "loop_nested_usage": dict(self._loop_nested)}

    def _delta_redaction(self) -> Any:
        """What the redactor redacts now (its secrets and key names); `_UNSET` for a
        redactor we can't see into, whose every write is then whole."""
        epoch = self._redaction_epoch()
        if epoch is None or epoch is _UNSET:
            return epoch
        assert self.redactor is not None
        return (epoch, self.redactor.key_globs)

    def _count_cost(self, node_id: str, r: StepResult) -> None:
        if node_id in self._costed or r.usage is None:
            return
        self._costed.add(node_id)
        total, seen, unknown = self._cost
        if r.usage.cost_usd is None:
            self._cost = (total, seen, True)
        else:
            self._cost = (total + r.usage.cost_usd, True, unknown)

    def _cost_so_far(self) -> Decimal | None:
        """None when unknown: some step's cost is, or no step had one yet."""
        total, seen, unknown = self._cost
        return None if unknown or not seen else total

    def _recount_cost(self) -> None:
        self._cost, self._costed = (Decimal(0), False, False), set()
        for node_id, r in self._engine_run.results.items():
            self._count_cost(node_id, r)

    def _final_raw(self, node_id: str, r: StepResult) -> dict[str, Any]:
        """A step's stored form; once the engine is done with the step (`step_done`),
        made once and encoded once for every later checkpoint of the run, for as long as
        the redactor knows the same secrets (a new one redacts the old results anew)."""
        if node_id not in self._final:
            return self._raw(r)
        epoch = self._redaction_epoch()
        hit = self._final_cache.get(node_id)
        if hit is not None and hit[0] is r and hit[1] is epoch:
            cached: dict[str, Any] = hit[2]
            return cached
        raw = EncodeOnce(self._raw(r))
        if epoch is not _UNSET:
            self._final_cache[node_id] = (r, epoch, raw)
        return raw

    def _redaction_epoch(self) -> Any:
        # The redactor's compiled secrets change exactly when it learns a new secret.
        if self.redactor is None:
            return None
        if type(self.redactor) is not Redactor:
            return _UNSET  # a redactor we can't see into: never reuse
        return self.redactor.secrets_version

    def _raw(self, r: StepResult) -> dict[str, Any]:
        names = _KEPT_NAMES.get(type(r))
        if names is None:  # dataclasses.fields walks the class: once per type, not step
            names = _KEPT_NAMES[type(r)] = tuple(f.name for f in fields(r) if f.name in _KEPT)
        raw = {name: getattr(r, name) for name in names}
        raw["status"] = r.status.value
        if self.redactor is not None and r.id in getattr(self.redactor, "secret_steps", ()):
            for name in SECRET_STEP_FIELDS:  # a redacted output, however short
                raw[name] = None if getattr(r, name) is None else REDACTED
            return raw
        if self.redactor is not None:
            raw["output"] = self._redact(r.output)
            raw["text"] = self._redact(r.text)
            raw["reasoning_content"] = self._redact(r.reasoning_content)
            if "error" in raw:  # an error's text may quote a request or a reply
                raw["error"] = self._redact(r.error)
        return raw

    async def finish(self, result: Any, paused: PauseRun | None) -> None:
        status = _STORE_STATUS.get(result.status.value, "failed")
        for node_id, r in self._engine_run.results.items():  # once per run: what no step_done wrote
            if node_id not in self._final and r.status in (StepStatus.SUCCESS,
                                                           StepStatus.FAILED):
                self._deltas.step_result(node_id, self._raw(r))
        self._recount_cost()
        await self.save(status, self._pause_info(paused) if paused is not None else None)
        if self.worker_id is not None and hasattr(self.store, "release_claim"):
            await self.store.release_claim(self.run_id, self.worker_id)

    def _pause_info(self, paused: PauseRun) -> PauseInfo:
        """The pause as stored: its prompt is rendered from the state (or is the model's
        question) and its data from the step, so both are redacted as the state is."""
        info = paused.info()
        if self.redactor is not None:
            info.prompt = self._redact(info.prompt)
            info.data = self._redact(info.data)
        return info

    async def _renew_claim(self) -> None:
        if self.worker_id is None or not hasattr(self.store, "claim_run"):
            return
        now = time.monotonic()
        if self._claimed_at is not None and now - self._claimed_at < self.lease_seconds / 3:
            return
        self._claimed_at = now
        await self.store.claim_run(self.run_id, self.worker_id, self.lease_seconds)

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

    # --- helpers ---------------------------------------------------------------------

    def _state(self, state: dict[str, Any]) -> dict[str, Any]:
        if self.redactor is None:
            return state
        out: dict[str, Any] = self.redactor.redact_state(state)
        return out

    def _redact(self, value: Any) -> Any:
        if self.redactor is None or value is None:
            return value
        if isinstance(value, str):
            return self.redactor.redact_text(value)
        return self.redactor.redact_state(value)
