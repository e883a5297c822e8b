"""The checkpoint-writing half of a durable run: what is stored after each step and turn.

`Checkpointing` is the base of `run.DurableRun` and holds none of its own state: its
methods write what the run holds. Each write (`save`) is one atomic store call, a delta
of what changed since the last write, or the whole run when there is nothing to build a
delta on (after a resume) or the redactor learned a secret (what was written before is
redacted anew). A step result is stored as `KEPT` of its fields, redacted, and encoded
once when the engine is done with the step; the run's cost is kept as steps finish; the
store's claim on the run is renewed as it saves and released when it ends (`finish`).
"""

from __future__ import annotations

import time
from dataclasses import fields, replace
from decimal import Decimal
from typing import TYPE_CHECKING, Any

from agentloom.redact import REDACTED, SECRET_STEP_FIELDS, Redactor
from agentloom.store import Checkpoint, EncodeOnce, PauseInfo
from agentloom.workflow.durable.context import UNSET
from agentloom.workflow.engine.result import StepResult, StepStatus

if TYPE_CHECKING:
    import asyncio

    from agentloom.store import CheckpointStore, DeltaBuilder, ToolLoopProgress
    from agentloom.workflow.engine.hooks import RunView
    from agentloom.workflow.engine.pause import PauseRun

_UNSET = UNSET

KEPT = frozenset({
    "id", "type", "status", "output", "text", "error", "error_type", "reason", "attempts",
    "usage", "model", "provider", "finish_reason", "time_to_first_token",
    "reasoning_content", "iterations", "started_at", "duration_seconds"})
"""The StepResult fields a checkpoint keeps (plain values; reports are not resumed)."""

_KEPT_NAMES: dict[type, tuple[str, ...]] = {}

_STORE_STATUS = {"success": "succeeded", "failed": "failed", "deadline_exceeded": "timeout",
                 "budget_exceeded": "budget_exceeded", "cancelled": "cancelled",
                 "paused": "paused", "needs_decision": "needs_decision"}


class Checkpointing:
    """Writes the checkpoints of the `DurableRun` it is the base of (see the module)."""

    __slots__ = ("_claimed_at", "_cost", "_costed", "_delta_epoch", "_deltas", "_final",
                 "_final_cache", "_lock")
    # What only the writing needs, set by `DurableRun.__init__` (documented there).
    _claimed_at: float | None
    _cost: tuple[Decimal, bool, bool]
    _costed: set[str]
    _delta_epoch: Any
    _deltas: DeltaBuilder
    _final: set[str]
    _final_cache: dict[str, tuple[Any, Any, Any]]
    _lock: asyncio.Lock

    # What it reads of the rest of the run (`DurableRun`'s own slots).
    store: CheckpointStore
    run_id: str
    redactor: Redactor | None
    worker_id: str | None
    lease_seconds: float
    _run: RunView | None
    _loops: dict[str, ToolLoopProgress]
    _loop_usage: dict[str, Any]
    _loop_nested: dict[str, Any]
    _child_results: dict[str, Any]
    _child_not_taken: dict[str, str]

    @property
    def _engine_run(self) -> RunView:
        assert self._run is not None, "used before begin()"
        return self._run

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
            names = _KEPT_NAMES[type(r)] = tuple(f.name for f in fields(r) if f.name in KEPT)
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
