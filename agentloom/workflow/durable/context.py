"""What the parts of a durable run share: the context variables its wrappers read, a
person's `Decision`, `ask(...)` for tool functions, and `DurableRoot`, the face of the
top `DurableRun` that nested scopes and journalled wrappers use (so they don't import it).

`scope_prefix` is the namespace of the nested run whose steps are running ("" at the
top), so a reply or a tool call of `review/check` is stored under that key; the answer
variable carries a person's answer to the tool call that asked for it.
"""

from __future__ import annotations

from contextvars import ContextVar
from datetime import datetime
from typing import TYPE_CHECKING, Any, Protocol

from agentloom._record import Record, record
from agentloom.workflow.engine.pause import ANSWER_KINDS, PauseRun

if TYPE_CHECKING:
    from agentloom.loop import LoopRestore
    from agentloom.messages import Message, Usage
    from agentloom.store import ToolCallRecord
    from agentloom.workflow.engine.result import StepResult

UNSET: Any = object()
"""No answer (distinct from an answer of None)."""

scope_prefix: ContextVar[str] = ContextVar("agentloom_durable_prefix", default="")
"""The namespace of the nested run whose steps are running ("" at the top)."""

call_answer: ContextVar[Any] = ContextVar("agentloom_call_answer", default=UNSET)
"""The answer a resumed tool call brings to the `ask(...)` inside it."""


@record
class Decision(Record):
    """What `agentloom resume` brings: an approval, a rejection or an answer."""

    approve: bool | None = None
    answer: Any = UNSET

    def __init__(self, *, approve: bool | None = None, answer: Any = UNSET) -> None:
        self.approve = approve
        self.answer = answer

    @property
    def has_answer(self) -> bool:
        return self.answer is not UNSET


class DurableRoot(Protocol):
    """The top run's `DurableRun`, as its nested scopes and journalled wrappers use it."""

    run_id: str
    store: Any
    resumed: Any
    decision: Decision
    reused_tool_calls: int

    # --- checkpoints of nested runs ---
    def restored_step(self, node_id: str) -> StepResult | None: ...
    def keep_child_result(self, key: str, result: StepResult) -> None: ...
    def keep_child_not_taken(self, key: str, router: str) -> None: ...
    def child_not_taken(self, prefix: str) -> dict[str, str]: ...
    def drop_children(self, prefix: str) -> None: ...
    def child(self, name: str) -> Any: ...
    async def step_done(self, node_id: str) -> None: ...
    async def save(self, status: str = "running", paused: Any = None) -> None: ...

    # --- loops, decisions, secrets ---
    def restore(self, step_id: str) -> LoopRestore | None: ...
    async def on_turn(self, step_id: str, turn: int, messages: list[Message],
                      usage: Usage) -> None: ...
    def take_decision(self, step_id: str) -> tuple[Decision, datetime | None] | None: ...
    def add_secret(self, value: str, *, key: str | None = None) -> None: ...
    def clock_now(self) -> datetime: ...
    def wrap_clients(self, factory: Any) -> Any: ...
    def wrap_tools(self, source: Any) -> Any: ...

    # --- the journal of replies and tool calls ---
    def take_exchange(self, key: tuple[str, int, str]) -> Any: ...
    def call_key(self, step_id: str, base: str) -> str: ...
    def take_tool_call(self, step_id: str, key: str) -> ToolCallRecord | None: ...
    def redact(self, value: Any) -> Any: ...


def ask(question: str, *, kind: str = "text", choices: list[str] | None = None) -> Any:
    """Ask a person from inside a tool function. The first time, the run pauses; when it
    is resumed with `--answer`, the tool call runs again and this returns the answer,
    typed by `kind` (a list for choose_many); a `secret` one is redacted from what the run
    stores."""
    answer = call_answer.get()
    if answer is not UNSET:
        return answer
    if kind not in ANSWER_KINDS:
        raise ValueError(f"ask(kind={kind!r}): expected one of {', '.join(ANSWER_KINDS)}")
    raise PauseRun("answer", question, data={"kind": kind, "choices": choices})
