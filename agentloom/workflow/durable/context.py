"""The context variables a durable run's wrappers share, and `ask(...)` for tool functions.

`scope_prefix` is the namespace of the nested run whose steps are running ("" at the
top), so a reply or a tool call of `review/check` is stored under that key; the answer
variable carries a person's answer to the tool call that asked for it.
"""

from __future__ import annotations

from contextvars import ContextVar
from typing import Any

from agentloom.workflow.engine.pause import ANSWER_KINDS, PauseRun

UNSET: Any = object()
"""No answer (distinct from an answer of None)."""

scope_prefix: ContextVar[str] = ContextVar("agentloom_durable_prefix", default="")
"""The namespace of the nested run whose steps are running ("" at the top)."""

call_answer: ContextVar[Any] = ContextVar("agentloom_call_answer", default=UNSET)
"""The answer a resumed tool call brings to the `ask(...)` inside it."""


def ask(question: str, *, kind: str = "text", choices: list[str] | None = None) -> Any:
    """Ask a person from inside a tool function. The first time, the run pauses; when it
    is resumed with `--answer`, the tool call runs again and this returns the answer."""
    answer = call_answer.get()
    if answer is not UNSET:
        return answer
    if kind not in ANSWER_KINDS:
        raise ValueError(f"ask(kind={kind!r}): expected one of {', '.join(ANSWER_KINDS)}")
    raise PauseRun("answer", question, data={"kind": kind, "choices": choices})
