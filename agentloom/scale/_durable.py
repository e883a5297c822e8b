"""Durable batch runs: every input's run lives in a checkpoint store under a fixed id.

The run id is `<batch id>.<input id>`, so any process that runs the same batch finds the
same run. Before running or resuming, a worker claims the run with a lease it renews
while the run goes on, and releases it after; only the claim holder runs it, so no input
is done twice even with many workers on one PostgreSQL store. A run is created and then
claimed (two steps): a worker that loses the claim has run nothing, and backs off.
What the store says decides: a finished run gives back its stored result (nothing is
run); a paused one is reported as it is; an interrupted one (running, no live claim) is
resumed from its last checkpoint, its stored model replies and tool results served, not
asked again. A claim whose holder was a process on this host that no longer exists is
free at once; elsewhere the lease lapses.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import os
import re
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agentloom.redact import REDACTED, Redactor
from agentloom.scale._types import (
    DEFERRED,
    ERROR,
    PAUSED_STATUSES,
    BatchInput,
    BatchItemResult,
    redacted_line,
)
from agentloom.store import FINISHED_STATUSES, RunExists, shown_url, take_claim
from agentloom.workflow import arun_workflow
from agentloom.workflow.durable.run import DurableRun
from agentloom.workflow.engine.secrets import workflow_redactor

if TYPE_CHECKING:
    from agentloom.store import CheckpointStore, RunRecord

_SAFE_ID = re.compile(r"[A-Za-z0-9_.-]{1,80}")
_BATCH_STATUS = {"succeeded": "success", "timeout": "deadline_exceeded"}
RESULT_KEY = "batch_result"
"""Where a finished run's batch line is kept, in its last checkpoint's `extra`."""


def derive_batch_id(anchor: str | os.PathLike[str], workflow_hash: str) -> str:
    """A batch id from the output file (or inputs) path and the workflow: the same
    command run again, on any machine with the same path, finds the same runs."""
    raw = f"{Path(anchor).resolve()}\n{workflow_hash}".encode()
    return "b" + hashlib.sha256(raw).hexdigest()[:12]


def run_id_for(batch_id: str, input_id: str, attempt: int = 1) -> str:
    """`<batch id>.<input id>`, and `~<n>` for the n-th attempt after failures; an input
    id with other characters (or too long) is hashed."""
    if _SAFE_ID.fullmatch(input_id):
        base = f"{batch_id}.{input_id}"
    else:
        base = f"{batch_id}.h{hashlib.sha256(input_id.encode()).hexdigest()[:16]}"
    return base if attempt == 1 else f"{base}~{attempt}"


@dataclass(slots=True, kw_only=True)
class DurableBatchRunner:
    """Runs one input as a durable run in `store` (built by the workflow runner)."""

    store: CheckpointStore
    store_url: str
    batch_id: str
    workflow: Any
    workflow_hash: str
    workflow_path: str
    runtime: Any
    base_state: dict[str, Any]
    env: dict[str, str]
    overrides: dict[str, Any]
    worker_id: str
    lease_seconds: float = 60.0
    retry_failed: bool = False
    poll_seconds: float = 0.2

    async def run(self, inp: BatchInput) -> BatchItemResult:
        run_id, found = await self._current_run(inp.id)
        state = {**self.base_state, **inp.state}
        redactor = self._redactor(state)
        while True:
            record = found or await self._record(run_id, inp, state, redactor)
            found = None
            if record.workflow_hash != self.workflow_hash:
                return BatchItemResult(
                    id=inp.id, status=ERROR, source=inp.source, run_id=run_id,
                    error=f"run {run_id} in the store was started by another version of "
                          f"the workflow ({record.workflow_hash[:19]}); use another "
                          "--batch-id or restore the file")
            if record.status not in ("running", *PAUSED_STATUSES):
                return await self._stored(record, inp)
            if record.status in PAUSED_STATUSES:
                return await self._paused(record, inp)
            if await self._claim(record):
                break
            if not inp.wait:
                return BatchItemResult(id=inp.id, status=DEFERRED, source=inp.source,
                                       run_id=run_id, worker=record.claimed_by)
            await asyncio.sleep(self.poll_seconds)
        work = asyncio.create_task(self._run_claimed(run_id, inp, state, redactor))
        renew = asyncio.create_task(self._renew(run_id, work))
        try:
            return await work
        except asyncio.CancelledError:
            me = asyncio.current_task()
            if renew.done() and not renew.cancelled() and renew.result() \
                    and (me is None or not me.cancelling()):
                # Another worker holds the run now (our lease lapsed): it finishes it.
                return BatchItemResult(id=inp.id, status=DEFERRED, source=inp.source,
                                       run_id=run_id)
            raise
        finally:
            renew.cancel()
            with contextlib.suppress(BaseException):
                await renew
            # Shielded: a cancelled batch still frees its runs for the next attempt; a
            # release that fails is not an error (the lease lapses instead).
            with contextlib.suppress(Exception):
                await asyncio.shield(self.store.release_claim(run_id, self.worker_id))  # type: ignore[attr-defined]

    # --- the store's view of the run ------------------------------------------------

    async def _current_run(self, input_id: str) -> tuple[str, RunRecord | None]:
        """The id (and row, if any) of the input's newest run. A failed run stays as it
        is; with `retry_failed` the next attempt runs under `<id>~2`, `~3`..."""

        attempt = 1
        run_id = run_id_for(self.batch_id, input_id, attempt)
        record = await self.store.get_run(run_id)
        while True:
            if record is None or record.status not in FINISHED_STATUSES \
                    or record.status == "succeeded":
                return run_id, record
            later = run_id_for(self.batch_id, input_id, attempt + 1)
            later_record = await self.store.get_run(later)
            if later_record is None and not self.retry_failed:
                return run_id, record
            attempt, run_id, record = attempt + 1, later, later_record

    async def _record(self, run_id: str, inp: BatchInput, state: dict[str, Any],
                      redactor: Any) -> RunRecord:
        record = await self.store.get_run(run_id)
        if record is not None:
            return record
        initial = {**(self.workflow.definition.state or {}), **state}
        meta = {"batch_id": self.batch_id, "input_id": inp.id, "source": inp.source,
                "workflow_path": self.workflow_path, "tools": [],
                "state": redactor.redact_state(inp.state), **self.overrides,
                # The gate's notify link to the run's page, as `agentloom run` records it.
                "ui_url": self.env.get("AGENTLOOM_UI_URL") or None}
        try:
            return await self.store.create_run(run_id, self.workflow.name,
                                               self.workflow_hash,
                                               redactor.redact_state(initial), meta=meta)
        except RunExists:  # another worker created it first: fine
            record = await self.store.get_run(run_id)
        assert record is not None
        return record

    async def _claim(self, record: RunRecord) -> bool:
        return await take_claim(self.store, record.run_id, self.worker_id,
                                self.lease_seconds) is None

    async def _renew(self, run_id: str, work: asyncio.Task[Any]) -> bool:
        """Renew the lease every third of it. If another worker took the run meanwhile
        (our lease lapsed), stop our copy of it and return True."""
        while True:
            await asyncio.sleep(self.lease_seconds / 3)
            try:
                held = await self.store.claim_run(  # type: ignore[attr-defined]
                    run_id, self.worker_id, self.lease_seconds)
            except Exception:  # a missed renewal: the next one retries
                continue
            if not held:
                work.cancel()
                return True

    async def _stored(self, record: RunRecord, inp: BatchInput) -> BatchItemResult:
        """A finished run's line, from the store: nothing is run again."""
        cp = await self.store.load_latest(record.run_id)
        raw = (cp.extra.get(RESULT_KEY) if cp is not None else None) or {}
        status = _BATCH_STATUS.get(record.status, record.status)
        if raw and raw.get("status") == status:
            item = BatchItemResult.from_dict({**raw, "id": inp.id})
        else:  # finished outside the batch (say `agentloom resume`): what the run row has
            item = BatchItemResult(
                id=inp.id, status=status, run_id=record.run_id, outputs=self._outputs(cp),
                cost_usd=None if record.cost_usd is None else float(record.cost_usd),
                error=None if status == "success" else f"run {record.run_id} ended "
                f"{record.status}; its details are in the store")
        item.reused, item.source = True, inp.source
        return item

    def _outputs(self, cp: Any) -> dict[str, Any]:
        """The run's outputs as the engine gives them (its last steps' results), rebuilt
        from the checkpoint's step results."""
        out: dict[str, Any] = {}
        results = cp.step_results if cp is not None else {}
        for node_id, node in self.workflow.nodes.items():
            raw = results.get(node_id)
            if node.dependents or not raw or raw.get("status") != "success":
                continue
            output = node.step.output
            out[output or node_id] = raw.get("output") if output else raw.get("text")
        return out

    async def _paused(self, record: RunRecord, inp: BatchInput) -> BatchItemResult:
        cp = await self.store.load_latest(record.run_id)
        pause = cp.paused if cp is not None else None
        return BatchItemResult(id=inp.id, status=record.status, source=inp.source,
                               run_id=record.run_id,
                               error=self._pause_message(record.run_id, pause))

    def _pause_message(self, run_id: str, pause: Any) -> str:
        waiting = getattr(pause, "waiting_for", None) or "a decision"
        step = getattr(pause, "step_id", None)
        prompt = getattr(pause, "prompt", None)
        flag = {"approval": " --approve (or --reject)", "answer": " --answer VALUE",
                "decision": " --approve (or --reject)"}.get(waiting, "")
        if waiting == "answer" and (getattr(pause, "data", None) or {}).get("kind") == "secret":
            flag = " --answer - (the answer on stdin)"
        where = f" at step {step!r}" if step else ""
        what = f": {prompt}" if prompt else ""
        return (f"waiting for {waiting}{where}{what}; continue it with: agentloom resume "
                f"{run_id} --store {shown_url(self.store_url, drop=True)}{flag}")

    # --- running ---------------------------------------------------------------------

    async def _run_claimed(self, run_id: str, inp: BatchInput, state: dict[str, Any],
                           redactor: Any) -> BatchItemResult:
        record = await self.store.get_run(run_id)
        cp = await self.store.load_latest(run_id)
        assert record is not None and cp is not None
        if record.status != "running":  # it moved on between our look and our claim
            return await (self._paused(record, inp) if record.status in PAUSED_STATUSES
                          else self._stored(record, inp))
        resumed = (cp.seq > 0 or bool(await self.store.get_model_exchanges(run_id))
                   or bool(await self.store.get_tool_calls(run_id)))
        if resumed:
            # The store kept no secrets: give those back; every other key is the run's own.
            state = {k: v for k, v in state.items() if cp.state.get(k) == REDACTED}
        durable = DurableRun(store=self.store, run_id=run_id, redactor=redactor,
                             workflow_hash=self.workflow_hash, meta=dict(record.meta),
                             resumed=cp)
        t0 = time.perf_counter()
        result = await arun_workflow(self.workflow, clients=self.runtime, state=state,
                                     durable=durable)
        data = redacted_line(result, redactor)
        status = data["status"]
        item = BatchItemResult(
            id=inp.id, status=status, outputs=data.get("outputs") or {},
            tokens=data.get("tokens"), cost_usd=data.get("cost_usd"),
            error=data.get("error"), source=inp.source, run_id=run_id,
            duration_seconds=round(time.perf_counter() - t0, 4), worker=self.worker_id,
            resumed=resumed)
        if status in PAUSED_STATUSES:
            item.error = redactor.redact_text(
                self._pause_message(run_id, getattr(result, "pause", None)))
        await self._keep_result(run_id, item)
        return item

    async def _keep_result(self, run_id: str, item: BatchItemResult) -> None:
        """The line (redacted already) goes into the run's last checkpoint, so a process
        that finds the run finished writes the same line without running anything."""
        cp = await self.store.load_latest(run_id)
        if cp is None:
            return
        cp.extra[RESULT_KEY] = item.to_dict()
        await self.store.save_checkpoint(run_id, cp)

    def _redactor(self, state: dict[str, Any]) -> Redactor:
        return workflow_redactor(self.workflow, state, self.env)
