"""Running totals of a batch, shared by the progress display and the end summary.

Tokens and cost follow the house rule that unknown is not zero: the totals add what runs
reported, and the runs that reported none are counted apart (`runs_without_tokens`,
`runs_without_cost`) so a display can say the sum is a lower bound instead of lying.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from agentloom.scale._types import INVALID_INPUT, PAUSED_STATUSES, SUCCESS, BatchItemResult


@dataclass(slots=True, kw_only=True)
class BatchStats:
    total: int = 0
    """Inputs in the source, bad ones included."""
    skipped: int = 0
    """Finished by an earlier attempt (`resume`)."""
    succeeded: int = 0
    failed: int = 0
    paused: int = 0
    """Runs waiting for a person (an approval, an answer, a decision): not failures."""
    invalid: int = 0
    running: int = 0
    retried: int = 0
    """Inputs handed to a second worker after the first died."""
    reused: int = 0
    """Not run: the store had them finished (an earlier attempt or another worker)."""
    resumed: int = 0
    """Runs that went on from a stored checkpoint instead of starting over."""
    deferred: int = 0
    """Times an input was put back because another live worker held its run."""
    tokens: int = 0
    cost_usd: float = 0.0
    runs_without_tokens: int = 0
    runs_without_cost: int = 0
    clock: Callable[[], float] = time.monotonic
    started_at: float = -1.0
    ended_at: float | None = None
    first_run_at: float | None = None
    """When the first run started: runs/s leaves out startup (e.g. joining a cluster)."""
    interrupted: bool = False
    error: str | None = None
    """Why the batch stopped before it could run (e.g. the cluster is unreachable)."""
    failures: list[BatchItemResult] = field(default_factory=list)
    """Every input that did not succeed (invalid ones included), in finishing order."""
    executor: str = "local"
    output: str | None = None

    def __post_init__(self) -> None:
        if self.started_at < 0:
            self.started_at = self.clock()

    @property
    def done(self) -> int:
        return self.succeeded + self.failed + self.paused + self.invalid

    @property
    def remaining(self) -> int:
        return max(0, self.total - self.skipped - self.reused - self.done)

    @property
    def elapsed(self) -> float:
        end = self.ended_at if self.ended_at is not None else self.clock()
        return max(0.0, end - self.started_at)

    @property
    def runs_per_second(self) -> float | None:
        ran = self.succeeded + self.failed + self.paused
        if self.first_run_at is None:
            return None
        end = self.ended_at if self.ended_at is not None else self.clock()
        elapsed = end - self.first_run_at
        return ran / elapsed if ran and elapsed > 0 else None

    @property
    def eta_seconds(self) -> float | None:
        rate = self.runs_per_second
        return self.remaining / rate if rate else None

    def started(self) -> None:
        if self.first_run_at is None:
            self.first_run_at = self.clock()
        self.running += 1

    def add(self, item: BatchItemResult) -> None:
        if item.reused:
            self.running = max(0, self.running - 1)
            self.reused += 1
            return
        if item.resumed:
            self.resumed += 1
        if item.status == INVALID_INPUT:
            self.invalid += 1
        else:
            self.running = max(0, self.running - 1)
            if item.status == SUCCESS:
                self.succeeded += 1
            elif item.status in PAUSED_STATUSES:
                self.paused += 1
            else:
                self.failed += 1
            if item.attempts > 1:
                self.retried += 1
            if item.tokens is None:
                self.runs_without_tokens += 1
            else:
                self.tokens += item.tokens
            if item.cost_usd is None:
                self.runs_without_cost += 1
            else:
                self.cost_usd += item.cost_usd
        if item.status != SUCCESS:
            self.failures.append(item)

    def finish(self) -> None:
        if self.ended_at is None:
            self.ended_at = self.clock()

    def to_dict(self) -> dict[str, Any]:
        return {
            "total": self.total, "skipped": self.skipped, "succeeded": self.succeeded,
            "failed": self.failed, "paused": self.paused, "invalid": self.invalid,
            "retried": self.retried,
            "reused": self.reused, "resumed": self.resumed, "deferred": self.deferred,
            "remaining": self.remaining, "tokens": self.tokens, "cost_usd": self.cost_usd,
            "runs_without_tokens": self.runs_without_tokens,
            "runs_without_cost": self.runs_without_cost,
            "elapsed_seconds": round(self.elapsed, 3),
            "runs_per_second": None if self.runs_per_second is None
            else round(self.runs_per_second, 2),
            "interrupted": self.interrupted, "error": self.error, "executor": self.executor,
            "output": self.output,
            "failures": [{"id": f.id, "status": f.status, "source": f.source,
                          "error": f.error} for f in self.failures],
        }
