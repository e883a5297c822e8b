"""The batch seam: what one input is, what one run gives back, and how a runner is built.

Executors know nothing about workflows. They call a `RunOne` (an async function from one
input to one result) that a `RunnerFactory` opens inside the process that runs it: the
local executor opens one and shares it (one runtime: HTTP session, rate limits, circuit
breakers) across every run; each Ray actor opens its own. A factory is plain data with an
`open()` method so Ray can pickle it and ship it to a worker.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from agentloom.redact import Redactor
    from agentloom.workflow import RunResult

SUCCESS = "success"
ERROR = "error"
"""The runner raised, or the workers running the input kept dying: not the workflow's
own failure."""
INVALID_INPUT = "invalid_input"
"""The input could not be read (bad line, duplicate id, unreadable file); never run."""
PAUSED_STATUSES = frozenset({"paused", "needs_decision"})
"""A run waiting for a person: an approval or an answer, or a decision on a tool call a
crash left in flight."""
DEFERRED = "deferred"
"""Another live worker holds the input's run in the shared store: not run here now; the
batch asks again, waiting, once its other inputs are done. Never written to the output."""


@dataclass(slots=True, kw_only=True)
class BatchInput:
    """One input of a batch: its id and the state merged over the workflow's `state`."""

    id: str
    state: dict[str, Any]
    source: str = ""
    """Where it came from, as `file:line` (or the file's path for a folder input)."""
    wait: bool = False
    """With a shared store: when another live worker holds this input's run, wait for it
    to finish (or for its lease to lapse, then resume it) instead of deferring."""
    attempt: int = 1
    """Which worker's try this is: a deferred input asked again keeps the count it had,
    so a result's `attempts` still says how many workers it took."""


@dataclass(slots=True, kw_only=True)
class BatchItemResult:
    """What one input's run gave. Token and cost fields are None when unknown."""

    id: str
    status: str
    """`success`; a workflow run status (`failed`, `deadline_exceeded`, ...); `error`;
    or `invalid_input`."""
    outputs: dict[str, Any] = field(default_factory=dict)
    tokens: int | None = None
    cost_usd: float | None = None
    error: str | None = None
    source: str | None = None
    run_id: str | None = None
    duration_seconds: float | None = None
    worker: str | None = None
    attempts: int = 1
    """How many times the input was handed to a worker (more than 1 after a worker died)."""
    resumed: bool = False
    """The run went on from a stored checkpoint instead of starting over."""
    reused: bool = False
    """Not run here: the store says the run finished already (an earlier attempt or
    another worker); this is its stored result."""

    @property
    def ok(self) -> bool:
        return self.status == SUCCESS

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id, "status": self.status, "outputs": self.outputs,
            "tokens": self.tokens, "cost_usd": self.cost_usd, "error": self.error,
            "source": self.source, "run_id": self.run_id,
            "duration_seconds": self.duration_seconds, "worker": self.worker,
            "attempts": self.attempts, "resumed": self.resumed, "reused": self.reused,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> BatchItemResult:
        outputs = data.get("outputs")
        return cls(
            id=str(data["id"]), status=str(data["status"]),
            outputs=outputs if isinstance(outputs, dict) else {},
            tokens=data.get("tokens"), cost_usd=data.get("cost_usd"),
            error=data.get("error"), source=data.get("source"), run_id=data.get("run_id"),
            duration_seconds=data.get("duration_seconds"), worker=data.get("worker"),
            attempts=int(data.get("attempts") or 1), resumed=bool(data.get("resumed")),
            reused=bool(data.get("reused")),
        )


RunOne = Callable[[BatchInput], Awaitable[BatchItemResult]]
"""Runs one input to its end. It should return a result for the workflow's own failures;
an exception it raises becomes an `error` result for that input."""


class RunnerFactory(Protocol):
    """Opens a `RunOne` and whatever it shares between runs; closing it frees them.

    Must pickle (a top-level class holding plain data) to be used with the Ray executor.
    """

    def open(self) -> AbstractAsyncContextManager[RunOne]: ...


def redacted_line(result: RunResult, redactor: Redactor) -> dict[str, Any]:
    """The run's `to_dict()` with what a results line keeps of it (`outputs`, `error`)
    redacted as `agentloom run --json` redacts it, under the same paths; the rest is
    counts and ids, and redacting the whole report cost a run a sixth of its time."""
    data: dict[str, Any] = result.to_dict()
    kept = redactor.redact_state({"outputs": data.get("outputs") or {},
                                  "error": data.get("error")})
    return {**data, **kept}


def error_result(inp: BatchInput, exc: BaseException, *, worker: str | None = None,
                 attempts: int = 1) -> BatchItemResult:
    """The result of an input whose runner raised instead of returning. A task group's
    wrapper is peeled off: the first real cause is what a person can act on."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    message = str(exc) or type(exc).__name__
    return BatchItemResult(id=inp.id, status=ERROR, source=inp.source, worker=worker,
                           error=f"{type(exc).__name__}: {message}", attempts=attempts)
