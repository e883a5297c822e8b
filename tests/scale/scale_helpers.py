"""Runner factories and fixtures' helpers for the batch tests (no workflow engine needed).

`EchoFactory` is top-level plain data, so Ray can ship it to actors (the Ray fixture
registers this module to be pickled by value: workers cannot import test modules)."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agentloom.scale import BatchInput, BatchItemResult


@dataclass
class Probe:
    """Counts what a runner saw, in this process only."""

    opened: int = 0
    closed: int = 0
    in_flight: int = 0
    max_in_flight: int = 0
    calls: list[str] = field(default_factory=list)
    cancelled: int = 0


@dataclass(frozen=True)
class EchoFactory:
    delay: float = 0.0
    fail_ids: tuple[str, ...] = ()
    raise_ids: tuple[str, ...] = ()
    spread: int = 1
    """Input n sleeps `delay * (1 + n % spread)`: runs finish at different times."""
    probe: Probe | None = None

    def open(self) -> Any:
        return _open_echo(self)


@asynccontextmanager
async def _open_echo(f: EchoFactory) -> AsyncIterator[Any]:
    probe = f.probe or Probe()
    probe.opened += 1

    async def run_one(inp: BatchInput) -> BatchItemResult:
        probe.calls.append(inp.id)
        probe.in_flight += 1
        probe.max_in_flight = max(probe.max_in_flight, probe.in_flight)
        try:
            await asyncio.sleep(f.delay * (1 + int(inp.state.get("n", 0)) % f.spread))
        except asyncio.CancelledError:
            probe.cancelled += 1
            raise
        finally:
            probe.in_flight -= 1
        if inp.id in f.raise_ids:
            raise ValueError(f"boom on {inp.id}")
        if inp.id in f.fail_ids:
            return BatchItemResult(id=inp.id, status="failed", error="step 'x' failed: no",
                                   source=inp.source, tokens=None, cost_usd=None)
        text = json.dumps(inp.state, sort_keys=True)
        return BatchItemResult(id=inp.id, status="success", source=inp.source,
                               outputs={"echo": text.upper()}, tokens=len(text),
                               cost_usd=0.001)

    try:
        yield run_one
    finally:
        probe.closed += 1


def echo_reply(body: Any) -> Any:
    """The fake server's answer: the prompt it got, so outputs show what was asked."""
    from agentloom.testing._server import FakeReply

    return FakeReply(text="echo:" + body["messages"][-1]["content"])


def write_jsonl(path: Path, n: int, *, extra: list[str] = ()) -> Path:  # type: ignore[assignment]
    lines = [json.dumps({"id": f"in-{i:04d}", "n": i}) for i in range(n)]
    path.write_text("\n".join([*lines, *extra]) + "\n", encoding="utf-8")
    return path


def read_lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()
            if line.strip()]
