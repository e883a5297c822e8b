"""What `agentloom run` prints for a person when the run ends: the final outputs, each
failed step once, and the summary line.

The summary line says how the run ended, its steps, who answered (`gpt-4o-mini via
openai`; `3 models` past two), the tokens and cost, and how long it took:

    success · 2 steps (2 success) · gpt-4o-mini via openai · 38 tokens · $0.000012 · 0.01s

A run that made no model call has no tokens or cost to report, so they are left out
rather than shown as unknown.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from agentloom.cli._style import status_style, styled

if TYPE_CHECKING:
    from agentloom.workflow import RunResult

_LISTED_MODELS = 2
"""Up to this many (model, provider) pairs are named; more are counted."""


def who_answered(models: list[dict[str, Any]]) -> str | None:
    if not models:
        return None
    if len(models) > _LISTED_MODELS:
        return f"{len(models)} models"
    return ", ".join(f"{m['model']} via {m['provider']}" if m.get("provider") else
                     str(m["model"]) for m in models)


def summary_line(result: RunResult) -> str:
    counts: dict[str, int] = {}
    for r in result.steps.values():
        counts[r.status.value] = counts.get(r.status.value, 0) + 1
    n = len(result.steps)
    bits = [f"{n} step{'' if n == 1 else 's'} ({', '.join(f'{k} {s}' for s, k in counts.items())})"]
    models = result.models
    called = bool(models) or any(r.usage is not None for r in result.steps.values())
    answered = who_answered(models)
    if answered:
        bits.append(answered)
    if called:
        tokens, cost = result.tokens, result.cost_usd
        bits.append(f"{tokens if tokens is not None else '?'} tokens")
        bits.append(f"${cost:.6f}" if cost is not None else "cost unknown")
    bits.append(f"{result.duration_seconds:.2f}s")
    status = result.status.value
    return styled(sys.stdout, (status, status_style(status)), " · " + " · ".join(bits))


def print_human(result: RunResult, *, streamed: bool, redact: Callable[[str], str]) -> None:
    from agentloom.workflow import StepStatus
    from agentloom.workflow.lang.templates import to_text

    out = sys.stdout
    if not streamed:
        outputs = result.final_outputs
        for key, value in outputs.items():
            if len(outputs) > 1:
                out.write(f"── {key}\n")
            out.write(redact(to_text(value)).rstrip() + "\n")  # as --json prints it
    told: set[str] = set()
    for r in result.steps.values():
        if r.status is StepStatus.FAILED:
            told.update((f"step {r.id!r} failed: {r.error}", str(r.error)))
            sys.stderr.write(redact(f"step {r.id!r} failed: {r.error}\n"))
    out.write(summary_line(result) + "\n")
    # A pause is told once, with how to resume, by `report_pause`.
    paused = result.status.value in ("paused", "needs_decision")
    if result.error and not result.ok and not paused and result.error not in told:
        sys.stderr.write(redact(f"run {result.status.value}: {result.error}\n"))
